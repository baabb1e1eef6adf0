"""The one reader for qrels and runs.

Every input form ends up as a :class:`Table`: a pandas DataFrame with the ir-measures column
names (``query_id``, ``doc_id`` and ``relevance`` or ``score``) plus ``line``, the 1-based line
number in the source file (or the 0-based row position for in-memory inputs), used to name
both lines of a duplicate.

Accepted inputs (the same for qrels and runs):

- a path (``str`` or ``pathlib.Path``; plain or gzip, detected from the content) or ``"-"``
  for standard input;
- a pandas DataFrame with the ir-measures columns;
- a dict of dicts ``{query_id: {doc_id: value}}``;
- any iterable of namedtuples with the ir-measures fields (``ir_measures.Qrel``,
  ``ir_measures.ScoredDoc``, the iterators of ``ir_measures.read_trec_*``); it is read once.

Ids are strings, never coerced: ``"001"`` and ``"1"`` are different queries.  Integer ids in a
DataFrame or dict are converted with ``str()`` (``1`` -> ``"1"``); float ids are refused since
``str(1.0)`` would silently not match ``"1"``.  Nothing given is modified.
"""
from __future__ import annotations

import inspect
import io
import os
import weakref
from typing import Any

import numpy as np
import pandas as pd

from . import fastread
from .columns import fingerprints, group_codes
from .textread import _decode, _open_bytes, _parse_lines
from .validate import VALUE_COLUMN, InputError, Kind, _from_columns

__all__ = ["InputError", "read", "derived", "duplicate_mask", "resolve_duplicates"]


class _NeedsLineNumbers(Exception):
    """A table from the columnar path has a problem whose message needs line numbers."""


def _read_file(columnar: Any, load_bytes, source: str, kind: Kind, run_format: str, duplicates: str,
               progress, gzipped: bool = False) -> pd.DataFrame:
    """Columnar parse of ``columnar`` (a path or bytes; None to skip it) first; the line-by-line
    parser on ``load_bytes()`` for anything it declines, and to name the lines of a duplicate it
    found. Each parser reads the file at most once."""
    if columnar is not None:
        table = fastread.parse(columnar, kind, run_format, progress, gzipped=gzipped)
        if table is not None:
            try:
                return resolve_duplicates(table, kind, duplicates, source)
            except _NeedsLineNumbers:
                pass
    table = _parse_lines(_decode(load_bytes(), source), source, kind, run_format, progress)
    table.attrs["unit"] = "line"
    return resolve_duplicates(table, kind, duplicates, source)


def read(data: Any, kind: Kind, *, run_format: str = "auto", source: str | None = None,
         duplicates: str = "error", progress=None) -> pd.DataFrame:
    """Read qrels (``kind="qrels"``) or a run (``kind="run"``) from any accepted form into a
    validated table (see the module docstring).

    ``duplicates`` decides what happens to a repeated (query_id, doc_id) pair: ``"error"``
    (default, as trec_eval refuses them; the message names both lines), ``"first"`` (keep the
    first occurrence) or ``"max"`` (keep the highest score / relevance). ``progress``, if
    given, is called as ``progress(lines_done, lines_total)`` while a large file is parsed.
    """
    if kind not in VALUE_COLUMN:
        raise ValueError(f"kind must be 'qrels' or 'run', got {kind!r}")
    if run_format not in ("auto", "trec", "msmarco"):
        raise ValueError(f"run_format must be 'auto', 'trec' or 'msmarco', got {run_format!r}")
    if _is_trusted(data, kind):
        return data
    table = _read_any(data, kind, run_format, source, duplicates, progress)
    _trust(table, kind)
    return table


# Tables this reader returned are not validated again when they come back (the CLI reads a
# file, then hands the table to ir-measures, which hands it to the provider). A table is
# recognised by identity, kind and length; a table changed in place should be read again.
# Columns derived from a table (query codes) are kept with it, so the duplicate check and the
# engine compute them once.
_TRUSTED: dict[int, tuple[weakref.ref, str, int]] = {}
_DERIVED: dict[int, tuple[weakref.ref, int, dict]] = {}


def _trust(table: pd.DataFrame, kind: Kind) -> None:
    key = id(table)
    _TRUSTED[key] = (weakref.ref(table, lambda _, k=key: _TRUSTED.pop(k, None)), kind, len(table))


def _is_trusted(data: Any, kind: Kind) -> bool:
    entry = _TRUSTED.get(id(data))
    return entry is not None and entry[0]() is data and entry[1] == kind and entry[2] == len(data)


def derived(table: pd.DataFrame, name: str, compute):
    """``compute()``, remembered for this table object (while it lives and keeps its length)."""
    key = id(table)
    entry = _DERIVED.get(key)
    if entry is None or entry[0]() is not table or entry[1] != len(table):
        entry = (weakref.ref(table, lambda _, k=key: _DERIVED.pop(k, None)), len(table), {})
        _DERIVED[key] = entry
    if name not in entry[2]:
        entry[2][name] = compute()
    return entry[2][name]


def _unstarted_trec_reader_path(data: Any, kind: Kind) -> str | None:
    """The path behind an ``ir_measures.read_trec_run(path)`` / ``read_trec_qrels(path)``
    iterator that nothing has consumed yet: such a file is read with the columnar reader
    instead of line by line through the iterator (which is then closed)."""
    if not inspect.isgenerator(data) or inspect.getgeneratorstate(data) != inspect.GEN_CREATED:
        return None
    import ir_measures
    reader = ir_measures.read_trec_run if kind == "run" else ir_measures.read_trec_qrels
    if data.gi_code is not reader.__code__:
        return None
    path = data.gi_frame.f_locals.get("file")
    if isinstance(path, str) and "\n" not in path and os.path.isfile(path):
        data.close()
        return path
    return None


def _read_any(data: Any, kind: Kind, run_format: str, source: str | None, duplicates: str,
              progress) -> pd.DataFrame:
    col = VALUE_COLUMN[kind]
    path = _unstarted_trec_reader_path(data, kind)
    if path is not None:
        data = path
    if isinstance(data, (str, os.PathLike)) and (isinstance(data, os.PathLike) or "\n" not in data):
        src = source or ("<stdin>" if str(data) == "-" else str(data))
        if str(data) == "-" or not os.path.isfile(data) or os.path.getsize(data) == 0:
            content = _open_bytes(data)[0]  # stdin, a pipe, an empty or a missing file: bytes once
            return _read_file(content, lambda: content, src, kind, run_format, duplicates, progress)
        with open(data, "rb") as f:
            gzipped = f.read(2) == b"\x1f\x8b"
        # a regular file streams into the columnar reader; a fake .gz is for _open_bytes to refuse
        columnar = str(data) if gzipped or not str(data).endswith(".gz") else None
        return _read_file(columnar, lambda: _open_bytes(data)[0], src, kind, run_format, duplicates, progress,
                          gzipped=gzipped)
    if isinstance(data, io.IOBase) or hasattr(data, "read"):
        content = data.read()
        if isinstance(content, str):
            content = content.encode("utf-8")
        return _read_file(content, lambda: content, source or getattr(data, "name", "<stream>"), kind, run_format,
                          duplicates, progress)
    if isinstance(data, str):  # the text of a file
        table = _parse_lines(data, source or "<text>", kind, run_format)
        table.attrs["unit"] = "line"
    elif isinstance(data, pd.DataFrame):
        src = source or f"{kind} DataFrame"
        missing = [c for c in ("query_id", "doc_id", col) if c not in data.columns]
        if missing:
            raise InputError(src, None, f"missing columns {missing}; expected query_id, doc_id, {col} "
                             f"(found {list(data.columns)})")
        if len(data) == 0:
            table = _empty(kind)
        else:
            for c in ("query_id", "doc_id", col):
                nulls = np.flatnonzero(data[c].isna().to_numpy())
                if len(nulls):
                    raise InputError(src, int(nulls[0]), f"missing value in column {c}")
            table = _from_columns(data["query_id"], data["doc_id"], data[col].to_numpy(), src, kind)
    elif isinstance(data, dict):
        src = source or f"{kind} dict"
        qids, dids, vals = [], [], []
        for q, docs in data.items():
            if not isinstance(docs, dict):
                raise InputError(src, None, f"expected a dict of dicts {{query_id: {{doc_id: {col}}}}}, "
                                 f"got {type(docs).__name__} for query {q!r}")
            qids.extend([q] * len(docs))
            dids.extend(docs.keys())
            vals.extend(docs.values())
        table = _from_columns(qids, dids, vals, src, kind) if qids else _empty(kind)
    elif hasattr(data, "__iter__"):
        src = source or f"{kind} iterable"
        rows = list(data)  # read once: iterators may be single-pass
        if not rows:
            table = _empty(kind)
        else:
            first = rows[0]
            fields = getattr(first, "_fields", None)
            if isinstance(first, str):
                raise InputError(src, None, f"got an iterable of strings; if this was a file path, ir-measures' "
                                 f"own functions do not take paths: read it with ndcg_plugin.read(path, '{kind}')")
            if fields is None or any(f not in fields for f in ("query_id", "doc_id", col)):
                raise InputError(src, 0, f"expected namedtuples with fields query_id, doc_id, {col} "
                                 f"(e.g. ir_measures.{'Qrel' if kind == 'qrels' else 'ScoredDoc'}), "
                                 f"got {first!r}")
            try:
                qids = [r.query_id for r in rows]
                dids = [r.doc_id for r in rows]
                vals = [getattr(r, col) for r in rows]
            except AttributeError as e:
                raise InputError(src, None, f"every item needs fields query_id, doc_id, {col}: {e}") from None
            table = _from_columns(qids, dids, vals, src, kind)
    else:
        raise InputError(source or kind, None,
                         f"unsupported {kind} input of type {type(data).__name__}; expected a path, a "
                         f"DataFrame (query_id, doc_id, {col}), a dict of dicts or an iterable of namedtuples")
    return resolve_duplicates(table, kind, duplicates, source=source or _describe(data, kind))


def _describe(data: Any, kind: Kind) -> str:
    if isinstance(data, (str, os.PathLike)):
        return "<stdin>" if str(data) == "-" else str(data)
    return f"{kind} {type(data).__name__}"


def _empty(kind: Kind) -> pd.DataFrame:
    dtype = np.int64 if kind == "qrels" else np.float64
    return pd.DataFrame({"query_id": np.array([], dtype=object), "doc_id": np.array([], dtype=object),
                         VALUE_COLUMN[kind]: np.array([], dtype=dtype), "line": np.array([], dtype=np.int64)})


def duplicate_mask(table: pd.DataFrame) -> np.ndarray | None:
    """Rows whose (query_id, doc_id) pair occurs more than once, or None when all are unique.
    Each pair gets a 64-bit fingerprint (query code mixed with the doc id's byte hash); pairs
    whose fingerprints are all distinct are distinct, and only rows sharing a fingerprint are
    compared as strings."""
    if len(table) < 2:
        return None
    def pair_keys() -> np.ndarray:
        q_codes = derived(table, "query_codes", lambda: group_codes(table["query_id"].array))[0]
        keys = fingerprints(table["doc_id"].array)
        with np.errstate(over="ignore"):
            keys ^= q_codes.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)
        return keys

    ordered = pair_keys()
    ordered.sort()  # in place; a numeric sort is cheaper than a hash table here
    repeated = ordered[1:] == ordered[:-1]
    if not repeated.any():
        return None
    suspects = np.flatnonzero(np.isin(pair_keys(), ordered[1:][repeated]))
    exact = table.iloc[suspects].duplicated(["query_id", "doc_id"], keep=False).to_numpy()
    if not exact.any():
        return None
    mask = np.zeros(len(table), dtype=bool)
    mask[suspects[exact]] = True
    return mask


def resolve_duplicates(table: pd.DataFrame, kind: Kind, policy: str, source: str) -> pd.DataFrame:
    """Apply the duplicate policy ("error", "first", "max") to (query_id, doc_id) pairs."""
    if policy not in ("error", "first", "max"):
        raise ValueError(f"duplicates must be 'error', 'first' or 'max', got {policy!r}")
    dup = duplicate_mask(table)
    if dup is None:
        return table
    col = VALUE_COLUMN[kind]
    if "line" not in table.columns:
        if policy == "error":
            raise _NeedsLineNumbers()
        table = table.assign(line=np.arange(len(table)))
    if policy == "error":
        d = table[dup]
        first = d.iloc[0]
        twin = d[(d["query_id"] == first["query_id"]) & (d["doc_id"] == first["doc_id"])].iloc[1]
        unit = table.attrs.get("unit", "row")
        raise InputError(
            source, int(twin["line"]),
            f"duplicate (query_id, doc_id) = ({first['query_id']!r}, {first['doc_id']!r}): {unit}s "
            f"{int(first['line'])} and {int(twin['line'])} ({col} {first[col]} and {twin[col]}); "
            f"trec_eval refuses duplicates; pass duplicates='first' or 'max' (CLI --duplicates) to keep one")
    if policy == "max":
        order = np.lexsort((table["line"].to_numpy(), -table[col].to_numpy().astype(np.float64)))
        kept = table.iloc[order].drop_duplicates(["query_id", "doc_id"], keep="first")
        return kept.sort_values("line", kind="stable").reset_index(drop=True)
    return table.drop_duplicates(["query_id", "doc_id"], keep="first").reset_index(drop=True)
