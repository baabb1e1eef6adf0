"""``eval --engine spark`` at its edges (issue 42: items 5, 7j, 16): inputs Spark cannot read (a FIFO,
EIO), a ``java`` that never starts, Ctrl-C while the JVM starts and while the job runs, and the
notes of its long phases. Every case but the Ctrl-C one runs without a real JVM: the inputs are
refused before one starts (a ``session`` that fails the test proves it), and the ``java`` that
never starts is a script."""
from __future__ import annotations

import contextlib
import io
import os
import select
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.conftest import EXAMPLES, ROOT
from tests.helpers import run_main


@pytest.fixture
def pyspark_installed() -> None:
    pytest.importorskip("pyspark", reason="the [spark] extra (pyspark) is not installed")


@pytest.fixture
def no_jvm(monkeypatch, pyspark_installed):
    """A Spark session that fails the test if asked for: the case must end before a JVM starts."""
    def refuse(*args, **kwargs):
        pytest.fail("a Spark session was asked for: the input should have been refused before")
    monkeypatch.setattr("ndcg_plugin.spark.command.session", refuse)


def _files(tmp_path: Path) -> tuple[str, str]:
    (tmp_path / "q").write_text("q1 0 d1 1\n")
    (tmp_path / "r").write_text("q1 Q0 d1 1 1.0 t\n")
    return str(tmp_path / "q"), str(tmp_path / "r")


def _unblock_later(fifo: Path) -> threading.Timer:
    """Opens ``fifo`` for writing after 20 s: were the command to open it for reading, the test
    would fail instead of hanging."""
    def unblock():
        os.close(os.open(fifo, os.O_RDWR))  # a writer that comes and goes: a blocked reader reads EOF

    timer = threading.Timer(20, unblock)
    timer.daemon = True
    timer.start()
    return timer


# trec_eval 10.0 on a FIFO as the run: "trec_eval.get_results: Cannot read results file 'fifo'", exit 2
@pytest.mark.parametrize("where", ["run", "qrels", "in-a-parquet-directory"])
def test_spark_refuses_a_fifo_in_one_line_before_any_jvm(tmp_path, no_jvm, where):
    qrels, run = _files(tmp_path)
    if where == "in-a-parquet-directory":
        (tmp_path / "run.parquet").mkdir()
        fifo = tmp_path / "run.parquet" / "part-0.parquet"
        run, named = str(tmp_path / "run.parquet"), str(fifo)
    else:
        fifo = tmp_path / "fifo"
        named = str(fifo)
        qrels, run = (str(fifo), run) if where == "qrels" else (qrels, str(fifo))
    os.mkfifo(fifo)
    timer = _unblock_later(fifo)
    began = time.monotonic()
    proc = run_main("eval", "--engine", "spark", qrels, run, "NDCG_lin@10")
    timer.cancel()
    assert time.monotonic() - began < 15, "the FIFO was opened"
    assert proc.returncode == 2 and proc.stdout == "", proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and named in lines[0] and "not a regular file (a FIFO)" in lines[0], proc.stderr


# trec_eval 10.0 on /proc/self/mem as the run: "Cannot read results file '/proc/self/mem'", exit 2
@pytest.mark.skipif(not os.path.exists("/proc/self/mem"), reason="needs Linux's /proc/self/mem (reads fail with EIO)")
@pytest.mark.parametrize("which", ["run", "qrels"])
def test_spark_read_error_on_an_input_is_one_line_before_any_jvm(tmp_path, no_jvm, which):
    qrels, run = _files(tmp_path)
    bad = "/proc/self/mem"  # open() succeeds, read() fails with EIO
    proc = run_main("eval", "--engine", "spark", *((bad, run) if which == "qrels" else (qrels, bad)), "NDCG_lin@10")
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert lines == ["ndcg-plugin: error: /proc/self/mem: cannot be read: Input/output error"], proc.stderr


def test_a_read_error_after_the_checks_names_the_input_in_one_line(tmp_path, monkeypatch, pyspark_installed):
    # EIO in the middle of a file, met by a helper that reads it whole (qrels' comment scan)
    from ndcg_plugin.spark import command
    qrels, run = _files(tmp_path)

    def broken(*args, **kwargs):
        raise OSError(5, "Input/output error")
    monkeypatch.setattr(command, "session", broken)
    proc = run_main("eval", "--engine", "spark", qrels, run, "NDCG_lin@10")
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip().splitlines() == [
        f"ndcg-plugin: error: {qrels} or {run}: cannot be read: Input/output error"], proc.stderr


def _empty_answer_after_an_interrupt(*args, **kwargs):
    """What pyspark did in a CI run: Ctrl-C broke a call to the JVM, and a call in its cleanup, on
    the broken connection, failed with py4j's network error, which took the interrupt's place."""
    from py4j.protocol import Py4JNetworkError
    try:
        raise KeyboardInterrupt
    except KeyboardInterrupt:
        raise Py4JNetworkError("Answer from Java side is empty") from None


def _empty_answer(*args, **kwargs):
    from py4j.protocol import Py4JNetworkError
    raise Py4JNetworkError("Answer from Java side is empty")


# a CI run: Ctrl-C while the job ran ended "error: Spark failed: Answer from Java side is empty", status 2
@pytest.mark.parametrize("how", ["in-the-error's-context", "seen-by-the-command's-handler", "no-interrupt"])
def test_an_error_that_came_of_ctrl_c_is_the_interrupt_not_spark_failed(tmp_path, monkeypatch, pyspark_installed,
                                                                          how):
    from ndcg_plugin import interrupts
    from ndcg_plugin.spark import command, launch
    qrels, run = _files(tmp_path)
    monkeypatch.setattr(launch, "_at_exit", [True])  # nothing registered at exit by this process's test
    if how == "in-the-error's-context":
        monkeypatch.setattr(command, "session", _empty_answer_after_an_interrupt)
    else:
        monkeypatch.setattr(command, "session", _empty_answer)
        monkeypatch.setattr(interrupts, "received", how == "seen-by-the-command's-handler")
    proc = run_main("eval", "--engine", "spark", qrels, run, "NDCG_lin@10")
    if how == "no-interrupt":
        assert proc.returncode == 2, proc.stderr
        assert proc.stderr.strip().splitlines() == [
            "ndcg-plugin: error: Spark failed: Answer from Java side is empty"], proc.stderr
    else:
        assert proc.returncode == 130, proc.stderr
        assert proc.stderr.strip().splitlines() == ["ndcg-plugin: interrupted"], proc.stderr


def test_spark_gives_ctrl_c_back_to_the_handler_it_had_before_the_session(tmp_path, monkeypatch, pyspark_installed):
    # pyspark's SparkContext installs its own SIGINT handler (it asks the JVM to cancel, inside the
    # call Ctrl-C interrupts); the command's own handler (which notes the interrupt) was lost to it
    from ndcg_plugin.spark import command
    qrels, run = _files(tmp_path)
    seen = []

    def own(signum, frame):
        seen.append(signum)

    def pysparks(signum, frame):
        pytest.fail("pyspark's handler was left in place")

    def session(*args, **kwargs):
        signal.signal(signal.SIGINT, pysparks)
        return object()

    def prepare(*args, **kwargs):
        raise ValueError("stop here")

    monkeypatch.setattr(command, "session", session)
    monkeypatch.setattr("ndcg_plugin.spark.prepare_files", prepare)
    before = signal.signal(signal.SIGINT, own)
    try:
        with pytest.raises(ValueError, match="stop here"):
            with command.files(command.SparkOptions(qrels, run), ["NDCG_lin@10"]):
                pass
        assert signal.getsignal(signal.SIGINT) is own
    finally:
        signal.signal(signal.SIGINT, before)


# a loop of the real Ctrl-C test: py4j's "Exception occurred while shutting down connection", a
# BrokenPipeError raised while it handled the KeyboardInterrupt, logged on its own logger and
# printed with its traceback by the root's handler (a filter on the root logger never saw it)
def test_py4j_logs_of_what_ctrl_c_broke_are_dropped_and_other_logs_kept(tmp_path, monkeypatch, pyspark_installed):
    import logging

    from ndcg_plugin import interrupts
    from ndcg_plugin.spark import command
    qrels, run = _files(tmp_path)

    def prepare(*args, **kwargs):
        raise ValueError("stop here")

    monkeypatch.setattr(command, "session", lambda *args, **kwargs: object())
    monkeypatch.setattr("ndcg_plugin.spark.prepare_files", prepare)
    monkeypatch.setattr(interrupts, "received", False)
    for name in ("", "py4j.java_gateway", "py4j.clientserver"):
        monkeypatch.setattr(logging.getLogger(name), "filters", [])
    shown: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record):
            shown.append(record.getMessage())

    keep = Keep()
    logging.getLogger().addHandler(keep)
    try:
        with pytest.raises(ValueError, match="stop here"):  # the session started: its filters are on
            with command.files(command.SparkOptions(qrels, run), ["NDCG_lin@10"]):
                pass

        def log(name: str, message: str, interrupted: bool) -> None:
            try:
                try:
                    raise KeyboardInterrupt if interrupted else ConnectionResetError("reset by the JVM")
                except BaseException:
                    raise BrokenPipeError(32, "Broken pipe")  # noqa: B904 - its context is the point
            except BrokenPipeError:
                logging.getLogger(name).exception(message)
        log("py4j.clientserver", "shutting down, after Ctrl-C", True)
        log("", "sending, after Ctrl-C", True)
        log("py4j.java_gateway", "a real failure", False)
        logging.getLogger("py4j.clientserver").error("no exception at all")
        assert shown == ["a real failure", "no exception at all"]
    finally:
        logging.getLogger().removeHandler(keep)


def _alive(pid: int) -> bool:
    """A process that runs (a zombie, waiting for a parent that does not reap it, has stopped)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _fake_java(tmp_path: Path, body: str) -> tuple[Path, Path]:
    """A JAVA_HOME whose bin/java records its pid in a file, then runs ``body``."""
    home, pids = tmp_path / "jdk", tmp_path / "java.pids"
    (home / "bin").mkdir(parents=True)
    java = home / "bin" / "java"
    java.write_text(f"#!/bin/sh\necho $$ >> {pids}\n{body}\n")
    java.chmod(0o755)
    return home, pids


# pyspark waits for the JVM without a bound: a java that never starts hung the command
@pytest.mark.parametrize(("timeout", "expected"), [
    ("2", "Java did not start Spark within 2 s (set NDCG_PLUGIN_SPARK_START_TIMEOUT to wait longer)"),
    ("abc", "NDCG_PLUGIN_SPARK_START_TIMEOUT='abc': expected a number of seconds above 0"),
], ids=["bounded", "bad-bound"])
def test_a_java_that_never_starts_is_one_line_within_the_bound(tmp_path, pyspark_installed, timeout, expected):
    qrels, run = _files(tmp_path)
    home, pids = _fake_java(tmp_path, "exec sleep 600")
    env = {**os.environ, "JAVA_HOME": str(home), "NDCG_PLUGIN_SPARK_START_TIMEOUT": timeout,
           "PYTHONPATH": str(ROOT)}
    began = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "ndcg_plugin", "eval", "--engine", "spark", qrels, run, "NDCG_lin@10"],
                          capture_output=True, text=True, env=env, timeout=120)
    assert time.monotonic() - began < 60
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and expected in lines[0] and "Traceback" not in proc.stderr, proc.stderr
    started = [int(p) for p in pids.read_text().split()] if pids.exists() else []
    assert len(started) == (1 if timeout == "2" else 0)
    assert not [p for p in started if _alive(p)], "the java that never started is still running"


def _processes() -> dict[int, tuple[int, str, str]]:
    """pid -> (parent pid, start time, command line) of every process, from /proc."""
    out = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                command = f.read().replace(b"\0", b" ").decode("utf-8", "replace")
        except OSError:
            continue
        out[int(entry)] = (int(fields[1]), fields[19], command)  # fields 4 (ppid) and 22 (starttime) of stat
    return out


class Watched:
    """The command in a session of its own (as a terminal's foreground job: Ctrl-C is SIGINT to its
    whole process group), standard error a terminal (a pty), and every process it starts seen
    (polled from /proc) while it runs."""

    def __init__(self, args: list[str], env: dict):
        master, slave = os.openpty()
        self.master, self.text, self.seen = master, "", {}
        self.proc = subprocess.Popen([sys.executable, "-m", "ndcg_plugin", *args], stdout=subprocess.PIPE,
                                     stderr=slave, stdin=subprocess.DEVNULL, env=env, start_new_session=True)
        os.close(slave)

    def poll(self) -> None:
        while select.select([self.master], [], [], 0)[0]:
            try:
                data = os.read(self.master, 4096)
            except OSError:  # EIO: every writer of the pty has closed it
                break
            if not data:
                break
            self.text += data.decode("utf-8", "replace")
        table = _processes()
        new = True
        while new:
            new = False
            for pid, (ppid, start, command) in table.items():
                if pid not in self.seen and (ppid == self.proc.pid or ppid in self.seen):
                    self.seen[pid] = (start, command)
                    new = True

    def wait_for(self, condition, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self.proc.poll() is None:
            self.poll()
            if condition():
                return True
            time.sleep(0.1)
        return False

    def interrupt_and_end(self) -> int:
        os.killpg(self.proc.pid, signal.SIGINT)  # what a terminal's Ctrl-C sends
        self.wait_for(lambda: False, 90)
        code = self.proc.wait(30)
        time.sleep(0.5)
        self.poll()
        os.close(self.master)
        return code

    def running(self, word: str) -> list[str]:
        return [c for s, c in self.seen.values() if word in c]

    def left(self) -> list[str]:
        """The processes it started that still run (a zombie has stopped; a reused pid is another)."""
        now = _processes()
        return [command for pid, (start, command) in self.seen.items()
                if pid in now and now[pid][1] == start and _alive(pid)]


@pytest.mark.skipif(not shutil.which("java") and not os.environ.get("JAVA_HOME"), reason="needs Java (a real JVM)")
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="counts processes through Linux's /proc")
def test_ctrl_c_while_spark_starts_and_while_its_job_runs_is_one_line_130_and_leaves_no_process(tmp_path,
                                                                                              pyspark_installed):
    # Before: Ctrl-C while the JVM started left a JVM that never exits; during the job, the JVM's
    # Python workers (in the terminal's process group) died of it: "Spark failed", exit 2
    qrels, run = tmp_path / "q", tmp_path / "r"
    qrels.write_text("".join(f"q{i} 0 d{i}_{j} {j % 3}\n" for i in range(1000) for j in range(5)))
    run.write_text("".join(f"q{i} Q0 d{i}_{j} {j} {1000 - j} t\n" for i in range(1000) for j in range(150)))
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NDCG_PLUGIN_SPARK_START_TIMEOUT": "600"}
    args = ["eval", "--engine", "spark", "--spark-master", "local[2]", str(qrels), str(run), "NDCG_lin@10"]
    # 1. while the JVM starts: as soon as a java process runs
    starting = Watched(args, env)
    assert starting.wait_for(lambda: starting.running("java"), 60), starting.text
    assert starting.interrupt_and_end() == 130, starting.text
    lines = starting.text.strip().splitlines()
    assert lines[-1].strip() == "ndcg-plugin: interrupted" and "Traceback" not in starting.text, starting.text
    assert lines[0].startswith("ndcg-plugin: note: starting Spark"), starting.text  # stderr is a terminal
    assert starting.running("java") and starting.left() == [], starting.left()
    # 2. while the job runs: once the JVM's Python workers run (py4j logged a traceback then)
    job = Watched(args, env)
    assert job.wait_for(lambda: "Spark started in" in job.text, 600), job.text
    assert job.wait_for(lambda: job.running("pyspark.daemon"), 300), job.text
    assert job.proc.poll() is None, "the job ended before the interrupt: give it a longer run"
    assert job.interrupt_and_end() == 130, job.text
    lines = job.text.strip().splitlines()
    assert lines[-1].strip() == "ndcg-plugin: interrupted", job.text
    assert "Traceback" not in job.text and "Spark failed" not in job.text and "py4j" not in job.text, job.text
    assert job.proc.stdout.read() == b""
    assert job.running("java") and job.left() == [], job.left()


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _main_with_stderr(stderr: io.StringIO, *args: str) -> tuple[int, str]:
    """The command's main() with ``stderr`` as standard error (a terminal or not), stdout dropped."""
    from ndcg_plugin.cli.commands import main
    with contextlib.redirect_stderr(stderr), contextlib.redirect_stdout(io.StringIO()):
        code = main(list(args))
    return code, stderr.getvalue()


# item 16: the JVM's start (10-60 s) was silent; a note says so first, on a terminal only
@pytest.mark.parametrize("terminal", [True, False], ids=["terminal", "piped"])
def test_spark_notes_its_start_on_a_terminal_only(tmp_path, monkeypatch, pyspark_installed, terminal):
    from ndcg_plugin.spark import SparkUnavailable

    def no_java(*args, **kwargs):
        raise SparkUnavailable("the Spark engine needs Java 17 or later")
    monkeypatch.setattr("ndcg_plugin.spark.command.session", no_java)
    qrels, run = _files(tmp_path)
    code, err = _main_with_stderr(_Terminal() if terminal else io.StringIO(), "eval", "--engine", "spark",
                                  "--spark-master", "local[2]", qrels, run, "NDCG_lin@10")
    assert code == 2
    note = "ndcg-plugin: note: starting Spark (local[2]): a JVM starts, which takes 10-60 s"
    error = "ndcg-plugin: error: the Spark engine needs Java 17 or later"
    assert err.splitlines() == ([note, error] if terminal else [error]), err


# item 16: compare of two 7M-line runs took 27 s in silence: a note before it reads, evaluates and
# tests runs this large, on a terminal only
@pytest.mark.parametrize("terminal", [True, False], ids=["terminal", "piped"])
def test_compare_of_long_runs_shows_progress_on_a_terminal_only(tmp_path, monkeypatch, terminal):
    from ndcg_plugin.cli import commands
    run = EXAMPLES / "example.run"
    other = tmp_path / "other.run"
    other.write_text(run.read_text())
    size = 2 * run.stat().st_size
    monkeypatch.setattr(commands, "NOTE_BYTES", size)  # the two runs below
    code, err = _main_with_stderr(_Terminal() if terminal else io.StringIO(), "compare",
                                  str(EXAMPLES / "example.qrels"), str(run), str(other), "-m", "NDCG_lin@10")
    assert code == 0, err
    if not terminal:
        assert err == ""
        return
    lines = [ln.strip() for ln in err.replace("\r", "\n").splitlines() if ln.strip()]
    assert f"ndcg-plugin: note: reading, evaluating and testing 2 runs of {size / 2**20:,.0f} MiB in all" in lines, err
    monkeypatch.setattr(commands, "NOTE_BYTES", size + 1)  # below the threshold: no note
    code, err = _main_with_stderr(_Terminal(), "compare", str(EXAMPLES / "example.qrels"), str(run), str(other),
                                  "-m", "NDCG_lin@10")
    assert code == 0 and "note:" not in err, err
