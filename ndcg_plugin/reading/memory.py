"""In-memory inputs: DataFrames, dicts of dicts and iterables of namedtuples, as tables."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from ..errors import VALUE_COLUMN, InputError, Kind
from .formats import column_names
from .validate import fast_strings, first_null, from_columns


def empty(kind: Kind) -> pd.DataFrame:
    dtype = np.int64 if kind == "qrels" else np.float64
    return pd.DataFrame({"query_id": np.array([], dtype=object), "doc_id": np.array([], dtype=object),
                         VALUE_COLUMN[kind]: np.array([], dtype=dtype), "line": np.array([], dtype=np.int64)})


def from_dataframe(data: pd.DataFrame, kind: Kind, source: str, columns: Mapping[str, str] | None = None
                   ) -> pd.DataFrame:
    """The table of a DataFrame (``columns``: the names of its columns, see :func:`.formats.column_names`).
    Nothing is copied but what becomes the table: string id columns are converted to Arrow once
    (Arrow-backed ones not at all), the values once."""
    col = VALUE_COLUMN[kind]
    names = column_names(kind, columns)
    missing = [r for r, n in names.items() if n not in data.columns]
    if missing:
        mapped = {r: names[r] for r in missing if names[r] != r}
        via = f" (columns= names them {mapped})" if mapped else ""
        raise InputError(source, None, f"missing columns {[names[r] for r in missing]}{via}; expected query_id, "
                         f"doc_id, {col} (found {list(data.columns)})")
    if len(data) == 0:
        return empty(kind)
    qids, dids, values = (data[names[r]] for r in names)
    strings = (fast_strings(qids), fast_strings(dids))
    for c, column, converted in (("query_id", qids, strings[0]), ("doc_id", dids, strings[1]), (col, values, None)):
        null = first_null(column, converted)
        if null is not None:
            label = c if names[c] == c else f"{names[c]!r} ({c})"
            raise InputError(source, null, f"missing value in column {label}")
    return from_columns(qids, dids, values.to_numpy(), source, kind, strings=strings)


def from_dict(data: dict, kind: Kind, source: str) -> pd.DataFrame:
    col = VALUE_COLUMN[kind]
    qids, dids, vals = [], [], []
    for q, docs in data.items():
        if not isinstance(docs, dict):
            raise InputError(source, None, f"expected a dict of dicts {{query_id: {{doc_id: {col}}}}}, "
                             f"got {type(docs).__name__} for query {q!r}")
        qids.extend([q] * len(docs))
        dids.extend(docs.keys())
        vals.extend(docs.values())
    return from_columns(qids, dids, vals, source, kind) if qids else empty(kind)


def from_records(data: Any, kind: Kind, source: str) -> pd.DataFrame:
    col = VALUE_COLUMN[kind]
    rows = list(data)  # read once: iterators may be single-pass
    if not rows:
        return empty(kind)
    first = rows[0]
    fields = getattr(first, "_fields", None)
    if isinstance(first, str):
        raise InputError(source, None, f"got an iterable of strings; if this was a file path, ir-measures' "
                         f"own functions do not take paths: read it with ndcg_plugin.read(path, '{kind}')")
    if fields is None or any(f not in fields for f in ("query_id", "doc_id", col)):
        raise InputError(source, 0, f"expected namedtuples with fields query_id, doc_id, {col} "
                         f"(e.g. ir_measures.{'Qrel' if kind == 'qrels' else 'ScoredDoc'}), got {first!r}")
    try:
        qids = [r.query_id for r in rows]
        dids = [r.doc_id for r in rows]
        vals = [getattr(r, col) for r in rows]
    except AttributeError as e:
        raise InputError(source, None, f"every item needs fields query_id, doc_id, {col}: {e}") from None
    return from_columns(qids, dids, vals, source, kind)
