"""The command line: output layout, exit statuses, error messages without tracebacks."""
from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ndcg_plugin.cli.commands import main
from ndcg_plugin.trec_eval.check import Row
from tests import helpers
from tests.conftest import EXAMPLES, shared_file

DATA = Path(__file__).parent / "data"
SIX = ["NDCG_lin@5", "NDCG_exp@5", "HitRate@3", "HitRate_item@3", "MRR_zero@3", "MRR_ignore@3"]


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return helpers.run_cli(*args, env={"PYTHONWARNINGS": "default"})


def test_readme_example_prints_all_six_measures():
    proc = run_cli("eval", str(EXAMPLES / "example.qrels"), str(EXAMPLES / "example.run"), *SIX)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.strip().splitlines()
    assert [line.split("\t")[0] for line in lines] == SIX
    values = {line.split("\t")[0]: float(line.split("\t")[1]) for line in lines}
    # q5 has no relevant doc retrieved; q1..q4 have a relevant doc at rank 1, 1, 1, 2
    assert values["MRR_zero@3"] == pytest.approx((1 + 1 + 1 + 0.5 + 0) / 5, abs=5e-5)
    assert values["MRR_ignore@3"] == pytest.approx((1 + 1 + 1 + 0.5) / 4, abs=5e-5)


def test_by_query_output_omits_mrr_ignore_without_value_then_prints_all(capsys):
    assert main(["eval", str(EXAMPLES / "example.qrels"), str(EXAMPLES / "example.run"), "MRR_ignore@3", "-q"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert [line.split("\t")[0] for line in lines] == ["q1", "q2", "q3", "q4", "all"]  # q5 has no value
    assert lines[-1] == "all\tMRR_ignore@3\t0.8750"


def test_no_summary_and_jsonl(capsys):
    assert main(["eval", str(DATA / "tiny.qrels"), str(DATA / "tiny.run"), "HitRate@1", "-q", "-n", "-o", "jsonl"]) == 0
    recs = [json.loads(x) for x in capsys.readouterr().out.strip().splitlines()]
    assert recs == [{"query_id": "q1", "measure": "HitRate@1", "value": 0.0},
                    {"query_id": "q2", "measure": "HitRate@1", "value": 1.0}]


def test_places_and_builtin_measures(capsys):
    assert main(["eval", str(DATA / "tiny.qrels"), str(DATA / "tiny.run"), "NDCG_lin@2 nDCG@2", "-p", "6"]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    # q1: DCG = 0 + 2/log2 3, IDCG = 2 -> 1/log2 3 = 0.630930; q2: 1
    expected = f"{(1 / math.log2(3) + 1) / 2:.6f}"
    assert out == [f"NDCG_lin@2\t{expected}", f"nDCG@2\t{expected}"]


def test_provider_option(capsys):
    assert main(["eval", str(DATA / "tiny.qrels"), str(DATA / "tiny.run"), "nDCG(dcg='exp-log2')@2",
                 "--provider", "ndcg_plugin"]) == 0
    assert capsys.readouterr().out.startswith("nDCG(dcg='exp-log2')@2\t")


def test_msmarco_run_and_stdin():
    proc = helpers.run_cli("eval", str(DATA / "tiny.qrels"), "-", "MRR_zero@10",
                           stdin=(DATA / "tiny.msmarco.tsv").read_text())
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "MRR_zero@10\t0.7500\n"  # q1: relevant d1 at rank 2; q2: rank 1


@pytest.mark.parametrize("args,message", [
    (["eval", "nope.qrels", str(DATA / "tiny.run"), "NDCG_lin@5"], "nope.qrels: no such file, and not"),
    (["eval", str(DATA / "tiny.qrels"), "nope.run", "NDCG_lin@5"], "nope.run: file not found"),
    (["eval", str(DATA / "tiny.qrels"), str(DATA / "tiny.run"), "Nope@5"], "unknown measure 'Nope@5'"),
    (["eval", str(DATA / "tiny.qrels"), str(DATA / "tiny.run"), "HitRate"], "needs a cutoff"),
    (["eval", str(DATA / "tiny.qrels"), str(DATA / "tiny.run"), "HitRate(x=1)@2"], "valid parameters"),
    (["eval", str(DATA / "tiny.run"), str(DATA / "tiny.run"), "HitRate@2"], "tiny.run:1: expected 4 columns"),
    (["eval", str(DATA / "tiny.qrels"), str(DATA / "tiny.run"), "HitRate@2", "-n"], "only makes sense with -q"),
])
def test_errors_exit_2_with_one_message_and_no_traceback(args, message):
    proc = helpers.run_main(*args)
    assert proc.returncode == 2
    assert message in proc.stderr
    assert "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_measures_subcommand_lists_parameters(capsys):
    assert main(["measures"]) == 0
    out = capsys.readouterr().out
    for name in ("NDCG_lin", "NDCG_exp", "HitRate", "HitRate_item", "MRR_zero", "MRR_ignore"):
        assert f"{name}: " in out
    assert "ideal (default 'qrels')" in out and "rel (default 1)" in out


def test_crosscheck_exit_status_1_on_a_mismatch(monkeypatch, capsys):
    import ndcg_plugin.cli.commands as cli
    monkeypatch.setattr(cli, "run_crosscheck", lambda *a, **k: [Row("NDCG_lin@10", 0.5, 0.4, 0.1, "MISMATCH")])
    assert main(["crosscheck", str(DATA / "tiny.qrels"), str(DATA / "tiny.run")]) == 1
    out, err = capsys.readouterr()
    assert "MISMATCH" in out and "1 of 1 measures differ" in err


def test_crosscheck_with_a_trec_eval_binary():
    binary = os.environ.get("NDCG_PLUGIN_TREC_EVAL")
    if not binary:
        pytest.skip("set NDCG_PLUGIN_TREC_EVAL to a trec_eval binary to cross-check against it")
    qrels, run = shared_file("trec_eval", "qrels.rel_level"), shared_file("trec_eval", "results.test")
    proc = helpers.run_main("crosscheck", str(qrels), str(run), "--trec-eval", binary,
                   "-m", "NDCG_lin@10", "NDCG_exp@10", "HitRate(rel=2)@10", "HitRate_item@10", "MRR_zero@10",
                   "MRR_ignore(rel=2)@10")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.count("match") == 6


def test_progress_bar_only_on_a_terminal(monkeypatch):
    import io as stdio

    from ndcg_plugin import read
    from ndcg_plugin.cli.terminal import ProgressBar

    class Tty(stdio.StringIO):
        def isatty(self):
            return True

    tty = Tty()
    monkeypatch.setattr("sys.stderr", tty)
    text = "".join(f"q Q0 d{i} {i} {1.0 / (i + 1)} t\n" for i in range(500_001))
    read(text, "run")  # text given directly: no progress
    assert tty.getvalue() == ""
    bar = ProgressBar("run.trec")  # the CLI makes one only when stderr is a terminal
    bar(500_000, 1_000_000)
    bar(1_000_000, 1_000_000)
    assert "reading run.trec" in tty.getvalue() and bar.bar.total == 1_000_000 and bar.done == 1_000_000


@pytest.mark.parametrize("args,fragment", [
    (["crosscheck", "{q}", "{r}", "-m", "ERR@10"], "ERR@10"),
    (["crosscheck", "{q}", "{r}", "--trec-eval", "/no/such/binary"], "/no/such/binary"),
    (["compare", "{q}", "{r}", "{r2}", "-m", "NDCG_lin@10", "--names", "a", "b", "--plot", "/no/such/dir/x.png"],
     "/no/such/dir/x.png"),
])
def test_former_tracebacks_end_in_one_line_and_exit_2(tmp_path, args, fragment):
    q, r = str(EXAMPLES / "example.qrels"), str(EXAMPLES / "example.run")
    r2 = tmp_path / "run2"
    r2.write_text((EXAMPLES / "example.run").read_text())
    proc = helpers.run_main(*[a.format(q=q, r=r, r2=r2) for a in args])
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr and fragment in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr


def test_a_provider_whose_library_is_missing_is_one_line_and_exit_2():

    import ir_measures
    # the first provider whose library is missing, in the registry's order (as the list's first was):
    # the providers after it are not asked (asking imports their library: ranx alone takes seconds)
    missing = next((name for name, p in ir_measures.providers.registry.items() if not p.is_available()), None)
    if missing is None:
        pytest.skip("every ir-measures provider's library is installed here")
    proc = helpers.run_main("eval", str(EXAMPLES / "example.qrels"), str(EXAMPLES / "example.run"), "nDCG@5",
                   "--provider", missing)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert f"--provider {missing} is not available" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_progress_bar_counts_bytes_read_and_closes(tmp_path):
    import io as stdio

    from ndcg_plugin import read
    from ndcg_plugin.cli.terminal import ProgressBar

    run = tmp_path / "run"
    run.write_text("".join(f"q{i // 50} Q0 d{i} 0 {i} t\n" for i in range(2000)))
    out = stdio.StringIO()
    bar = ProgressBar("run", file=out)
    read(run, "run", progress=bar)
    assert bar.done == run.stat().st_size and bar.bar.total == run.stat().st_size
    assert "reading run" in out.getvalue()


def test_no_progress_output_when_stderr_is_not_a_terminal():
    proc = run_cli("eval", str(EXAMPLES / "example.qrels"), str(EXAMPLES / "example.run"), "NDCG_lin@5")
    assert proc.returncode == 0 and proc.stderr == ""


def test_crosscheck_prints_enough_digits_to_show_why_values_match():
    from ndcg_plugin.trec_eval.check import format_rows
    line = format_rows([Row("MRR_zero@10", 0.583349, 0.583351, 2e-6, "match")], 4).splitlines()[1]
    assert "0.58335" in line and "0.5833 " not in line and "0.5834" not in line  # not '0.5833 vs 0.5834 match'
    mismatch = format_rows([Row("MRR_zero@10", 0.5, 0.4, 0.1, "MISMATCH")], 4).splitlines()[1]
    assert "0.5000" in mismatch and "0.4000" in mismatch


def test_a_dataset_id_typo_suggests_the_closest_ids(tmp_path):
    proc = helpers.run_main("eval", "msmarco-passage/trec-dl-2091/judged", str(EXAMPLES / "example.run"), "nDCG@10")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "did you mean msmarco-passage/trec-dl-2019/judged" in proc.stderr
    info = helpers.run_main("datasets", "info", "msmarco-pasage/dev/small")
    assert info.returncode == 2 and "did you mean msmarco-passage/dev/small" in info.stderr


def test_eval_takes_measures_as_an_option_too():
    files = (str(EXAMPLES / "example.qrels"), str(EXAMPLES / "example.run"))
    proc = helpers.run_main("eval", *files, "-m", "NDCG_lin@5", "HitRate@3")
    positional = helpers.run_main("eval", *files, "NDCG_lin@5", "HitRate@3")
    assert proc.returncode == 0 and proc.stdout == positional.stdout != ""


def test_compare_says_what_to_do_with_m_first_or_one_run():
    q, r = str(EXAMPLES / "example.qrels"), str(EXAMPLES / "example.run")
    first = helpers.run_main("compare", "-m", "NDCG_lin@5", q, r, r)
    assert first.returncode == 2 and "put it after the files" in first.stderr and "Traceback" not in first.stderr
    one = helpers.run_main("compare", q, r, "-m", "NDCG_lin@5")
    assert one.returncode == 2 and "two or more runs" in one.stderr and one.stdout == ""


@pytest.mark.parametrize("command", [["crosscheck", "-m", "NDCG_lin@10", "MRR_zero@10"],
                                     ["explain", "--query", "19335", "-m", "NDCG_lin@10"],
                                     ["eval", "NDCG_lin@10", "MRR_zero@10"]])
def test_qrels_as_a_dataset_id_reads_the_same_as_the_file(command, tmp_path, capsys):
    from tests.conftest import msmarco_file
    qrels_file = msmarco_file("qrels.dl19-passage.txt")
    run = tmp_path / "run"
    lines = qrels_file.read_text().splitlines()[:300]
    run.write_text("".join(f"{q} Q0 {d} {i + 1} {-i} r\n" for i, (q, _, d, _) in
                           enumerate(line.split() for line in lines)))
    sub, rest = command[0], command[1:]
    assert main([sub, str(qrels_file), str(run), *rest]) == 0
    by_file = capsys.readouterr().out
    assert main([sub, "msmarco-passage/trec-dl-2019", str(run), *rest]) == 0
    by_id = capsys.readouterr().out
    assert by_id == by_file
    assert "19335" in lines[0]


def test_output_trec_eval_layout(capsys):
    assert main(["eval", str(DATA / "tiny.qrels"), str(DATA / "tiny.run"), "MRR_ignore@3", "NDCG_lin@3", "-q",
                 "-o", "trec_eval"]) == 0
    # trec_eval prints printf("%-22s\t%s\t%6.4f\n", name, qid, value); values by hand:
    # q1 relevant d1 (label 2) at rank 2: RR 1/2, nDCG (1/log2(3)) / 1; q2 d3 at rank 1: 1 and 1
    expected = [("MRR_ignore@3", "q1", 0.5), ("NDCG_lin@3", "q1", 1 / math.log2(3)),
                ("MRR_ignore@3", "q2", 1.0), ("NDCG_lin@3", "q2", 1.0),
                ("MRR_ignore@3", "all", 0.75), ("NDCG_lin@3", "all", (1 / math.log2(3) + 1) / 2)]
    assert capsys.readouterr().out == "".join("%-22s\t%s\t%6.4f\n" % row for row in expected)  # noqa: UP031


def test_output_trec_eval_matches_the_binary_layout(capsys):
    binary = os.environ.get("NDCG_PLUGIN_TREC_EVAL") or shutil.which("trec_eval")
    if not binary or not os.access(binary, os.X_OK):
        pytest.skip("set NDCG_PLUGIN_TREC_EVAL to a trec_eval binary (or put trec_eval on PATH) to compare layouts")
    theirs = subprocess.run([binary, "-q", "-m", "recip_rank", str(DATA / "tiny.qrels"), str(DATA / "tiny.run")],
                            capture_output=True, text=True, check=True).stdout
    assert main(["eval", str(DATA / "tiny.qrels"), str(DATA / "tiny.run"), "RR", "-q", "-o", "trec_eval"]) == 0
    ours = capsys.readouterr().out
    assert ours.replace("RR        ", "recip_rank") == theirs


def test_output_csv_has_a_header_and_quotes_commas(capsys):
    assert main(["eval", str(DATA / "tiny.qrels"), str(DATA / "tiny.run"), "MRR_zero(rel=2, ties='average')@3",
                 "-o", "csv", "-p", "2"]) == 0
    # only q1 has a label-2 doc, at rank 2: (1/2 + 0) / 2
    assert capsys.readouterr().out == "query_id,measure,value\nall,\"MRR_zero(rel=2,ties='average')@3\",0.25\n"


def test_jsonl_omits_queries_without_a_value_and_writes_a_missing_aggregate_as_null(tmp_path, capsys):
    run = tmp_path / "run"
    run.write_text("q1 Q0 d2 1 3.5 r\n")  # q1's relevant d1 not retrieved; q2 not in the run
    assert main(["eval", str(DATA / "tiny.qrels"), str(run), "MRR_ignore@3", "-q", "-o", "jsonl"]) == 0
    assert [json.loads(line) for line in capsys.readouterr().out.splitlines()] == [
        {"measure": "MRR_ignore@3", "value": None}]


def test_the_run_opened_early_keeps_the_order_of_errors(tmp_path, capsys):
    # eval starts reading the run before the qrels: a bad qrels file is still the error reported,
    # and a missing run is reported as before, once the qrels are read
    bad_qrels = tmp_path / "bad.qrels"
    bad_qrels.write_text("q1 0 a x\n")
    good_qrels = tmp_path / "good.qrels"
    good_qrels.write_text("q1 0 a 1\n")
    bad_run = tmp_path / "bad.run"
    bad_run.write_text("q1 Q0 a 1 nope t\n")
    assert main(["eval", str(bad_qrels), str(bad_run), "NDCG_lin@10"]) == 2
    assert f"{bad_qrels}:1" in capsys.readouterr().err
    assert main(["eval", str(good_qrels), str(tmp_path / "missing.run"), "NDCG_lin@10"]) == 2
    err = capsys.readouterr().err
    assert "missing.run" in err and "file not found" in err and "Traceback" not in err


@pytest.mark.parametrize("command", ["eval", "crosscheck", "compare", "explain"])
def test_places_minus_one_prints_every_digit_in_every_subcommand(command, tmp_path, capsys):
    # hand: one query, relevant d1 at rank 2 of 2: NDCG_lin@10 = (1/log2(3)) / 1 = 0.6309297535714574
    qrels = tmp_path / "q.qrels"
    qrels.write_text("q1 0 d1 1\n")
    runs = []
    for name in ("a.run", "b.run"):
        runs.append(tmp_path / name)
        runs[-1].write_text("q1 Q0 d0 1 2 t\nq1 Q0 d1 2 1 t\n")
    args = {"eval": ["eval", str(qrels), str(runs[0]), "NDCG_lin@10"],
            "crosscheck": ["crosscheck", str(qrels), str(runs[0]), "-m", "NDCG_lin@10"],
            "compare": ["compare", str(qrels), str(runs[0]), str(runs[1]), "-m", "NDCG_lin@10"],
            "explain": ["explain", str(qrels), str(runs[0]), "--query", "q1", "-m", "NDCG_lin@10"]}[command]
    assert main([*args, "-p", "-1"]) in (0, 1)
    assert repr(1 / math.log2(3)) in capsys.readouterr().out


def test_places_below_minus_one_is_a_usage_error():
    proc = helpers.run_main("eval", "q", "r", "NDCG_lin@10", "-p", "-2")
    assert proc.returncode == 2 and "expected an integer from 0 to 100, or -1" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_eval_measures_may_come_after_options(capsys):
    # argparse alone takes QRELS RUN before the options and then refuses the measures after them
    q, r = str(EXAMPLES / "example.qrels"), str(EXAMPLES / "example.run")
    assert main(["eval", q, r, "NDCG_lin@10", "MRR_zero@10", "-p", "3"]) == 0
    expected = capsys.readouterr().out
    assert main(["eval", q, r, "-p", "3", "NDCG_lin@10", "--duplicates", "max", "MRR_zero@10"]) == 0
    assert capsys.readouterr().out == expected
    with pytest.raises(SystemExit) as e:
        main(["eval", q, r, "--bogus", "NDCG_lin@10"])
    assert e.value.code == 2


def test_crosscheck_the_function_and_its_module_have_different_names():
    import importlib

    import ndcg_plugin
    module = importlib.import_module("ndcg_plugin.trec_eval.check")
    assert callable(ndcg_plugin.crosscheck) and ndcg_plugin.crosscheck is module.crosscheck
    assert ndcg_plugin.crosscheck is module.crosscheck  # importing the module does not replace the function


@pytest.mark.parametrize("args, status", [(["measures"], 0),
                                          (["eval", "no-such.qrels", "no-such.run", "MRR_zero@10"], 2)])
def test_the_command_sets_the_switch_interval_freezes_the_gc_and_exits_with_mains_status(args, status, capsys):
    # python -m ndcg_plugin runs cli.run(): the GIL's switch interval, main(), gc.freeze() (the
    # final collections then skip the objects alive), exit; atexit handlers and the flush still run
    code = ("import atexit, gc, runpy, sys\n"
            "atexit.register(lambda: print('switch', sys.getswitchinterval(), 'frozen', gc.get_freeze_count() > 0,\n"
            "                              file=sys.stderr))\n"
            f"sys.argv = ['ndcg-plugin', *{args!r}]\n"
            "runpy.run_module('ndcg_plugin', run_name='__main__')\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == status, proc.stderr
    from ndcg_plugin.cli.commands import SWITCH_INTERVAL
    assert proc.stderr.strip().endswith(f"switch {SWITCH_INTERVAL} frozen True")
    assert main(["measures"]) == 0 and sys.getswitchinterval() != SWITCH_INTERVAL  # main() leaves it alone
    if status == 0:
        assert "NDCG_lin" in proc.stdout  # written and flushed before the exit


# --- issue 24: clean failures and the habits of other tools ---------------------------------------

def _tiny(tmp_path):
    (tmp_path / "q").write_text("q1 0 d1 1\nq2 0 d2 1\n")
    (tmp_path / "r").write_text("q1 Q0 d1 1 1 r\nq2 Q0 d2 1 1 r\n")
    (tmp_path / "r2").write_text("q1 Q0 d1 1 1 r\nq2 Q0 d3 1 1 r\n")
    return str(tmp_path / "q"), str(tmp_path / "r"), str(tmp_path / "r2")


@pytest.mark.parametrize("argv,words", [
    (["eval", "-", "-", "nDCG@10"], ["both be standard input"]),
    (["eval", "{q}", "{r}", "--block-size", "-1", "nDCG@10"], ["--block-size", "from 0 to 1024G"]),
    (["eval", "{q}", "{r}", "--block-size", "8MB", "nDCG@10"], ["--block-size", "K, M or G", "'8MB'"]),
    (["eval", "{q}", "{r}", "--block-size", "1.5M", "nDCG@10"], ["--block-size", "K, M or G", "'1.5M'"]),
    # a Spark option without --engine spark would be ignored: refused instead, by name
    (["eval", "{q}", "{r}", "--spark-ship", "all", "nDCG@10"], ["--spark-ship", "--engine spark only"]),
    (["eval", "{q}", "{r}", "--spark-master", "yarn", "nDCG@10"], ["--spark-master", "--engine spark only"]),
    (["eval", "{q}", "{r}", "--spark-conf", "a=b", "nDCG@10"], ["--spark-conf", "--engine spark only"]),
    (["eval", "{q}", "{r}", "{r2}", "nDCG@10"], ["is a file, not a measure", "ndcg-plugin compare"]),
    (["explain", "{q}", "{r}", "--query", "q1", "-m", "nDCG@10", "RR"], ["explain takes one measure, got 2"]),
    (["eval", "{q}", "{r}", "nDCG@10", "--provider", "runtime"], ["provider runtime does not compute nDCG@10"]),
    (["compare", "{q}", "{r}", "{r2}", "-m", "RR", "--permutations", "0", "--test", "bootstrap"],
     ["--permutations", ">= 1"]),
    (["compare", "{q}", "{r}", "{r2}", "-m", "RR", "--alpha", "2"], ["--alpha", "between 0 and 1"]),
    (["compare", "{q}", "{r}", "{r2}", "-m", "RR", "--alpha", "-1"], ["--alpha", "between 0 and 1"]),
    (["compare", "{q}", "{r}", "{r2}", "-m", "RR", "--plot", "{dir}"], ["is a directory"]),
    (["compare", "{q}", "{r}", "{r2}", "-m", "RR", "--plot", "/no/such/dir/x.png"], ["/no/such/dir", "does not exist"]),
    (["datasets"], ["{seed,info}"]),
])
def test_mistakes_end_in_one_clear_line(tmp_path, argv, words):
    q, r, r2 = _tiny(tmp_path)
    args = [a.format(q=q, r=r, r2=r2, dir=tmp_path) for a in argv]
    proc = helpers.run_main(*args, stdin="")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stdout == ""
    assert [ln for ln in proc.stderr.splitlines() if "error" in ln][-1:] and all(w in proc.stderr for w in words), \
        proc.stderr


@pytest.mark.parametrize("text,size", [("0", 0), ("64", 64), ("512k", 512 * 1024), ("512KiB", 512 * 1024),
                                       ("8M", 8 * 1024 * 1024), ("8mib", 8 * 1024 * 1024), ("1G", 1024 ** 3)])
def test_block_sizes_take_binary_units(text, size):
    from ndcg_plugin.cli.parser import build_parser
    assert build_parser().parse_args(["eval", "q", "r", "RR", "--block-size", text]).block_size == size


def test_version_counts_aliases_and_ir_measures_spellings(tmp_path):
    q, r, _ = _tiny(tmp_path)
    proc = helpers.run_main("--version")
    assert proc.returncode == 0 and proc.stdout.startswith("ndcg-plugin ") and "ir-measures" in proc.stdout
    # counts are printed as integers (trec_eval's num_q); NumRelRet keeps the name typed
    proc = helpers.run_main("eval", q, r, "NumQ", "NumRelRet", "RR")
    assert proc.stdout == "NumQ\t2\nNumRelRet\t2\nRR\t1.0000\n", proc.stderr
    # the ir-measures CLI's flags
    proc = helpers.run_main("eval", q, r, "RR", "--by_query", "--no_summary", "--output_format", "jsonl")
    assert [json.loads(ln)["query_id"] for ln in proc.stdout.splitlines()] == ["q1", "q2"]


def test_plot_without_a_suffix_gets_png_and_the_real_path_is_reported(tmp_path):
    pytest.importorskip("matplotlib")
    q, r, r2 = _tiny(tmp_path)
    proc = helpers.run_main("compare", q, r, r2, "-m", "RR", "--plot", str(tmp_path / "mydiff"))
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "mydiff.png").read_bytes()[:4] == b"\x89PNG"
    assert f"wrote {tmp_path / 'mydiff.png'}" in proc.stderr
    # nothing is significant on two queries: no mark, and the note says so
    assert "†" not in proc.stdout and "no run differs significantly from r" in proc.stdout


def test_crosscheck_finds_trec_eval_on_path(tmp_path):
    binary = os.environ.get("NDCG_PLUGIN_TREC_EVAL") or shutil.which("trec_eval")
    if not binary:
        pytest.skip("set NDCG_PLUGIN_TREC_EVAL to a trec_eval binary to check the PATH lookup")
    q, r, _ = _tiny(tmp_path)
    proc = helpers.run_cli("crosscheck", q, r, "--trec-eval", "trec_eval",
                   env={"PATH": f"{os.path.dirname(os.path.abspath(binary))}{os.pathsep}{os.environ['PATH']}"})
    assert proc.returncode == 0 and "MISMATCH" not in proc.stdout, proc.stderr


def test_irm_is_the_ir_measures_command_with_the_plugin_registered(tmp_path):
    """ir_measures' own output (tab-separated, its order: per query as its providers yield, then
    `all`), with the plugin's measure known. By hand: q1 ranks its relevant d1 first (1), q2 ranks
    d3, not its relevant d2 (0); NDCG_exp@10 and nDCG@10 are both (1 + 0) / 2."""
    q, _, r2 = _tiny(tmp_path)
    proc = helpers.run_main("irm", q, r2, "NDCG_exp@10", "nDCG@10")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "NDCG_exp@10\t0.5000\nnDCG@10\t0.5000\n"
    proc = helpers.run_main("irm", q, r2, "NDCG_exp@10", "-n")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr and "--no_summary" in proc.stderr
