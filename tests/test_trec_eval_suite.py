"""The trec_eval 10.0 test suite (../shared/data/trec_eval): every counterpart of a plugin
measure equals the value trec_eval printed in its expected-output files, to its 4 decimals."""
from __future__ import annotations

from collections import defaultdict

import ir_measures
import pytest

import ndcg_plugin
from ndcg_plugin import HitRate, HitRate_item, MRR_ignore, MRR_zero, NDCG_exp, NDCG_lin
from ndcg_plugin.cli.commands import main
from tests.conftest import shared_file

HALF_UNIT = 5e-5 + 1e-12  # trec_eval prints 4 decimals


def trec_out(name: str) -> dict:
    """{measure: {query_id or 'all': value}} from a trec_eval output file."""
    out: dict = defaultdict(dict)
    for line in shared_file("trec_eval", name).read_text().splitlines():
        meas, qid, value = line.split()
        try:
            out[meas][qid] = float(value)
        except ValueError:
            pass  # runid, relstring: not numbers
    return out


def per_query(measure, qrels_name: str, run_name: str) -> dict:
    qrels = str(shared_file("trec_eval", qrels_name))
    run = str(shared_file("trec_eval", run_name))
    ev = ir_measures.providers.registry["ndcg_plugin"].evaluator([measure], qrels)
    result = {m.query_id: m.value for m in ev.iter_calc(run)}
    result["all"] = ev.calc_aggregate(run)[measure]
    return result


def assert_matches(ours: dict, expected: dict, what: str) -> None:
    assert set(expected) <= set(ours) | {"all"}, what
    for qid, value in expected.items():
        assert abs(ours[qid] - value) <= HALF_UNIT, (what, qid, ours[qid], value)


@pytest.mark.parametrize("out_file,qrels,run,rel,cut", [
    ("out.test.aq", "qrels.test", "results.test", 1, None),        # trec_eval -q
    ("out.test.aqc", "qrels.test", "results.trunc", 1, None),      # -c, a topic missing from the run
    ("out.test.aqcM", "qrels.test", "results.trunc", 1, 100),      # -c -M100
    ("out.test.aql", "qrels.rel_level", "results.test", 2, None),  # -l2, graded -1..4
])
def test_suite_per_query(out_file, qrels, run, rel, cut):
    out = trec_out(out_file)
    depth = cut or 1000  # no run in the suite has more than 1000 docs per topic
    # ndcg_cut.k (trec_eval's ndcg ignores -l); with -M the run is cut first, so only k <= M compare
    for k in (5, 10, 15, 20, 30, 100):
        if k <= depth:
            assert_matches(per_query(NDCG_lin @ k, qrels, run), out[f"ndcg_cut_{k}"], f"{out_file} ndcg_cut_{k}")
    if cut is None:
        assert_matches(per_query(NDCG_lin, qrels, run), out["ndcg"], f"{out_file} ndcg")
    # recip_rank (-M depth) = MRR_zero@depth; MRR_ignore leaves out the queries with 0
    rr = out["recip_rank"]
    assert_matches(per_query(MRR_zero(rel=rel) @ depth, qrels, run), rr, f"{out_file} recip_rank")
    ours = per_query(MRR_ignore(rel=rel) @ depth, qrels, run)
    for qid, value in rr.items():
        if qid != "all":
            assert (qid not in ours if value == 0 else abs(ours[qid] - value) <= HALF_UNIT), (qid, value)
    # success.k = HitRate@k
    for k in (1, 5, 10):
        assert_matches(per_query(HitRate(rel=rel) @ k, qrels, run), out[f"success_{k}"], f"{out_file} success_{k}")
    # HitRate_item@k per query = P_k * k / min(k, num_ret)
    for k in (5, 10, 20):
        ours = per_query(HitRate_item(rel=rel) @ k, qrels, run)
        for qid, p in out[f"P_{k}"].items():
            if qid == "all":
                continue
            returned = min(k, int(out["num_ret"][qid]))
            expected = p * k / returned if returned else 0.0
            assert abs(ours[qid] - expected) <= HALF_UNIT * k, (out_file, k, qid, ours[qid], expected)


def test_suite_custom_gain_map_and_cutoffs():
    # trec_eval -q -mndcg.1=3,2=9,4=4.5 -m ndcg_cut.10,20,23.4 -msuccess.2,5,20 qrels.test results.test
    out = trec_out("out.test.meas_params")
    gains = NDCG_lin(gains={1: 3, 2: 9, 4: 4.5})
    assert_matches(per_query(gains, "qrels.test", "results.test"), out["ndcg_1=3,2=9,4=4.5"], "ndcg gain map")
    for k in (10, 20, 23):
        assert_matches(per_query(NDCG_lin @ k, "qrels.test", "results.test"), out[f"ndcg_cut_{k}"], f"ndcg_cut_{k}")
    for k in (2, 5, 20):
        assert_matches(per_query(HitRate @ k, "qrels.test", "results.test"), out[f"success_{k}"], f"success_{k}")


def test_suite_summary_values():
    out = trec_out("out.test.a")  # trec_eval -m all_trec qrels.test results.test
    agg = ir_measures.calc_aggregate([NDCG_lin @ 10, NDCG_exp @ 10, HitRate @ 10, HitRate_item @ 10, MRR_zero @ 1000],
                                     ndcg_plugin.read(shared_file("trec_eval", "qrels.test"), "qrels"),
                                     ndcg_plugin.read(shared_file("trec_eval", "results.test"), "run"))
    assert abs(agg[NDCG_lin @ 10] - out["ndcg_cut_10"]["all"]) <= HALF_UNIT
    assert abs(agg[NDCG_exp @ 10] - out["ndcg_cut_10"]["all"]) <= HALF_UNIT  # binary labels: 2^1-1 = 1
    assert abs(agg[HitRate @ 10] - out["success_10"]["all"]) <= HALF_UNIT
    assert abs(agg[HitRate_item @ 10] - out["P_10"]["all"]) <= HALF_UNIT  # 500 docs per topic: min(10, 500)
    assert abs(agg[MRR_zero @ 1000] - out["recip_rank"]["all"]) <= HALF_UNIT


def test_crosscheck_cli_on_the_suite_reports_every_measure_matching(capsys):
    qrels = str(shared_file("trec_eval", "qrels.test"))
    run = str(shared_file("trec_eval", "results.test"))
    assert main(["crosscheck", qrels, run]) == 0
    out = capsys.readouterr().out
    lines = out.strip().splitlines()[1:]
    assert len(lines) == 6
    assert all(line.endswith("match") for line in lines), out


@pytest.mark.filterwarnings("ignore:.*no query has a value:RuntimeWarning")  # MRR_ignore@1 on results.trunc
@pytest.mark.parametrize("qrels,run,level", [("qrels.rel_level", "results.test", 2),
                                              ("qrels.test", "results.trunc", 1),
                                              ("qrels.comment.test", "results.comment.test", 1)])
def test_crosscheck_suite_files_match(qrels, run, level):
    measures = [m(rel=level) @ k for m in (HitRate, HitRate_item, MRR_zero, MRR_ignore) for k in (1, 10, 100)]
    measures += [NDCG_lin @ 10, NDCG_exp @ 10, NDCG_lin, NDCG_exp(ideal="run") @ 20,
                 NDCG_lin(judged_only=True) @ 10]
    rows = ndcg_plugin.crosscheck(str(shared_file("trec_eval", qrels)), str(shared_file("trec_eval", run)), measures)
    assert [r.verdict for r in rows] == ["match"] * len(rows), rows
