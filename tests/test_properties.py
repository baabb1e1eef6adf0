"""Invariants that must hold for any qrels and run (hypothesis, 300 examples each)."""
from __future__ import annotations

import math
import random

import ir_measures
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ndcg_plugin
from ndcg_plugin import HitRate, HitRate_item, InputError, MRR_ignore, MRR_zero, NDCG_exp, NDCG_lin
from tests.test_differential import collections

pytestmark = pytest.mark.filterwarnings("ignore:.*no query has a value:RuntimeWarning")
SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
ALL_AT = [NDCG_lin, NDCG_exp, NDCG_exp(ideal="run"), HitRate, HitRate_item, MRR_zero, MRR_ignore]


def per_query(measures, qrels, run) -> dict:
    return {(m.query_id, str(m.measure)): m.value for m in ir_measures.iter_calc(measures, qrels, run)}


def same(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or abs(a - b) <= 1e-12


@SETTINGS
@given(data=collections(), k=st.integers(1, 12))
def test_ndcg_is_between_0_and_1(data, k):
    qrels, run = data
    for v in per_query([NDCG_lin @ k, NDCG_exp @ k, NDCG_lin(ideal="run") @ k, NDCG_exp], qrels, run).values():
        assert 0.0 <= v <= 1.0 + 1e-12


@SETTINGS
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


@SETTINGS
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


@SETTINGS
@given(data=collections(), k=st.integers(1, 12))
def test_mrr_ignore_is_at_least_mrr_zero(data, k):
    qrels, run = data
    agg = ir_measures.calc_aggregate([MRR_zero @ k, MRR_ignore @ k], qrels, run)
    assert math.isnan(agg[MRR_ignore @ k]) or agg[MRR_ignore @ k] >= agg[MRR_zero @ k] - 1e-12


@settings(max_examples=300, deadline=None)
@given(data=collections())
def test_a_run_file_given_twice_is_refused_not_double_counted(data):
    _, run = data
    lines = [f"{q} Q0 {d} 0 {s!r} t" for q, docs in run.items() for d, s in docs.items()]
    if not lines:
        return
    with pytest.raises(InputError, match="duplicate"):
        ndcg_plugin.read("\n".join(lines + lines) + "\n", "run")
