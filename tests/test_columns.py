"""columns.to_numpy / from_numpy read and write Arrow buffers directly (Arrow's own conversions
import pandas): differential tests against Arrow's conversions, on sliced and chunked arrays
with nulls. columns.group_codes against pandas' factorize, and its two ways (runs of increasing
values counted, or hashed) against each other. columns.heads against its definition, one string
at a time in Python (tests/test_io.py does so for the fingerprints, read the same way)."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ndcg_plugin.arrays.columns import (
    empty_strings,
    from_numpy,
    group_codes,
    heads,
    query_pieces,
    to_numpy,
)

TYPES = {"int32": (pa.int32(), st.integers(-2**31, 2**31 - 1)), "int64": (pa.int64(), st.integers(-2**63, 2**63 - 1)),
         "float64": (pa.float64(), st.floats(allow_nan=False)), "bool": (pa.bool_(), st.booleans())}


@st.composite
def arrays(draw):
    name = draw(st.sampled_from(sorted(TYPES)))
    typ, values = TYPES[name]
    chunks = draw(st.lists(st.lists(st.one_of(values, st.none()) if draw(st.booleans()) else values, max_size=40),
                           min_size=1, max_size=4))
    arrs = [pa.array(c, type=typ) for c in chunks]
    lo = draw(st.integers(0, 5))
    arrs = [a.slice(min(lo, len(a))) for a in arrs]  # offsets that are not a multiple of 8
    if draw(st.booleans()) or len(arrs) > 1:
        return pa.chunked_array(arrs, type=typ)
    return arrs[0]


@settings(max_examples=300, deadline=None)
@given(arrays())
def test_to_numpy_equals_arrows_own_conversion(arr):
    fill = False if arr.type == pa.bool_() else -7
    expected = arr.fill_null(fill).to_numpy(zero_copy_only=False) if len(arr) else np.zeros(0)
    got = to_numpy(arr, null=fill)
    assert got.tolist() == expected.tolist()
    if len(arr):
        assert got.dtype == expected.dtype
    if arr.null_count:
        with pytest.raises(ValueError, match="nulls"):
            to_numpy(arr)


@settings(max_examples=100, deadline=None)
@given(st.sampled_from([np.int32, np.int64, np.float64]), st.lists(st.integers(-1000, 1000), max_size=50),
       st.integers(0, 3))
def test_from_numpy_equals_pa_array(dtype, values, step):
    arr = np.array(values, dtype=dtype)[:: step + 1]  # also a strided (non-contiguous) view
    assert from_numpy(arr).equals(pa.array(arr))


def test_empty_strings_is_an_empty_large_string_array():
    assert empty_strings().equals(pa.array([], type=pa.large_string()))


@st.composite
def grouped_ids(draw):
    """Query ids in runs, often sorted (a file sorted by query id), as a chunked Arrow array: ids
    that sort differently as numbers and as strings, prefixes of one another, non-ASCII, nulls."""
    pool = draw(st.lists(st.one_of(st.sampled_from(["1", "10", "2", "u01", "u1", "a", "ab", "é", "\x00", ""]),
                                   st.text(max_size=4)), min_size=1, max_size=12, unique=True))
    ids = draw(st.lists(st.sampled_from(pool), min_size=0, max_size=40))
    if draw(st.booleans()):
        ids = sorted(ids, key=lambda s: s.encode())  # byte order: runs of strictly increasing values
    if ids and draw(st.integers(0, 9)) == 0:
        ids[draw(st.integers(0, len(ids) - 1))] = None
    cuts = sorted(draw(st.lists(st.integers(0, len(ids)), max_size=3)))
    bounds = [0, *cuts, len(ids)]
    parts = [pa.array(ids[a:b], type=pa.large_string()) for a, b in zip(bounds, bounds[1:], strict=False)]
    return pa.chunked_array(parts, type=pa.large_string())


@settings(max_examples=400, deadline=None)
@given(grouped_ids())
def test_group_codes_equal_pandas_factorize_and_the_hashed_way(ids):
    import pandas as pd
    values = ids.to_pylist()
    if None in values:  # the readers refuse a missing id before grouping; both ways refuse it too
        for way in (False, True):
            with pytest.raises(ValueError, match="nulls"):
                group_codes(ids, hash_always=way)
        return
    codes, uniques, sizes = group_codes(ids)
    # oracle: pandas numbers values by first appearance
    expected_codes, expected_uniques = pd.factorize(pd.Series(values, dtype=object))
    assert codes.tolist() == expected_codes.tolist()
    assert uniques.to_pylist() == expected_uniques.tolist()
    assert sizes.tolist() == np.bincount(expected_codes, minlength=len(expected_uniques)).tolist()
    hashed = group_codes(ids, hash_always=True)
    assert codes.tolist() == hashed.codes.tolist() and codes.dtype == hashed.codes.dtype
    assert uniques.equals(hashed.uniques) and sizes.tolist() == hashed.sizes.tolist()


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(st.sampled_from(list("ab09\x00é\u4e2d")), max_size=12), min_size=1, max_size=60),
       st.integers(0, 10), st.integers(0, 3))
def test_heads_match_their_definition_at_every_offset_and_data_size(values, skip, cut):
    """The strings' bytes are read in place (loads near either end of the data read zeros beyond
    it): short arrays and long ones, sliced and in chunks, strings at the very start and end."""
    arr = pa.array(values, type=pa.large_string()).slice(min(skip, len(values) - 1))
    at = min(cut * 7, len(arr))
    chunked = pa.chunked_array([arr.slice(0, at), arr.slice(at)], type=pa.large_string())
    expected_head = [int.from_bytes((v.encode() + bytes(8))[:8], "big") for v in arr.to_pylist()]
    expected_length = [len(v.encode()) for v in arr.to_pylist()]
    for a in (arr, chunked):
        head, length = heads(a)
        assert head.tolist() == expected_head and length.tolist() == expected_length
        rows = np.array([(i * 7 + cut) % len(arr) for i in range(len(arr) + 3)][::-1])  # any order, repeats
        head, length = heads(a, rows)
        assert head.tolist() == [expected_head[r] for r in rows]
        assert length.tolist() == [expected_length[r] for r in rows]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(1, 20), min_size=1, max_size=40), st.integers(1, 60))
def test_query_pieces_cut_whole_queries_into_about_equal_shares(sizes, max_rows):
    """query_pieces (the side by side's pieces, compute_in_blocks' blocks) against its definition:
    whole queries, in order, every row once, as many pieces as max_rows-row pieces would need (or
    fewer, where a query is longer than a share), each at most a share plus one query; and
    Groups.slice gives each piece's rows the codes group_codes gives them alone."""
    sizes = np.array(sizes)
    pieces = query_pieces(sizes, max_rows)
    total, ends = int(sizes.sum()), np.cumsum(sizes)
    assert pieces[0][0] == 0 and pieces[-1][1] == len(sizes) and pieces[0][2] == 0 and pieces[-1][3] == total
    for (_, hi, _, b), (lo, _, a, _) in zip(pieces[:-1], pieces[1:], strict=True):
        assert hi == lo and b == a
    count = -(-total // max_rows)
    assert 1 <= len(pieces) <= count
    for lo, hi, a, b in pieces:
        assert lo < hi and a == (ends[lo - 1] if lo else 0) and b == ends[hi - 1]
        assert b - a <= total / count + sizes.max()
    ids = pa.chunked_array([pa.array([f"q{i:02d}" for i, n in enumerate(sizes) for _ in range(n)],
                                     type=pa.large_string())])
    groups = group_codes(ids)
    for lo, hi, a, b in pieces:
        got, alone = groups.slice(lo, hi, a, b), group_codes(ids.slice(a, b - a))
        assert got.codes.tolist() == alone.codes.tolist() and got.uniques.equals(alone.uniques)
        assert got.sizes.tolist() == alone.sizes.tolist()
