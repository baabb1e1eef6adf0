"""Ranking a run as trec_eval does, on columns: the run's rows joined to the qrels queries (the
qrels indexed once, :class:`ndcg_plugin.ranking.qrels_index.QrelsIndex`), cut to the rows that can rank
within the deepest cutoff, ordered by score descending then doc id descending (trec_eval's tie
rule), relevance joined where needed. :mod:`ndcg_plugin.engine.block` hands the :class:`RankedRun`
this gives to each measure family.

Queries are numbered twice: ``q`` is a query's code in the qrels index, and the rows of a run
(or of a block of a streamed run) are ranked over *local* codes, the run's queries that the qrels
hold, numbered 0..n-1; ``codes`` gives each local code's qrels code. So the work of a block is
proportional to its own rows and queries, not to the size of the qrels.
"""
from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..arrays import speedups
from ..arrays.block import Block
from ..arrays.columns import as_arrow_strings, columns_of, from_numpy, heads, take_sorted, to_numpy
from .qrels_index import QrelsIndex


def group_ranks(group: np.ndarray) -> np.ndarray:
    """0-based position of each row within its run of equal ``group`` values."""
    n = len(group)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    starts = np.flatnonzero(np.r_[True, group[1:] != group[:-1]])
    lengths = np.diff(np.r_[starts, n])
    return np.arange(n, dtype=np.int64) - np.repeat(starts, lengths)



@dataclass
class RankedRun:
    """The top of a run, ranked within each query, over local query codes 0..nq-1 (``codes``: their
    qrels codes). Row arrays (``q``, ``rank``, ``rel``, ``judged``) hold the rows ranked above
    ``depth`` (all rows when depth is None; with the rows tied with the last of them unless
    :func:`rank_rows` was told no measure needs them), by query (``q`` never decreases) and in
    rank order within each; ``returned`` counts every row per query; ``pool_q``/``pool_rel``
    are every judged row (for an ideal ranking built from the run)."""
    q: np.ndarray
    rank: np.ndarray
    rel: np.ndarray
    judged: np.ndarray
    score: np.ndarray
    returned: np.ndarray
    pool_q: np.ndarray
    pool_rel: np.ndarray
    nq: int
    codes: np.ndarray
    deepest: int = field(init=False, repr=False)  # derived from ``rank``: see ranks_held
    shared: dict = field(init=False, repr=False, default_factory=dict)  # see memo

    def __post_init__(self) -> None:
        self.deepest = int(self.rank.max()) + 1 if len(self.rank) else 0

    def memo(self, key: tuple, compute: Callable[[], np.ndarray]) -> np.ndarray:
        """``compute()``, once per ``key`` for this ranking: what the variants of a family share
        (the relevant rows, the hits or the first relevant rank per query, for one ``rel`` and
        cutoff). The array is shared, so made read only. A ranking is used by one thread."""
        if key not in self.shared:
            value = compute()
            value.flags.writeable = False
            self.shared[key] = value
        return self.shared[key]

    def ranks_held(self) -> int:
        """The largest rank held + 1 (0 for no row): how deep the rows go."""
        return self.deepest

    def relevant(self, rel: int) -> np.ndarray:
        """Rows judged with a label >= ``rel`` (read only)."""
        return self.memo(("relevant", rel), lambda: self.judged & (self.rel >= rel))

    def in_top(self, cutoff: int | None) -> np.ndarray:
        """Rows ranked within ``cutoff`` (all rows for None)."""
        return self.rank < cutoff if cutoff is not None else np.ones(len(self.rank), dtype=bool)

    def all_in_top(self, cutoff: int | None) -> bool:
        """Every row is ranked within ``cutoff`` (then :meth:`in_top` is all True, and the
        measures skip the mask): the rows were cut at that depth, or no query is that long."""
        return cutoff is None or self.ranks_held() <= cutoff


@dataclass
class Rows:
    """The run's rows for qrels queries; relevance is joined on demand (:meth:`judge`), since
    most measures only need it for the few rows that rank within the cutoff."""
    group: np.ndarray   # local query code (see the module docstring), in the run's order of queries
    score: np.ndarray
    docs: pa.Array      # doc ids of the run's rows (before any subset: see ``doc_at``)
    codes: np.ndarray   # qrels code of each local code
    rel: np.ndarray | None = None
    judged: np.ndarray | None = None
    sizes: np.ndarray | None = None    # rows per local code (when known without counting)
    doc_fp: np.ndarray | None = None   # each row's doc id fingerprint, when known (the duplicate check's)
    doc_at: np.ndarray | None = None   # each row's position in ``docs`` (ascending); None: row i is docs[i]
    cut: int | None = None  # the rows held are only those that can rank above this depth (see join)

    @property
    def q(self) -> np.ndarray:
        """Each row's qrels query code."""
        return self.codes[self.group]

    def subset(self, rows: np.ndarray) -> Rows:
        """The rows at these indices, ascending (or this boolean mask). The doc ids are not copied:
        the subset keeps their positions (strings are taken only for the few rows that need them)."""
        if self.cut is not None:
            raise ValueError("these rows hold only the top of each query (cut at a depth): subset rows joined "
                             "without a depth")
        if rows.dtype == bool:
            rows = np.flatnonzero(rows)
        return Rows(self.group[rows], self.score[rows], self.docs, self.codes,
                    None if self.rel is None else self.rel[rows],
                    None if self.judged is None else self.judged[rows],
                    doc_fp=None if self.doc_fp is None else self.doc_fp[rows],
                    doc_at=rows if self.doc_at is None else self.doc_at[rows])

    def doc_ids(self) -> pa.ChunkedArray | pa.Array:
        """The rows' doc ids, in row order."""
        return self.docs if self.doc_at is None else take_sorted(as_arrow_strings(self.docs), self.doc_at)

    def group_sizes(self) -> np.ndarray:
        """Rows held per local query."""
        if self.sizes is not None and self.cut is None:
            return self.sizes
        return np.bincount(self.group, minlength=len(self.codes))

    def returned(self) -> np.ndarray:
        """Rows the run holds per local query (with those below a cut), as int64."""
        return (self.sizes if self.sizes is not None else self.group_sizes()).astype(np.int64)

    def judge(self, index: QrelsIndex) -> Rows:
        """Look each (query, doc) pair up in the qrels: sets ``rel`` (0 where unjudged) and ``judged``."""
        if self.rel is None:
            self.judged, self.rel = index.labels_by_group(self.group, self.codes.astype(np.int64, copy=False),
                                                          self.docs, self.doc_fp, self.doc_at)
        return self


def report_unmatched(unmatched: int, total: int) -> None:
    """A warning (shown once per message) when run queries are not in the qrels."""
    if total and unmatched == total:
        warnings.warn(f"0 of {total} run queries are in the qrels: no query in common, so every qrels query "
                      f"scores 0 (or has no value, for a measure that leaves misses out); are these the right "
                      f"qrels for this run?",
                      RuntimeWarning, stacklevel=2)  # one location: shown once
    elif unmatched:
        warnings.warn(f"{unmatched} of {total} run queries are not in the qrels and are ignored, as trec_eval "
                      f"ignores them", RuntimeWarning, stacklevel=2)


def join(index: QrelsIndex, block: Block, depth: int | None = None) -> Rows:
    """Map a run block's queries to qrels codes (its ``q_map``, or looked up here), dropping the
    run queries absent from the qrels (``Rows.codes`` holds those kept: the caller counts the
    others). The block's group codes are used, and its doc fingerprints where it has them.

    ``depth``: only ranks above it will be asked for (:func:`rank_rows` with that depth). Then a
    ranked run (:func:`is_ranked`) whose lists go deeper is cut at once: the rows kept are those
    :func:`candidates` keeps, of the queries the qrels hold, taken in one pass (the rows ``cut``
    at ``depth``; ``sizes`` still counts every row). Any other run is joined whole."""
    _, docs, score = columns_of(block.rows, "score")
    score = score.astype(np.float64, copy=False)
    group, sizes, doc_fp = block.groups.codes, block.groups.sizes, block.doc_fp
    q_map = index.code_of(block.groups.uniques) if block.q_map is None else block.q_map
    matched = q_map >= 0
    unmatched = len(q_map) - int(matched.sum())
    if depth is not None and len(sizes) and int(sizes.max()) > depth and is_ranked(group, score):
        top, local = top_rows(score, sizes, depth, matched, group)
        return Rows(local, score[top], docs, q_map[matched], sizes=sizes[matched],
                    doc_fp=None if doc_fp is None else doc_fp[top], doc_at=top, cut=depth)
    doc_at = None
    if unmatched:  # run queries absent from the qrels are ignored (their doc ids stay where they are)
        doc_at = np.flatnonzero(matched[group])
        local_of_group = (np.cumsum(matched) - 1).astype(group.dtype, copy=False)
        group, score = local_of_group[group[doc_at]], score[doc_at]
        doc_fp = None if doc_fp is None else doc_fp[doc_at]
        sizes = sizes[matched]
    return Rows(group, score, docs, q_map[matched], sizes=sizes, doc_fp=doc_fp, doc_at=doc_at)


def is_ranked(group: np.ndarray, score: np.ndarray) -> bool:
    """True when rows are grouped by query and sorted by score descending within each group
    (how retrieval toolkits write runs): then positions are ranks up to ties."""
    if len(group) < 2:
        return True
    same = group[1:] == group[:-1]
    return bool(np.all(group[1:] >= group[:-1]) and np.all(~same | (score[1:] <= score[:-1])))


def candidates(group: np.ndarray, score: np.ndarray, depth: int | None, ranked: bool,
                sizes: np.ndarray) -> np.ndarray | None:
    """Indices (ascending) of the rows that can rank above ``depth`` in their query: every row
    whose score is at least the query's depth-th highest, so ties at the boundary stay in; None
    for all rows. A ranked run takes each query's first ``depth`` rows and the rows that tie
    with the last of them; a run grouped by query finds the depth-th score with np.partition
    on a (queries x longest list) matrix; any other run with one numeric sort."""
    n = len(group)
    if depth is None or n == 0 or sizes.max() <= depth:
        return None
    if ranked:
        return ranked_top(score, sizes, depth)
    starts = np.cumsum(sizes) - sizes
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
        at = group_ranks(gs) == depth - 1
        kth = np.full(len(sizes), -np.inf)
        kth[gs[at]] = score[order][at]
    return np.flatnonzero(score >= kth[group])


def ranked_top(score: np.ndarray, sizes: np.ndarray, depth: int, only: np.ndarray | None = None) -> np.ndarray:
    """:func:`candidates` of a ranked run (:func:`is_ranked`; ``sizes``: rows per query, in the
    run's order of queries): each query's first ``depth`` rows and the rows that tie with the
    last of them, ascending; only the queries where ``only`` is True (None: every query)."""
    starts = np.cumsum(sizes) - sizes
    take = np.minimum(sizes, depth)
    if only is not None:
        take = np.where(only, take, 0)
    first = np.arange(int(take.sum())) + np.repeat(starts - (np.cumsum(take) - take), take)
    extra = []
    deep = np.flatnonzero(sizes > depth if only is None else (sizes > depth) & only)
    kth = score[starts[deep] + depth - 1]
    pos, ends = starts[deep] + depth, starts[deep] + sizes[deep]
    while len(pos):  # rows tied with the depth-th one follow it directly
        more = pos < ends
        more[more] = score[pos[more]] == kth[more]
        pos, ends, kth = pos[more], ends[more], kth[more]
        extra.append(pos.copy())
        pos += 1
    if not any(len(e) for e in extra):
        return first
    keep = np.zeros(len(score), dtype=bool)  # ascending without a sort
    keep[first] = True
    for e in extra:
        keep[e] = True
    return np.flatnonzero(keep)


def top_rows(score: np.ndarray, sizes: np.ndarray, depth: int, matched: np.ndarray,
             group: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(:func:`ranked_top` of the queries ``matched``, each of those rows' local code: its query's
    number among the matched ones) of a ranked run whose query codes ``group`` count the queries
    in order (:func:`is_ranked`, codes of :func:`~ndcg_plugin.arrays.columns.group_codes`). By one
    C loop when it is at hand (:mod:`ndcg_plugin.arrays.speedups`; the same arrays)."""
    every = bool(matched.all())
    found = speedups.ranked_top(score, sizes, depth, None if every else matched, group)
    if found is not None:
        return found
    top = ranked_top(score, sizes, depth, matched)
    return top, group[top] if every else (np.cumsum(matched) - 1).astype(group.dtype, copy=False)[group[top]]


def grouped_order(group: np.ndarray, score: np.ndarray) -> np.ndarray | None:
    """``np.lexsort((-score, group))`` for rows whose ``group`` never goes down (a run grouped by
    query, codes numbered by first appearance), the same permutation: each query's scores are a
    row of a matrix, padded with +inf after them, sorted on its own and stably, which costs a
    third to a half of one sort of every row for lists of tens of rows. None for other rows, or
    when the matrix would be mostly padding (a few long lists among short ones)."""
    n = len(group)
    if n < 2:
        return np.arange(n)
    if np.any(group[1:] < group[:-1]):
        return None
    starts = np.flatnonzero(np.r_[True, group[1:] != group[:-1]])
    sizes = np.diff(np.r_[starts, n])
    width = int(sizes.max())
    if len(starts) * width > 2 * n + 4096:
        return None
    matrix = np.full((len(starts), width), np.inf)
    matrix[np.repeat(np.arange(len(starts)), sizes), np.arange(n) - np.repeat(starts, sizes)] = -score
    at = np.argsort(matrix, axis=1, kind="stable")  # the padding stays after a row's own scores
    return (starts[:, None] + at)[at < sizes[:, None]]  # row by row: the queries in their order


def trec_eval_order(group: np.ndarray, score: np.ndarray, docs: pa.Array,
                    doc_at: np.ndarray | None = None) -> np.ndarray:
    """trec_eval's order within each query: score descending, then doc id descending (string
    order). Strings are compared only among rows whose scores tie: a tie of two rows (most ties
    of a run with rounded scores) is put in order by one comparison, larger ties by a sort.
    ``doc_at``: row i's doc id is ``docs[doc_at[i]]`` (None: ``docs[i]``). See
    :func:`_trec_eval_order` for the C loops."""
    return _trec_eval_order(group, score, docs, doc_at)[0]


_NONE = np.zeros(0, dtype=np.intp)


def _trec_eval_order(group: np.ndarray, score: np.ndarray, docs: pa.Array, doc_at: np.ndarray | None = None,
                     ranked: bool = False) -> tuple[np.ndarray, np.ndarray | None]:
    """(:func:`trec_eval_order`, the positions it moves): for a ranked run (:func:`is_ranked`) the
    order is the rows' own but for tied rows put in doc id order, and the positions are those
    rows (often none); None when the order is a sort of the rows. ``ranked``: the rows are known
    to be ranked (the top rows of a ranked run), not checked again. A ranked run's ties are put
    in order by the C loops when they are at hand (:mod:`ndcg_plugin.arrays.speedups`)."""
    if ranked or is_ranked(group, score):
        found = speedups.ranked_tie_order(group, score,
                                          lambda rows: heads(docs, rows if doc_at is None else doc_at[rows]))
        if found is not None:
            return found
        order = np.arange(len(group))  # already grouped and sorted by score descending
        gs, ss = group, score
    else:
        order = grouped_order(group, score)
        if order is None:
            order = np.lexsort((-score, group))
        gs, ss = group[order], score[order]
    tie = (gs[1:] == gs[:-1]) & (ss[1:] == ss[:-1])
    moved = _NONE if gs is group else None
    if not tie.any():
        return order, moved
    after = np.r_[False, tie]  # ties with the row before it
    rows = np.flatnonzero(after | np.r_[tie, False])
    tied = np.cumsum(~after[rows]) - 1  # one number per run of tied rows, increasing in rank order
    at = order[rows] if doc_at is None else doc_at[order[rows]]
    keys = _descending_bytes(docs, at)
    pair = np.bincount(tied)[tied] == 2
    at = np.flatnonzero(pair)  # the two rows of each pair are neighbours
    first, second = at[0::2], at[1::2]
    swap = _before(keys, second, first)
    a, b = rows[first[swap]], rows[second[swap]]
    order[a], order[b] = order[b], order[a]
    if not pair.all():
        big = np.flatnonzero(~pair)
        sub = rows[big]
        order[sub] = order[sub][np.lexsort((*(k[big] for k in keys), tied[big]))]
    return order, None if moved is None else rows  # a ranked run's rows move only among their ties


def _before(keys: tuple[np.ndarray, ...], i: np.ndarray, j: np.ndarray) -> np.ndarray:
    """Whether row ``i`` sorts strictly before row ``j`` under lexsort ``keys`` (the last key
    first), element-wise: what np.lexsort, which is stable, does with the two."""
    less = np.zeros(len(i), dtype=bool)
    equal = np.ones(len(i), dtype=bool)
    for key in reversed(keys):
        a, b = key[i], key[j]
        less |= equal & (a < b)
        equal &= a == b
    return less


def _descending_bytes(docs: pa.Array | pa.ChunkedArray, at: np.ndarray) -> tuple[np.ndarray, ...]:
    """lexsort keys (least significant first) that order the strings ``docs[at]`` by their bytes
    descending (as trec_eval's strcmp orders doc ids, UTF-8 byte order being code point order):
    for ids of at most 8 bytes their heads and lengths (:func:`columns.heads`, read in place),
    else Arrow's dense ranks."""
    head, length = heads(docs, at)
    if len(length) == 0 or length.max() <= 8:
        return -length, ~head
    ids = as_arrow_strings(docs).take(from_numpy(at))
    if isinstance(ids, pa.ChunkedArray):
        ids = ids.combine_chunks()
    return (-to_numpy(pc.rank(ids, sort_keys="ascending", tiebreaker="dense")).astype(np.int64),)


def ranked_arrays(group: np.ndarray, score: np.ndarray, rel: np.ndarray, judged: np.ndarray, order: np.ndarray,
                  moved: np.ndarray | None, depth: int | None, whole_ties: bool) -> tuple:
    """(q, rank, rel, judged, score) of :class:`RankedRun`: the rows in trec_eval's ``order`` (and
    ``moved``) of :func:`_trec_eval_order`, ranked within their query, those ranked below ``depth``
    (all for None) kept, and with ``whole_ties`` those tied with the last of them (a tie group
    that straddles the cutoff stays whole, for ties="average"). By one C loop when it is at hand
    (:mod:`ndcg_plugin.arrays.speedups`; the same arrays). A depth of at least the rows given
    ranks no row below it: it is None then (memory and time never depend on it, and a huge depth
    never reaches the C loop's 64-bit integers)."""
    depth = None if depth is not None and depth >= len(order) else depth
    found = speedups.ranked_rows(group, score, rel, judged, order, depth, whole_ties)
    if found is not None:
        return found
    # a ranked run's rows move only among rows of one query and one score: those stay in place
    group_sorted = group if moved is not None else group[order]
    score_sorted = score if moved is not None else score[order]
    rank = group_ranks(group_sorted)
    keep = None
    if depth is not None and len(rank) and int(rank.max()) >= depth:
        keep = rank < depth
        if whole_ties:
            at = rank == depth - 1
            kth = np.full(int(group_sorted.max()) + 1, np.nan)
            kth[group_sorted[at]] = score_sorted[at]
            keep |= score_sorted == kth[group_sorted]
        if keep.all():
            keep = None

    def ranked(a: np.ndarray, sorted_already: bool = False) -> np.ndarray:
        """``a[order]``, restricted to the rows kept."""
        if moved is None:
            out = a[order]
        elif sorted_already or not len(moved):
            out = a
        else:
            out = a.copy()
            out[moved] = a[order[moved]]
        return out if keep is None else out[keep]
    return (ranked(group, True), rank if keep is None else rank[keep], ranked(rel), ranked(judged),
            score_sorted if keep is None else score_sorted[keep])


def rank_rows(rows: Rows, depth: int | None, index: QrelsIndex, whole_ties: bool = True) -> RankedRun:
    """The rows that rank above ``depth`` (all rows for None), in trec_eval's order, ranked, with
    their relevance (see :class:`RankedRun`, whose arrays may be the rows' own: read only).
    ``whole_ties``: also the rows below ``depth`` tied with the last row above it (a tie group
    that straddles the cutoff stays whole, for ties='average'); False leaves them out, which the
    measures that rank by trec_eval's order alone would mask out themselves."""
    returned = rows.returned()
    if rows.cut is not None and (depth is None or depth > rows.cut):
        raise ValueError(f"the rows were cut at depth {rows.cut} (join's depth); ranks to {depth} need them whole")
    top = None if rows.cut == depth else candidates(rows.group, rows.score, depth, is_ranked(rows.group, rows.score),
                                                    rows.group_sizes())
    pool = rows.judged  # every judged row, when the caller joined them all (ideal='run'; not the top alone)
    cand = (rows if top is None else rows.subset(top)).judge(index)
    # rows cut as they were joined are the top of a ranked run (see join), and so are ranked
    order, moved = _trec_eval_order(cand.group, cand.score, cand.docs, cand.doc_at, ranked=rows.cut is not None)
    q, rank, rel, judged, score = ranked_arrays(cand.group, cand.score, cand.rel, cand.judged, order, moved, depth,
                                                whole_ties)
    empty = np.zeros(0, dtype=np.int64)
    return RankedRun(q=q, rank=rank, rel=rel, judged=judged, score=score, returned=returned,
                     pool_q=empty if pool is None else rows.group[pool],
                     pool_rel=empty if pool is None else rows.rel[pool], nq=len(rows.codes), codes=rows.codes)
