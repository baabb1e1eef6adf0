"""The ranked-list statistics of a reproduction (:mod:`ndcg_plugin.reproduce`): Kendall's tau
union (KTU) and rank-biased overlap (RBO) between an original and a reproduced run, per topic,
vectorized over topics (docs/reproduce.md gives the definitions and their references).

A run's lists are a matrix (:class:`Lists`): one row per topic, the keys of its docs in
trec_eval's order (score descending, doc id descending) up to a depth, padded with
:data:`PAD`. A doc's key is an unsigned integer that orders doc ids as their bytes do (UTF-8
byte order is code point order, Python's string order): for ids of at most 8 bytes that do not
end in a NUL byte, the id's bytes as a big-endian integer; otherwise the id's dense rank among
every id of the runs compared. Equal ids have equal keys in every run.

- KTU (Breuer et al., SIGIR 2020, and their code): the lists' docs are coded by their position
  in the sorted union of the two lists; KTU is Kendall's tau between the code sequences of the
  two lists, position by position. Neither sequence has ties, so tau-b is tau-a:
  ``1 - 4 * inversions / (n (n - 1))``, where the inversions are counted after ordering the
  positions by the original list's codes (a merge count, vectorized over topics).
- RBO: the prefix overlaps ``X_d = |O_{:d} & R_{:d}|`` of every depth come from the depth at
  which each common doc has entered both lists; ``truncated`` is the normalised truncated RBO
  that repro_eval 0.5.0 computes (Clarke et al.), ``ext`` Webber et al.'s extrapolated RBO
  (their equation 32), which the paper used.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .columns import columns_of, from_numpy, group_codes, heads, to_numpy
from .ranking import group_ranks, trec_eval_order

PAD = np.uint64(np.iinfo(np.uint64).max)  # after a list's end; no UTF-8 id has this key
RBO_VARIANTS = ("truncated", "ext")
_ROWS_ELEMENTS = 1 << 22  # topics x depth handled at once


@dataclass
class Lists:
    """One run's ranked lists: ``keys[t, i]`` the key of the doc at rank i (0-based) of topic t
    (:data:`PAD` after the list's end), ``lengths[t]`` the list's length (at most the depth)."""
    keys: np.ndarray
    lengths: np.ndarray


@dataclass
class Ranked:
    """A run's rows ranked within the depth: topic index and rank of each, and its doc ids."""
    topic: np.ndarray
    rank: np.ndarray
    docs: pa.ChunkedArray
    rows: np.ndarray


def rank_run(run, topics: pa.Array, depth: int) -> Ranked:
    """A run's rows in trec_eval's order, those ranked above ``depth``, with their topic's index
    in ``topics`` (which must hold every topic of the run)."""
    qids, docs, score = columns_of(run, "score")
    codes, uniques, _ = group_codes(qids)
    where = pc.index_in(uniques, value_set=topics.cast(uniques.type))
    if where.null_count:
        raise ValueError("the run has topics the qrels lack")
    topic_of_code = to_numpy(where).astype(np.int64)
    order = trec_eval_order(codes, np.asarray(score, dtype=np.float64), docs)
    rank = group_ranks(codes[order])
    keep = rank < depth
    rows = order[keep]
    return Ranked(topic_of_code[codes[rows]], rank[keep], docs, rows)


def _short_keys(ids: pa.ChunkedArray) -> np.ndarray | None:
    """Keys from the ids' bytes when every id has at most 8 bytes and none ends in a NUL byte
    (then the zero-padded bytes tell ids apart and order them), else None."""
    head, length = heads(ids)
    if len(length) == 0:
        return head
    if int(length.max()) > 8:
        return None
    last = (head >> (np.uint64(8) * (np.uint64(8) - length.astype(np.uint64)))) & np.uint64(0xFF)
    return None if bool(np.any(last == 0)) else head


def doc_keys(ranked: list[Ranked]) -> list[np.ndarray]:
    """Each run's keys of its ranked rows (see the module docstring), consistent across the runs."""
    short = [_short_keys(r.docs) for r in ranked]
    if all(k is not None for k in short):
        return [k[r.rows] for k, r in zip(short, ranked, strict=True)]
    taken = [r.docs.take(from_numpy(r.rows)) for r in ranked]
    every = pa.chunked_array([c for t in taken for c in t.chunks], type=pa.large_string()).combine_chunks()
    dense = np.asarray(pc.rank(every, sort_keys="ascending", tiebreaker="dense").to_numpy(), dtype=np.uint64)
    return np.split(dense, np.cumsum([len(t) for t in taken])[:-1])


def lists_of(ranked: Ranked, keys: np.ndarray, n_topics: int, depth: int) -> Lists:
    out = np.full((n_topics, depth), PAD, dtype=np.uint64)
    out[ranked.topic, ranked.rank] = keys
    return Lists(out, np.bincount(ranked.topic, minlength=n_topics))


def inversions(values: np.ndarray) -> np.ndarray:
    """Per row of ``values`` (each row a permutation of 0..w-1, w a power of two >= 8): the pairs
    i < j with values[i] > values[j]. Blocks of 8 are counted pair by pair, then merged level by
    level: a merge sorts each pair of sorted halves with the half marked in the lowest bit, and
    the right half's elements that land at merged positions p (k-th of their half) jump over
    ``s - (p - k)`` greater elements of the left half."""
    rows, width = values.shape
    dtype = np.int16 if width <= 1 << 14 else np.int32
    blocks = values.astype(dtype).reshape(rows, width // 8, 8)
    count = np.zeros(rows, dtype=np.int64)
    for j in range(1, 8):
        count += np.count_nonzero(blocks[:, :, :j] > blocks[:, :, j:j + 1], axis=(1, 2))
    current = np.sort(blocks, axis=2).reshape(rows, width)
    s = 8
    while s < width:
        side = np.tile(np.repeat(np.array([0, 1], dtype=dtype), s), width // (2 * s))
        merged = ((current << 1) | side).reshape(-1, 2 * s)
        merged.sort(axis=1)
        merged = merged.reshape(rows, width)
        positions = np.tile(np.arange(2 * s, dtype=np.int32), width // (2 * s))
        landed = ((merged & 1) * positions).sum(axis=1, dtype=np.int64)
        count += (width // (2 * s)) * (s * s + s * (s - 1) // 2) - landed
        current = merged >> 1
        s *= 2
    return count


def _tau(orig: np.ndarray, rep: np.ndarray, n: int) -> np.ndarray:
    """KTU of rows of n keys each (n >= 2), the rows padded here to a power of two."""
    width = max(8, 1 << (n - 1).bit_length())
    x = np.full((len(orig), width), PAD, dtype=np.uint64)
    z = np.full((len(orig), width), PAD, dtype=np.uint64)
    x[:, :n], z[:, :n] = orig, rep
    by_x = np.argsort(x, axis=1, kind="stable")  # padding stays last, in order
    z = np.take_along_axis(z, by_x, axis=1)
    order = np.argsort(z, axis=1, kind="stable")
    ranks = np.empty_like(order)
    np.put_along_axis(ranks, order, np.broadcast_to(np.arange(width), order.shape), axis=1)
    pairs = n * (n - 1) // 2
    return (pairs - 2 * inversions(ranks)) / pairs


def ktu(orig: Lists, rep: Lists, cutoff: int) -> np.ndarray:
    """KTU per topic at ``cutoff``: both lists cut to ``cutoff`` and to the shorter one's length
    (position i of one is paired with position i of the other); NaN where fewer than 2 positions
    remain (a topic missing from either run)."""
    n = np.minimum(np.minimum(orig.lengths, rep.lengths), cutoff)
    out = np.full(len(n), np.nan)
    for length in np.unique(n[n >= 2]):
        topics = np.flatnonzero(n == length)
        length = int(length)
        step = max(1, _ROWS_ELEMENTS // max(length, 8))
        for lo in range(0, len(topics), step):
            t = topics[lo: lo + step]
            out[t] = _tau(orig.keys[t, :length], rep.keys[t, :length], length)
    return out


def overlaps(orig: Lists, rep: Lists) -> np.ndarray:
    """``X[t, d-1] = |O_{:d} & R_{:d}|`` for d = 1..depth: the docs of topic t in both lists, counted
    from the depth at which a doc is in both prefixes (the later of its two ranks)."""
    n_topics, depth = orig.keys.shape
    out = np.zeros((n_topics, depth), dtype=np.int32)
    step = max(1, _ROWS_ELEMENTS // depth)
    for lo in range(0, n_topics, step):
        o, r = orig.keys[lo: lo + step], rep.keys[lo: lo + step]
        by_o, by_r = np.argsort(o, axis=1, kind="stable"), np.argsort(r, axis=1, kind="stable")
        both = np.concatenate([np.take_along_axis(o, by_o, axis=1), np.take_along_axis(r, by_r, axis=1)], axis=1)
        merge = np.argsort(both, axis=1, kind="stable")  # equal keys: the original's first
        merged = np.take_along_axis(both, merge, axis=1)
        row, at = np.nonzero((merged[:, 1:] == merged[:, :-1]) & (merged[:, 1:] != PAD))
        rank_o = by_o[row, merge[row, at]]
        rank_r = by_r[row, merge[row, at + 1] - depth]
        entered = np.maximum(rank_o, rank_r)
        counts = np.bincount(row * depth + entered, minlength=len(o) * depth).reshape(len(o), depth)
        out[lo: lo + step] = np.cumsum(counts, axis=1)
    return out


def rbo_truncated(x: np.ndarray, present: np.ndarray, cutoffs: list[int], p: float) -> dict[int, np.ndarray]:
    """Normalised truncated RBO at each cutoff k (depth k): ``sum_d p^(d-1) X_d / d`` over
    ``sum_d p^(d-1)``, d = 1..k, summed in repro_eval's order (weights by repeated products,
    running sums), so that its numbers come out bit for bit; NaN for topics in neither run."""
    depth = x.shape[1]
    weight = np.cumprod(np.r_[1.0, np.full(depth - 1, p)])
    d = np.arange(1, depth + 1, dtype=np.float64)
    score = np.cumsum((weight * x) / d, axis=1)
    norm = np.cumsum(weight)
    return {k: np.where(present, score[:, min(k, depth) - 1] / norm[min(k, depth) - 1], np.nan) for k in cutoffs}


def rbo_ext(x: np.ndarray, orig_len: np.ndarray, rep_len: np.ndarray, cutoffs: list[int],
            p: float) -> dict[int, np.ndarray]:
    """Extrapolated RBO (Webber et al. 2010, eq. 32) of the lists cut to each cutoff k, with s and l
    the shorter and longer list's length: ``(1-p)/p [sum_{d<=l} X_d/d p^d + sum_{s<d<=l} X_s (d-s)/(s d)
    p^d] + [(X_l - X_s)/l + X_s/s] p^l``; 0 when one list is empty, NaN when both are."""
    depth = x.shape[1]
    d = np.arange(1, depth + 1, dtype=np.float64)
    power = p ** d
    first = np.cumsum(x / d * power, axis=1)
    p1, p2 = np.r_[0.0, np.cumsum(power)], np.r_[0.0, np.cumsum(power / d)]
    rows = np.arange(len(x))
    out = {}
    for k in cutoffs:
        s = np.minimum(np.minimum(orig_len, rep_len), k)
        ll = np.minimum(np.maximum(orig_len, rep_len), k)
        ok = s > 0
        si, li = np.maximum(s, 1), np.maximum(ll, 1)
        xs, xl = x[rows, np.minimum(si, depth) - 1], x[rows, np.minimum(li, depth) - 1]
        tail = xs / si * ((p1[li] - p1[si]) - si * (p2[li] - p2[si]))
        value = (1 - p) / p * (first[rows, li - 1] + tail) + ((xl - xs) / li + xs / si) * p ** li
        out[k] = np.where(ok, value, np.where(ll > 0, 0.0, np.nan))
    return out
