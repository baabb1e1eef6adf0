"""Column helpers on Arrow string arrays: contiguous arrays, group codes, fingerprints.

Fingerprints: 64-bit hashes of strings, computed with numpy on an Arrow string array's buffers.
Hashing millions of distinct doc ids in a hash table costs more than the rest of an evaluation.
Instead each string's first 8 and last 8 bytes are read as two 64-bit words (unaligned loads
through a strided view of the byte buffer, masked to the string's length) and mixed with its
length. For ids of at most 16 bytes (MS MARCO's have 7) the three values determine the string;
longer ids that agree on both ends and length collide. Fingerprints are only a filter: equal
strings always have equal fingerprints, so distinct fingerprints prove distinct strings, and
callers confirm equal fingerprints on the strings themselves.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

_K1 = np.uint64(0x9E3779B97F4A7C15)
_K2 = np.uint64(0xC2B2AE3D27D4EB4F)
_K3 = np.uint64(0x165667B19E3779F9)
_SHIFT = np.uint64(29)
# masks keeping the first L bytes of a little-endian word (head) or its last L bytes (tail)
_HEAD_MASK = np.array([(1 << (8 * n)) - 1 for n in range(9)], dtype=np.uint64)
_TAIL_MASK = np.array([((1 << 64) - 1) ^ ((1 << (8 * (8 - n))) - 1) for n in range(9)], dtype=np.uint64)
_CHUNK = 1 << 20


def as_arrow_strings(values: Any) -> pa.Array:
    """A contiguous Arrow string array for a pandas string array, an object ndarray or a list."""
    if hasattr(values, "_pa_array"):  # pandas ArrowStringArray: no copy
        values = values._pa_array
    arr = values if isinstance(values, (pa.Array, pa.ChunkedArray)) else pa.array(values, type=pa.string())
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks() if arr.num_chunks != 1 else arr.chunk(0)
    if arr.type not in (pa.string(), pa.large_string()):
        arr = arr.cast(pa.string())
    return arr


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
    codes = np.repeat(run_codes.astype(np.int32 if len(uniques) < 2**31 else np.int64), np.diff(ends, prepend=0))
    return codes, np.asarray(uniques, dtype=object)


def fingerprints(values: Any) -> np.ndarray:
    """uint64 fingerprint per string from its first 8 bytes, last 8 bytes and length."""
    arr = as_arrow_strings(values)
    n = len(arr)
    out = np.empty(n, dtype=np.uint64)
    if n == 0:
        return out
    _, off_buf, data_buf = arr.buffers()[:3]
    width = np.int64 if arr.type == pa.large_string() else np.int32
    offsets = np.frombuffer(off_buf, dtype=width)[arr.offset: arr.offset + n + 1].astype(np.int64)
    data = np.frombuffer(data_buf, dtype=np.uint8) if data_buf is not None else np.zeros(0, dtype=np.uint8)

    def chunk(lo: int, hi: int) -> None:
        b0, b1 = int(offsets[lo]), int(offsets[hi])
        padded = np.zeros(b1 - b0 + 16, dtype=np.uint8)  # 8 zero bytes on each side
        padded[8: 8 + b1 - b0] = data[b0:b1]
        words = np.ndarray((len(padded) - 7,), dtype="<u8", buffer=padded, strides=(1,))
        starts = offsets[lo:hi] - (b0 - 8)
        ends = offsets[lo + 1: hi + 1] - (b0 - 8)
        length = ends - starts
        short = np.minimum(length, 8)
        with np.errstate(over="ignore"):
            head = words[starts] & _HEAD_MASK[short]
            tail = words[ends - 8] & _TAIL_MASK[short]
            mixed = head * _K1
            mixed ^= (tail * _K2) >> _SHIFT
            mixed ^= tail * _K3
            mixed ^= length.astype(np.uint64) * _K2
        out[lo:hi] = mixed

    bounds = list(range(0, n, _CHUNK)) + [n]
    parallel_map(chunk, list(zip(bounds[:-1], bounds[1:], strict=True)))
    return out


def parallel_map(fn, args: list) -> list:
    """fn(*a) for each a, on up to two threads when there are several (numpy releases the GIL
    in the array operations the callers use)."""
    if len(args) <= 1:
        return [fn(*a) for a in args]
    with ThreadPoolExecutor(max_workers=min(len(args), os.cpu_count() or 1, 4)) as pool:
        return list(pool.map(lambda a: fn(*a), args))
