"""The ranking's two ways to trec_eval's order: a run already grouped by query with scores
descending (the usual TREC file, a recommender's lists) is ranked in place, only its tied rows
moved; any other run is sorted. Differential: the same rows both ways give the same ranked
arrays, bit for bit, and the discounts looked up in a table equal the logarithm per row. A
ranked run cut at the depth as it is joined ranks as the whole run does; the rows tied below
the depth, left out when no measure averages over ties, change no measure's value."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from ndcg_plugin.arrays.block import Block
from ndcg_plugin.measures import Spec, family
from ndcg_plugin.measures.ndcg import log2_discounts
from ndcg_plugin.ranking import ranked as ranking
from ndcg_plugin.ranking.qrels_index import QrelsIndex
from tests.helpers import qrels_df, run_df


@st.composite
def ranked_runs(draw):
    """(qrels rows, run rows grouped by query with scores descending, the same rows shuffled):
    few distinct scores, so that ties (pairs and larger) are common, at the cutoff too."""
    nq = draw(st.integers(1, 6))
    qrels, run = [], []
    for q in range(nq):
        n = draw(st.integers(0, 14))
        docs = draw(st.lists(st.sampled_from([f"d{i}" for i in range(20)] + ["d", "d10a", "e"]),
                             min_size=n, max_size=n, unique=True))
        scores = draw(st.lists(st.sampled_from([0.0, 0.5, 1.0, 2.0, -1.0]), min_size=n, max_size=n))
        rows = sorted(zip(docs, scores, strict=True), key=lambda r: -r[1])  # stable: ties in file order
        run += [(f"q{q}", d, s) for d, s in rows]
        judged = draw(st.lists(st.sampled_from(docs + ["z"]), unique=True)) if docs else ["z"]
        qrels += [(f"q{q}", d, draw(st.integers(-1, 3))) for d in judged]
    if draw(st.booleans()):
        run.append(("unjudged-query", "d1", 1.0))
    order = draw(st.permutations(range(len(run))))
    return qrels, run, [run[i] for i in order]


# edges of ranked_runs(), pinned: a query without a run row (only its qrels); every row of a query
# tied, across every depth, with a negative label and a run query the qrels lack; ties at the
# depth in two queries, doc ids that order differently as strings and as numbers ("d10" < "d2")
EDGE_RUNS = [
    ([("q0", "z", 1)], [], []),
    ([("q0", "d3", 2), ("q0", "d5", -1), ("q0", "z", 0)],
     [("q0", f"d{i}", 1.0) for i in range(1, 7)] + [("unjudged-query", "d1", 1.0)],
     [("unjudged-query", "d1", 1.0)] + [("q0", f"d{i}", 1.0) for i in range(6, 0, -1)]),
    ([("q0", "d2", 3), ("q0", "d4", 1), ("q1", "d1", -1), ("q1", "e", 2), ("q1", "d10a", 0)],
     [("q0", "d0", 2.0), ("q0", "d1", 1.0), ("q0", "d2", 1.0), ("q0", "d10", 1.0), ("q0", "d4", 0.0),
      ("q1", "d10a", 0.5), ("q1", "d1", 0.5), ("q1", "e", -1.0)],
     [("q1", "e", -1.0), ("q0", "d10", 1.0), ("q0", "d4", 0.0), ("q1", "d1", 0.5), ("q0", "d0", 2.0),
      ("q0", "d2", 1.0), ("q1", "d10a", 0.5), ("q0", "d1", 1.0)]),
]


def _ranked(index, rows, depth):
    return ranking.rank_rows(ranking.join(index, Block.of(run_df(rows))), depth, index)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@example(case=EDGE_RUNS[0], depth=1)
@example(case=EDGE_RUNS[1], depth=3)
@example(case=EDGE_RUNS[1], depth=None)
@example(case=EDGE_RUNS[2], depth=2)
@example(case=EDGE_RUNS[2], depth=10)
@given(case=ranked_runs(), depth=st.sampled_from([None, 1, 2, 3, 5, 10]))
def test_a_ranked_run_is_ranked_in_place_as_the_sort_would_rank_it(case, depth):
    """150 draws and the pinned edges (was 300 draws: few queries of few rows, the same region)."""
    qrels, run, shuffled = case
    index = QrelsIndex(qrels_df(qrels))
    rows = ranking.join(index, Block.of(run_df(run)))
    assert ranking.is_ranked(rows.group, rows.score)  # the in-place way is the one tested
    in_place, sorted_ = _ranked(index, run, depth), _ranked(index, shuffled, depth)
    # local query codes follow each file's order of queries: compare by qrels code
    for name in ("rank", "rel", "judged", "score"):
        a, b = getattr(in_place, name), getattr(sorted_, name)
        key_a = np.lexsort((in_place.rank, in_place.codes[in_place.q]))
        key_b = np.lexsort((sorted_.rank, sorted_.codes[sorted_.q]))
        np.testing.assert_array_equal(a[key_a], b[key_b], err_msg=name)
    np.testing.assert_array_equal(in_place.codes[in_place.q], np.sort(in_place.codes[in_place.q]))
    for ranked in (in_place, sorted_):  # how deep the rows go, against its definition
        assert ranked.ranks_held() == (int(ranked.rank.max()) + 1 if len(ranked.rank) else 0)
        for cutoff in (None, 1, 2, 3, 5, 10):
            assert ranked.all_in_top(cutoff) == bool(np.all(ranked.in_top(cutoff)))


def test_ties_in_a_ranked_run_are_put_in_doc_id_descending_order():
    # q1: d1 and d3 tie at 2.0 in file order d1, d3: trec_eval ranks d3 first; d2 and d9 and d10
    # tie at 1.0: d9, d2, d10 in doc id descending (string) order
    qrels = [("q1", "d3", 1), ("q1", "d9", 2)]
    run = [("q1", "d1", 2.0), ("q1", "d3", 2.0), ("q1", "d10", 1.0), ("q1", "d2", 1.0), ("q1", "d9", 1.0)]
    index = QrelsIndex(qrels_df(qrels))
    got = _ranked(index, run, None)
    assert got.rel.tolist() == [1, 0, 2, 0, 0]  # d3, d1, d9, d2, d10
    assert got.judged.tolist() == [True, False, True, False, False]
    assert got.rank.tolist() == [0, 1, 2, 3, 4]


@pytest.mark.parametrize("n", [0, 1, 10, 1000, 100_000])
def test_the_discount_table_holds_the_logarithm_computed_per_row(n):
    ranks = np.random.default_rng(n).integers(0, max(n, 1), size=5000) if n else np.zeros(0, dtype=np.int64)
    table = log2_discounts(n)
    assert len(table) == n
    assert table[ranks].tobytes() == np.log2(ranks + 2.0).tobytes()
    assert table.tobytes() == np.log2(np.arange(n) + 2.0).tobytes()


@settings(max_examples=300, deadline=None)
@given(sizes=st.lists(st.integers(1, 30), min_size=1, max_size=40),
       pool=st.lists(st.sampled_from([0.0, -0.0, 1.0, 0.5, -2.0, 1e300, -1e-300, float("inf"), float("-inf")]),
                     min_size=1, max_size=5),
       data=st.data())
def test_grouped_order_is_the_lexsort_of_score_descending_within_each_query(sizes, pool, data):
    group = np.repeat(np.arange(len(sizes)), sizes).astype(np.int32)
    score = np.array(data.draw(st.lists(st.sampled_from(pool), min_size=len(group), max_size=len(group))))
    got = ranking.grouped_order(group, score)
    expected = np.lexsort((-score, group))
    if got is None:  # declined: only for a matrix mostly padding
        assert len(sizes) * max(sizes) > 2 * len(group) + 4096
    else:
        np.testing.assert_array_equal(got, expected)


def test_grouped_order_declines_rows_not_grouped_by_query():
    assert ranking.grouped_order(np.array([0, 1, 0]), np.array([1.0, 2.0, 3.0])) is None
    # one query of 10,000 rows among 1,000 of one row: the matrix would be mostly padding
    group = np.r_[np.zeros(10_000, dtype=np.int64), np.arange(1, 1001)]
    assert ranking.grouped_order(group, np.ones(len(group))) is None
    got = ranking.grouped_order(np.array([0, 0, 0, 1, 1]), np.array([1.0, 3.0, 2.0, 5.0, 5.0]))
    assert got.tolist() == [1, 2, 0, 3, 4]  # 3.0, 2.0, 1.0; then the tie in file order (stable)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=ranked_runs(), depth=st.sampled_from([1, 2, 3, 5, 10]), data=st.data())
def test_a_ranked_run_cut_as_it_is_joined_ranks_as_the_whole_run(case, depth, data):
    # 150 draws (was 300); the queries the qrels lack inserted between others are drawn (st.data),
    # so no edge is pinned here: the edges above are pinned where the cut is compared with the sort
    qrels, run, shuffled = case
    at = data.draw(st.lists(st.integers(0, len(run)), max_size=3))  # queries the qrels lack, between others
    for k, i in enumerate(sorted(at, reverse=True)):
        while 0 < i < len(run) and run[i - 1][0] == run[i][0]:
            i -= 1  # at a query's start: the run stays grouped
        run = run[:i] + [(f"x{k}", "d1", 9.0), (f"x{k}", "d2", 9.0), (f"x{k}", "d3", 1.0)] + run[i:]
    index = QrelsIndex(qrels_df(qrels))
    for rows in (run, shuffled):  # a ranked run is cut; the shuffled one is joined whole either way
        cut = ranking.join(index, Block.of(run_df(rows)), depth=depth)
        whole = ranking.join(index, Block.of(run_df(rows)))
        assert whole.cut is None and cut.cut in (None, depth)
        a, b = ranking.rank_rows(cut, depth, index), ranking.rank_rows(whole, depth, index)
        for name in ("q", "rank", "rel", "judged", "score", "returned", "codes", "pool_q", "pool_rel"):
            np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
        assert a.nq == b.nq
    if any(len([r for r in run if r[0] == q]) > depth for q in {r[0] for r in run}):
        assert ranking.join(index, Block.of(run_df(run)), depth=depth).cut == depth  # the cut way was tested


def test_rows_cut_at_a_depth_refuse_a_deeper_ranking_and_a_subset():
    index = QrelsIndex(qrels_df([("q1", "d1", 1)]))
    run = [("q1", f"d{i}", 10.0 - i) for i in range(6)]
    rows = ranking.join(index, Block.of(run_df(run)), depth=2)
    assert rows.cut == 2 and len(rows.group) == 2 and rows.returned().tolist() == [6]
    for deeper in (3, None):
        with pytest.raises(ValueError, match="cut at depth 2"):
            ranking.rank_rows(rows, deeper, index)
    with pytest.raises(ValueError, match="only the top of each query"):
        rows.subset(np.array([0]))


def _values(index, ranked, spec):
    """A family's values, hits and returned counts as lists (NaN as a string, to compare equal)."""
    out = family(spec.family).values(index, ranked, spec)
    return [None if a is None else [repr(v) for v in a.tolist()] for a in (out.values, out.hits, out.returned)]


TREC_ORDER_SPECS = [Spec("ndcg", "linear", 3), Spec("ndcg", "exp", 5), Spec("mrr", "zero", 3),
                    Spec("mrr", "ignore", 5), Spec("hitrate", "query", 3), Spec("hitrate", "item", 5)]
SHARING_SPECS = [Spec("mrr", "zero", 3), Spec("mrr", "ignore", 3), Spec("hitrate", "query", 3),
                 Spec("hitrate", "item", 3), Spec("mrr", "ignore", 3, rel=2), Spec("hitrate", "item", 5, rel=2),
                 Spec("mrr", "zero", 5, rel=2), Spec("hitrate", "query", 5)]


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@example(case=EDGE_RUNS[0], shuffled=False)
@example(case=EDGE_RUNS[1], shuffled=True)
@example(case=EDGE_RUNS[2], shuffled=False)
@example(case=EDGE_RUNS[2], shuffled=True)
@given(case=ranked_runs(), shuffled=st.booleans())
def test_rows_tied_below_the_depth_change_no_trec_order_value(case, shuffled):
    """rank_rows(whole_ties=False) leaves out the rows tied with the last one above the depth:
    every measure that ranks by trec_eval's order alone gives the same values, for cutoffs at
    the depth and below it. Both RankedRuns hold their rows by query, in rank order; and MRR's
    first hit read off that order equals its minimum over rows in any order. 100 draws (was 200)
    and the pinned edges, the tie across the depth of 5 among them."""
    qrels, run, other = case
    index = QrelsIndex(qrels_df(qrels))
    rows = other if shuffled else run
    depth = 5
    whole = ranking.rank_rows(ranking.join(index, Block.of(run_df(rows))), depth, index)
    strict = ranking.rank_rows(ranking.join(index, Block.of(run_df(rows))), depth, index, whole_ties=False)
    assert strict.ranks_held() <= depth and len(strict.rank) <= len(whole.rank)
    for ranked in (whole, strict):
        assert np.all(ranked.q[1:] >= ranked.q[:-1])
        np.testing.assert_array_equal(ranked.rank, ranking.group_ranks(ranked.q))
    for spec in TREC_ORDER_SPECS:
        assert _values(index, whole, spec) == _values(index, strict, spec), spec
    # the variants of a family share what they compute alike on one ranking (RankedRun.memo): each
    # variant alone on a fresh ranking gives the same values as all of them on one
    shared = [_values(index, strict, spec) for spec in SHARING_SPECS]
    alone = [_values(index, ranking.rank_rows(ranking.join(index, Block.of(run_df(rows))), depth, index,
                                              whole_ties=False), spec) for spec in SHARING_SPECS]
    assert shared == alone
    perm = np.random.default_rng(len(whole.q)).permutation(len(whole.q))  # rows not by query: minimum.at
    mixed = ranking.RankedRun(q=whole.q[perm], rank=whole.rank[perm], rel=whole.rel[perm], judged=whole.judged[perm],
                              score=whole.score[perm], returned=whole.returned, pool_q=whole.pool_q,
                              pool_rel=whole.pool_rel, nq=whole.nq, codes=whole.codes)
    for spec in TREC_ORDER_SPECS[2:4]:
        assert _values(index, whole, spec) == _values(index, mixed, spec), spec
