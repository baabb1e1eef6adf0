"""Issue 42 (edges, round 4): huge cutoffs, the trec_eval drop-in's odd options, threads that
cannot start, the BOM warnings' order, Ctrl-C during the imports, standard streams, labels of
64 bits from Python. Each case has trec_eval 10.0's behaviour written beside it where trec_eval
has one (from runs of the binary; checked against one when NDCG_PLUGIN_TREC_EVAL names it).
Where the case is about the command line, an end-to-end CLI process."""
from __future__ import annotations

import os
import subprocess
import sys
import tracemalloc

import pytest

import ndcg_plugin
from tests.helpers import FAULT_HANDLER_ENV, communicate_or_dump, run_cli

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


# -- items 3 and 15: the drop-in's odd options, read as trec_eval 10.0 reads them --------------------

def _suite() -> str:
    from tests.conftest import shared_file
    return str(shared_file("trec_eval"))


#: (arguments before QRELS RUN, trec_eval 10.0's stdout and status on qrels.test results.test)
DROP_IN = [
    # a cutoff past 32 bits: answered at once (the engine's tables are the rankings' size)
    ("-m ndcg_cut.2147483648", "ndcg_cut_2147483648   \tall\t0.4021\n", 0),
    # past 64 bits: atol saturates at LONG_MAX, and the name is longer than %-22s
    ("-m ndcg_cut.99999999999999999999", "ndcg_cut_9223372036854775807\tall\t0.4021\n", 0),
    # cutoffs atol reads as 0, or repeated: "Negative cutoff detected" / "duplicate cutoffs
    # detected", "Cannot initialize measure 'P'", status 2
    ("-m P.0", "", 2), ("-m ndcg_cut.0", "", 2), ("-m success.0", "", 2), ("-m P.5,abc,10", "", 2), ("-m P.5,5", "", 2),
    # -l and -M by atol: -l abc is 0 (every judged document relevant), -M abc is 0 (no document)
    ("-l 0 -m P.5 -m map", "map                   \tall\t0.1742\nP_5                   \tall\t1.0000\n", 0),
    ("-l abc -m bpref", "bpref                 \tall\t0.2121\n", 0),
    ("-M abc -m P.5 -m num_ret", "num_ret               \tall\t0\nP_5                   \tall\t0.0000\n", 0),
    # an unknown measure: "trec_eval: illegal measure 'nosuch'", status 1, before any file is read
    ("-m nosuch", "", 1),
    # an unknown flag: trec_eval's usage on stderr, status 1
    ("-x", "", 1),
]


@pytest.mark.parametrize("argv,stdout,status", DROP_IN, ids=[a for a, _, _ in DROP_IN])
def test_the_drop_in_answers_odd_options_as_trec_eval_does(argv, stdout, status):
    d = _suite()
    proc = run_cli("trec_eval", *argv.split(), f"{d}/qrels.test", f"{d}/results.test")
    assert (proc.returncode, proc.stdout) == (status, stdout), proc.stderr
    if status:  # one line of ours on stderr, no traceback
        assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr, proc.stderr
    if TREC_EVAL:
        te = subprocess.run([TREC_EVAL, *argv.split(), f"{d}/qrels.test", f"{d}/results.test"], capture_output=True,
                            text=True)
        assert (te.returncode, te.stdout) == (status, stdout), te.stderr


@pytest.mark.parametrize("argv", ["-l 0 -q -m all_trec", "-l 0 -q -c -J -m all_trec", "-l 0 -q -M 50 -m official",
                                  "-M abc -q -m all_trec", "-l 00x -q -m ndcg -m P.5,10"])
def test_level_0_and_atol_options_match_a_trec_eval_binary_line_for_line(argv):
    """Every line trec_eval prints but rbp's (its value depends on memory trec_eval 10.0 never
    initialises: docs/cli.md), on graded labels -1..4."""
    if not TREC_EVAL:
        pytest.skip("set NDCG_PLUGIN_TREC_EVAL to a trec_eval 10.0 binary to compare with it")
    d = _suite()
    run = "results.trunc" if "-c" in argv else "results.test"
    files = [f"{d}/qrels.rel_level", f"{d}/{run}"]
    te = subprocess.run([TREC_EVAL, *argv.split(), *files], capture_output=True, text=True)
    want = [ln for ln in te.stdout.splitlines(keepends=True) if ln.split("\t")[0].strip() != "rbp"]
    proc = run_cli("trec_eval", *argv.split(), *files)
    assert proc.returncode == te.returncode == 0, proc.stderr
    assert [ln for ln in proc.stdout.splitlines(keepends=True) if ln.split("\t")[0].strip() != "rbp"] == want


def test_a_missing_file_is_status_2_on_stderr_as_trec_eval():
    """trec_eval: "trec_eval.get_qrels: Cannot read qrels file 'nofile'" and "Quit in file", on
    stderr, status 2 (not 1)."""
    d = _suite()
    for files in (["nofile", f"{d}/results.test"], [f"{d}/qrels.test", "nofile"]):
        proc = run_cli("trec_eval", "-m", "P.5", *files)
        assert proc.returncode == 2 and proc.stdout == "", proc
        assert proc.stderr.count("\n") == 1 and "nofile" in proc.stderr


def test_version_on_stderr_and_usage_errors_status_1_as_trec_eval(tmp_path):
    """trec_eval -v: "trec_eval version 10.0-rc3" on stderr, status 0; one file, or an unknown
    flag: its usage on stderr, status 1; a negative -M: trec_eval crashes (SIGSEGV), refused here."""
    proc = run_cli("trec_eval", "-v")
    assert (proc.returncode, proc.stdout) == (0, "") and proc.stderr.startswith("trec_eval version 10.0")
    qrels, run = _files(tmp_path)
    for argv, status in ((["-q", qrels], 1), (["--frobnicate", qrels, run], 1), (["-M", "-3", qrels, run], 2),
                         (["-l", "-1", qrels, run], 2)):
        proc = run_cli("trec_eval", *argv)
        assert (proc.returncode, proc.stdout) == (status, ""), proc
        assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr, proc.stderr


# -- item 7g: standard streams ---------------------------------------------------------------------

def _shell(command: str, tmp_path) -> subprocess.CompletedProcess:
    """``python -m ndcg_plugin`` with the redirections of ``command`` (a shell's: ``>/dev/full``,
    ``>&-``, ``<&-``), stderr captured."""
    return subprocess.run(f"{sys.executable} -m ndcg_plugin {command}", shell=True, capture_output=True, text=True,
                          cwd=tmp_path, timeout=120)


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full on this system")
@pytest.mark.parametrize("command", ["--version >/dev/full", "--help >/dev/full", "--version >&-", "--help >&-",
                                     "eval --help >/dev/full", "trec_eval -h >/dev/full",
                                     "eval qrels run -m P@5 >/dev/full", "trec_eval -c qrels run >/dev/full"])
def test_output_that_cannot_be_written_is_one_line_and_exit_2(command, tmp_path):
    """--version >/dev/full was a traceback (exit 1), --help >/dev/full exit 0 with its text lost,
    --version >&- silent with exit 0. trec_eval 10.0 writes to a full or closed stdout without
    checking (exit 0, the output lost): the drop-in says so instead, as every command does."""
    _files(tmp_path)
    proc = _shell(command, tmp_path)
    assert proc.returncode == 2, proc
    assert proc.stderr.count("\n") == 1 and "standard output" in proc.stderr, proc.stderr


@pytest.mark.parametrize("command", ["eval qrels - -m P@5 <&-", "eval - run -m P@5 <&-", "trec_eval qrels - <&-"])
def test_a_closed_standard_input_is_one_line_and_exit_2(command, tmp_path):
    """It was an AttributeError traceback (exit 1), in eval and the drop-in. trec_eval 10.0 reads a
    closed stdin as an empty run ("result qid '301' not found in qrels", status 4): an accident of
    its reader, not a behaviour a script relies on; refused here in one line."""
    _files(tmp_path)
    proc = _shell(command, tmp_path)
    assert (proc.returncode, proc.stdout) == (2, ""), proc
    assert proc.stderr.count("\n") == 1 and "standard input is closed" in proc.stderr, proc.stderr


def test_files_are_read_when_standard_input_is_closed(tmp_path):
    _files(tmp_path)
    proc = _shell("eval qrels run -m P@1 <&-", tmp_path)
    # P@1: q1's top document (d1 or d2 tied at 3.0: trec_eval's order, doc id descending, puts d2
    # first, label 0), q2's d4 or d5 tied at 1.0: d5 first, unjudged; q3 not in the run: 0 / 2
    assert (proc.returncode, proc.stdout) == (0, "P@1\t0.0000\n"), proc.stderr


# -- item 7f: Ctrl-C while the command imports --------------------------------------------------------

def _mapped(pid: int, name: str) -> bool:
    try:
        with open(f"/proc/{pid}/maps") as f:
            return name in f.read()
    except OSError:
        return True  # the process has ended: nothing more to wait for


@pytest.mark.skipif(not os.path.exists("/proc/self/maps"), reason="needs Linux's /proc to see the imports begin")
@pytest.mark.parametrize("command", ["eval", "trec_eval"])
def test_ctrl_c_during_the_imports_is_one_line_and_130(command, tmp_path):
    """A SIGINT in the first 0.1-0.5 s was a KeyboardInterrupt traceback (40 of 100 under load), an
    ImportError with exit 1, or swallowed (exit 0). Each SIGINT here comes at a random moment once
    ``import ndcg_plugin`` has begun (its imports map _decimal's library, after the package's first
    import, which installs the handler; before that the interpreter's own start-up, site and
    runpy, is not the command's): one line, status 130. During the imports the process ends by
    SIGINT's own default action, as trec_eval (a C program) does: status -2 here, 130 to a shell;
    CPython also ends so when an interrupt passed through some C code on its way to the command's
    handler (Py_RunMain's unhandled-interrupt flag). Both are the command's Ctrl-C."""
    import random
    import signal
    import time
    qrels, run = _files(tmp_path)
    argv = ["eval", qrels, run, "-m", "P@5", "nDCG@10"] if command == "eval" else ["trec_eval", "-c", qrels, run]
    rng = random.Random(42)
    whole = subprocess.run([sys.executable, "-m", "ndcg_plugin", *argv], capture_output=True, text=True)
    assert whole.returncode == 0 and whole.stdout, whole.stderr
    for _ in range(12):
        proc = subprocess.Popen([sys.executable, "-m", "ndcg_plugin", *argv], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, env=FAULT_HANDLER_ENV)
        start = time.monotonic()
        while not _mapped(proc.pid, "_decimal") and time.monotonic() - start < 30:
            time.sleep(0.001)
        time.sleep(rng.uniform(0.0, 0.4))
        proc.send_signal(signal.SIGINT)
        out, err = communicate_or_dump(proc, 60)
        if proc.returncode in (0, -signal.SIGINT) and err == "" and out == whole.stdout:
            continue  # the command had finished before the signal (or as the interpreter ended: -2)
        assert proc.returncode in (130, -signal.SIGINT) and err == "ndcg-plugin: interrupted\n", (proc.returncode, err)


def test_a_program_that_imports_the_package_keeps_its_own_ctrl_c(tmp_path):
    """Only the command installs its handler: ``import ndcg_plugin`` in a program (or in ``python
    -c``) leaves Python's KeyboardInterrupt alone."""
    code = "import signal, ndcg_plugin; print(signal.getsignal(signal.SIGINT) is signal.default_int_handler)"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.stdout == "True\n", proc.stderr


# -- item 4: a thread that cannot be started ------------------------------------------------------

@pytest.mark.skipif(sys.platform != "linux", reason="address-space limits as Linux applies them")
@pytest.mark.parametrize("command", ["eval", "trec_eval"])
def test_a_thread_that_cannot_start_is_the_out_of_memory_line(command, tmp_path):
    """``ulimit -s 1000000; ulimit -v 900000``: each thread's stack (1 GB) cannot fit in the address
    space, so the read-ahead thread (or Arrow's, or the side-by-side pool's) cannot start: it was a
    ``RuntimeError: can't start new thread`` traceback, exit 1. trec_eval has no threads."""
    import resource

    def limits() -> None:
        resource.setrlimit(resource.RLIMIT_STACK, (1_000_000 * 1024, resource.RLIM_INFINITY))
        resource.setrlimit(resource.RLIMIT_AS, (900_000 * 1024, 900_000 * 1024))
    qrels, run = _files(tmp_path)
    argv = ["eval", qrels, run, "-m", "nDCG@10", "P@5"] if command == "eval" else ["trec_eval", "-c", qrels, run]
    proc = subprocess.run([sys.executable, "-m", "ndcg_plugin", *argv], capture_output=True, text=True,
                          preexec_fn=limits, timeout=120)
    if proc.returncode == 0:
        pytest.skip("every thread started under these limits here (a system whose stacks are not reserved whole)")
    assert proc.returncode == 2 and proc.stdout == "", proc
    assert proc.stderr.count("\n") == 1 and "out of memory" in proc.stderr, proc.stderr


def test_a_thread_refused_by_python_is_the_out_of_memory_line(tmp_path, monkeypatch):
    """The same, in this process: Python's own RuntimeError from Thread.start."""
    import threading

    from tests.helpers import run_main

    def refuse(self) -> None:
        raise RuntimeError("can't start new thread")
    monkeypatch.setattr(threading.Thread, "start", refuse)
    qrels, run = _files(tmp_path)
    done = run_main("eval", qrels, run, "-m", "nDCG@10")
    assert done.returncode == 2 and done.stdout == "", done
    assert done.stderr.count("\n") == 1 and "out of memory" in done.stderr, done.stderr
    monkeypatch.undo()
    done = run_main("eval", qrels, run, "-m", "nDCG@10")  # any other RuntimeError stays a bug, not a message
    assert done.returncode == 0


# -- item 7c: two byte order marks, two warnings, one order ---------------------------------------

BOM = b"\xef\xbb\xbf"


@pytest.mark.parametrize("argv", [["eval", "{q}", "{r}", "-m", "nDCG@10"], ["eval", "--block-size", "0", "{q}", "{r}",
                                                                          "-m", "nDCG@10"],
                                  ["trec_eval", "-c", "{q}", "{r}"]], ids=["streamed", "whole", "drop-in"])
def test_two_bom_warnings_come_in_one_order(argv, tmp_path):
    """The run is parsed on a thread ahead of the qrels (streamed): its warning came first in 1-5
    of 200 runs. Now a thread that reads ahead holds its warnings until its block is used, so the
    qrels' warning (read first) always comes first; and the qrels read twice (the drop-in's side by
    side peeks at their first ids) warn once. trec_eval keeps a byte order mark as id bytes."""
    q, r = tmp_path / "qrels", tmp_path / "run"
    q.write_bytes(BOM + QRELS.encode())
    r.write_bytes(BOM + RUN.encode())
    args = [a.format(q=q, r=r) for a in argv]
    want = [f"ndcg-plugin: warning: {q} starts with a UTF-8 byte order mark",
            f"ndcg-plugin: warning: {r} starts with a UTF-8 byte order mark"]
    for _ in range(6):
        proc = run_cli(*args)
        assert proc.returncode == 0, proc.stderr
        assert len(proc.stderr.splitlines()) == 2, proc.stderr
        assert [ln[:len(w)] for ln, w in zip(proc.stderr.splitlines(), want, strict=True)] == want, proc.stderr


# -- item 7l: labels of 64 bits and more from Python -----------------------------------------------

def _frame(labels) -> object:
    import pandas as pd
    return pd.DataFrame({"query_id": ["q1", "q1"], "doc_id": ["d1", "d2"], "relevance": labels})


@pytest.mark.parametrize("labels", [
    pytest.param(lambda np: np.array([0, 2 ** 63], dtype=object), id="object 2^63"),
    pytest.param(lambda np: np.array([0, 2 ** 64 + 5], dtype=object), id="object 2^64+5"),
    pytest.param(lambda np: np.array([0, -(2 ** 63) - 1], dtype=object), id="object -2^63-1"),
    pytest.param(lambda np: np.array([0, 2 ** 63], dtype=np.uint64), id="uint64 2^63"),
    pytest.param(lambda np: np.array([0.0, 1e19]), id="float 1e19"),
    pytest.param(lambda np: {"q1": {"d1": 0, "d2": 2 ** 63}}, id="dict 2^63"),
])
def test_a_label_past_64_bits_is_refused_naming_its_row(labels):
    """They became negative labels (numpy's RuntimeWarning only: NDCG_lin@2 0.0 where d2, ranked
    second and the only relevant document, gives 1 / log2(3) = 0.6309 with any positive label).
    The text reader refuses such a label ("out of the 64-bit integer range"); trec_eval reads a
    label with atol, which saturates it at LONG_MAX."""
    import warnings

    import numpy as np
    data = labels(np)
    qrels = data if isinstance(data, dict) else _frame(data)
    run = "q1 Q0 d1 1 2.0 r\nq1 Q0 d2 2 1.0 r\n"
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy's cast warning is a failure here
        with pytest.raises(ndcg_plugin.InputError, match=r":1: relevance must be an integer in the 64-bit range"):
            ndcg_plugin.read(qrels, "qrels")
        with pytest.raises(ndcg_plugin.InputError, match=r":1: relevance must be an integer in the 64-bit range"):
            ndcg_plugin.per_query(qrels, run, "NDCG_lin@2")


def test_labels_up_to_the_64_bit_bounds_are_kept_exactly():
    """2^63 - 1 and -2^63 are labels (the text reader takes them); 2^53 + 1 as a Python int stays
    itself (a float would make it 2^53)."""
    import numpy as np
    for value in (2 ** 63 - 1, -(2 ** 63), 2 ** 53 + 1):
        got = ndcg_plugin.read(_frame(np.array([0, value], dtype=object)), "qrels")["relevance"].tolist()
        assert got == [0, value]
        assert ndcg_plugin.read({"q1": {"d1": 0, "d2": value}}, "qrels")["relevance"].tolist() == [0, value]
    run = "q1 Q0 d1 1 2.0 r\nq1 Q0 d2 2 1.0 r\n"
    # NDCG_lin: gain = label; d2 (label 3) ranked second: DCG = 3 / log2(3), the ideal 3 / log2(2) = 3
    got = ndcg_plugin.per_query(_frame(np.array([0, 3], dtype=object)), run, "NDCG_lin@2")
    assert got.iloc[0, 0] == pytest.approx(1 / np.log2(3))


# -- item 7d: a repeated pair in a run query the qrels lack: one rule ------------------------------

def test_a_repeated_pair_in_a_query_the_qrels_lack_one_rule(tmp_path):
    """trec_eval 10.0 accepts the run (q9 is never evaluated): q1's P_5 is 0.2000. The command line,
    per_query and the provider evaluate against the qrels and accept it; read() applies the rule to
    the queries it is given (queries=), and without them to every query (docs/input-handling.md)."""
    import ir_measures
    (tmp_path / "qrels").write_text("q1 0 d1 1\n")
    (tmp_path / "run").write_text("q1 Q0 d1 1 2.0 r\nq9 Q0 d5 1 2.0 r\nq9 Q0 d5 2 1.0 r\n")
    qrels, run = str(tmp_path / "qrels"), str(tmp_path / "run")
    proc = run_cli("eval", qrels, run, "-m", "P@5")
    assert (proc.returncode, proc.stdout) == (0, "P@5\t0.2000\n"), proc.stderr
    proc = run_cli("trec_eval", "-m", "P.5", qrels, run)
    assert (proc.returncode, proc.stdout) == (0, "P_5                   \tall\t0.2000\n"), proc.stderr
    assert ndcg_plugin.per_query(qrels, run, "P@5").loc["q1"].iloc[0] == 0.2
    table = ndcg_plugin.read(run, "run", queries=ndcg_plugin.read(qrels, "qrels")["query_id"])
    assert len(table) == 3  # every line kept; q9's pair is never looked at
    assert ir_measures.calc_aggregate([ir_measures.P @ 5], ndcg_plugin.read(qrels, "qrels"), table)[
        ir_measures.P @ 5] == 0.2
    with pytest.raises(ndcg_plugin.InputError, match=r":3: duplicate \(query_id, doc_id\) = \('q9', 'd5'\)"):
        ndcg_plugin.read(run, "run")  # no qrels: q9 could be evaluated


# -- item 7h: a directory as QRELS or RUN, in the drop-in too -----------------------------------------

@pytest.mark.parametrize("content", ["text", "empty", "fifo"])
@pytest.mark.parametrize("position", ["qrels", "run"])
def test_a_directory_given_to_the_drop_in_is_one_line_naming_it(content, position, tmp_path):
    """trec_eval 10.0: "trec_eval.get_results: Cannot read results file 'DIR'" (or get_qrels'),
    status 2. The drop-in said a directory of text runs "is Parquet"; now, as eval: the directory
    and the reason named, nothing in it but regular files opened (a FIFO would block), status 2.
    (eval's cases: tests/test_input_edges.py.)"""
    qrels, run = _files(tmp_path)
    folder = tmp_path / "folder"
    folder.mkdir()
    if content == "text":
        (folder / "a.trec").write_text(RUN)
    elif content == "fifo":
        os.mkfifo(folder / "f")
    argv = [str(folder), run] if position == "qrels" else [qrels, str(folder)]
    for flags in ([], ["-M", "5"]):  # the streamed path and the dict path
        proc = subprocess.run([sys.executable, "-m", "ndcg_plugin", "trec_eval", "-c", *flags, *argv],
                              capture_output=True, text=True, timeout=60)
        assert (proc.returncode, proc.stdout) == (2, ""), proc
        assert proc.stderr.count("\n") == 1 and f"{folder}:" in proc.stderr and "Parquet" in proc.stderr
        assert "is Parquet, read by its columns" not in proc.stderr, proc.stderr


def test_a_read_ahead_thread_that_dies_is_an_error_not_a_wait_for_ever(monkeypatch):
    """Under ``ulimit -v`` the worker can fail even to hand over its exception (a MemoryError in
    the queue's own put): the consumer then waited for ever on an empty queue."""
    import threading

    from ndcg_plugin.reading.ahead import ReadAhead

    def no_memory(self, entry) -> bool:
        raise MemoryError
    monkeypatch.setattr(ReadAhead, "_put", no_memory)
    monkeypatch.setattr(threading, "excepthook", lambda args: None)  # the worker's own death, expected
    got: list = []

    def consume() -> None:
        try:
            list(ReadAhead(iter([1, 2])))
        except MemoryError as e:
            got.append(e)
    consumer = threading.Thread(target=consume, daemon=True)
    consumer.start()
    consumer.join(10)
    assert not consumer.is_alive() and len(got) == 1


def test_cutoffs_2_to_the_31_apart_are_sorted_numerically():
    """trec_eval 10.0 sorts cutoffs with ``return *a - *b`` cut to an int: for 5 and LONG_MAX it
    prints ``P_9223372036854775807`` first and ``P_5  all  8.7333`` (a precision above 1). The
    drop-in sorts them numerically: P_5 is what ``trec_eval -m P.5`` prints on the suite
    (0.2667), and P at LONG_MAX is 0.0000 (at most 500 relevant retrieved / 2^63)."""
    d = _suite()
    proc = run_cli("trec_eval", "-m", "P.5,9223372036854775807", f"{d}/qrels.test", f"{d}/results.test")
    assert (proc.returncode, proc.stdout) == (0, "P_5                   \tall\t0.2667\n"
                                                 "P_9223372036854775807 \tall\t0.0000\n"), proc.stderr


def test_an_interrupt_python_could_only_print_is_raised_again():
    """Ctrl-C inside importlib's module-lock callback (a weakref callback) was printed as
    "Exception ignored in: <function _get_module_lock.<locals>.cb ...>" with its traceback, and the
    command went on. The command's unraisable hook sends SIGINT again instead: the interrupt then
    comes at the main thread's next instruction, where it propagates."""
    import signal
    import types

    from ndcg_plugin import interrupts
    got: list = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: got.append(signum))
    try:
        interrupts.unraisable(types.SimpleNamespace(exc_type=KeyboardInterrupt))
        for _ in range(100):  # delivered at the next instruction of this (the main) thread
            if got:
                break
    finally:
        signal.signal(signal.SIGINT, previous)
    assert got == [signal.SIGINT]
