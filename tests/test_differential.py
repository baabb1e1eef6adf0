"""Differential tests: every plugin measure equals its pytrec_eval (trec_eval) counterpart to
1e-9 per query on random qrels and runs.

The oracle here is written independently of the engine: pytrec_eval computes, and the only
preprocessing (cut of the run to its top k) uses Python's sorted() on (score desc, doc id
desc). Random data covers graded labels 0..4 and negative labels, score ties, short lists,
queries missing from the run, run queries absent from the qrels, unjudged docs, and queries
whose qrels have no relevant document.
"""
from __future__ import annotations

import math

import ir_measures
import pytest
import pytrec_eval
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import ndcg_plugin  # noqa: F401  (registers the measures)
from ndcg_plugin import HitRate, HitRate_item, MRR_ignore, MRR_zero, NDCG_exp, NDCG_lin

pytestmark = pytest.mark.filterwarnings("ignore:.*no query has a value:RuntimeWarning")

# Draws: the space is small (5 query ids, 11 doc ids, labels -2..4, k 1..12), so a few hundred draws
# repeat its regions; the edges every run must cover are pinned with @example below (was 500 and 300 draws)
EXAMPLES = 200
TOL = 1e-9

QIDS = ["1", "01", "q2", "303", "z"]
DOCS = ["a", "b", "B", "doc-1", "doc-10", "doc-2", "x#1", "é", "10", "9", "zz"]


@st.composite
def collections(draw):
    qrels: dict = {}
    for q in draw(st.lists(st.sampled_from(QIDS), min_size=1, max_size=4, unique=True)):
        docs = draw(st.lists(st.sampled_from(DOCS), min_size=1, max_size=8, unique=True))
        qrels[q] = {d: draw(st.integers(-2, 4)) for d in docs}
    run: dict = {}
    score = st.one_of(st.integers(0, 3).map(float), st.floats(-5, 5, allow_nan=False, width=32))
    for q in draw(st.lists(st.sampled_from(QIDS), min_size=0, max_size=5, unique=True)):
        docs = draw(st.lists(st.sampled_from(DOCS), min_size=1, max_size=len(DOCS), unique=True))
        run[q] = {d: draw(score) for d in docs}
    return qrels, run


# edges pinned: a query whose labels are all negative (retrieved), a qrels query the run misses, a run
# query absent from the qrels, a query without a relevant doc, score ties across relevance grades,
# docs unjudged, the whole doc list retrieved; no run at all; the largest and smallest cutoffs
EDGE_QRELS = {"1": {"a": -2, "b": -1}, "q2": {"a": 0, "b": 3, "B": 4, "doc-1": 1, "é": 2}, "z": {"a": 0},
              "01": {"x#1": 1}}
EDGE_RUN = {"1": {"a": 1.0, "b": 1.0, "10": 2.0}, "q2": {d: float(i % 3) for i, d in enumerate(DOCS)},
            "z": {"9": 0.5, "a": 0.5}, "303": {"a": 1.0}}


def pte(qrels, run, measure, rel=1):
    """pytrec_eval per-query values; queries absent from its output (absent from the run) are 0,
    as trec_eval -c gives."""
    # pytrec_eval 0.5.x corrupts memory on a query whose labels are all negative: give such a
    # query one label-0 doc no run retrieves (no effect on any measure)
    qrels = {q: d if any(r >= 0 for r in d.values()) else {**d, "\x00pad": 0} for q, d in qrels.items()}
    ev = pytrec_eval.RelevanceEvaluator(qrels, {measure}, relevance_level=rel)
    res = ev.evaluate(run)
    key = measure.replace(".", "_")
    return {q: res.get(q, {}).get(key, 0.0) for q in qrels}


def cut(run, k):
    return {q: dict(sorted(d.items(), key=lambda x: (x[1], x[0]), reverse=True)[:k]) for q, d in run.items()}


def ours(measure, qrels, run):
    return {m.query_id: m.value for m in ir_measures.iter_calc([measure], qrels, run)}


def ours_together(measures, qrels, run) -> dict:
    """{measure: {query: value}}, the measures asked in one call (every query that has a value
    for one of them has a Metric for each: for measures that always have a value, as asked alone)."""
    out = {m: {} for m in measures}
    for m in ir_measures.iter_calc(measures, qrels, run):
        out[m.measure][m.query_id] = m.value
    return out


def assert_close(a: dict, b: dict, what):
    assert a.keys() == b.keys(), what
    for q in a:
        x, y = a[q], b[q]
        if math.isnan(y):
            assert math.isnan(x), (what, q, x, y)
        else:
            assert abs(x - y) <= TOL, (what, q, x, y)


def exp_gains(qrels):
    return {q: {d: (2 ** r - 1 if r > 0 else r) for d, r in docs.items()} for q, docs in qrels.items()}


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=collections(), k=st.integers(1, 12), rel=st.integers(1, 3))
@example(data=(EDGE_QRELS, EDGE_RUN), k=1, rel=1)
@example(data=(EDGE_QRELS, EDGE_RUN), k=12, rel=3)
@example(data=(EDGE_QRELS, EDGE_RUN), k=3, rel=2)
@example(data=(EDGE_QRELS, {}), k=5, rel=1)
def test_every_measure_equals_pytrec_eval(data, k, rel):
    """The plugin's measures of an example are asked in one call, except MRR_ignore, asked alone
    (a query without a value then has no Metric, which is checked); was one call per measure."""
    qrels, run = data
    gains = {1: 3, 2: 9, 4: 5}
    got = ours_together([NDCG_lin @ k, NDCG_exp @ k, NDCG_lin, NDCG_lin(judged_only=True) @ k,
                         NDCG_exp(ideal="run") @ k, NDCG_lin(gains=gains) @ k, HitRate(rel=rel) @ k,
                         MRR_zero(rel=rel) @ k, HitRate_item(rel=rel) @ k], qrels, run)
    # NDCG: ndcg_cut.k, linear and on exponentially mapped qrels; judged_only = -J; no cutoff = ndcg
    assert_close(got[NDCG_lin @ k], pte(qrels, run, f"ndcg_cut.{k}"), NDCG_lin @ k)
    assert_close(got[NDCG_exp @ k], pte(exp_gains(qrels), run, f"ndcg_cut.{k}"), NDCG_exp @ k)
    assert_close(got[NDCG_lin], pte(qrels, run, "ndcg"), NDCG_lin)
    # judged_only = trec_eval -J: keep the docs judged >= 0, in order. (pytrec_eval's own
    # judged_docs_only_flag segfaults on some inputs, so the filter is written out here.)
    judged = {q: {d: s for d, s in docs.items() if qrels.get(q, {}).get(d, -1) >= 0} for q, docs in run.items()}
    assert_close(got[NDCG_lin(judged_only=True) @ k], pte(qrels, judged, f"ndcg_cut.{k}"), "judged_only")
    # ideal='run': the ideal of the docs the run retrieved = trec_eval on qrels restricted to them
    restricted = {q: {d: r for d, r in docs.items() if d in run.get(q, {})} for q, docs in qrels.items()}
    assert_close(got[NDCG_exp(ideal="run") @ k], pte(exp_gains(restricted), run, f"ndcg_cut.{k}"), "ideal=run")
    mapped = {q: {d: gains.get(r, r) for d, r in docs.items()} for q, docs in qrels.items()}
    assert_close(got[NDCG_lin(gains=gains) @ k], pte(mapped, run, f"ndcg_cut.{k}"), "gains")
    # HitRate = success.k with -l rel
    assert_close(got[HitRate(rel=rel) @ k], pte(qrels, run, f"success.{k}", rel), "HitRate")
    # MRR = recip_rank on the run cut to k (-M k)
    rr = pte(qrels, cut(run, k), "recip_rank", rel)
    assert_close(got[MRR_zero(rel=rel) @ k], rr, "MRR_zero")
    # a query without a value yields no Metric
    assert_close(ours(MRR_ignore(rel=rel) @ k, qrels, run), {q: v for q, v in rr.items() if v > 0}, "MRR_ignore")
    # HitRate_item: per query P.k * k hits over min(k, num_ret); aggregate micro
    p = pte(qrels, cut(run, k), f"P.{k}", rel)
    n = pte(qrels, cut(run, k), "num_ret", rel)
    per_q = {q: (p[q] * k / n[q] if n[q] else 0.0) for q in qrels}
    assert_close(got[HitRate_item(rel=rel) @ k], per_q, "HitRate_item")
    # aggregates through ir_measures.calc_aggregate
    agg = ir_measures.calc_aggregate([HitRate_item(rel=rel) @ k, MRR_ignore(rel=rel) @ k, MRR_zero(rel=rel) @ k,
                                      NDCG_lin @ k], qrels, run)
    total_ret = sum(n.values())
    micro = sum(p[q] * k for q in qrels) / total_ret if total_ret else 0.0
    assert abs(agg[HitRate_item(rel=rel) @ k] - micro) <= TOL
    hits = [v for v in rr.values() if v > 0]
    if hits:
        assert abs(agg[MRR_ignore(rel=rel) @ k] - sum(hits) / len(hits)) <= TOL
    else:
        assert math.isnan(agg[MRR_ignore(rel=rel) @ k])
    assert abs(agg[MRR_zero(rel=rel) @ k] - sum(rr.values()) / len(qrels)) <= TOL
    ndcg = pte(qrels, run, f"ndcg_cut.{k}")
    assert abs(agg[NDCG_lin @ k] - sum(ndcg.values()) / len(qrels)) <= TOL


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=collections(), k=st.integers(1, 12))
def test_crosscheck_reports_match_on_random_data(data, k):
    qrels, run = data
    measures = [m @ k for m in (NDCG_lin, NDCG_exp, HitRate, HitRate_item, MRR_zero, MRR_ignore)]
    rows = ndcg_plugin.crosscheck(qrels, run, measures)
    assert all(r.verdict == "match" for r in rows), rows


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=collections(), k=st.integers(1, 12))
def test_builtin_ndcg_served_by_plugin_equals_pytrec_eval(data, k):
    qrels, run = data
    provider = ir_measures.providers.registry["ndcg_plugin"]
    res = {m.query_id: m.value for m in provider.iter_calc([ir_measures.nDCG @ k], qrels, run)}
    assert_close(res, pte(qrels, run, f"ndcg_cut.{k}"), "nDCG@k by ndcg_plugin")
    res = {m.query_id: m.value for m in provider.iter_calc([ir_measures.nDCG(dcg="exp-log2") @ k], qrels, run)}
    assert_close(res, pte(exp_gains(qrels), run, f"ndcg_cut.{k}"), "nDCG(dcg='exp-log2')@k by ndcg_plugin")


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=collections(), k=st.integers(1, 6), seed=st.integers(0, 2**16), pad=st.booleans())
@example(data=(EDGE_QRELS, EDGE_RUN), k=1, seed=0, pad=False)
@example(data=(EDGE_QRELS, EDGE_RUN), k=6, seed=1, pad=True)
@example(data=(EDGE_QRELS, {"q2": EDGE_RUN["q2"]}), k=3, seed=2, pad=False)
def test_row_order_does_not_change_any_number(data, k, seed, pad):
    """The engine's shortcuts (a ranked run: top rows read off directly; a grouped run:
    np.partition, with equal list lengths as a plain reshape; any other order: a sort) agree
    with each other and with pytrec_eval, whatever order the run's lines come in."""
    import random

    import pandas as pd

    qrels, run = data
    if pad:  # equal list lengths per query, to take the reshape path
        width = max((len(d) for d in run.values()), default=0)
        run = {q: {**d, **{f"pad{i}": -9.0 for i in range(width - len(d))}} for q, d in run.items()}
    rows = [(q, d, s) for q, docs in run.items() for d, s in docs.items()]
    ranked = sorted(rows, key=lambda r: (r[0], r[2], r[1]), reverse=True)  # grouped, score desc, doc desc
    shuffled = rows[:]
    random.Random(seed).shuffle(shuffled)
    measures = [NDCG_lin @ k, NDCG_exp(ideal="run") @ k, HitRate_item @ k, MRR_ignore @ k,
                NDCG_lin(judged_only=True) @ k]
    expected = {(m.query_id, str(m.measure)): m.value for m in ir_measures.iter_calc(measures, qrels, run)}
    assert_close({q: v for (q, m), v in expected.items() if m == str(NDCG_lin @ k)},
                 pte(qrels, run, f"ndcg_cut.{k}"), "dict input")
    for order in (ranked, shuffled, rows):
        df = pd.DataFrame(order, columns=["query_id", "doc_id", "score"])
        got = {(m.query_id, str(m.measure)): m.value for m in ir_measures.iter_calc(measures, qrels, df)}
        assert got.keys() == expected.keys()
        for key, value in expected.items():
            assert (math.isnan(value) and math.isnan(got[key])) or abs(got[key] - value) <= TOL, (key, value, got[key])
