"""explain: the tutorial table, written out by hand."""
from __future__ import annotations

import math
import random
from math import log2

import ir_measures
import pytest

from ndcg_plugin.cli.commands import main
from ndcg_plugin.cli.explain import explain
from ndcg_plugin.engine import block as engine
from ndcg_plugin.engine.block import Unmatched
from ndcg_plugin.measures import spec_of
from tests.helpers import qrels_df, run_df


def tutorial():
    # relevances 4, 1, 3, 4, 0 at ranks 1-5; the query's judgments are {4, 4, 3, 1, 0}
    rels = [4, 1, 3, 4, 0]
    run = run_df([("q", f"d{i}", 10.0 - i) for i in range(5)])
    qrels = qrels_df([("q", f"d{i}", r) for i, r in enumerate(rels)])
    return qrels, run


def test_explain_reproduces_the_tutorial_table():
    qrels, run = tutorial()
    e = explain(qrels, run, "q", "NDCG_lin@5")
    # contributions rel / log2(rank + 1): 4/1, 1/log2 3, 3/2, 4/log2 5, 0
    assert e.ranking["contribution"].round(2).tolist() == [4.0, 0.63, 1.5, 1.72, 0.0]
    assert [round(x, 2) for x in (4.0, 1 / log2(3), 3 / 2, 4 / log2(5), 0.0)] == [4.0, 0.63, 1.5, 1.72, 0.0]
    assert e.ranking["dcg"].iloc[-1] == pytest.approx(7.85, abs=5e-3)      # 4 + 0.63 + 1.5 + 1.72
    assert e.ideal["idcg"].iloc[-1] == pytest.approx(8.45, abs=5e-3)       # 4 + 4/log2 3 + 3/2 + 1/log2 5
    assert e.value == pytest.approx(0.929, abs=5e-4)
    text = e.text()
    assert "DCG@5 = 7.8536, IDCG@5 = 8.4544" in text and "NDCG_lin@5 = 0.9289" in text  # 0.929 to 3 places


def test_explain_ties_mrr_and_hitrate():
    qrels = qrels_df([("q", "b", 1)])
    run = run_df([("q", "a", 1.0), ("q", "b", 1.0), ("q", "c", 2.0)])
    e = explain(qrels, run, "q", "MRR_zero@3")
    assert e.ranking["doc_id"].tolist() == ["c", "b", "a"]
    assert any("ranks 2-3: b, a" in t for t in e.ties)
    assert "RR = 1/2 = 0.5000" in e.text()
    assert "hits in the top 1: 0" in explain(qrels, run, "q", "HitRate@1").text()


def test_explain_cli(tmp_path, capsys):
    (tmp_path / "q").write_text("q 0 d0 4\nq 0 d1 1\nq 0 d2 3\nq 0 d3 4\nq 0 d4 0\n")
    (tmp_path / "r").write_text("".join(f"q Q0 d{i} {i + 1} {10 - i} t\n" for i in range(5)))
    assert main(["explain", str(tmp_path / "q"), str(tmp_path / "r"), "--query", "q", "-m", "NDCG_lin@5"]) == 0
    assert "NDCG@5 = DCG / IDCG = 0.9289" in capsys.readouterr().out
    assert main(["explain", str(tmp_path / "q"), str(tmp_path / "r"), "--query", "nope", "-m", "NDCG_lin@5"]) == 2


EXPLAINED = ["NDCG_lin@5", "NDCG_exp@3", "NDCG_lin", "NDCG_lin(judged_only=True)@4", "NDCG_exp(ideal='run')@5",
             "NDCG_lin(gains={0:1,2:7})@3", "NDCG_lin(ties='average')@3", "HitRate(rel=2)@3", "HitRate_item@4",
             "MRR_zero@3", "MRR_ignore(rel=2)@5", "HitRate_item(ties='average')@2"]


def random_case(seed: int):
    rng = random.Random(seed)
    docs = [f"{rng.choice('abcAB')}{rng.randint(0, 9)}" for _ in range(15)]
    qrels, run = [], []
    for q in ("q1", "q2", "q3"):
        qrels += [(q, d, rng.choice([-1, 0, 1, 1, 2, 3])) for d in dict.fromkeys(rng.sample(docs, 6))]
        if q != "q3" or seed % 2:  # some cases: a qrels query the run does not have
            run += [(q, d, float(rng.choice([1, 2, 2, 3]))) for d in dict.fromkeys(rng.sample(docs, rng.randint(0, 9)))]
    return qrels_df(qrels), run_df(run)


def ideal_dcg_by_hand(labels, measure, k):
    """IDCG@k written out: the positive gains of ``labels`` (the measure's gain function, with
    its gains= overrides), sorted descending, each over log2(rank + 1)."""
    overrides = measure.params.get("gains") or {}
    exponential = measure.NAME.endswith("exp")

    def gain(r):
        if r < 0:
            return 0.0
        return float(overrides[r]) if r in overrides else (2.0 ** r - 1 if exponential else float(r))

    gains = sorted((g for g in map(gain, labels) if g > 0), reverse=True)[:k]
    return sum(g / log2(i + 2) for i, g in enumerate(gains))


@pytest.mark.filterwarnings("ignore:.*no query has a value:RuntimeWarning")
@pytest.mark.parametrize("seed", range(12))
def test_explain_numbers_are_engine_compute_numbers(seed):
    """explain's value is what engine.compute gives the query among all queries; for NDCG its DCG and
    IDCG columns are the hand computation's, and their ratio is the value. 12 cases (was 25: each
    costs ~0.7 s of explain() calls, 36 per case); 7 of them hold a qrels query the run lacks, 10 a
    negative label, all of them ties (the 12 hold the maximum list length of the 25)."""
    qrels, run = random_case(seed)
    index = engine.QrelsIndex(qrels)
    for text in EXPLAINED:
        measure = ir_measures.parse_measure(text)
        spec = spec_of(measure)
        values = engine.compute(index, run, [spec], counts=Unmatched())[spec]
        for i, q in enumerate(index.qids):
            e = explain(qrels, run, q, measure)
            expected = values.values[i]
            assert e.value == expected or (math.isnan(e.value) and math.isnan(expected)), (text, q)
            k = spec.cutoff or len(e.ranking) + 1
            if e.ideal is not None:  # NDCG
                judged = dict(zip(qrels["doc_id"][qrels["query_id"] == q], qrels["relevance"][qrels["query_id"] == q],
                                  strict=True))
                pool = judged.values() if spec.ideal == "qrels" else [
                    judged[d] for d in run["doc_id"][run["query_id"] == q] if d in judged
                    and (not spec.judged_only or judged[d] >= 0)]
                idcg = e.ideal["idcg"].iloc[-1] if len(e.ideal) else 0.0
                assert idcg == pytest.approx(ideal_dcg_by_hand(list(pool), measure, spec.cutoff), abs=1e-12), (text, q)
                dcg = e.ranking["dcg"].iloc[-1] if len(e.ranking) else 0.0
                assert e.ranking["contribution"].sum() == pytest.approx(dcg, abs=1e-12)
                if spec.ties == "trec":
                    assert e.value == pytest.approx(dcg / idcg if idcg > 0 else 0.0, abs=1e-15), (text, q)
                assert len(e.ranking) <= k
            elif "rel=" in text or text.startswith("MRR"):
                first = (e.ranking["relevant"] == "yes").to_numpy().argmax() + 1 if len(e.ranking) else 0
                hit = len(e.ranking) and e.ranking["relevant"].iloc[first - 1] == "yes"
                assert e.value == (1 / first if hit else float(measure.DEFAULT)) or not hit and math.isnan(e.value) \
                    or text.startswith("HitRate")
            if values.hits is not None and spec.ties == "trec":
                assert (e.ranking["relevant"] == "yes").sum() == values.hits[i]
                assert len(e.ranking) == values.returned[i]
