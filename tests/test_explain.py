"""explain: the tutorial table, written out by hand."""
from __future__ import annotations

from math import log2

import pytest

from ndcg_plugin.cli import main
from ndcg_plugin.explain import explain

from .helpers import qrels_df, run_df


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
