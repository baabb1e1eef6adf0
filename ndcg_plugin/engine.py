"""The columnar engine: one ranking of the run, every measure from the same arrays.

Pipeline (no Python loop per query or per document):

1. qrels are indexed once (:class:`QrelsIndex`): query ids sorted as strings (trec_eval's
   output order), doc ids factorized, (query, doc) packed into sorted int64 keys;
2. the run's query ids become codes from their runs of equal values (one string hashed per
   query in a grouped run) and are mapped to qrels query codes; run queries absent from the
   qrels are dropped, with a warning;
3. only the rows that can rank within the deepest cutoff are kept (:func:`_candidates`): read
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
import warnings
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from ir_measures.providers.base import NOT_PROVIDED

from . import ties
from .columns import as_arrow_strings, columns_of, factorize, from_numpy, group_codes, take_sorted, to_numpy
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
    ties: str = "trec"     # "trec" (doc id descending) | "average" (expected value over tied orders)


def spec_of(measure) -> Spec:
    """Translate a plugin measure, or a built-in one the plugin serves (``nDCG``, ``RR``,
    ``Success``), into a :class:`Spec`. A built-in's parameters are accepted only where the
    engine computes the measure as pytrec_eval defines it; otherwise a ValueError says why."""
    measure.validate_params()

    def param(key, default=None):
        if key not in measure.SUPPORTED_PARAMS:
            return default
        value = measure[key]
        return default if value is NOT_PROVIDED else value

    cutoff = param("cutoff")
    if isinstance(measure, PluginMeasure):  # a parameter the measure does not take keeps Spec's default
        return Spec(measure.FAMILY, measure.VARIANT, cutoff, rel=param("rel", 1), ideal=param("ideal", "qrels"),
                    gains=tuple(sorted((param("gains") or {}).items())),
                    judged_only=bool(param("judged_only", False)), ties=param("ties", "trec"))
    name = getattr(measure, "NAME", None)
    if name not in ("nDCG", "RR", "Success"):
        raise ValueError(f"the ndcg_plugin engine does not compute {measure}")

    def refuse(why: str):
        raise ValueError(f"the ndcg_plugin engine does not compute {measure}: {why}")

    if cutoff is None and name == "Success":
        refuse("Success needs a cutoff, e.g. Success@10")
    if cutoff is not None and (isinstance(cutoff, bool) or not isinstance(cutoff, int) or cutoff < 1):
        refuse(f"the cutoff must be a positive integer, got {cutoff!r}")
    judged_only = param("judged_only", False)
    if not isinstance(judged_only, bool):
        refuse(f"judged_only must be True or False, got {judged_only!r}")
    if name == "nDCG":
        dcg = param("dcg", "log2")
        if dcg not in ("log2", "exp-log2"):
            refuse(f"dcg must be 'log2' or 'exp-log2', got {dcg!r}")
        gains = param("gains")
        if gains is not None:
            if dcg != "log2":
                refuse("gains are defined for dcg='log2' only (pytrec_eval's relevance -> gain map)")
            if not isinstance(gains, dict) or not all(
                    isinstance(v, int) and not isinstance(v, bool) and v >= 0 for k in gains for v in (k, gains[k])):
                refuse(f"gains must map labels >= 0 to integer gains >= 0 (pytrec_eval reads a gain as an "
                       f"integer relevance label, and a negative one as judged non-relevant), got {gains!r}")
        return Spec("ndcg", "exp" if dcg == "exp-log2" else "linear", cutoff,
                    gains=tuple(sorted((gains or {}).items())), judged_only=judged_only)
    rel = param("rel", 1)
    if isinstance(rel, bool) or not isinstance(rel, int) or rel < 1:
        refuse(f"rel must be an integer >= 1 (negative labels are never relevant, label 0 is judged "
               f"non-relevant), got {rel!r}")
    family, variant = ("mrr", "zero") if name == "RR" else ("hitrate", "query")
    return Spec(family, variant, cutoff, rel=rel, judged_only=judged_only)


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
    """The top of a run, ranked within each query. Row arrays (``q``, ``rank``, ``rel``,
    ``judged``) hold the rows ranked above ``depth`` (all rows when depth is None), in rank
    order; ``returned`` counts every row per query; ``pool_q``/``pool_rel`` are every judged
    row (for an ideal ranking built from the run)."""
    q: np.ndarray
    rank: np.ndarray
    rel: np.ndarray
    judged: np.ndarray
    score: np.ndarray
    returned: np.ndarray
    pool_q: np.ndarray
    pool_rel: np.ndarray
    nq: int


@dataclass
class _Rows:
    """The run's rows for qrels queries; relevance is joined on demand (:meth:`judge`), since
    most measures only need it for the few rows that rank within the cutoff."""
    group: np.ndarray   # query code in order of appearance in the run
    q: np.ndarray       # qrels query code
    score: np.ndarray
    docs: pa.Array      # doc ids
    rel: np.ndarray | None = None
    judged: np.ndarray | None = None
    sizes: np.ndarray | None = None    # rows per group code (when known without counting)
    group_q: np.ndarray | None = None  # qrels query code per group code

    def subset(self, rows: np.ndarray) -> _Rows:
        """The rows at these indices (or this boolean mask)."""
        if rows.dtype == bool:
            rows = np.flatnonzero(rows)
        return _Rows(self.group[rows], self.q[rows], self.score[rows], take_sorted(self.docs, rows),
                     None if self.rel is None else self.rel[rows],
                     None if self.judged is None else self.judged[rows])

    def group_sizes(self) -> np.ndarray:
        return self.sizes if self.sizes is not None else np.bincount(self.group)

    def returned(self, nq: int) -> np.ndarray:
        """Rows per qrels query."""
        if self.sizes is None or self.group_q is None:
            return np.bincount(self.q, minlength=nq)
        valid = self.group_q >= 0
        return np.bincount(self.group_q[valid], weights=self.sizes[valid], minlength=nq).astype(np.int64)

    def judge(self, index: QrelsIndex) -> _Rows:
        """Look each doc up in the qrels (hash probes into the small qrels, then the packed
        (query, doc) keys): sets ``rel`` (0 where unjudged) and ``judged``."""
        if self.rel is not None:
            return self
        n = len(self.q)
        self.judged = np.zeros(n, dtype=bool)
        self.rel = np.zeros(n, dtype=np.int64)
        if n == 0 or len(index.keys) == 0:
            return self
        dcode = to_numpy(pc.index_in(self.docs, value_set=index.doc_values), null=-1)
        cand = np.flatnonzero(dcode >= 0)
        keys = self.q[cand].astype(np.int64) * index.ndocs + dcode[cand].astype(np.int64)
        pos = np.minimum(np.searchsorted(index.keys, keys), len(index.keys) - 1)
        hit = index.keys[pos] == keys
        self.judged[cand[hit]] = True
        self.rel[cand[hit]] = index.rel[pos[hit]]
        return self


def report_unmatched(unmatched: int, total: int) -> None:
    """A warning (shown once per message) when run queries are not in the qrels."""
    if total and unmatched == total:
        warnings.warn(f"0 of {total} run queries are in the qrels: no query in common, so every qrels query "
                      f"scores 0 (MRR_ignore has no value); are these the right qrels for this run?",
                      RuntimeWarning, stacklevel=2)  # one location: shown once
    elif unmatched:
        warnings.warn(f"{unmatched} of {total} run queries are not in the qrels and are ignored, as trec_eval "
                      f"ignores them", RuntimeWarning, stacklevel=2)


def _join(index: QrelsIndex, run, counts: list | None = None, groups: tuple | None = None) -> _Rows:
    """Map run queries to qrels codes, dropping the run queries absent from the qrels; these
    are reported (a warning), or counted into ``counts`` as (unmatched, total) when given."""
    qids, docs, score = columns_of(run, "score")
    score = score.astype(np.float64, copy=False)
    group, q_uniques, sizes = groups if groups is not None else group_codes(qids)
    q_map = index.code_of(q_uniques)
    q = q_map[group] if len(group) else np.zeros(0, dtype=np.int64)
    if counts is None:
        report_unmatched(int((q_map < 0).sum()), len(q_map))
    else:
        counts.append((int((q_map < 0).sum()), len(q_map)))
    if (q_map < 0).any():  # run queries absent from the qrels are ignored
        rows = np.flatnonzero(q >= 0)
        group, q, score, docs = group[rows], q[rows], score[rows], take_sorted(docs, rows)
        sizes = np.where(q_map >= 0, sizes, 0)
    return _Rows(group, q.astype(np.int32), score, docs, sizes=sizes, group_q=q_map)


def _is_ranked(group: np.ndarray, score: np.ndarray) -> bool:
    """True when rows are grouped by query and sorted by score descending within each group
    (how retrieval toolkits write runs): then positions are ranks up to ties."""
    if len(group) < 2:
        return True
    same = group[1:] == group[:-1]
    return bool(np.all(group[1:] >= group[:-1]) and np.all(~same | (score[1:] <= score[:-1])))


def _candidates(group: np.ndarray, score: np.ndarray, depth: int | None, ranked: bool,
                sizes: np.ndarray) -> np.ndarray | None:
    """Indices (ascending) of the rows that can rank above ``depth`` in their query: every row
    whose score is at least the query's depth-th highest, so ties at the boundary stay in; None
    for all rows. A ranked run takes each query's first ``depth`` rows and the rows that tie
    with the last of them; a run grouped by query finds the depth-th score with np.partition
    on a (queries x longest list) matrix; any other run with one numeric sort."""
    n = len(group)
    if depth is None or n == 0 or sizes.max() <= depth:
        return None
    starts = np.cumsum(sizes) - sizes
    if ranked:
        take = np.minimum(sizes, depth)
        first = np.repeat(starts, take) + np.arange(int(take.sum())) - np.repeat(np.cumsum(take) - take, take)
        extra = []
        deep = np.flatnonzero(sizes > depth)
        kth = score[starts[deep] + depth - 1]
        pos, ends = starts[deep] + depth, starts[deep] + sizes[deep]
        while len(pos):  # rows tied with the depth-th one follow it directly
            more = pos < ends
            more[more] = score[pos[more]] == kth[more]
            pos, ends, kth = pos[more], ends[more], kth[more]
            extra.append(pos.copy())
            pos += 1
        return np.sort(np.concatenate([first, *extra])) if extra else first
    if np.all(group[1:] >= group[:-1]) and len(sizes) * int(sizes.max()) <= 4 * n + 4096:
        present = sizes > 0
        if np.all(sizes[present] == sizes[present][0]):
            rows_per = int(sizes[present][0])
            kth = np.full(len(sizes), -np.inf)
            kth[present] = -np.partition(-score.reshape(-1, rows_per), depth - 1, axis=1)[:, depth - 1]
        else:
            matrix = np.full((len(sizes), int(sizes.max())), np.inf)
            matrix[group, np.arange(n) - starts[group]] = -score
            kth = -np.partition(matrix, depth - 1, axis=1)[:, depth - 1]
    else:
        order = np.lexsort((-score, group))
        gs = group[order]
        at = _group_ranks(gs) == depth - 1
        kth = np.full(len(sizes), -np.inf)
        kth[gs[at]] = score[order][at]
    return np.flatnonzero(score >= kth[group])


def _order(group: np.ndarray, score: np.ndarray, docs: pa.Array) -> np.ndarray:
    """trec_eval's order within each query: score descending, then doc id descending (string
    order). Strings are compared only among rows whose scores tie."""
    if _is_ranked(group, score):
        order = np.arange(len(group))  # already grouped and sorted by score descending
    else:
        order = np.lexsort((-score, group))
    gs, ss = group[order], score[order]
    tie = (gs[1:] == gs[:-1]) & (ss[1:] == ss[:-1])
    if tie.any():
        rows = np.flatnonzero(np.r_[tie, False] | np.r_[False, tie])
        tied = docs.take(from_numpy(order[rows]))
        if isinstance(tied, pa.ChunkedArray):
            tied = tied.combine_chunks()
        # dense ranks in byte order (= code point order of UTF-8), as trec_eval's strcmp
        doc_rank = to_numpy(pc.rank(tied, sort_keys="ascending", tiebreaker="dense")).astype(np.int64)
        order[rows] = order[rows][np.lexsort((-doc_rank, -ss[rows], gs[rows]))]
    return order


def query_order(run) -> np.ndarray:
    """Row positions of a run table in trec_eval's order (by query, score descending, doc id
    descending), as the engine ranks them."""
    group = group_codes(run["query_id"].array)[0]
    return _order(group, run["score"].to_numpy(dtype=np.float64), as_arrow_strings(run["doc_id"].array))


def _rank(rows: _Rows, depth: int | None, index: QrelsIndex) -> RankedRun:
    nq = index.nq
    returned = rows.returned(nq)
    top = _candidates(rows.group, rows.score, depth, _is_ranked(rows.group, rows.score), rows.group_sizes())
    cand = (rows if top is None else rows.subset(top)).judge(index)
    order = _order(cand.group, cand.score, cand.docs)
    rank = _group_ranks(cand.group[order])
    if depth is not None:
        # the rows above depth, and those tied with the last of them: a tie group that
        # straddles a cutoff stays whole, for ties="average"
        group_sorted, score_sorted = cand.group[order], cand.score[order]
        at = rank == depth - 1
        kth = np.full(int(group_sorted.max()) + 1 if len(group_sorted) else 0, np.nan)
        kth[group_sorted[at]] = score_sorted[at]
        keep = (rank < depth) | (score_sorted == kth[group_sorted])
        order, rank = order[keep], rank[keep]
    pool = rows.judged  # every judged row, when the caller joined them all (ideal='run')
    empty = np.zeros(0, dtype=np.int64)
    return RankedRun(q=cand.q[order], rank=rank, rel=cand.rel[order], judged=cand.judged[order],
                     score=cand.score[order], returned=returned, pool_q=empty if pool is None else rows.q[pool],
                     pool_rel=empty if pool is None else rows.rel[pool], nq=nq)


def _ndcg(index: QrelsIndex, ranked: RankedRun, spec: Spec) -> Values:
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


def _relevant_in_k(ranked: RankedRun, spec: Spec) -> np.ndarray:
    hit = ranked.judged & (ranked.rel >= spec.rel)
    if spec.cutoff is not None:
        hit &= ranked.rank < spec.cutoff
    return hit


def _hitrate(ranked: RankedRun, spec: Spec) -> Values:
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


def _mrr(ranked: RankedRun, spec: Spec) -> Values:
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
    reported in a warning, or counted into ``counts`` (see :func:`_join`). ``groups``, when
    given, is ``columns.group_codes`` of the run's query ids, computed by the caller for its
    own use too (the streaming evaluator), so that it is not computed twice."""
    specs = list(dict.fromkeys(specs))
    rows = _join(index, run, counts, groups)
    if any(s.judged_only or s.ideal == "run" for s in specs):
        rows.judge(index)  # these need the relevance of every row, not only the top ones
    by_judged: dict[bool, RankedRun] = {}
    for judged_only in sorted({s.judged_only for s in specs}):
        mine = [s for s in specs if s.judged_only == judged_only]
        depth = None if any(s.cutoff is None for s in mine) else max(s.cutoff for s in mine)
        # judged_only, as trec_eval -J: drop unjudged docs and negative labels, then rank
        subset = rows.subset(rows.judged & (rows.rel >= 0)) if judged_only else rows
        by_judged[judged_only] = _rank(subset, depth, index)
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
    rows = _join(index, run, counts=[]).judge(index)
    order = _order(rows.group, rows.score, rows.docs)
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
    return QueryTrace(spec, rows.docs.take(pa.array(order)).to_pylist(), rows.score[order], rel, judged, rank, top,
                      judged & (rel >= spec.rel), gain, discount, contribution, ideal_gain,
                      ideal_gain / np.log2(np.arange(len(ideal_gain)) + 2.0), sum(contribution[top].tolist()),
                      idcg, float(values.values[code]), *counts)
