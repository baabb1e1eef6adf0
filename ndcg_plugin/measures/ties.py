"""Tie-aware measures (``ties="average"``): the expected value over all orderings of tied
documents, in closed form.

Within a query, a tie group G is a maximal run of equal scores; it occupies ranks
s_G .. s_G + n_G - 1, and under a uniformly random order each of its n_G docs is equally likely
at each of those ranks. With m_G the number of those ranks within the cutoff k and R_G the
number of relevant docs in G:

- DCG@k (McSherry & Najork 2008): E[DCG@k] = sum_G mean_gain(G) * sum_{r in G, r <= k} 1/log2(r+1);
  the ideal ranking has no ties to average, so E[NDCG@k] = E[DCG@k] / IDCG@k (as sklearn's
  ``ndcg_score(ignore_ties=False)``).
- hits at k (item level): E[hits] = sum_G R_G * m_G / n_G; the denominator min(k, n) does not depend on
  the order.
- a hit at k (query level): P(no relevant doc in the top k) = prod_G C(n_G - R_G, m_G) / C(n_G, m_G),
  so E[hit@k] = 1 - that product.
- RR@k: only the first group holding a relevant doc matters (all earlier groups hold none).
  With that group at s, n docs, R relevant, the first relevant doc is at s + j with
  P(j) = C(n - 1 - j, R - 1) / C(n, R), so E[RR@k] = sum_{j: s + j <= k} P(j) / (s + j).
  Where a miss counts 0 the value is that expectation; where misses are left out, it is taken over
  the orderings that have a value,
  E[RR@k | a relevant doc in the top k], and has no value when that probability is 0.
"""
from __future__ import annotations

import math

import numpy as np


def _log_comb(n: np.ndarray, k: np.ndarray) -> np.ndarray:
    from scipy.special import gammaln  # only ties='average' needs scipy: imported on first use

    return gammaln(n + 1) - gammaln(k + 1) - gammaln(n - k + 1)


def tie_groups(q: np.ndarray, score: np.ndarray) -> np.ndarray:
    """Tie-group id per row (rows in rank order within each query)."""
    if len(q) == 0:
        return np.zeros(0, dtype=np.int64)
    new = np.r_[True, (q[1:] != q[:-1]) | (score[1:] != score[:-1])]
    return np.cumsum(new) - 1


def _groups(ranked, k: int | None, relevant: np.ndarray):
    tg = tie_groups(ranked.q, ranked.score)
    ng = int(tg.max()) + 1 if len(tg) else 0
    in_k = np.ones(len(tg), dtype=bool) if k is None else ranked.rank < k
    size = np.bincount(tg, minlength=ng).astype(np.float64)
    start = np.full(ng, np.iinfo(np.int64).max)
    np.minimum.at(start, tg, ranked.rank)
    first_row = np.r_[0, np.flatnonzero(np.diff(tg)) + 1] if len(tg) else np.zeros(0, dtype=np.int64)
    q_of = ranked.q[first_row]
    m = np.bincount(tg, weights=in_k.astype(np.float64), minlength=ng)
    r = np.bincount(tg, weights=relevant.astype(np.float64), minlength=ng)
    return tg, size, start, q_of, m, r


def ndcg_dcg(ranked, gain: np.ndarray, k: int | None) -> np.ndarray:
    """E[DCG@k] per query."""
    tg, size, _, q_of, _, _ = _groups(ranked, k, np.zeros(len(ranked.q), dtype=bool))
    in_k = np.ones(len(tg), dtype=bool) if k is None else ranked.rank < k
    disc = np.where(in_k, 1.0 / np.log2(ranked.rank + 2.0), 0.0)
    mean_gain = np.bincount(tg, weights=gain, minlength=len(size)) / np.maximum(size, 1)
    disc_sum = np.bincount(tg, weights=disc, minlength=len(size))
    return np.bincount(q_of, weights=mean_gain * disc_sum, minlength=ranked.nq)


def expected_hits(ranked, relevant: np.ndarray, k: int) -> np.ndarray:
    """E[number of relevant docs in the top k] per query."""
    _, size, _, q_of, m, r = _groups(ranked, k, relevant)
    return np.bincount(q_of, weights=r * m / np.maximum(size, 1), minlength=ranked.nq).astype(np.float64)


def hit_probability(ranked, relevant: np.ndarray, k: int) -> np.ndarray:
    """P(at least one relevant doc in the top k) per query."""
    _, size, _, q_of, m, r = _groups(ranked, k, relevant)
    sure = (size - r) < m  # the group's slots in the top k cannot all be non-relevant
    safe_m = np.where(sure, 0, m)
    log_p0 = np.where(sure, 0.0, _log_comb(size - r, safe_m) - _log_comb(size, safe_m))
    any_sure = np.bincount(q_of, weights=sure.astype(np.float64), minlength=ranked.nq) > 0
    p_none = np.exp(np.bincount(q_of, weights=log_p0, minlength=ranked.nq))
    return np.where(any_sure, 1.0, 1.0 - p_none)


def reciprocal_rank(ranked, relevant: np.ndarray, k: int | None, ignore: bool) -> np.ndarray:
    """E[RR@k] per query (misses count 0), or with ``ignore`` E[RR@k | hit], NaN when P(hit) = 0 (misses
    left out)."""
    tg, size, start, q_of, _, r = _groups(ranked, None, relevant)
    out = np.zeros(ranked.nq)
    p_hit = np.zeros(ranked.nq)
    has = r > 0
    if has.any():
        groups = np.flatnonzero(has)
        first = np.full(ranked.nq, -1)
        # the first group with a relevant doc, per query (groups are numbered in rank order)
        order = np.argsort(groups, kind="stable")
        gq = q_of[groups[order]]
        uniq, idx = np.unique(gq, return_index=True)
        first[uniq] = groups[order][idx]
        chosen = first[first >= 0]
        rows = np.flatnonzero(np.isin(tg, chosen))  # every position of each chosen group
        g = tg[rows]
        n, R = size[g], r[g]
        j = (ranked.rank[rows] - start[g]).astype(np.float64)
        ok = (n - 1 - j) >= (R - 1)
        log_p = np.where(ok, _log_comb(np.where(ok, n - 1 - j, 0), np.maximum(R - 1, 0)) - _log_comb(n, R), -np.inf)
        p = np.exp(log_p)
        within = np.ones(len(rows), dtype=bool) if k is None else ranked.rank[rows] < k
        q_rows = ranked.q[rows]
        out = np.bincount(q_rows, weights=np.where(within, p / (ranked.rank[rows] + 1.0), 0.0), minlength=ranked.nq)
        p_hit = np.bincount(q_rows, weights=np.where(within, p, 0.0), minlength=ranked.nq)
    if not ignore:
        return out
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(p_hit > 1e-15, out / p_hit, math.nan)
