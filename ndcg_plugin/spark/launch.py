"""The JVM a new session starts, under the engine's control: launched by pyspark's own launcher
(the same ``spark-submit`` command line and settings) but in a process group of its own, with a
bounded wait for it to come up, and stopped with every process of its group (Spark's launcher,
the Python workers) when the command is interrupted.

What pyspark alone does: it waits for the JVM without limit (a ``java`` that hangs at start
hangs the command; one that exits with status 0 before it is up makes it loop forever); on
Ctrl-C while it waits it removes the directory where the JVM writes its port, and the JVM,
failing there after its gateway thread started, never exits; and a terminal's Ctrl-C reaches
every process of the terminal's foreground group, the JVM's Python workers too, which die of it
and fail the job ("Spark failed") instead of the command being interrupted.
"""
from __future__ import annotations

import atexit
import math
import os
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

#: how long (seconds) the JVM may take to start before the command gives up on it; a JVM took
#: 38-64 s on a loaded 2-core machine. NDCG_PLUGIN_SPARK_START_TIMEOUT sets another bound.
START_TIMEOUT = 300.0
TIMEOUT_VARIABLE = "NDCG_PLUGIN_SPARK_START_TIMEOUT"

_lock = threading.Lock()
_started: list[subprocess.Popen] = []  # the JVMs this process started, each the leader of its group
_at_exit: list[bool] = []  # whether stop_started runs at exit


class StartTimeout(RuntimeError):
    """The JVM did not come up within the bound (one line: how long, and how to wait longer)."""


class _GroupPopen(subprocess.Popen):
    """pyspark's ``spark-submit`` process in a session (and process group) of its own, whose
    ``poll`` gives up at ``deadline`` (killing the group) while ``launching``."""

    deadline = math.inf
    launching = True
    timed_out = False

    def __init__(self, *args, **kwargs):
        kwargs["start_new_session"] = True  # a terminal's Ctrl-C goes to the command only
        super().__init__(*args, **kwargs)

    def poll(self):
        code = super().poll()
        if not self.launching:
            return code
        if code is None and time.monotonic() > self.deadline:
            self.timed_out = True
            stop(self, grace=0)
            code = self.wait()
        return 1 if code == 0 else code  # pyspark's wait loop reads 0 as "still running"


def start_timeout() -> float:
    """The bound on the JVM's start: :data:`START_TIMEOUT`, or NDCG_PLUGIN_SPARK_START_TIMEOUT."""
    text = os.environ.get(TIMEOUT_VARIABLE, "").strip()
    if not text:
        return START_TIMEOUT
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (value > 0 and math.isfinite(value)):
        raise ValueError(f"{TIMEOUT_VARIABLE}={text!r}: expected a number of seconds above 0")
    return value


@contextmanager
def bounded() -> Iterator[None]:
    """Around pyspark's start of a session (``builder.getOrCreate()``): a JVM it launches starts as
    the module docstring says; :class:`StartTimeout` when it does not come up within
    :func:`start_timeout`. On any failure or interrupt inside, the JVM's process group is stopped
    before the exception goes on. (A session or context that exists launches nothing.)"""
    from pyspark import java_gateway
    timeout = start_timeout()
    launched: list[_GroupPopen] = []

    def popen(*args, **kwargs) -> _GroupPopen:
        proc = _GroupPopen(*args, **kwargs)
        proc.deadline = time.monotonic() + timeout
        launched.append(proc)
        return proc

    with _lock:
        original, java_gateway.Popen = java_gateway.Popen, popen  # pyspark's launcher runs Popen(command, ...)
        try:
            yield
        except BaseException:
            for proc in launched:
                stop(proc)
            if any(p.timed_out for p in launched):
                raise StartTimeout(f"Java did not start Spark within {timeout:g} s (set {TIMEOUT_VARIABLE} to wait "
                                   f"longer); check that JAVA_HOME or the java on PATH is a working Java 17 "
                                   f"or later") from None
            raise
        finally:
            java_gateway.Popen = original
            for proc in launched:
                proc.launching = False
    _started.extend(launched)


def stop(proc: subprocess.Popen, grace: float = 5.0) -> None:
    """Stop ``proc`` and every process of its group: SIGTERM (the JVM's shutdown hooks remove its
    temporary files), then SIGKILL to whatever is left after ``grace`` seconds (the group's other
    members too: Python workers, the child of a launcher script)."""
    if grace > 0:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(grace)
        except (ProcessLookupError, PermissionError):
            return  # no process of the group is left
        except subprocess.TimeoutExpired:
            pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        pass
    if proc.stdin is not None:  # the pipe pyspark opened to the JVM (else an "unclosed file" warning)
        try:
            proc.stdin.close()
        except OSError:
            pass


def stop_started() -> None:
    """Stop every JVM this process started (and its group), e.g. when the command is interrupted;
    py4j's logger is silenced first: its connections to them break."""
    import logging
    logging.getLogger("py4j").setLevel(logging.CRITICAL + 1)
    while _started:
        stop(_started.pop())


def stop_at_exit() -> None:
    """Stop the JVMs this process started when it exits, and wait for them (a command that was
    interrupted: its process ends at once, and leaves none behind; a program that runs the command
    again in the same process finds the session alive meanwhile)."""
    if not _at_exit:
        atexit.register(_stop_quietly)
        _at_exit.append(True)


def _stop_quietly() -> None:
    """:func:`stop_started` as the process ends. pyspark's accumulator server (a thread of this
    process) prints a traceback when the JVM's connection to it breaks: the process has said what
    it had to, so its standard error (descriptor 2) goes to /dev/null first."""
    if _started:
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 2)
            os.close(devnull)
        except OSError:
            pass
        stop_started()
