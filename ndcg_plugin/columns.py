"""Column helpers on Arrow string arrays: contiguous arrays, group codes, fingerprints.

Fingerprints: 64-bit hashes of strings, computed with numpy on an Arrow string array's buffers.

Hashing a million distinct doc ids in a hash table costs more than the rest of an evaluation;
a polynomial hash over the UTF-8 bytes, vectorized with prefix sums, costs a fraction of that.
For a string of bytes b_0..b_{m-1} starting at byte offset s of the buffer (mod 2^32, P odd so
invertible)::

    H = sum_i b_i * P^(s+i) * P^(-s) = sum_i b_i * P^i      (independent of where it is stored)

Fingerprints are only a filter: equal strings always have equal fingerprints, so distinct
fingerprints prove distinct strings; callers confirm equal fingerprints on the strings.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

_P = 0x01000193  # FNV-32 prime; odd, so invertible mod 2^32
_P_INV = pow(_P, -1, 1 << 32)


def as_arrow_strings(values: Any) -> pa.Array:
    """A contiguous Arrow string array for a pandas string array, an object ndarray or a list."""
    if hasattr(values, "_pa_array"):  # pandas ArrowStringArray: no copy
        values = values._pa_array
    arr = values if isinstance(values, (pa.Array, pa.ChunkedArray)) else pa.array(values, type=pa.string())
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks() if arr.num_chunks != 1 else arr.chunk(0)
    if arr.type != pa.string():
        arr = arr.cast(pa.string())
    return arr


_CHUNK_BYTES = 1 << 20
_POWERS: dict[int, np.ndarray] = {}


def _powers(base: int) -> np.ndarray:
    """base^0 .. base^_CHUNK_BYTES mod 2^32, computed once."""
    if base not in _POWERS:
        out = np.full(_CHUNK_BYTES + 1, base, dtype=np.uint32)
        out[0] = 1
        _POWERS[base] = np.cumprod(out, dtype=np.uint32)  # wraps mod 2^32
    return _POWERS[base]


def group_codes(values: Any) -> tuple[np.ndarray, np.ndarray]:
    """(codes, uniques) like ``pd.factorize`` (codes in order of first appearance), computed from
    the runs of equal values: a run file grouped by query has one run per query, so only as
    many strings as queries are hashed."""
    arr = as_arrow_strings(values)
    if len(arr) == 0:
        return np.zeros(0, dtype=np.int64), np.array([], dtype=object)
    ree = pc.run_end_encode(arr)
    ends = ree.run_ends.to_numpy().astype(np.int64)
    run_codes, uniques = pd.factorize(ree.values.to_numpy(zero_copy_only=False))
    return np.repeat(run_codes.astype(np.int64), np.diff(ends, prepend=0)), np.asarray(uniques, dtype=object)


def fingerprints(values: Any) -> np.ndarray:
    """uint64 fingerprint per string: a 32-bit polynomial hash of its bytes (high half) and its
    length (low half)."""
    arr = as_arrow_strings(values)
    n = len(arr)
    out = np.empty(n, dtype=np.uint64)
    if n == 0:
        return out
    _, off_buf, data_buf = arr.buffers()[:3]
    offsets = np.frombuffer(off_buf, dtype=np.int32)[arr.offset: arr.offset + n + 1].astype(np.int64)
    data = np.frombuffer(data_buf, dtype=np.uint8) if data_buf is not None else np.zeros(0, dtype=np.uint8)
    pows, inv = _powers(_P), _powers(_P_INV)
    prefix = np.zeros(_CHUNK_BYTES + 1, dtype=np.uint32)
    weighted = np.empty(_CHUNK_BYTES, dtype=np.uint32)
    lo = 0
    with np.errstate(over="ignore"):
        while lo < n:
            # strings lo..hi-1 whose bytes fit one chunk (at least one string per chunk)
            hi = int(np.searchsorted(offsets, offsets[lo] + _CHUNK_BYTES, side="right")) - 1
            hi = min(max(hi, lo + 1), n)
            b0, b1 = int(offsets[lo]), int(offsets[hi])
            m = b1 - b0
            if m > _CHUNK_BYTES:  # a single string longer than a chunk: hash its bytes in Python
                out[lo] = np.uint64(((hash(arr[lo].as_py()) & 0xFFFFFFFF) << 32) | (m & 0xFFFFFFFF))
                lo = hi
                continue
            rel = offsets[lo: hi + 1] - b0
            np.multiply(data[b0:b1], pows[:m], out=weighted[:m], dtype=np.uint32)
            np.cumsum(weighted[:m], dtype=np.uint32, out=prefix[1: m + 1])
            h = (prefix[rel[1:]] - prefix[rel[:-1]]) * inv[rel[:-1]]
            out[lo:hi] = (h.astype(np.uint64) << np.uint64(32)) | np.diff(rel).astype(np.uint64)
            lo = hi
    return out
