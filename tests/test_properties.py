"""Invariants that must hold for any qrels and run (hypothesis: 150 examples each, 100 for the
invariants test_differential's 500 examples check exactly against pytrec_eval on the same
strategy; every test also runs the EDGES cases, pinned).

Was 300 examples each: the examples cost ~10-60 ms each in fixed overhead of the evaluations
(a few rows each), and the draws of ``collections()`` repeat the same small region of inputs."""
from __future__ import annotations

import math
import random

import ir_measures
import pandas as pd
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import ndcg_plugin
from ndcg_plugin import HitRate, HitRate_item, InputError, MRR_ignore, MRR_zero, NDCG_exp, NDCG_lin
from tests.test_differential import collections

pytestmark = pytest.mark.filterwarnings("ignore:.*no query has a value:RuntimeWarning")
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
IMPLIED = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
# the edges, pinned (ids and labels of collections()): no run at all; a query with only negative
# labels, its docs tied; ids that order differently as strings and as numbers, a tie, a run query
# the qrels lack, a qrels query without a relevant doc and without a run; non-ASCII and '#' ids,
# -0.0 against 0.0, a doc the qrels lack, more docs than any k below 5
EDGES = [
    ({"q2": {"a": 1}}, {}),
    ({"1": {"a": -2, "b": -1}}, {"1": {"a": 1.0, "b": 1.0}}),
    ({"1": {"a": 0}, "z": {"10": 4, "9": 3, "B": 0}}, {"z": {"9": 1.0, "10": 1.0, "B": 2.0}, "01": {"a": 3.0}}),
    ({"q2": {"é": 4, "x#1": 2, "doc-1": 1, "doc-10": 1}},
     {"q2": {"é": -5.0, "x#1": 0.0, "doc-1": -0.0, "doc-10": 5.0, "zz": 0.0}}),
]
ALL_AT = [NDCG_lin, NDCG_exp, NDCG_exp(ideal="run"), HitRate, HitRate_item, MRR_zero, MRR_ignore]


def per_query(measures, qrels, run) -> dict:
    return {(m.query_id, str(m.measure)): m.value for m in ir_measures.iter_calc(measures, qrels, run)}


def same(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or abs(a - b) <= 1e-12


@IMPLIED
@example(data=EDGES[0], k=1)
@example(data=EDGES[1], k=12)
@example(data=EDGES[2], k=3)
@example(data=EDGES[3], k=2)
@given(data=collections(), k=st.integers(1, 12))
def test_ndcg_is_between_0_and_1(data, k):
    qrels, run = data
    for v in per_query([NDCG_lin @ k, NDCG_exp @ k, NDCG_lin(ideal="run") @ k, NDCG_exp], qrels, run).values():
        assert 0.0 <= v <= 1.0 + 1e-12


@SETTINGS
@example(data=EDGES[0], k=1)
@example(data=EDGES[1], k=12)
@example(data=EDGES[2], k=3)
@example(data=EDGES[3], k=2)
@given(data=collections(), k=st.integers(1, 12))
def test_ndcg_is_1_for_the_ideal_run(data, k):
    qrels, _ = data
    # every judged doc, scored by its label: the ideal order (ties in label tie in gain too)
    ideal = {q: {d: float(r) for d, r in docs.items()} for q, docs in qrels.items()}
    values = per_query([NDCG_lin @ k, NDCG_exp @ k], qrels, ideal)
    for (q, _), v in values.items():
        has_relevant = any(r > 0 for r in qrels[q].values())
        assert v == pytest.approx(1.0 if has_relevant else 0.0, abs=1e-12)


@SETTINGS
@example(data=EDGES[0], k=1, seed=0)
@example(data=EDGES[1], k=12, seed=1)
@example(data=EDGES[2], k=3, seed=2)
@example(data=EDGES[3], k=2, seed=3)
@given(data=collections(), k=st.integers(1, 12), seed=st.integers(0, 2**16))
def test_permuting_input_lines_changes_no_number(data, k, seed):
    qrels, run = data
    rows = [(q, d, s) for q, docs in run.items() for d, s in docs.items()]
    qrows = [(q, d, r) for q, docs in qrels.items() for d, r in docs.items()]
    rng = random.Random(seed)
    rng.shuffle(rows)
    rng.shuffle(qrows)
    measures = [m @ k for m in ALL_AT]
    a = per_query(measures, qrels, run)
    b = per_query(measures, pd.DataFrame(qrows, columns=["query_id", "doc_id", "relevance"]),
                  pd.DataFrame(rows, columns=["query_id", "doc_id", "score"]))
    assert a.keys() == b.keys() and all(same(a[x], b[x]) for x in a)
    agg_a = ir_measures.calc_aggregate(measures, qrels, run)
    agg_b = ir_measures.calc_aggregate(measures, pd.DataFrame(qrows, columns=["query_id", "doc_id", "relevance"]),
                                       pd.DataFrame(rows, columns=["query_id", "doc_id", "score"]))
    assert all(same(agg_a[m], agg_b[m]) for m in measures)


@SETTINGS
@example(data=EDGES[0], k=1, extra=1)
@example(data=EDGES[1], k=12, extra=2)
@example(data=EDGES[2], k=3, extra=3)
@example(data=EDGES[3], k=2, extra=4)
@given(data=collections(), k=st.integers(1, 12), extra=st.integers(1, 5))
def test_unjudged_docs_below_rank_k_change_no_at_k_measure(data, k, extra):
    qrels, run = data
    padded = {}
    for q, docs in run.items():
        low = min(docs.values()) - 1.0
        padded[q] = {**docs, **{f"unjudged-{i}": low - i for i in range(extra)}}  # ranked after every doc
    measures = [NDCG_lin @ k, NDCG_exp @ k, HitRate @ k, MRR_zero @ k, MRR_ignore @ k]
    a, b = per_query(measures, qrels, run), per_query(measures, qrels, padded)
    for key in a:
        q = key[0]
        if len(run.get(q, {})) >= k:  # the top k is unchanged only when the run already had k docs
            assert same(a[key], b[key]), key


@IMPLIED
@example(data=EDGES[0], k=1, rel=1)
@example(data=EDGES[1], k=12, rel=2)
@example(data=EDGES[2], k=3, rel=3)
@example(data=EDGES[3], k=2, rel=1)
@given(data=collections(), k=st.integers(1, 12), rel=st.integers(1, 3))
def test_hitrate_item_aggregate_is_total_hits_over_total_returned(data, k, rel):
    qrels, run = data
    hits = returned = 0
    for q in qrels:
        top = sorted(run.get(q, {}).items(), key=lambda x: (x[1], x[0]), reverse=True)[:k]
        returned += len(top)
        hits += sum(1 for d, _ in top if qrels[q].get(d, -1) >= rel)
    got = ir_measures.calc_aggregate([HitRate_item(rel=rel) @ k], qrels, run)[HitRate_item(rel=rel) @ k]
    assert got == pytest.approx(hits / returned if returned else 0.0, abs=1e-12)


@IMPLIED
@example(data=EDGES[0], k=1)
@example(data=EDGES[1], k=12)
@example(data=EDGES[2], k=3)
@example(data=EDGES[3], k=2)
@given(data=collections(), k=st.integers(1, 12))
def test_mrr_ignore_is_at_least_mrr_zero(data, k):
    qrels, run = data
    agg = ir_measures.calc_aggregate([MRR_zero @ k, MRR_ignore @ k], qrels, run)
    assert math.isnan(agg[MRR_ignore @ k]) or agg[MRR_ignore @ k] >= agg[MRR_zero @ k] - 1e-12


@settings(max_examples=100, deadline=None)
@example(data=EDGES[0])
@example(data=EDGES[1])
@example(data=EDGES[2])
@example(data=EDGES[3])
@given(data=collections())
def test_a_run_file_given_twice_is_refused_not_double_counted(data):
    _, run = data
    lines = [f"{q} Q0 {d} 0 {s!r} t" for q, docs in run.items() for d, s in docs.items()]
    if not lines:
        return
    with pytest.raises(InputError, match="duplicate"):
        ndcg_plugin.read("\n".join(lines + lines) + "\n", "run")
