"""The qrels index's lookups: the labels of (query, doc) pairs whatever order the keys are
searched in (their own order, or sorted first: a speed choice, :func:`qrels_index.in_runs`)."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from ndcg_plugin.arrays.columns import fingerprints
from ndcg_plugin.ranking import qrels_index
from ndcg_plugin.ranking.qrels_index import QrelsIndex
from tests.helpers import qrels_df


@settings(max_examples=100, deadline=None)
@given(sizes=st.lists(st.integers(1, 80), min_size=1, max_size=30), seed=st.integers(0, 2**32 - 1))
def test_the_labels_are_the_same_searched_in_the_rows_order_or_sorted(sizes, seed):
    # a run's queries in runs of rows, in a random order (a Spark worker's partition)
    rng = np.random.default_rng(seed)
    nq = len(sizes)
    qrels = [(f"q{q}", f"d{d}", int(rng.integers(0, 4))) for q in range(nq) for d in rng.choice(60, 5, replace=False)]
    index = QrelsIndex(qrels_df(qrels))
    q = np.repeat(rng.permutation(nq), sizes)
    docs = [f"d{d}" for d in rng.integers(0, 60, len(q))]
    codes = index.code_of([f"q{i}" for i in q])
    keys = index.pair_keys(codes, fingerprints(pa.array(docs)))
    np.testing.assert_array_equal(qrels_index.search_sorted(index.keys, keys, near_sorted=True),
                                  qrels_index.search_sorted(index.keys, keys, near_sorted=False))
    judged, rel = index.labels(codes, pa.chunked_array([pa.array(docs)]))
    truth = {(a, b): r for a, b, r in qrels}
    expected = [truth.get((f"q{i}", d)) for i, d in zip(q, docs, strict=True)]
    assert judged.tolist() == [e is not None for e in expected]
    assert rel.tolist() == [e or 0 for e in expected]


def test_keys_in_runs_are_searched_in_their_order_scattered_keys_sorted_first():
    sorted_codes = np.repeat(np.arange(10), 3)
    runs_of_10 = np.repeat(np.random.default_rng(0).permutation(1000), 10)
    scattered = np.random.default_rng(1).integers(0, 1000, 10_000)
    assert qrels_index.in_runs(sorted_codes, 10**7)
    assert qrels_index.in_runs(runs_of_10, 10**5)       # a small index: runs of 4 or more
    assert not qrels_index.in_runs(runs_of_10, 10**7)   # a large one: runs of 64 or more
    assert qrels_index.in_runs(np.repeat(runs_of_10[::10], 100), 10**7)
    assert not qrels_index.in_runs(scattered, 10**5)
