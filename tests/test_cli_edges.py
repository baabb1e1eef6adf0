"""The command line's edges and habits (issue 42, round 4: items 7i, 7k, 7m, 7n, 7o, 8-13, 17-19):
each case one named test, with trec_eval 10.0's behaviour written beside it where it has one.
In-process (``run_main``) unless the case is about the process itself (``run_cli``): a usage error
or a failure is one line on stderr, exit status 2, no traceback."""
from __future__ import annotations

import math
import os
import re

import pytest

from tests import helpers

QRELS = "q1 0 d1 2\nq1 0 d2 1\nq1 0 d3 0\nq2 0 d3 1\nq3 0 d9 1\n"
# q1: d4 (unjudged) first, then d1, d2, d3 tied at score 1.0 (trec_eval orders them by doc id
# descending: d3, d2, d1); q2: its one relevant doc first; q3: no run line
RUN = "q1 Q0 d1 1 1.0 r\nq1 Q0 d2 2 1.0 r\nq1 Q0 d3 3 1.0 r\nq1 Q0 d4 4 2.0 r\nq2 Q0 d3 1 0.5 r\n"


@pytest.fixture
def files(tmp_path) -> tuple[str, str]:
    (tmp_path / "qrels").write_text(QRELS)
    (tmp_path / "run").write_text(RUN)
    return str(tmp_path / "qrels"), str(tmp_path / "run")


def one_line_error(proc, *words: str, code: int = 2) -> str:
    """The failure's one stderr line (checked: status ``code``, nothing on stdout, no traceback,
    every word in it)."""
    assert proc.returncode == code, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr and proc.stdout == "", proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    for w in words:
        assert w in lines[0], (w, lines[0])
    return lines[0]


# --- 7k: huge option values ------------------------------------------------------------------------
# trec_eval has no -p (it prints %6.4f); its -M and -l read numbers with atoi. Here -p takes 0-100
# or -1 (every digit): Python's format refused 2^31 ("precision too big", a traceback) and a larger
# one ("Too many decimal digits"); --block-size 10^20 was an OverflowError in the reader.

@pytest.mark.parametrize("command", ["eval", "crosscheck", "compare"])
@pytest.mark.parametrize("value", ["2147483648", "99999999999999999999"])
def test_huge_places_are_one_usage_line(files, command, value):
    q, r = files
    argv = {"eval": ["eval", q, r, "NDCG_lin@2"], "crosscheck": ["crosscheck", q, r, "-m", "NDCG_lin@2"],
            "compare": ["compare", q, r, r, "-m", "NDCG_lin@2", "--names", "a", "b"]}[command]
    line = one_line_error(helpers.run_main(*argv, "-p", value), "-p/--places", value, "from 0 to 100, or -1")
    assert line.startswith(f"ndcg-plugin {command}: error: ")


def test_places_at_the_bound_print_that_many_digits(files):
    proc = helpers.run_main("eval", *files, "P@2", "-p", "100")
    # P@2 averaged over q1 (d4 unjudged, d3 non-relevant: 0), q2 (d3 relevant: 1/2) and q3 (0)
    assert proc.returncode == 0 and proc.stdout == "P@2\t" + f"{(0 + 0.5 + 0) / 3:.100f}" + "\n"


def test_huge_block_size_is_one_usage_line(files):
    one_line_error(helpers.run_main("eval", *files, "NDCG_lin@2", "--block-size", "99999999999999999999"),
                   "--block-size", "from 0 to 1024G", "99999999999999999999")


# --- 8: eval in trec_eval's order, options first ---------------------------------------------------
# trec_eval takes options before the files (trec_eval -m ndcg_cut.3 QRELS RUN); eval's -m used to
# take the files as measures and then say "required: qrels, run, measures".

def test_eval_takes_the_files_after_the_measures_of_m(files):
    q, r = files
    usual = helpers.run_main("eval", q, r, "NDCG_lin@3", "P@2", "-q")
    options_first = helpers.run_main("eval", "-q", "-m", "NDCG_lin@3", "P@2", q, r)
    assert usual.returncode == options_first.returncode == 0 and options_first.stdout == usual.stdout
    assert "all\tNDCG_lin@3\t" in usual.stdout and options_first.stderr == ""
    between = helpers.run_main("eval", q, "-m", "NDCG_lin@3", "P@2", r, "-q")
    assert between.returncode == 0 and between.stdout == usual.stdout


def test_eval_with_one_file_after_m_says_what_is_missing(files):
    one_line_error(helpers.run_main("eval", "-m", "NDCG_lin@3", files[1]), "ndcg-plugin eval: error:",
                   "missing QRELS and RUN", "eval -m MEASURE ... QRELS RUN")


# --- 9: did you mean -------------------------------------------------------------------------------
# trec_eval: "trec_eval: illegal measure 'ndcg_Cut'", exit 1, no suggestion.

@pytest.mark.parametrize("typed,meant", [("NDCG_Exp@10", "NDCG_exp@10"), ("nDGC@10", "nDCG@10"),
                                         ("mrr_zero(rel=2)@10", "MRR_zero(rel=2)@10"), ("Hitrate@3", "HitRate@3")])
def test_a_mistyped_measure_gets_a_suggestion(files, typed, meant):
    line = one_line_error(helpers.run_main("eval", *files, typed), f"unknown measure {typed!r}", "did you mean")
    suggested = re.search(r"did you mean (.*?)\?", line).group(1).split(" or ")
    assert meant in suggested, line


def test_a_measure_close_to_nothing_gets_no_suggestion(files):
    line = one_line_error(helpers.run_main("eval", *files, "XYZQ@2"), "unknown measure 'XYZQ@2'")
    assert "did you mean" not in line


# --- 10: usage errors are one line -----------------------------------------------------------------
# trec_eval prints its 30-line usage on a bad option; docs/cli.md promises one line here.

@pytest.mark.parametrize("argv,words", [
    (["eval", "{q}", "{r}", "--block-size", "-5", "nDCG@10"], ["ndcg-plugin eval: error: argument --block-size"]),
    (["compare", "{q}", "{r}", "{r}", "-m", "RR", "--names", "a", "b", "--alpha", "1.5"],
     ["ndcg-plugin compare: error: argument --alpha", "1.5"]),
    (["eval", "{q}", "{r}", "nDCG@10", "--output", "xml"], ["argument -o/--output", "'xml'"]),
    (["crosscheck", "{q}"], ["ndcg-plugin crosscheck: error:", "required: run"]),
    (["-V"], ["ndcg-plugin: error: unrecognized option -V", "eval, crosscheck"]),
    (["--frobnicate", "eval"], ["unrecognized option --frobnicate"]),
    ([], ["give a command (eval, crosscheck"]),
])
def test_usage_errors_are_one_line(files, argv, words):
    q, r = files
    proc = helpers.run_main(*[a.format(q=q, r=r) for a in argv])
    line = one_line_error(proc, *words)
    assert "usage:" not in line and line.endswith("--help)")


# --- 7m: messages of two lines are one ------------------------------------------------------------
# trec_eval reads no Parquet and starts no JVM; its errors are one line ("trec_eval: ...").

def _corrupt_parquet(path) -> None:
    """A Parquet file whose footer (thrift metadata) is damaged: pyarrow's message then holds a newline."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    pq.write_table(pa.table({"query_id": ["q1"], "doc_id": ["d1"], "score": [1.0]}), path)
    data = bytearray(path.read_bytes())
    size = int.from_bytes(data[-8:-4], "little")
    for i in range(len(data) - 8 - size, len(data) - 8, 3):
        data[i] = 0xFF
    path.write_bytes(bytes(data))


def test_a_parquet_error_with_a_newline_is_one_line(files, tmp_path):
    bad = tmp_path / "bad.parquet"
    _corrupt_parquet(bad)
    import pyarrow.parquet as pq
    with pytest.raises(Exception) as raw:  # the library's own message: more than one line
        pq.ParquetFile(bad)
    assert "\n" in str(raw.value), "pyarrow's message has no newline any more: this case is moot"
    one_line_error(helpers.run_main("eval", files[0], str(bad), "NDCG_lin@2"), str(bad), "thrift")


def test_a_spark_that_cannot_start_is_one_line_without_unclosed_file_warnings(files, tmp_path):
    pytest.importorskip("pyspark")
    java = tmp_path / "jdk" / "bin" / "java"
    java.parent.mkdir(parents=True)
    java.write_text("#!/bin/sh\necho 'Error: this java is broken' >&2\nexit 1\n")
    java.chmod(0o755)
    proc = helpers.run_cli("eval", *files, "NDCG_lin@2", "--engine", "spark",
                           env={"JAVA_HOME": str(java.parent.parent), "PYTHONDEVMODE": "1"})
    line = one_line_error(proc, "Spark could not start", "this java is broken")
    assert "unclosed" not in line


# --- 11: the duplicate-pair message in each interface's words ---------------------------------------
# trec_eval refuses a repeated pair in the qrels ("duplicate docs"); in a run it keeps both lines.

DUP_RUN = "q1 Q0 d1 1 1.0 r\nq1 Q0 d1 2 0.5 r\n"


def test_the_duplicate_message_names_the_cli_option_on_the_command_line(files, tmp_path):
    (tmp_path / "dup").write_text(DUP_RUN)
    line = one_line_error(helpers.run_main("eval", files[0], str(tmp_path / "dup"), "NDCG_lin@2"),
                          "lines 1 and 2", "pass --duplicates first|max to keep one")
    assert "duplicates='first'" not in line


def test_the_duplicate_message_names_the_keyword_in_python(tmp_path):
    import ndcg_plugin
    (tmp_path / "dup").write_text(DUP_RUN)
    with pytest.raises(ndcg_plugin.InputError) as e:
        ndcg_plugin.read(str(tmp_path / "dup"), "run")
    assert str(e.value).endswith("pass duplicates='first' or 'max' to keep one") and "--duplicates" not in str(e.value)


# --- 18: a Parquet file with other column names -------------------------------------------------------

@pytest.mark.parametrize("kind", ["qrels", "run"])
def test_other_column_names_name_the_columns_option(files, tmp_path, kind):
    import pyarrow as pa
    import pyarrow.parquet as pq
    value = {"qrels": ("rating", [1]), "run": ("prediction", [1.0])}[kind]
    path = tmp_path / f"{kind}.parquet"
    pq.write_table(pa.table({"user": ["q1"], "item": ["d1"], value[0]: value[1]}), path)
    q, r = (str(path), files[1]) if kind == "qrels" else (files[0], str(path))
    line = one_line_error(helpers.run_main("eval", q, r, "NDCG_lin@2"), "found ['user', 'item'",
                          f"name them with --{kind}-columns query_id=COLUMN")
    assert "columns=" not in line
    import ndcg_plugin
    with pytest.raises(ndcg_plugin.InputError, match=r"name them with columns=\{'query_id': COLUMN"):
        ndcg_plugin.read(str(path), kind)


# --- 7i: irm (the ir_measures command) fails as eval fails --------------------------------------------
# trec_eval: "trec_eval: Cannot read ..."-style one-line errors, exit 1. The ir_measures command alone:
# a traceback (exit 1) for a missing run, a directory, EIO or a bad line; exit 255 for an unknown
# measure; SIGABRT (pytrec_eval's assertion) for nDCG@0.

BAD_RUN = "q1 Q0 d1 1\n"  # 4 columns


@pytest.mark.parametrize("case,argv,words", [
    ("missing qrels", ["{d}/nothing", "{r}", "nDCG@10"], ["{d}/nothing: no such file, and not an ir-datasets id"]),
    ("missing run", ["{q}", "{d}/nothing", "nDCG@10"], ["{d}/nothing: cannot be read: No such file"]),
    ("directory run", ["{q}", "{d}", "nDCG@10"], ["{d}: is a directory"]),
    ("directory qrels", ["{d}", "{r}", "nDCG@10"], ["{d}: is a directory"]),
    ("bad run line", ["{q}", "{d}/bad", "nDCG@10"], ["{d}/bad:1: expected 6 columns"]),
    ("unknown measure", ["{q}", "{r}", "nDGC@10"], ["unknown measure 'nDGC@10'", "did you mean nDCG@10"]),
    ("cutoff 0, plugin measure", ["{q}", "{r}", "NDCG_lin@0"], ["invalid measure 'NDCG_lin@0'"]),
    ("huge places", ["{q}", "{r}", "nDCG@10", "-p", "99999999999999999999"], ["--places/-p", "from 0 to 100"]),
    ("no measure", ["{q}", "{r}"], ["ndcg-plugin irm: error:", "required: measures"]),
    ("-n without -q", ["{q}", "{r}", "nDCG@10", "-n"], ["--no_summary (-n) only supported with --by_query"]),
])
def test_irm_fails_in_one_line_as_eval_does(files, tmp_path, case, argv, words):
    (tmp_path / "bad").write_text(BAD_RUN)
    q, r = files
    fill = {"q": q, "r": r, "d": str(tmp_path)}
    one_line_error(helpers.run_main("irm", *[a.format(**fill) for a in argv]), *[w.format(**fill) for w in words])


def test_irm_bad_line_is_named_as_eval_names_it(files, tmp_path):
    (tmp_path / "bad").write_text(BAD_RUN)
    irm = one_line_error(helpers.run_main("irm", files[0], str(tmp_path / "bad"), "nDCG@10"))
    ev = one_line_error(helpers.run_main("eval", files[0], str(tmp_path / "bad"), "nDCG@10"))
    assert irm == ev


def test_irm_cutoff_zero_of_a_builtin_is_refused_not_aborted(files):
    # a process of its own: the failure this replaces is a signal (pytrec_eval's assertion, SIGABRT)
    one_line_error(helpers.run_cli("irm", *files, "nDCG@0"), "invalid measure 'nDCG@0'", "k >= 1")


@pytest.mark.skipif(not os.path.exists("/proc/self/mem"), reason="needs Linux's /proc/self/mem (reads fail with EIO)")
def test_irm_eio_is_one_line_naming_the_file(files):
    one_line_error(helpers.run_main("irm", files[0], "/proc/self/mem", "nDCG@10"),
                   "/proc/self/mem: cannot be read: Input/output error")


def test_irm_still_prints_what_ir_measures_prints(files):
    # by hand: P@2 is (0 + 1/2 + 0) / 3 (see test_places_at_the_bound_print_that_many_digits)
    proc = helpers.run_main("irm", *files, "P@2", "-p", "6")
    assert proc.returncode == 0 and proc.stdout == "P@2\t0.166667\n", proc.stderr


# --- 12: explain --------------------------------------------------------------------------------------
# trec_eval has no explain; with -q -c it prints 0 for a qrels query the run lacks.

def test_explain_of_a_query_without_run_lines_says_so(files):
    proc = helpers.run_main("explain", *files, "--query", "q3", "-m", "NDCG_lin@2")
    assert proc.returncode == 0, proc.stderr
    assert "no documents retrieved for query q3" in proc.stdout
    assert "Empty DataFrame" not in proc.stdout and "Columns:" not in proc.stdout
    # q3's one relevant doc is not retrieved: DCG 0, IDCG 1, value 0
    assert proc.stdout.splitlines()[-1] == "NDCG_lin@2 = 0.0000"


def test_explain_of_ties_average_explains_the_averaged_value(files):
    """By hand, q1 at k=2: rank 1 is d4 (score 2, unjudged, gain 0); d1, d2, d3 tie at score 1
    (gains 2, 1, 0: mean 1) over ranks 2-4, so E[DCG@2] = 0 + 1 / log2(3) = 0.6309; the ideal
    ranking is gains 2, 1: IDCG@2 = 2 + 1 / log2(3) = 2.6309; NDCG = 0.6309 / 2.6309 = 0.2398.
    (trec_eval's order puts d3, gain 0, at rank 2: DCG 0.)"""
    proc = helpers.run_main("explain", *files, "--query", "q1", "-m", "NDCG_lin(ties='average')@2")
    assert proc.returncode == 0, proc.stderr
    dcg, idcg = 1 / math.log2(3), 2 + 1 / math.log2(3)
    assert f"E[DCG@2] = {dcg:.4f}, IDCG@2 = {idcg:.4f}, NDCG@2 = E[DCG] / IDCG = {dcg / idcg:.4f}" in proc.stdout
    assert proc.stdout.splitlines()[-1] == f"NDCG_lin(ties='average')@2 = {dcg / idcg:.4f}"
    row = next(ln.split() for ln in proc.stdout.splitlines() if ln.split()[:2] == ["2", "d3"])
    assert row[-3:] == [f"{1 / math.log2(3):.4f}", f"{dcg:.4f}", f"{dcg:.4f}"]  # discount, contribution, dcg
    assert "as trec_eval" not in proc.stdout


def test_explain_of_another_family_under_ties_average_says_the_value_is_averaged(files):
    # HitRate@2 of q1 under ties='average': one slot (rank 2) for the tie d1, d2, d3, two of them
    # relevant: 2/3 (trec_eval's order puts d3, not relevant, there: 0)
    proc = helpers.run_main("explain", *files, "--query", "q1", "-m", "HitRate(ties='average')@2")
    assert proc.returncode == 0 and "the value is the expected one over every order" in proc.stdout
    assert proc.stdout.splitlines()[-1] == f"HitRate(ties='average')@2 = {2 / 3:.4f}"


# --- 13: crosscheck of a measure trec_eval has no counterpart for --------------------------------------

def test_crosscheck_of_ties_average_is_not_comparable_not_a_mismatch(files):
    proc = helpers.run_main("crosscheck", *files, "-m", "NDCG_lin(ties='average')@2", "NDCG_lin@2")
    assert proc.returncode == 0, (proc.stdout, proc.stderr)
    rows = {ln.split()[0]: ln for ln in proc.stdout.splitlines()[1:]}
    assert "not comparable" in rows["NDCG_lin(ties='average')@2"] and "MISMATCH" not in proc.stdout
    assert rows["NDCG_lin@2"].endswith("match")


# --- 7n: no NaN printed as a number, no p-value from nothing -----------------------------------------
# trec_eval reads integer labels only (no gains option), so it has no such overflow.

HUGE = "NDCG_lin(gains={2: 1.7e308, 1: 1.7e308})@3"  # IDCG of q1: 1.7e308 * (1 + 1/log2(3)) = inf


@pytest.mark.parametrize("block", ["8M", "0"])
def test_gains_whose_dcg_overflows_are_refused_naming_the_measure(files, block):
    one_line_error(helpers.run_main("eval", *files, HUGE, "--block-size", block), "NDCG_lin with gains",
                   "overflows a double")


def test_gains_whose_dcg_overflows_are_refused_in_python(files):
    import ir_measures

    import ndcg_plugin
    with pytest.raises(ValueError, match="NDCG_lin with gains .* overflows a double"):
        ir_measures.calc_aggregate([ir_measures.parse_measure(HUGE)], ndcg_plugin.read(files[0], "qrels"),
                                   ndcg_plugin.read(files[1], "run"))


def test_huge_gains_that_do_not_overflow_give_the_scaled_value(files):
    # NDCG does not change when every gain is scaled: as gains {2: 1, 1: 1}. By hand, k=3: q1 ranks
    # d4 (unjudged), d3 (0), d2 (gain g) at 1-3: DCG g/2, IDCG g (1 + 1/log2(3)); q2 1; q3 0.
    proc = helpers.run_main("eval", *files, "NDCG_lin(gains={2: 1e308, 1: 1e308})@3", "-p", "6")
    q1 = 0.5 / (1 + 1 / math.log2(3))
    assert proc.returncode == 0 and proc.stdout.split("\t")[1] == f"{(q1 + 1 + 0) / 3:.6f}\n", proc.stderr


def test_compare_gives_no_p_value_from_zero_pairs_and_says_why(files, tmp_path):
    # MRR_ignore leaves misses out: a run that retrieves no relevant doc has no value for any query,
    # so no query pairs with the baseline; a test on zero pairs used to print p = 1.0
    (tmp_path / "none").write_text("q1 Q0 d9 1 1.0 r\nq2 Q0 d8 1 0.5 r\n")
    proc = helpers.run_main("compare", files[0], files[1], str(tmp_path / "none"), "-m", "MRR_ignore@10", "P@2",
                            "--names", "base", "none", "-o", "csv")
    assert proc.returncode == 0, proc.stderr
    import csv
    rows = {r["run"]: r for r in csv.DictReader(proc.stdout.splitlines())}
    none = rows["none"]  # no p-value (empty), zero pairs; P@2 is tested
    assert none["p:MRR_ignore@10"] == "" and none["pairs:MRR_ignore@10"] == "0" and none["p:P@2"] != ""
    assert "ndcg-plugin: no p-value for none on MRR_ignore@10: no query has a value for MRR_ignore@10 in both none " \
           "and base" in proc.stderr.splitlines()


def test_compare_in_python_records_why_a_pair_has_no_test(files, tmp_path):
    from ndcg_plugin import compare
    (tmp_path / "none").write_text("q1 Q0 d9 1 1.0 r\nq2 Q0 d8 1 0.5 r\n")
    with pytest.warns(RuntimeWarning, match="no query has a value"):
        result = compare.compare(files[0], {"base": files[1], "none": str(tmp_path / "none")}, ["MRR_ignore@10"])
    assert list(result.untested) == [("none", "base", "MRR_ignore@10")]
    test = result.tests[("none", "base", "MRR_ignore@10")]
    assert test.pairs == 0 and math.isnan(test.pvalue) and not test.significant


# --- 7o: IR_DATASETS_HOME set to the empty string ---------------------------------------------------------
# trec_eval reads files only. ir-datasets reads an empty IR_DATASETS_HOME as the current directory and
# created a folder per collection there (19 of them).

@pytest.mark.parametrize("variable", ["IR_DATASETS_HOME", "IR_DATASETS_TMP"])
@pytest.mark.parametrize("command", ["eval", "irm"])
def test_an_empty_ir_datasets_home_is_refused_and_creates_nothing(files, tmp_path, variable, command):
    here = tmp_path / "cwd"
    here.mkdir()
    # a process of its own: ir-datasets reads the variable when it is imported
    proc = helpers.run_cli(command, "msmarco-passage/trec-dl-2019/judged", files[1], "nDCG@10", env={variable: ""},
                           cwd=str(here))
    one_line_error(proc, f"{variable} is set to the empty string", "unset it")
    assert list(here.iterdir()) == []


# --- 17: spark.evaluate given what is no Spark DataFrame ------------------------------------------------

@pytest.mark.parametrize("given", ["pandas", "path"])
def test_spark_evaluate_of_a_pandas_frame_is_a_type_error_saying_what_to_pass(files, given):
    pytest.importorskip("pyspark")
    import ndcg_plugin
    from ndcg_plugin import spark
    qrels, run = ((ndcg_plugin.read(files[0], "qrels"), ndcg_plugin.read(files[1], "run")) if given == "pandas"
                  else files)
    with pytest.raises(TypeError, match=r"qrels: expected a Spark DataFrame, got .*spark.createDataFrame\(df\)"):
        spark.evaluate(qrels, run, ["NDCG_lin@2"])  # no JVM is started: refused before any Spark call


# --- 18: reproduce runs --plot: the legend covers no bar ------------------------------------------------

def test_reproduce_plot_legends_stand_outside_the_panels(files, tmp_path):
    pytest.importorskip("matplotlib")
    from ndcg_plugin.cli.reproduce import figure
    from ndcg_plugin.reproduce import compute_runs
    q, r = files
    (tmp_path / "other").write_text("q1 Q0 d1 1 3.0 r\nq1 Q0 d4 2 2.0 r\nq2 Q0 d9 1 0.5 r\nq3 Q0 d9 1 1.0 r\n")
    other = str(tmp_path / "other")
    report = compute_runs(q, r, other, other, r, ["NDCG_lin@10", "P@2"], cutoffs=[2])
    fig = figure(report)
    fig.canvas.draw()
    for ax in fig.axes:
        legend, panel = ax.get_legend().get_window_extent(), ax.get_window_extent()
        assert legend.x0 >= panel.x1, (legend, panel)  # beside the panel, right of it: over no bar
    import matplotlib.pyplot as plt
    plt.close(fig)


# --- 19: the README's test command: how long, and what skips without the reference data ----------------

def test_readme_test_paragraph_says_how_long_and_how_to_see_the_skips():
    from tests.conftest import ROOT
    text = (ROOT / "README.md").read_text()
    tests = text[text.index("## Tests"):]
    tests = tests[:tests.index("\n## ", 1)] if "\n## " in tests[1:] else tests
    assert "minutes" in tests and "-rs" in tests and "../shared/data" in tests and "NDCG_PLUGIN_TREC_EVAL" in tests


def test_without_reference_data_or_binary_the_tests_skip_saying_why(tmp_path):
    # what the README promises, run: a pytest process with neither, its skips listed by -rs
    import subprocess
    import sys

    from tests.conftest import ROOT
    env = {k: v for k, v in os.environ.items() if k != "NDCG_PLUGIN_TREC_EVAL"}
    env.update(NDCG_PLUGIN_SHARED_DATA=str(tmp_path / "absent"), PATH=os.path.dirname(sys.executable))
    proc = subprocess.run([sys.executable, "-m", "pytest", "-n", "0", "-q", "-rs", "-p", "no:cacheprovider",
                           "tests/test_trec_eval_suite.py::test_suite_summary_values",
                           "tests/test_cli.py::test_crosscheck_with_a_trec_eval_binary"],
                          cwd=ROOT, env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    skipped = [ln for ln in proc.stdout.splitlines() if ln.startswith("SKIPPED")]
    assert len(skipped) == 2, proc.stdout
    assert any("reference data" in ln and "NDCG_PLUGIN_SHARED_DATA" in ln for ln in skipped), skipped
    assert any("set NDCG_PLUGIN_TREC_EVAL" in ln for ln in skipped), skipped
