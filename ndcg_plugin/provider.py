"""The ir-measures provider ``ndcg_plugin``: adapts ir-measures' calls to the engine.

It serves the plugin's six measures everywhere (they are in ``ir_measures.DefaultPipeline``),
and, when asked for by name (``ir_measures.providers.registry["ndcg_plugin"]``, CLI
``--provider ndcg_plugin``), the built-in ``nDCG`` (``dcg='log2'`` or ``'exp-log2'``, any query
ids), ``RR`` and ``Success``.
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator

import ir_measures
from ir_measures import Metric
from ir_measures import measures as irm
from ir_measures.measures.base import MeanAgg
from ir_measures.providers.base import Any, Choices, Evaluator, Provider

from . import engine, io
from .aggregate import ItemValue
from .measures import ALL, PluginMeasure


class NdcgPluginProvider(Provider):
    """Computes the plugin's measures on columnar arrays (see :mod:`ndcg_plugin.engine`).

    ``duplicates`` ("error", "first" or "max") is applied to repeated (query, doc) pairs in
    qrels and runs; ``run_format`` ("auto", "trec", "msmarco") to run files given by path.
    """
    NAME = "ndcg_plugin"
    SUPPORTED_MEASURES = [
        *(type(m)(**{k: Any() for k in m.SUPPORTED_PARAMS}) for m in ALL),
        irm._nDCG(cutoff=Any(), dcg=Any(), gains=Any(), judged_only=Any()),
        irm._RR(cutoff=Any(), rel=Any(), judged_only=Choices(False)),
        irm._Success(cutoff=Any(), rel=Any(), judged_only=Choices(False)),
    ]

    def __init__(self, duplicates: str = "error", run_format: str = "auto"):
        super().__init__()
        self.duplicates = duplicates
        self.run_format = run_format

    def supports(self, measure) -> bool:
        if isinstance(measure, PluginMeasure):
            measure.validate_params()  # raises a clear ValueError for bad parameters
            return True
        return super().supports(measure)

    def _evaluator(self, measures: Iterable, qrels) -> NdcgPluginEvaluator:
        measures = list(measures)
        specs = {m: engine.spec_of(m) for m in measures}
        table = io.read(qrels, "qrels", duplicates=self.duplicates)
        return NdcgPluginEvaluator(measures, engine.QrelsIndex(table), specs, self)


class NdcgPluginEvaluator(Evaluator):
    """Holds the indexed qrels; ``iter_calc`` / ``calc_aggregate`` may be called on many runs."""

    def __init__(self, measures, index: engine.QrelsIndex, specs: dict, provider: NdcgPluginProvider):
        super().__init__(measures, set(index.qids))
        self.index = index
        self.specs = specs
        self.provider = provider

    def values(self, run) -> dict:
        """Per-query values for each measure, as engine.Values aligned with ``self.index.qids``."""
        table = io.read(run, "run", run_format=self.provider.run_format,
                        duplicates=self.provider.duplicates)
        results = engine.compute(self.index, table, self.specs.values())
        return {m: results[s] for m, s in self.specs.items()}

    def iter_calc(self, run) -> Iterator[Metric]:
        # every (measure, qrels query) pair is yielded by _iter_calc, so ir-measures' filling of
        # absent pairs (a set of all pairs, hashed through repr) has nothing to do
        return self._iter_calc(run)

    def calc_aggregate(self, run) -> dict:
        """Aggregates straight from the per-query arrays (see :meth:`aggregate`)."""
        return self.aggregate(self.values(run))

    @staticmethod
    def aggregate(values: dict) -> dict:
        """Each measure's aggregate from its per-query values, with its own aggregation (mean;
        micro average for HitRate_item; mean of the values for MRR_ignore)."""
        out = {}
        for measure, vals in values.items():
            agg = measure.aggregator()
            if vals.hits is not None:
                agg.add(ItemValue(float(vals.hits.sum()), float(vals.returned.sum())))
            elif isinstance(agg, MeanAgg):
                out[measure] = float(vals.values.mean()) if len(vals.values) else agg.result()
                continue
            else:
                for v in vals.values.tolist():
                    agg.add(v)
            out[measure] = agg.result()
        return out

    def _iter_calc(self, run) -> Iterator[Metric]:
        per_measure = self.values(run)
        qids = self.index.qids
        columns = []
        for measure, vals in per_measure.items():
            if vals.hits is not None:
                col = [ItemValue(h, r) for h, r in zip(vals.hits.tolist(), vals.returned.tolist(), strict=True)]
            else:
                col = vals.values.tolist()
            columns.append((measure, col))
        for i, qid in enumerate(qids):
            for measure, col in columns:
                yield Metric(query_id=qid, measure=measure, value=col[i])


class PipelineView(Provider):
    """The provider as it sits in ``ir_measures.DefaultPipeline``: first, so that it serves the
    plugin's measures and the built-in ones whose values it computes exactly as the provider
    that would otherwise serve them (pytrec_eval): ``nDCG`` with ``dcg='log2'``, ``RR`` without
    a cutoff and ``Success``. ``nDCG(dcg='exp-log2')`` and ``RR@k`` (gdeval and msmarco
    providers, which order ties differently) stay with their providers unless the plugin is
    asked for by name."""
    NAME = NdcgPluginProvider.NAME

    def __init__(self, provider: NdcgPluginProvider):
        super().__init__()
        self.provider = provider

    def supports(self, measure) -> bool:
        if isinstance(measure, PluginMeasure):
            return self.provider.supports(measure)
        if measure.NAME == "nDCG":
            return measure["dcg"] == "log2" and self.provider.supports(measure)
        if measure.NAME == "RR":
            return "cutoff" not in measure.params and self.provider.supports(measure)
        if measure.NAME == "Success":
            return self.provider.supports(measure)
        return False

    def _evaluator(self, measures, qrels):
        return self.provider._evaluator(measures, qrels)


def register() -> NdcgPluginProvider:
    """Add the provider to ``ir_measures.providers.registry`` and, first, to
    ``ir_measures.DefaultPipeline`` (see :class:`PipelineView`; idempotent)."""
    registry = ir_measures.providers.registry
    provider = registry.get(NdcgPluginProvider.NAME)
    if type(provider) is not NdcgPluginProvider:  # absent, or from before a reload
        provider = NdcgPluginProvider()
        registry[provider.NAME] = provider
    pipeline = ir_measures.DefaultPipeline.providers
    pipeline[:] = [p for p in pipeline if getattr(p, "NAME", None) != provider.NAME]
    pipeline.insert(0, PipelineView(provider))
    return provider
