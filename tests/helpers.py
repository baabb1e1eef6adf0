"""Small builders for tests, and the ways tests run the command: in a process of its own (run_cli),
through main() in this process (run_main), many commands in one process (run_batch)."""
from __future__ import annotations

import contextlib
import io
import json
import math
import os
import subprocess
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd


def run_cli(*args: str, stdin: str | None = None, env: dict | None = None, cwd=None) -> subprocess.CompletedProcess:
    """``python -m ndcg_plugin ARGS`` in a new process (text in and out; ``env`` adds to this
    process's environment, which holds conftest.py's offline ir-datasets cache)."""
    return subprocess.run([sys.executable, "-m", "ndcg_plugin", *args], capture_output=True, text=True, input=stdin,
                          env={**os.environ, **(env or {})}, cwd=cwd)


def numpy_twin(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)`` with the C loops turned off (``speedups.disabled``): the numpy
    definition a C loop is compared with."""
    from ndcg_plugin.arrays import speedups

    with speedups.disabled():
        return fn(*args, **kwargs)


def both_ways() -> list[tuple[str, contextlib.AbstractContextManager]]:
    """(name, context) of the two ways a caller runs: with the C loops where they are built, and
    with numpy alone (``speedups.disabled``)."""
    from ndcg_plugin.arrays import speedups

    return [("C loops", contextlib.nullcontext()), ("numpy", speedups.disabled())]


def run_main(*args: str, stdin: str | None = None, cwd=None) -> subprocess.CompletedProcess:
    """What :func:`run_cli` gives, from the command's :func:`~ndcg_plugin.cli.commands.main` called
    in this process: for tests whose subject is what the command prints and its status, not the
    process (signals, closed streams, what a process imports or reads from its environment at
    start: those keep :func:`run_cli`). As the command does: every warning shown, once per place
    (whatever pytest's filters say); an argparse exit is its status; Ctrl-C while the arguments are
    read is 130. Any other exception propagates: the traceback the command would have printed."""
    from ndcg_plugin.cli.commands import main
    from ndcg_plugin.cli.terminal import say
    out, err = io.StringIO(), io.StringIO()
    data = io.TextIOWrapper(io.BytesIO((stdin or "").encode()), encoding="utf-8")
    with contextlib.ExitStack() as stack:
        stack.enter_context(contextlib.redirect_stdout(out))
        stack.enter_context(contextlib.redirect_stderr(err))
        stack.enter_context(_stdin(data))
        if cwd is not None:
            stack.enter_context(_cwd(cwd))
        stack.enter_context(warnings.catch_warnings())
        warnings.simplefilter("default")
        warnings.showwarning = _show_warning  # not pytest's recorder: printed where the command prints it
        try:
            code = main(list(args))
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        except KeyboardInterrupt:
            say("interrupted")
            code = 130
    return subprocess.CompletedProcess(["<main>", *args], code, out.getvalue(), err.getvalue())


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """Python's own way to show a warning: formatwarning's text (the command sets its own) written
    to standard error as it is then (on any thread)."""
    (file or sys.stderr).write(warnings.formatwarning(message, category, filename, lineno, line))


@contextlib.contextmanager
def _cwd(path):
    """contextlib.chdir, which Python 3.10 lacks."""
    saved = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(saved)


@contextlib.contextmanager
def _stdin(stream):
    saved, sys.stdin = sys.stdin, stream
    try:
        yield
    finally:
        sys.stdin = saved


BATCH = Path(__file__).with_name("cli_batch.py")


def run_batch(commands: list[list[str]]) -> list[subprocess.CompletedProcess]:
    """Each ``ndcg-plugin ARGV`` of ``commands`` through the command's entry point, one after the
    other in ONE new process (tests/cli_batch.py): a command that ends the process by a signal (or
    an interpreter that cannot start) fails the test, naming that command. Many commands for one
    process start: for stress tests whose cases each would otherwise start a process."""
    boot = "import runpy, sys; runpy.run_path(sys.argv[1], run_name='__main__')"
    child = subprocess.run([sys.executable, "-c", boot, str(BATCH)], capture_output=True, text=True,
                           input=json.dumps([[list(argv), None] for argv in commands]))
    outcomes = [json.loads(line) for line in child.stdout.splitlines()]
    # what reached file descriptor 2 outside sys.stderr (a C library's message) would be some command's stderr
    if child.returncode != 0 or len(outcomes) != len(commands) or child.stderr:
        at = commands[len(outcomes)] if len(outcomes) < len(commands) else None
        raise AssertionError(f"the process running {len(commands)} commands ended with status {child.returncode} "
                             f"after {len(outcomes)} of them (next: {at}): {child.stderr[-2000:]}")
    return [subprocess.CompletedProcess(["<batch>", *argv], code, out, err)
            for argv, (code, out, err) in zip(commands, outcomes, strict=True)]


def qrels_df(rows):
    return pd.DataFrame(rows, columns=["query_id", "doc_id", "relevance"])


def run_df(rows):
    return pd.DataFrame(rows, columns=["query_id", "doc_id", "score"])


def ranked(qid: str, rels: list[int], prefix: str = "d"):
    """A query whose run lists docs with these relevances at ranks 1..n (scores n..1), and
    qrels judging exactly those docs."""
    qrels = [(qid, f"{prefix}{i}", r) for i, r in enumerate(rels)]
    run = [(qid, f"{prefix}{i}", float(len(rels) - i)) for i in range(len(rels))]
    return qrels, run


def same(a: float, b: float) -> bool:
    """The same double, bit for bit (NaN: no value, on both sides)."""
    return (math.isnan(a) and math.isnan(b)) or a == b


def local_engine(qrels: pd.DataFrame, run: pd.DataFrame, measures: list) -> tuple[dict, dict]:
    """(aggregates, {(query, measure): value}) from the local engine (the plugin's provider)."""
    import ir_measures
    evaluator = ir_measures.providers.registry["ndcg_plugin"].evaluator(measures, qrels)
    aggregates = evaluator.calc_aggregate(run)
    per_query = {(m.query_id, str(m.measure)): float(m.value) for m in evaluator.iter_calc(run)}
    return aggregates, per_query


#: the environment of a child the test may find stuck: Python's fault handler prints every thread's
#: stack on SIGABRT (see :func:`communicate_or_dump`)
FAULT_HANDLER_ENV = {**os.environ, "PYTHONFAULTHANDLER": "1"}


def communicate_or_dump(proc: subprocess.Popen, timeout: float) -> tuple[str, str]:
    """``proc.communicate(timeout)``; a child still running then (started with
    :data:`FAULT_HANDLER_ENV`) gets SIGABRT, and the test fails with every thread's stack, where
    it waited."""
    import signal
    try:
        return proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGABRT)
        try:
            out, err = proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
        import pytest
        pytest.fail(f"{proc.args!r} still ran after {timeout:g} s; its threads:\n{err[-6000:]}")
