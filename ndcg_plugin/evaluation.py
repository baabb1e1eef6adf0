"""One way from measures, qrels and a run to per-query values and aggregates: ``ndcg-plugin eval``,
``crosscheck`` and ``compare`` evaluate through :class:`Evaluation`, and the ir-measures provider
through the same engine calls (:func:`engine_values`, :func:`aggregate`, :func:`metrics`).

An :class:`Evaluation` holds measures and one qrels, planned once, when it is made:

- each measure is routed once (:func:`ndcg_plugin.routing.route`; :attr:`Evaluation.routes`): to the plugin's engine
  when a family computes it (the plugin's measures, and the built-ins ``nDCG``, ``RR``,
  ``Success`` where their parameters allow), else to the first provider of ir-measures'
  DefaultPipeline that supports it; or every measure to one provider the caller names
  (:class:`~ndcg_plugin.routing.NamedProvider`, checked once, when it is made);
- the qrels are read once, when first needed, and their engine index
  (:attr:`Evaluation.index`) built once, reused by every run the evaluation computes and by the
  evaluations it restricts to fewer measures (:meth:`Evaluation.only`).

For each run, :meth:`Evaluation.compute` decides whether it streams: a run file (not standard
input) is evaluated as it streams (:func:`ndcg_plugin.engine.stream.compute_file`, memory
bounded by the block size) when the engine computes every measure; its reading starts at once, on
a worker thread, so the first blocks parse while the qrels are read. Otherwise the run is read
whole.

:meth:`Evaluation.compute` gives :class:`Results`, where each measure is aggregated once:
the engine's from their per-query arrays, another provider's by its own ``calc_aggregate``, or,
when per-query values are asked for, by the measure's aggregator over the values printed.
"""
from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import ir_measures
from ir_measures import Metric

from .errors import InputError
from .measures import spec_of
from .measures.aggregate import aggregate_arrays, per_query_values
from .routing import ENGINE, NamedProvider, route
from .sizes import BLOCK_BYTES

if TYPE_CHECKING:
    from .ranking.qrels_index import QrelsIndex

@dataclass(frozen=True)
class ReadOptions:
    """How the run (and qrels files) are read: see :func:`ndcg_plugin.read`. ``block_bytes`` 0
    reads the run whole, never streamed. ``depth``: each query's top rows evaluated, in trec_eval's
    order (trec_eval's ``-M``; :mod:`ndcg_plugin.engine.depth`), after the duplicate check; None:
    every row."""
    run_format: str = "auto"
    duplicates: str = "error"
    block_bytes: int = BLOCK_BYTES
    progress: Any = None
    qrels_columns: Any = None   # a Parquet file's column names ({"query_id": "user_id", ...}), as read()'s columns=
    run_columns: Any = None
    depth: int | None = None

    def __post_init__(self) -> None:
        if self.depth is not None:
            from .engine.depth import check_depth
            object.__setattr__(self, "depth", check_depth(self.depth))


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


@dataclass(frozen=True)
class DatasetQrels:
    """The qrels of an ir-datasets id, loaded (:func:`ndcg_plugin.datasets.load.load_qrels`) when an
    :class:`Evaluation` first needs them: after a run that streams has started parsing."""
    dataset_id: str

    def load(self) -> Any:
        from .datasets.load import load_qrels
        return load_qrels(self.dataset_id)


class _Qrels:
    """The qrels of an :class:`Evaluation` (and of those it restricts: :meth:`Evaluation.only`):
    read when first needed, once, and their engine index built when first needed, once. A file is
    read into the reader's columns (no pandas) unless ``frame`` (other providers read them too:
    a DataFrame); a table as given; an ir-datasets id's qrels loaded from ir-datasets."""

    def __init__(self, given: Any, options: ReadOptions, frame: bool):
        self.given, self.options, self.frame = given, options, frame
        self.source = str(given) if isinstance(given, (str, os.PathLike)) else "qrels"
        self._table: Any = None
        self._index: QrelsIndex | None = None

    def table(self) -> Any:
        if self._table is None:
            self._table = self._read()
        return self._table

    def _read(self) -> Any:
        from . import reading
        if isinstance(self.given, DatasetQrels):
            return self.given.load()
        if not reading.is_file_like(self.given) and _read_already(self.given):
            return self.given
        read = reading.read if self.frame or not reading.is_file_like(self.given) else reading.read_columns
        return read(self.given, "qrels", duplicates=self.options.duplicates, columns=self.options.qrels_columns)

    def index(self) -> QrelsIndex:
        if self._index is None:
            from .ranking.qrels_index import QrelsIndex
            self._index = QrelsIndex(self.table())
        return self._index

    def queries(self, indexed: bool) -> Any:
        """The distinct query ids: the index's when the engine computes some measure (``indexed``)."""
        return self.index().qid_values if indexed else qrels_queries(self.table())


def _read_already(table: Any) -> bool:
    """Whether ``table`` is qrels as :func:`ndcg_plugin.read` gives them (its four columns: checked
    then), or the reader's own columns; any other in-memory qrels (a user's DataFrame, a dict) are
    read, as the provider reads them: a label they cannot hold is refused, not wrapped round."""
    columns = getattr(table, "columns", None)
    return hasattr(table, "layout") or (columns is not None and list(columns) == ["query_id", "doc_id",
                                                                                    "relevance", "line"])


def _refuse_huge_cutoffs(measures: tuple) -> None:
    """A ValueError naming a measure whose cutoff is past 2^63 - 1 (no provider computes it: the
    engine's ranks are 64-bit, pytrec_eval's C longs)."""
    from .measures.base import MAX_CUTOFF
    for m in measures:
        cutoff = getattr(m, "params", {}).get("cutoff")
        if isinstance(cutoff, int) and cutoff > MAX_CUTOFF:
            raise ValueError(f"{m}: the cutoff must be at most 2^63 - 1 = {MAX_CUTOFF} (a 64-bit integer), "
                             f"got {cutoff}")


class Evaluation:
    """Measures evaluated on one qrels, routed once when it is made (see the module docstring):
    :attr:`routes` names the provider of each measure. The qrels (a file, a table, or
    :class:`DatasetQrels`) are read when first needed and their
    :attr:`index` built once, reused by every run :meth:`compute` evaluates. ``provider``: compute
    every measure with this ir-measures provider instead (checked when it was made)."""

    def __init__(self, measures: Iterable, *, qrels: Any, provider: NamedProvider | None = None,
                 options: ReadOptions | None = None):
        measures = tuple(dict.fromkeys(measures))
        _refuse_huge_cutoffs(measures)
        if provider is not None:
            refused = [str(m) for m in measures if not provider.supports(m)]
            if refused:
                raise ValueError(f"provider {provider.name} does not compute {', '.join(refused)}; leave --provider "
                                 f"out (each measure then goes to the plugin or to the first ir-measures provider "
                                 f"that computes it), or ask {provider.name} for measures it computes")
        routes = {m: provider.name if provider else route(m) for m in measures}
        options = options or ReadOptions()
        frame = provider is not None or any(r != ENGINE for r in routes.values())
        self._set(measures, routes, provider, options, _Qrels(qrels, options, frame))

    def _set(self, measures: tuple, routes: dict, provider: NamedProvider | None, options: ReadOptions,
             qrels: _Qrels) -> None:
        self._measures, self._routes = measures, MappingProxyType(routes)
        self._provider, self._options, self._qrels = provider, options, qrels
        # a named provider computes every measure, the plugin's own too (through ir-measures)
        self._engine = tuple(m for m in measures if routes[m] == ENGINE and provider is None)
        # by route, not by `in self._engine` (a tuple: one measure equality test per pair)
        self._others = tuple(m for m in measures if not (routes[m] == ENGINE and provider is None))

    def only(self, measures: Iterable) -> Evaluation:
        """This evaluation restricted to some of its measures: their routes and the qrels (read
        once, indexed once) shared, nothing routed again. A ValueError names a measure it lacks."""
        chosen = tuple(dict.fromkeys(measures))
        missing = [str(m) for m in chosen if m not in self._routes]
        if missing:
            raise ValueError(f"this evaluation does not compute {', '.join(missing)} "
                             f"(its measures: {' '.join(map(str, self._measures))})")
        out = object.__new__(Evaluation)
        out._set(chosen, {m: self._routes[m] for m in chosen}, self._provider, self._options, self._qrels)
        return out

    @property
    def measures(self) -> tuple:
        return self._measures

    @property
    def routes(self) -> Mapping:
        """{measure: the name of the provider that computes it} (:data:`ENGINE`: the plugin's engine)."""
        return self._routes

    @property
    def engine_measures(self) -> tuple:
        """The measures the plugin's engine computes (none when a provider was named)."""
        return self._engine

    @property
    def other_measures(self) -> tuple:
        """The measures ir-measures' providers compute."""
        return self._others

    @property
    def provider(self) -> str | None:
        """The name of the provider named to compute every measure, or None."""
        return self._provider.name if self._provider else None

    @property
    def qrels(self) -> Any:
        """The qrels as a table (read on first use, once)."""
        return self._qrels.table()

    @property
    def index(self) -> QrelsIndex:
        """The qrels' :class:`~ndcg_plugin.ranking.qrels_index.QrelsIndex` (built on first use, once)."""
        return self._qrels.index()

    @property
    def queries(self) -> Any:
        """The qrels' distinct query ids (what a run's duplicate policy applies to: ``read(...,
        queries=)``)."""
        return self._qrels.queries(bool(self._engine))

    def other_providers(self) -> dict[str, list]:
        """{provider name: its measures}, for the measures the engine does not compute."""
        out: dict = {}
        for m in self._others:
            out.setdefault(self._routes[m], []).append(m)
        return out

    def streams(self, run: Any) -> bool:
        """Whether :meth:`compute` streams ``run``: a run file that can be read again from its start
        (a regular file, or a folder of Parquet files), when the engine computes every measure (a
        run that turns out not grouped by query is then read again whole); a pipe, a FIFO or
        standard input is read once, whole."""
        return (not self._others and self._options.block_bytes > 0 and isinstance(run, (str, os.PathLike))
                and "\n" not in str(run) and str(run) != "-" and (os.path.isfile(run) or os.path.isdir(run)))

    def compute(self, run: Any, per_query: bool = False) -> Results:
        """Evaluate ``run`` (a file, or a table from :func:`ndcg_plugin.read`); ``per_query``: keep
        the per-query values too (:meth:`Results.metrics`). A run that :meth:`streams` starts
        parsing (on a worker thread) before the qrels are read."""
        if not self.streams(run):
            return self._compute(run, per_query, whole=True)
        opened = self._open(run)
        try:
            if _is_regular_file(self._qrels.given) and self._options.depth is None:  # no cut on that path
                streamed = self._side_by_side(opened, per_query)
                if streamed is not None:
                    return streamed
                if not opened.untouched():  # the qrels declined after the run's blocks were taken
                    opened.close()
                    opened = self._open(opened.path)
            return self._compute(opened, per_query, whole=False)
        finally:
            opened.close()

    def _open(self, run: Any):
        from .reading.ahead import RunFile
        o = self._options
        return RunFile(run, o.run_format, o.block_bytes, o.progress, o.run_columns, o.depth)

    def _compute(self, run: Any, per_query: bool, whole: bool) -> Results:
        """``whole``: a run file is read whole here (a run that streams is a RunFile)."""
        from . import reading
        qrels = self.qrels
        index = self.index if self._engine else None
        engine_run = run  # the reader hands the engine the table's block (its group codes)
        if whole and reading.is_file_like(run):
            # a repeated pair counts only in a query the qrels hold, as trec_eval
            o = self._options
            engine_run = reading.read_grouped(run, "run", run_format=o.run_format, duplicates=o.duplicates,
                                              progress=o.progress, columns=o.run_columns, queries=self.queries)
            run = engine_run.rows
        if whole and self._options.depth is not None:  # every provider evaluates the rows kept
            from .arrays.block import Block
            from .engine.depth import top_documents, top_of_block
            if isinstance(engine_run, Block):
                engine_run = top_of_block(engine_run, self._options.depth)
                run = engine_run.rows
            else:
                run = engine_run = top_documents(run, self._options.depth)
        out = Results(list(self._measures), {})
        if index is not None:
            out.values = engine_values(index, engine_run, self._engine, self._options.duplicates)
            out.query_ids = list(index.qids)
            out.aggregates.update(aggregate(out.values))
        if self._others:
            self._compute_others(qrels, run, per_query, out)
        out.aggregates = {m: out.aggregates[m] for m in self._measures}
        return out

    def _side_by_side(self, run, per_query: bool) -> Results | None:
        """The run and a qrels file streamed side by side (:mod:`ndcg_plugin.engine.side_by_side`), or None
        when they are not both sorted in one order (the run is then read from its start the other way)."""
        from .engine import side_by_side
        from .measures.aggregate import Aggregates
        sink = Aggregates({m: spec_of(m) for m in self._engine}, keep=per_query)
        o = self._options
        try:
            side_by_side.evaluate(self._qrels.given, run.take_blocks, run.source, sink.specs.values(), sink,
                                  o.duplicates, o.block_bytes, o.qrels_columns)
        except side_by_side.Unsorted:
            return None
        out = Results(list(self._measures), sink.result())
        if per_query:
            out.query_ids, out.values = sink.per_query()
        return out

    def _compute_others(self, qrels, run, per_query: bool, out: Results) -> None:
        providers = self.other_providers()
        if "pytrec_eval" in providers:
            refuse_crashing_queries(qrels, providers["pytrec_eval"], self._qrels.source)
        calc = self._provider.provider if self._provider else ir_measures
        if self._provider:  # a provider named by the user may assert Python string ids (ranx does)
            qrels, run = _object_ids(qrels), _object_ids(run)
        try:
            if not per_query:
                out.aggregates.update(calc.calc_aggregate(self._others, qrels, run))
                return
            aggs = {m: m.aggregator() for m in self._others}
            for metric in calc.iter_calc(self._others, qrels, run):
                aggs[metric.measure].add(metric.value)
                out.others.append(metric)
        except (AssertionError, AttributeError, KeyError, TypeError) as e:  # a provider's own refusal
            names = ", ".join(sorted(set(providers)))
            first = (str(e).strip().splitlines() or [type(e).__name__])[0]
            raise ValueError(f"ir-measures provider {names} failed: {first}") from None
        out.aggregates.update({m: agg.result() for m, agg in aggs.items()})
