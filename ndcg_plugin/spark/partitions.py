"""The engine plan, the Spark engine's one plan: one shuffle by query id, then the local engine
evaluates each partition's queries, so that every per-query value is the local engine's own (the
same code computes it).

1. With a largest cutoff K (every measure has one, ranks the whole run with the qrels' ideal
   ranking: :func:`cut_applies`), each input partition of the run keeps what can matter
   (:func:`.worker.shipped_rows`: the K best rows of each query in the partition, and every row of
   the queries at the edges of its file splits, of repeated pairs), in a Python worker, when that
   cut pays (``ship='best'``, or ``'auto'`` and :func:`worth_cutting`); with no K, or
   ``ship='all'``, every row goes;
2. those rows and the qrels rows are hash-partitioned by query id together (the one exchange);
3. each partition, in a Python worker, is checked for repeated pairs (exactly) and evaluated by
   :func:`ndcg_plugin.engine.block.compute` (:func:`.worker.evaluated`): one row per query, the per-query
   table :mod:`.jobs` builds its exact sums and checks from.

The executors' Python must import ndcg_plugin (the driver's environment, in local mode; on a
cluster, install it there as any library a Python UDF uses). A query the first step could not
prove free of repeated pairs (rows of one query spread over several partitions, in the middle of
each: a run not grouped by query) makes the evaluation run again with every row shipped
(:class:`.jobs.SparkJob` does it), so the check is exact whatever the layout.
"""
from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from ..measures import Spec, family
from ..measures.aggregate import MicroAgg, NanSkipMeanAgg, array_aggregator
from .failures import MARK
from .inputs import file_split
from .worker import CAND, WHOLE, source, wide_schema


@dataclass(frozen=True)
class Output:
    """Per-query columns of one measure: ``value``; for an item-level measure also ``hits``/``den``
    (micro-averaged); ``ignore``: NULL is "no value" (the mean leaves it out)."""
    name: str        # str(measure)
    value: str
    hits: str | None = None
    den: str | None = None
    ignore: bool = False


def cut_applies(spec: Spec) -> bool:
    """Whether a query's rows below its K best cannot change ``spec``'s value: a cutoff, the whole
    run ranked (not judged_only), and nothing the family needs from every row of the run (e.g. an
    ideal ranking from the run)."""
    return spec.cutoff is not None and not spec.judged_only and not family(spec.family).needs_every_row(spec)


def outputs(measures: list) -> list[Output]:
    """Each measure's per-query columns, from its aggregator: a micro average (item-level) sums
    hits and den, a mean that leaves misses out takes NULL as "no value"; another is refused."""
    out = []
    for i, m in enumerate(measures):
        agg = array_aggregator(m)
        if isinstance(agg, MicroAgg):
            out.append(Output(str(m), f"v{i}", f"hits{i}", f"n{i}"))
        elif agg is not None:
            out.append(Output(str(m), f"v{i}", ignore=isinstance(agg, NanSkipMeanAgg)))
        else:
            raise ValueError(f"the Spark engine sums each measure's values exactly; {m} has an aggregator it does "
                             f"not know ({type(m.aggregator()).__name__})")
    return out


def _shipped(k: int):
    """The function of the first step, defined here so that the executors unpickle a closure over K."""
    def ship(batches):
        import pyarrow as pa
        from pyspark import TaskContext

        from .worker import shipped_rows
        got = [b for b in batches if b.num_rows]
        if got:
            yield from shipped_rows(pa.Table.from_batches(got), k, TaskContext.get().partitionId()).to_batches()
    return ship


def _evaluate(specs: list, outs: list, summed: bool, duplicates: str = "error"):
    """The function of the last step: per-query rows, or with ``summed`` their partial sums."""
    def evaluate(batches):
        import pyarrow as pa

        from .worker import evaluated, sums
        got = [b for b in batches if b.num_rows]
        if not got:
            return
        try:
            result = evaluated(pa.Table.from_batches(got), specs, outs, duplicates)
            if summed:
                result = sums(result, outs)
        except ValueError as e:  # the local engine's refusal (e.g. a label its gain cannot take), marked
            raise ValueError(MARK + str(e)) from None
        yield from result.to_batches()
    return evaluate


def _ids(df: DataFrame) -> str:
    return f"q {df.schema['q'].dataType.simpleString()}, d {df.schema['d'].dataType.simpleString()}"


def _best(run: DataFrame, k: int) -> DataFrame:
    """Each query's rows that score at least its K-th best score in the whole run (ties at the K-th
    stay), by ``rank() <= K``, which Spark plans as a partial ``WindowGroupLimit`` in each input
    partition, the one exchange by query, then the final limit: no Python before the shuffle.
    Hash-partitioned by q; tagged CAND from one partition (a query's rows are never counted as
    spread: see :func:`per_query`)."""
    s = F.when(F.col("s") == 0, F.lit(0.0)).otherwise(F.col("s"))  # -0.0 ranks as 0.0
    rank = F.rank().over(Window.partitionBy("q").orderBy(s.desc()))
    return (run.select("q", "d", "s", rank.alias("r0")).where(F.col("r0") <= F.lit(k))
            .select("q", "d", "s", F.lit(source(0, CAND)).cast("long").alias("x")))


#: run rows :func:`worth_cutting` looks at
SAMPLE_ROWS = 50_000
#: the cut pays when the sampled queries hold more than this many times K rows each, on average
CUT_RATIO = 4


def worth_cutting(run: DataFrame, k: int) -> bool:
    """Whether shipping each query's best rows pays, from the first ``SAMPLE_ROWS`` rows of the run
    (one small job: ``limit``, the query ids only). The cut hands every run row to a Python worker
    once more before the shuffle (or, under ``duplicates='max'``, sorts every row in Spark's window),
    which costs time; what it saves is shuffle: lists of 10 x K shuffle 2.2 bytes a run row cut,
    about 17 whole. Measured in local[2] (one machine: the shuffle stays on its disk), six measures
    at @10, 10^7 run rows (docs/spark.md): 10 a user (1 x K), 29.1 s with the cut against 17.9 s
    with every row shipped; in a later session, 30 a user 13.9 s against 9.7 s, 50 a user 9.2 s
    against 8.3 s, 100 a user 8.4 s against 7.7 s (one earlier run: 9.4 s against 9.8 s). So on
    one machine the cut costs up to 10 x K, and pays for itself only in the shuffle it saves, which
    a cluster moves over its network: lists longer than ``CUT_RATIO`` times K, where the cut leaves
    three quarters of the rows or more behind, are cut. Both ways give the same numbers (tested
    against each other); only the time and the shuffle differ."""
    import pyarrow.compute as pc
    sample = run.select("q").limit(SAMPLE_ROWS).toArrow()
    if sample.num_rows == 0:
        return False
    return sample.num_rows > CUT_RATIO * k * pc.count_distinct(sample["q"]).as_py()


def per_query(run: DataFrame, qrels: DataFrame, measures: list, specs: list,
              k: int | None, duplicates: str = "error") -> tuple[DataFrame, DataFrame, list]:
    """The per-query table (:func:`.worker.wide_schema`), the same reduced to the rows of
    :func:`.jobs.result_rows` without a key (each partition's exact partial sums, grouped), and the
    measures' outputs. ``run`` (q, d, s) and ``qrels`` (q, d, lab) have the same id types
    (:func:`.inputs.align`); ``k``: the largest cutoff, or None to ship every row.

    ``duplicates='max'`` (a repeated pair kept once, at its highest score or label) needs no look
    at every row before the shuffle, so the rows are cut by Spark itself (:func:`_best`): a copy of
    a pair that is not among the shipped rows scores below a copy that is (it ranks below the K-th
    in its partition, or in the run, where the shipped copy does not), so it is the copy 'max'
    drops, and it lies below the top K, where it changes no value. Two shipped copies of a pair
    make their query ``unverified`` (dropping one would move up a row that was not shipped): the
    evaluation then runs again with every row. ``duplicates='error'`` looks at every row
    (:func:`.worker.shipped_rows`)."""
    from .worker import POLICIES, SUMS, ddl
    if duplicates not in POLICIES:
        raise ValueError(f"duplicates must be one of {POLICIES}, got {duplicates!r}")
    outs = outputs(measures)
    shuffled = f"{_ids(run)}, s double, x bigint"  # x: a run row's worker.source, a qrels row's label
    judged = qrels.select("q", "d", F.lit(None).cast("double").alias("s"), F.col("lab").cast("long").alias("x"))
    if k is None:
        rows = run.select("q", "d", "s", F.lit(source(0, WHOLE)).cast("long").alias("x"))
    elif duplicates == "max":
        # both sides hash-partitioned by q: Spark (4.1 and later) unions them partition by partition and
        # the repartition below costs nothing; on an older Spark it is one more exchange, as right
        rows, judged = _best(run, k), judged.repartition("q")
    else:
        rows = run.select("q", "d", "s", file_split().alias("split")).mapInArrow(_shipped(k), shuffled)
    together = rows.unionByName(judged).repartition("q")
    wide = together.mapInArrow(_evaluate(specs, outs, False, duplicates), ddl(wide_schema(outs)))
    parts = together.mapInArrow(_evaluate(specs, outs, True, duplicates), ddl(SUMS))
    summed = parts.groupBy("kind", "key", "i", "part", "shift").agg(
        F.sum("hi").alias("hi"), F.sum("mid").alias("mid"), F.sum("lo").alias("lo"), F.sum("n").alias("n"),
        F.min("example").alias("example"))
    return wide, summed, outs


__all__ = ["per_query", "outputs", "cut_applies", "Output", "CAND", "WHOLE"]
