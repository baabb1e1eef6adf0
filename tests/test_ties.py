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


def brute_force(measure, qrels, run, ignore=False):
    """The mean of the measure over every order of the tied docs: each order becomes one query
    of its own (scores strictly decreasing along it), evaluated with the trec tie rule."""
    scores = run["q"]
    groups = [sorted(d for d in scores if scores[d] == s) for s in sorted(set(scores.values()), reverse=True)]
    all_qrels, all_runs = {}, {}
    for i, perm in enumerate(itertools.product(*(itertools.permutations(g) for g in groups))):
        ranking = [d for group in perm for d in group]
        all_qrels[f"p{i}"] = qrels["q"]
        all_runs[f"p{i}"] = {d: float(len(ranking) - j) for j, d in enumerate(ranking)}
    values = [m.value for m in ir_measures.iter_calc([measure], all_qrels, all_runs)]
    if ignore:
        values = [v for v in values if not math.isnan(v)]
        return math.nan if not values else sum(values) / len(values)
    return sum(values) / len(values)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=tied_query(), k=st.integers(1, 8), rel=st.integers(1, 2))
def test_closed_forms_equal_brute_force_over_tied_orders(data, k, rel):
    qrels, run = data
    for family, kwargs in ((NDCG_lin, {}), (NDCG_exp, {}), (NDCG_lin, {"ideal": "run"}), (HitRate, {"rel": rel}),
                           (HitRate_item, {"rel": rel}), (MRR_zero, {"rel": rel}), (MRR_ignore, {"rel": rel})):
        avg = family(ties="average", **kwargs) @ k
        trec = family(**kwargs) @ k
        got = [m.value for m in ir_measures.iter_calc([avg], qrels, run)]
        expected = brute_force(trec, qrels, run, ignore=family is MRR_ignore)
        if math.isnan(expected):
            assert got == [], (avg, got)  # no value (MRR_ignore): no Metric
        else:
            assert len(got) == 1 and got[0] == pytest.approx(expected, abs=1e-12), (avg, got, expected)


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
