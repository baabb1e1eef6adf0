"""Validation of the columns every input form ends up as: ids, labels, scores.

Errors are :class:`InputError` (a ValueError) naming the source, the line (or row) and what
was expected.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ..errors import VALUE_COLUMN, InputError, Kind


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


def check_values(values: Any, source: str, kind: Kind, lines: np.ndarray) -> np.ndarray:
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


def from_columns(qids: Any, dids: Any, values: Any, source: str, kind: Kind,
                  lines: np.ndarray | None = None) -> pd.DataFrame:
    n = len(qids)
    if lines is None:
        lines = np.arange(n)
    # copy=False: the value column is a new array (check_values converts with astype), and a
    # DataFrame's numeric columns would otherwise be copied once more, into one block
    return pd.DataFrame({
        "query_id": _ids(qids, source, "query_id"),
        "doc_id": _ids(dids, source, "doc_id"),
        VALUE_COLUMN[kind]: check_values(values, source, kind, lines),
        "line": np.array(lines, dtype=np.int64),
    }, copy=False)
