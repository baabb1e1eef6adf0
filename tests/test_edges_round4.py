"""Issue 42 (edges, round 4): huge cutoffs, the trec_eval drop-in's odd options, threads that
cannot start, the BOM warnings' order, Ctrl-C during the imports, standard streams, labels of
64 bits from Python. Each case has trec_eval 10.0's behaviour written beside it where trec_eval
has one (from runs of the binary; checked against one when NDCG_PLUGIN_TREC_EVAL names it).
Where the case is about the command line, an end-to-end CLI process."""
from __future__ import annotations

import os
import tracemalloc

import pytest

import ndcg_plugin
from tests.helpers import run_cli

TREC_EVAL = os.environ.get("NDCG_PLUGIN_TREC_EVAL")
LONG_MAX = 2 ** 63 - 1

# three queries, graded labels, ties inside and across the cutoffs, a query the run lacks
QRELS = "".join(f"{q} 0 d{d} {r}\n" for q, d, r in [
    ("q1", 1, 2), ("q1", 2, 0), ("q1", 3, 1), ("q1", 7, 3), ("q1", 9, 1),
    ("q2", 1, 1), ("q2", 4, 2), ("q3", 5, 1)])
RUN = "".join(f"{q} Q0 d{d} {i} {s} r\n" for i, (q, d, s) in enumerate([
    ("q1", 1, 3.0), ("q1", 2, 3.0), ("q1", 3, 2.0), ("q1", 4, 2.0), ("q1", 5, 1.0), ("q1", 6, 0.5),
    ("q2", 4, 1.0), ("q2", 5, 1.0), ("q2", 1, 0.0)]))
#: the deepest any ranking or ideal ranking above goes: a deeper cutoff cannot change a value
DEEPEST = 6
#: measures whose value stops changing once the cutoff passes every ranking (P@k does not: it
#: divides by k)
SATURATING = ["NDCG_lin@{k}", "NDCG_exp@{k}", "NDCG_lin(ties='average')@{k}", "NDCG_lin(ideal='run')@{k}",
              "NDCG_exp(judged_only=True)@{k}", "HitRate@{k}", "HitRate_item@{k}", "MRR_zero@{k}",
              "MRR_ignore@{k}", "nDCG@{k}", "R@{k}", "AP@{k}", "RR@{k}", "Success@{k}"]


def _files(tmp_path) -> tuple[str, str]:
    (tmp_path / "qrels").write_text(QRELS)
    (tmp_path / "run").write_text(RUN)
    return str(tmp_path / "qrels"), str(tmp_path / "run")


# -- item 2: huge cutoffs ---------------------------------------------------------------------------

@pytest.mark.parametrize("measure", SATURATING)
@pytest.mark.parametrize("huge", [10 ** 8, 2 ** 31, 2 ** 32 + 1, LONG_MAX])
def test_a_cutoff_past_every_ranking_gives_the_value_at_the_longest_ranking(measure, huge, tmp_path):
    """trec_eval 10.0 takes any cutoff up to LONG_MAX (``-m ndcg_cut.2147483648`` answers at once,
    the value of the whole ranking); so does the engine, whatever the cutoff."""
    qrels, run = _files(tmp_path)
    deep = ndcg_plugin.per_query(qrels, run, measure.format(k=huge))
    at_longest = ndcg_plugin.per_query(qrels, run, measure.format(k=DEEPEST))
    got, expected = deep.to_numpy().ravel().tolist(), at_longest.to_numpy().ravel().tolist()
    assert got == pytest.approx(expected, nan_ok=True, abs=0, rel=0)


def test_p_at_a_huge_cutoff_divides_by_it(tmp_path):
    """P@k = relevant retrieved in the top k / k (trec_eval's P_k): q1 retrieves d1 (2) and d3 (1)
    relevant: 2 / k; q2 retrieves d4 (2) and d1 (1): 2 / k."""
    qrels, run = _files(tmp_path)
    got = ndcg_plugin.per_query(qrels, run, f"P@{2 ** 40}")
    assert got.loc["q1"].iloc[0] == 2 / 2 ** 40 and got.loc["q2"].iloc[0] == 2 / 2 ** 40


def test_memory_does_not_grow_with_the_cutoff(tmp_path):
    """nDCG@10^8 once built a table of 10^8 discounts (800 MB), nDCG@2^31 was OOM-killed at
    20 GB: now the tables are the size of the rankings and the qrels."""
    qrels, run = _files(tmp_path)
    for measure in ("NDCG_lin@{k}", "NDCG_exp(ties='average')@{k}", "nDCG@{k}", "P@{k}", "AP@{k}"):
        tracemalloc.start()
        try:
            ndcg_plugin.per_query(qrels, run, measure.format(k=10 ** 8))
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert peak < 50 * 2 ** 20, (measure, peak)


def test_a_cutoff_beyond_64_bits_is_one_line_and_exit_2(tmp_path):
    """``eval QRELS RUN NDCG_lin@99999999999999999999`` was an OverflowError traceback; trec_eval
    has no such measure name (its ``ndcg_cut.99999999999999999999`` saturates at LONG_MAX: the
    drop-in does that, see below)."""
    qrels, run = _files(tmp_path)
    for measure in ("NDCG_lin@99999999999999999999", f"nDCG@{2 ** 63}", f"P@{2 ** 64}"):
        proc = run_cli("eval", qrels, run, "-m", measure)
        assert proc.returncode == 2 and proc.stdout == "", proc
        assert proc.stderr.count("\n") == 1 and "at most 2^63 - 1" in proc.stderr and measure in proc.stderr
    proc = run_cli("eval", qrels, run, "-m", f"NDCG_lin@{LONG_MAX}")
    assert proc.returncode == 0, proc.stderr


def test_a_cutoff_beyond_64_bits_from_python_is_a_value_error(tmp_path):
    qrels, run = _files(tmp_path)
    with pytest.raises(ValueError, match="2\\^63 - 1"):
        ndcg_plugin.per_query(qrels, run, ndcg_plugin.NDCG_lin @ (2 ** 64))
    import ir_measures
    with pytest.raises(ValueError, match="2\\^63 - 1"):
        ndcg_plugin.per_query(qrels, run, ir_measures.nDCG @ (2 ** 64))
