"""ndcg-plugin: NDCG (linear and exponential gain), HitRate (query and item level) and MRR
(misses as 0 or left out) for ir-measures, computed exactly as trec_eval would.

``import ndcg_plugin`` registers the six measures and the ``ndcg_plugin`` provider with
ir-measures and changes nothing about built-in measures; ``register(serve_builtins=True)``
lets the provider serve the built-ins it computes (nDCG, RR, Success) too.
"""
from __future__ import annotations

from . import interrupts  # noqa: F401 - first: Ctrl-C while the command imports the rest (see there)
from . import measures as _measures
from . import provider as _provider
from .errors import InputError
from .measures import parse_measures
from .measures.hitrate import HitRate, HitRate_item
from .measures.mrr import MRR_ignore, MRR_zero
from .measures.ndcg import NDCG_exp, NDCG_lin
from .trec_eval.check import crosscheck  # the module (trec_eval.check) has its own name: no clash
from .version import __version__


def register(serve_builtins: bool = False) -> None:
    """Register the six measures and the ``ndcg_plugin`` provider with ir-measures (idempotent).

    By default the provider serves the six measures only, and every built-in measure is computed
    as without the plugin. With ``serve_builtins=True`` it also serves the built-in ``nDCG``,
    ``RR`` and ``Success`` (where their parameters allow; docs/measures.md lists how its numbers
    and errors then differ from pytrec_eval's); ``register()`` undoes that."""
    _measures.register()
    _provider.register(serve_builtins=serve_builtins)


register()


def read(data: object, kind: str, **options: object):
    """Read qrels or a run into a validated table: see :func:`ndcg_plugin.reading.read`."""
    from .reading import read as _read  # imported on use: `import ndcg_plugin` stays light (no pyarrow)
    return _read(data, kind, **options)


def per_query(qrels: object, run: object, measures: object):
    """Per-query values as a pandas DataFrame in one call: one row per qrels query (index
    ``query_id``, trec_eval's query order), one column per measure (named as ir-measures prints
    it), NaN where a measure has no value for a query (MRR_ignore without a hit). ``qrels`` and
    ``run``: files, ir-measures' DataFrames or dicts (anything :func:`read` reads); ``measures``:
    measure objects or strings (``"NDCG_exp@10 nDCG@10"``), computed as ``ndcg-plugin eval``
    computes them (the engine, or ir-measures' providers for the rest)."""
    import pandas as pd

    from .evaluation import Evaluation
    if isinstance(measures, str) or not hasattr(measures, "__iter__"):
        measures = [measures]
    chosen = [m for item in measures for m in (parse_measures([item]) if isinstance(item, str) else [item])]
    results = Evaluation(chosen, qrels=qrels).compute(run, per_query=True)
    rows: dict = {}
    for metric in results.metrics():
        rows.setdefault(metric.query_id, {})[str(metric.measure)] = metric.value
    frame = pd.DataFrame.from_dict(rows, orient="index", columns=[str(m) for m in chosen], dtype=float)
    if results.query_ids:  # a query with no value for any measure keeps its row (all NaN)
        frame = frame.reindex(results.query_ids)
    frame.index.name = "query_id"
    return frame


__all__ = ["NDCG_lin", "NDCG_exp", "HitRate", "HitRate_item", "MRR_zero", "MRR_ignore",
           "register", "crosscheck", "read", "per_query", "parse_measures", "InputError", "__version__"]
