"""Validation of the columns every in-memory input ends up as: ids, labels, scores.

Errors are :class:`InputError` (a ValueError) naming the source, the line (or row) and what
was expected.

Ids end up as Arrow strings, converted once: pandas' Arrow-backed string columns are taken as
they are (no copy), an object column of ``str`` is converted by one ``pyarrow.array`` call,
integer columns by Arrow's cast (the decimal strings of ``str(int)``). Only inputs outside
those shapes (integers mixed with strings in an object column, values to refuse) take a Python
loop, which names the offending row.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from ..arrays.columns import from_numpy, to_numpy
from ..errors import VALUE_COLUMN, InputError, Kind


def _string_dtype(dtype: Any) -> bool:
    """A pandas string dtype (any storage), or an Arrow-backed one holding strings."""
    if isinstance(dtype, pd.StringDtype):
        return True
    arrow = getattr(dtype, "pyarrow_dtype", None)
    return arrow is not None and (pa.types.is_string(arrow) or pa.types.is_large_string(arrow))


def _chunked(arr: pa.Array | pa.ChunkedArray) -> pa.ChunkedArray:
    arr = arr if isinstance(arr, pa.ChunkedArray) else pa.chunked_array([arr])
    return arr if arr.type == pa.large_string() else arr.cast(pa.large_string())


def fast_strings(values: Any) -> pa.ChunkedArray | None:
    """Ids held as strings, as Arrow large strings (nulls kept as nulls), without a Python loop:
    a pandas string array (Arrow-backed: no copy) or an object array whose items are all ``str``
    or missing (one ``pyarrow.array`` call). None for anything else."""
    if isinstance(values, (pd.Series, pd.Index)):
        values = values.array
    dtype = getattr(values, "dtype", None)
    if _string_dtype(dtype) and hasattr(values, "__arrow_array__"):
        return _chunked(values.__arrow_array__())
    if isinstance(values, pd.api.extensions.ExtensionArray) and not isinstance(values, pd.arrays.NumpyExtensionArray):
        return None
    arr = np.asarray(values) if hasattr(values, "dtype") else np.asarray(values, dtype=object)
    if arr.dtype != object or arr.ndim != 1:
        return None
    try:  # str items only: Arrow infers string for nothing else (bytes give binary, ints fail)
        out = pa.array(arr, from_pandas=True)
    except (pa.ArrowException, TypeError, ValueError, OverflowError):
        return None
    return _chunked(out) if out.type in (pa.string(), pa.large_string()) else None


def first_null(values: Any, strings: pa.ChunkedArray | None) -> int | None:
    """The first missing value's row (None, NaN, pd.NA, NaT), from Arrow's validity when the
    column was converted, else as ``pandas.isna``."""
    if strings is not None:
        if not strings.null_count:
            return None
        import pyarrow.compute as pc
        at = np.flatnonzero(to_numpy(pc.is_null(strings)))
    else:
        at = np.flatnonzero(np.asarray(pd.isna(values)))
    return int(at[0]) if len(at) else None


def _int_strings(arr: np.ndarray) -> pa.ChunkedArray:
    import pyarrow.compute as pc
    return _chunked(pc.cast(from_numpy(arr), pa.large_string()))


#: "not computed yet", for :func:`fast_strings` results passed along
UNKNOWN: Any = object()


def _ids(values: Any, source: str, name: str, strings: Any = UNKNOWN) -> pa.ChunkedArray:
    """Query or doc ids as Arrow large strings. ``strings``: :func:`fast_strings` of ``values``,
    if computed. Integers become str(int); floats, booleans, None/NaN and empty strings are
    refused. Only C-speed checks run on valid input; a Python loop runs only for integers mixed
    with strings, or to name an offending row."""
    if strings is UNKNOWN:
        strings = fast_strings(values)
    if strings is None or strings.null_count:  # the general path names a missing value as it always has
        strings = _general_ids(values, source, name)
    import pyarrow.compute as pc
    empty = np.flatnonzero(to_numpy(pc.equal(pc.binary_length(strings), 0)))
    if len(empty):
        raise InputError(source, int(empty[0]), f"empty {name}")
    return strings


def _general_ids(values: Any, source: str, name: str) -> pa.ChunkedArray:
    if isinstance(values, (pd.Series, pd.Index)):
        values = values.array
    if isinstance(values, np.ndarray):
        arr = values
    elif hasattr(values, "dtype"):
        arr = np.asarray(values)
    else:
        arr = np.asarray(values, dtype=object)
    kind = arr.dtype.kind
    if kind in "iu":
        return _int_strings(arr)
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
    return _chunked(pa.array(arr, type=pa.large_string()))


def _int_id(v: Any, source: str, i: int, name: str) -> str:
    if isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)):
        return str(v)
    raise InputError(source, i, f"{name} must be a string or an integer, got {v!r}")


def check_values(values: Any, source: str, kind: Kind, lines: np.ndarray) -> np.ndarray:
    col = VALUE_COLUMN[kind]
    if isinstance(values, list) and any(isinstance(v, int) and not -(2 ** 63) <= v < 2 ** 63 for v in values):
        values = np.array(values, dtype=object)  # numpy would make floats of them, or wrap them round
    arr = original = np.asarray(values)
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
        return _labels(arr, original, source, lines)
    arr = arr.astype(np.float64)
    bad = np.flatnonzero(~np.isfinite(arr))
    if len(bad):
        raise InputError(source, int(lines[bad[0]]), f"score must be a finite number, got {arr[bad[0]]!r}; "
                         "NaN or infinite scores have no defined rank")
    return arr


#: a label at or past this magnitude (as a float) is checked one by one: 2^63 - 1 rounds to 2^63
_NEAR_INT64 = 2.0 ** 63 - 2048
#: beyond this, a float does not hold every integer: object labels are converted exactly
_EXACT_FLOAT = 2.0 ** 53


def _labels(arr: np.ndarray, original: np.ndarray, source: str, lines: np.ndarray) -> np.ndarray:
    """Relevance labels as int64: integers (integral floats too) in the 64-bit range, as the text
    reader takes them; an InputError names the first row with another (a label of 2^63 or more
    once wrapped round to a negative label, with numpy's RuntimeWarning only)."""
    if arr.dtype.kind == "f":
        bad = np.flatnonzero(~np.isfinite(arr) | (arr != np.round(arr)))
        if len(bad):
            raise InputError(source, int(lines[bad[0]]), f"relevance must be an integer, got {arr[bad[0]]!r}")
    if arr.dtype.kind in "fu" and len(arr):
        for i in np.flatnonzero(np.abs(arr.astype(np.float64)) >= _NEAR_INT64):
            v = original[i].item() if isinstance(original[i], np.generic) else original[i]
            label = int(v)
            if not -(2 ** 63) <= label <= 2 ** 63 - 1:
                raise InputError(source, int(lines[i]), f"relevance must be an integer in the 64-bit range "
                                 f"(-2^63 to 2^63 - 1, as the text reader takes them), got {v!r}")
        if original.dtype.kind == "O" and np.abs(arr).max() >= _EXACT_FLOAT:  # exactly, not through a float
            return np.array([int(v) for v in original], dtype=np.int64)
    return arr.astype(np.int64)


def string_array(strings: pa.ChunkedArray, like: Any = None) -> pd.api.extensions.ExtensionArray:
    """A pandas string array over Arrow strings (no copy), of ``like``'s string dtype (its
    Arrow-backed twin for a Python-backed one) or, for other ids, of the dtype pandas gives
    strings (``str`` in pandas 3; ``string[pyarrow]`` where that is not Arrow-backed)."""
    dtype = getattr(like, "dtype", None)
    if isinstance(dtype, pd.StringDtype) and not dtype.storage.startswith("pyarrow"):
        try:
            dtype = pd.StringDtype("pyarrow", na_value=dtype.na_value)
        except TypeError:  # a pandas with one Arrow-backed string dtype
            dtype = pd.StringDtype("pyarrow")
    elif not isinstance(dtype, pd.StringDtype):
        dtype = _DEFAULT.get("dtype")
        if dtype is None:
            dtype = _DEFAULT["dtype"] = pd.Series(np.array(["x"], dtype=object)).dtype
    try:
        if isinstance(dtype, pd.StringDtype) and dtype.storage.startswith("pyarrow"):
            return pd.arrays.ArrowStringArray(strings, dtype=dtype)
    except TypeError:  # a pandas whose ArrowStringArray takes no dtype
        pass
    return pd.arrays.ArrowStringArray(strings)


_DEFAULT: dict = {}


def from_columns(qids: Any, dids: Any, values: Any, source: str, kind: Kind,
                  lines: np.ndarray | None = None, strings: tuple = (UNKNOWN, UNKNOWN)) -> pd.DataFrame:
    """The table of in-memory columns (``strings``: their :func:`fast_strings`, if computed)."""
    lines = np.arange(len(qids), dtype=np.int64) if lines is None else np.array(lines, dtype=np.int64)
    q = _ids(qids, source, "query_id", strings[0])
    d = _ids(dids, source, "doc_id", strings[1])
    # copy=False: every column is new (the ids are Arrow arrays wrapped, check_values converts
    # with astype), and a DataFrame's numeric columns would otherwise be copied into one block
    return pd.DataFrame({
        "query_id": string_array(q, qids),
        "doc_id": string_array(d, dids),
        VALUE_COLUMN[kind]: check_values(values, source, kind, lines),
        "line": lines,
    }, copy=False)
