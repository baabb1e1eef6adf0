"""The habits of ranx and pandas users: per-query values as a DataFrame in one call, the reader's
tables handed to ranx (pandas 3 reads ids as its own string dtype, which ranx refuses), and
``--provider ranx``. Oracles: pytrec_eval and hand computations."""
from __future__ import annotations

import math
import os
import subprocess
import sys

import pytest
import pytrec_eval

import ndcg_plugin
from tests.helpers import run_cli

QRELS = "q1 0 d1 1\nq1 0 d2 2\nq2 0 d3 1\nq3 0 d9 1\n"
RUN = "q1 Q0 d2 1 3.0 r\nq1 Q0 d1 2 2.0 r\nq1 Q0 d5 3 1.0 r\nq2 Q0 d4 1 2.0 r\nq2 Q0 d3 2 1.0 r\n"


@pytest.fixture
def files(tmp_path):
    (tmp_path / "q").write_text(QRELS)
    (tmp_path / "r").write_text(RUN)
    return str(tmp_path / "q"), str(tmp_path / "r")


def test_per_query_is_one_call_with_a_row_per_qrels_query(files):
    q, r = files
    frame = ndcg_plugin.per_query(q, r, "nDCG@10 MRR_ignore@10 P@2")
    assert list(frame.columns) == ["nDCG@10", "MRR_ignore@10", "P@2"] and frame.index.name == "query_id"
    assert list(frame.index) == ["q1", "q2", "q3"]
    ev = pytrec_eval.RelevanceEvaluator({"q1": {"d1": 1, "d2": 2}, "q2": {"d3": 1}, "q3": {"d9": 1}},
                                        {"ndcg_cut.10", "P.2"})
    theirs = ev.evaluate({"q1": {"d2": 3.0, "d1": 2.0, "d5": 1.0}, "q2": {"d4": 2.0, "d3": 1.0}})
    for qid in ("q1", "q2"):
        assert frame.loc[qid, "nDCG@10"] == pytest.approx(theirs[qid]["ndcg_cut_10"], abs=1e-15)
        assert frame.loc[qid, "P@2"] == pytest.approx(theirs[qid]["P_2"], abs=1e-15)
    # by hand: q1's first relevant at rank 1, q2's at rank 2; q3 retrieves nothing: no value
    assert frame.loc["q1", "MRR_ignore@10"] == 1.0 and frame.loc["q2", "MRR_ignore@10"] == 0.5
    assert math.isnan(frame.loc["q3", "MRR_ignore@10"]) and frame.loc["q3", "nDCG@10"] == 0.0


#: ranx's numba functions run as the Python they are written in (numba's JIT off), in a process of
#: their own: the same code on the same tables; compiled, on the cold cache of a fresh environment
#: (every CI run), the two tests below took 50 s of the suite, and ranx's arithmetic is not their subject
NO_JIT = {"NUMBA_DISABLE_JIT": "1"}

RANX_SCRIPT = """
import sys
import pandas
import ranx
import ndcg_plugin
qrels, run = ndcg_plugin.read(sys.argv[1], "qrels"), ndcg_plugin.read(sys.argv[2], "run")
assert isinstance(qrels, pandas.DataFrame) and isinstance(run, pandas.DataFrame)
# docs/tutorial.md: ids as Python strings, the one conversion ranx needs under pandas 3
qrels = qrels.astype({"query_id": object, "doc_id": object})
run = run.astype({"query_id": object, "doc_id": object})
rq = ranx.Qrels.from_df(qrels, q_id_col="query_id", doc_id_col="doc_id", score_col="relevance")
rr = ranx.Run.from_df(run, q_id_col="query_id", doc_id_col="doc_id", score_col="score")
print(float(ranx.evaluate(rq, rr, "mrr@10", make_comparable=True)))
"""


def test_reader_tables_go_to_ranx_after_one_documented_conversion(files):
    pytest.importorskip("ranx")
    q, r = files
    proc = subprocess.run([sys.executable, "-c", RANX_SCRIPT, q, r], capture_output=True, text=True,
                          env={**os.environ, **NO_JIT})
    assert proc.returncode == 0, proc.stderr
    # make_comparable: q3 is not in the run, and ranx then counts it as 0 as trec_eval -c does:
    # q1 1/1 (d2 first), q2 1/2, q3 0
    assert float(proc.stdout) == pytest.approx((1 + 0.5 + 0) / 3)


def test_provider_ranx_takes_the_readers_string_columns(files, tmp_path):
    pytest.importorskip("ranx")
    q, r = files
    (tmp_path / "q12").write_text(QRELS.replace("q3 0 d9 1\n", ""))
    proc = run_cli("eval", str(tmp_path / "q12"), r, "P@2", "--provider", "ranx", env=NO_JIT)
    # by hand: q1 has 2 relevant in its top 2, q2 1: (1 + 0.5) / 2
    assert proc.returncode == 0 and proc.stdout == "P@2\t0.7500\n", proc.stderr
    # ranx refuses qrels and runs with different queries (q3): its reason, in one line
    proc = run_cli("eval", q, r, "P@2", "--provider", "ranx", env=NO_JIT)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr and "provider ranx failed" in proc.stderr
