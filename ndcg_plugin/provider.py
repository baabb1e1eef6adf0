"""The ir-measures provider ``ndcg_plugin``: adapts ir-measures' calls to the engine.

By default (``import ndcg_plugin``) the provider sits last in ``ir_measures.DefaultPipeline``
and serves only the plugin's six measures: every built-in measure is computed by the provider
that computes it without the plugin (same numbers, errors, warnings and order). Built-ins are
served by the plugin's engine only when asked for:

- ``ndcg_plugin.register(serve_builtins=True)``: the provider moves first in the pipeline and
  also serves the built-ins it computes (:data:`BUILTINS`);
- by name: ``ir_measures.providers.registry["ndcg_plugin"]``;
- the CLI (``ndcg-plugin eval``), through :func:`evaluate_tables`.

Where the plugin's numbers or errors then differ from pytrec_eval's is listed in
``docs/measures.md`` (:data:`ndcg_plugin.docs.BUILTIN_DIFFERENCES`).

Query ids are yielded exactly as given in the qrels (an integer id stays an integer, as the
other providers of the same call see it), while queries are matched by ``str(id)``.
"""
from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING
from typing import Any as AnyValue

import ir_measures
from ir_measures import Metric
from ir_measures import measures as irm
from ir_measures.providers.base import Any, Evaluator, Provider

from .aggregate import aggregate_arrays, per_query_values
from .measures import ALL, PluginMeasure
from .specs import Spec, spec_of

if TYPE_CHECKING:
    import pandas as pd

    from . import engine

#: the built-in measures the engine computes (parameters checked by :func:`specs.spec_of`)
BUILTINS = ("nDCG", "RR", "Success")

# A qrels query with no judgments (``{"q2": {}}``) is a qrels query without a relevant
# document: it counts, and scores 0 (no value for MRR_ignore), as pytrec_eval counts it. The
# engine learns of it from one inert row: an empty doc id (no run holds one: the reader refuses
# empty ids) with label -1 (negative labels have gain 0, are never relevant and are dropped by
# judged_only, so the row changes no value).
_NO_JUDGMENT_DOC, _NO_JUDGMENT_LABEL = "", -1


class NdcgPluginProvider(Provider):
    """Computes the plugin's measures on columnar arrays (see :mod:`ndcg_plugin.engine`).

    ``duplicates`` ("error", "first" or "max") is applied to repeated (query, doc) pairs in
    qrels and runs; ``run_format`` ("auto", "trec", "msmarco") to run files given by path.
    """
    NAME = "ndcg_plugin"
    SUPPORTED_MEASURES = [
        *(type(m)(**{k: Any() for k in m.SUPPORTED_PARAMS}) for m in ALL),
        irm.nDCG(cutoff=Any(), dcg=Any(), gains=Any(), judged_only=Any()),  # the public measures, called
        irm.RR(cutoff=Any(), rel=Any(), judged_only=Any()),                 # with parameters
        irm.Success(cutoff=Any(), rel=Any(), judged_only=Any()),
    ]

    def __init__(self, duplicates: str = "error", run_format: str = "auto"):
        super().__init__()
        self.duplicates = duplicates
        self.run_format = run_format

    def supports(self, measure) -> bool:
        """True for the plugin's measures (a ValueError for bad parameters) and for the built-ins
        whose parameters the engine computes as pytrec_eval defines them (see specs.spec_of)."""
        if isinstance(measure, PluginMeasure):
            measure.validate_params()
            return True
        if getattr(measure, "NAME", None) not in BUILTINS:
            return False
        try:
            spec_of(measure)
        except ValueError:
            return False
        return True

    def _evaluator(self, measures: Iterable, qrels) -> NdcgPluginEvaluator:
        from . import engine, reading  # imported on use: `import ndcg_plugin` stays light
        measures = list(dict.fromkeys(measures))
        specs = {m: _spec(m) for m in measures}
        qrels, ids = _query_ids(qrels)
        table = reading.read(qrels, "qrels", duplicates=self.duplicates)
        if ids.without_judgments:
            import numpy as np
            import pandas as pd

            table = pd.concat([table, pd.DataFrame({
                "query_id": np.array(ids.without_judgments, dtype=object),
                "doc_id": np.array([_NO_JUDGMENT_DOC] * len(ids.without_judgments), dtype=object),
                "relevance": np.full(len(ids.without_judgments), _NO_JUDGMENT_LABEL, dtype=np.int64)})],
                ignore_index=True)
        return NdcgPluginEvaluator(measures, engine.QrelsIndex(table), specs, self, ids.originals)


def _spec(measure) -> Spec:
    """specs.spec_of, with a message naming the provider for measures it does not compute."""
    if not isinstance(measure, PluginMeasure) and getattr(measure, "NAME", None) not in BUILTINS:
        names = ", ".join([m.NAME for m in ALL] + list(BUILTINS))
        raise ValueError(f"the ndcg_plugin provider does not compute {measure}; it computes {names}")
    return spec_of(measure)


class _QueryIds:
    """What the qrels say about their query ids beyond the table: the original id objects
    (when some are not strings) and the queries listed without judgments."""

    def __init__(self, originals: dict | None = None, without_judgments: list | None = None):
        self.originals = originals            # {str(id): id as given}, or None when all are strings
        self.without_judgments = without_judgments or []


def _query_ids(data: AnyValue) -> tuple[AnyValue, _QueryIds]:
    """(the qrels to read, their query ids): a single-pass iterable is read into a list here,
    so that its ids can be looked at before ``reading.read`` reads it."""
    if isinstance(data, (str, bytes, os.PathLike)) or hasattr(data, "read"):
        return data, _QueryIds()  # files: ids are strings
    import pandas as pd

    if isinstance(data, pd.DataFrame):
        if "query_id" not in data.columns:
            return data, _QueryIds()  # reading.read names the missing column
        column = data["query_id"]
        if isinstance(column.dtype, pd.StringDtype) or (
                column.dtype == object and pd.api.types.infer_dtype(column, skipna=False) == "string"):
            return data, _QueryIds()  # strings (missing values are reading.read's error)
        return data, _QueryIds(_originals(pd.unique(column.to_numpy()).tolist()))
    if isinstance(data, dict):
        keys = list(data)
        empty = [str(q) if _is_int(q) else q for q, docs in data.items() if isinstance(docs, dict) and not docs]
        empty = [q for q in empty if isinstance(q, str) and q]  # other keys: reading.read's error, or none
        return data, _QueryIds(_originals(keys), empty)
    if hasattr(data, "__iter__"):
        rows = list(data)
        ids = [getattr(r, "query_id", None) for r in rows if hasattr(r, "_fields")]
        return rows, _QueryIds(_originals(list(dict.fromkeys(ids))))
    return data, _QueryIds()


def _is_int(value: AnyValue) -> bool:
    import numpy as np

    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def _originals(ids: list) -> dict | None:
    """{str(id): id} for integer ids, None when every id is a string. Two ids of different
    types read as the same query (``1`` and ``"1"``) are refused: one result, one id type."""
    import numpy as np

    from . import reading  # imported on use: `import ndcg_plugin` stays light
    if all(isinstance(q, str) for q in ids):
        return None
    seen: dict = {}
    for q in ids:
        key = str(q) if _is_int(q) else q
        if not isinstance(key, str):
            continue  # not an id reading.read accepts: it says so
        if key in seen and (type(seen[key]) is not type(q) or seen[key] != q):
            raise reading.InputError("qrels", None, f"query ids {seen[key]!r} ({type(seen[key]).__name__}) and {q!r} "
                                f"({type(q).__name__}) are both query {key!r}; give every query id one type")
        seen.setdefault(key, q.item() if isinstance(q, np.generic) else q)
    return seen


class NdcgPluginEvaluator(Evaluator):
    """Holds the indexed qrels; ``iter_calc`` / ``calc_aggregate`` may be called on many runs."""

    def __init__(self, measures, index: engine.QrelsIndex, specs: dict, provider: NdcgPluginProvider,
                 originals: dict | None = None):
        self.index = index
        self.specs = specs
        self.provider = provider
        # query ids as given in the qrels, aligned with index.qids
        self.query_ids = list(index.qids) if originals is None else [originals.get(q, q) for q in index.qids]
        super().__init__(measures, set(self.query_ids))

    def values(self, run) -> dict:
        """Per-query values for each measure, as engine.Values aligned with ``self.index.qids``."""
        from . import reading  # imported on use: `import ndcg_plugin` stays light
        table, groups = reading.read_grouped(run, "run", run_format=self.provider.run_format,
                                             duplicates=self.provider.duplicates)
        return self.values_of_table(table, groups)

    def values_of_table(self, table: pd.DataFrame, groups: tuple | None = None) -> dict:
        """As :meth:`values`, for a table already read by :func:`ndcg_plugin.read` (``groups``:
        the group codes :func:`ndcg_plugin.reading.read_grouped` gave with it, if any)."""
        from . import engine  # imported on use: `import ndcg_plugin` stays light
        results = engine.compute(self.index, table, self.specs.values(), groups=groups)
        return {m: results[s] for m, s in self.specs.items()}

    def iter_calc(self, run) -> Iterator[Metric]:
        # not Evaluator.iter_calc: it would fill the queries metrics() leaves out with the
        # measure's DEFAULT (NaN for MRR_ignore), and it hashes every (measure, query) pair
        return self._iter_calc(run)

    def calc_aggregate(self, run) -> dict:
        """Aggregates straight from the per-query arrays (see :meth:`aggregate`)."""
        return self.aggregate(self.values(run))

    @staticmethod
    def aggregate(values: dict) -> dict:
        """Each measure's aggregate from its per-query values, with its own aggregator (mean;
        micro average for HitRate_item; mean of the values for MRR_ignore)."""
        return {measure: aggregate_arrays(measure, vals.values, vals.hits, vals.returned)
                for measure, vals in values.items()}

    def _iter_calc(self, run) -> Iterator[Metric]:
        return self.metrics(self.values(run))

    def metrics(self, per_measure: dict) -> Iterator[Metric]:
        """Per-query Metrics from :meth:`values`: by query (string order), then measure.

        A query with no value for any of the measures (only MRR_ignore lacks values: no
        relevant doc in the top k) yields no Metric, so that consumers that average the values
        they get (PyTerrier's ``pt.Experiment``) average over the queries that have one. A
        query with a value for some measure yields one Metric per measure, NaN where it has
        none, so that every query they get has every measure (``pt.Experiment`` needs that).
        ir-measures' aggregators skip the NaN: both give the aggregate of calc_aggregate."""
        columns = [(measure, per_query_values(vals.values, vals.hits, vals.returned))
                   for measure, vals in per_measure.items()]
        for i, qid in enumerate(self.query_ids):
            row = [(measure, col[i]) for measure, col in columns]
            if all(v != v for _, v in row):  # NaN everywhere: no value for this query
                continue
            for measure, value in row:
                yield Metric(query_id=qid, measure=measure, value=value)


class PipelineView(Provider):
    """The provider as it sits in ``ir_measures.DefaultPipeline``: it serves the plugin's
    measures and, only with ``serve_builtins``, the built-ins of :data:`BUILTINS` whose
    parameters the engine computes as pytrec_eval defines them."""
    NAME = NdcgPluginProvider.NAME

    def __init__(self, provider: NdcgPluginProvider, serve_builtins: bool = False):
        super().__init__()
        self.provider = provider
        self.serve_builtins = serve_builtins

    def supports(self, measure) -> bool:
        if isinstance(measure, PluginMeasure):
            return self.provider.supports(measure)
        return self.serve_builtins and self.provider.supports(measure)

    def _evaluator(self, measures, qrels):
        return self.provider._evaluator(measures, qrels)


def register(serve_builtins: bool = False) -> NdcgPluginProvider:
    """Add the provider to ``ir_measures.providers.registry`` and to ``ir_measures.DefaultPipeline``
    (idempotent): last, serving the plugin's measures only; or, with ``serve_builtins``, first,
    serving the built-ins it computes too."""
    registry = ir_measures.providers.registry
    provider = registry.get(NdcgPluginProvider.NAME)
    if type(provider) is not NdcgPluginProvider:  # absent, or from before a reload
        provider = NdcgPluginProvider()
        registry[provider.NAME] = provider
    pipeline = ir_measures.DefaultPipeline.providers
    pipeline[:] = [p for p in pipeline if getattr(p, "NAME", None) != provider.NAME]
    view = PipelineView(provider, serve_builtins)
    if serve_builtins:
        pipeline.insert(0, view)
    else:
        pipeline.append(view)
    return provider


def route(measure) -> str:
    """The provider that computes ``measure`` in ``ndcg-plugin eval``: ``"ndcg_plugin"`` for
    every measure the engine computes, else the first provider of ir-measures' DefaultPipeline
    that supports it (raises ValueError when none does)."""
    if NdcgPluginProvider().supports(measure):
        return NdcgPluginProvider.NAME
    for p in ir_measures.DefaultPipeline.providers:
        if getattr(p, "NAME", None) != NdcgPluginProvider.NAME and p.supports(measure) and p.is_available():
            return p.NAME
    raise ValueError(f"no ir-measures provider computes {measure}")


class TableEvaluation:
    """Measures on tables already read by :func:`ndcg_plugin.read` (the CLI): the measures the
    engine computes (the plugin's and the built-ins of :data:`BUILTINS`) are computed from the
    tables directly, with trec_eval's tie rule; the others by ir-measures' DefaultPipeline.

    ``run`` may also be the path of a run file (or a :class:`ndcg_plugin.stream.RunFile`) when
    every measure is the engine's
    (:attr:`streams`): it is then evaluated as it streams (:func:`ndcg_plugin.stream.compute_file`,
    with ``stream_options``), in memory bounded by the block size."""

    def __init__(self, measures: list, qrels, run, stream_options: dict | None = None):
        self.measures = list(measures)
        self.qrels, self.run = qrels, run
        self.stream_options = stream_options or {}
        self.routes = {m: route(m) for m in self.measures}
        self.mine = [m for m in self.measures if self.routes[m] == NdcgPluginProvider.NAME]
        self.others = [m for m in self.measures if self.routes[m] != NdcgPluginProvider.NAME]
        if self.streams and self.others:
            raise ValueError("a run file can be streamed only when the plugin's engine computes every measure")

    @property
    def streams(self) -> bool:
        from .reading.ahead import RunFile
        return isinstance(self.run, (str, os.PathLike, RunFile))

    def _evaluator(self) -> NdcgPluginEvaluator:
        from . import engine  # imported on use: `import ndcg_plugin` stays light
        specs = {m: spec_of(m) for m in self.mine}
        return NdcgPluginEvaluator(self.mine, engine.QrelsIndex(self.qrels), specs, NdcgPluginProvider())

    def _values(self, ev: NdcgPluginEvaluator) -> dict:
        if not self.streams:
            return ev.values_of_table(self.run)
        from .stream import compute_file
        results = compute_file(ev.index, self.run, ev.specs.values(), **self.stream_options)
        return {m: results[s] for m, s in ev.specs.items()}

    def calc_aggregate(self) -> dict:
        out = {}
        if self.mine:
            ev = self._evaluator()
            out.update(ev.aggregate(self._values(ev)))
        if self.others:
            out.update(ir_measures.calc_aggregate(self.others, self.qrels, self.run))
        return out

    def iter_calc(self) -> Iterator[Metric]:
        if self.mine:
            ev = self._evaluator()
            yield from ev.metrics(self._values(ev))
        if self.others:
            yield from ir_measures.iter_calc(self.others, self.qrels, self.run)


def evaluate_tables(measures: list, qrels, run, stream_options: dict | None = None) -> TableEvaluation:
    """See :class:`TableEvaluation`."""
    return TableEvaluation(measures, qrels, run, stream_options)
