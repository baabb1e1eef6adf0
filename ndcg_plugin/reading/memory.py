"""In-memory inputs: DataFrames, dicts of dicts and iterables of namedtuples, as tables."""
from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ..errors import VALUE_COLUMN, InputError, Kind
from .validate import from_columns


def empty(kind: Kind) -> pd.DataFrame:
    dtype = np.int64 if kind == "qrels" else np.float64
    return pd.DataFrame({"query_id": np.array([], dtype=object), "doc_id": np.array([], dtype=object),
                         VALUE_COLUMN[kind]: np.array([], dtype=dtype), "line": np.array([], dtype=np.int64)})


def from_dataframe(data: pd.DataFrame, kind: Kind, source: str) -> pd.DataFrame:
    col = VALUE_COLUMN[kind]
    missing = [c for c in ("query_id", "doc_id", col) if c not in data.columns]
    if missing:
        raise InputError(source, None, f"missing columns {missing}; expected query_id, doc_id, {col} "
                         f"(found {list(data.columns)})")
    if len(data) == 0:
        return empty(kind)
    for c in ("query_id", "doc_id", col):
        nulls = np.flatnonzero(data[c].isna().to_numpy())
        if len(nulls):
            raise InputError(source, int(nulls[0]), f"missing value in column {c}")
    return from_columns(data["query_id"], data["doc_id"], data[col].to_numpy(), source, kind)


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
