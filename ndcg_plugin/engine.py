"""The columnar engine: one ranking of the run, every measure from the same arrays.

Pipeline (no Python loop per query or per document):

1. qrels are indexed once (:class:`QrelsIndex`): query ids sorted as strings (trec_eval's
   output order), doc ids factorized, (query, doc) packed into sorted int64 keys;
2. the run's query ids are mapped to qrels query codes (run queries absent from the qrels are
   dropped) and its doc ids to qrels doc codes (-1: judged nowhere);
3. one ordering per run: score descending within each query. A run that is already grouped by
   query and sorted by score (the usual TREC file) is detected in O(n) and not sorted again;
   otherwise a numeric lexsort. Only rows whose score ties with a neighbour are then ordered
   by doc id (descending, string order, trec_eval's rule), so strings are sorted only where
   ties exist;
4. ranks within each query, relevance by a searchsorted join on the integer keys, and each
   measure as a reduction (``np.bincount``) over those arrays.
"""
from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import pandas as pd
from ir_measures.measures.base import _NOT_PROVIDED

from .measures import PluginMeasure


@dataclass(frozen=True)
class Spec:
    """What the engine computes: one family, its variant and parameters."""
    family: str            # "ndcg" | "hitrate" | "mrr"
    variant: str           # ndcg: linear|exp; hitrate: query|item; mrr: zero|ignore
    cutoff: int | None
    rel: int = 1
    ideal: str = "qrels"
    gains: tuple = ()      # sorted ((label, gain), ...)
    judged_only: bool = False


def spec_of(measure) -> Spec:
    """Translate a plugin measure, or a built-in one the plugin serves, into a :class:`Spec`."""
    measure.validate_params()

    def param(key, default=None):
        if key not in measure.SUPPORTED_PARAMS:
            return default
        value = measure[key]
        return default if value is _NOT_PROVIDED else value

    cutoff = param("cutoff")
    gains = tuple(sorted((param("gains") or {}).items()))
    if isinstance(measure, PluginMeasure):
        if measure.FAMILY == "ndcg":
            return Spec("ndcg", measure.VARIANT, cutoff, ideal=param("ideal", "qrels"), gains=gains,
                        judged_only=bool(param("judged_only", False)))
        return Spec(measure.FAMILY, measure.VARIANT, cutoff, rel=param("rel", 1))
    if measure.NAME == "nDCG":
        variant = "exp" if param("dcg", "log2") == "exp-log2" else "linear"
        return Spec("ndcg", variant, cutoff, gains=gains, judged_only=bool(param("judged_only", False)))
    if measure.NAME == "RR":
        return Spec("mrr", "zero", cutoff, rel=param("rel", 1))
    if measure.NAME == "Success":
        return Spec("hitrate", "query", cutoff, rel=param("rel", 1))
    raise ValueError(f"the ndcg_plugin engine does not compute {measure}")


@dataclass
class Values:
    """Per-query values aligned with ``QrelsIndex.qids``; ``hits``/``returned`` for item level."""
    values: np.ndarray
    hits: np.ndarray | None = None
    returned: np.ndarray | None = None


class QrelsIndex:
    """Qrels prepared once, reusable for any number of runs."""

    def __init__(self, qrels: pd.DataFrame):
        qids = qrels["query_id"].to_numpy(dtype=object)
        self.qids = np.array(sorted(set(qids)), dtype=object)
        self.query_index = pd.Index(self.qids)
        self.q = self.query_index.get_indexer(qids).astype(np.int64)
        doc_codes, doc_uniques = pd.factorize(qrels["doc_id"].to_numpy(dtype=object))
        self.doc_index = pd.Index(doc_uniques)
        self.ndocs = max(len(doc_uniques), 1)
        keys = self.q * self.ndocs + doc_codes
        order = np.argsort(keys, kind="stable")
        self.keys = keys[order]
        self.rel = qrels["relevance"].to_numpy(dtype=np.int64)[order]
        self.key_q = self.q[order]
        self._ideal_cache: dict = {}

    @property
    def nq(self) -> int:
        return len(self.qids)

    def ideal_dcg(self, spec: Spec) -> np.ndarray:
        key = (spec.variant, spec.gains, spec.cutoff)
        if key not in self._ideal_cache:
            self._ideal_cache[key] = _ideal_dcg(self.key_q, gain_of(self.rel, spec), spec.cutoff, self.nq)
        return self._ideal_cache[key]


def gain_of(rel: np.ndarray, spec: Spec) -> np.ndarray:
    """Gain per relevance label: linear rel or 2^rel - 1, then the overrides of labels >= 0;
    negative labels always have gain 0 (trec_eval treats them as unjudged)."""
    rel = rel.astype(np.int64)
    pos = np.maximum(rel, 0).astype(np.float64)
    with np.errstate(over="ignore"):
        gain = pos if spec.variant == "linear" else np.exp2(pos) - 1.0
    for label, g in spec.gains:
        if label >= 0:
            gain[rel == label] = float(g)
    if not np.all(np.isfinite(gain)):
        bad = rel[~np.isfinite(gain)][0]
        raise ValueError(f"relevance label {bad} gives an infinite gain under NDCG_exp (2^rel - 1 "
                         f"overflows a double above 1023); use gains={{...}} or NDCG_lin")
    return gain


def _group_ranks(group: np.ndarray) -> np.ndarray:
    """0-based position of each row within its run of equal ``group`` values."""
    n = len(group)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    starts = np.flatnonzero(np.r_[True, group[1:] != group[:-1]])
    lengths = np.diff(np.r_[starts, n])
    return np.arange(n, dtype=np.int64) - np.repeat(starts, lengths)


def _ideal_dcg(q: np.ndarray, gain: np.ndarray, cutoff: int | None, nq: int) -> np.ndarray:
    """IDCG per query from the positive gains sorted descending (trec_eval leaves gains <= 0
    out of the ideal ranking)."""
    positive = gain > 0
    q, gain = q[positive], gain[positive]
    order = np.lexsort((-gain, q))
    qs, gs = q[order], gain[order]
    rank = _group_ranks(qs)
    keep = rank < cutoff if cutoff is not None else np.ones(len(qs), dtype=bool)
    return np.bincount(qs[keep], weights=gs[keep] / np.log2(rank[keep] + 2.0), minlength=nq)


@dataclass
class RankedRun:
    """A run ranked within each query: arrays in rank order."""
    q: np.ndarray        # qrels query code per row
    rank: np.ndarray     # 0-based rank within the query
    rel: np.ndarray      # relevance label (0 where unjudged)
    judged: np.ndarray   # bool
    nq: int

    def returned(self) -> np.ndarray:
        return np.bincount(self.q, minlength=self.nq)


def rank_run(index: QrelsIndex, run: pd.DataFrame) -> RankedRun:
    """Order the run (score desc, doc id desc) within each qrels query and join relevance."""
    q = index.query_index.get_indexer(run["query_id"].to_numpy(dtype=object))
    keep = q >= 0  # run queries absent from the qrels are ignored
    if not keep.all():
        run = run[keep]
        q = q[keep]
    q = q.astype(np.int64)
    score = run["score"].to_numpy(dtype=np.float64)
    docs = run["doc_id"].to_numpy(dtype=object)
    n = len(q)
    group, _ = pd.factorize(q)  # groups numbered in order of appearance
    if n > 1 and np.all(group[1:] >= group[:-1]) and np.all(
            (group[1:] != group[:-1]) | (score[1:] <= score[:-1])):
        order = np.arange(n)  # already grouped and sorted by score descending
    else:
        order = np.lexsort((-score, group))
    gs, ss = group[order], score[order]
    tie = (gs[1:] == gs[:-1]) & (ss[1:] == ss[:-1])
    if tie.any():
        rows = np.flatnonzero(np.r_[tie, False] | np.r_[False, tie])
        doc_rank, _ = pd.factorize(docs[order[rows]], sort=True)  # string order
        sub = np.lexsort((-doc_rank, -ss[rows], gs[rows]))
        order[rows] = order[rows][sub]
    q = q[order]
    dcode = index.doc_index.get_indexer(docs[order])
    keys = q * index.ndocs + dcode
    pos = np.searchsorted(index.keys, keys)
    pos = np.minimum(pos, max(len(index.keys) - 1, 0))
    judged = (dcode >= 0) & (index.keys[pos] == keys) if len(index.keys) else np.zeros(n, dtype=bool)
    rel = np.where(judged, index.rel[pos] if len(index.keys) else 0, 0).astype(np.int64)
    return RankedRun(q=q, rank=_group_ranks(gs), rel=rel, judged=judged, nq=index.nq)


def _ndcg(index: QrelsIndex, rr: RankedRun, spec: Spec) -> Values:
    if spec.judged_only:  # as trec_eval -J: drop unjudged docs and negative labels, then rank
        kept = rr.judged & (rr.rel >= 0)
        q, rel = rr.q[kept], rr.rel[kept]
        rank = _group_ranks(q)
        gain = gain_of(rel, spec)
    else:
        q, rank = rr.q, rr.rank
        gain = np.where(rr.judged, gain_of(rr.rel, spec), 0.0)
    keep = rank < spec.cutoff if spec.cutoff is not None else np.ones(len(q), dtype=bool)
    dcg = np.bincount(q[keep], weights=gain[keep] / np.log2(rank[keep] + 2.0), minlength=rr.nq)
    if spec.ideal == "run":
        idcg = _ideal_dcg(q, gain, spec.cutoff, rr.nq)
    else:
        idcg = index.ideal_dcg(spec)
    with np.errstate(divide="ignore", invalid="ignore"):
        return Values(np.where(idcg > 0, dcg / idcg, 0.0))


def _relevant_in_k(rr: RankedRun, spec: Spec) -> np.ndarray:
    hit = rr.judged & (rr.rel >= spec.rel)
    if spec.cutoff is not None:
        hit &= rr.rank < spec.cutoff
    return hit


def _hitrate(rr: RankedRun, spec: Spec) -> Values:
    hits = np.bincount(rr.q[_relevant_in_k(rr, spec)], minlength=rr.nq).astype(np.float64)
    if spec.variant == "query":
        return Values((hits > 0).astype(np.float64))
    returned = rr.returned().astype(np.float64)
    if spec.cutoff is not None:
        returned = np.minimum(returned, spec.cutoff)
    with np.errstate(divide="ignore", invalid="ignore"):
        return Values(np.where(returned > 0, hits / returned, 0.0), hits=hits, returned=returned)


def _mrr(rr: RankedRun, spec: Spec) -> Values:
    hit = _relevant_in_k(rr, spec)
    first = np.full(rr.nq, np.inf)
    np.minimum.at(first, rr.q[hit], rr.rank[hit].astype(np.float64))
    miss = 0.0 if spec.variant == "zero" else math.nan
    return Values(np.where(np.isfinite(first), 1.0 / (first + 1.0), miss))


def compute(index: QrelsIndex, run: pd.DataFrame, specs: Iterable[Spec]) -> dict[Spec, Values]:
    """Every spec's per-query values, from one ranking of the run."""
    rr = rank_run(index, run)
    out: dict[Spec, Values] = {}
    for spec in specs:
        if spec in out:
            continue
        if spec.family == "ndcg":
            out[spec] = _ndcg(index, rr, spec)
        elif spec.family == "hitrate":
            out[spec] = _hitrate(rr, spec)
        elif spec.family == "mrr":
            out[spec] = _mrr(rr, spec)
        else:  # pragma: no cover - specs come from spec_of
            raise ValueError(f"unknown family {spec.family}")
    return out
