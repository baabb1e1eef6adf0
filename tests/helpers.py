"""Small builders for tests, and the one way tests run the command in a process of its own."""
from __future__ import annotations

import contextlib
import math
import os
import subprocess
import sys
from collections.abc import Callable
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
