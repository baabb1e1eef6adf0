"""The C loops over a ranked run and a qrels index (``_speedups_ranks.c``: the top rows of a
ranked run, their order and ranks, the DCG, the sort of an index's keys query by query) against
the numpy definitions they stand for, on random inputs (see tests/test_speedups.py for the
others and for the command's output with and without them)."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from ndcg_plugin import read
from ndcg_plugin.arrays import speedups
from ndcg_plugin.ranking import ranked as ranking
from ndcg_plugin.ranking.qrels_index import QrelsIndex
from tests.helpers import numpy_twin, qrels_df
from tests.test_speedups import built


@built
@settings(max_examples=400, deadline=None)
@given(st.lists(st.lists(st.sampled_from([0.5, 1.0, 2.0, 3.0]), min_size=1, max_size=14), min_size=1, max_size=12),
       st.integers(1, 6), st.data(), st.sampled_from([np.int32, np.int64]))
def test_the_top_of_a_ranked_run_taken_in_c_as_by_numpy(queries, depth, data, dtype):
    """Each query's scores descending (ties at and across the depth), some queries not matched,
    and codes that are not the queries' numbers (the C loop declines; numpy's answer stands)."""
    score = np.array([s for rows in queries for s in sorted(rows, reverse=True)])
    sizes = np.array([len(rows) for rows in queries], dtype=np.int64)
    group = np.repeat(np.arange(len(queries)), sizes).astype(dtype)
    if data.draw(st.booleans()):  # a row coded as another query (a run not grouped as sizes say)
        at = data.draw(st.integers(0, len(group) - 1))
        group[at] = (group[at] + data.draw(st.sampled_from([-1, 1]))) % len(sizes)
    matched = np.array(data.draw(st.lists(st.booleans(), min_size=len(sizes), max_size=len(sizes))))
    for only in (matched, np.ones(len(sizes), dtype=bool)):
        top, local = ranking.top_rows(score, sizes, depth, only, group)
        top_np, local_np = numpy_twin(ranking.top_rows, score, sizes, depth, only, group)
        assert top.tolist() == top_np.tolist() and local.tolist() == local_np.tolist()
        assert local.dtype == local_np.dtype and top.dtype == top_np.dtype


@built
@settings(max_examples=400, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 5), st.integers(0, 12), st.integers(-2, 7)), min_size=1, max_size=60),
       st.sampled_from([None, 1, 3, 10]), st.sampled_from(["linear", "exp"]),
       st.sampled_from([(), ((2, 9),), ((0, 4),), ((1, 3), (7, 1))]), st.sampled_from([np.int32, np.int64]))
def test_the_dcg_added_in_c_as_by_numpy(rows, cutoff, variant, gains, dtype):
    """Rows in any order of queries and ranks, labels below 0, 0 and above the gains set, every
    cutoff, both gains and gains= overrides (one of label 0, which numpy alone computes): the
    same doubles."""
    from ndcg_plugin.measures import ndcg
    from ndcg_plugin.measures.base import Spec
    from ndcg_plugin.ranking.ranked import RankedRun

    q, rank, rel = (np.array(c) for c in zip(*rows, strict=True))
    ranked = RankedRun(q=q.astype(dtype), rank=rank.astype(np.int64), rel=rel.astype(np.int64), judged=rel >= -1,
                       score=np.zeros(len(q)), returned=np.zeros(6, dtype=np.int64), pool_q=q[:0], pool_rel=rel[:0],
                       nq=6, codes=np.arange(6))
    spec = Spec("ndcg", variant, cutoff, gains=gains if variant == "linear" else ())
    mine, theirs = ndcg.dcg_of(ranked, spec), numpy_twin(ndcg.dcg_of, ranked, spec)
    assert mine.view(np.int64).tolist() == theirs.view(np.int64).tolist()


@built
@settings(max_examples=400, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 5), st.sampled_from([0.5, 1.0, 2.0]), st.sampled_from(["a", "b", "c", "d"]),
                          st.integers(-1, 3)), min_size=1, max_size=40),
       st.booleans(), st.sampled_from([None, 1, 2, 4]), st.booleans(), st.sampled_from([np.int32, np.int64]))
def test_rows_ranked_in_c_as_by_numpy(rows, ranked, depth, whole_ties, dtype):
    """Rows in trec_eval's order (a ranked run's ties put in doc id order, or any run sorted),
    ranked, cut at every depth with and without the ties that straddle it."""
    if ranked:  # grouped by query, scores descending: the rows move only among their ties
        rows = sorted(rows, key=lambda r: (r[0], -r[1]))
    group = np.array([r[0] for r in rows], dtype=dtype)
    score = np.array([r[1] for r in rows])
    docs = pa.array([r[2] for r in rows])
    rel = np.array([max(r[3], 0) for r in rows], dtype=np.int64)
    judged = np.array([r[3] >= 0 for r in rows])
    order = numpy_twin(ranking.trec_eval_order, group, score, docs)
    # a ranked run's rows that move (among their ties), as trec_eval_order tells the engine; else a sort
    moved = np.flatnonzero(order != np.arange(len(order))) if ranked else None
    mine = ranking.ranked_arrays(group, score, rel, judged, order, moved, depth, whole_ties)
    theirs = numpy_twin(ranking.ranked_arrays, group, score, rel, judged, order, moved, depth, whole_ties)
    for a, b in zip(mine, theirs, strict=True):
        assert a.dtype == b.dtype and a.tolist() == b.tolist()


@built
def test_rows_whose_groups_go_down_in_their_order_are_declined_by_the_c_loop():
    group, score, rel, judged = np.array([0, 1], dtype=np.int32), np.array([1.0, 2.0]), np.zeros(2, np.int64), \
        np.zeros(2, bool)
    assert speedups.ranked_rows(group, score, rel, judged, np.array([1, 0]), None, False) is None
    assert speedups.ranked_rows(group, score, rel, judged, np.array([0, 2]), None, False) is None  # no row 2
    assert [a.tolist() for a in speedups.ranked_rows(group, score, rel, judged, np.array([0, 1]), 1, False)] == \
        [[0, 1], [0, 0], [0, 0], [False, False], [1.0, 2.0]]


@built
@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 30), st.integers(0, 80), st.integers(0, 3)), min_size=1, max_size=150),
       st.booleans())
def test_an_index_of_grouped_qrels_sorted_in_c_as_by_numpy(judgments, grouped):
    """Qrels grouped by query in id order (each query's keys sorted on their own in C; queries of
    up to 80 judgments, above the C loop's 64) or in any order (numpy sorts them all)."""
    rows = list({(f"q{q:02d}", f"d{d}"): (f"q{q:02d}", f"d{d}", r) for q, d, r in judgments}.values())
    if grouped:
        rows.sort(key=lambda r: r[0])
    qrels = read(qrels_df(rows), "qrels")
    mine, theirs = QrelsIndex(qrels), numpy_twin(QrelsIndex, qrels)
    for name in ("keys", "key_q", "rel"):
        assert getattr(mine, name).tolist() == getattr(theirs, name).tolist()
    probe = rows[::-1] + [("q00", "zz", 1)]
    q = mine.code_of(pa.chunked_array([pa.array([r[0] for r in probe])]))
    keep = q >= 0
    docs = pa.chunked_array([pa.array([r[1] for r, k in zip(probe, keep, strict=True) if k], type=pa.string())])
    assert [a.tolist() for a in mine.labels(q[keep], docs)] == [a.tolist() for a in theirs.labels(q[keep], docs)]


@built
@settings(max_examples=400, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 6), st.integers(0, 5)), min_size=1, max_size=80), st.booleans())
def test_keys_sorted_query_by_query_in_c_as_by_numpys_stable_sort(pairs, in_order):
    """Pair keys (the code in the high bits, repeats of a key kept in their order) of codes in
    order, or not (the C loop declines)."""
    if in_order:
        pairs.sort(key=lambda p: p[0])
    codes = np.array([c for c, _ in pairs], dtype=np.int64)
    keys = (codes.astype(np.uint64) << np.uint64(60)) | np.array([k for _, k in pairs], dtype=np.uint64)
    found = speedups.sort_runs(keys, codes)
    if in_order or bool(np.all(codes[1:] >= codes[:-1])):
        assert found is not None and found.tolist() == np.argsort(keys, kind="stable").tolist()
    else:
        assert found is None
    assert speedups.sort_runs(keys, codes, most=1) is None or len(set(codes.tolist())) == len(codes)
    bare = np.array([k for _, k in pairs], dtype=np.uint64)  # keys that need not grow with the codes
    found = speedups.sort_runs(bare, codes)
    assert found is None or found.tolist() == np.argsort(bare, kind="stable").tolist()


@built
def test_a_long_run_of_ties_is_put_in_order_in_c_as_by_numpy():
    """A query of 10^5 rows whose scores are all equal (and a query of 3 after it): the C tie order
    (a merge sort, n log n) equals numpy's stable sort, for doc ids in ascending order (the worst
    case of the insertion sort it replaced: about 20 s for these rows, quadratic) and for random
    ids of 1 to 8 bytes with repeated heads and lengths (the sort must be stable)."""
    n = 100_000
    rng = np.random.default_rng(42)
    ascending = pa.array([f"d{i:06d}" for i in range(n)] + ["x", "y", "z"], type=pa.large_string())
    offsets = np.r_[0, np.cumsum(rng.integers(1, 9, size=n + 3))]
    chars = np.frombuffer(b"ab", dtype=np.uint8)[rng.integers(0, 2, size=int(offsets[-1]))]
    short = pa.Array.from_buffers(pa.large_string(), n + 3, [None, pa.py_buffer(offsets), pa.py_buffer(chars)])
    group = np.r_[np.zeros(n, dtype=np.int32), np.ones(3, dtype=np.int32)]
    score = np.r_[np.full(n, 0.5), [2.0, 1.0, 1.0]]
    for docs in (ascending, short):
        assert speedups.ranked_tie_order(group, score, lambda rows, d=docs: ranking.heads(d, rows)) is not None  # in C
        mine = ranking.trec_eval_order(group, score, docs)
        assert mine.tolist() == numpy_twin(ranking.trec_eval_order, group, score, docs).tolist()
