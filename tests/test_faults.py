"""Faults of the machine and the environment (issue 27): one line on stderr and a clear exit
status (2; 130 for Ctrl-C), never a traceback, never a death by a signal, never output silently
lost, nothing left half-written."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import EXAMPLES, msmarco_file
from .helpers import run_cli

QRELS, RUN = str(EXAMPLES / "example.qrels"), str(EXAMPLES / "example.run")


def one_line(proc: subprocess.CompletedProcess, code: int, *fragments: str) -> str:
    assert proc.returncode == code, (proc.returncode, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]


def shell(command: str, **env: str) -> subprocess.CompletedProcess:
    """A command line in sh (for redirections such as >&- and > /dev/full)."""
    return subprocess.run(["sh", "-c", command], capture_output=True, text=True, env={**os.environ, **env})


PY = f"{sys.executable} -m ndcg_plugin"
COMMANDS = [f"eval {QRELS} {RUN} NDCG_exp@10", f"eval -q {QRELS} {RUN} NDCG_exp@10 AP",
            f"crosscheck {QRELS} {RUN}", f"explain {QRELS} {RUN} --query q1 -m NDCG_exp@5", "measures",
            f"compare {QRELS} {RUN} {RUN} --names a b -m NDCG_exp@10"]


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c.split()[0] + (" -q" if " -q " in c else ""))
def test_a_full_disk_for_the_output_is_one_line_and_exit_2(command):
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full on this system")
    one_line(shell(f"{PY} {command} > /dev/full"), 2, "writing standard output", "No space left on device")


@pytest.mark.parametrize("command", COMMANDS[:2])
def test_a_closed_stdout_is_an_error_not_lost_output(command):
    one_line(shell(f"{PY} {command} >&-"), 2, "standard output is closed")


def test_a_closed_stderr_still_prints_the_result():
    proc = shell(f"{PY} eval {QRELS} {RUN} NDCG_exp@10 2>&-")
    assert proc.returncode == 0 and proc.stdout == "NDCG_exp@10\t0.5977\n"


def test_a_closed_pipe_is_not_an_error():
    proc = shell(f"{PY} eval -q {QRELS} {RUN} NDCG_exp@10 NDCG_lin@10 | head -1")
    assert proc.stdout.count("\n") == 1 and proc.stderr == ""


def test_ctrl_c_is_one_line_and_exit_130(tmp_path):
    # a run long enough to be interrupted while it is read and evaluated
    run = tmp_path / "run"
    run.write_text("".join(f"q{i // 50} Q0 d{i} 1 {1000 - i % 50} t\n" for i in range(600_000)))
    for delay in (0.3, 1.5):
        proc = subprocess.Popen([sys.executable, "-m", "ndcg_plugin", "eval", QRELS, str(run), "NDCG_exp@10"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        try:
            proc.wait(timeout=delay)
            continue  # finished first: nothing to interrupt
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 130 and err.strip().splitlines() == ["ndcg-plugin: interrupted"], (delay, err)
        assert out == ""


@pytest.mark.parametrize("measure", ["P@0", "nDCG@0", "RR@0", "NDCG_lin@0", "Success@0"])
def test_a_cutoff_of_0_is_refused(measure):
    one_line(run_cli("eval", QRELS, RUN, measure), 2, f"invalid measure {measure!r}", "positive integer")


def test_ir_datasets_that_cannot_start_is_one_line_naming_the_variable(tmp_path):
    home = tmp_path / "a-file"
    home.write_text("not a folder")
    proc = run_cli("eval", "nope.txt", RUN, "NDCG_exp@10", env={"IR_DATASETS_HOME": str(home)})
    one_line(proc, 2, "nope.txt: no such file", f"IR_DATASETS_HOME={home}")
    proc = run_cli("datasets", "info", "msmarco-passage/dev/small", env={"IR_DATASETS_HOME": str(home)})
    one_line(proc, 2, f"IR_DATASETS_HOME={home}")
    # a file that exists needs no ir-datasets at all
    assert run_cli("eval", QRELS, RUN, "NDCG_exp@10", env={"IR_DATASETS_HOME": str(home)}).returncode == 0


@pytest.mark.parametrize("label", ["-2", "-1"])
def test_queries_with_only_negative_labels_never_reach_pytrec_eval(tmp_path, label):
    # trec_eval 10.0 stops (-1: "Can't calculate measure") or crashes (-2: SIGSEGV) on such a query, and
    # pytrec_eval crashes (-1 with several measures, P@5 AP Rprec Bpref NumRet: SIGSEGV); the engine's
    # measures need no pytrec_eval
    (tmp_path / "q").write_text(f"q1 0 d1 1\nq2 0 d2 {label}\n")
    (tmp_path / "r").write_text("q1 Q0 d1 1 1 r\nq2 Q0 d3 1 1 r\n")
    one_line(run_cli("eval", str(tmp_path / "q"), str(tmp_path / "r"), "AP"), 2, "query 'q2' has only negative labels",
             "AP")
    one_line(run_cli("eval", str(tmp_path / "q"), str(tmp_path / "r"), "nDCG@10", "--provider", "pytrec_eval"), 2,
             "query 'q2'")
    proc = run_cli("eval", str(tmp_path / "q"), str(tmp_path / "r"), "NDCG_lin@10", "RR")
    assert proc.returncode == 0 and proc.stdout == "NDCG_lin@10\t0.5000\nRR\t0.5000\n"
    proc = run_cli("crosscheck", str(tmp_path / "q"), str(tmp_path / "r"))
    assert proc.returncode == 0 and "MISMATCH" not in proc.stdout


# --- datasets seed ------------------------------------------------------------------------------

DL19 = "msmarco-passage/trec-dl-2019"


def seed(home: Path, dataset: str, qrels: Path, *extra: str) -> subprocess.CompletedProcess:
    return run_cli("datasets", "seed", dataset, "--qrels", str(qrels), *extra, env={"IR_DATASETS_HOME": str(home)})


def test_seed_removes_what_a_killed_seed_left_and_nothing_a_running_one_writes(tmp_path):
    folder = tmp_path / DL19
    folder.mkdir(parents=True)
    old = folder / ".qrels.abc123.part"           # an earlier version's name: no process id
    dead = folder / ".qrels.999999999.xyz.part"   # a process that no longer runs
    alive = folder / f".qrels.{os.getpid()}.xyz.part"  # this test's process: still running
    for f in (old, dead, alive):
        f.write_text("half")
    proc = seed(tmp_path, DL19, msmarco_file("qrels.dl19-passage.txt"))
    assert proc.returncode == 0, proc.stderr
    assert not old.exists() and not dead.exists() and alive.exists()


@pytest.mark.parametrize("content", [b"some/path/to/qrels", b""])
def test_seed_reads_a_file_as_its_content_never_as_a_path(tmp_path, content):
    path = tmp_path / "p.txt"
    path.write_bytes(content)
    proc = seed(tmp_path / "home", DL19, path)
    line = one_line(proc, 2)
    assert ("expected 4 columns" if content else "no qrels lines found") in line and "file not found" not in line
    assert not (tmp_path / "home" / DL19 / "qrels").exists()


def test_a_write_error_while_seeding_is_one_line_and_leaves_nothing(tmp_path, monkeypatch):
    from ndcg_plugin import dataset_seed
    from ndcg_plugin.errors import DatasetError

    def full(fd, mode):  # the disk fills while the temporary file is written
        class Full:
            def __enter__(self):
                return self

            def __exit__(self, *a):
                os.close(fd)

            def write(self, data):
                raise OSError(28, "No space left on device")
        return Full()

    monkeypatch.setattr(dataset_seed.os, "fdopen", full)
    target = tmp_path / "out" / "qrels"
    with pytest.raises(DatasetError, match="cannot write it .No space left on device.; nothing was placed"):
        dataset_seed.write_atomically(target, b"q 0 d 1\n")
    assert list(target.parent.iterdir()) == []
