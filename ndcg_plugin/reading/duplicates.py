"""Repeated (query_id, doc_id) pairs: found through 64-bit fingerprints, confirmed on the
strings, then refused (naming both lines) or resolved as the caller asks."""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..columns import fingerprints, group_codes
from .validate import VALUE_COLUMN, InputError, Kind

POLICIES = ("error", "first", "max")


def duplicate_mask(table: pd.DataFrame) -> np.ndarray | None:
    """Rows whose (query_id, doc_id) pair occurs more than once, or None when all are unique.
    Each pair gets a 64-bit fingerprint (query code mixed with the doc id's byte hash); pairs
    whose fingerprints are all distinct are distinct, and only rows sharing a fingerprint are
    compared as strings."""
    if len(table) < 2:
        return None
    q_codes = group_codes(table["query_id"].array)[0]

    def pair_keys() -> np.ndarray:
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
    """Apply the duplicate policy ("error", "first", "max") to (query_id, doc_id) pairs. The
    table has a ``line`` column (file line, or row position) to name both lines."""
    if policy not in POLICIES:
        raise ValueError(f"duplicates must be 'error', 'first' or 'max', got {policy!r}")
    dup = duplicate_mask(table)
    if dup is None:
        return table
    col = VALUE_COLUMN[kind]
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
