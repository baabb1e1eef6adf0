"""Qrels and runs read by Spark: TREC / MS MARCO text files split exactly as the local reader
splits them (:mod:`ndcg_plugin.reading.formats`), and Parquet.

Text lines are cut at ``\\n`` only (``lineSep``), trimmed and split on runs of ASCII
whitespace with Java regular expressions anchored by ``\\A``/``\\z`` (``$`` would also match
before a final U+0085 or U+2028, which are id characters here). Blank lines and comments
(runs: first non-blank character ``#``; qrels: ``#`` in column 0) are skipped. Numbers must
match the local reader's syntax; a line that does not stops the job with an error, and for a
local file the local line parser is then run on it to name the line (only on that error
path; nothing is collected otherwise). Invalid UTF-8, a NUL byte and a line longer than
``sizes.LINE_BYTES`` are refused anywhere, comments included, as the local reader refuses them.
A byte order mark is dropped from the first line of a file. gzip files must be named ``*.gz``
(Spark decompresses by name).
"""
from __future__ import annotations

import os
import warnings

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from ..errors import VALUE_COLUMN, ColumnsError, InputError
from ..reading.formats import LAYOUTS, RUN_FORMATS, WHITESPACE
from ..sizes import LINE_BYTES
from .failures import fail, is_local, local_path, reraise

WS = "[" + "".join(f"\\x{b:02X}" for b in WHITESPACE) + "]"  # the local reader's whitespace, for Java
INTEGER = r"\A[+-]?[0-9]+\z"
DECIMAL = r"\A[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?\z"  # reading.formats.DECIMAL's, for Java


def is_parquet(path: str) -> bool:
    """A path read as Parquet: a name ending in .parquet, or a directory (Spark's output)."""
    return str(path).rstrip("/").endswith(".parquet") or (is_local(path) and os.path.isdir(path))


def _check_local(path: str) -> bytes:
    """The first bytes of a local file, after the checks the local reader makes first."""
    local = local_path(path)
    if not os.path.exists(local):
        raise InputError(path, None, "file not found")
    if os.path.isdir(local):
        raise InputError(path, None, "is a directory, expected a qrels or run file")
    with open(local, "rb") as f:
        head = f.read(3)
    gz = head[:2] == b"\x1f\x8b"
    if str(path).endswith(".gz") and head and not gz:
        raise InputError(path, None, "the name ends in .gz but the content is not gzip; rename the file or compress it")
    if gz and not str(path).endswith(".gz"):
        raise InputError(path, None, "gzip content in a file whose name does not end in .gz: Spark decompresses by "
                         "the name; rename it to end in .gz")
    return head


def read(spark, path: str, kind: str, run_format: str = "auto", columns: dict | None = None) -> DataFrame:
    """A qrels or run file as a DataFrame (query_id, doc_id, relevance | score). Parquet files
    must have those columns, or those ``columns`` names them (``{"query_id": "user_id", ...}``,
    as :func:`ndcg_plugin.read`'s ``columns=``); text files are parsed as described in the module
    docstring."""
    from ..reading.formats import column_names
    if kind not in VALUE_COLUMN:
        raise ValueError(f"kind must be 'qrels' or 'run', got {kind!r}")
    if run_format not in RUN_FORMATS:
        raise ValueError(f"run_format must be one of {RUN_FORMATS}, got {run_format!r}")
    names = column_names(kind, columns)
    if is_parquet(path):
        df = spark.read.parquet(str(path))
        missing = [names[c] for c in ("query_id", "doc_id", VALUE_COLUMN[kind]) if names[c] not in df.columns]
        if missing:
            raise ColumnsError(kind, str(path), f"Parquet {kind} needs the columns "
                               f"{', '.join(names[c] for c in ('query_id', 'doc_id', VALUE_COLUMN[kind]))}; "
                               f"missing {missing} (columns: {df.columns})")
        return df.select(*(F.col(names[c]).alias(c) for c in ("query_id", "doc_id", VALUE_COLUMN[kind])))
    if columns is not None:
        raise ValueError(f"{path}: column names are for Parquet files; a text file's columns are found by their "
                         f"position")
    return read_text(spark, path, kind, run_format)


def _strip_bom_of_first_lines(df: DataFrame) -> DataFrame:
    """Drop U+FEFF from the first line of each file (and only there): the first line is the row
    with the smallest generated id among the rows of the file's first block."""
    df = df.select("value", F.monotonically_increasing_id().alias("_rid"),
                   F.col("_metadata.file_path").alias("_file"), F.col("_metadata.file_block_start").alias("_start"))
    firsts = [r[1] for r in df.where(F.col("_start") == 0).groupBy("_file").agg(F.min("_rid")).collect()]
    first = F.col("_rid").isin(firsts)
    return df.select(F.when(first, F.regexp_replace("value", "\\A\ufeff", "")).otherwise(F.col("value")).alias("value"))


def _fail(path: str, reason: Column) -> Column:
    return fail(F.concat(F.lit(f"{path}: "), reason))


def first_fields(path: str, kind: str) -> int | None:
    """The number of fields of a local file's first data line (None: it has none), read here
    rather than by a Spark job: lines cut at ``\\n``, ASCII whitespace, comments and a leading BOM as
    Spark's reading below sees them."""
    import gzip
    with (gzip.open(path, "rb") if path.endswith(".gz") else open(path, "rb")) as f:
        for i, line in enumerate(f):
            line = line[3:] if i == 0 and line.startswith(b"\xef\xbb\xbf") else line
            fields = line.split()
            if fields and not (line.startswith(b"#") if kind == "qrels" else fields[0].startswith(b"#")):
                return len(fields)
    return None


def has_comment_lines(path: str) -> bool:
    """Whether a local file has a line starting with ``#`` (a fast byte scan, no parsing)."""
    import gzip
    with (gzip.open(path, "rb") if path.endswith(".gz") else open(path, "rb")) as f:
        previous = b"\n"
        while chunk := f.read(1 << 24):
            if (previous[-1:] == b"\n" and chunk.startswith((b"#", b"\xef\xbb\xbf#"))) or b"\n#" in chunk:
                return True
            previous = chunk
    return False


def _local_qrels(spark, path: str) -> DataFrame:
    """A local qrels file with comment lines, read by the local reader (trec_eval's rules for
    them need each line's predecessor: the line after a comment is a judgment, a file may not
    end with a comment) and handed to Spark."""
    from ..reading import read as read_locally
    table = read_locally(local_path(path), "qrels", source=str(path))
    frame = table.astype({"query_id": object, "doc_id": object, "relevance": "int64"})
    with warnings.catch_warnings():  # a frame of three plain columns (object ids, int64): tested with pandas 3
        warnings.filterwarnings("ignore", "PySpark does not yet fully support pandas", FutureWarning)
        return spark.createDataFrame(frame, "query_id string, doc_id string, relevance long")


def _data_lines(df: DataFrame, path: str, kind: str) -> DataFrame:
    """The data lines of the file's lines ``df`` (``value``), with their fields ``f``: blank lines
    and comments left out; a line no reader may take stops the job (invalid UTF-8, a NUL byte or
    a line longer than ``sizes.LINE_BYTES``, anywhere, comments included, as in the local reader,
    which checks every byte of a block; a blank line in qrels, which trec_eval refuses). For a
    local file the local reader then names the line (:func:`~.failures.reraise`)."""
    value = F.col("value")
    trimmed = F.btrim(value, F.lit(WHITESPACE.decode("ascii")))  # not {WS}+\z: quadratic in a long inner run
    df = df.select(value, F.split(trimmed, f"{WS}+").alias("f"), (trimmed == "").alias("blank"))
    comment = value.startswith("#") if kind == "qrels" else F.get("f", 0).startswith("#")
    blank = F.col("blank")
    if kind == "qrels":  # trec_eval refuses a blank line in qrels (the local reader names it)
        blank = F.when(blank, _fail(path, F.lit("a blank line, which trec_eval refuses in qrels"))).otherwise(False)
    data = df.where(F.when(~F.is_valid_utf8(value), _fail(path, F.lit("not valid UTF-8; ids must be UTF-8 text")))
                    .when(F.instr(value, "\x00") > 0,
                          _fail(path, F.lit("a NUL byte in a line, which trec_eval cannot read (its files 'may contain "
                                            "no NULL characters'); the file is damaged or not text")))
                    .when(F.octet_length(value) > LINE_BYTES,
                          _fail(path, F.lit(f"a line longer than {LINE_BYTES:,} bytes (trec_eval's reader is "
                                            f"written for lines of 10,000 bytes); a file without line ends, or not "
                                            f"a qrels or run file?")))
                    .otherwise(~blank & ~comment))
    return data


def read_text(spark, path: str, kind: str, run_format: str = "auto") -> DataFrame:
    head = _check_local(path) if is_local(path) else b""
    if head.startswith(b"\xef\xbb\xbf"):
        warnings.warn(f"{path} starts with a UTF-8 byte order mark: it is dropped (trec_eval would keep it as "
                      f"part of the first query id, which then matches no query)", RuntimeWarning, stacklevel=3)
    if kind == "qrels" and is_local(path) and has_comment_lines(local_path(path)):
        return _local_qrels(spark, path)
    df = spark.read.option("lineSep", "\n").text(str(path))
    if head.startswith(b"\xef\xbb\xbf") or not is_local(path):
        with reraise({str(path): (kind, run_format, None)}):
            df = _strip_bom_of_first_lines(df)
    data = _data_lines(df, path, kind)
    if is_local(path):
        fields = first_fields(local_path(path), kind)
    else:
        with reraise({str(path): (kind, run_format, None)}):
            first = data.select(F.size("f").alias("n")).first()
        fields = None if first is None else first["n"]
    if fields is None and (kind == "qrels" or not head):
        raise InputError(str(path), None, f"no {kind} lines found: the input is empty")
    if fields is None:  # as the local reader: a run that returned nothing
        warnings.warn(f"{path} holds no result line (only comments or blank lines): every qrels query scores 0, "
                      f"as trec_eval -c scores them", RuntimeWarning, stacklevel=3)
        return spark.createDataFrame([], "query_id string, doc_id string, score double")
    if kind == "qrels":
        layout = LAYOUTS["qrels"]
    else:
        layout = LAYOUTS[("msmarco" if fields == 3 else "trec") if run_format == "auto" else run_format]
    n = F.size("f")
    count_ok = (n >= layout.columns) if layout.extra_allowed else (n == layout.columns)
    raw = F.get("f", layout.value_at)
    line = F.substring(F.col("value"), 1, 120)
    if layout.integer:
        number = F.expr(f"try_cast(f[{layout.value_at}] AS BIGINT)")
        number_ok = raw.rlike(INTEGER) & number.isNotNull()
    else:
        number = F.expr(f"try_cast(f[{layout.value_at}] AS DOUBLE)")
        number_ok = raw.rlike(DECIMAL) & number.isNotNull() & ~F.isnan(number) \
            & (F.abs(number) != F.lit(float("inf")))
    value_col = -number.cast("double") if layout.rank_is_value else number
    columns = f"expected {layout.columns} columns {layout.expected}, got "
    checked = (F.when(~count_ok, _fail(path, F.concat(F.lit(columns), n.cast("string"), F.lit(" (line: "), line,
                                                      F.lit(")"))))
               .when(~number_ok, _fail(path, F.concat(F.lit(f"expected {layout.what}, got "), raw,
                                                      F.lit(" (line: "), line, F.lit(")"))))
               .otherwise(value_col))
    out = data.select(F.get("f", layout.query_at).alias("query_id"),
                      F.get("f", layout.doc_at).alias("doc_id"), checked.alias(VALUE_COLUMN[kind]))
    if kind == "qrels":
        out = out.withColumn("relevance", F.col("relevance").cast("long"))
    return out
