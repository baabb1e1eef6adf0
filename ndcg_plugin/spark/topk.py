"""The top-k row plan: only the rows that can rank within the largest cutoff are shuffled.

For measures that all have a cutoff (and rank the whole run, with the ideal ranking from the
qrels), the run's rows beyond the K-th of their query (K = the largest cutoff) cannot change a
value, so they are dropped before the shuffle:

- ``row_number() over (partition by query order by score desc, doc id desc) <= K`` (trec_eval's
  order; doc ids compared as strings, by their UTF-8 bytes), a window holding only that
  row_number, so that Spark plans a partial ``WindowGroupLimit`` before the exchange: each input
  partition keeps its K best rows of each query, then the final limit after the shuffle keeps the
  K best of those, which are the query's K best (ties included: the order is total). Integer doc
  ids are limited by ``rank() over (... order by score desc) <= K`` before the shuffle instead
  (the rows tied at the K-th score stay), so that their string form is computed after it;
- the survivors are unioned with the qrels, shuffled by query id on their own (a union of two
  inputs hash-partitioned the same way needs no other exchange, on Spark 4.1 and later);
- a window over (query, doc) gives each run row its label (the join) and counts repeated qrels pairs.

The number of a query's rows that survive is min(K, rows returned), which is all an item-level
measure needs (min(k, returned) for k <= K) and tells whether the run has the query at all. A
repeated (query, doc) pair of the run may lie beyond the top K: :mod:`.duplicates` checks the
whole run, in the same job.
"""
from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ..measures import Spec, family


def serves(spec: Spec) -> bool:
    """Whether the top-k plan computes ``spec``: a cutoff, the whole run ranked (not judged_only),
    and nothing the family needs from every row of the run (e.g. an ideal ranking from the run)."""
    return spec.cutoff is not None and not spec.judged_only and not family(spec.family).needs_every_row(spec)


def rows(run: DataFrame, qrels: DataFrame, k: int) -> tuple[DataFrame, list[Column]]:
    """The tagged rows (q, d, is_run, rank, lab, label, judged, n_qrels_pair), hash-partitioned by
    q, and the per-query check columns this plan adds (none: the run's pairs are checked apart)."""
    s = F.when(F.col("s") == 0, F.lit(0.0)).otherwise(F.col("s"))  # -0.0 ranks as 0.0
    order = Window.partitionBy("q").orderBy(F.col("s").desc(), F.col("d").cast("string").desc())
    run = run.select("q", "d", s.alias("s"))
    if not isinstance(run.schema["d"].dataType, T.StringType):
        # integer doc ids: the limit before the shuffle orders by score alone (rank() keeps the rows
        # tied at the k-th score), so that the ids' string form, the tie order, is not shuffled
        by_score = Window.partitionBy("q").orderBy(F.col("s").desc())
        run = run.withColumn("r0", F.rank().over(by_score)).where(F.col("r0") <= F.lit(k)).drop("r0")
    top = (run.select("q", "d", F.row_number().over(order).alias("rank")).where(F.col("rank") <= F.lit(k))
           .select("q", "d", "rank", F.lit(None).cast("long").alias("lab"), F.lit(True).alias("is_run")))
    judged = qrels.select("q", "d", F.lit(None).cast("int").alias("rank"), F.col("lab").cast("long").alias("lab"),
                          F.lit(False).alias("is_run")).repartition("q")
    pair = Window.partitionBy("q", "d")
    tagged = top.unionByName(judged).select(
        "q", "d", "is_run", "rank", "lab",
        F.max("lab").over(pair).alias("label"), F.count("lab").over(pair).alias("n_qrels_pair"))
    none = F.lit(None).cast("struct<pair:array<string>,n:bigint>").alias("dup_run")
    return tagged.withColumn("judged", F.col("label").isNotNull()), [none]
