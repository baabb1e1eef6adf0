"""One way from measures, qrels and a run to per-query values and aggregates: ``ndcg-plugin eval``,
``crosscheck`` and ``compare`` evaluate through :class:`Evaluation`, and the ir-measures provider
through the same engine calls (:func:`engine_values`, :func:`aggregate`, :func:`metrics`).

An :class:`Evaluation` is planned once, when it is made:

- each measure is routed once (:func:`route`): to the plugin's engine when a family computes it
  (the plugin's measures, and the built-ins ``nDCG``, ``RR``, ``Success`` where their parameters
  allow), else to the first provider of ir-measures' DefaultPipeline that supports it; or every
  measure to one provider the caller names;
- whether the run streams is decided once: a run file (not standard input) is evaluated as it
  streams (:func:`ndcg_plugin.engine.stream.compute_file`, memory bounded by the block size) when the
  engine computes every measure; its reading starts at once, on a worker thread, so the first
  blocks parse while the qrels are read. Otherwise the run is read whole.

:meth:`Evaluation.compute` then gives :class:`Results`, where each measure is aggregated once:
the engine's from their per-query arrays, another provider's by its own ``calc_aggregate``, or,
when per-query values are asked for, by the measure's aggregator over the values printed.
"""
from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import ir_measures
from ir_measures import Metric

from .errors import InputError
from .measures import PluginMeasure, registry, spec_of
from .measures.aggregate import aggregate_arrays, per_query_values
from .sizes import BLOCK_BYTES

#: the name of the plugin's engine among ir-measures' providers
ENGINE = "ndcg_plugin"


def engine_computes(measure) -> bool:
    """True for the plugin's measures (a ValueError for bad parameters) and for the built-ins a
    family computes whose parameters the engine computes as pytrec_eval defines them."""
    if isinstance(measure, PluginMeasure):
        spec_of(measure)
        return True
    if registry.builtin_family(measure) is None:
        return False
    try:
        spec_of(measure)
    except ValueError:
        return False
    return True


def route(measure) -> str:
    """The provider that computes ``measure`` in an evaluation: :data:`ENGINE` for every measure
    the engine computes, else the first available provider of ir-measures' DefaultPipeline that
    supports it (a ValueError when none does)."""
    if engine_computes(measure):
        return ENGINE
    for p in ir_measures.DefaultPipeline.providers:
        if getattr(p, "NAME", None) != ENGINE and p.supports(measure) and p.is_available():
            return p.NAME
    raise ValueError(f"no ir-measures provider computes {measure}")


#: the package that brings each optional ir-measures provider's library
PROVIDER_PACKAGES = {"ranx": "ranx", "cwl_eval": "cwl-eval", "trectools": "trectools", "pyndeval": "pyndeval",
                     "pytrec_eval": "pytrec-eval-terrier"}


def check_provider(name: str) -> None:
    """A ValueError unless ``name`` is an ir-measures provider that can run here (its library is
    installed), saying what to install."""
    registry = ir_measures.providers.registry
    if name not in registry:
        raise ValueError(f"no ir-measures provider is named {name!r} (known: {', '.join(sorted(registry))})")
    if not registry[name].is_available():
        package = PROVIDER_PACKAGES.get(name)
        how = f"pip install {package}" if package else "its library is not installed"
        raise ValueError(f"provider {name} is not available here ({how}); leave it out to use the plugin and "
                         f"ir-measures' default providers")


@dataclass(frozen=True)
class ReadOptions:
    """How the run (and qrels files) are read: see :func:`ndcg_plugin.read`. ``block_bytes`` 0
    reads the run whole, never streamed."""
    run_format: str = "auto"
    duplicates: str = "error"
    block_bytes: int = BLOCK_BYTES
    progress: Any = None
    qrels_columns: Any = None   # a Parquet file's column names ({"query_id": "user_id", ...}), as read()'s columns=
    run_columns: Any = None


def qrels_queries(qrels: Any):
    """The distinct query ids of a qrels table (an Arrow array)."""
    import pyarrow.compute as pc

    from .arrays.columns import columns_of
    return pc.unique(columns_of(qrels, "relevance")[0])


def refuse_crashing_queries(qrels: Any, measures: list, source: str = "qrels") -> None:
    """An InputError naming the first qrels query whose labels are all negative: trec_eval 10.0
    stops on it ("Can't calculate measure", status 4; with labels of -2 or lower it allocates a
    negative size and dies) and pytrec_eval crashes (a segmentation fault, or a loop), so such
    qrels are never handed to them."""
    import numpy as np

    from .arrays.columns import columns_of, group_codes
    qids, _, rel = columns_of(qrels, "relevance")
    rel = np.asarray(rel, dtype=np.int64)
    if not np.any(rel < 0):
        return
    codes, uniques, _ = group_codes(qids)
    highest = np.full(len(uniques), np.iinfo(np.int64).min)
    np.maximum.at(highest, codes, rel)
    bad = np.flatnonzero(highest < 0)
    if len(bad):
        names = " ".join(map(str, measures))
        raise InputError(source, None, f"query {uniques[int(bad[0])].as_py()!r} has only negative labels: "
                         f"trec_eval cannot evaluate such a query and pytrec_eval crashes on it, so {names} "
                         f"(computed by pytrec_eval) cannot be; the plugin's own measures evaluate it (give the "
                         f"query a label of 0 or more, or leave it out)")


def _object_ids(table: Any) -> Any:
    """A DataFrame with its id columns as Python strings (dtype object), as ir-measures'
    providers expect them (ranx asserts it; pandas 3 reads strings as its own string dtype);
    anything else as given. The caller's frame is not modified."""
    import pandas as pd
    if not isinstance(table, pd.DataFrame):
        return table
    ids = [c for c in ("query_id", "doc_id") if c in table.columns and table[c].dtype != object]
    return table.astype({c: object for c in ids}) if ids else table


def _is_regular_file(path: Any) -> bool:
    """A path to a regular file (one that can be read again from its start), not ``-``."""
    return isinstance(path, (str, os.PathLike)) and str(path) != "-" and os.path.isfile(path)


def engine_values(index, run, measures: Iterable, duplicates: str = "error") -> dict:
    """The engine's per-query values (``aggregate.Values`` over ``index.qids``) of each measure on
    a run table (or the reader's :class:`~ndcg_plugin.arrays.block.Block` of one) or a run file
    opened for streaming (:class:`ndcg_plugin.reading.ahead.RunFile`)."""
    from .engine import block as engine
    from .reading.ahead import RunFile
    specs = {m: spec_of(m) for m in measures}
    if isinstance(run, RunFile):
        from .engine.stream import compute_file
        results = compute_file(index, run, specs.values(), duplicates=duplicates)
    else:
        results = engine.compute_in_blocks(index, run, specs.values())
    return {m: results[s] for m, s in specs.items()}


def aggregate(values: dict) -> dict:
    """Each measure's aggregate from its per-query values, with its own aggregator."""
    return {measure: aggregate_arrays(measure, vals.values, vals.hits, vals.returned)
            for measure, vals in values.items()}


def metrics(values: dict, query_ids: list) -> Iterator[Metric]:
    """Per-query Metrics from :func:`engine_values`: by query (the order of ``query_ids``), then
    measure.

    A query with no value for any of the measures (a measure that leaves misses out, with no
    relevant doc in the top k) yields no Metric, so that consumers that average the values they
    get (PyTerrier's ``pt.Experiment``) average over the queries that have one. A query with a
    value for some measure yields one Metric per measure, NaN where it has none, so that every
    query they get has every measure (``pt.Experiment`` needs that). ir-measures' aggregators
    skip the NaN: both give the aggregate of calc_aggregate."""
    columns = [(measure, per_query_values(vals.values, vals.hits, vals.returned))
               for measure, vals in values.items()]
    for i, qid in enumerate(query_ids):
        row = [(measure, col[i]) for measure, col in columns]
        if all(v != v for _, v in row):  # NaN everywhere: no value for this query
            continue
        for measure, value in row:
            yield Metric(query_id=qid, measure=measure, value=value)


@dataclass
class Results:
    """What an :class:`Evaluation` computed: ``aggregates`` (every measure, in the order asked),
    and with per-query values asked for, ``metrics()``: the engine's by query then measure, then
    the other providers' in the order they gave them."""
    measures: list
    aggregates: dict
    query_ids: list = field(default_factory=list)
    values: dict = field(default_factory=dict)       # the engine's per-query values
    others: list = field(default_factory=list)       # other providers' Metrics

    def metrics(self) -> Iterator[Metric]:
        yield from metrics(self.values, self.query_ids)
        yield from self.others


class Evaluation:
    """Measures on a run, routed once, with the run's way in decided once (see the module
    docstring). ``provider``: compute every measure with this ir-measures provider instead.
    Close it (or use it as a context manager) to stop the reading of a run that was not used."""

    def __init__(self, measures: Iterable, run: Any, *, provider: str | None = None,
                 options: ReadOptions | None = None):
        self.measures = list(dict.fromkeys(measures))
        self.options = options or ReadOptions()
        self.provider = provider
        if provider:
            check_provider(provider)
            refused = [str(m) for m in self.measures if not ir_measures.providers.registry[provider].supports(m)]
            if refused:
                raise ValueError(f"provider {provider} does not compute {', '.join(refused)}; leave --provider out "
                                 f"(each measure then goes to the plugin or to the first ir-measures provider "
                                 f"that computes it), or ask {provider} for measures it computes")
        self.routes = {m: provider if provider else route(m) for m in self.measures}
        self.mine = [m for m in self.measures if self.routes[m] == ENGINE and not provider]
        self.others = [m for m in self.measures if m not in self.mine]
        # a run file streams when it can be read again from its start (a regular file, or a
        # folder of Parquet files): a run that turns out not grouped by query is then read again
        # whole; a pipe, a FIFO or standard input is read once, whole
        self.streams = (not self.others and self.options.block_bytes > 0 and isinstance(run, (str, os.PathLike))
                        and "\n" not in str(run) and str(run) != "-" and (os.path.isfile(run) or os.path.isdir(run)))
        self.run = run
        if self.streams:  # the first blocks parse on a worker thread from now on
            from .reading.ahead import RunFile
            self.run = RunFile(run, self.options.run_format, self.options.block_bytes, self.options.progress,
                               self.options.run_columns)

    def __enter__(self) -> Evaluation:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        if self.streams:
            self.run.close()

    def other_providers(self) -> dict[str, list]:
        """{provider name: its measures}, for the measures the engine does not compute."""
        out: dict = {}
        for m in self.others:
            out.setdefault(self.routes[m], []).append(m)
        return out

    def read_qrels(self, qrels: Any):
        """QRELS as a table: a file read into the reader's columns when only the engine reads it
        (no pandas), else into a DataFrame; a table as given."""
        from . import reading
        if not reading.is_file_like(qrels):
            return qrels
        columns = self.options.qrels_columns
        if self.others:
            return reading.read(qrels, "qrels", duplicates=self.options.duplicates, columns=columns)
        return reading.read_columns(qrels, "qrels", duplicates=self.options.duplicates, columns=columns)

    def compute(self, qrels: Any, per_query: bool = False) -> Results:
        """Evaluate on ``qrels`` (a file, or a table from :func:`ndcg_plugin.read`); ``per_query``:
        keep the per-query values too (:meth:`Results.metrics`)."""
        from . import reading
        if self.streams and _is_regular_file(qrels):
            streamed = self._side_by_side(qrels, per_query)
            if streamed is not None:
                return streamed
        source = str(qrels) if isinstance(qrels, (str, os.PathLike)) else "qrels"
        qrels = self.read_qrels(qrels)
        index = None
        if self.mine:
            from .ranking.qrels_index import QrelsIndex
            index = QrelsIndex(qrels)
        run = engine_run = self.run  # the reader hands the engine the table's block (its group codes)
        if not self.streams and reading.is_file_like(run):
            # a repeated pair counts only in a query the qrels hold, as trec_eval
            queries = index.qid_values if index is not None else qrels_queries(qrels)
            engine_run = reading.read_grouped(run, "run", run_format=self.options.run_format,
                                              duplicates=self.options.duplicates, progress=self.options.progress,
                                              columns=self.options.run_columns,
                                              queries=queries)
            run = engine_run.rows
        out = Results(self.measures, {})
        if index is not None:
            out.values = engine_values(index, engine_run, self.mine, self.options.duplicates)
            out.query_ids = list(index.qids)
            out.aggregates.update(aggregate(out.values))
        if self.others:
            self._compute_others(qrels, run, per_query, out, source)
        out.aggregates = {m: out.aggregates[m] for m in self.measures}
        return out

    def _side_by_side(self, qrels: Any, per_query: bool) -> Results | None:
        """The run and a qrels file streamed side by side (:mod:`ndcg_plugin.engine.side_by_side`), or None
        when they are not both sorted in one order: the run, if its blocks were taken, is then
        opened again, to be read from its start the other way."""
        from .engine import side_by_side
        from .measures.aggregate import Aggregates
        from .reading.ahead import RunFile
        sink = Aggregates({m: spec_of(m) for m in self.mine}, keep=per_query)
        try:
            side_by_side.evaluate(qrels, self.run.take_blocks, self.run.source, sink.specs.values(), sink,
                                  self.options.duplicates, self.options.block_bytes, self.options.qrels_columns)
        except side_by_side.Unsorted:
            if not self.run.untouched():  # the qrels declined at their first block: the run's stand
                self.run = RunFile(self.run.path, self.options.run_format, self.options.block_bytes,
                                   self.options.progress, self.options.run_columns)
            return None
        out = Results(self.measures, sink.result())
        if per_query:
            out.query_ids, out.values = sink.per_query()
        return out

    def _compute_others(self, qrels, run, per_query: bool, out: Results, source: str = "qrels") -> None:
        if "pytrec_eval" in self.other_providers():
            refuse_crashing_queries(qrels, [m for m in self.others if self.routes[m] == "pytrec_eval"], source)
        calc = ir_measures.providers.registry[self.provider] if self.provider else ir_measures
        if self.provider:  # a provider named by the user may assert Python string ids (ranx does)
            qrels, run = _object_ids(qrels), _object_ids(run)
        try:
            if not per_query:
                out.aggregates.update(calc.calc_aggregate(self.others, qrels, run))
                return
            aggs = {m: m.aggregator() for m in self.others}
            for metric in calc.iter_calc(self.others, qrels, run):
                aggs[metric.measure].add(metric.value)
                out.others.append(metric)
        except (AssertionError, AttributeError, KeyError, TypeError) as e:  # a provider's own refusal
            names = ", ".join(sorted(set(self.other_providers())))
            first = (str(e).strip().splitlines() or [type(e).__name__])[0]
            raise ValueError(f"ir-measures provider {names} failed: {first}") from None
        out.aggregates.update({m: agg.result() for m, agg in aggs.items()})
