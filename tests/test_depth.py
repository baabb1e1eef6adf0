"""A depth (trec_eval's ``-M N``, repro_eval's depth): each query's top N rows in trec_eval's order
(score descending, then doc id descending) evaluated, on every path an Evaluation takes: the run
file streamed in blocks (cut anywhere, tiny blocks included), read again whole when not grouped
by query, read whole, or given as a table. Each is checked against the oracle's cut of the run as
dicts (:func:`ndcg_plugin.measures.oracle.cut_run`, a sort written independently of the engine's)."""
from __future__ import annotations

import ir_measures
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ndcg_plugin import NDCG_lin, read
from ndcg_plugin.engine.depth import check_depth, top_documents
from ndcg_plugin.evaluation import Evaluation, ReadOptions
from ndcg_plugin.measures.oracle import cut_run
from tests.test_differential import collections
from tests.test_stream import run_text

MEASURES = [NDCG_lin @ 3, NDCG_lin(judged_only=True) @ 4, ir_measures.AP, ir_measures.NumRet,
            ir_measures.NumRet(rel=1), ir_measures.Bpref, ir_measures.P @ 2, ir_measures.Rprec]


def _frame(run: dict):
    import pandas as pd
    rows = [(q, d, s) for q, docs in run.items() for d, s in docs.items()]
    return pd.DataFrame(rows, columns=["query_id", "doc_id", "score"])


def _values(ev: Evaluation, run) -> dict:
    res = ev.compute(run, per_query=True)
    return {m: np.asarray(res.values[m].values) for m in MEASURES}


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(case=collections(), data=st.data())
def test_every_path_with_a_depth_equals_the_run_cut_as_dicts(tmp_path, case, data):
    qrels, run = case
    depth = data.draw(st.integers(1, 9))
    pairs = [(q, d) for q in run for d in run[q]]
    if data.draw(st.integers(0, 3)) == 0:
        pairs = data.draw(st.permutations(pairs))  # not grouped by query: read again, whole
    if not pairs:
        return
    path = tmp_path / "run.txt"
    path.write_text(run_text(run, pairs, "trec"))
    (tmp_path / "qrels.txt").write_text("".join(f"{q} 0 {d} {r}\n" for q, docs in qrels.items()
                                                for d, r in docs.items()))
    block = data.draw(st.sampled_from([1, 7, 40, 333, 1 << 20]))
    oracle = _values(Evaluation(MEASURES, qrels=str(tmp_path / "qrels.txt"), options=ReadOptions(block_bytes=0)),
                     _frame(cut_run(run, depth)))
    for options, source in [(ReadOptions(block_bytes=block, depth=depth), str(path)),  # streamed
                           (ReadOptions(block_bytes=0, depth=depth), str(path)),      # read whole
                           (ReadOptions(depth=depth), _frame(run))]:                  # a table
        ev = Evaluation(MEASURES, qrels=str(tmp_path / "qrels.txt"), options=options)
        got = _values(ev, source)
        for m in MEASURES:
            np.testing.assert_array_equal(got[m], oracle[m], err_msg=f"{m} {options}")


def test_the_cut_follows_trec_eval_order_by_hand():
    # q1: scores 3, 2, 2, 1 -> ties at 2 broken by doc id descending: b before a; depth 2 keeps c and b
    # q2: two rows, depth 2 keeps both; the rows kept keep the file's order
    run = read("q1 Q0 a 0 2 t\nq1 Q0 c 0 3 t\nq1 Q0 b 0 2 t\nq1 Q0 d 0 1 t\nq2 Q0 x 0 1 t\nq2 Q0 y 0 5 t\n", "run")
    cut = top_documents(run, 2)
    assert list(zip(cut["query_id"], cut["doc_id"], strict=True)) == [("q1", "c"), ("q1", "b"), ("q2", "x"),
                                                                       ("q2", "y")]
    assert top_documents(run, 4) is run and top_documents(run, None) is run


@pytest.mark.parametrize("depth", [0, -1, 1.5, True, "10"])
def test_a_depth_that_is_not_a_whole_number_of_at_least_1_is_refused_by_name(depth):
    with pytest.raises(ValueError, match=r"depth must be a whole number >= 1 \(or None: every row\), got"):
        ReadOptions(depth=depth)
    with pytest.raises(ValueError, match="depth must be"):
        check_depth(depth)
