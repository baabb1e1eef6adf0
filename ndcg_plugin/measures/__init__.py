"""The plugin's measures, one module per family (:mod:`.ndcg`, :mod:`.hitrate`, :mod:`.mrr`):
each holds its measures (specifications: name, parameters with types, defaults and descriptions,
the formula in the docstring) and the family's computation for every backend. The registry
(:mod:`.registry`) is where backends look a family up; :mod:`.base` has what families share.

Conventions shared by all (trec_eval's): within a query documents are ordered by score
descending, ties broken by doc id descending (string order); the rank column of a run file is
ignored. A query in the qrels but not in the run scores 0 (trec_eval ``-c``), or has no value
for a measure that leaves misses out. A query in the run but not in the qrels is ignored.
Negative relevance labels have gain 0 and are never relevant.
"""
from __future__ import annotations

from .base import Family, PluginMeasure, Spec
from .parsing import examples, parse_measures, split_measures, trec_eval_hint
from .registry import add_family, families, family, measures, register, same_as_builtin, spec_of

__all__ = ["Family", "PluginMeasure", "Spec", "examples", "parse_measures", "split_measures", "trec_eval_hint",
           "add_family", "families", "family", "measures", "register", "same_as_builtin", "spec_of"]
