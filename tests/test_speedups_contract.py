"""The contract of the C seam (the docstring of ndcg_plugin.arrays.speedups): every public function
there returns what its numpy twin returns, or declines with None, and never raises to decline.
Each one is fed odd arrays (sliced, strided, chunked, zero-length, large_string, nulls,
zero-length chunks without an offsets buffer, codes of both widths, lengths that disagree, rows,
codes and spans outside their arrays) and must answer as numpy does or decline; on plain inputs
each must answer (a seam that declined everything would let the differential tests of
tests/test_speedups.py pass without comparing anything). Also: the size that overflowed a C
``int`` in ideal_dcg (SIGFPE), the zero-length chunk without buffers through the columns'
functions, and ``speedups.disabled`` restoring the state it found."""
from __future__ import annotations

import inspect
import math

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ndcg_plugin.arrays import speedups
from ndcg_plugin.arrays.columns import fingerprints, group_codes, heads
from ndcg_plugin.arrays.exact import split_sums
from ndcg_plugin.measures.ndcg import ideal_by_label, log2_discounts
from ndcg_plugin.ranking import ranked as ranking
from ndcg_plugin.reading.columnar import empty_field
from ndcg_plugin.reading.duplicates import distinct_within_small_queries
from ndcg_plugin.reading.sources import Chunk
from tests.helpers import numpy_twin
from tests.test_speedups import STRINGS, built

TYPES = [pa.string(), pa.large_string()]
WIDTHS = st.sampled_from([np.int32, np.int64])


def unbuffered(typ: pa.DataType) -> pa.Array:
    """A zero-length string array without an offsets buffer, as Arrow allows (a chunk of a
    sliced or filtered column may come so)."""
    return pa.Array.from_buffers(typ, 0, [None, None, pa.py_buffer(b"")])


def strided(a: np.ndarray) -> np.ndarray:
    """The same values in a view that is not contiguous."""
    return np.repeat(a, 2)[::2]


def same(a, b) -> bool:
    """Equal arrays (bit for bit for doubles) or tuples of them, of one dtype."""
    if isinstance(a, tuple):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    a, b = np.asarray(a), np.asarray(b)
    bits = (lambda x: x.view(np.int64)) if a.dtype == np.float64 else (lambda x: x)
    return a.dtype == b.dtype and bits(a).tolist() == bits(b).tolist()


@st.composite
def odd_chunk(draw, typ: pa.DataType) -> pa.Array:
    kind = draw(st.sampled_from(["sliced", "sliced", "nulls", "empty", "unbuffered"]))
    if kind == "unbuffered":
        return unbuffered(typ)
    if kind == "empty":
        return pa.array([], type=typ)
    values: list = draw(STRINGS)
    if kind == "nulls":
        values.insert(draw(st.integers(0, len(values))), None)
    arr = pa.array(values, type=typ)
    lo = draw(st.integers(0, len(arr)))
    return arr.slice(lo, draw(st.integers(0, len(arr) - lo)))


@st.composite
def odd_strings(draw) -> pa.ChunkedArray:
    """Chunked strings, often odd chunks; or strings in byte order across their chunks (what the C
    loop of group codes takes), each chunk a slice at an offset, an unbuffered one among them."""
    typ = draw(st.sampled_from(TYPES))
    if not draw(st.booleans()):
        return pa.chunked_array(draw(st.lists(odd_chunk(typ), min_size=1, max_size=3)), type=typ)
    values = sorted(draw(STRINGS))  # code point order: the order of the UTF-8 bytes
    cut = sorted(draw(st.lists(st.integers(0, len(values)), max_size=2)))
    bounds = [0, *cut, len(values)]
    chunks = [pa.array(["~"] + values[a:b], type=typ).slice(1) for a, b in zip(bounds[:-1], bounds[1:], strict=True)]
    chunks.insert(draw(st.integers(0, len(chunks))), unbuffered(typ))
    return pa.chunked_array(chunks, type=typ)


def rows_in(data, n: int, size: int | None = None, lo: int = -1) -> np.ndarray:
    """Rows (``size`` of them, or up to 12) of an array of n, one outside it now and then (-1 or
    n; none below ``lo``)."""
    count = st.lists(st.integers(lo, n), max_size=12) if size is None else \
        st.lists(st.integers(lo, n), min_size=size, max_size=size)
    return np.array(data.draw(count), dtype=np.int64)


@built
@settings(max_examples=300, deadline=None)
@given(odd_strings(), odd_strings(), st.data())
def test_the_string_loops_answer_as_numpy_or_decline(arr, other, data):
    for chunk in arr.chunks:
        found = speedups.fingerprints_into(chunk, np.empty(len(chunk), dtype=np.uint64))
        assert found is None or same(found, numpy_twin(fingerprints, chunk))
        for at in (None, rows_in(data, len(chunk))):
            found = speedups.heads_of(chunk, at)
            assert found is None or same(found, numpy_twin(heads, chunk, at))
    codes = speedups.increasing_codes(arr)
    assert codes is None or same(codes, numpy_twin(group_codes, arr).codes)
    k = data.draw(st.integers(0, 10))
    a_rows, b_rows = np.sort(rows_in(data, len(arr), k)), rows_in(data, len(other), k)
    found = speedups.equal_at(arr, a_rows, other, b_rows)
    assert found is None or found.tolist() == [arr[int(i)].as_py() == other[int(j)].as_py()
                                               for i, j in zip(a_rows, b_rows, strict=True)]
    if arr.null_count == 0:  # the callers, through the seam, against their numpy twins
        inside = np.sort(rows_in(data, len(arr) - 1, lo=0)) if len(arr) else None
        assert same(heads(arr, inside), numpy_twin(heads, arr, inside))
        mine, theirs = group_codes(arr), numpy_twin(group_codes, arr)
        assert same(mine.codes, theirs.codes) and mine.uniques.equals(theirs.uniques) and same(mine.sizes, theirs.sizes)


@built
@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(1, 5), max_size=8), st.data(), WIDTHS,
       st.sampled_from(["plain", "strided", "one more fp", "shifted", "empty"]))
def test_the_duplicate_check_answers_as_numpy_or_declines(sizes, data, dtype, odd):
    codes = np.repeat(np.arange(len(sizes)), sizes).astype(dtype)
    fp = np.array(data.draw(st.lists(st.integers(0, 6), min_size=len(codes), max_size=len(codes))), dtype=np.uint64)
    if odd == "strided":
        codes, fp = strided(codes), strided(fp)
    elif odd == "one more fp":
        fp = np.append(fp, np.uint64(1))
    elif odd == "shifted":
        codes = codes + dtype(1)
    elif odd == "empty":
        codes, fp = codes[:0], fp[:0]
    found = speedups.distinct_small(fp, codes, 64)  # the queries hold at most 5 rows: below any limit
    assert found is None or (len(fp) == len(codes) and found == numpy_twin(distinct_within_small_queries, fp, codes))


def _key_positions(keys: list[int], starts: list[int], codes: list[int], needles: list[int]) -> list[int] | None:
    """The oracle of find_in_ranges: each needle's position among its code's keys, -1 where not
    there; None when a code has no range."""
    out = []
    for c, v in zip(codes, needles, strict=True):
        if not 0 <= c < len(starts) - 1:
            return None
        window = keys[starts[c]: starts[c + 1]]
        out.append(starts[c] + window.index(v) if v in window else -1)
    return out


@built
@settings(max_examples=200, deadline=None)
@given(st.lists(st.sets(st.integers(0, 40), max_size=12), min_size=1, max_size=6), st.data(), WIDTHS, st.booleans())
def test_the_key_lookups_answer_as_numpy_or_decline(docs_by_code, data, dtype, stride):
    """Pair keys (a code in the top bits, a doc's 8 bits below) looked up by code, needles and
    codes sometimes outside the index, views that are not contiguous."""
    nq, shift = len(docs_by_code), 8
    keys = [(c << shift) | d for c, docs in enumerate(docs_by_code) for d in sorted(docs)]
    starts = np.cumsum([0] + [len(d) for d in docs_by_code]).tolist()
    view = strided if stride else (lambda a: a)
    n = data.draw(st.integers(0, 12))
    codes = data.draw(st.lists(st.integers(0, nq - 1) | st.sampled_from([-1, nq]), min_size=n, max_size=n))
    docs = data.draw(st.lists(st.integers(0, 41), min_size=n, max_size=n))
    needles = [(max(c, 0) << shift) | d for c, d in zip(codes, docs, strict=True)]
    found = speedups.find_in_ranges(view(np.array(keys, dtype=np.uint64)), view(np.array(starts, dtype=np.int64)),
                                    view(np.array(codes, dtype=dtype)), view(np.array(needles, dtype=np.uint64)))
    assert found is None or found.tolist() == _key_positions(keys, starts, codes, needles)
    # the same lookups from local query codes (group -> codes) and doc fingerprints
    local = data.draw(st.permutations(range(nq)))
    group = [local.index(c) if 0 <= c < nq else c for c in codes]
    fp = [(d << (64 - shift)) | data.draw(st.integers(0, 2**40)) for d in docs]
    found = speedups.find_pairs(view(np.array(keys, dtype=np.uint64)), view(np.array(starts, dtype=np.int64)),
                                view(np.array(group, dtype=dtype)), view(np.array(local, dtype=np.int64)),
                                view(np.array(fp, dtype=np.uint64)), shift)
    expected = _key_positions(keys, starts, codes, needles)
    if found is not None:
        assert expected is not None
        assert found[0].tolist() == [i for i, p in enumerate(expected) if p >= 0]
        assert found[1].tolist() == [p for p in expected if p >= 0]


@built
@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 5), st.integers(0, 5)), max_size=40), st.booleans(),
       st.sampled_from(["plain", "strided", "int32 codes", "one more key", "codes go down"]))
def test_the_sort_of_keys_answers_as_numpy_or_declines(pairs, in_order, odd):
    if in_order:
        pairs.sort()
    codes = np.array([c for c, _ in pairs], dtype=np.int64)
    keys = (codes.astype(np.uint64) << np.uint64(60)) | np.array([k for _, k in pairs], dtype=np.uint64)
    if odd == "strided":
        keys, codes = strided(keys), strided(codes)
    elif odd == "int32 codes":
        codes = codes.astype(np.int32)
    elif odd == "one more key":
        keys = np.append(keys, np.uint64(0))
    elif odd == "codes go down" and len(codes) > 1:
        codes, keys = codes[::-1].copy(), keys[::-1].copy()
    found = speedups.sort_runs(keys, codes)
    assert found is None or same(found, np.argsort(keys, kind="stable"))


@st.composite
def ranked_runs(draw):
    """(group, score, sizes, docs) of a ranked run: each query's scores descending, ties among
    them, doc ids chunked and large or not."""
    queries = draw(st.lists(st.lists(st.tuples(st.sampled_from([0.5, 1.0, 2.0]), st.sampled_from(["", "a", "b", "é"])),
                                     min_size=1, max_size=8), max_size=6))
    rows = [(q, s, d) for q, r in enumerate(queries) for s, d in sorted(r, key=lambda x: -x[0])]
    group = np.array([r[0] for r in rows], dtype=draw(WIDTHS))
    score = np.array([r[1] for r in rows], dtype=np.float64)
    typ = draw(st.sampled_from(TYPES))
    ids = [r[2] for r in rows]
    docs = pa.chunked_array([pa.array(ids[:3], type=typ), unbuffered(typ), pa.array(ids[3:], type=typ)], type=typ)
    return group, score, np.array([len(r) for r in queries], dtype=np.int64), docs


@built
@settings(max_examples=200, deadline=None)
@given(ranked_runs(), st.integers(1, 4), st.sampled_from([None, 1, 3]), st.booleans(), st.data(),
       st.sampled_from(["plain", "strided", "a row coded otherwise", "sizes too many", "order goes down",
                        "order names no row", "empty"]))
def test_the_loops_of_a_ranked_run_answer_as_numpy_or_decline(run, depth, cut, whole_ties, data, odd):
    group, score, sizes, docs = run
    n = len(score)
    rel = np.array(data.draw(st.lists(st.integers(0, 3), min_size=n, max_size=n)), dtype=np.int64)
    judged = np.array(data.draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype=bool)
    order = numpy_twin(ranking.trec_eval_order, group, score, docs)
    if odd == "strided":
        group, score, rel, judged, order = (strided(a) for a in (group, score, rel, judged, order))
    elif odd == "a row coded otherwise" and n:
        group[n // 2] += 1
    elif odd == "sizes too many":
        sizes = np.append(sizes, 1)
    elif odd == "order goes down" and len(sizes) > 1:
        order = order[::-1].copy()
    elif odd == "order names no row":
        order = np.append(order, n)
    elif odd == "empty":
        group, score, rel, judged, order, sizes = (a[:0] for a in (group, score, rel, judged, order, sizes))
    matched = np.array(data.draw(st.lists(st.booleans(), min_size=len(sizes), max_size=len(sizes))), dtype=bool)
    for only in (None, matched):
        found = speedups.ranked_top(score, sizes, depth, only, group)
        keep = np.ones(len(sizes), dtype=bool) if only is None else only
        assert found is None or same(found, numpy_twin(ranking.top_rows, score, sizes, depth, keep, group))
    found = speedups.ranked_rows(group, score, rel, judged, order, cut, whole_ties)
    assert found is None or same(found, numpy_twin(ranking.ranked_arrays, group, score, rel, judged, order, None,
                                                   cut, whole_ties))
    if odd in ("plain", "strided", "empty"):  # the tie order takes ranked rows only (its callers check them)
        found = speedups.ranked_tie_order(group, score, lambda rows: heads(docs, rows))
        tie = (group[1:] == group[:-1]) & (score[1:] == score[:-1])
        if found is not None:
            assert same(found[0], numpy_twin(ranking.trec_eval_order, group, score, docs).astype(np.int64))
            assert found[1].tolist() == np.flatnonzero(np.r_[tie, False] | np.r_[False, tie]).tolist()


@built
@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 4), st.integers(0, 6), st.integers(-2, 5)), max_size=30),
       st.sampled_from([None, 0, 1, 3]), st.integers(0, 8), WIDTHS,
       st.sampled_from(["plain", "strided", "codes sorted", "nq too few", "empty"]))
def test_the_dcg_and_idcg_answer_as_numpy_or_decline(rows, cutoff, deepest, dtype, odd):
    """Labels below 0 and above the tables, ranks beyond the discounts, codes beyond nq, tables of
    one or two gains (both rising with the label, as the variants' do)."""
    table = np.array(rows, dtype=np.int64).reshape(-1, 3)
    q, rank, rel = (table[:, i].copy() for i in range(3))
    nq = 5
    if odd == "strided":
        q, rank, rel = strided(q), strided(rank), strided(rel)
    elif odd == "codes sorted":
        at = np.argsort(q, kind="stable")
        q, rank, rel = q[at], rank[at], rel[at]
    elif odd == "nq too few":
        nq = 2
    elif odd == "empty":
        q, rank, rel = q[:0], rank[:0], rel[:0]
    labels = np.arange(4)
    gain, exp_gain = labels.astype(np.float64), 2.0 ** labels - 1
    discount = log2_discounts(deepest)
    found = speedups.dcg(q.astype(dtype), rank, rel, nq, cutoff, gain, -1.5, discount)
    if found is not None:
        keep = np.ones(len(q), dtype=bool) if cutoff is None else rank < cutoff
        g = np.where(rel[keep] < 0, -1.5, gain[np.maximum(rel[keep], 0)])
        assert same(found, np.bincount(q[keep], weights=g / discount[rank[keep]], minlength=nq))
    for tables in (gain, np.stack([gain, exp_gain])):
        found = speedups.ideal_dcg(q, rel, nq, cutoff, tables, discount)
        if found is not None:
            qs, rs, at = ideal_by_label(q, rel, cutoff)
            expected = [np.bincount(qs, weights=t[rs] / discount[at], minlength=nq) for t in np.atleast_2d(tables)]
            assert same(found, expected[0] if tables.ndim == 1 else np.stack(expected))


@built
@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(allow_nan=False, allow_infinity=False), max_size=30),
       st.sampled_from(["plain", "strided", "float32", "a nan", "an infinity", "empty"]))
def test_the_exact_sums_answer_as_numpy_or_decline(values, odd):
    arr = np.array(values, dtype=np.float64)
    if odd == "strided":
        arr = strided(arr)
    elif odd == "float32":
        with np.errstate(over="ignore"):  # doubles beyond float32's range become infinities: declined all the same
            arr = arr.astype(np.float32)
    elif odd in ("a nan", "an infinity"):
        arr = np.append(arr, math.nan if odd == "a nan" else -math.inf)
    elif odd == "empty":
        arr = arr[:0]
    found = speedups.split_sums(arr)
    if found is not None:
        assert found == numpy_twin(split_sums, arr)
    elif not np.isfinite(arr).all():  # declined: numpy refuses it by name
        with pytest.raises(ValueError, match="finite"), speedups.disabled():
            split_sums(arr)


TEXT = b"q0d1. \t\n-"  # ids, numbers, both delimiters, line ends


@built
@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=40).map(lambda b: bytes(TEXT[x % len(TEXT)] for x in b)), st.integers(-3, 45),
       st.integers(-3, 45), st.sampled_from([b" ", b"\t", b",", b"  "]), st.integers(0, 66),
       st.tuples(st.integers(-1, 4), st.integers(-1, 4), st.integers(-1, 4)), st.booleans(), st.booleans())
def test_the_text_loops_answer_as_numpy_or_decline(text, start, end, delimiter, ncols, at, integer, first_column):
    """Spans inside and outside the text, other delimiters, column counts and places that do not fit."""
    found = speedups.empty_field(text, start, end, delimiter, first_column, False)
    if found is not None:
        assert 0 <= start <= end <= len(text)
        assert found == numpy_twin(empty_field, Chunk(text, start, end), delimiter, first_column, False)
    found = speedups.parse_columns(text, start, end, delimiter, ncols, at, integer)
    if found is not None:  # the simple form: lines of ncols fields, cut by the delimiter alone
        lines = [line.split(delimiter) for line in text[start:end].split(b"\n")]
        lines = lines[:-1] if lines[-1] == [b""] else lines
        assert all(len(f) == ncols for f in lines)
        assert found[0].to_pylist() == [f[at[0]].decode() for f in lines]
        assert found[1].to_pylist() == [f[at[1]].decode() for f in lines]
        assert found[2].tolist() == [(int if integer else float)(f[at[2]]) for f in lines]


def _plain_calls() -> dict:
    """One plain call of each public function of the seam: each must answer, not decline."""
    docs = pa.chunked_array([pa.array(["a", "b", "b"], type=pa.large_string())])
    group, score = np.array([0, 0, 1], dtype=np.int32), np.array([2.0, 2.0, 1.0])
    keys, starts = np.array([1, 2, 5], dtype=np.uint64), np.array([0, 2, 3], dtype=np.int64)
    ints = np.array([0, 0, 1], dtype=np.int64)
    return {
        "fingerprints_into": lambda: speedups.fingerprints_into(docs.chunk(0), np.empty(3, dtype=np.uint64)),
        "heads_of": lambda: speedups.heads_of(docs.chunk(0), None),
        "distinct_small": lambda: speedups.distinct_small(np.array([1, 2, 3], dtype=np.uint64), ints, 64),
        "find_in_ranges": lambda: speedups.find_in_ranges(keys, starts, ints, np.array([2, 9, 5], dtype=np.uint64)),
        "find_pairs": lambda: speedups.find_pairs(keys, starts, group, np.array([0, 1], dtype=np.int64),
                                                  np.zeros(3, dtype=np.uint64), 8),
        "empty_field": lambda: speedups.empty_field(b"a b\n", 0, 4, b" ", False, False),
        "increasing_codes": lambda: speedups.increasing_codes(docs),
        "run_codes": lambda: speedups.run_codes(pa.chunked_array([pa.array(["b", "a", "a"])])),
        "ideal_dcg": lambda: speedups.ideal_dcg(ints, ints + 1, 2, None, np.arange(3.0), np.ones(4)),
        "ranked_top": lambda: speedups.ranked_top(score, np.array([2, 1]), 1, None, group),
        "ranked_rows": lambda: speedups.ranked_rows(group, score, ints, np.ones(3, dtype=bool), np.arange(3), None,
                                                    False),
        "sort_runs": lambda: speedups.sort_runs(keys, ints),
        "dcg": lambda: speedups.dcg(group, ints, ints, 2, None, np.arange(3.0), 0.0, np.ones(4)),
        "equal_at": lambda: speedups.equal_at(docs, np.array([0, 1]), docs.chunk(0), np.array([0, 2])),
        "split_sums": lambda: speedups.split_sums(score),
        "ranked_tie_order": lambda: speedups.ranked_tie_order(group, score, lambda rows: heads(docs, rows)),
        "parse_columns": lambda: speedups.parse_columns(b"q 0 d 1\n", 0, 8, b" ", 4, (0, 2, 3), True),
    }


@built
def test_every_loop_answers_plain_inputs_and_every_one_is_covered_here():
    public = {name for name, f in vars(speedups).items() if inspect.isfunction(f) and not name.startswith("_")
              and f.__module__ == speedups.__name__} - {"available", "disabled"}
    calls = _plain_calls()
    assert set(calls) == public, "a public function of the seam without its case here (and in the tests above)"
    declined = [name for name, call in calls.items() if call() is None]
    assert declined == []


@built
def test_a_count_of_tables_that_overflowed_a_c_int_is_declined_in_process():
    """8 * 2^29 in a C int was 0, and ``gain.len % 0`` a SIGFPE; now sized in Py_ssize_t (and
    declined above PY_SSIZE_T_MAX / 8 tables, more than numpy makes: 2^59 is about its most)."""
    for tables in (2**29, 2**40, 2**59):
        found = speedups.ideal_dcg(np.zeros(1, np.int64), np.ones(1, np.int64), 0, None, np.zeros((tables, 0)),
                                   np.ones(4))
        assert found is None


@pytest.mark.parametrize("typ", TYPES)
def test_a_zero_length_chunk_without_buffers_is_read_as_numpy_reads_it(typ):
    """Alone, and among chunks with strings: group codes, heads (all, and at rows) and
    fingerprints, through the seam as without it."""
    empty = unbuffered(typ)
    assert empty.buffers()[1] is None
    for arr in (pa.chunked_array([empty], type=typ), pa.chunked_array([pa.array(["x"], type=typ), empty,
                                                                       pa.array(["y", "y"], type=typ)], type=typ)):
        mine, theirs = group_codes(arr), numpy_twin(group_codes, arr)
        assert same(mine.codes, theirs.codes) and mine.uniques.equals(theirs.uniques) and same(mine.sizes, theirs.sizes)
        rows = np.arange(len(arr), dtype=np.int64)[::-1].copy()
        for at in (None, rows):
            assert same(heads(arr, at), numpy_twin(heads, arr, at))
        assert same(fingerprints(arr), numpy_twin(fingerprints, arr))
    assert same(heads(empty), numpy_twin(heads, empty))


def test_disabled_turns_the_loops_off_and_restores_the_state_it_found():
    before = speedups.available()
    with speedups.disabled():
        assert not speedups.available()
        assert speedups.split_sums(np.ones(3)) is None  # every function declines
        with speedups.disabled():
            assert not speedups.available()
        assert not speedups.available()  # the inner block restored the outer one's state
    assert speedups.available() == before
    with pytest.raises(RuntimeError, match="inside"), speedups.disabled():
        raise RuntimeError("inside")
    assert speedups.available() == before
