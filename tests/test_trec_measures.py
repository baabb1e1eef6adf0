"""The native trec_eval families (ap, precision, bpref, counts): AP, AP@k, P@k, R@k, Rprec, Bpref,
NumQ, NumRet, NumRet(rel=r), NumRel, as trec_eval 10.0 computes map, map_cut.k, P.k, recall.k,
Rprec, bpref and the num_* counts.

Oracles: hand computations written out below (one per convention the families name in
docs/measures.md), pytrec_eval (trec_eval 9.0's C code) on random qrels and runs, and the trec_eval
10.0 binary when NDCG_PLUGIN_TREC_EVAL names one. Then: every way the engine runs gives the same
doubles; the bugs of issue 41 through the command's entry points; the Spark engine's digits.
"""
from __future__ import annotations

import math
import os
import random
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pytest
import pytrec_eval
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from ir_measures import parse_measure

import ndcg_plugin  # noqa: F401  (registers the measures)
from ndcg_plugin import sizes
from ndcg_plugin.arrays import speedups
from ndcg_plugin.engine.block import compute_in_blocks
from ndcg_plugin.engine.stream import compute_file
from ndcg_plugin.evaluation import Evaluation, ReadOptions
from ndcg_plugin.measures import spec_of
from tests.helpers import qrels_df, run_cli, run_df, run_main

TREC_EVAL = os.environ.get("NDCG_PLUGIN_TREC_EVAL")
NEEDS_BINARY = pytest.mark.skipif(not TREC_EVAL, reason="set NDCG_PLUGIN_TREC_EVAL to a trec_eval 10.0 binary "
                                                        "(e.g. /tmp/te/trec_eval) to compare with it")


def _frames(qrels: dict, run: dict):
    """{q: {doc: label}}, {q: {doc: score}} as the engine's DataFrames (rows grouped by query)."""
    return (qrels_df([(q, d, r) for q, docs in qrels.items() for d, r in docs.items()]),
            run_df([(q, d, float(s)) for q, docs in run.items() for d, s in docs.items()]))


def engine(qrels: dict, run: dict, names: list[str]) -> dict[str, dict[str, float]]:
    """{measure name: {query: value}} from the engine (an Evaluation of the run in memory), every
    qrels query."""
    measures = [parse_measure(n) for n in names]
    ev = Evaluation(measures, qrels=_frames(qrels, run)[0])
    assert all(ev.routes[m] == "ndcg_plugin" for m in measures)  # the families, not pytrec_eval
    res = ev.compute(_frames(qrels, run)[1], per_query=True)
    return {n: dict(zip(res.query_ids, res.values[m].values.tolist(), strict=True))
            for n, m in zip(names, measures, strict=True)}


def close(got: float, want: float) -> bool:
    """The same double, or one ulp apart."""
    return got == want or abs(got - want) <= math.ulp(want)


# --- 1. worked examples, one per convention the families name ------------------------------------

def test_ap_divides_by_every_relevant_doc():
    """q1 judges A, C, E, F relevant (4), B non-relevant; the run ranks A B C D E (D unjudged), F
    not retrieved. Relevant at ranks 1, 3, 5: precisions 1/1, 2/3, 3/5.
      AP   = (1/1 + 2/3 + 3/5) / 4 = 2.2667 / 4 = 0.5667
      AP@3 = (1/1 + 2/3) / 4 = 0.4167   (not / min(4, 3) = 0.5556, Spark's RankingEvaluator)
      AP@2 = (1/1) / 4 = 0.25           (not / min(4, 2) = 0.5)
    q2 judges nothing relevant: 0 (no division by 0). With rel=2 only C (label 2) is relevant:
      AP(rel=2) = (1/3) / 1 = 0.3333."""
    qrels = {"q1": {"A": 1, "B": 0, "C": 2, "E": 1, "F": 1}, "q2": {"G": 0}}
    run = {"q1": {"A": 5, "B": 4, "C": 3, "D": 2, "E": 1}, "q2": {"G": 1}}
    got = engine(qrels, run, ["AP", "AP@3", "AP@2", "AP(rel=2)"])
    assert close(got["AP"]["q1"], (1 / 1 + 2 / 3 + 3 / 5) / 4)
    assert close(got["AP@3"]["q1"], (1 / 1 + 2 / 3) / 4)
    assert got["AP@2"]["q1"] == 0.25
    assert close(got["AP(rel=2)"]["q1"], (1 / 3) / 1)
    assert got["AP"]["q2"] == got["AP@3"]["q2"] == 0.0


def test_precision_divides_by_k_even_for_short_runs():
    """q1's run returns 2 docs, both relevant: P@5 = 2 / 5 = 0.4 (SetP would say 2 / 2 = 1), P@1 =
    1 / 1, P@2 = 2 / 2. q2 returns 1 doc of label 1: with rel=2, P(rel=2)@3 = 0 / 3; with rel=1 1/3.
    q3 is missing from the run: 0."""
    qrels = {"q1": {"a": 1, "b": 3}, "q2": {"c": 1}, "q3": {"d": 1}}
    run = {"q1": {"a": 2, "b": 1}, "q2": {"c": 1}}
    got = engine(qrels, run, ["P@5", "P@1", "P@2", "P@3", "P(rel=2)@3", "P(rel=2)@5"])
    assert got["P@5"] == {"q1": 0.4, "q2": 0.2, "q3": 0.0}
    assert got["P@1"]["q1"] == 1.0 and got["P@2"]["q1"] == 1.0
    assert got["P@3"]["q2"] == 1 / 3 and got["P(rel=2)@3"]["q2"] == 0.0
    assert got["P(rel=2)@5"]["q1"] == 1 / 5  # only b (label 3) counts


def test_iprec_rounds_the_recall_level_as_trec_eval_10():
    """trec_eval 10.0 turns a recall level r into c = lround(r * num_rel) relevant docs (9.0 and
    pytrec_eval: (long)(r * num_rel + 0.9)); IPrec is the best precision at the c-th relevant doc or
    later, and at least num_rel_ret / num_ret.
    q1: 2 relevant, retrieved at ranks 1 and 4 of 4: P_1 = 1/1, P_2 = 2/4; floor 2/4.
      IPrec@0.6: 10.0: c = lround(1.2) = 1 -> max(1, 0.5) = 1.0; 9.0: c = (long)2.1 = 2 -> 0.5.
    q2: 5 relevant, 3 retrieved at ranks 1, 2, 10 of 10: P = 1, 1, 3/10; floor 3/10.
      IPrec@0.5: c = lround(2.5) = 3 (halves away from 0, not to even: 2) -> max(3/10, 3/10) = 0.3.
      IPrec@0.8: c = lround(4.0) = 4 > 3 retrieved -> 0.  IPrec@0: c = 0 -> every hit: 1.0.
    q3 is missing from the run (-c: one unjudged doc, 0 / 1): IPrec@0 = 0."""
    qrels = {"q1": {"a": 1, "b": 0, "d": 1}, "q2": {f"r{i}": 1 for i in range(5)}, "q3": {"x": 1}}
    run = {"q1": {"a": 4, "b": 3, "c": 2, "d": 1},
           "q2": {"r0": 10, "r1": 9, **{f"n{i}": 8 - i for i in range(7)}, "r2": 0}}
    got = engine(qrels, run, ["IPrec@0.6", "IPrec@0.5", "IPrec@0.8", "IPrec@0.0"])
    assert got["IPrec@0.6"]["q1"] == 1.0
    assert pytrec_eval.RelevanceEvaluator(qrels, {"iprec_at_recall"}).evaluate(
        {"q1": run["q1"]})["q1"]["iprec_at_recall_0.60"] == 0.5  # the 9.0 rounding, for the record
    assert got["IPrec@0.5"]["q2"] == 3 / 10 and got["IPrec@0.8"]["q2"] == 0.0 and got["IPrec@0.0"]["q2"] == 1.0
    assert got["IPrec@0.0"]["q3"] == 0.0


def test_bpref_skips_unjudged_and_negative_labels():
    """q1: R1 (1), R2 (2), R3 (1, not retrieved) relevant: R = 3; N1, N2 (0) judged non-relevant:
    N = 2; M has label -1 (in the pool, unjudged: neither); U is not in the qrels. The run ranks
    U M N1 R1 R2 N2. Walking it: U skipped; M skipped; N1: 1 non-relevant above;
    R1: 1 - min(1, 3) / min(2, 3) = 1/2; R2: 1 - 1/2 = 1/2; N2 after them.
      Bpref = (1/2 + 1/2) / 3 = 1/3
    Counting M non-relevant would give N = 3 and 2 above R1 and R2: (1/3 + 1/3) / 3 = 2/9 (only in
    N: (2/3 + 2/3) / 3; only above: (0 + 0) / 3); counting U above them: (0 + 0) / 3.
    q2: a (2), e (3), b (1) relevant at rel=1, c and f (0) non-relevant, d (-2) neither; the run
    ranks a b d e c: a: nothing above: 1; b: 1; d skipped; e: 1. Bpref = 3 / 3 = 1. At rel=2:
    R = 2 (a, e), N = 3 (b, c, f); a: 1; b non-relevant; e: 1 - min(1, 2) / min(3, 2) = 1/2:
      Bpref(rel=2) = (1 + 1/2) / 2 = 0.75.
    q3 has no relevant doc: 0."""
    qrels = {"q1": {"R1": 1, "R2": 2, "R3": 1, "N1": 0, "N2": 0, "M": -1},
             "q2": {"a": 2, "e": 3, "b": 1, "c": 0, "f": 0, "d": -2}, "q3": {"x": 0}}
    run = {"q1": {"U": 6, "M": 5, "N1": 4, "R1": 3, "R2": 2, "N2": 1}, "q2": {"a": 5, "b": 4, "d": 3, "e": 2, "c": 1},
           "q3": {"x": 1}}
    got = engine(qrels, run, ["Bpref", "Bpref(rel=2)"])
    assert close(got["Bpref"]["q1"], (1 / 2 + 1 / 2) / 3)
    assert got["Bpref"]["q2"] == 1.0 and got["Bpref"]["q3"] == 0.0
    assert got["Bpref(rel=2)"]["q2"] == 0.75


def test_counts_of_a_query_missing_from_the_run_are_trec_eval_c():
    """q2 is in the qrels (labels 1, 2, 0, -1), not in the run: trec_eval -c evaluates it with an
    empty ranking: NumQ 1, NumRel 2 (labels >= 1), NumRel(rel=2) 1, NumRet 0, NumRet(rel=1) 0
    (ir-measures' pytrec_eval provider gives 0 for all four). q1 returns a (1), b (unjudged), c (0):
    NumRet 3, NumRet(rel=1) 1, NumRel 1. The summaries are sums: NumQ 2, NumRel 3, NumRet 3. The
    ratios of q2 are 0: AP, P@5, Bpref."""
    qrels = {"q1": {"a": 1, "c": 0}, "q2": {"d": 1, "e": 2, "f": 0, "g": -1}}
    run = {"q1": {"a": 3, "b": 2, "c": 1}, "q9": {"z": 1}}
    names = ["NumQ", "NumRel", "NumRel(rel=2)", "NumRet", "NumRet(rel=1)", "NumRelRet", "AP", "P@5", "Bpref"]
    got = engine(qrels, run, names)
    assert {n: got[n]["q2"] for n in names} == {"NumQ": 1, "NumRel": 2, "NumRel(rel=2)": 1, "NumRet": 0,
                                                  "NumRet(rel=1)": 0, "NumRelRet": 0, "AP": 0, "P@5": 0, "Bpref": 0}
    assert {n: got[n]["q1"] for n in names[:6]} == {"NumQ": 1, "NumRel": 1, "NumRel(rel=2)": 0, "NumRet": 3,
                                                      "NumRet(rel=1)": 1, "NumRelRet": 1}
    qd, rd = _frames(qrels, run)
    agg = Evaluation([parse_measure(n) for n in ("NumQ", "NumRel", "NumRet")], qrels=qd).compute(rd).aggregates
    assert {str(m): v for m, v in agg.items()} == {"NumQ": 2, "NumRel": 3, "NumRet": 3}


# q1 judges a (2), b (1), c (2), d (0), e (1, not retrieved); the run ranks a x b d c (x unjudged)
WORKED_QRELS = {"q1": {"a": 2, "b": 1, "c": 2, "d": 0, "e": 1}}
WORKED_RUN = {"q1": {"a": 5, "x": 4, "b": 3, "d": 2, "c": 1}}


def test_rprec_counts_the_relevant_in_the_top_r():
    """rel=1: R = 4 (a b c e); the top 4 (a x b d) holds 2: Rprec = 2/4 (c, at rank 5 = R + 1, does
    not count). rel=2: R = 2 (a c); the top 2 (a x) holds 1: Rprec(rel=2) = 1/2. A run shorter than
    R: q2 has 3 relevant, returns only one of them (trec_eval looks at min(num_ret, R) = 1 doc and
    divides by R): 1/3."""
    qrels = {**WORKED_QRELS, "q2": {"f": 1, "g": 1, "h": 1}}
    run = {**WORKED_RUN, "q2": {"f": 1}}
    got = engine(qrels, run, ["Rprec", "Rprec(rel=2)"])
    assert got["Rprec"] == {"q1": 2 / 4, "q2": 1 / 3}
    assert got["Rprec(rel=2)"]["q1"] == 1 / 2


def test_recall_at_k_divides_by_every_relevant_doc():
    """rel=1, R = 4: R@2 = 1 (a) / 4; R@4 = 2 (a b) / 4; R@10 = 3 (a b c) / 4 (e is never retrieved).
    rel=2, R = 2: R(rel=2)@4 = 1 (a; b is 1) / 2; R(rel=2)@5 = 2 (a c) / 2."""
    names = ["R@2", "R@4", "R@10", "R(rel=2)@4", "R(rel=2)@5"]
    got = engine(WORKED_QRELS, WORKED_RUN, names)
    assert [got[n]["q1"] for n in names] == [1 / 4, 2 / 4, 3 / 4, 1 / 2, 2 / 2]


def test_num_rel_ret_with_rel_2_counts_the_returned_labels_of_2_or_more():
    """Returned: a (2), x, b (1), d (0), c (2): NumRet 5, NumRet(rel=1) 3 (a b c), NumRet(rel=2) 2
    (a c); NumRel(rel=2) 2 (a c), NumRel 4 (e too, not returned)."""
    got = engine(WORKED_QRELS, WORKED_RUN, ["NumRet", "NumRet(rel=1)", "NumRet(rel=2)", "NumRel(rel=2)", "NumRel"])
    assert {n: v["q1"] for n, v in got.items()} == {"NumRet": 5, "NumRet(rel=1)": 3, "NumRet(rel=2)": 2,
                                                    "NumRel(rel=2)": 2, "NumRel": 4}


# trec_eval's measures without an ir-measures name (the drop-in's, computed by the engine through
# measures never registered with ir-measures): q1 judges A 2, B 0, C 1, E -1 (in the pool, not
# judged), F 3; the run ranks A, X (not in the qrels), B, C, E. num_rel 3 (A C F), num_ret 5,
# num_rel_ret 2 (A C); q2 (F 1) is missing from the run.
TREC_ONLY_QRELS = {"q1": {"A": 2, "B": 0, "C": 1, "E": -1, "F": 3}, "q2": {"F": 1}}
TREC_ONLY_RUN = {"q1": {"A": 5, "X": 4, "B": 3, "C": 2, "E": 1}}


def trec_only(texts: list[str]) -> dict[str, dict[str, float]]:
    """{measure text: {query: value}} of trec_eval-only measures (``relative_P@2``...), engine."""
    from ndcg_plugin.measures.trec_only import measure_of
    measures = [measure_of(t) for t in texts]
    qrels, run = _frames(TREC_ONLY_QRELS, TREC_ONLY_RUN)
    res = Evaluation(measures, qrels=qrels).compute(run, per_query=True)
    return {t: dict(zip(res.query_ids, res.values[m].values.tolist(), strict=True)) for t, m in zip(texts, measures,
                                                                                                 strict=True)}


def test_retrieved_family_worked_example():
    """relative_P@2: A in the top 2, over min(2, 3) = 1/2; @5: 2 / min(5, 3) = 2/3. Rprec_mult 0.5:
    c = (long)(0.5 * 3 + 0.9) = 2, 1 relevant in the top 2: 1/2; 2.0: c = (long)6.9 = 6 > 5 returned:
    2/6. utility (1, -1, 0, 0): 2 relevant, 3 others retrieved: -1; (2, -1, 0.5, 0.25): 4 - 3 + 0.5 *
    (3 - 2) + 0.25 * (2 - 5 - 3) = 0. num_nonrel_judged_ret: B (label 0): 1. q2 (no run): 0 each, but
    utility (2, -1, 0.5, 0.25), which the empty ranking gives 0.5 * 1 + 0.25 * (0 - 0 - 1) = 0.25."""
    got = trec_only(["relative_P@2", "relative_P@5", "Rprec_mult(values=(0.5,))", "Rprec_mult(values=(2.0,))",
                     "utility(values=(1.0, -1.0, 0.0, 0.0))", "utility(values=(2.0, -1.0, 0.5, 0.25))",
                     "num_nonrel_judged_ret"])
    assert {t: v["q1"] for t, v in got.items()} == {
        "relative_P@2": 1 / 2, "relative_P@5": 2 / 3, "Rprec_mult(values=(0.5,))": 1 / 2,
        "Rprec_mult(values=(2.0,))": 2 / 6, "utility(values=(1.0, -1.0, 0.0, 0.0))": -1.0,
        "utility(values=(2.0, -1.0, 0.5, 0.25))": 0.0, "num_nonrel_judged_ret": 1.0}
    assert {t: v["q2"] for t, v in got.items()} == {**{t: 0.0 for t in got}, "utility(values=(2.0, -1.0, 0.5, 0.25))":
                                                    0.25}


def test_gain_measures_worked_example():
    """Gains are labels: A 2, C 1, the rest 0; ideal gains F 3, A 2, C 1. binG: A at rank 0 after 0
    non-relevant, C at rank 3 after 2: (1/log2(2) + 1/log2(4)) / 3. G: costs run 3, 5, 6, then 7
    (1 a rank past the ideal gains), gains 2, 2, 2, 3: (2/log2(2 + 3 - 2) + 1/log2(2 + 7 - 3)) / 6.
    ndcg_rel: A's DCG 2 over the ideal 3; C's whole DCG D over the whole ideal I; F (not retrieved)
    D / I: (2/3 + 2 D / I) / 3. Rndcg: the ideal gain changes after ranks 1, 2, 3, and 5 > 3 + 1
    docs returned adds D / I: (2/3 + 2/I2 + 2/I + D/I) / 4 with I2 the ideal DCG at 2."""
    d = 2 + 1 / math.log2(5)
    i2 = 3 + 2 / math.log2(3)
    i = i2 + 1 / math.log2(4)
    got = trec_only(["binG", "G", "ndcg_rel", "Rndcg"])
    want = {"binG": (1 / math.log2(2) + 1 / math.log2(4)) / 3,
            "G": (2 / math.log2(3) + 1 / math.log2(6)) / 6,
            "ndcg_rel": (2 / 3 + d / i + d / i) / 3,
            "Rndcg": (2 / 3 + 2 / i2 + 2 / i + d / i) / 4}
    assert all(close(got[n]["q1"], w) for n, w in want.items()), (got, want)
    assert {n: v["q2"] for n, v in got.items()} == {n: 0.0 for n in want}


def test_unjudged_family_worked_example():
    """Unjudged: X (rank 1, not in the qrels) and E (rank 4, label -1). unj@2: 1/2; unj@10: 2/10.
    rbp: gains scaled by the largest label 3: (1 - 0.9) (2/3 + 1/3 0.9^3). rbp_resid: 0.9^5 + (1 -
    0.9)(0.9 + 0.9^4). relstring of 10: '2-01.' (the chunk's codes, read back). Judged@2: A of A, X:
    1/2; Judged@10: A B C E judged of 5 returned: 4/5."""
    from ndcg_plugin.measures.unjudged import relstring_text
    got = trec_only(["unj@2", "unj@10", "rbp(values=(0.9,))", "rbp_resid(values=(0.9,))",
                     "relstring(values=(0.0,))@10"])
    assert got["unj@2"]["q1"] == 1 / 2 and got["unj@10"]["q1"] == 2 / 10
    p = 0.9  # its powers multiplied one by one, as trec_eval does; 1 - p is 0.09999999999999998
    assert close(got["rbp(values=(0.9,))"]["q1"], (1 - p) * (2 / 3 + 1 / 3 * (p * p * p)))
    assert close(got["rbp_resid(values=(0.9,))"]["q1"], p * p * p * p * p + (1 - p) * (p + p * p * p * p))
    assert relstring_text([got["relstring(values=(0.0,))@10"]["q1"]]) == "2-01."
    assert relstring_text([got["relstring(values=(0.0,))@10"]["q2"]]) == ""
    judged = engine(TREC_ONLY_QRELS, TREC_ONLY_RUN, ["Judged@2", "Judged@10"])
    assert judged["Judged@2"]["q1"] == 1 / 2 and judged["Judged@10"]["q1"] == 4 / 5


# --- 2. against pytrec_eval on random qrels and runs ------------------------------------------------

QIDS = ["1", "01", "q2", "303", "z"]
DOCS = ["a", "b", "B", "doc-1", "doc-10", "doc-2", "x#1", "é", "10", "9", "zz"]
# scores distinct at float32 whenever they are distinct at float64 (pytrec_eval ties scores in
# float32, trec_eval 10.0 in float64: test_float64_order_of_scores_equal_in_float32 is that case)
SCORES = st.one_of(st.integers(0, 3).map(float), st.floats(-5, 5, allow_nan=False, width=32))


@st.composite
def collections(draw, run_queries: int = 0):
    """Random qrels (labels -2..4, some queries all negative, unjudged docs) and a run (ties, lists
    of 1 to 11 docs, queries missing on either side), as {q: {doc: label}}, {q: {doc: score}}."""
    qrels: dict = {}
    for q in draw(st.lists(st.sampled_from(QIDS), min_size=1, max_size=4, unique=True)):
        docs = draw(st.lists(st.sampled_from(DOCS), min_size=1, max_size=8, unique=True))
        qrels[q] = {d: draw(st.integers(-2, 4)) for d in docs}
    run: dict = {}
    for q in draw(st.lists(st.sampled_from(QIDS), min_size=run_queries, max_size=5, unique=True)):
        docs = draw(st.lists(st.sampled_from(DOCS), min_size=1, max_size=len(DOCS), unique=True))
        run[q] = {d: draw(SCORES) for d in docs}
    return qrels, run


def trec_eval_c(name: str, labels: dict, rel: int) -> float:
    """What trec_eval -c gives a qrels query missing from the run (an empty ranking), written out:
    num_q 1, num_rel its labels >= rel, every other measure here 0."""
    return {"num_q": 1.0, "num_rel": float(sum(r >= rel for r in labels.values()))}.get(name, 0.0)


def pte(qrels: dict, run: dict, names: list[str], rel: int) -> dict[str, dict[str, float]]:
    """{trec_eval measure: {qrels query: value}} from pytrec_eval, as trec_eval -c -l rel gives."""
    # pytrec_eval 0.5.x corrupts memory on a query whose labels are all negative: give such a
    # query one label-0 doc no run retrieves (no effect on these measures: the query has no
    # relevant doc, so every ratio is 0 whatever N is, and the doc is never returned)
    padded = {q: d if any(r >= 0 for r in d.values()) else {**d, "\x00pad": 0} for q, d in qrels.items()}
    # an empty ranking (the run filtered for -J) as a missing query: -c's values (pytrec_eval 0.5.x
    # dies of SIGSEGV on an empty ranking with map and bpref)
    res = pytrec_eval.RelevanceEvaluator(padded, set(names), relevance_level=rel).evaluate(
        {q: d for q, d in run.items() if d})
    return {n: {q: res[q][n.replace(".", "_")] if q in res else trec_eval_c(n.split(".")[0], qrels[q], rel)
                for q in qrels} for n in names}


def judged(qrels: dict, run: dict) -> dict:
    """The run less the docs the qrels do not judge with a label >= 0: trec_eval -J (pytrec_eval's
    own judged_docs_only_flag crashes on some inputs, so the filter is written out here)."""
    return {q: {d: s for d, s in docs.items() if qrels.get(q, {}).get(d, -1) >= 0} for q, docs in run.items()}


def assert_values(got: dict, want: dict, what: str) -> None:
    assert got.keys() == want.keys(), what
    bad = {q: (got[q], want[q]) for q in want if not close(got[q], want[q])}
    assert not bad, (what, bad)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=collections(), k=st.integers(1, 12), rel=st.sampled_from([1, 2]))
def test_every_measure_equals_pytrec_eval(data, k, rel):
    """Each measure, per query, within one ulp of pytrec_eval's (trec_eval -c -l rel, and -J for
    judged_only). The two trec_eval versions differ, for these measures, only in the order of
    scores equal at float32 (kept out of the data: SCORES) and in reading labels beyond 32 bits
    (test_a_label_beyond_32_bits_is_read_whole), so everything else is compared."""
    qrels, run = data
    r = f"(rel={rel})"
    ours = engine(qrels, run, [f"AP{r}", f"AP{r}@{k}", f"P{r}@{k}", f"R{r}@{k}", f"Rprec{r}", f"Bpref{r}", "NumQ",
                               "NumRet", f"NumRet{r}", f"NumRel{r}", f"SetP{r}", f"SetP(rel={rel},relative=True)",
                               f"SetR{r}", f"SetF{r}", f"SetAP{r}", f"infAP{r}"])
    theirs = pte(qrels, run, ["map", f"map_cut.{k}", f"P.{k}", f"recall.{k}", "Rprec", "bpref", "num_q", "num_ret",
                              "num_rel_ret", "num_rel", "set_P", "set_relative_P", "set_recall", "set_F", "set_map",
                              "infAP"], rel)
    for mine, name in zip(ours, theirs, strict=True):
        assert_values(ours[mine], theirs[name], f"{mine} vs {name} -l{rel}")
    j = f"(rel={rel}, judged_only=True)"
    ours = engine(qrels, run, [f"AP{j}", f"AP{j}@{k}", f"P{j}@{k}", f"R{j}@{k}", f"Rprec{j}"])
    theirs = pte(qrels, judged(qrels, run), ["map", f"map_cut.{k}", f"P.{k}", f"recall.{k}", "Rprec"], rel)
    for mine, name in zip(ours, theirs, strict=True):
        assert_values(ours[mine], theirs[name], f"{mine} vs {name} -l{rel} -J")


# --- 3. against the trec_eval 10.0 binary ------------------------------------------------------------

TREC_MEASURES = ["-m", "map", "-m", "map_cut.3", "-m", "P.2", "-m", "recall.3", "-m", "Rprec", "-m", "bpref",
                 "-m", "num_ret", "-m", "num_rel", "-m", "num_rel_ret", "-m", "num_q", "-m", "gm_map", "-m", "gm_bpref"]
TREC_OPTIONS = [[], ["-l", "2"], ["-J"], ["-M", "3"], ["-l", "2", "-J"], ["-l", "2", "-J", "-M", "3"]]


def write_files(folder: Path, qrels: dict, run: dict) -> tuple[str, str]:
    """TREC qrels and run files of {q: {doc: label}}, {q: {doc: score}} (scores as repr: the
    same double read back, by us and by trec_eval's atof)."""
    (folder / "qrels").write_text("".join(f"{q} 0 {d} {r}\n" for q, docs in qrels.items() for d, r in docs.items()))
    (folder / "run").write_text("".join(f"{q} Q0 {d} 0 {s!r} t\n" for q, docs in run.items() for d, s in docs.items()))
    return str(folder / "qrels"), str(folder / "run")


def binary(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([TREC_EVAL, *argv], capture_output=True, text=True)


def _twins(level: int, judged_only: bool) -> dict[str, str]:
    """trec_eval's per-query lines (-l level, -J) and the ir-measures measure that computes each
    (with -J, num_ret counts judged docs only: no twin; bpref and the relevant counts are the same
    with and without -J, unjudged docs never counting for them)."""
    r = f"rel={level}"
    j = f"{r}, judged_only=True" if judged_only else r
    twins = {"map": f"AP({j})", "map_cut_3": f"AP({j})@3", "P_2": f"P({j})@2", "recall_3": f"R({j})@3",
             "Rprec": f"Rprec({j})", "bpref": f"Bpref({r})", "num_rel": f"NumRel({r})", "num_rel_ret": f"NumRet({r})",
             "gm_map": f"AP({j})", "gm_bpref": f"Bpref({r})"}
    return twins if judged_only else {**twins, "num_ret": "NumRet"}


@NEEDS_BINARY
@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=collections(run_queries=1), options=st.sampled_from(TREC_OPTIONS))
def test_against_the_trec_eval_binary(data, options):
    """``ndcg-plugin trec_eval -q -c`` with -l 2, -J, -M 3: the binary's stdout byte for byte (its
    status too). And the engine's own values (an Evaluation, with judged_only for -J; not with -M,
    which ir-measures lacks) printed as trec_eval prints them (%6.4f, counts as integers), against
    each per-query line of the binary."""
    qrels, run = data
    assume(all(any(r >= 0 for r in d.values()) for d in qrels.values()))  # else trec_eval cannot evaluate it
    with tempfile.TemporaryDirectory() as folder:
        q, r = write_files(Path(folder), qrels, run)
        argv = ["-q", "-c", *options, *TREC_MEASURES, q, r]
        theirs = binary(*argv)
        ours = run_main("trec_eval", *argv)
    assert (ours.returncode, ours.stdout) == (theirs.returncode, theirs.stdout), (argv, ours.stderr)
    if "-M" in options:
        return
    level = int(options[options.index("-l") + 1]) if "-l" in options else 1
    twins = _twins(level, "-J" in options)
    values = engine(qrels, run, sorted(set(twins.values())))
    for line in theirs.stdout.splitlines():
        name, query, value = (field.strip() for field in line.split("\t"))
        if query == "all" or name not in twins:
            continue
        mine = values[twins[name]][query]
        assert (str(int(mine)) if name.startswith("num_") else f"{mine:6.4f}".strip()) == value, (line, mine)


# --- 4. every way the engine runs gives the same doubles ---------------------------------------------

@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=collections(run_queries=1), k=st.integers(1, 12), rel=st.sampled_from([1, 2]))
def test_every_path_gives_the_same_doubles(data, k, rel):
    """The run in memory (one block, then blocks of 2 rows, then the C loops off), streamed from a
    file in 64-byte blocks, and a qrels file and a run file evaluated side by side: equal arrays."""
    qrels, run = data
    r = f"rel={rel}"
    names = [f"AP({r})", f"AP({r})@{k}", f"P({r})@{k}", f"R({r})@{k}", f"Rprec({r})", f"Bpref({r})", "NumQ", "NumRet",
             f"NumRet({r})", f"NumRel({r})", f"AP({r}, judged_only=True)@{k}", f"P({r}, judged_only=True)@{k}",
             f"Rprec({r}, judged_only=True)"]
    measures = [parse_measure(n) for n in names]
    specs = [spec_of(m) for m in measures]
    qd, rd = _frames(qrels, run)
    ev = Evaluation(measures, qrels=qd)
    memory = ev.compute(rd, per_query=True).values
    with speedups.disabled():
        numpy_only = ev.compute(rd, per_query=True).values
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sizes, "BLOCK_ROWS", 2)
        blocks = compute_in_blocks(ev.index, rd, specs)
    with tempfile.TemporaryDirectory() as folder:
        q, r_file = write_files(Path(folder), qrels, run)
        streamed = compute_file(ev.index, r_file, specs, block_bytes=64)
        side = Evaluation(measures, qrels=q, options=ReadOptions(block_bytes=64)).compute(r_file, per_query=True)
    for m, s in zip(measures, specs, strict=True):
        want = memory[m].values
        np.testing.assert_array_equal(numpy_only[m].values, want, err_msg=f"{m}: C loops off")
        np.testing.assert_array_equal(blocks[s].values, want, err_msg=f"{m}: blocks of 2 rows")
        np.testing.assert_array_equal(streamed[s].values, want, err_msg=f"{m}: streamed")
        by_query = dict(zip(side.query_ids, side.values[m].values.tolist(), strict=True))
        assert [by_query[q] for q in ev.index.qids] == want.tolist(), f"{m}: side by side"


# --- 5. the bugs of issue 41, through the command's entry points -------------------------------------

def _files(tmp_path: Path, qrels: str, run: str) -> tuple[str, str]:
    (tmp_path / "qrels").write_text(qrels)
    (tmp_path / "run").write_text(run)
    return str(tmp_path / "qrels"), str(tmp_path / "run")


def _lines(text: str) -> list[list[str]]:
    return [[field.strip() for field in line.split("\t")] for line in text.splitlines()]


FLOAT32_TIE = ("q1 0 a 0\nq1 0 b 1\nq2 0 c 1\n", "q1 Q0 a 1 0.50000001 t\nq1 Q0 b 2 0.5 t\nq2 Q0 c 1 1 t\n")


def test_float64_order_of_scores_equal_in_float32_through_eval(tmp_path):
    """0.50000001 and 0.5 are one float32 (0.5) and two doubles. trec_eval 10.0 ranks in doubles:
    a (0.50000001, label 0) before b (0.5, label 1): P@1 = 0/1, AP = (1/2) / 1 = 0.5; q2: 1 and 1;
    means 0.5 and 0.75. (The float32 tie, broken by doc id descending, would put b first: P@1 = 1,
    AP = 1.)"""
    q, r = _files(tmp_path, *FLOAT32_TIE)
    done = run_main("eval", q, r, "P@1", "AP", "-q")
    assert done.returncode == 0, done.stderr
    assert _lines(done.stdout) == [["q1", "P@1", "0.0000"], ["q1", "AP", "0.5000"], ["q2", "P@1", "1.0000"],
                                   ["q2", "AP", "1.0000"], ["all", "P@1", "0.5000"], ["all", "AP", "0.7500"]]


@pytest.mark.parametrize("options", [[], ["-J"]], ids=["plain", "-J"])
def test_float64_order_of_scores_equal_in_float32_through_trec_eval(options, tmp_path):
    """The same case through the trec_eval drop-in: trec_eval 10.0's lines (the numbers above), with
    and without -J (every doc is judged: -J changes nothing)."""
    q, r = _files(tmp_path, *FLOAT32_TIE)
    argv = ["-q", *options, "-m", "P.1", "-m", "map", q, r]
    done = run_main("trec_eval", *argv)
    assert (done.returncode, _lines(done.stdout)) == (0, [
        ["map", "q1", "0.5000"], ["P_1", "q1", "0.0000"], ["map", "q2", "1.0000"], ["P_1", "q2", "1.0000"],
        ["map", "all", "0.7500"], ["P_1", "all", "0.5000"]]), done.stderr
    if TREC_EVAL:
        assert done.stdout == binary(*argv).stdout


def test_a_label_beyond_32_bits_is_read_whole(tmp_path):
    """trec_eval 10.0 reads a label with atol (a 64-bit long); pytrec_eval (trec_eval 9.0.8's int)
    keeps its low 32 bits: 2^32 + 1 would be 1. Read whole it is relevant at rel=2. The run ranks d2
    (0), d1 (2^32 + 1), d3 (1): P(rel=2)@2 = 1/2, AP(rel=2) = (1/2) / 1 = 0.5, NumRel(rel=2) = 1
    (read as 1: 0, 0, 0)."""
    q, r = _files(tmp_path, "q1 0 d1 4294967297\nq1 0 d2 0\nq1 0 d3 1\n",
                  "q1 Q0 d2 1 2.0 t\nq1 Q0 d1 2 1.0 t\nq1 Q0 d3 3 0.5 t\n")
    done = run_main("eval", q, r, "P(rel=2)@2", "AP(rel=2)", "NumRel(rel=2)", "-q", "-n")
    assert (done.returncode, _lines(done.stdout)) == (0, [["q1", "P(rel=2)@2", "0.5000"], ["q1", "AP(rel=2)", "0.5000"],
                                                          ["q1", "NumRel(rel=2)", "1"]]), done.stderr
    # the trec_eval binary cannot be asked here: it allocates an array of (highest label + 1) longs,
    # 32 GiB for this label, and stops with "Can't calculate measure" (status 4) where that fails
    done = run_main("trec_eval", "-q", "-n", "-l", "2", "-m", "P.2", "-m", "map", "-m", "num_rel", q, r)
    assert (done.returncode, _lines(done.stdout)) == (0, [["num_rel", "q1", "1"], ["map", "q1", "0.5000"],
                                                          ["P_2", "q1", "0.5000"]]), done.stderr


def test_a_negative_label_beyond_32_bits_is_read_whole(tmp_path):
    """-2^32 + 2 is negative read whole (in the pool, unjudged: never relevant, never non-relevant)
    and 2 in its low 32 bits. At -l 2 the run ranks d1 (that label), d2 (0), d3 (2): R = 1 (d3),
    N = 1 (d2). P_1 = 0/1; map = (1/3) / 1; bpref: d1 skipped, d2 non-relevant, d3: 1 - min(1, 1) /
    min(1, 1) = 0; num_rel 1. (Read as 2: P_1 = 1, map = (1 + 2/3) / 2, bpref = (1 + 0) / 2, num_rel 2.)
    This one trec_eval 10.0 computes: its lines, when the binary is there."""
    q, r = _files(tmp_path, "q1 0 d1 -4294967294\nq1 0 d2 0\nq1 0 d3 2\n",
                  "q1 Q0 d1 1 3.0 t\nq1 Q0 d2 2 2.0 t\nq1 Q0 d3 3 1.0 t\n")
    done = run_main("eval", q, r, "P(rel=2)@1", "AP(rel=2)", "Bpref(rel=2)", "NumRel(rel=2)", "-q", "-n")
    assert _lines(done.stdout) == [["q1", "P(rel=2)@1", "0.0000"], ["q1", "AP(rel=2)", "0.3333"],
                                   ["q1", "Bpref(rel=2)", "0.0000"], ["q1", "NumRel(rel=2)", "1"]], done.stderr
    argv = ["-q", "-n", "-l", "2", "-m", "P.1", "-m", "map", "-m", "bpref", "-m", "num_rel", q, r]
    done = run_main("trec_eval", *argv)
    assert (done.returncode, _lines(done.stdout)) == (0, [["num_rel", "q1", "1"], ["map", "q1", "0.3333"],
                                                          ["bpref", "q1", "0.0000"], ["P_1", "q1", "0.0000"]])
    if TREC_EVAL:
        assert done.stdout == binary(*argv).stdout


@pytest.mark.parametrize("options", [[], ["-c"], ["-l", "2"], ["-J"]], ids=["plain", "-c", "-l2", "-J"])
def test_max_0_with_map_and_bpref_prints_zeros(options, tmp_path):
    """-M 0 keeps no doc of any query: every ranking is empty, map and bpref are 0 for each query
    and their mean. In a process of its own: a crash is a signal, not a failed test run."""
    q, r = _files(tmp_path, "q1 0 a 1\nq1 0 b 0\nq2 0 c 2\n", "q1 Q0 a 1 1 t\nq1 Q0 b 2 0.5 t\nq2 Q0 c 1 1 t\n")
    argv = ["-q", *options, "-M", "0", "-m", "map", "-m", "bpref", q, r]
    done = run_cli("trec_eval", *argv)
    assert (done.returncode, _lines(done.stdout)) == (0, [[m, query, "0.0000"] for query in ("q1", "q2", "all")
                                                          for m in ("map", "bpref")]), done.stderr
    if TREC_EVAL:
        assert done.stdout == binary(*argv).stdout


# --- 6. the Spark engine ------------------------------------------------------------------------------

@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_spark_gives_the_local_digits(spark):
    """A small random case (ties, labels -1..3, unjudged docs, a qrels query missing from the run,
    a run query missing from the qrels): every per-query value and every aggregate the same double."""
    from ndcg_plugin import spark as ndcg_spark
    rng = random.Random(41)
    qrels = {f"q{i}": {f"d{j}": rng.choice([-1, 0, 0, 1, 2, 3]) for j in rng.sample(range(15), rng.randint(1, 8))}
             for i in range(6)}
    run = {f"q{i}": {f"d{j}": float(rng.choice([0, 1, 1, 2, 3])) for j in rng.sample(range(15), rng.randint(1, 10))}
           for i in (0, 1, 2, 3, 4, 7)}
    names = ["AP", "AP@3", "P@2", "P(rel=2)@3", "R@3", "Rprec", "Bpref", "NumRet", "NumRet(rel=2)", "NumRel",
             "NumQ", "Judged@3", "Judged"]
    local = engine(qrels, run, names)
    measures = [parse_measure(n) for n in names]
    qd, rd = _frames(qrels, run)
    sq, sr = spark.createDataFrame(qd), spark.createDataFrame(rd)
    long = ndcg_spark.evaluate(sq, sr, measures, per_query=True)
    try:
        got = {(row["measure"], row["query_id"]): row["value"] for row in long.collect()}
    finally:
        long.unpersist()
    assert got == {(str(m), q): v for n, m in zip(names, measures, strict=True) for q, v in local[n].items()}
    # the aggregates: means, and sums for the counts (NumQ, NumRet, NumRel: ir-measures' SumAgg,
    # trec_eval's summary of num_*)
    assert ndcg_spark.evaluate(sq, sr, measures) == Evaluation(measures, qrels=qd).compute(rd).aggregates


def test_served_builtins_never_crash_on_a_query_with_only_negative_labels():
    """Issue 42, item 7e: pytrec_eval dies of SIGSEGV (or hangs) on a query whose labels are all
    negative; with ``register(serve_builtins=True)`` the engine computes AP, P@k, Rprec, Bpref,
    infAP, SetP and NumRet, so ``ir_measures.calc_aggregate`` answers (in a process of its own, so
    that a crash is a failed assertion, not a dead test run). By hand: q1 ranks d1 (label 1) then d2
    (unjudged): AP 1, P@5 1/5, Rprec 1/1, Bpref 1 (no non-relevant above d1), infAP 1 (rank 0),
    SetP 1/2, NumRet 2; q2 (labels -1 and -2, d3 retrieved) has no relevant doc: 0 for every ratio,
    NumRet 1. Means over the two queries: AP 0.5, P@5 0.1, Rprec 0.5, Bpref 0.5, infAP 0.5,
    SetP 0.25; NumRet sums: 3."""
    code = """
import json, ndcg_plugin, ir_measures
ndcg_plugin.register(serve_builtins=True)
qrels = {"q1": {"d1": 1}, "q2": {"d3": -1, "d4": -2}}
run = {"q1": {"d1": 2.0, "d2": 1.0}, "q2": {"d3": 1.0}}
ms = [ir_measures.parse_measure(m) for m in ["AP", "P@5", "Rprec", "Bpref", "infAP", "SetP", "NumRet"]]
print(json.dumps({str(m): v for m, v in ir_measures.calc_aggregate(ms, qrels, run).items()}))
"""
    import json
    import sys
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == {
        "AP": 0.5, "P@5": 0.1, "Rprec": 0.5, "Bpref": 0.5, "infAP": 0.5, "SetP": 0.25, "NumRet": 3.0}
