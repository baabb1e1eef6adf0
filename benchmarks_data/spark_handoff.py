"""What handing every run row from Spark's JVM to a Python worker costs, beside RankingEvaluator
and the plugin: the floor under the engine plan's exact check of repeated pairs.

    python benchmarks_data/spark_handoff.py --scenario list-3e7          # medians of 3
    python benchmarks_data/spark_handoff.py --scenario list-1e6 --repeat 1

``duplicates='error'`` (trec_eval's rule, the default) refuses a run that repeats a (query, doc)
pair anywhere, so every run row is looked at; Spark SQL has no operator that finds repeated
pairs within an input partition without shuffling every pair, so the engine plan hands each
input partition to a Python worker (``mapInArrow``) before the shuffle. The jobs timed here do
only that hand-off, with nothing done in Python (each yields one row per partition):

- ``handoff: 1 column``: a constant per row (what the hand-off costs whatever the columns);
- ``handoff: q, d, s``: the run's query id, doc id and score, as the pre-pass needs them;
- ``handoff: q, d, s, split``: and the file split number the pre-pass takes (its input);

beside, in the same session and alternating, ``RankingEvaluator`` (bench_spark.py's, with its
array building), the plugin (default: ``duplicates='error'``) and the plugin with
``duplicates='max'`` (the run cut by Spark's own partial limit: no row handed over before the
shuffle). Scenarios and data are bench_spark.py's (generated once under --workdir). Prints a
table; writes nothing.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))


def _count(batches):
    """A mapInArrow function that only counts its rows (one row out per partition)."""
    import pyarrow as pa
    n = 0
    for batch in batches:
        n += batch.num_rows
    yield pa.RecordBatch.from_pydict({"n": [n]})


def handoffs(spark, run_path: str) -> dict:
    """The hand-off jobs, on the run as the plugin normalises it (its checks included)."""
    from pyspark.sql import functions as F

    from ndcg_plugin import spark as ndcg_spark
    from ndcg_plugin.spark import inputs

    def job(columns):
        def go():
            run = inputs.normalise(spark.read.parquet(run_path), "run", ndcg_spark.DEFAULT_COLUMNS)
            rows = sum(r["n"] for r in run.select(*columns()).mapInArrow(_count, "n long").collect())
            return rows
        return go
    return {"handoff: 1 column": job(lambda: [F.lit(1).alias("one")]),
            "handoff: q, d, s": job(lambda: ["q", "d", "s"]),
            "handoff: q, d, s, split": job(lambda: ["q", "d", "s", inputs.file_split().alias("split")])}


def main(argv=None) -> int:
    import bench_spark as bench
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--scenario", choices=bench.SCENARIOS, default="list-3e7")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--workdir", default="/tmp/ndcg-plugin-bench-spark")
    ap.add_argument("--driver-memory", default="6g")
    args = ap.parse_args(argv)
    from ndcg_plugin import spark as ndcg_spark
    spark = ndcg_spark.session(args.master, {"spark.driver.memory": args.driver_memory})
    workdir = Path(args.workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    run_path, qrels_path = bench.generate(spark, args.scenario, workdir)
    rows = spark.read.parquet(run_path).count()
    re_name = "RankingEvaluator (3 metrics, with its arrays)"
    jobs = {re_name: lambda: bench.ranking_evaluator(spark, run_path, qrels_path),
            "plugin, duplicates='error' (default)": lambda: bench.plugin(spark, run_path, qrels_path),
            "plugin, duplicates='max'": lambda: bench.plugin(spark, run_path, qrels_path, "max"),
            **handoffs(spark, run_path)}
    for fn in jobs.values():  # warm-up: class loading, the JIT, the Python workers
        fn()
    times: dict = {name: [] for name in jobs}
    for i in range(args.repeat):
        for name, fn in jobs.items():
            t = time.perf_counter()
            out = fn()
            times[name].append(time.perf_counter() - t)
            if name.startswith("handoff") and out != rows:
                print(f"{name}: {out} rows handed over, expected {rows}", file=sys.stderr)
                return 1
            print(f"[{i + 1}/{args.repeat}] {name}: {times[name][-1]:.2f} s", flush=True)
    spark.stop()
    re_time = statistics.median(times[re_name])
    print(f"\n{args.scenario}: {rows:,} run rows, {args.master}, medians of {args.repeat} alternating runs\n")
    print("| job | seconds | / RankingEvaluator |\n|---|---|---|")
    for name, ts in times.items():
        print(f"| {name} | {statistics.median(ts):.2f} | {statistics.median(ts) / re_time:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
