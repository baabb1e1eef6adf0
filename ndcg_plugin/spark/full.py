"""The full row plan: every row of the run shuffled by query id, for measures the top-k plan
(:mod:`.topk`) cannot compute (no cutoff, ``judged_only``, an ideal ranking from the run).

1. run rows and qrels rows are put in one DataFrame (a union, tagged) and hash-partitioned by
   query id: the only shuffle of the data;
2. a window over (query, doc) gives each run row its qrels label (the join) and counts repeated
   pairs on both sides (the run's duplicate check);
3. a window over the query, ordered by score descending then doc id descending (trec_eval's
   order; Spark compares strings by their UTF-8 bytes), numbers the run rows (the rank), and
   counts the judged rows kept above each row (the rank under ``judged_only``, trec_eval -J).
"""
from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from .plan import repeated


def rows(run: DataFrame, qrels: DataFrame, judged_only: bool) -> tuple[DataFrame, list[Column]]:
    """The tagged rows (q, d, is_run, rank, lab, label, judged, kept, n_qrels_pair, n_run_pair and,
    with ``judged_only``, jrank), and the per-query check column of the run's repeated pairs."""
    r = run.select("q", "d", F.when(F.col("s") == 0, F.lit(0.0)).otherwise(F.col("s")).alias("s"),
                   F.lit(None).cast("long").alias("lab"), F.lit(True).alias("is_run"))
    j = qrels.select("q", "d", F.lit(None).cast("double").alias("s"), F.col("lab").cast("long").alias("lab"),
                     F.lit(False).alias("is_run"))
    tagged = r.unionByName(j).repartition("q")
    pair = Window.partitionBy("q", "d")
    tagged = tagged.select(
        "q", "d", "s", "is_run", "lab",
        F.max("lab").over(pair).alias("label"),
        F.count("lab").over(pair).alias("n_qrels_pair"),
        F.sum(F.col("is_run").cast("int")).over(pair).alias("n_run_pair"),
    )
    judged = F.col("label").isNotNull()
    tagged = tagged.withColumn("judged", judged).withColumn("kept", judged & (F.col("label") >= 0))
    doc = F.col("d").cast("string")  # trec_eval's tie rule compares doc ids as strings (bytes)
    order = Window.partitionBy("q").orderBy(F.col("is_run").desc(), F.col("s").desc(), doc.desc())
    rank = F.when(F.col("is_run"), F.row_number().over(order))
    tagged = tagged.withColumn("rank", rank)
    if judged_only:
        running = order.rowsBetween(Window.unboundedPreceding, Window.currentRow)
        tagged = tagged.withColumn("jrank", F.sum(F.col("kept").cast("int")).over(running))
    return tagged, [repeated("n_run_pair", F.col("is_run")).alias("dup_run")]
