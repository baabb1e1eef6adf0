"""Ctrl-C ends the command in bounded time (ndcg_plugin/interrupts.py), whatever its cleanups wait
for. A KeyboardInterrupt can come at any instruction; where it leaves a lock held (CPython 3.11's
import system is one place that can), a worker thread waits for that lock for ever, and so does the
command joining that worker: CI saw ``eval`` hang 60 s after a SIGINT, with nothing written. The
command here really waits for ever (a worker that never returns), and must still end."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from ndcg_plugin import interrupts
from tests.helpers import FAULT_HANDLER_ENV, communicate_or_dump

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")

QRELS = "q1 0 d1 1\nq1 0 d2 0\nq2 0 d3 2\n"
RUN = "q1 Q0 d1 1 2.0 r\nq1 Q0 d2 2 1.0 r\nq2 Q0 d3 1 5.0 r\n"

#: the command, as ``ndcg-plugin`` runs it (its handler is installed: sys.argv[0] names it), with
#: the side-by-side path's per-block work replaced by a wait that never ends, as a lock left held
#: would make it; a file tells the test that a worker is stuck
STUCK_COMMAND = """
import sys, threading
marker, grace = sys.argv[1], float(sys.argv[2])
sys.argv[0] = "ndcg-plugin"
from ndcg_plugin import interrupts
interrupts.GRACE_SECONDS = grace
from ndcg_plugin.engine import side_by_side
def stuck(*args, **kwargs):
    open(marker, "w").close()
    threading.Event().wait()
side_by_side._block = stuck
sys.argv[1:] = ["eval", "qrels", "run", "-m", "P@1"]
from ndcg_plugin.cli.commands import run
run()
"""


def _start(tmp_path, grace: float) -> tuple[subprocess.Popen, str]:
    (tmp_path / "qrels").write_text(QRELS)
    (tmp_path / "run").write_text(RUN)
    marker = str(tmp_path / "stuck")
    proc = subprocess.Popen([sys.executable, "-c", STUCK_COMMAND, marker, str(grace)], cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=FAULT_HANDLER_ENV)
    start = time.monotonic()
    while not os.path.exists(marker):
        if proc.poll() is not None or time.monotonic() - start > 60:
            out, err = proc.communicate(timeout=60)
            pytest.fail(f"the command did not reach its worker: {proc.returncode} {out!r} {err!r}")
        time.sleep(0.01)
    return proc, marker


def test_ctrl_c_while_a_worker_waits_for_ever_ends_within_the_grace(tmp_path):
    proc, _ = _start(tmp_path, grace=1.0)
    sent = time.monotonic()
    proc.send_signal(signal.SIGINT)
    out, err = communicate_or_dump(proc, 45)  # before: for ever, its pool waiting for the stuck worker
    took = time.monotonic() - sent
    assert (proc.returncode, out, err) == (130, "", "ndcg-plugin: interrupted\n")
    assert 1.0 <= took < 30, took  # not before the grace: the cleanups had their time


def test_a_second_ctrl_c_ends_at_once(tmp_path):
    proc, _ = _start(tmp_path, grace=1000.0)
    proc.send_signal(signal.SIGINT)
    time.sleep(0.5)  # the first is being handled: the pool waits for its worker
    assert proc.poll() is None
    proc.send_signal(signal.SIGINT)
    out, err = communicate_or_dump(proc, 45)
    # SIGINT's default action, as trec_eval ends on Ctrl-C (130 to a shell); the line once
    assert (proc.returncode, out, err) == (-signal.SIGINT, "", "ndcg-plugin: interrupted\n")


def test_the_interrupt_raised_again_is_not_a_second_ctrl_c(monkeypatch):
    """:func:`interrupts.unraisable` raises the same Ctrl-C again (one Python could only print): it
    is a KeyboardInterrupt again, and starts no second clock; a real second SIGINT ends at once."""
    clocks, ended = [], []
    monkeypatch.setattr(interrupts, "received", False)
    monkeypatch.setattr(interrupts, "_again", False)
    monkeypatch.setattr(interrupts, "start_clock", clocks.append)
    monkeypatch.setattr(interrupts, "interrupted", lambda signum, frame: ended.append(signum))
    with pytest.raises(KeyboardInterrupt):
        interrupts.keyboard_interrupt(signal.SIGINT, None)
    assert clocks == [interrupts.GRACE_SECONDS] and interrupts.received
    monkeypatch.setattr(interrupts, "_again", True)  # as unraisable() sets it before its SIGINT
    with pytest.raises(KeyboardInterrupt):
        interrupts.keyboard_interrupt(signal.SIGINT, None)
    assert len(clocks) == 1 and ended == []
    interrupts.keyboard_interrupt(signal.SIGINT, None)  # a second Ctrl-C
    assert ended == [signal.SIGINT] and len(clocks) == 1


def test_the_line_is_written_once(monkeypatch):
    written = []
    monkeypatch.setattr(interrupts, "announced", False)
    monkeypatch.setattr(interrupts.os, "write", lambda fd, data: written.append((fd, data)))
    interrupts.announce()
    interrupts.announce()
    assert written == [(2, b"ndcg-plugin: interrupted\n")]
