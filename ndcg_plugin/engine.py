"""The columnar engine: one ranking of the run, every measure from the same arrays.

Pipeline (no Python loop per query or per document):

1. qrels are indexed once (:class:`QrelsIndex`): query ids sorted as strings (trec_eval's
   output order), doc ids factorized, (query, doc) packed into sorted int64 keys;
2. the run's query ids become codes from their runs of equal values (one string hashed per
   query in a grouped run) and are mapped to qrels query codes; run queries absent from the
   qrels are dropped, with a warning;
3. only the rows that can rank within the deepest cutoff are kept (:func:`ranking.candidates`): read
   off directly for a ranked run (grouped by query, scores descending: the usual TREC file),
   np.partition for a run grouped by query, one numeric sort otherwise;
4. those rows are ordered by score descending, and only rows whose score ties with a
   neighbour are compared as strings (doc id descending, trec_eval's rule);
5. relevance is joined for those rows only (hash probes into the small qrels, then the packed
   keys), unless a measure needs every row (``ideal='run'``, ``judged_only``); each measure is
   then a reduction (``np.bincount``) over the ranked arrays.
"""
from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import pyarrow.compute as pc

from . import ranking, ties
from .columns import as_arrow_strings, columns_of, factorize, from_numpy, to_numpy
from .specs import Spec, spec_of  # noqa: F401 - spec_of: part of the engine's API


@dataclass
class Values:
    """Per-query values aligned with ``QrelsIndex.qids``; ``hits``/``returned`` for item level."""
    values: np.ndarray
    hits: np.ndarray | None = None
    returned: np.ndarray | None = None


class QrelsIndex:
    """Qrels prepared once, reusable for any number of runs."""

    def __init__(self, qrels):
        qids, docs, rel = columns_of(qrels, "relevance")
        uniques = qids.unique()
        self.qid_values = uniques.take(pc.sort_indices(uniques))  # code point (UTF-8 byte) order
        self.qids = np.array(self.qid_values.to_pylist(), dtype=object)
        self.q = self.code_of(qids)
        doc_codes, doc_uniques = factorize(docs)
        self.doc_values = doc_uniques
        self.ndocs = max(len(doc_uniques), 1)
        keys = self.q * self.ndocs + doc_codes
        order = np.argsort(keys, kind="stable")
        self.keys = keys[order]
        self.rel = np.asarray(rel, dtype=np.int64)[order]
        self.key_q = self.q[order]
        self._ideal_cache: dict = {}

    def code_of(self, values) -> np.ndarray:
        """Code (position in ``qids``) of each query id, -1 for ids not in the qrels."""
        return to_numpy(pc.index_in(as_arrow_strings(values), value_set=self.qid_values), null=-1).astype(np.int64)

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


def _ideal_dcg(q: np.ndarray, gain: np.ndarray, cutoff: int | None, nq: int) -> np.ndarray:
    """IDCG per query from the positive gains sorted descending (trec_eval leaves gains <= 0
    out of the ideal ranking)."""
    positive = gain > 0
    q, gain = q[positive], gain[positive]
    order = np.lexsort((-gain, q))
    qs, gs = q[order], gain[order]
    rank = ranking.group_ranks(qs)
    keep = rank < cutoff if cutoff is not None else np.ones(len(qs), dtype=bool)
    return np.bincount(qs[keep], weights=gs[keep] / np.log2(rank[keep] + 2.0), minlength=nq)


def _ndcg(index: QrelsIndex, ranked: ranking.RankedRun, spec: Spec) -> Values:
    gain = np.where(ranked.judged, gain_of(ranked.rel, spec), 0.0)
    if spec.ties == "average":
        dcg = ties.ndcg_dcg(ranked, gain, spec.cutoff)
    else:
        keep = ranked.rank < spec.cutoff if spec.cutoff is not None else np.ones(len(ranked.q), dtype=bool)
        dcg = np.bincount(ranked.q[keep], weights=gain[keep] / np.log2(ranked.rank[keep] + 2.0), minlength=ranked.nq)
    if spec.ideal == "run":
        idcg = _ideal_dcg(ranked.pool_q, gain_of(ranked.pool_rel, spec), spec.cutoff, ranked.nq)
    else:
        idcg = index.ideal_dcg(spec)
    with np.errstate(divide="ignore", invalid="ignore"):
        return Values(np.where(idcg > 0, dcg / idcg, 0.0))


def _relevant_in_k(ranked: ranking.RankedRun, spec: Spec) -> np.ndarray:
    hit = ranked.judged & (ranked.rel >= spec.rel)
    if spec.cutoff is not None:
        hit &= ranked.rank < spec.cutoff
    return hit


def _hitrate(ranked: ranking.RankedRun, spec: Spec) -> Values:
    if spec.ties == "average":
        relevant = ranked.judged & (ranked.rel >= spec.rel)
        if spec.variant == "query":
            return Values(ties.hit_probability(ranked, relevant, spec.cutoff))
        hits = ties.expected_hits(ranked, relevant, spec.cutoff)
    else:
        hits = np.bincount(ranked.q[_relevant_in_k(ranked, spec)], minlength=ranked.nq).astype(np.float64)
    if spec.variant == "query":
        return Values((hits > 0).astype(np.float64))
    returned = ranked.returned.astype(np.float64)
    if spec.cutoff is not None:
        returned = np.minimum(returned, spec.cutoff)
    with np.errstate(divide="ignore", invalid="ignore"):
        return Values(np.where(returned > 0, hits / returned, 0.0), hits=hits, returned=returned)


def _mrr(ranked: ranking.RankedRun, spec: Spec) -> Values:
    if spec.ties == "average":
        relevant = ranked.judged & (ranked.rel >= spec.rel)
        return Values(ties.reciprocal_rank(ranked, relevant, spec.cutoff, ignore=spec.variant == "ignore"))
    hit = _relevant_in_k(ranked, spec)
    first = np.full(ranked.nq, np.inf)
    np.minimum.at(first, ranked.q[hit], ranked.rank[hit].astype(np.float64))
    miss = 0.0 if spec.variant == "zero" else math.nan
    return Values(np.where(np.isfinite(first), 1.0 / (first + 1.0), miss))


# each family's computation, (index, ranked run, spec) -> Values: a measure's FAMILY names its entry
_FAMILIES = {"ndcg": _ndcg, "hitrate": lambda index, ranked, spec: _hitrate(ranked, spec),
             "mrr": lambda index, ranked, spec: _mrr(ranked, spec)}


def compute(index: QrelsIndex, run, specs: Iterable[Spec],
            counts: list | None = None, groups: tuple | None = None) -> dict[Spec, Values]:
    """Every spec's per-query values. The run is joined once and ranked once per judged_only
    setting, only as deep as the deepest cutoff asks. Run queries absent from the qrels are
    reported in a warning, or counted into ``counts`` (see :func:`ranking.join`). ``groups``, when
    given, is ``columns.group_codes`` of the run's query ids, computed by the caller for its
    own use too (the streaming evaluator), so that it is not computed twice."""
    specs = list(dict.fromkeys(specs))
    rows = ranking.join(index, run, counts, groups)
    if any(s.judged_only or s.ideal == "run" for s in specs):
        rows.judge(index)  # these need the relevance of every row, not only the top ones
    by_judged: dict[bool, ranking.RankedRun] = {}
    for judged_only in sorted({s.judged_only for s in specs}):
        mine = [s for s in specs if s.judged_only == judged_only]
        depth = None if any(s.cutoff is None for s in mine) else max(s.cutoff for s in mine)
        # judged_only, as trec_eval -J: drop unjudged docs and negative labels, then rank
        subset = rows.subset(rows.judged & (rows.rel >= 0)) if judged_only else rows
        by_judged[judged_only] = ranking.rank_rows(subset, depth, index)
    out: dict[Spec, Values] = {}
    for spec in specs:
        out[spec] = _FAMILIES[spec.family](index, by_judged[spec.judged_only], spec)
    return out


@dataclass
class QueryTrace:
    """One query as :func:`compute` ranks and scores it, row by row (for ``explain``). Rows are
    the run's docs for the query in trec_eval's order (score descending, doc id descending)."""
    spec: Spec
    doc_id: list
    score: np.ndarray
    relevance: np.ndarray     # the label, 0 where unjudged
    judged: np.ndarray        # the doc is judged for the query (a label, possibly 0 or negative)
    rank: np.ndarray          # 1-based rank among the rows the measure ranks; 0 for a row judged_only drops
    top: np.ndarray           # ranked within the cutoff
    relevant: np.ndarray      # judged with a label >= spec.rel
    gain: np.ndarray          # gain_of the label; 0 where unjudged or dropped
    discount: np.ndarray      # 1 / log2(rank + 1); 0 where dropped
    contribution: np.ndarray  # gain * discount within the cutoff, else 0
    ideal_gain: np.ndarray    # the ideal ranking's gains (positive, descending, cut to the cutoff)
    ideal_contribution: np.ndarray
    dcg: float                # in trec_eval's order, within the cutoff
    idcg: float               # the IDCG compute() divides by
    value: float              # compute()'s value for the query
    hits: float | None = None       # item-level measures: compute()'s hits and returned
    returned: float | None = None


def explain_query(index: QrelsIndex, run, query_id: str, spec: Spec) -> QueryTrace:
    """One query's rows, gains, discounts, ideal ranking and value (see :class:`QueryTrace`),
    from the functions :func:`compute` uses: the join, the order, gain_of and the ideal DCG."""
    code = int(index.code_of([query_id])[0])
    if code < 0:
        raise ValueError(f"query {query_id!r} is not in the qrels")
    run = run[run["query_id"] == query_id]
    values = compute(index, run, [spec], counts=[])[spec]
    rows = ranking.join(index, run, counts=[]).judge(index)
    order = ranking.trec_eval_order(rows.group, rows.score, rows.docs)
    rel, judged = rows.rel[order], rows.judged[order]
    kept = judged & (rel >= 0) if spec.judged_only else np.ones(len(order), dtype=bool)
    rank = np.where(kept, np.cumsum(kept), 0)
    top = kept & (rank <= spec.cutoff) if spec.cutoff is not None else kept
    discount = np.where(kept, 1.0 / np.log2(np.maximum(rank, 1) + 1.0), 0.0)
    gain = np.where(kept & judged, gain_of(rel, spec), 0.0)
    contribution = np.where(top, gain / np.log2(np.maximum(rank, 1) + 1.0), 0.0)
    if spec.ideal == "run":
        pool = gain_of(rel[kept & judged], spec)
        idcg = float(_ideal_dcg(np.zeros(len(pool), dtype=np.int64), pool, spec.cutoff, 1)[0])
    else:
        pool = gain_of(index.rel[index.key_q == code], spec)
        idcg = float(index.ideal_dcg(spec)[code])
    ideal_gain = -np.sort(-pool[pool > 0])[:spec.cutoff]
    counts = [None if a is None else float(a[code]) for a in (values.hits, values.returned)]
    return QueryTrace(spec, rows.docs.take(from_numpy(order)).to_pylist(), rows.score[order], rel, judged, rank, top,
                      judged & (rel >= spec.rel), gain, discount, contribution, ideal_gain,
                      ideal_gain / np.log2(np.arange(len(ideal_gain)) + 2.0), sum(contribution[top].tolist()),
                      idcg, float(values.values[code]), *counts)
