"""Optional C loops (``ndcg_plugin/_speedups.c``, ``_speedups_rows.c`` and ``_speedups_ranks.c``)
for the passes that cost most on recommendation logs: the reading of blocks in the simplest
form, string fingerprints and heads, group codes of sorted ids, the scan of a block for empty
fields, the check that no short query holds a doc twice, the sort of a qrels index's keys query
by query, the lookup of (query, doc) keys among a query's judgments (the keys made from a block's
local query codes) and the confirmation of a match on the strings, the top rows of a ranked run,
the order of its ties, its rows ranked and cut at the depth, the DCG and the IDCG of both gains,
and the exact sums of the aggregates.

A numpy pass over a block reads and writes whole arrays once per step; on logs (10^6 users,
short lists) the engine's steps each cost a few nanoseconds a row, and their number is what
costs: one loop in C does several in one pass.

The contract of the seam, one for every function here and every C entry point behind it:

- it returns exactly what its numpy definition returns, or declines with None, and the caller
  then runs that definition (``tests/test_speedups.py`` and ``tests/test_speedups_ranks.py``
  compare the two on random inputs, ``tests/test_speedups_contract.py`` feeds each function odd
  arrays, and the CLI's output is compared with and without the loops);
- it never raises to decline: arguments a loop does not take (a dtype, a width, buffers whose
  sizes disagree, an offset, row or code outside its buffer, a value not finite, codes out of
  order) are declined, and numpy gives its answer or its error. Only a misuse the package never
  commits (an argument of the wrong Python type) or a failed allocation raises;
- every size and offset is computed in ``Py_ssize_t`` or ``int64_t``, and sizes are compared by
  division, never through a product that could overflow (``holds`` in ``_speedups.h``); a
  product that could (``8 * tables`` in ``ideal_dcg``) is bounded first, and declined above;
- empty arrays, and Arrow arrays without an offsets buffer (a zero-length chunk may have none),
  with nulls, or of a type that is not a string or binary, are declined or handled as numpy
  handles them (zero strings: zero results).

One switch turns the C loops off: the environment variable ``NDCG_PLUGIN_SPEEDUPS``, read once
at import (``0``: numpy alone; ``1``, empty or unset: the C loops where built; any other value
is refused by name). The extension is built at install when a C compiler is at hand (``pip
install .``; an editable install builds it in place) and is optional: without it every caller
runs its numpy definition. Tests run the numpy twins in-process under :func:`disabled`.
"""
from __future__ import annotations

import importlib
import os
from collections.abc import Iterator
from contextlib import contextmanager
from types import ModuleType

import numpy as np
import pyarrow as pa

#: the name of the environment variable that turns the C loops off ("0"), read once at import
ENV = "NDCG_PLUGIN_SPEEDUPS"


def _load() -> ModuleType | None:
    value = os.environ.get(ENV, "").strip()
    if value not in ("", "0", "1"):
        raise ValueError(f"the environment variable {ENV} must be 0 (numpy alone) or 1 (the C loops where built), "
                         f"got {value!r}")
    if value == "0":
        return None
    try:
        return importlib.import_module(f"{__package__}._speedups")
    except ImportError:
        return None


#: the C loops in use: the extension module, or None (not built, turned off by the environment
#: variable, or by :func:`disabled` for the time of a test); the one state of the switch
_C = _load()


def available() -> bool:
    """Whether the C loops are built and not turned off."""
    return _C is not None


@contextmanager
def disabled() -> Iterator[None]:
    """For tests: every function here declines within the block, so that each caller runs its
    numpy twin; the state before it (on, or off) is restored after it, also on an error."""
    global _C
    before = _C
    _C = None
    try:
        yield
    finally:
        _C = before


def _width(t: pa.DataType) -> int | None:
    """The width in bytes of the offsets of an Arrow string or binary type; None for another type."""
    if t in (pa.large_string(), pa.large_binary()):
        return 8
    if t in (pa.string(), pa.binary()):
        return 4
    return None


def _strings(arr: pa.Array) -> tuple[np.ndarray, int, object] | None:
    """(offsets of the array's strings, their width in bytes, the data buffer) of an Arrow string
    or binary array without nulls; None for another type, an array with nulls, or one whose
    offsets buffer is absent or shorter than its strings (a zero-length array may have none)."""
    width = _width(arr.type)
    if width is None or arr.null_count:
        return None
    _, off_buf, data_buf = arr.buffers()[:3]
    if off_buf is None:
        return None
    n = len(arr)
    offsets = np.frombuffer(off_buf, dtype=np.int64 if width == 8 else np.int32)[arr.offset: arr.offset + n + 1]
    if len(offsets) != n + 1:
        return None
    return offsets, width, data_buf if data_buf is not None else b""


def fingerprints_into(arr: pa.Array, out: np.ndarray) -> np.ndarray | None:
    """``out`` (uint64, C-contiguous, one per string) with the fingerprints of the strings of
    ``arr`` written into it, as :func:`ndcg_plugin.arrays.columns.fingerprints` defines them;
    None (nothing promised of ``out``) when the C loops are not at hand or decline."""
    if _C is None or len(arr) == 0 or len(out) != len(arr) or out.dtype != np.uint64 \
            or not out.flags.c_contiguous or not out.flags.writeable:
        return None
    parts = _strings(arr)
    if parts is None or _C.fingerprints(*parts, out) is None:
        return None
    return out


def heads_of(arr: pa.Array, rows: np.ndarray | None) -> tuple[np.ndarray, np.ndarray] | None:
    """(head, length) of the strings of ``arr`` (at ``rows``, int64 positions, or all for None),
    as :func:`ndcg_plugin.arrays.columns.heads` defines them; None when the C loops are not at hand
    or decline (a row that names no string among them)."""
    parts = None if _C is None else _strings(arr)
    if parts is None or (rows is not None and rows.dtype.kind not in "iu"):
        return None
    n = len(arr) if rows is None else len(rows)
    head, length = np.empty(n, dtype=np.uint64), np.empty(n, dtype=np.int64)
    if n:
        at = b"" if rows is None else np.ascontiguousarray(rows, dtype=np.int64)
        if _C.heads(*parts, at, head, length) is None:
            return None
    return head, length


def _codes(codes: np.ndarray) -> np.ndarray | None:
    return np.ascontiguousarray(codes) if codes.dtype in (np.int32, np.int64) else None


def distinct_small(docs_fp: np.ndarray, q_codes: np.ndarray, most: int) -> bool | None:
    """:func:`ndcg_plugin.reading.duplicates.distinct_within_small_queries` (queries of at most
    ``most`` rows); None when the C loops are not at hand or decline."""
    codes = _codes(q_codes)
    if _C is None or codes is None or docs_fp.dtype != np.uint64 or len(docs_fp) != len(codes):
        return None
    return _C.distinct_small(np.ascontiguousarray(docs_fp), codes, codes.itemsize, most)


def find_in_ranges(keys: np.ndarray, starts: np.ndarray, codes: np.ndarray, needles: np.ndarray) -> np.ndarray | None:
    """Position of each needle among ``keys[starts[c]:starts[c + 1]]`` (``c`` its code; keys
    sorted and distinct, uint64), -1 where it is not there; None when a code has no range, or
    when the C loops are not at hand."""
    c = _codes(codes)
    if _C is None or c is None or keys.dtype != np.uint64 or needles.dtype != np.uint64 or len(c) != len(needles):
        return None
    out = np.empty(len(needles), dtype=np.int64)
    if len(out) and _C.find_in_ranges(np.ascontiguousarray(keys), np.ascontiguousarray(starts, dtype=np.int64), c,
                                      c.itemsize, np.ascontiguousarray(needles), out) is None:
        return None
    return out


def find_pairs(keys: np.ndarray, starts: np.ndarray, group: np.ndarray, codes: np.ndarray, fp: np.ndarray,
               shift: int) -> tuple[np.ndarray, np.ndarray] | None:
    """(rows, positions among ``keys``) of the pairs found, as :func:`find_in_ranges` finds the pair
    keys ``(codes[group] << shift) | (fp >> (64 - shift))`` among their code's keys (the rows
    ascending); None when a group or a code has no range, or when the C loops are not at hand."""
    g = _codes(group)
    if _C is None or g is None or keys.dtype != np.uint64 or fp.dtype != np.uint64 or len(g) != len(fp) \
            or codes.dtype != np.int64 or not 1 <= shift <= 63:
        return None
    rows, at = np.empty(len(fp), dtype=np.int64), np.empty(len(fp), dtype=np.int64)
    count = _C.find_pairs(np.ascontiguousarray(keys), np.ascontiguousarray(starts, dtype=np.int64), g, g.itemsize,
                          np.ascontiguousarray(codes), np.ascontiguousarray(fp), shift, rows, at)
    return None if count is None else (rows[:count], at[:count])


def empty_field(data: bytes, start: int, end: int, delimiter: bytes, first_column: bool, has_cr: bool) -> bool | None:
    """:func:`ndcg_plugin.reading.columnar.empty_field` on ``data[start:end]``; None when the span
    lies outside the data, or when the C loops are not at hand."""
    if _C is None or len(delimiter) != 1 or not 0 <= start <= end <= len(data):
        return None
    return _C.empty_field(data, start, end, delimiter[0], first_column, has_cr)


def increasing_codes(arr: pa.ChunkedArray) -> np.ndarray | None:
    """The group codes (int32, counted from 0 in order of first appearance) of strings that never
    decrease in byte order (a file sorted by query id), as :func:`ndcg_plugin.arrays.columns.group_codes`
    gives them; None when some string is smaller than the one before it (the caller then hashes),
    or when the C loops are not at hand or decline. Zero-length chunks are passed over (they
    hold no string, and may hold no offsets buffer either)."""
    return _string_codes(arr, False)


def run_codes(arr: pa.ChunkedArray) -> np.ndarray | None:
    """Each string's run (int32, counted from 0): a run is a stretch of equal neighbours, in any
    order (a run file grouped by query but not sorted: one run per query), across chunks; what
    Arrow's ``run_end_encode`` finds, chunk by chunk, in one pass. None when the C loops are not at
    hand or decline."""
    return _string_codes(arr, True)


def _string_codes(arr: pa.ChunkedArray, any_order: bool) -> np.ndarray | None:
    if _C is None or _width(arr.type) is None or arr.null_count or len(arr) >= 2**31:
        return None
    out = np.empty(len(arr), dtype=np.int32)
    pos, code, previous = 0, -1, None
    for chunk in arr.chunks:
        if len(chunk) == 0:
            continue
        parts = _strings(chunk)
        if parts is None:
            return None
        extra = (True,) if any_order else ()
        try:
            code = _C.increasing_codes(*parts, previous, code, out[pos: pos + len(chunk)], *extra)
        except TypeError:  # an extension built before any_order: numpy's way
            return None
        if code is None:
            return None
        last = chunk[len(chunk) - 1].as_buffer()
        previous, pos = last if last is not None else b"", pos + len(chunk)
    return out


def ideal_dcg(codes: np.ndarray, labels: np.ndarray, nq: int, cutoff: int | None, gain: np.ndarray,
              discount: np.ndarray) -> np.ndarray | None:
    """The IDCG per query code of :func:`ndcg_plugin.measures.ndcg.ideal_by_label` and the sum
    over it: each query's labels > 0 sorted descending, its first ``cutoff`` (all for None) added
    in rank order as ``gain[label] / discount[rank]`` (the tables numpy computed: the same
    doubles, added in the same order). ``gain`` of two dimensions is one table per row (the
    variants of a family: one order by label, one sum per table), and the IDCG is then one row
    per table. ``codes`` (int64) never decrease; None when they do, when a label has no gain in
    the table or a rank no discount, when no label would be added (none above 0, or a cutoff of
    0: numpy's bincount then gives integers), when the tables are too many to size (``8 * tables``
    bytes a label, in ``Py_ssize_t``), or when the C loops are not at hand."""
    if _C is None or codes.dtype != np.int64 or labels.dtype != np.int64 or len(codes) != len(labels) \
            or np.ndim(gain) not in (1, 2) or nq < 0 or (cutoff is not None and cutoff < 0):
        return None
    tables = np.ascontiguousarray(np.atleast_2d(gain), dtype=np.float64)
    out = np.zeros((len(tables), nq), dtype=np.float64)
    if _C.ideal_dcg(np.ascontiguousarray(codes), np.ascontiguousarray(labels), -1 if cutoff is None else cutoff,
                    tables, len(tables), np.ascontiguousarray(discount, dtype=np.float64), out) is None:
        return None
    return out if np.ndim(gain) == 2 else out[0]


def ranked_top(score: np.ndarray, sizes: np.ndarray, depth: int, only: np.ndarray | None,
               group: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """(:func:`ndcg_plugin.ranking.ranked.ranked_top`, the local codes of its rows) of a ranked run whose
    rows of query j are coded j in ``group`` (int32 or int64): a query's local code is its number
    among the queries kept (``only``; every query for None). None when a row is coded otherwise,
    when the sizes do not add up to the rows, or when the C loops are not at hand."""
    if _C is None or group.dtype not in (np.int32, np.int64) or score.dtype != np.float64 or depth < 1:
        return None
    keep = np.ones(len(sizes), dtype=np.uint8) if only is None else np.ascontiguousarray(only, dtype=np.uint8)
    top, local = np.empty(len(score), dtype=np.int64), np.empty(len(score), dtype=group.dtype)
    count = _C.ranked_top(np.ascontiguousarray(score), np.ascontiguousarray(sizes, dtype=np.int64), depth, keep,
                          np.ascontiguousarray(group), group.itemsize, top, local)
    return None if count is None else (top[:count], local[:count])


def ranked_rows(group: np.ndarray, score: np.ndarray, rel: np.ndarray, judged: np.ndarray, order: np.ndarray,
                depth: int | None, whole_ties: bool) -> tuple[np.ndarray, ...] | None:
    """(q, rank, rel, judged, score) of :func:`ndcg_plugin.ranking.ranked.ranked_arrays`: the rows in
    ``order`` (a permutation that keeps each group's rows together, groups never going down),
    ranked within their group, those ranked below ``depth`` kept (and with ``whole_ties`` those
    that tie with the last of them). None when the groups go down, when ``order`` holds a row
    that is not one, or when the C loops are not at hand."""
    if _C is None or group.dtype not in (np.int32, np.int64) or score.dtype != np.float64 \
            or rel.dtype != np.int64 or judged.dtype != bool or (depth is not None and depth < 1) \
            or not len(group) == len(score) == len(rel) == len(judged):
        return None
    m = len(order)
    out = (np.empty(m, dtype=group.dtype), np.empty(m, dtype=np.int64), np.empty(m, dtype=np.int64),
           np.empty(m, dtype=bool), np.empty(m, dtype=np.float64))
    count = _C.ranked_rows(np.ascontiguousarray(group), group.itemsize, np.ascontiguousarray(score),
                           np.ascontiguousarray(rel), np.ascontiguousarray(judged).view(np.uint8),
                           np.ascontiguousarray(order, dtype=np.int64), -1 if depth is None else depth, int(whole_ties),
                           out[0], out[1], out[2], out[3].view(np.uint8), out[4])
    return None if count is None else tuple(a[:count] for a in out)


def sort_runs(keys: np.ndarray, codes: np.ndarray, most: int = 64) -> np.ndarray | None:
    """``np.argsort(keys, kind="stable")`` of a qrels index's pair keys (uint64) whose query codes
    (int64) never go down, a later code's keys all larger: each query's keys sorted on their own.
    None when the codes go down, when a query holds more than ``most`` keys (a sort of every key
    costs less then), or when the C loops are not at hand."""
    if _C is None or keys.dtype != np.uint64 or codes.dtype != np.int64 or len(keys) != len(codes):
        return None
    order = np.empty(len(keys), dtype=np.int64)
    found = _C.sort_runs(np.ascontiguousarray(keys), np.ascontiguousarray(codes), most, order)
    return None if found is None else order


def dcg(q: np.ndarray, rank: np.ndarray, rel: np.ndarray, nq: int, cutoff: int | None, gain: np.ndarray,
        negative: float, discount: np.ndarray) -> np.ndarray | None:
    """NDCG's DCG per query as ``np.bincount(q, weights=g / discount[rank], minlength=nq)`` adds it
    over the rows ranked within ``cutoff`` (all for None), ``g`` the gain of the row's label:
    ``gain[rel]`` (the table numpy computed, by label), ``negative`` for a label below 0. None
    when a code, a label or a rank has no place in its table, when no row would be added (numpy's
    bincount then gives integers), or when the C loops are not at hand."""
    if _C is None or q.dtype not in (np.int32, np.int64) or rank.dtype != np.int64 or rel.dtype != np.int64 \
            or not len(q) == len(rank) == len(rel) or nq < 0 or (cutoff is not None and cutoff < 0):
        return None
    out = np.zeros(nq, dtype=np.float64)
    found = _C.dcg(np.ascontiguousarray(q), q.itemsize, np.ascontiguousarray(rank), np.ascontiguousarray(rel),
                   np.ascontiguousarray(gain, dtype=np.float64), float(negative),
                   np.ascontiguousarray(discount, dtype=np.float64), -1 if cutoff is None else cutoff, out)
    return None if found is None else out


def equal_at(a: pa.ChunkedArray, a_rows: np.ndarray, b: pa.ChunkedArray | pa.Array, b_rows: np.ndarray
             ) -> np.ndarray | None:
    """Whether string ``a[a_rows[i]]`` equals ``b[b_rows[i]]`` (``a_rows`` ascending, signed
    integers), byte for byte; None when the C loops are not at hand or decline (arrays not of
    strings, with nulls, a row that names no string)."""
    if _C is None or a.null_count or b.null_count or len(a_rows) != len(b_rows) \
            or a_rows.dtype.kind != "i" or b_rows.dtype.kind != "i":
        return None
    chunks = a.chunks if isinstance(a, pa.ChunkedArray) else [a]
    if isinstance(b, pa.ChunkedArray):  # without its empty chunks (Arrow cannot join one without buffers)
        b = pa.chunked_array([c for c in b.chunks if len(c)], type=b.type)
        b = b.chunk(0) if b.num_chunks == 1 else b.combine_chunks()
    theirs = _strings(b)
    if theirs is None:
        return None
    out = np.empty(len(a_rows), dtype=np.uint8)
    bounds = np.cumsum([0] + [len(c) for c in chunks])
    cut = np.searchsorted(a_rows, bounds)
    if cut[0] != 0 or cut[-1] != len(a_rows) or np.any(cut[1:] < cut[:-1]):
        return None  # a row outside ``a``, or rows not ascending: some would go to no chunk
    b_rows = np.ascontiguousarray(b_rows, dtype=np.int64)
    for i, chunk in enumerate(chunks):
        lo, hi = int(cut[i]), int(cut[i + 1])
        if hi > lo:
            mine = _strings(chunk)
            if mine is None:
                return None
            rows = np.ascontiguousarray(a_rows[lo:hi] - bounds[i], dtype=np.int64)
            if _C.equal_at(*mine, rows, *theirs, b_rows[lo:hi], out[lo:hi]) is None:
                return None
    return out.view(bool)


def split_sums(values: np.ndarray) -> list[tuple[int, int, int, int, int]] | None:
    """:func:`ndcg_plugin.arrays.exact.split_sums` of a float64 array (the same list); None for a
    value that is not finite (the numpy definition refuses it by name), or when the C loops are
    not at hand."""
    if _C is None or values.dtype != np.float64:
        return None
    return _C.split_sums(np.ascontiguousarray(values))


def ranked_tie_order(group: np.ndarray, score: np.ndarray, heads_at) -> tuple[np.ndarray, np.ndarray] | None:
    """:func:`ndcg_plugin.ranking.ranked.trec_eval_order` of ranked rows (grouped, scores descending in
    each group) and the rows in ties: the rows' own order but for each run of tied rows (one
    group, one score) put in doc id order, descending, stably. ``heads_at(rows)``: the
    :func:`~ndcg_plugin.arrays.columns.heads` of those rows' doc ids. None when the C loops are not at
    hand or decline, or an id in a tie is longer than 8 bytes (its head and length then do not
    order it)."""
    g = _codes(group)
    if _C is None or g is None or score.dtype != np.float64 or len(g) != len(score):
        return None
    score = np.ascontiguousarray(score)
    rows = np.empty(len(score), dtype=np.int64)
    count = _C.tied_rows(g, g.itemsize, score, rows)
    if count is None:
        return None
    rows = rows[:count].copy()
    order = np.arange(len(score), dtype=np.int64)
    if len(rows):
        head, length = heads_at(rows)
        if int(length.max()) > 8 or _C.sort_ties(g, g.itemsize, score, rows, np.ascontiguousarray(head),
                                                 np.ascontiguousarray(length), order) is None:
            return None
    return order, rows


def parse_columns(data: bytes, start: int, end: int, delimiter: bytes, ncols: int, at: tuple[int, int, int],
                  integer: bool) -> tuple[pa.Array, pa.Array, np.ndarray] | None:
    """(query ids, doc ids, values) of the lines of ``data[start:end]``, fields at ``at`` (query,
    doc, value) of ``ncols`` per line, when the block is in the simple form the C loop reads (see
    ``parse_columns`` in ``_speedups.c``: ASCII, no NUL byte, one delimiter, no empty field,
    plain decimal numbers) and has a line; None otherwise, or when the C loops are not at hand."""
    if _C is None or len(delimiter) != 1 or delimiter not in (b" ", b"\t") or not 0 <= start < end <= len(data) \
            or not 1 <= ncols <= 64:
        return None  # (the span checked before the buffers of its size are made)
    size = end - start
    cap = size // (2 * ncols) + 1  # a line holds at least ncols one-byte fields, their delimiters and its end
    q_off, d_off = np.empty(cap + 1, dtype=np.int64), np.empty(cap + 1, dtype=np.int64)
    q_data, d_data = np.empty(size + 8, dtype=np.uint8), np.empty(size + 8, dtype=np.uint8)  # 8 to spare
    values = np.empty(cap, dtype=np.int64 if integer else np.float64)
    rows = _C.parse_columns(data, start, end, delimiter[0], ncols, *at, integer, q_off, q_data, d_off, d_data, values)
    if rows is None or rows <= 0:
        return None

    def strings(offsets: np.ndarray, chars: np.ndarray) -> pa.Array:
        return pa.Array.from_buffers(pa.large_string(), rows, [None, pa.py_buffer(offsets[: rows + 1]),
                                                               pa.py_buffer(chars[: int(offsets[rows])])])
    return strings(q_off, q_data), strings(d_off, d_data), values[:rows]
