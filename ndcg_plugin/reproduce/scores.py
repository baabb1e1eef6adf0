"""What both modes of a reproduction report share: runs and qrels read by the one reader, and a
run's measures evaluated by the one evaluation path (:class:`ndcg_plugin.evaluation.Evaluation`),
as aggregates and as per-topic values over the qrels' topics.

Per-topic values follow each measure's conventions, as ``eval -q`` prints them: a qrels topic
missing from the run scores 0 (the measure's default value), and a measure that leaves misses
out (its default is NaN) has no value (NaN) on a topic without a relevant doc in its cutoff.
For an item-level measure the per-topic value is the topic's ratio; its aggregate, the micro
average, is ``eval``'s number.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .. import reading
from ..arrays.columns import columns_of
from ..errors import InputError
from ..evaluation import Evaluation
from ..measures.aggregate import Values


@dataclass
class Scored:
    """One run evaluated: ``aggregates`` (measure name -> the number ``eval`` prints) and
    ``values`` (topics x measures, in the order of ``topics`` and ``measures``; NaN: no value)."""
    measures: list[str]
    topics: list[str]
    aggregates: dict[str, float]
    values: np.ndarray

    def column(self, measure: str) -> np.ndarray:
        return self.values[:, self.measures.index(measure)]


def read_qrels(qrels: Any, duplicates: str = "error"):
    """QRELS as a table (a file, or any form :func:`ndcg_plugin.read` takes)."""
    return reading.read(qrels, "qrels", duplicates=duplicates)


def read_run(run: Any, run_format: str = "auto", duplicates: str = "error"):
    """A run: a file into the reader's columns (no DataFrame), any other form as a table."""
    if reading.is_file_like(run):
        return reading.read_columns(run, "run", run_format=run_format, duplicates=duplicates)
    return reading.read(run, "run", run_format=run_format, duplicates=duplicates)


def topics_of(qrels_table) -> list[str]:
    """The qrels' topics, as strings, sorted as strings."""
    return sorted({str(q) for q in qrels_table["query_id"].unique()})


def check_topics(run: Any, topics: pa.Array, source: str) -> None:
    """An InputError when the run (read by :func:`read_run`) has a topic the qrels lack: a
    reproduction compares runs on the qrels' topics, so such a run was meant for other qrels."""
    uniques = pc.unique(columns_of(run, "score")[0])
    missing = pc.filter(uniques, pc.invert(pc.is_in(uniques, value_set=topics.cast(uniques.type))))
    if len(missing):
        raise InputError(source, None, f"{len(missing)} of the run's {len(uniques)} topics are not in the qrels "
                         f"(e.g. {missing[0].as_py()!r}); are these the right qrels for this run?")


def _per_topic(vals: Values) -> np.ndarray:
    """A measure's per-topic values: an item-level measure's ratio (0 where nothing was returned)."""
    if vals.hits is None or vals.returned is None:
        return np.asarray(vals.values, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(vals.returned > 0, vals.hits / np.maximum(vals.returned, 1), 0.0)


def evaluate(ev: Evaluation, run: Any, topics: list[str]) -> Scored:
    """``ev``'s measures on a run (read by :func:`read_run`), per topic over ``topics`` (the qrels'),
    with each measure's aggregate as ``eval`` computes it (the engine evaluates the run in blocks
    of whole topics, as it evaluates any run in memory); the others on the whole run. ``ev``'s
    qrels (a table) are indexed once, for every run."""
    measures = list(ev.measures)
    position = {t: i for i, t in enumerate(topics)}
    values = np.full((len(topics), len(measures)), np.nan)
    for j, m in enumerate(measures):
        values[:, j] = float(getattr(m, "DEFAULT", 0.0))
    aggregates: dict = {}
    if ev.engine_measures:  # in blocks of whole topics, as eval evaluates a run in memory (sizes.BLOCK_ROWS)
        results = ev.only(ev.engine_measures).compute(run, per_query=True)
        rows = np.array([position[str(q)] for q in results.query_ids], dtype=np.int64)
        aggregates.update(results.aggregates)
        for m, vals in results.values.items():
            values[rows, measures.index(m)] = _per_topic(vals)
    if ev.other_measures:
        table = reading.to_table([run], "run") if hasattr(run, "layout") else run  # providers read DataFrames
        results = ev.only(ev.other_measures).compute(table, per_query=True)
        aggregates.update(results.aggregates)
        for metric in results.others:
            values[position[str(metric.query_id)], measures.index(metric.measure)] = float(metric.value)
    return Scored([str(m) for m in measures], topics, {str(m): float(aggregates[m]) for m in measures}, values)
