"""ties="average": the closed forms equal brute-force enumeration of every order of the tied
docs, and NDCG_lin(ideal="run", ties="average") equals sklearn's ndcg_score(ignore_ties=False)."""
from __future__ import annotations

import itertools
import math

import ir_measures
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ndcg_plugin import HitRate, HitRate_item, MRR_ignore, MRR_zero, NDCG_exp, NDCG_lin

pytestmark = pytest.mark.filterwarnings("ignore:.*no query has a value:RuntimeWarning")


@st.composite
def tied_query(draw):
    n = draw(st.integers(1, 6))
    scores = draw(st.lists(st.integers(0, 2), min_size=n, max_size=n))  # few values: many ties
    labels = draw(st.lists(st.integers(-1, 3), min_size=n, max_size=n))
    judged = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    extra = draw(st.lists(st.integers(0, 3), max_size=3))  # judged docs the run did not retrieve
    docs = [f"d{i}" for i in range(n)]
    qrels = {"q": {d: lab for d, lab, j in zip(docs, labels, judged, strict=True) if j}}
    qrels["q"].update({f"x{i}": lab for i, lab in enumerate(extra)})
    if not qrels["q"]:
        qrels["q"]["x-none"] = 0
    run = {"q": {d: float(s) for d, s in zip(docs, scores, strict=True)}}
    return qrels, run


def brute_force(measures, qrels, run, ignore=()):
    """{measure: the mean of its values over every order of the tied docs}: each order becomes one
    query of its own (scores strictly decreasing along it), evaluated with the trec tie rule. For
    the measures in ``ignore`` (MRR_ignore) the orders without a value are left out of the mean
    (NaN when none has one)."""
    scores = run["q"]
    groups = [sorted(d for d in scores if scores[d] == s) for s in sorted(set(scores.values()), reverse=True)]
    all_qrels, all_runs = {}, {}
    for i, perm in enumerate(itertools.product(*(itertools.permutations(g) for g in groups))):
        ranking = [d for group in perm for d in group]
        all_qrels[f"p{i}"] = qrels["q"]
        all_runs[f"p{i}"] = {d: float(len(ranking) - j) for j, d in enumerate(ranking)}
    values = {m: [] for m in measures}
    for metric in ir_measures.iter_calc(measures, all_qrels, all_runs):
        values[metric.measure].append(metric.value)
    means = {}
    for measure, found in values.items():
        if measure in ignore:
            found = [v for v in found if not math.isnan(v)]
            means[measure] = math.nan if not found else sum(found) / len(found)
        else:
            means[measure] = sum(found) / len(found)
    return means


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=tied_query(), k=st.integers(1, 8), rel=st.integers(1, 2))
def test_closed_forms_equal_brute_force_over_tied_orders(data, k, rel):
    """Each measure with ties="average" against the brute force over the orders of the tied docs.
    The brute force computes the seven measures in one call, and so does the measure side except
    MRR_ignore, computed alone: asked alone, a query without a value yields no Metric (asked with
    others, a NaN). Was one call per measure and side: 14 evaluations of a few rows per example."""
    qrels, run = data
    families = ((NDCG_lin, {}), (NDCG_exp, {}), (NDCG_lin, {"ideal": "run"}), (HitRate, {"rel": rel}),
                (HitRate_item, {"rel": rel}), (MRR_zero, {"rel": rel}), (MRR_ignore, {"rel": rel}))
    pairs = [(family(ties="average", **kwargs) @ k, family(**kwargs) @ k) for family, kwargs in families]
    got = {avg: [] for avg, _ in pairs}
    for group in ([avg for avg, _ in pairs[:-1]], [pairs[-1][0]]):
        for metric in ir_measures.iter_calc(group, qrels, run):
            got[metric.measure].append(metric.value)
    expected = brute_force([trec for _, trec in pairs], qrels, run, ignore={pairs[-1][1]})
    for avg, trec in pairs:
        if math.isnan(expected[trec]):
            assert got[avg] == [], (avg, got[avg])  # no value (MRR_ignore): no Metric
        else:
            assert len(got[avg]) == 1 and got[avg][0] == pytest.approx(expected[trec], abs=1e-12), (
                avg, got[avg], expected[trec])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n=st.integers(2, 12), k=st.integers(1, 12), seed=st.integers(0, 2**16))
def test_ndcg_average_equals_sklearn_with_ties(n, k, seed):
    from sklearn.metrics import ndcg_score

    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 4, size=n)
    scores = rng.integers(0, 3, size=n).astype(float)  # ties
    qrels = {"q": {f"d{i}": int(lab) for i, lab in enumerate(labels)}}
    run = {"q": {f"d{i}": float(s) for i, s in enumerate(scores)}}
    m = NDCG_lin(ideal="run", ties="average") @ k
    got = ir_measures.calc_aggregate([m], qrels, run)[m]
    expected = ndcg_score([labels], [scores], k=k, ignore_ties=False)
    assert got == pytest.approx(expected, abs=1e-12)
