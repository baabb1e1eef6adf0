"""ndcg-plugin: NDCG (linear and exponential gain), HitRate (query and item level) and MRR
(misses as 0 or left out) for ir-measures, computed exactly as trec_eval would.

``import ndcg_plugin`` registers the measures and the ``ndcg_plugin`` provider with
ir-measures; calling :func:`register` again is harmless.
"""
from __future__ import annotations

from . import measures as _measures
from . import provider as _provider
from .crosscheck import crosscheck  # the function; the module stays ndcg_plugin.crosscheck in sys.modules
from .io import InputError, read
from .measures import HitRate, HitRate_item, MRR_ignore, MRR_zero, NDCG_exp, NDCG_lin, parse_measures

__version__ = "0.1.0"


def register() -> None:
    """Register the six measures and the ``ndcg_plugin`` provider with ir-measures (idempotent)."""
    _measures.register()
    _provider.register()


register()

__all__ = ["NDCG_lin", "NDCG_exp", "HitRate", "HitRate_item", "MRR_zero", "MRR_ignore",
           "register", "crosscheck", "read", "parse_measures", "InputError", "__version__"]
