"""The duplicate check (ndcg_plugin/reading/duplicates.py): its result against a brute-force
oracle, on blocks its per-query fast path takes and on blocks it leaves to the exact check."""
from __future__ import annotations

from collections import Counter

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ndcg_plugin.arrays.block import Block
from ndcg_plugin.arrays.columns import fingerprints, group_codes
from ndcg_plugin.reading import duplicates
from ndcg_plugin.reading.formats import LAYOUTS
from ndcg_plugin.reading.lines import Parsed


def _strings(values: list[str]) -> pa.ChunkedArray:
    return pa.chunked_array([pa.array(values, type=pa.large_string())])


def _oracle(qids: list[str], docs: list[str]) -> list[bool]:
    """Rows whose (query, doc) pair occurs more than once, by counting the pairs in Python."""
    counts = Counter(zip(qids, docs, strict=True))
    return [counts[pair] > 1 for pair in zip(qids, docs, strict=True)]


def _block(qids: list[str], docs: list[str]) -> Block:
    """The block of rows with these ids (the reader's columns; the values are not read)."""
    return Block.of(Parsed(LAYOUTS["trec"], _strings(qids), _strings(docs), np.zeros(len(qids)), None))


def _mask(qids: list[str], docs: list[str]) -> list[bool]:
    mask = duplicates.mask_of(_block(qids, docs))
    return [False] * len(qids) if mask is None else mask.tolist()


@st.composite
def blocks(draw):
    """Rows of a run: grouped by query with one size per query (the fast path's shape), grouped
    with several sizes, or in any order; doc ids from a small alphabet, so repeats happen."""
    nq = draw(st.integers(1, 6))
    shape = draw(st.sampled_from(["uniform", "sizes", "any order"]))
    size = draw(st.integers(1, 8))
    sizes = [size] * nq if shape == "uniform" else draw(st.lists(st.integers(1, 8), min_size=nq, max_size=nq))
    doc = st.text(st.sampled_from(list("ab1é")), min_size=1, max_size=draw(st.sampled_from([2, 12])))
    rows = [(f"q{q}", draw(doc)) for q, n in enumerate(sizes) for _ in range(n)]
    if shape == "any order":
        rows = draw(st.permutations(rows))
    return [q for q, _ in rows], [d for _, d in rows]


@settings(max_examples=400, deadline=None)
@given(blocks())
def test_the_check_finds_exactly_the_repeated_pairs(block):
    qids, docs = block
    assert _mask(qids, docs) == _oracle(qids, docs)


def _fast(qids: list[str], docs: list[str]) -> bool:
    codes = group_codes(_strings(qids)).codes
    return duplicates.distinct_within_queries(fingerprints(_strings(docs)), codes)


def test_the_fast_path_shows_distinct_docs_of_grouped_queries_of_one_size():
    qids = [f"q{i // 1000}" for i in range(5000)]
    docs = [f"d{i * 7919 % 100003}" for i in range(5000)]
    assert _fast(qids, docs)
    docs[2500] = docs[2999]  # the same doc twice in query q2
    assert not _fast(qids, docs)
    assert _mask(qids, docs) == _oracle(qids, docs)


@pytest.mark.parametrize("qids", [
    ["a", "a", "b", "b", "a", "a"],       # a query seen again: not grouped
    ["a", "a", "a", "b", "c", "c"],       # queries of different sizes
])
def test_the_fast_path_declines_rows_it_cannot_sort_query_by_query(qids):
    assert not _fast(qids, [f"d{i}" for i in range(len(qids))])


def test_the_fast_path_needs_one_query_per_row_not_only_constant_rows():
    # codes 0 and 3 only (not those of group_codes): rows of 2 would each look constant while
    # query 0 spans two of them; the check must not sort them apart
    fp = fingerprints(_strings(["x", "y", "x", "z", "u", "v", "w", "t"]))
    codes = np.array([0, 0, 0, 0, 3, 3, 3, 3], dtype=np.int32)
    assert not duplicates.distinct_within_queries(fp, codes)


def test_equal_folded_fingerprints_within_a_query_go_to_the_exact_check(monkeypatch):
    # every doc folds to the same 32 bits: the fast path cannot show anything, the exact check
    # compares the strings and finds no duplicate among distinct docs, and the real one
    monkeypatch.setattr(duplicates, "fingerprints", lambda values: np.full(len(values), 7, dtype=np.uint64))
    qids = ["q1"] * 3 + ["q2"] * 3
    assert _mask(qids, ["a", "b", "c", "a", "b", "c"]) == [False] * 6
    assert _mask(qids, ["a", "b", "a", "a", "b", "c"]) == [True, False, True, False, False, False]
