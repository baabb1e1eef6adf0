"""PyTerrier's ``pt.Experiment`` with the plugin's measures (the README's "PyTerrier" section).

pt.Experiment (PyTerrier 1.x) takes every measure's per-query values from
``ir_measures.iter_calc`` and averages them itself: the sum of the values it got over the
number of queries it got values for, for every measure alike. The expected numbers below are
computed by hand from the small qrels and runs here, not by the plugin.
"""
from __future__ import annotations

import math
import warnings

import ir_measures
import pandas as pd
import pytest

from ndcg_plugin import HitRate, HitRate_item, MRR_ignore

pt = pytest.importorskip("pyterrier", reason="python-terrier is not installed (pip install '.[pyterrier]')")

K = 2
TOPICS = pd.DataFrame({"qid": ["q1", "q2", "q3", "q4"], "query": ["one", "two", "three", "four"]})
# one relevant doc per query (q1 also judges b non-relevant)
QRELS = pd.DataFrame({"qid": ["q1", "q1", "q2", "q3", "q4"], "docno": ["a", "b", "c", "d", "e"],
                      "label": [1, 0, 1, 1, 1]})


def _run(rows: list[tuple[str, str, float]]) -> pd.DataFrame:
    run = pd.DataFrame(rows, columns=["qid", "docno", "score"])
    run["rank"] = run.groupby("qid")["score"].rank(ascending=False, method="first").astype(int) - 1
    return run


# Run A, top 2 of each query:
#   q1: b, a  -> first relevant at rank 2: RR 1/2;  1 hit of 2 returned
#   q2: x, y  -> no relevant doc in the top 2: no MRR_ignore value;  0 hits of 2
#   q3: d     -> one doc returned (fewer than k): RR 1;  1 hit of 1
#   q4: e, f  -> RR 1;  1 hit of 2
RUN_A = _run([("q1", "b", 3.0), ("q1", "a", 2.0), ("q1", "z", 1.0),
              ("q2", "x", 3.0), ("q2", "y", 2.0), ("q2", "c", 1.0),
              ("q3", "d", 1.0),
              ("q4", "e", 3.0), ("q4", "f", 2.0), ("q4", "g", 1.0)])
# Run B: as A, but q1's relevant doc first (RR 1); the same queries have an MRR_ignore value
RUN_B = _run([("q1", "a", 5.0), ("q1", "b", 3.0), ("q1", "z", 1.0),
              ("q2", "x", 3.0), ("q2", "y", 2.0), ("q2", "c", 1.0),
              ("q3", "d", 1.0),
              ("q4", "e", 3.0), ("q4", "f", 2.0), ("q4", "g", 1.0)])

RR_A = {"q1": 1 / 2, "q3": 1.0, "q4": 1.0}
MRR_IGNORE_A = (1 / 2 + 1 + 1) / 3                  # mean over the 3 queries with a value
MRR_IGNORE_B = (1 + 1 + 1) / 3
HITRATE_ITEM_MICRO_A = (1 + 0 + 1 + 1) / (2 + 2 + 1 + 2)  # 3/7: total hits / total returned
HITRATE_ITEM_MACRO_A = (1 / 2 + 0 + 1 + 1 / 2) / 4        # 1/2: mean of the per-query ratios
# paired t-test of B - A over q1, q3, q4: d = (1/2, 0, 0), mean 1/6, sd sqrt(1/12), t = 1,
# 2 degrees of freedom: two-sided p = 1 - t / sqrt(t^2 + 2) = 1 - 1/sqrt(3)
P_VALUE_B_VS_A = 1 - 1 / math.sqrt(3)


def _experiment(systems: list, measures: list, **kwargs):
    with warnings.catch_warnings():
        # pt.Experiment's own notices (shared pipeline prefixes, topics it fills with NaN)
        warnings.simplefilter("ignore", UserWarning)
        return pt.Experiment(systems, TOPICS, QRELS, measures, names=[f"s{i}" for i in range(len(systems))],
                             **kwargs)


def _row(table: pd.DataFrame, name: str = "s0") -> pd.Series:
    return table.set_index("name").loc[name]


def test_mrr_ignore_alone_gives_the_mean_over_queries_with_a_value():
    table = _experiment([RUN_A], [MRR_ignore @ K])
    assert _row(table)[str(MRR_ignore @ K)] == pytest.approx(MRR_IGNORE_A, abs=1e-12)
    # the same through a transformer, the tree plan and batches, and rounded
    system = pt.Transformer.from_df(RUN_A)
    for kwargs in ({}, {"plan": "tree", "verbose": False}, {"batch_size": 2}):
        table = _experiment([system], [MRR_ignore @ K], **kwargs)
        assert _row(table)[str(MRR_ignore @ K)] == pytest.approx(MRR_IGNORE_A, abs=1e-12), kwargs
    table = _experiment([RUN_A], [MRR_ignore @ K], round=4)
    assert _row(table)[str(MRR_ignore @ K)] == 0.8333
    # as ir-measures aggregates it
    qrels, run = pt.model.to_ir_measures(QRELS), pt.model.to_ir_measures(RUN_A)
    assert ir_measures.calc_aggregate([MRR_ignore @ K], qrels, run)[MRR_ignore @ K] == pytest.approx(MRR_IGNORE_A)
    if hasattr(pt, "java"):
        assert not pt.java.started()  # no Java, no Terrier jars: runs given as DataFrames


def test_mrr_ignore_with_a_baseline_has_a_p_value():
    table = _experiment([pt.Transformer.from_df(RUN_A), RUN_B], [MRR_ignore @ K], baseline=0)
    a, b = _row(table, "s0"), _row(table, "s1")
    m = str(MRR_ignore @ K)
    assert (a[m], b[m]) == (pytest.approx(MRR_IGNORE_A), pytest.approx(MRR_IGNORE_B))
    assert (b[f"{m} +"], b[f"{m} -"]) == (1, 0)  # q1 better, none worse
    assert b[f"{m} p-value"] == pytest.approx(P_VALUE_B_VS_A, abs=1e-9)
    # a system without a value for a query the baseline has one for: PyTerrier looks it up and
    # fails (KeyError naming the measure), as the README says
    run_c = RUN_A[~((RUN_A["qid"] == "q4") & (RUN_A["docno"] == "e"))]  # q4: f, g: no relevant doc
    with pytest.raises(KeyError, match="MRR_ignore"):
        _experiment([RUN_A, run_c], [MRR_ignore @ K], baseline=0)


def test_mrr_ignore_per_query_values():
    table = _experiment([RUN_A], [MRR_ignore @ K], perquery=True)
    values = table[table["measure"] == str(MRR_ignore @ K)].set_index("qid")["value"]
    assert values.dropna().to_dict() == RR_A
    # q2 has no value: the plugin yields none; pt.Experiment may list it as NaN (PyTerrier 1.x
    # fills topics without any Metric with NaN, warning that they are "not found in qrels")
    assert set(values.index[values.isna()]) <= {"q2"}


@pytest.mark.parametrize("other", [HitRate @ K, ir_measures.nDCG @ K], ids=["plugin", "pytrec_eval"])
def test_mrr_ignore_next_to_other_measures_is_nan_in_the_table(other):
    # q2 has a value for the other measure, so it gets one Metric per measure (MRR_ignore's NaN):
    # pt.Experiment's plain mean is then NaN (the README says so and what to use instead)
    table = _experiment([RUN_A], [MRR_ignore @ K, other])
    assert math.isnan(_row(table)[str(MRR_ignore @ K)])
    if other == HitRate @ K:
        assert _row(table)[str(other)] == pytest.approx(3 / 4)


def test_hitrate_item_is_a_macro_average_in_pt_experiment():
    table = _experiment([RUN_A], [HitRate_item @ K])
    # pt.Experiment averages the per-query ratios (macro); the measure is the micro average
    assert _row(table)[str(HitRate_item @ K)] == pytest.approx(HITRATE_ITEM_MACRO_A, abs=1e-12)
    assert HITRATE_ITEM_MACRO_A != pytest.approx(HITRATE_ITEM_MICRO_A)
    qrels, run = pt.model.to_ir_measures(QRELS), pt.model.to_ir_measures(RUN_A)
    agg = ir_measures.calc_aggregate([HitRate_item @ K], qrels, run)[HitRate_item @ K]
    assert agg == pytest.approx(HITRATE_ITEM_MICRO_A, abs=1e-12)
    # per query, pt.Experiment has the right values
    per_query = _experiment([RUN_A], [HitRate_item @ K], perquery=True)
    assert per_query.set_index("qid")["value"].to_dict() == {"q1": 0.5, "q2": 0.0, "q3": 1.0, "q4": 0.5}
