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

import gzip
import inspect
import io
import os
import sys
import weakref
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd

from . import fastread
from .columns import fingerprints, group_codes

Kind = Literal["qrels", "run"]
VALUE_COLUMN = {"qrels": "relevance", "run": "score"}


class InputError(ValueError):
    """Bad qrels or run input.  Carries ``source`` (file name or input description), ``line``
    (1-based for files, row position for in-memory inputs, or None) and ``reason``."""

    def __init__(self, source: str, line: int | None, reason: str, text: str | None = None):
        self.source, self.line, self.reason, self.text = source, line, reason, text
        where = source if line is None else f"{source}:{line}"
        msg = f"{where}: {reason}"
        if text is not None:
            shown = text if len(text) <= 120 else text[:117] + "..."
            msg += f" (line: {shown!r})"
        super().__init__(msg)


def _open_bytes(path: str | Path) -> tuple[bytes, str]:
    """Return (content, source name); gzip is detected by its magic bytes, not the extension."""
    if str(path) == "-":
        data = sys.stdin.buffer.read()
        source = "<stdin>"
    else:
        source = str(path)
        try:
            with open(path, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            raise InputError(source, None, "file not found") from None
        except IsADirectoryError:
            raise InputError(source, None, "is a directory, expected a qrels or run file") from None
        except PermissionError:
            raise InputError(source, None, "permission denied") from None
    if data[:2] == b"\x1f\x8b":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError) as e:
            raise InputError(source, None, f"corrupt or truncated gzip data ({e})") from None
    elif source.endswith(".gz"):
        raise InputError(source, None, "the name ends in .gz but the content is not gzip; "
                         "rename the file or compress it")
    return data, source


def _decode(data: bytes, source: str) -> str:
    try:
        return bytes(data).decode("utf-8-sig")  # a leading BOM is dropped
    except UnicodeDecodeError as e:
        raise InputError(source, None, f"not valid UTF-8 at byte {e.start}") from None


class _NeedsLineNumbers(Exception):
    """A table from the columnar path has a problem whose message needs line numbers."""


def _read_bytes(data: bytes, source: str, kind: Kind, run_format: str, duplicates: str,
                progress) -> pd.DataFrame:
    """Columnar parse first (fastread); the line-by-line parser for anything it declines, and to
    name the lines of a duplicate it found."""
    table = fastread.parse(data, kind, run_format, progress)
    if table is not None:
        try:
            return resolve_duplicates(table, kind, duplicates, source)
        except _NeedsLineNumbers:
            pass
    table = _parse_lines(_decode(data, source), source, kind, run_format, progress)
    table.attrs["unit"] = "line"
    return resolve_duplicates(table, kind, duplicates, source)


def _detect_run_format(fields: list[str]) -> str:
    return "msmarco" if len(fields) == 3 else "trec"


def _parse_lines(text: str, source: str, kind: Kind, run_format: str, progress=None) -> pd.DataFrame:
    """Parse TREC qrels (``qid iter docid rel``), TREC runs (``qid Q0 docid rank score tag``,
    extra trailing columns allowed as trec_eval allows them) or MS MARCO runs
    (``qid docid rank``: score = -rank)."""
    qids: list[str] = []
    dids: list[str] = []
    vals: list[str] = []
    lines: list[int] = []
    fmt = run_format
    all_lines = text.splitlines()
    total = len(all_lines)
    for lineno, line in enumerate(all_lines, start=1):
        if progress is not None and lineno % 500_000 == 0:
            progress(lineno, total)
        fields = line.split()
        if not fields:
            continue  # blank lines are skipped, as trec_eval does
        n = len(fields)
        if kind == "qrels":
            if n != 4:
                raise InputError(source, lineno, f"expected 4 columns 'query_id iteration doc_id "
                                 f"relevance' in a qrels file, got {n}", line)
            qids.append(fields[0])
            dids.append(fields[2])
            vals.append(fields[3])
        else:
            if fmt == "auto":
                fmt = _detect_run_format(fields)
            if fmt == "msmarco":
                if n != 3:
                    raise InputError(source, lineno, f"expected 3 columns 'query_id doc_id rank' "
                                     f"in an MS MARCO run, got {n}", line)
                qids.append(fields[0])
                dids.append(fields[1])
                vals.append(fields[2])
            else:
                if n < 6:
                    raise InputError(source, lineno, f"expected 6 columns 'query_id Q0 doc_id rank "
                                     f"score run_tag' in a TREC run, got {n}", line)
                qids.append(fields[0])
                dids.append(fields[2])
                vals.append(fields[4])
        lines.append(lineno)
    if progress is not None and total >= 500_000:
        progress(total, total)
    if not lines:
        raise InputError(source, None, f"no {kind} lines found: the input is empty")
    col = VALUE_COLUMN[kind]
    line_numbers = np.array(lines)
    values = _to_numbers(np.array(vals, dtype=object), source, line_numbers, kind,
                         integer=(kind == "qrels" or fmt == "msmarco"))
    if kind == "run" and fmt == "msmarco":
        values = -values.astype(np.float64)  # rank 1 is best: higher score is better
    values = _check_values(values, source, kind, line_numbers)
    return pd.DataFrame({"query_id": qids, "doc_id": dids, col: values, "line": line_numbers})


def _to_numbers(raw: np.ndarray, source: str, lines: np.ndarray, kind: Kind, integer: bool) -> np.ndarray:
    what = "an integer relevance label" if kind == "qrels" else ("an integer rank" if integer else "a numeric score")
    try:
        return raw.astype(np.int64) if integer else raw.astype(np.float64)
    except (ValueError, OverflowError):
        pass
    for i, v in enumerate(raw):  # slow path, only to find the offending line
        try:
            int(v) if integer else float(v)
        except (ValueError, OverflowError):
            raise InputError(source, int(lines[i]), f"expected {what}, got {v!r}") from None
    raise InputError(source, None, f"could not read {what}")  # pragma: no cover


def _ids(values: Any, source: str, name: str) -> Any:
    """Query or doc ids as strings (a pandas string array, kept as given, or an object array).
    Integers become str(int); floats, booleans, None/NaN and empty strings are refused. Only
    C-speed checks run on valid input; a Python loop runs only to name an offending row."""
    if isinstance(values, (pd.Series, pd.Index)):
        values = values.array
    if isinstance(getattr(values, "dtype", None), pd.StringDtype):
        missing = np.flatnonzero(pd.isna(values))
        if len(missing):
            raise InputError(source, int(missing[0]), f"missing value in column {name}")
        arr = values
    else:
        if isinstance(values, np.ndarray):
            arr = values
        elif hasattr(values, "dtype"):
            arr = np.asarray(values)
        else:
            arr = np.asarray(values, dtype=object)
        kind = arr.dtype.kind
        if kind in "iu":
            return arr.astype(str).astype(object)
        if kind in "UT":
            arr = arr.astype(object)
        elif kind != "O":
            what = "floats" if kind == "f" else f"of dtype {arr.dtype}"
            raise InputError(source, None, f"{name} values are {what}; ids must be strings or integers "
                             "(convert them explicitly, e.g. df[col].astype('Int64').astype(str))")
        inferred = pd.api.types.infer_dtype(arr, skipna=False)
        if inferred in ("integer", "mixed-integer"):
            arr = np.array([v if isinstance(v, str) else _int_id(v, source, i, name) for i, v in enumerate(arr)],
                           dtype=object)
        elif inferred not in ("string", "empty"):
            for i, v in enumerate(arr):
                if not isinstance(v, str):
                    raise InputError(source, i, f"{name} must be a string or an integer, got {v!r}")
    empty = np.flatnonzero(np.asarray(arr == ""))
    if len(empty):
        raise InputError(source, int(empty[0]), f"empty {name}")
    return arr


def _int_id(v: Any, source: str, i: int, name: str) -> str:
    if isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)):
        return str(v)
    raise InputError(source, i, f"{name} must be a string or an integer, got {v!r}")


def _check_values(values: Any, source: str, kind: Kind, lines: np.ndarray) -> np.ndarray:
    col = VALUE_COLUMN[kind]
    arr = np.asarray(values)
    if arr.dtype.kind == "b" or (arr.dtype.kind not in "iuf" and arr.dtype.kind != "O"):
        raise InputError(source, None, f"{col} must be numeric, got dtype {arr.dtype}")
    if arr.dtype.kind == "O":
        try:
            arr = arr.astype(np.float64)
        except (TypeError, ValueError):
            for i, v in enumerate(values):
                try:
                    float(v)
                except (TypeError, ValueError):
                    raise InputError(source, int(lines[i]), f"{col} must be numeric, got {v!r}") from None
    if kind == "qrels":
        if arr.dtype.kind == "f":
            bad = np.flatnonzero(~np.isfinite(arr) | (arr != np.round(arr)))
            if len(bad):
                raise InputError(source, int(lines[bad[0]]), f"relevance must be an integer, got {arr[bad[0]]!r}")
            arr = arr.astype(np.int64)
        return arr.astype(np.int64)
    arr = arr.astype(np.float64)
    bad = np.flatnonzero(~np.isfinite(arr))
    if len(bad):
        raise InputError(source, int(lines[bad[0]]), f"score must be a finite number, got {arr[bad[0]]!r}; "
                         "NaN or infinite scores have no defined rank")
    return arr


def _from_columns(qids: Any, dids: Any, values: Any, source: str, kind: Kind,
                  lines: np.ndarray | None = None) -> pd.DataFrame:
    n = len(qids)
    if lines is None:
        lines = np.arange(n)
    return pd.DataFrame({
        "query_id": _ids(qids, source, "query_id"),
        "doc_id": _ids(dids, source, "doc_id"),
        VALUE_COLUMN[kind]: _check_values(values, source, kind, lines),
        "line": lines,
    })


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
        if str(data) != "-" and os.path.isfile(data) and os.path.getsize(data) > 0:
            with open(data, "rb") as f:
                gzipped = f.read(2) == b"\x1f\x8b"
            table = fastread.parse(str(data), kind, run_format, progress, gzipped=gzipped)
            if table is not None and not (src.endswith(".gz") and not gzipped):
                try:
                    return resolve_duplicates(table, kind, duplicates, src)
                except _NeedsLineNumbers:
                    pass
        content, _ = _open_bytes(data)
        return _read_bytes(content, src, kind, run_format, duplicates, progress)
    if isinstance(data, io.IOBase) or hasattr(data, "read"):
        content = data.read()
        if isinstance(content, str):
            content = content.encode("utf-8")
        return _read_bytes(content, source or getattr(data, "name", "<stream>"), kind, run_format, duplicates,
                           progress)
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
