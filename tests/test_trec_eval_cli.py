"""``ndcg-plugin trec_eval``: trec_eval 10.0's flags and output. Oracles: the trec_eval suite's
expected outputs (byte for byte), hand computations,
pytrec_eval (the engine's measures against the same command with pytrec_eval computing them),
and a trec_eval binary when NDCG_PLUGIN_TREC_EVAL names one."""
from __future__ import annotations

import contextlib
import io
import os
import random
import re
import shutil
import subprocess

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ndcg_plugin.cli.trec_eval import parse
from ndcg_plugin.errors import UsageError
from ndcg_plugin.trec_eval import command as trec_eval_cli
from ndcg_plugin.trec_eval import native
from ndcg_plugin.trec_eval.report import MissingQuery
from tests.conftest import shared_file
from tests.helpers import run_cli, run_main

# the commands of trec_eval's `make quicktest` and the file each one's output is in
SUITE = [
    ("qrels.test results.test", "out.test"),
    ("qrels.comment.test results.comment.test", "out.comment.test"),
    ("-m all_trec qrels.test results.test", "out.test.a"),
    ("-m all_trec -q qrels.test results.test", "out.test.aq"),
    ("-m all_trec -q -c qrels.test results.trunc", "out.test.aqc"),
    ("-m all_trec -q -c -M100 qrels.test results.trunc", "out.test.aqcM"),
    ("-m all_trec -mrelstring.20 -q -l2 qrels.rel_level results.test", "out.test.aql"),
    ("-q -miprec_at_recall..10,.20,.25,.75,.50 -m P.5,7,3 -m recall.20,2000 -m Rprec_mult.5.0,0.2,0.35 "
     "-mutility.2,-1,0,0 -m 11pt_avg..25,.5,.75 -mndcg_cut.10,20,23.4 -msuccess.2,5,20 qrels.test results.test",
     "out.test.meas_params"),
]


def _output(argv: list[str], use_engine: bool = True) -> tuple[int, str]:
    """What the command prints (status, stdout), in this process."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        o = parse(argv)
        try:
            report = trec_eval_cli.evaluate(o, use_engine=use_engine)
        except MissingQuery as e:
            return 4, e.args[1].query_lines()
        if o.per_query:
            out.write(report.query_lines())
        if o.summary:
            out.write(report.summary_lines())
    return 0, out.getvalue()


@pytest.mark.parametrize("command,expected", SUITE, ids=[e for _, e in SUITE])
def test_suite_outputs_byte_for_byte(command, expected):
    """Every line trec_eval 10.0 printed for the suite, in its order and layout: all_trec whole
    (relstring, rbp, rbp_resid, unj too). meas_params' ndcg.1=3,2=9,4=4.5 is refused
    (test_parameters_pytrec_eval_mishandles_are_refused) and left out of the command."""
    d = shared_file("trec_eval")
    want = (d / expected).read_text().splitlines(keepends=True)
    done = run_main("trec_eval", *command.split(), cwd=d)
    assert done.returncode == 0, done.stderr
    got = done.stdout.splitlines(keepends=True)
    if expected == "out.test.meas_params":
        want = [ln for ln in want if not ln.startswith("ndcg_1=3,2=9,4=4.5")]
    assert got == want
    assert "left out" not in done.stderr


def test_missing_query_without_c_stops_with_status_4_after_the_queries_before_it():
    """trec_eval 10.0 loops over the qrels' queries in order: with -q the lines of 301 are printed,
    then 302 (absent from results.trunc) ends it with status 4 and no summary."""
    d = shared_file("trec_eval")
    done = run_cli("trec_eval", "-q", "-m", "P.5", "-m", "ndcg_cut.10", "qrels.test", "results.trunc", cwd=d)
    assert done.returncode == 4
    assert [ln.split()[1] for ln in done.stdout.splitlines()] == ["301", "301"]
    assert "'302'" in done.stderr and "-c" in done.stderr
    assert run_cli("trec_eval", "-m", "P.5", "qrels.test", "results.trunc", cwd=d).stdout == ""


def _files(tmp_path, qrels: str, run: str):
    (tmp_path / "q").write_text(qrels)
    (tmp_path / "r").write_text(run)
    return str(tmp_path / "q"), str(tmp_path / "r")


def test_hand_computed_layout_counts_and_nan(tmp_path):
    """q1 ranks d2 (label 0) then d1 (label 1); q2's only document is unjudged; q3 judges nothing
    relevant. With -J, q2 keeps no document: trec_eval divides 0 by 0 for iprec_at_recall_0.00
    (printed -nan by glibc) while iprec_at_recall_1.00 is never assigned (the 1 relevant document
    is not reached): 0. P_5 of q1 = 1/5; num_ret is a count (no decimals), summed in the summary;
    recip_rank of q1 = 1/2 (computed by the engine)."""
    q, r = _files(tmp_path, "q1 0 d1 1\nq1 0 d2 0\nq2 0 d3 1\nq3 0 d4 0\n",
                  "q1 Q0 d2 1 2.0 tag\nq1 Q0 d1 2 1.0 tag\nq2 Q0 d9 1 1.0 tag\nq3 Q0 d4 1 1.0 tag\n")
    code, out = _output(["-q", "-J", "-m", "iprec_at_recall.0,1", "-m", "P.5", "-m", "num_ret", "-m", "recip_rank",
                         "-m", "runid", q, r])
    assert code == 0
    assert out == (
        "num_ret               \tq1\t2\n"
        "recip_rank            \tq1\t0.5000\n"
        "iprec_at_recall_0.00  \tq1\t0.5000\n"
        "iprec_at_recall_1.00  \tq1\t0.5000\n"
        "P_5                   \tq1\t0.2000\n"
        "num_ret               \tq2\t0\n"
        "recip_rank            \tq2\t0.0000\n"
        "iprec_at_recall_0.00  \tq2\t  -nan\n"
        "iprec_at_recall_1.00  \tq2\t0.0000\n"
        "P_5                   \tq2\t0.0000\n"
        "num_ret               \tq3\t1\n"
        "recip_rank            \tq3\t0.0000\n"
        "iprec_at_recall_0.00  \tq3\t0.0000\n"
        "iprec_at_recall_1.00  \tq3\t0.0000\n"
        "P_5                   \tq3\t0.0000\n"
        "runid                 \tall\ttag\n"
        "num_ret               \tall\t3\n"
        "recip_rank            \tall\t0.1667\n"
        "iprec_at_recall_0.00  \tall\t  -nan\n"
        "iprec_at_recall_1.00  \tall\t0.1667\n"
        "P_5                   \tall\t0.0667\n")


def test_c_gives_a_missing_query_trec_eval_s_ranking(tmp_path):
    """With -c, q2 (no run line) is evaluated as trec_eval does: one unjudged document, num_ret
    then set back to 0; P_5 = 0 and the mean is over both queries: (1/5 + 0) / 2 = 0.1; num_q 2.
    The plugin's measures see an empty ranking: HitRate@5 = (1 + 0) / 2."""
    q, r = _files(tmp_path, "q1 0 d1 1\nq2 0 d3 1\n", "q1 Q0 d1 1 1.0 t\n")
    code, out = _output(["-c", "-m", "num_q", "-m", "num_ret", "-m", "P.5", "-m", "HitRate@5", q, r])
    assert code == 0
    assert out == ("num_q                 \tall\t2\nnum_ret               \tall\t1\n"
                   "P_5                   \tall\t0.1000\nHitRate@5             \tall\t0.5000\n")


def test_first_parameters_win_and_official_is_the_default(tmp_path):
    """As trec_eval: a measure named twice takes the parameters of the first -m that gives some
    (P.3 here), and no -m means `official`."""
    q, r = _files(tmp_path, "q1 0 d1 1\n", "q1 Q0 d1 1 1.0 t\n")
    _, out = _output(["-m", "P.3", "-m", "P.10", "-m", "P", q, r])
    assert [ln.split("\t")[0].strip() for ln in out.splitlines()] == ["P_3"]
    _, out = _output([q, r])
    names = [ln.split("\t")[0].strip() for ln in out.splitlines()]
    assert names[:5] == ["runid", "num_q", "num_ret", "num_rel", "num_rel_ret"] and names[-1] == "P_1000"


@pytest.mark.parametrize("argv,words", [
    (["-m", "rbp.p=0.5"], ["'rbp.p=0.5'", "default parameters only"]),
    (["-m", "utility.1,2"], ["utility.1,2", "4 comma-separated numbers"]),
    (["-m", "yaap"], ["'yaap'", "not computed"]),
    (["-N", "100"], ["-N"]),
    (["-Z", "z"], ["-Z"]),
    (["-R", "prefs"], ["-R", "prefs"]),
    (["-M", "-3"], ["-M", ">= 0"]),
    (["-l", "-1", "-m", "P.5"], ["-l -1", "below 0"]),
    (["-l", "0", "-m", "HitRate@5"], ["-l 0", "HitRate@5", "1 or more"]),
])
def test_refusals_name_what_is_refused(argv, words, tmp_path):
    q, r = _files(tmp_path, "q1 0 d1 1\n", "q1 Q0 d1 1 1.0 t\n")
    done = run_main("trec_eval", *argv, q, r)
    assert done.returncode == 2 and done.stdout == ""
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr
    assert all(w in done.stderr for w in words), done.stderr


def test_an_unknown_measure_is_one_line_and_trec_evals_status_1(tmp_path):
    # trec_eval 10.0: "trec_eval: illegal measure 'nosuch'", exit 1 (tests/test_edges_round4.py
    # compares the status with a binary)
    q, r = _files(tmp_path, "q1 0 d1 1\n", "q1 Q0 d1 1 1.0 t\n")
    done = run_main("trec_eval", "-m", "nosuch", q, r)
    words = ["unknown measure 'nosuch'"]
    assert done.returncode == 1 and done.stdout == ""
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr
    assert all(w in done.stderr for w in words), done.stderr


@pytest.mark.parametrize("measure", ["ndcg.1=3,2=9,4=4.5", "G.1=2", "Rndcg.2=4", "rbp.p=0.5"])
def test_parameters_pytrec_eval_mishandles_are_refused(measure, tmp_path):
    """pytrec_eval aborts the process on a gain map (an assertion), and the engine computes the
    default gains and rbp's default p only: such parameters are refused by name. utility's
    coefficients are the engine's (pytrec_eval ignores them): refused on the dict path alone."""
    with pytest.raises(UsageError, match=re.escape(measure)):
        trec_eval_cli.plan([measure], judged_only=False)
    assert trec_eval_cli.plan(["utility.2,-1,0,0"], judged_only=False).engine == [("utility", "2,-1,0,0")]
    with pytest.raises(UsageError, match=re.escape("utility.2,-1,0,0")):
        trec_eval_cli.plan(["utility.2,-1,0,0"], judged_only=False, use_engine=False)


def test_wrong_number_of_files_help_and_version():
    done = run_main("trec_eval", "-q", "only_one_file")  # trec_eval: its usage on stderr, status 1
    assert done.returncode == 1 and "two files" in done.stderr
    done = run_main("trec_eval", "--help")
    assert done.returncode == 0 and "-M, --Max_retrieved_per_topic" in done.stdout
    done = run_main("trec_eval", "-v")  # trec_eval: "trec_eval version 10.0-rc3" on stderr, status 0
    assert done.returncode == 0 and done.stdout == "" and done.stderr.startswith("trec_eval version 10.0")


def test_routing_engine_interp_pytrec_and_plugin():
    p = trec_eval_cli.plan(["ndcg_cut.10,5", "recip_rank", "success", "ndcg", "P.5", "map", "num_ret", "utility",
                            "iprec_at_recall", "ndcg_cut.23.4", "NDCG_lin@10"], judged_only=False)
    assert p.engine == [("ndcg_cut", (5, 10)), ("recip_rank", None), ("success", (1, 5, 10)), ("ndcg", None),
                        ("P", (5,)), ("map", None), ("num_ret", None), ("utility", None)]
    assert p.pytrec == [] and p.interp == [("iprec_at_recall", "")] and [str(m) for m in p.plugin] == ["NDCG_lin@10"]
    # ndcg_cut.23.4: trec_eval reads 23 (atol), and so does the plan
    assert trec_eval_cli.plan(["ndcg_cut.23.4"], judged_only=False).engine == [("ndcg_cut", (23,))]
    # -J: the engine too (the rankings it is given hold judged documents only)
    assert trec_eval_cli.plan(["recip_rank"], judged_only=True).engine == [("recip_rank", None)]


def _random_files(rng: random.Random, tmp_path) -> tuple[str, str]:
    qrels, run = [], []
    for q in range(rng.randint(1, 6)):
        docs = list(dict.fromkeys(f"d{rng.randint(0, 30)}" for _ in range(rng.randint(1, 12))))
        labels = [rng.choice([0, 0, 1, 2, 3, -1]) for _ in docs]
        labels[0] = max(labels[0], 0)  # only negative labels: refused (test_faults), trec_eval cannot evaluate it
        qrels += [f"q{q} 0 {d} {label}\n" for d, label in zip(docs, labels, strict=True)]
        if rng.random() < 0.85:
            for d in dict.fromkeys(f"d{rng.randint(0, 30)}" for _ in range(rng.randint(1, 25))):
                run.append(f"q{q} Q0 {d} 0 {rng.choice([1.0, 2.0, 0.5, rng.random()])} t\n")
    if not run:
        run.append("q0 Q0 d1 0 1.0 t\n")
    (tmp_path / "q").write_text("".join(qrels))
    (tmp_path / "r").write_text("".join(run))
    return str(tmp_path / "q"), str(tmp_path / "r")


OPTION_SETS = [["-q", "-c"], ["-q", "-c", "-l", "2"], ["-q", "-c", "-M", "5"], ["-c", "-l", "3"], ["-q"],
               ["-q", "-c", "-J"], ["-q", "-J", "-l", "2"], ["-q", "-J", "-M", "3"]]
MEASURE_SETS = [
    ["-m", "ndcg_cut.1,3,10", "-m", "recip_rank", "-m", "success.1,5", "-m", "ndcg", "-m", "official"],
    # every measure the engine computes, so that the file is streamed (trec_eval/native.py) unless -M
    ["-m", "official", "-m", "map_cut.2,5", "-m", "recall.3", "-m", "P.2,7", "-m", "11pt_avg", "-m", "ndcg_cut.4"],
    ["-m", "iprec_at_recall.0.25,0.5", "-m", "11pt_avg.0,0.33,1", "-m", "bpref", "-m", "gm_bpref", "-m", "NDCG_exp@3"],
    # the measures pytrec_eval computed in the drop-in before the engine did
    ["-m", "relative_P.2,5,30", "-m", "Rprec_mult", "-m", "Rprec_mult.0.5,3", "-m", "utility", "-m", "binG",
     "-m", "G", "-m", "ndcg_rel", "-m", "Rndcg", "-m", "num_nonrel_judged_ret", "-m", "num_ret"],
]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2 ** 32), options=st.sampled_from(OPTION_SETS), measures=st.sampled_from(MEASURE_SETS))
def test_engine_path_prints_what_the_pytrec_eval_path_prints(seed, options, measures, tmp_path):
    """The fast paths (the engine computing the measures it shares with trec_eval; with no other
    measure, the run file streamed) against the slow one (pytrec_eval and the Python
    interpolation computing them on dicts): the same bytes, on random qrels and runs with ties,
    unjudged and negatively judged documents, missing queries and every option that changes them."""
    q, r = _random_files(random.Random(seed), tmp_path)
    streamed = not ("-J" in options and measures is MEASURE_SETS[2])  # a plugin measure; -M N streams too
    if measures is not MEASURE_SETS[0] and streamed:  # the streamed path is the one compared
        o = parse([*options, *measures, q, r])
        assert native.declines(o, trec_eval_cli.plan(list(o.measures), o.judged_only)) is None
    assert _output([*options, *measures, q, r]) == _output([*options, *measures, q, r], use_engine=False)


TREC_EVAL = os.environ.get("NDCG_PLUGIN_TREC_EVAL") or shutil.which("trec_eval")


@pytest.mark.skipif(not TREC_EVAL, reason="set NDCG_PLUGIN_TREC_EVAL to a trec_eval 10.0 binary to compare with it")
@pytest.mark.parametrize("seed", range(40))
def test_against_a_trec_eval_binary(seed, tmp_path):
    """Random qrels and runs, all_trec and the engine's measures, with -c, -q or not, and a random
    -l, -M or -J: the same stdout as trec_eval 10.0, every line (relstring, unj, utility's coefficients and
    the measures pytrec_eval used to compute among them) but rbp's: trec_eval's te_calc_rbp reads
    two doubles it never set (min, max), so after other measures have run its value depends on
    what they left on the stack (test_rbp_against_a_trec_eval_binary compares it alone)."""
    rng = random.Random(seed)
    q, r = _random_files(rng, tmp_path)
    # odd seeds without -q: the fast path then sums its columns and makes no per-query rows
    options = [*(["-q"] if seed % 2 == 0 else []), "-c",
               *rng.choice([[], ["-l", "2"], ["-M", "4"], ["-J"], ["-l", "3"]])]
    argv = [*options, "-m", "all_trec", "-m", "ndcg_cut.3", "-m", "success.2", "-m", "relstring.15",
            "-m", "Rprec_mult.0.3,1.5", "-m", "utility.2,-1,0.5,0.25", "-m", "relative_P.2,40", "-m", "unj.1,3", q, r]
    theirs = subprocess.run([TREC_EVAL, *argv], capture_output=True, text=True)
    status, ours = _output(argv)
    assert (status, _but_rbp(ours)) == (theirs.returncode, _but_rbp(theirs.stdout))


def _but_rbp(text: str) -> str:
    return "".join(ln for ln in text.splitlines(keepends=True) if not ln.startswith("rbp "))


@pytest.mark.skipif(not TREC_EVAL, reason="set NDCG_PLUGIN_TREC_EVAL to a trec_eval 10.0 binary to compare with it")
@pytest.mark.parametrize("seed", range(12))
def test_rbp_against_a_trec_eval_binary(seed, tmp_path):
    """rbp and rbp_resid asked alone (trec_eval's uninitialised min and max then hold what the
    scaling of gains into 0..1 needs, as in the suite's expected outputs): trec_eval's bytes."""
    rng = random.Random(seed)
    q, r = _random_files(rng, tmp_path)
    argv = ["-q", "-c", *rng.choice([[], ["-l", "2"], ["-M", "4"], ["-J"]]), "-m", "rbp", "-m", "rbp_resid", q, r]
    theirs = subprocess.run([TREC_EVAL, *argv], capture_output=True, text=True)
    assert _output(argv) == (theirs.returncode, theirs.stdout)


def test_c_recounts_num_rel_over_labels_above_0(tmp_path):
    """trec_eval 10.0's quirk, kept: with -c the summary's num_rel counts every label above 0 of
    every qrels query (its te_calc_avg_num_rel), whatever -l says; per query it counts labels >= -l.
    q1 judges d1 1 and d2 3: with -l 3, q1 has num_rel 1 and the summary says 2."""
    q, r = _files(tmp_path, "q1 0 d1 1\nq1 0 d2 3\n", "q1 Q0 d1 1 1.0 t\n")
    assert _output(["-q", "-c", "-l", "3", "-m", "num_rel", q, r]) == (
        0, "num_rel               \tq1\t1\nnum_rel               \tall\t2\n")
    assert _output(["-q", "-l", "3", "-m", "num_rel", q, r])[1].endswith("num_rel               \tall\t1\n")


@pytest.mark.parametrize("options", [[], ["-c"], ["-J"], ["-q", "-l", "2"]])
def test_the_fast_path_computes_all_trec_official_and_each_measure_alone(options, tmp_path):
    """No trec_eval measure of all_trec is left to pytrec_eval: the streamed path takes all_trec,
    official and each measure alone (with and without its parameters), and names nothing left out."""
    q, r = _files(tmp_path, "q1 0 d1 1\n", "q1 Q0 d1 1 1.0 t\n")
    given = {"relstring": "relstring.20", "utility": "utility.2,-1,0,0", "Rprec_mult": "Rprec_mult.0.5,1.5",
             "relative_P": "relative_P.3", "unj": "unj.7", "P": "P.3,9", "set_F": "set_F"}
    for m in ["all_trec", "official", *trec_eval_cli.ALL_TREC, *given.values()]:
        o = parse([*options, "-m", m, q, r])
        p = trec_eval_cli.plan(list(o.measures), o.judged_only)
        assert native.declines(o, p) is None and not p.left_out, m


@pytest.mark.parametrize("judged_only", [False, True])
def test_c_clears_a_missing_query_by_exact_name_as_trec_eval_10(judged_only, tmp_path):
    """q2 (judges d2 1, d3 0: R = 1) is missing from the run. trec_eval 10.0 evaluates it on one
    unjudged document (none with -J), then sets num_ret, utility, unj*, rbp_resid to 0 and
    relstring to '' by their exact printed names: relstring_3 keeps that document ('-'; '' with -J)
    and utility_2,-1,0.5,0.25 its value: 2*0 - 1*1 + 0.5*1 + 0.25*(0 - 1 - 1) = -1 (with -J, on no
    document: 0.5*1 + 0.25*(0 - 0 - 1) = 0.25)."""
    q, r = _files(tmp_path, "q1 0 d1 1\nq2 0 d2 1\nq2 0 d3 0\n", "q1 Q0 d1 1 1.0 t\nq1 Q0 zz 1 0.5 t\n")
    j = ["-J"] if judged_only else []
    _, out = _output(["-q", "-c", *j, "-m", "relstring.3", "-m", "utility.2,-1,0.5,0.25", "-m", "unj.2",
                      "-m", "rbp_resid", q, r])
    assert [ln for ln in out.splitlines() if "\tq2\t" in ln] == [
        "relstring_3           \tq2\t" + ("''" if judged_only else "'-'"),
        "utility_2,-1,0.5,0.25 \tq2\t" + ("0.2500" if judged_only else "-1.0000"),
        "rbp_resid             \tq2\t0.0000", "unj_2                 \tq2\t0.0000"]
    for use_engine in (True, False):  # the streamed path and the dict path
        _, out = _output(["-q", "-c", *j, "-m", "relstring", "-m", "utility", "-m", "num_ret", q, r],
                         use_engine=use_engine)
        assert [ln for ln in out.splitlines() if "\tq2\t" in ln] == [
            "num_ret               \tq2\t0", "relstring             \tq2\t''", "utility               \tq2\t0.0000"]
