"""Column helpers on Arrow string arrays: contiguous arrays, group codes, fingerprints.

Fingerprints: 64-bit hashes of strings, computed with numpy on an Arrow string array's buffers.
Hashing millions of distinct doc ids in a hash table costs more than the rest of an evaluation.
Instead each string's first 8 and last 8 bytes are read as two 64-bit words (unaligned loads
through a strided view of Arrow's byte buffer, masked to the string's length) and mixed with its
length; a string of at most 8 bytes is its first word, so its last word is not read (the
fingerprint of a string depends on the string alone, not on the other strings of its array).
For ids of at most 16 bytes (MS MARCO's have 7) the three values determine the string;
longer ids that agree on both ends and length collide. Fingerprints are only a filter: equal
strings always have equal fingerprints, so distinct fingerprints prove distinct strings, and
callers confirm equal fingerprints on the strings themselves.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa

from . import speedups

_K1 = np.uint64(0x9E3779B97F4A7C15)
_K2 = np.uint64(0xC2B2AE3D27D4EB4F)
_K3 = np.uint64(0x165667B19E3779F9)
_SHIFT = np.uint64(29)
# masks keeping the first L bytes of a little-endian word (head) or its last L bytes (tail)
_HEAD_MASK = np.array([(1 << (8 * n)) - 1 for n in range(9)], dtype=np.uint64)
_TAIL_MASK = np.array([((1 << 64) - 1) ^ ((1 << (8 * (8 - n))) - 1) for n in range(9)], dtype=np.uint64)
_CHUNK = 1 << 20
_PARALLEL_MIN = 1 << 20  # strings from which fingerprints take two threads: below, threads cost more than they save


# --- numpy <-> Arrow through the buffers --------------------------------------------------------
# Arrow's own conversions (Array.to_numpy, pa.array(ndarray), an ndarray passed to a compute
# function) import pandas on first use in pyarrow 26: 0.2 s of a command's start. These read and
# write the buffers of Arrow's documented columnar layout instead (numbers, booleans, strings),
# so the streaming path never imports pandas.

def to_numpy(arr: pa.Array | pa.ChunkedArray, null: int | float | None = None) -> np.ndarray:
    """A numeric or boolean Arrow array as a numpy array (a view where it can be); nulls become
    ``null`` (a ValueError if there are nulls and no ``null``)."""
    if isinstance(arr, pa.ChunkedArray):
        parts = [to_numpy(c, null) for c in arr.chunks]
        if not parts:
            return np.zeros(0, dtype=arr.type.to_pandas_dtype() if arr.type != pa.bool_() else bool)
        return parts[0] if len(parts) == 1 else np.concatenate(parts)
    n, offset = len(arr), arr.offset
    validity, data = arr.buffers()[:2]
    if pa.types.is_boolean(arr.type):
        bits = np.frombuffer(data, dtype=np.uint8) if data is not None else np.zeros(0, dtype=np.uint8)
        out = np.unpackbits(bits, bitorder="little")[offset: offset + n].astype(bool)
    else:
        dtype = np.dtype(arr.type.to_pandas_dtype())
        out = np.frombuffer(data, dtype=dtype)[offset: offset + n] if n else np.zeros(0, dtype=dtype)
    if arr.null_count:
        if null is None:
            raise ValueError(f"an Arrow array of {arr.type} holds {arr.null_count} nulls")
        valid = np.unpackbits(np.frombuffer(validity, dtype=np.uint8), bitorder="little")[offset: offset + n]
        out = np.where(valid.astype(bool), out, null)
    return out


def from_numpy(values: np.ndarray) -> pa.Array:
    """A 1-d numeric numpy array as an Arrow array sharing its memory (no nulls)."""
    values = np.ascontiguousarray(values)
    return pa.Array.from_buffers(pa.from_numpy_dtype(values.dtype), len(values), [None, pa.py_buffer(values)])


def empty_strings() -> pa.Array:
    return pa.Array.from_buffers(pa.large_string(), 0, [None, pa.py_buffer(np.zeros(1, dtype=np.int64)),
                                                       pa.py_buffer(b"")])


def as_arrow_strings(values: Any) -> pa.ChunkedArray:
    """An Arrow string column for a pandas string array (its chunks, no copy), an Arrow array,
    an object ndarray or a list."""
    if hasattr(values, "__arrow_array__") and not isinstance(values, (pa.Array, pa.ChunkedArray)):
        values = values.__arrow_array__()  # Arrow's public protocol: pandas' Arrow-backed arrays, no copy
    arr = values if isinstance(values, (pa.Array, pa.ChunkedArray)) else pa.array(values, type=pa.large_string())
    if isinstance(arr, pa.Array):
        arr = pa.chunked_array([arr])
    if arr.type not in (pa.string(), pa.large_string()):
        arr = arr.cast(pa.large_string())
    return arr


def ids_of(table, column: str) -> Any:
    """A table's ``query_id`` or ``doc_id`` column: the reader's columns' as they are (Arrow arrays),
    a DataFrame's as Arrow strings."""
    if hasattr(table, "layout"):  # the reader's columns
        return getattr(table, column)
    return as_arrow_strings(table[column].array)


def columns_of(table, value: str) -> tuple[pa.ChunkedArray, pa.ChunkedArray, np.ndarray]:
    """(query ids, doc ids, values) of a table: a DataFrame from :func:`ndcg_plugin.read` (value
    column ``value``), or the columns the reader parsed (:class:`ndcg_plugin.reading.Parsed`),
    which need no pandas."""
    if hasattr(table, "layout"):  # the reader's columns
        return as_arrow_strings(table.query_id), as_arrow_strings(table.doc_id), np.asarray(table.value)
    return (as_arrow_strings(table["query_id"].array), as_arrow_strings(table["doc_id"].array),
            table[value].to_numpy())


def join_chunks(arrays: list) -> pa.ChunkedArray:
    """String arrays (Arrow arrays or chunked arrays) joined, in order, into one large-string
    chunked array without copying their chunks."""
    chunks = [c for a in arrays for c in (a.chunks if isinstance(a, pa.ChunkedArray) else [a])]
    return pa.chunked_array(chunks, type=pa.large_string())


def take_sorted(arr: pa.ChunkedArray, rows: np.ndarray) -> pa.ChunkedArray:
    """``arr.take(rows)`` for ascending ``rows``, chunk by chunk (cheaper than Arrow's general
    take on a many-chunk column)."""
    if arr.num_chunks <= 1:
        return arr.take(from_numpy(rows))
    bounds = np.cumsum([0] + [len(c) for c in arr.chunks])
    cut = np.searchsorted(rows, bounds)
    parts = [c.take(from_numpy(rows[cut[i]:cut[i + 1]] - bounds[i]))
             for i, c in enumerate(arr.chunks) if cut[i + 1] > cut[i]]
    return pa.chunked_array(parts, type=arr.type)


def factorize(arr: pa.ChunkedArray | pa.Array) -> tuple[np.ndarray, pa.Array]:
    """(codes, uniques) with uniques in order of first appearance, as ``pd.factorize``: one hash
    pass (Arrow's dictionary encoding)."""
    import pyarrow.compute as pc  # on use: the run's parser starts before it is imported

    if isinstance(arr, pa.ChunkedArray):  # one array: unifying the dictionaries of many chunks is quadratic
        if arr.num_chunks == 0:
            return np.zeros(0, dtype=np.int64), pa.array([], type=arr.type)
        arr = arr.chunk(0) if arr.num_chunks == 1 else arr.combine_chunks()
    encoded = pc.dictionary_encode(arr)
    return to_numpy(encoded.indices).astype(np.int64), encoded.dictionary


class Groups(NamedTuple):
    """:func:`group_codes` of a column: each row's code (``codes``, numbered by first appearance), the
    distinct values in that order (``uniques``) and the rows of each (``sizes``)."""
    codes: np.ndarray
    uniques: pa.Array
    sizes: np.ndarray

    def slice(self, lo: int, hi: int, a: int, b: int) -> Groups:
        """The groups of queries ``lo:hi`` (rows ``a:b``) of rows grouped by query, whose codes are the
        queries' positions: what :func:`group_codes` gives those rows alone (codes counted from 0)."""
        return Groups(self.codes[a:b] - self.codes.dtype.type(lo), self.uniques.slice(lo, hi - lo), self.sizes[lo:hi])

    @classmethod
    def joined(cls, parts: list[Groups]) -> Groups:
        """The groups of blocks of rows put one after the other, when no value is in two of them (the
        pieces of one sorted file): each block's codes shifted by the values before it."""
        offsets = np.cumsum([0] + [len(p.uniques) for p in parts[:-1]])
        dtype = np.int32 if int(offsets[-1]) + len(parts[-1].uniques) < 2**31 else np.int64
        codes = np.concatenate([p.codes.astype(dtype) + dtype(o) for p, o in zip(parts, offsets, strict=True)])
        uniques = pa.concat_arrays([u if isinstance(u, pa.Array) else u.combine_chunks() for u in
                                    (p.uniques for p in parts)])
        return cls(codes, uniques, np.concatenate([p.sizes for p in parts]))


def group_codes(values: Any, hash_always: bool = False) -> Groups:
    """:class:`Groups`: codes and uniques like ``pd.factorize`` (codes in order of first
    appearance) plus the number of rows per code, computed from the runs of equal values: a run file grouped by
    query has one run per query, so only as many strings as queries are hashed, and none when
    the runs' values never decrease (a file sorted by query id: then a value differs from every
    earlier one as soon as it differs from the one before it; two comparisons per run cost a
    tenth of hashing them). An Arrow column of integers is grouped as it is (its uniques are
    integers: the Spark worker's integer ids); anything else as strings. ``hash_always``: hash
    the runs' values even when they increase (the same result; for tests that compare the two
    ways). Strings that never decrease are coded by one C loop when it is at hand
    (:mod:`ndcg_plugin.arrays.speedups`; the same result)."""
    integers = isinstance(values, (pa.Array, pa.ChunkedArray)) and pa.types.is_integer(values.type)
    arr = (values if isinstance(values, pa.ChunkedArray) else pa.chunked_array([values])) if integers \
        else as_arrow_strings(values)
    if len(arr) == 0:
        return Groups(np.zeros(0, dtype=np.int32), arr.combine_chunks() if integers else empty_strings(),
                      np.zeros(0, dtype=np.int64))
    if not (hash_always or integers):
        codes = speedups.increasing_codes(arr)
        if codes is not None:
            first = np.flatnonzero(np.concatenate(([True], codes[1:] != codes[:-1])))
            return Groups(codes, take_sorted(arr, first).combine_chunks(), np.diff(np.append(first, len(codes))))
    runs = None if hash_always else speedups.run_codes(arr)  # one C pass; else Arrow's, chunk by chunk
    if runs is not None:
        heads = np.flatnonzero(np.concatenate(([True], runs[1:] != runs[:-1])))
        joined, run_lengths = take_sorted(arr, heads), [np.diff(np.append(heads, len(runs)))]
    else:
        joined, run_lengths = _arrow_runs(arr)
    new = None if hash_always else _increasing_runs(joined)
    if new is not None:  # no hashing: each run's code counts the distinct values before it
        run_codes = np.cumsum(new, dtype=np.int64) - 1
        uniques = joined.take(from_numpy(np.flatnonzero(new))).combine_chunks()
    else:
        run_codes, uniques = factorize(joined)
    lengths = np.concatenate(run_lengths)
    sizes = np.bincount(run_codes, weights=lengths, minlength=len(uniques)).astype(np.int64)
    dtype = np.int32 if len(uniques) < 2**31 else np.int64
    return Groups(np.repeat(run_codes.astype(dtype), lengths), uniques, sizes)


def _arrow_runs(arr: pa.ChunkedArray) -> tuple[pa.ChunkedArray, list]:
    """(the value of each run of equal neighbours, [the runs' lengths per chunk]), Arrow's
    ``run_end_encode`` chunk by chunk (a run across two chunks is two runs)."""
    import pyarrow.compute as pc  # on use: the run's parser starts before it is imported

    run_values, run_lengths = [], []
    for chunk in arr.chunks:
        if len(chunk) == 0:
            continue
        ree = pc.run_end_encode(chunk)
        run_values.append(ree.values)
        run_lengths.append(np.diff(to_numpy(ree.run_ends).astype(np.int64), prepend=0))
    return pa.chunked_array(run_values, type=arr.type), run_lengths


def query_pieces(sizes: np.ndarray, max_rows: int) -> list[tuple[int, int, int, int]]:
    """(first query, end query, first row, end row) of pieces of whole queries, for rows grouped
    by query (each query one run, of ``sizes`` rows, in order): as many pieces as ``max_rows``
    rows each would need, cut at the query boundaries nearest equal shares of the rows (one piece
    when they all fit; a query longer than a share stays whole)."""
    ends = np.cumsum(sizes)
    total = int(ends[-1]) if len(ends) else 0
    count = -(-total // max_rows)
    at = np.searchsorted(ends, np.arange(1, count) * (total / max(count, 1)), side="left") + 1
    bounds = [0, *sorted({int(a) for a in at if 0 < a < len(sizes)}), len(sizes)]
    return [(lo, hi, int(ends[lo - 1]) if lo else 0, int(ends[hi - 1]) if hi else 0)
            for lo, hi in zip(bounds[:-1], bounds[1:], strict=False)]


def _increasing_runs(values: pa.ChunkedArray) -> np.ndarray | None:
    """For the values of runs that never decrease (strings in byte order) and hold no null:
    whether each differs from the one before it (runs of one value split where a column's
    chunks meet: a block's last query carried into the next). None for any other values."""
    import pyarrow.compute as pc

    n = len(values)
    if values.null_count:
        return None
    if n < 2:
        return np.ones(n, dtype=bool)
    later, earlier = values.slice(1), values.slice(0, n - 1)
    if pc.all(pc.greater_equal(later, earlier)).as_py() is not True:
        return None
    return np.concatenate(([True], to_numpy(pc.not_equal(later, earlier))))


def _spans(arr: pa.Array, rows: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(data, starts, ends) of a non-empty string array: its strings' bytes (a view of Arrow's
    buffer, from the first string's start to the last one's end) and the first and end byte in
    them of each string, or of the strings at ``rows`` only."""
    n = len(arr)
    _, off_buf, data_buf = arr.buffers()[:3]
    width = np.int64 if arr.type == pa.large_string() else np.int32
    offsets = np.frombuffer(off_buf, dtype=width)[arr.offset: arr.offset + n + 1]
    b0, b1 = int(offsets[0]), int(offsets[-1])
    data = np.frombuffer(data_buf, dtype=np.uint8)[b0:b1] if data_buf is not None else np.zeros(0, dtype=np.uint8)
    if rows is None:
        offsets = offsets.astype(np.int64)
        return data, offsets[:-1] - b0, offsets[1:] - b0
    return data, offsets[rows].astype(np.int64) - b0, offsets[rows + 1].astype(np.int64) - b0


#: data up to this many bytes is copied with zero padding (below, the edges are copied alone)
_SMALL_DATA = 64


def _load8(data: np.ndarray, pos: np.ndarray) -> np.ndarray:
    """The 8 bytes of ``data`` from each position in ``pos`` (from -8 to len(data)) as a
    little-endian uint64, bytes outside ``data`` read as zeros: unaligned loads through a strided
    view of the buffer itself (numpy releases the GIL while it gathers them, which it does not
    for 8-byte void items). Only the loads that would cross an end of the data read from copies
    of its first or last 8 bytes with zeros beside them, so the data is never copied whole."""
    n = len(data)
    if n < _SMALL_DATA:
        padded = np.zeros(n + 16, dtype=np.uint8)  # 8 zero bytes on each side
        padded[8: 8 + n] = data
        return np.ndarray((n + 9,), dtype="<u8", buffer=padded, strides=(1,))[pos + 8]
    words = np.ndarray((n - 7,), dtype="<u8", buffer=data, strides=(1,))
    out = words[np.clip(pos, 0, n - 8)]
    early, late = np.flatnonzero(pos < 0), np.flatnonzero(pos > n - 8)
    if len(early):  # a load from before the data: 8 zero bytes, then its first 8
        first = np.concatenate((np.zeros(8, dtype=np.uint8), data[:8]))
        out[early] = np.ndarray((9,), dtype="<u8", buffer=first, strides=(1,))[pos[early] + 8]
    if len(late):  # a load past the data: its last 8 bytes, then 8 zero bytes
        last = np.concatenate((data[n - 8:], np.zeros(8, dtype=np.uint8)))
        out[late] = np.ndarray((9,), dtype="<u8", buffer=last, strides=(1,))[pos[late] - (n - 8)]
    return out


def _fingerprint_chunk(arr: pa.Array, out: np.ndarray) -> None:
    if len(arr) == 0 or speedups.fingerprints_into(arr, out) is not None:
        return
    data, starts, ends = _spans(arr)
    length = ends - starts
    longest = int(length.max())
    short = np.minimum(length, 8) if longest > 8 else length
    with np.errstate(over="ignore"):
        mixed = _load8(data, starts)
        mixed &= _HEAD_MASK[short]
        mixed *= _K1
        mixed ^= length.astype(np.uint64) * _K2
        if longest > 8:  # the last 8 bytes count only for strings longer than 8 (a short one is its head)
            tail = _load8(data, ends - 8) & _TAIL_MASK[short]
            tail_mix = (tail * _K2) >> _SHIFT
            tail_mix ^= tail * _K3
            tail_mix[length <= 8] = 0
            mixed ^= tail_mix
    out[:] = mixed


def fingerprints(values: Any) -> np.ndarray:
    """uint64 fingerprint per string from its first 8 bytes, last 8 bytes and length: through the
    C loop when it is at hand (:mod:`ndcg_plugin.arrays.speedups`; the same numbers)."""
    arr = as_arrow_strings(values)
    out = np.empty(len(arr), dtype=np.uint64)
    jobs, pos = [], 0
    for chunk in arr.chunks:
        for lo in range(0, len(chunk), _CHUNK):
            piece = chunk.slice(lo, _CHUNK)
            jobs.append((piece, out[pos: pos + len(piece)]))
            pos += len(piece)
    # below _PARALLEL_MIN (a block of a streamed run, whose parse runs on the other core): one thread
    parallel_map(_fingerprint_chunk, jobs, threads=len(arr) >= _PARALLEL_MIN and not speedups.available())
    return out


def heads(values: Any, rows: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(head, length) per string: its first 8 bytes as a big-endian uint64 (zero bytes after a
    shorter string's end) and its length in bytes. For strings of at most 8 bytes, (head, length)
    orders them as their bytes do (a prefix, equal in head, is shorter) and tells them apart.
    ``rows``: of the strings at these positions only, read in place (no copy of the strings).
    Through the C loop when it is at hand (:mod:`ndcg_plugin.arrays.speedups`; the same numbers)."""
    arr = as_arrow_strings(values)
    if arr.num_chunks == 1:
        found = speedups.heads_of(arr.chunk(0), rows)
        if found is not None:
            return found
    bounds = np.cumsum([0] + [len(c) for c in arr.chunks])
    n = bounds[-1] if rows is None else len(rows)
    head = np.empty(n, dtype=np.uint64)
    length = np.empty(n, dtype=np.int64)
    which = np.searchsorted(bounds, rows, side="right") - 1 if rows is not None and arr.num_chunks > 1 else None
    for i, chunk in enumerate(arr.chunks):
        if rows is None:  # every string, chunk after chunk
            mine, local = slice(bounds[i], bounds[i + 1]), None
        else:
            mine = slice(None) if which is None else np.flatnonzero(which == i)
            local = rows[mine] - bounds[i]
        if len(chunk) == 0 or (local is not None and len(local) == 0):
            continue
        found = speedups.heads_of(chunk, local)
        if found is not None:
            head[mine], length[mine] = found
            continue
        data, starts, ends = _spans(chunk, local)
        size = ends - starts
        head[mine] = (_load8(data, starts) & _HEAD_MASK[np.minimum(size, 8)]).byteswap()
        length[mine] = size
    return head, length


def parallel_map(fn, args: list, threads: bool = True) -> list:
    """fn(*a) for each a, on two threads when there are several and ``threads`` (numpy releases
    the GIL in the array operations the callers use)."""
    if len(args) <= 1 or not threads:
        return [fn(*a) for a in args]
    with ThreadPoolExecutor(max_workers=min(len(args), os.cpu_count() or 1, 4)) as pool:
        return list(pool.map(lambda a: fn(*a), args))
