"""The run's repeated (query, doc) pairs, checked exactly over the whole run, for the top-k plan
(which shuffles only each query's best rows), at a shuffle cost of about 0.1 byte per run row
when each input partition holds whole queries or long stretches of them, as a recommender writes
its output.

One pass over the run's input partitions (``mapInArrow``, numpy on three 64-bit hashes per row:
of the query id, of the pair, of the file split) sends, per partition:

- kind 0: each query of the partition once (``qh``, the partition, whether it is *shipped*);
- kind 1: the pair hashes of the shipped queries: those whose rows in the partition all lie in the
  first or last run of rows of a file split (so that they may go on in another split or partition);
- kind 2: the queries with two equal pair hashes inside the partition.

A grouped aggregation (partial, then by (kind, hash, qh)) gives the *suspect* queries: seen in
more than one partition and not shipped from each; or with a pair hash sent twice (shipped rows of
several partitions); or of kind 2. Any repeated pair makes its query a suspect, whatever the
layout; a hash collision only adds suspects. The suspects' rows are then checked exactly, by
their ids (a broadcast semi join on qh, then a grouped count by (query, doc)); with no suspect,
adaptive query execution skips that second scan.

The check is one function of the run's (q, d) columns, :func:`repeated_pairs`; restricting it to
some queries (say, those of the qrels) is a semi join of ``run`` before it is called.
"""
from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from .inputs import file_split

SUMMARY = "kind int, k long, qh long, pid int, shipped int"


def _summarize():
    """The per-partition function (defined here so that it is pickled by value: executors need
    numpy and pyarrow, not this package)."""
    def summarize(batches):
        import numpy as np
        import pyarrow as pa
        from pyspark import TaskContext
        cols = [[], [], []]
        for b in batches:
            for i in range(3):
                cols[i].append(b.column(i).to_numpy(zero_copy_only=False))
        if not cols[0] or not sum(len(c) for c in cols[0]):
            return
        qh, h, split = (np.concatenate(c).astype(np.int64) for c in cols)
        n = len(qh)
        hs = np.sort(h)
        equal = hs[1:] == hs[:-1]
        local = np.unique(qh[np.isin(h, hs[1:][equal])]) if equal.any() else np.empty(0, np.int64)
        new_split = np.ones(n, bool)
        new_split[1:] = split[1:] != split[:-1]
        new_run = new_split.copy()
        new_run[1:] |= qh[1:] != qh[:-1]
        starts = np.flatnonzero(new_run)
        lengths = np.diff(np.append(starts, n))
        edge = np.zeros(len(starts), bool)
        firsts = np.flatnonzero(new_split[starts])
        edge[firsts] = True
        edge[np.append(firsts[1:] - 1, len(starts) - 1)] = True
        queries, inverse = np.unique(qh[starts], return_inverse=True)
        rows = np.bincount(inverse, weights=lengths, minlength=len(queries))
        edge_rows = np.bincount(inverse[edge], weights=lengths[edge], minlength=len(queries))
        shipped = (edge_rows == rows).astype(np.int32)
        ship = np.repeat(edge & (shipped[inverse] == 1), lengths)
        pid = TaskContext.get().partitionId()
        nq, ns, nl = len(queries), int(ship.sum()), len(local)
        yield pa.RecordBatch.from_pydict({
            "kind": pa.array(np.concatenate([np.zeros(nq, np.int32), np.ones(ns, np.int32), np.full(nl, 2, np.int32)])),
            "k": pa.array(np.concatenate([np.zeros(nq, np.int64), h[ship], np.zeros(nl, np.int64)])),
            "qh": pa.array(np.concatenate([queries, qh[ship], local])),
            "pid": pa.array(np.full(nq + ns + nl, pid, np.int32)),
            "shipped": pa.array(np.concatenate([shipped, np.ones(ns, np.int32), np.zeros(nl, np.int32)]))})
    return summarize


def suspects(run: DataFrame) -> DataFrame:
    """(qh) of the queries whose rows must be checked exactly."""
    split = file_split()
    info = (run.select(F.xxhash64("q").alias("qh"), F.xxhash64("q", "d").alias("h"), split.alias("split"))
            .mapInArrow(_summarize(), SUMMARY))
    g = info.groupBy("kind", "k", "qh").agg(F.min("pid").alias("p0"), F.max("pid").alias("p1"),
                                            F.min("shipped").alias("shipped"), F.count(F.lit(1)).alias("n"))
    kind = F.col("kind")
    bad = ((kind == 0) & (F.col("p0") != F.col("p1")) & (F.col("shipped") == 0)) \
        | ((kind == 1) & (F.col("n") > 1)) | (kind == 2)
    return g.where(bad).select("qh").distinct()


def small(df: DataFrame, limit: int = 8 << 20) -> bool:
    """Whether Spark estimates ``df`` below ``limit`` bytes (no job runs: the optimizer's statistics)."""
    try:
        return int(str(df._jdf.queryExecution().optimizedPlan().stats().sizeInBytes())) < limit
    except Exception:  # an estimate Spark cannot give: take the way that suits large inputs
        return False


def repeated_pairs(run: DataFrame, method: str = "summary") -> DataFrame:
    """One row (kind ``dup_run``, example): the smallest repeated (query, doc) pair of ``run`` (columns
    q, d) as a struct (pair: [query, doc] as strings, n: its count), NULL when no pair repeats.
    ``method``: ``summary`` (the module's check) or ``group`` (every pair shuffled and counted: no
    Python worker to start, for small inputs)."""
    rows = run.select("q", "d")
    if method == "summary":
        rows = rows.withColumn("qh", F.xxhash64("q")).join(F.broadcast(suspects(run)), "qh", "left_semi")
    counts = rows.groupBy("q", "d").agg(F.count(F.lit(1)).alias("n")).where(F.col("n") > 1)
    pair = F.array(F.col("q").cast("string"), F.col("d").cast("string"))
    return counts.agg(F.min(F.struct(pair.alias("pair"), F.col("n").alias("n"))).alias("example")) \
        .select(F.lit("dup_run").alias("kind"), "example")
