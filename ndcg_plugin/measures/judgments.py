"""What trec_eval's binary measures share, on a ranked run: the relevant and judged non-relevant
documents each query has in the qrels (trec_eval's ``num_rel`` and the non-relevant part of its
``rel_levels``), the relevant documents ranked within a cutoff, and counts that run down a query's
ranking. A per-query array is aligned with the ranked run's local query codes (``ranked.codes``
maps them to the qrels codes), so a query missing from the run gets its qrels' counts (trec_eval
``-c``).

trec_eval's reading of a label (``form_res_rels.c``): a label >= ``rel`` (``-l``) is relevant, a
label in 0..rel-1 judged non-relevant, a negative label is "in the pool but unjudged": counted
neither way, and never relevant; a document the qrels do not list is not judged.
"""
from __future__ import annotations

from typing import Any


def _np():
    import numpy as np  # on use: `import ndcg_plugin` imports no numpy

    return np


def num_rel(index: Any, ranked: Any, rel: int) -> Any:
    """Relevant documents (label >= ``rel``) per query of ``ranked``, from the qrels (read only)."""
    np = _np()
    every = index.memo(("num_rel", rel), lambda: np.bincount(index.key_q[index.rel >= rel], minlength=index.nq))
    return every[ranked.codes]


def num_nonrel(index: Any, ranked: Any, rel: int) -> Any:
    """Judged non-relevant documents (0 <= label < ``rel``) per query of ``ranked``, from the qrels."""
    np = _np()

    def count():
        judged_nonrel = (index.rel >= 0) & (index.rel < rel)
        return np.bincount(index.key_q[judged_nonrel], minlength=index.nq)
    return index.memo(("num_nonrel", rel), count)[ranked.codes]


def top_mask(ranked: Any, hit: Any, cutoff: int | None) -> Any:
    """``hit`` restricted to the rows ranked within ``cutoff`` (``hit`` itself when every row is)."""
    return hit if ranked.all_in_top(cutoff) else hit & ranked.in_top(cutoff)


def hits_in_top(ranked: Any, rel: int, cutoff: int | None) -> Any:
    """Relevant documents ranked within ``cutoff`` (every rank for None) per query, as float64
    (shared by the families that ask the same: read only)."""
    np = _np()

    def count():
        if ranked.all_in_top(cutoff):
            return np.bincount(relevant_rows(ranked, rel)[0], minlength=ranked.nq).astype(np.float64)
        q, rank = relevant_rows(ranked, rel)  # the few relevant rows, not every row, compared to the cutoff
        return np.bincount(q[rank < cutoff], minlength=ranked.nq).astype(np.float64)
    return ranked.memo(("relevant in top", rel, cutoff), count)


def relevant_rows(ranked: Any, rel: int) -> tuple:
    """(query code, rank) of the relevant rows (label >= ``rel``), by query in rank order (read
    only, shared): what the counts of hits within a depth need, a small part of the rows."""
    np = _np()
    rows = ranked.memo(("relevant positions", rel), lambda: np.flatnonzero(ranked.relevant(rel)))
    return (ranked.memo(("relevant q", rel), lambda: ranked.q[rows]),
            ranked.memo(("relevant rank", rel), lambda: ranked.rank[rows]))


def running_count(q: Any, flag: Any) -> Any:
    """For rows by query (``q`` never decreases) in rank order: how many rows of the same query,
    up to and including each row, have ``flag`` set (int64)."""
    np = _np()
    n = len(q)
    counts = np.cumsum(flag, dtype=np.int64)
    if n == 0:
        return counts
    starts = np.flatnonzero(np.r_[True, q[1:] != q[:-1]])
    before = counts[starts] - flag[starts]  # the count up to the query's first row, exclusive
    return counts - np.repeat(before, np.diff(np.r_[starts, n]))


def ratio(num: Any, den: Any) -> Any:
    """``num / den`` where ``den`` > 0, else 0.0 (trec_eval leaves the value at 0 then)."""
    np = _np()
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1), 0.0)
