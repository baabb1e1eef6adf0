"""The one reader for qrels and runs.

Every input form ends up as a table: a pandas DataFrame with the ir-measures column names
(``query_id``, ``doc_id`` and ``relevance`` or ``score``) plus ``line``, the 1-based line
number in a text file (or the 0-based row position for Parquet and in-memory inputs), used to
name both rows of a duplicate.

Accepted inputs (the same for qrels and runs):

- a path (``str`` or ``pathlib.Path``; plain or gzip, detected from the content) or ``"-"``
  for standard input; an open stream; the text of a file (a ``str`` holding a newline);
- a Parquet file (named ``*.parquet``, or any file with Parquet's magic bytes at both ends) or
  a directory of Parquet files, with the ir-measures columns (:mod:`.parquet`);
- a pandas DataFrame with the ir-measures columns (``columns=`` maps other names, for
  DataFrames and Parquet alike);
- a dict of dicts ``{query_id: {doc_id: value}}``;
- any iterable of namedtuples with the ir-measures fields (``ir_measures.Qrel``,
  ``ir_measures.ScoredDoc``, the iterators of ``ir_measures.read_trec_*``); it is read once.
  To read a file fast, pass its path here rather than ``ir_measures.read_trec_run(path)``.

Files are read exactly as trec_eval reads them (:mod:`.formats`): by Arrow's CSV reader
(:mod:`.columnar`) where a block of lines is in the simple form, by the line parser
(:mod:`.lines`) elsewhere; both give the same table. Ids are strings, never coerced: ``"001"``
and ``"1"`` are different queries. Integer ids in a DataFrame or dict are converted with
``str()``; float ids are refused since ``str(1.0)`` would silently not match ``"1"``. Nothing
given is modified, and nothing about a returned table is remembered.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ..arrays.block import Block
from ..arrays.columns import as_arrow_strings, join_chunks, to_numpy
from ..errors import VALUE_COLUMN, InputError, Kind
from ..sizes import BLOCK_BYTES
from . import sources
from .duplicates import POLICIES, duplicate_mask, kept_rows, resolve_duplicates, take_rows
from .formats import RUN_FORMATS
from .lines import Parsed
from .parquet import ParquetSource, is_parquet
from .sources import is_path, source_name

__all__ = [
    "InputError",
    "read",
    "read_grouped",
    "read_file",
    "read_columns",
    "concat",
    "to_table",
    "sources",
    "duplicate_mask",
    "resolve_duplicates",
    "Parsed",
    "BLOCK_BYTES",
    "check_options",
    "file_pieces",
    "is_parquet",
    "ParquetSource",
]


def check_options(kind: str, run_format: str, duplicates: str) -> None:
    if kind not in VALUE_COLUMN:
        raise ValueError(f"kind must be 'qrels' or 'run', got {kind!r}")
    if run_format not in RUN_FORMATS:
        raise ValueError(f"run_format must be 'auto', 'trec' or 'msmarco', got {run_format!r}")
    if duplicates not in POLICIES:
        raise ValueError(f"duplicates must be 'error', 'first' or 'max', got {duplicates!r}")


def is_file_like(data: Any) -> bool:
    return is_path(data) or isinstance(data, (str, bytes, bytearray)) or hasattr(data, "read")


def file_pieces(data: Any, kind: Kind, run_format: str = "auto", source: str | None = None, progress=None,
                block_bytes: int = BLOCK_BYTES, columns: Mapping[str, str] | None = None) -> tuple[list[Parsed], str]:
    """(a file's parsed pieces, in order, before the duplicate policy; the source's name): text
    (see :mod:`.sources`) or Parquet (:mod:`.parquet`, imported only for a Parquet input)."""
    src = source or source_name(data, "<text>" if isinstance(data, str) else "<stream>")
    pieces = list(sources.pieces(data, kind, src, run_format, block_bytes, progress, columns))
    what = "rows" if is_parquet(data) else "lines"
    if not pieces:
        raise InputError(src, None, f"no {kind} {what} found: the input is empty")
    return pieces, src


def read_columns(data: Any, kind: Kind, *, run_format: str = "auto", source: str | None = None,
                 duplicates: str = "error", progress=None, columns: Mapping[str, str] | None = None) -> Parsed:
    """A file (a path, ``-``, a stream or text; see :func:`read`) read into the reader's own
    columns, validated and with the duplicate policy applied, as :func:`read` would, but without
    building a DataFrame (so without importing pandas). The engine takes either. ``columns``: as
    for :func:`read`."""
    check_options(kind, run_format, duplicates)
    if not is_file_like(data):
        raise TypeError(f"read_columns reads files, streams and text; got {type(data).__name__} (use read())")
    pieces, src = file_pieces(data, kind, run_format, source, progress, columns=columns)
    return resolve_duplicates(Parsed.joined(pieces), kind, duplicates, src)


def to_table(pieces: list[Parsed], kind: Kind):
    """One table (a pandas DataFrame) from parsed pieces of a file, in order."""
    import pandas as pd

    def strings(arrays):
        return pd.arrays.ArrowStringArray(join_chunks(arrays))

    values = np.concatenate([p.value for p in pieces])
    table = pd.DataFrame({"query_id": strings([p.query_id for p in pieces]),
                          "doc_id": strings([p.doc_id for p in pieces]),
                          VALUE_COLUMN[kind]: values.astype(np.int64 if kind == "qrels" else np.float64),
                          "line": np.concatenate([p.line for p in pieces])}, copy=False)  # all new arrays
    table.attrs["unit"] = pieces[0].layout.unit
    return table


def read_file(data: Any, kind: Kind, run_format: str = "auto", source: str | None = None,
              progress=None, block_bytes: int = BLOCK_BYTES, columns: Mapping[str, str] | None = None):
    """A file's table (see :func:`read`), before the duplicate policy."""
    return to_table(file_pieces(data, kind, run_format, source, progress, block_bytes, columns)[0], kind)


def read(data: Any, kind: Kind, *, run_format: str = "auto", source: str | None = None,
         duplicates: str = "error", progress=None, columns: Mapping[str, str] | None = None, queries: Any = None):
    """Read qrels (``kind="qrels"``) or a run (``kind="run"``) from any accepted form into a
    validated table (see the module docstring).

    ``duplicates`` decides what happens to a repeated (query_id, doc_id) pair: ``"error"``
    (default, as trec_eval refuses them; the message names both lines), ``"first"`` (keep the
    first occurrence) or ``"max"`` (keep the highest score / relevance). ``progress``, if
    given, is called as ``progress(bytes_done, bytes_total)`` while a file is read
    (``bytes_total`` is 0 when unknown, as for standard input). ``columns`` maps the ir-measures
    column names to those of a Parquet file or a DataFrame (``{"query_id": "user_id"}``; the
    others keep their names). ``queries``: see :func:`read_grouped`.
    """
    block, keep = _policy(data, kind, run_format, source, duplicates, progress, columns, queries)
    return block.rows if keep is None else take_rows(block.rows, keep)


def read_grouped(data: Any, kind: Kind, *, run_format: str = "auto", source: str | None = None,
                 duplicates: str = "error", progress=None, columns: Mapping[str, str] | None = None,
                 queries: Any = None) -> Block:
    """As :func:`read`, as a :class:`~ndcg_plugin.arrays.block.Block`: the table (``rows``) with
    :func:`ndcg_plugin.arrays.columns.group_codes` of its query ids, computed once for the
    duplicate check and handed on to the engine (recomputed when the duplicate policy dropped
    rows). ``queries`` (a run's: the qrels' query ids): the duplicate policy applies to these
    queries only, as trec_eval accepts a repeated pair in a query it does not evaluate."""
    block, keep = _policy(data, kind, run_format, source, duplicates, progress, columns, queries)
    return block if keep is None else Block.of(take_rows(block.rows, keep))


def _policy(data: Any, kind: Kind, run_format: str, source: str | None, duplicates: str, progress,
            columns: Mapping[str, str] | None, queries: Any) -> tuple[Block, np.ndarray | None]:
    """(the validated table's block before the duplicate policy, the rows it keeps or None for all)."""
    table, src = _unchecked(data, kind, run_format, source, duplicates, progress, columns)
    block = Block.of(table)
    only = None
    if queries is not None:
        import pyarrow.compute as pc
        only = to_numpy(pc.is_in(block.groups.uniques, value_set=as_arrow_strings(queries).combine_chunks())
                        ).astype(bool)[block.groups.codes]
    return block, kept_rows(block, kind, duplicates, src, only=only)


def _unchecked(data: Any, kind: Kind, run_format: str, source: str | None, duplicates: str, progress,
               columns: Mapping[str, str] | None = None):
    """(the validated table before the duplicate policy, the source's name)."""
    check_options(kind, run_format, duplicates)
    if is_file_like(data):
        pieces, src = file_pieces(data, kind, run_format, source, progress, columns=columns)
        return to_table(pieces, kind), src
    import pandas as pd

    from . import memory
    if isinstance(data, pd.DataFrame):
        src = source or f"{kind} DataFrame"
        return memory.from_dataframe(data, kind, src, columns), src
    if columns is not None:
        raise ValueError(f"columns= names the columns of a Parquet file or a DataFrame, not of a {type(data).__name__}")
    if isinstance(data, dict):
        src = source or f"{kind} dict"
        return memory.from_dict(data, kind, src), src
    if hasattr(data, "__iter__"):
        src = source or f"{kind} iterable"
        return memory.from_records(data, kind, src), src
    raise InputError(source or kind, None,
                     f"unsupported {kind} input of type {type(data).__name__}; expected a path, a "
                     f"DataFrame (query_id, doc_id, {VALUE_COLUMN[kind]}), a dict of dicts or an iterable "
                     "of namedtuples")
