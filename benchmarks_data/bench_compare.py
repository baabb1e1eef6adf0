"""compare over many runs: time and peak memory (not a timed test; issue 43's targets).

    python benchmarks_data/bench_compare.py msmarco            # 10 MS MARCO dev-small shaped runs (7M lines each)
    python benchmarks_data/bench_compare.py msmarco --queries 200 --runs 3   # a smoke run
    python benchmarks_data/bench_compare.py dl19               # 50 DL19-shaped runs, --all-pairs --test randomization

msmarco: `ndcg-plugin compare QRELS RUN0 ... RUN9 -m <4 measures>` (baseline mode) against
`ndcg-plugin eval QRELS RUNi <4 measures>` for the 10 runs one after the other; the qrels are
make_workload.py's (benchmarks_data/cache/msmarco-shaped-NxD/qrels.txt, made here when
missing), the runs make_workload.make_run with seeds 100, 101, ... (cached in its runs/).
The shared data (../shared/data, or $NDCG_PLUGIN_SHARED_DATA) gives the real qrels.
dl19: 50 copies of the DL19 BM25 run with seeded noise on the scores, 6 measures,
`compare --all-pairs --test randomization`. Each command is one process; its wall time and peak
RSS (os.wait4's ru_maxrss) are printed as a Markdown table. The numbers depend on the machine's
load: say so where they are quoted (docs/performance.md).
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

MSMARCO_MEASURES = ["nDCG@10", "MRR_zero@10", "R@1000", "AP"]
DL19_MEASURES = ["nDCG@10", "NDCG_lin@10", "MRR_zero(rel=2)@10", "R(rel=2)@1000", "AP(rel=2)", "P(rel=2)@10"]
SHARED = Path(os.environ.get("NDCG_PLUGIN_SHARED_DATA", ROOT.parent / "shared" / "data")) / "msmarco-passage"


def measure(argv: list[str]) -> tuple[float, float]:
    """(wall seconds, peak RSS in MB) of one process. Linux counts in a child's peak the memory of
    the process it was forked from, so the runs are made in another process (``--make``) and this
    one holds nothing large."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=ROOT,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    if status != 0:
        raise SystemExit(f"failed ({status}): {' '.join(argv)}\n{proc.stderr.read().decode()}")
    return wall, usage.ru_maxrss / 1024


def msmarco_files(queries: int, docs: int, runs: int, make: bool = False) -> tuple[Path, list[Path]]:
    out = HERE / "cache" / f"msmarco-shaped-{queries}x{docs}"
    qrels_path = out / "qrels.txt"
    if not qrels_path.exists():
        subprocess.run([sys.executable, str(HERE / "make_workload.py"), "--queries", str(queries), "--docs",
                        str(docs), "--shared-qrels", str(SHARED / "qrels.dev-small.txt")], check=True)
    paths = [out / "runs" / f"run{i}.trec" for i in range(runs)]
    if not make:
        if not all(p.exists() for p in paths):
            subprocess.run([sys.executable, __file__, "msmarco", "--make", "--runs", str(runs), "--queries",
                            str(queries), "--docs", str(docs)], check=True)
        return qrels_path, paths
    import pandas as pd
    from make_workload import make_run
    qrels = pd.read_csv(qrels_path, sep=" ", header=None, names=["query_id", "it", "doc_id", "relevance"], dtype=str)
    for path in paths:
        i = int(path.stem[3:])
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            run = make_run(qrels, docs, np.random.default_rng(100 + i)).drop_duplicates(["query_id", "doc_id"])
            run.to_csv(path, sep=" ", header=False, index=False, float_format="%.3f")
            print(f"made {path}", file=sys.stderr)
    return qrels_path, paths


def dl19_files(runs: int) -> tuple[Path, list[Path]]:
    out = HERE / "cache" / f"dl19-shaped-{runs}"
    lines = [line.split() for line in (SHARED / "run.dl19-passage.bm25.trec").read_text().splitlines()]
    paths = []
    for i in range(runs):
        path = out / f"run{i}.trec"
        if not path.exists():
            out.mkdir(parents=True, exist_ok=True)
            noise = np.random.default_rng(200 + i).normal(0, 0.5 * (i % 5), size=len(lines))
            path.write_text("".join(f"{q} Q0 {d} {r} {float(s) + e:.4f} run{i}\n"
                                    for (q, _, d, r, s, _), e in zip(lines, noise, strict=True)))
        paths.append(path)
    return SHARED / "qrels.dl19-passage.txt", paths


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("workload", choices=["msmarco", "dl19"])
    ap.add_argument("--runs", type=int, help="default: 10 (msmarco), 50 (dl19)")
    ap.add_argument("--queries", type=int, default=6980)
    ap.add_argument("--docs", type=int, default=1000)
    ap.add_argument("--make", action="store_true", help="only make the msmarco runs (in the process that measures, "
                    "their memory would count in every command's peak)")
    args = ap.parse_args()
    if args.make:
        msmarco_files(args.queries, args.docs, args.runs or 10, make=True)
        return
    cli = [sys.executable, "-m", "ndcg_plugin"]
    rows = []
    if args.workload == "msmarco":
        qrels, runs = msmarco_files(args.queries, args.docs, args.runs or 10)
        wall, peak = measure([*cli, "compare", str(qrels), *map(str, runs), "-m", *MSMARCO_MEASURES])
        rows.append((f"compare, {len(runs)} runs, baseline mode", wall, peak))
        evals = [measure([*cli, "eval", str(qrels), str(r), *MSMARCO_MEASURES]) for r in runs]
        rows.append((f"eval of the {len(runs)} runs one after the other", sum(w for w, _ in evals),
                     max(p for _, p in evals)))
    else:
        qrels, runs = dl19_files(args.runs or 50)
        wall, peak = measure([*cli, "compare", str(qrels), *map(str, runs), "-m", *DL19_MEASURES, "--all-pairs",
                              "--test", "randomization"])
        rows.append((f"compare, {len(runs)} runs, --all-pairs --test randomization", wall, peak))
    print("| command | wall (s) | peak RSS (MB) |\n|---|---|---|")
    for name, wall, peak in rows:
        print(f"| {name} | {wall:.1f} | {peak:.0f} |")
    if args.workload == "msmarco":
        print(f"\ncompare / evals: {rows[0][1] / rows[1][1]:.2f}x the time, {rows[0][2] / rows[1][2]:.2f}x the peak")


if __name__ == "__main__":
    main()
