"""The ranked-list statistics of a reproduction (:mod:`ndcg_plugin.reproduce`): Kendall's tau
union (KTU) and rank-biased overlap (RBO) between an original and a reproduced run, per topic,
vectorized over topics (docs/reproduce.md gives the definitions and their references).

A run's lists are a matrix (:class:`Lists`): one row per topic, the keys of its docs in
trec_eval's order (score descending, doc id descending) up to a depth, padded with
:data:`PAD`. A doc's key is an integer that orders doc ids as their bytes do (UTF-8 byte order is
code point order, Python's string order): for ids of at most 8 bytes, the id's bytes as a
big-endian integer (with the length in the last byte for ids of at most 7, and unless an 8-byte
id ends in a NUL byte); otherwise the id's dense rank among every id of the runs compared. Equal
ids have equal keys in every run. The same keys order tied scores in trec_eval's order. Each
pair of runs is then sorted together once per topic (:func:`pair`): a doc's rank in the union of
the two lists is its code, and a doc in both lists is two equal neighbours.

- KTU (Breuer et al., SIGIR 2020, and their code): Kendall's tau between the two lists' code
  sequences, position by position. Neither sequence has ties, so tau-b is tau-a:
  ``1 - 4 * inversions / (n (n - 1))``, the inversions counted after ordering the positions by
  the original list's codes (a merge count, vectorized over topics).
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

from ..arrays.columns import columns_of, from_numpy, group_codes, heads, to_numpy
from ..ranking.ranked import group_ranks, is_ranked, trec_eval_order

PAD = np.int64(np.iinfo(np.int64).max)  # after a list's end; no UTF-8 id has this key
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
    """A run's rows ranked within the depth: topic index and rank of each (``rows``: their rows in
    the run), the run's doc ids, and the keys of those rows when the ids themselves give them (else
    None: :func:`doc_keys` ranks the ids of every run compared)."""
    topic: np.ndarray
    rank: np.ndarray
    rows: np.ndarray
    docs: pa.ChunkedArray
    keys: np.ndarray | None = None


def _signed(keys: np.ndarray) -> np.ndarray:
    """Unsigned keys as signed ones in the same order (the top bit flipped)."""
    return (keys ^ np.uint64(1 << 63)).view(np.int64)


def _short_keys(ids: pa.ChunkedArray) -> np.ndarray | None:
    """Keys from the ids' bytes when every id has at most 8 bytes, else None: for ids of at most 7
    bytes their zero-padded bytes with the length in the last byte; for 8 bytes their bytes alone,
    unless an id ends in a NUL byte (then zero padding would not tell it apart)."""
    head, length = heads(ids)
    longest = int(length.max(initial=0))
    if longest <= 7:
        return _signed(head | length.astype(np.uint64))
    if longest > 8:
        return None
    last = (head >> (np.uint64(8) * (np.uint64(8) - length.astype(np.uint64)))) & np.uint64(0xFF)
    return None if bool(np.any(last == 0)) else _signed(head)


def _order(group: np.ndarray, score: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """trec_eval's order (as :func:`ndcg_plugin.ranking.ranked.trec_eval_order`) from the ids' keys: in a
    run grouped by topic and sorted by score, only the rows of tied scores are sorted."""
    if not is_ranked(group, score):
        return np.lexsort((~keys, -score, group))
    order = np.arange(len(group))
    tie = (group[1:] == group[:-1]) & (score[1:] == score[:-1])
    if tie.any():
        rows = np.flatnonzero(np.r_[tie, False] | np.r_[False, tie])
        order[rows] = rows[np.lexsort((~keys[rows], -score[rows], group[rows]))]
    return order


def rank_run(run, topics: pa.Array, depth: int) -> Ranked:
    """A run's rows in trec_eval's order, those ranked above ``depth``, with their topic's index
    in ``topics`` (which must hold every topic of the run)."""
    qids, docs, score = columns_of(run, "score")
    score = np.asarray(score, dtype=np.float64)
    codes, uniques, _ = group_codes(qids)
    where = pc.index_in(uniques, value_set=topics.cast(uniques.type))
    if where.null_count:
        raise ValueError("the run has topics the qrels lack")
    topic_of_code = to_numpy(where).astype(np.int64)
    keys = _short_keys(docs)
    order = trec_eval_order(codes, score, docs) if keys is None else _order(codes, score, keys)
    rank = group_ranks(codes[order])
    keep = rank < depth
    rows = order[keep]
    return Ranked(topic_of_code[codes[rows]], rank[keep], rows, docs, None if keys is None else keys[rows])


def doc_keys(ranked: list[Ranked]) -> list[np.ndarray]:
    """Each run's keys of its ranked rows (see the module docstring), consistent across the runs:
    the ids' own bytes when every run's give them, else dense ranks over every run's ids."""
    if all(r.keys is not None for r in ranked):
        return [r.keys for r in ranked]
    taken = [r.docs.take(from_numpy(r.rows)) for r in ranked]
    every = pa.chunked_array([c for t in taken for c in t.chunks], type=pa.large_string()).combine_chunks()
    dense = np.asarray(pc.rank(every, sort_keys="ascending", tiebreaker="dense").to_numpy(), dtype=np.uint64)
    return [_signed(k) for k in np.split(dense, np.cumsum([len(t) for t in taken])[:-1])]


def lists_of(ranked: Ranked, keys: np.ndarray, n_topics: int, depth: int) -> Lists:
    out = np.full((n_topics, depth), PAD, dtype=np.int64)
    out[ranked.topic, ranked.rank] = keys
    return Lists(out, np.bincount(ranked.topic, minlength=n_topics))


@dataclass
class Pair:
    """An original and a reproduced run's lists over the same topics, for KTU and RBO: each doc
    coded by its rank in the sorted union of the topic's two lists (``orig``, ``rep``: topics x
    depth; equal docs have equal codes, and :func:`pad_code` follows a list's end), the lists'
    lengths, and the prefix overlaps ``overlap[t, d-1] = |O_{:d} & R_{:d}|``, d = 1..depth."""
    orig: np.ndarray
    rep: np.ndarray
    orig_len: np.ndarray
    rep_len: np.ndarray
    overlap: np.ndarray


def pad_code(depth: int) -> int:
    """The code past a list's end: above every doc's code (at most 2 * depth - 1)."""
    return 2 * depth


def pair(orig: Lists, rep: Lists) -> Pair:
    """Both lists of each topic sorted together once (rows of ``2 * depth`` keys): a doc's code is
    its dense rank there, and a doc in both lists is two equal neighbours, the original's at an
    index below ``depth``; it enters the overlap at the later of its two ranks."""
    n_topics, depth = orig.keys.shape
    dtype = np.int16 if 2 * pad_code(depth) + 1 < 1 << 15 else np.int32
    codes = np.empty((n_topics, 2 * depth), dtype=dtype)
    overlap = np.zeros((n_topics, depth), dtype=np.int32)
    step = max(1, _ROWS_ELEMENTS // (2 * depth))
    for lo in range(0, n_topics, step):
        both = np.concatenate([orig.keys[lo: lo + step], rep.keys[lo: lo + step]], axis=1)
        rows = len(both)
        order = np.argsort(both, axis=1)  # equal keys: one of each list, in either order
        ranked = np.take_along_axis(both, order, axis=1)
        same = ranked[:, 1:] == ranked[:, :-1]
        dense = np.zeros((rows, 2 * depth), dtype=dtype)
        np.cumsum(~same, axis=1, dtype=dtype, out=dense[:, 1:])
        dense[ranked == PAD] = pad_code(depth)
        np.put_along_axis(codes[lo: lo + rows], order, dense, axis=1)
        row, at = np.nonzero(same & (ranked[:, 1:] != PAD))
        first, second = order[row, at], order[row, at + 1]
        entered = np.maximum(np.minimum(first, second), np.maximum(first, second) - depth)
        counts = np.bincount(row * depth + entered, minlength=rows * depth).reshape(rows, depth)
        np.cumsum(counts, axis=1, out=overlap[lo: lo + rows])
    return Pair(codes[:, :depth], codes[:, depth:], orig.lengths, rep.lengths, overlap)


def inversions(values: np.ndarray) -> np.ndarray:
    """Per row of ``values`` (integers in 0..2^14, or 0..2^30, distinct but for the largest; the
    width a power of two >= 8): the pairs i < j with values[i] > values[j]. Blocks of 8 are counted
    pair by pair, then merged level by level: a merge sorts each pair of sorted halves with the
    half marked in the lowest bit, and the right half's element that lands at merged position p,
    the k-th of its half, jumps over ``s - (p - k)`` greater elements of the left half."""
    rows, width = values.shape
    dtype = np.int16 if int(values.max(initial=0)) < 1 << 14 else np.int32
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


def _tau(orig: np.ndarray, rep: np.ndarray, n: int, pad: int) -> np.ndarray:
    """KTU of rows of n codes each (n >= 2), the rows padded here to a power of two."""
    width = max(8, 1 << (n - 1).bit_length())
    x = np.full((len(orig), width), pad, dtype=orig.dtype)
    z = np.full((len(orig), width), pad, dtype=orig.dtype)
    x[:, :n], z[:, :n] = orig, rep
    by_x = np.argsort(x, axis=1, kind="stable")  # padding stays last, in order
    pairs = n * (n - 1) // 2
    return (pairs - 2 * inversions(np.take_along_axis(z, by_x, axis=1))) / pairs


def ktu(lists: Pair, cutoff: int) -> np.ndarray:
    """KTU per topic at ``cutoff``: both lists cut to ``cutoff`` and to the shorter one's length
    (position i of one is paired with position i of the other); NaN where fewer than 2 positions
    remain (a topic missing from either run)."""
    n = np.minimum(np.minimum(lists.orig_len, lists.rep_len), cutoff)
    out = np.full(len(n), np.nan)
    pad = pad_code(lists.orig.shape[1])
    for length in np.unique(n[n >= 2]):
        topics = np.flatnonzero(n == length)
        length = int(length)
        step = max(1, _ROWS_ELEMENTS // max(length, 8))
        for lo in range(0, len(topics), step):
            t = topics[lo: lo + step]
            out[t] = _tau(lists.orig[t, :length], lists.rep[t, :length], length, pad)
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
