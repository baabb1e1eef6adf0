"""Input DataFrames to the plan's columns, validated inside the Spark job.

Checks the local reader makes on every row (ids present and non-empty, scores finite, labels
integers) run as ``raise_error`` expressions in the same job that computes the measures, so
validation costs no extra pass; the error surfaces as a ValueError naming the input, the
column and the offending value (:func:`ndcg_plugin.spark.failures.reraise`).
"""
from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from .failures import fail

_INTEGRAL = (T.ByteType, T.ShortType, T.IntegerType, T.LongType)
_NUMERIC = (*_INTEGRAL, T.FloatType, T.DoubleType, T.DecimalType)


def _column(df: DataFrame, name: str, what: str, kind: str) -> T.DataType:
    if name not in df.columns:
        raise ValueError(f"{kind}: no column {name!r} for the {what} (columns: {df.columns}); "
                         f"name it with columns={{'{what}': ...}}")
    return df.schema[name].dataType


def _id(df: DataFrame, name: str, what: str, kind: str) -> Column:
    dtype = _column(df, name, what, kind)
    col = F.col(name)
    if isinstance(dtype, _INTEGRAL):
        col = col.cast("long")  # compared as its decimal string after the shuffle (plan.ranked_rows)
        return F.when(col.isNull(), fail(F.lit(f"{kind}: missing value in column {name}"))).otherwise(col)
    if not isinstance(dtype, T.StringType):
        raise ValueError(f"{kind}: column {name!r} ({what} id) must hold strings or integers, got "
                         f"{dtype.simpleString()}; convert it explicitly (float ids would not match their string form)")
    return (F.when(col.isNull(), fail(F.lit(f"{kind}: missing value in column {name}")))
            .when(col == "", fail(F.lit(f"{kind}: empty {what} id in column {name}")))
            .otherwise(col))


def normalise(df: DataFrame, kind: str, names: dict) -> DataFrame:
    """(q, d, s) for a run, (q, d, lab) for qrels, with the row checks as expressions."""
    q = _id(df, names["query"], "query", kind).alias("q")
    d = _id(df, names["doc"], "doc", kind).alias("d")
    if kind == "run":
        name = names["score"]
        dtype = _column(df, name, "score", kind)
        if not isinstance(dtype, _NUMERIC):
            raise ValueError(f"run: column {name!r} (score) must be numeric, got {dtype.simpleString()}")
        s = F.col(name).cast("double")
        s = (F.when(s.isNull(), fail(F.lit(f"run: missing score in column {name}")))
             .when(F.isnan(s) | (F.abs(s) == F.lit(float("inf"))),
                   fail(F.concat(F.lit("run: score must be a finite number, got "), s.cast("string"),
                                  F.lit("; NaN or infinite scores have no defined rank"))))
             .otherwise(s)).alias("s")
        return df.select(q, d, s)
    name = names["relevance"]
    dtype = _column(df, name, "relevance", kind)
    if not isinstance(dtype, _NUMERIC):
        raise ValueError(f"qrels: column {name!r} (relevance) must be an integer, got {dtype.simpleString()}")
    raw = F.col(name)
    if isinstance(dtype, _INTEGRAL):
        lab = raw.cast("long")
        bad = raw.isNull()
    else:
        as_double = raw.cast("double")
        bad = raw.isNull() | F.isnan(as_double) | (F.abs(as_double) >= F.lit(2.0 ** 63)) \
            | (as_double != F.floor(as_double))
        lab = F.floor(as_double).cast("long")
    lab = F.when(bad, fail(F.concat(F.lit("qrels: relevance must be an integer, got "),
                                     F.coalesce(raw.cast("string"), F.lit("NULL"))))).otherwise(lab).alias("lab")
    return df.select(q, d, lab)


def file_split() -> Column:
    """A number per file split a row was read from (the same for every row of a DataFrame not read
    from files): where a run grouped by query may continue in another split, for the checks of
    repeated pairs that look at each input partition's edges (:func:`.worker.shipped_rows`).

    Made of the split's start and length, not the file's name: with ``input_file_name()`` the pass
    before the shuffle was slower, 18.2 s against 16.4 s for a list of 3x10^7 rows (docs/spark.md).
    Two splits with the same start and length (splits of two files of one size, packed into one
    partition) then share a number, and a query at the edge between them counts as inside the
    partition: that costs time (its query, if it goes on in another partition, makes the
    evaluation run again with every row), never exactness, since those checks ship every row of
    a query they cannot prove whole, or run again."""
    return F.xxhash64(F.input_file_block_start(), F.input_file_block_length())


def align(run: DataFrame, qrels: DataFrame) -> tuple[DataFrame, DataFrame]:
    """Integer ids stay integers through the shuffle (fewer bytes), unless the other input has
    strings there: then both sides are compared as strings."""
    for c in ("q", "d"):
        if run.schema[c].dataType != qrels.schema[c].dataType:
            run, qrels = run.withColumn(c, F.col(c).cast("string")), qrels.withColumn(c, F.col(c).cast("string"))
    return run, qrels
