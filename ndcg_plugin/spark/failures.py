"""Input errors raised inside a Spark job, and turned back into the local engine's errors.

Checks run as ``raise_error`` expressions (:func:`fail`) whose message starts with
:data:`MARK`; :func:`reraise` finds that message in whatever pyspark raises and raises a
ValueError with it, or, for an error in a file, an :class:`InputError` naming the file (and the
line the local reader names, for a local file: :func:`locate_error`).
"""
from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager

from pyspark.sql import Column
from pyspark.sql import functions as F

from ..errors import InputError

MARK = "ndcg-plugin input error: "
_NO_PACKAGE = "No module named 'ndcg_plugin'"
_MESSAGE = re.compile(re.escape(MARK) + r"(.*?)(?:\n|$)")


def fail(message: Column) -> Column:
    """An expression that fails the job with ``message`` (marked, for :func:`reraise`)."""
    return F.raise_error(F.concat(F.lit(MARK), message))


def is_local(path: str) -> bool:
    return "://" not in str(path) or str(path).startswith("file://")


def local_path(path: str) -> str:
    return str(path)[len("file://"):] if str(path).startswith("file://") else str(path)


def locate_error(path: str, kind: str, run_format: str) -> InputError | None:
    """The local reader's error for a local file (its line and reason), found by the local line
    parser streaming over the file; None when it finds none or the file is not local."""
    if not is_local(path):
        return None
    from ..reading.sources import blocks, parse_blocks
    try:
        for _ in parse_blocks(blocks(local_path(path), str(path)), str(path), kind, run_format):
            pass
    except InputError as e:
        return e
    return None


@contextmanager
def reraise(files: dict | None = None) -> Iterator[None]:
    """Turn an input error raised inside a Spark job into a ValueError with its message. For an
    error in one of ``files`` ({path: (kind, run_format, columns)}), an :class:`InputError` naming the
    file, with the line the local reader names when the file is local."""
    try:
        yield
    except Exception as e:  # pyspark wraps JVM errors in several classes across versions
        if _NO_PACKAGE in str(e):
            from .session import SparkUnavailable
            raise SparkUnavailable(
                "the Spark executors' Python cannot import ndcg_plugin, which the Spark engine runs on each partition "
                "(the local engine, as any PySpark UDF library runs there): install ndcg-plugin in the executors' "
                "environment, e.g. a packed virtual environment (docs/spark.md: On a cluster)") from None
        found = _MESSAGE.search(str(e))
        if found is None:
            raise
        message = found.group(1).strip()
        for path, (kind, run_format, _) in (files or {}).items():
            if message.startswith(f"{path}: "):
                located = locate_error(path, kind, run_format)
                raise (located or InputError(path, None, message[len(path) + 2:])) from None
        raise ValueError(message.rstrip(".")) from None


def locate_duplicate(path: str, kind: str, run_format: str, columns: dict | None = None) -> InputError | None:
    """The local reader's error for a repeated pair in a local file (both lines or rows named);
    None when the file is not local or the local reader finds none."""
    if not is_local(path):
        return None
    from ..reading import read
    try:
        read(local_path(path), kind, run_format=run_format, source=str(path), columns=columns)
    except InputError as e:
        return e
    return None


def duplicate_error(kind: str, pair: list, n: int, files: dict | None = None) -> Exception:
    """The error for a repeated (query, doc) pair of ``kind``: the local reader's, naming both
    lines, for a local file of ``files`` ({path: (kind, run_format, columns)}); else the pair and its count
    (rows of a Spark DataFrame have no order to name them by)."""
    for path, (k, run_format, columns) in (files or {}).items():
        if k == kind:
            located = locate_duplicate(path, kind, run_format, columns)
            if located is not None:
                return located
    return ValueError(f"{kind}: duplicate (query_id, doc_id) = ({pair[0]!r}, {pair[1]!r}): {n} rows; trec_eval "
                      f"refuses duplicates")
