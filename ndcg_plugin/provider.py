"""The ir-measures provider ``ndcg_plugin``: the adapter from ir-measures' calls to the engine
(the computing is :mod:`ndcg_plugin.evaluation`'s and the engine's).

By default (``import ndcg_plugin``) the provider sits last in ``ir_measures.DefaultPipeline``
and serves only the plugin's measures: every built-in measure is computed by the provider
that computes it without the plugin (same numbers, errors, warnings and order). Built-ins are
served by the plugin's engine only when asked for:

- ``ndcg_plugin.register(serve_builtins=True)``: the provider moves first in the pipeline and
  also serves the built-ins the families compute (``nDCG``, ``RR``, ``Success``);
- by name: ``ir_measures.providers.registry["ndcg_plugin"]``;
- the CLI (``ndcg-plugin eval``), through :class:`ndcg_plugin.evaluation.Evaluation`.

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
from ir_measures.providers.base import Any, Evaluator, Provider

from . import evaluation, routing
from .errors import InputError
from .measures import PluginMeasure, registry, spec_of

if TYPE_CHECKING:

    from .ranking.qrels_index import QrelsIndex


# A qrels query with no judgments (``{"q2": {}}``) is a qrels query without a relevant
# document: it counts, and scores 0 (no value for MRR_ignore), as pytrec_eval counts it. The
# engine learns of it from one inert row: an empty doc id (no run holds one: the reader refuses
# empty ids) with label -1 (negative labels have gain 0, are never relevant and are dropped by
# judged_only, so the row changes no value).
_NO_JUDGMENT_DOC, _NO_JUDGMENT_LABEL = "", -1


class NdcgPluginProvider(Provider):
    """Computes the plugin's measures on columnar arrays (see :mod:`ndcg_plugin.engine.block`).

    ``duplicates`` ("error", "first" or "max") is applied to repeated (query, doc) pairs in
    qrels and runs; ``run_format`` ("auto", "trec", "msmarco") to run files given by path.
    """
    NAME = routing.ENGINE
    SUPPORTED_MEASURES = [  # the plugin's measures and the built-ins the families compute, with any parameters
        *(type(m)(**{k: Any() for k in m.SUPPORTED_PARAMS}) for m in registry.measures()),
        *(type(b)(**{k: Any() for k in b.SUPPORTED_PARAMS}) for f in registry.families() for name in f.builtins
          for b in [ir_measures.measures.registry[name]]),
    ]

    def __init__(self, duplicates: str = "error", run_format: str = "auto"):
        super().__init__()
        self.duplicates = duplicates
        self.run_format = run_format

    def supports(self, measure) -> bool:
        """True for the plugin's measures (a ValueError for bad parameters) and for the built-ins
        whose parameters the engine computes as pytrec_eval defines them."""
        return routing.engine_computes(measure)

    def _evaluator(self, measures: Iterable, qrels) -> NdcgPluginEvaluator:
        from . import reading  # imported on use: `import ndcg_plugin` stays light
        from .ranking.qrels_index import QrelsIndex
        measures = list(dict.fromkeys(measures))
        for m in measures:
            _check(m)
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
        return NdcgPluginEvaluator(measures, QrelsIndex(table), self, ids.originals)


def _check(measure) -> None:
    """A ValueError naming the provider for a measure no family computes, or saying why the engine
    does not compute a built-in one with these parameters."""
    if not isinstance(measure, PluginMeasure) and registry.builtin_family(measure) is None:
        names = ", ".join([m.NAME for m in registry.measures()] + [b for f in registry.families() for b in f.builtins])
        raise ValueError(f"the ndcg_plugin provider does not compute {measure}; it computes {names}")
    spec_of(measure)


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

    if all(isinstance(q, str) for q in ids):
        return None
    seen: dict = {}
    for q in ids:
        key = str(q) if _is_int(q) else q
        if not isinstance(key, str):
            continue  # not an id reading.read accepts: it says so
        if key in seen and (type(seen[key]) is not type(q) or seen[key] != q):
            raise InputError("qrels", None, f"query ids {seen[key]!r} ({type(seen[key]).__name__}) and {q!r} "
                                f"({type(q).__name__}) are both query {key!r}; give every query id one type")
        seen.setdefault(key, q.item() if isinstance(q, np.generic) else q)
    return seen


class NdcgPluginEvaluator(Evaluator):
    """Holds the indexed qrels; ``iter_calc`` / ``calc_aggregate`` may be called on many runs."""

    def __init__(self, measures, index: QrelsIndex, provider: NdcgPluginProvider, originals: dict | None = None):
        self.index = index
        self.provider = provider
        # query ids as given in the qrels, aligned with index.qids
        self.query_ids = list(index.qids) if originals is None else [originals.get(q, q) for q in index.qids]
        super().__init__(measures, set(self.query_ids))

    def values(self, run) -> dict:
        """Per-query values for each measure, as ``aggregate.Values`` aligned with ``self.index.qids``."""
        from . import reading  # imported on use: `import ndcg_plugin` stays light
        block = reading.read_grouped(run, "run", run_format=self.provider.run_format,
                                     duplicates=self.provider.duplicates, queries=self.index.qid_values)
        return evaluation.engine_values(self.index, block, self.measures)

    def iter_calc(self, run) -> Iterator[Metric]:
        # not Evaluator.iter_calc: it would fill the queries metrics() leaves out with the
        # measure's DEFAULT (NaN for a measure that leaves misses out), and it hashes every
        # (measure, query) pair
        return self._iter_calc(run)

    def calc_aggregate(self, run) -> dict:
        """Aggregates straight from the per-query arrays."""
        return evaluation.aggregate(self.values(run))

    def _iter_calc(self, run) -> Iterator[Metric]:
        return evaluation.metrics(self.values(run), self.query_ids)


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
        return self.provider.evaluator(measures, qrels)


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
