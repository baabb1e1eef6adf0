"""Qrels indexed once (:class:`QrelsIndex`), so that looking up a run's queries and (query, doc)
pairs costs the same per run row however many queries and judgments the qrels hold.

Arrow's ``index_in`` builds a hash table of its value set on every call: over a streamed run's
blocks that is the whole qrels again for every block. The index instead keeps sorted 64-bit keys
built once: the fingerprints of the query ids (:func:`ndcg_plugin.arrays.columns.fingerprints`), and for
the judgments the query code in the top bits with the doc id's fingerprint below. A lookup is a
binary search; since fingerprints are only a filter, every match is confirmed on the strings
themselves. Distinct ids with equal keys (a collision, about 1 in 10^7 for a million judgments)
would make a search ambiguous: then the index answers through Arrow's exact lookups instead
(``exact=True`` asks for that path outright; tests compare the two).
"""
from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..arrays import speedups
from ..arrays.block import Block
from ..arrays.columns import (
    Groups,
    as_arrow_strings,
    columns_of,
    factorize,
    fingerprints,
    from_numpy,
    heads,
    take_sorted,
    to_numpy,
)


def _confirmed(needles: pa.ChunkedArray, rows: np.ndarray, values: pa.ChunkedArray | pa.Array,
               at: np.ndarray) -> np.ndarray:
    """Whether ``needles[rows[i]] == values[at[i]]`` as strings (``rows`` ascending); compared by
    the C loop when it is at hand (:mod:`ndcg_plugin.arrays.speedups`)."""
    if len(rows) == 0:
        return np.zeros(0, dtype=bool)
    same = speedups.equal_at(needles, rows, values, at)
    if same is not None:
        return same
    same = pc.equal(take_sorted(needles, rows), values.take(from_numpy(at)))
    return to_numpy(same, null=False).astype(bool)


def search_sorted(haystack: np.ndarray, needles: np.ndarray, near_sorted: bool = False) -> np.ndarray:
    """``np.searchsorted(haystack, needles)`` clipped to valid positions, searched in the needles'
    sorted order (numpy then starts each search where the last one ended: half the time on
    random 64-bit keys). ``near_sorted``: the needles already come in runs of close keys, which
    search as fast without the sort (:func:`in_runs`)."""
    if not near_sorted and len(needles) > 1 and np.any(needles[1:] < needles[:-1]):
        order = np.argsort(needles)
        pos = np.empty(len(needles), dtype=np.intp)
        pos[order] = np.searchsorted(haystack, needles[order])
    else:
        pos = np.searchsorted(haystack, needles)
    return np.minimum(pos, len(haystack) - 1)


def in_runs(q: np.ndarray, haystack: int) -> bool:
    """Whether pair keys with these query codes are searched as fast in their own order as sorted
    (see :func:`search_sorted`): the codes come sorted, or in runs of one code (a run grouped by
    query, its queries in any order) long enough that each run's searches, after its first, find
    the keys just touched in cache: 64 rows a run on average, or 4 against at most 2^20 keys.
    Measured (2.5M keys searched): in runs of 10 against 750k keys 0.14 s unsorted against 0.34 s
    with the sort; runs of 1000 against 7000 keys 0.04 against 0.25; but runs of 10 against 7.5M
    keys 0.62 against 0.39, and runs of 4 against 4M keys 1.1 against 0.4."""
    if len(q) < 2:
        return True
    runs = 1 + int(np.count_nonzero(q[1:] != q[:-1]))
    if 64 * runs <= len(q) or (4 * runs <= len(q) and haystack <= 1 << 20):
        return True
    return bool(np.all(q[1:] >= q[:-1]))


def _sorted_codes(groups: Groups) -> tuple[pa.Array, np.ndarray]:
    """(the distinct ids in code point (UTF-8 byte) order, each row's position there), from the
    ids' :func:`~ndcg_plugin.arrays.columns.group_codes` (one hash pass over the runs of equal
    ids: qrels are grouped by query); no sort when the ids come sorted already."""
    codes, uniques = groups.codes, groups.uniques
    if _increasing(uniques):
        return uniques, codes.astype(np.int64)
    order = to_numpy(pc.sort_indices(uniques)).astype(np.int64)
    position = np.empty(len(order), dtype=np.int64)
    position[order] = np.arange(len(order))
    return uniques.take(from_numpy(order)), position[codes]


def _increasing(ids: pa.Array) -> bool:
    """Whether the ids are strictly increasing in byte order."""
    if len(ids) < 2:
        return True
    head, length = heads(ids)
    if length.max() <= 8:
        return bool(np.all((head[1:] > head[:-1]) | ((head[1:] == head[:-1]) & (length[1:] > length[:-1]))))
    return bool(pc.all(pc.greater(ids.slice(1), ids.slice(0, len(ids) - 1))).as_py())


_NONE = np.zeros(0, dtype=np.int64)


class QrelsIndex:
    """Qrels prepared once, reusable for any number of runs: query ids sorted as strings
    (trec_eval's output order: ``qid_values``, ``qids``), and the judgments sorted by (query code,
    doc fingerprint), with their labels ``rel`` and query codes ``key_q``."""

    def __init__(self, qrels: Any, exact: bool = False):
        """``qrels``: a table, or a :class:`~ndcg_plugin.arrays.block.Block` of one, whose group
        codes and (where it has them) doc fingerprints are used (the side-by-side reader keeps
        them per block). Qrels grouped by query in order have each query's keys sorted on their
        own by the C loops when they are at hand (:mod:`ndcg_plugin.arrays.speedups`; the same
        order)."""
        block = qrels if isinstance(qrels, Block) else Block.of(qrels)
        _, docs, rel = columns_of(block.rows, "relevance")
        doc_fp = block.doc_fp
        self.qid_values, row_q = _sorted_codes(block.groups)
        self._qids: np.ndarray | None = None
        self._memo: dict = {}
        self._memo_lock = threading.RLock()
        self._shift = 64 - max(len(self.qid_values) - 1, 1).bit_length()  # doc fingerprint bits below the code
        keys = self.pair_keys(row_q, fingerprints(docs) if doc_fp is None else doc_fp)
        order = speedups.sort_runs(keys, row_q)
        if order is None:
            order = np.argsort(keys, kind="stable")
        self.keys, self.key_q = keys[order], row_q[order]
        self.rel = np.asarray(rel, dtype=np.int64)[order]
        self._docs, self._doc_order = as_arrow_strings(docs), order
        self.exact = exact or bool(np.any(self.keys[1:] == self.keys[:-1]))
        self._exact_pairs: tuple | None = None

    @property
    def nq(self) -> int:
        return len(self.qid_values)

    @property
    def qids(self) -> np.ndarray:
        """The query ids as Python strings (object array), in ``qid_values`` order."""
        if self._qids is None:
            self._qids = np.array(self.qid_values.to_pylist(), dtype=object)
        return self._qids

    def memo(self, key: tuple, compute: Callable[[], Any]) -> Any:
        """``compute()``, once per ``key`` for this index (a family's per-query arrays that depend
        on the qrels alone, such as an ideal DCG), also when threads ask at once (``compute``
        may itself ask the memo)."""
        with self._memo_lock:  # blocks evaluated at once on threads share the index: computed once
            if key not in self._memo:
                self._memo[key] = compute()
            return self._memo[key]

    def pair_keys(self, q: np.ndarray, doc_fp: np.ndarray) -> np.ndarray:
        with np.errstate(over="ignore"):
            return (q.astype(np.uint64) << np.uint64(self._shift)) | (doc_fp >> np.uint64(64 - self._shift))

    def code_of(self, values: Any, method: str | None = None) -> np.ndarray:
        """Code (position in ``qid_values``) of each query id, -1 for ids not in the qrels.
        ``method``: ``"hash"`` (Arrow's ``index_in``, which hashes every query id of the index on
        each call), ``"search"`` (binary searches of fingerprints sorted once, confirmed on the
        strings), ``"heads"`` (binary searches of the ids' first 8 bytes, which with the length
        are the id itself when the index's ids have at most 8 bytes, their byte order being
        ``qid_values``' order; it falls back to hashing for other indexes), or None: heads where
        they serve (user ids of logs), else hashing when the ids looked up are at least a quarter
        as many as the index's (one block of a run against the qrels of its own queries) or when
        the index is ``exact``, else searching. Every method gives the same codes."""
        if method not in (None, "hash", "search", "heads"):
            raise ValueError(f"method must be 'hash', 'search', 'heads' or None, got {method!r}")
        values = as_arrow_strings(values)
        if method in (None, "heads"):
            codes = self._head_codes(values)
            if codes is not None:
                return codes
            method = "hash" if method == "heads" else method
        if method is None:
            method = "hash" if self.exact or self.nq <= 4 * len(values) else "search"
        if method == "hash":
            return to_numpy(pc.index_in(values, value_set=self.qid_values), null=-1).astype(np.int64)
        q_fp, q_order = self.memo(("query search",), self._query_search)
        if bool(np.any(q_fp[1:] == q_fp[:-1])):  # two query ids with one fingerprint: ambiguous
            return self.code_of(values, "hash")
        fp = fingerprints(values)
        codes = np.full(len(fp), -1, dtype=np.int64)
        if len(q_fp) == 0:
            return codes
        pos = search_sorted(q_fp, fp)
        rows = np.flatnonzero(q_fp[pos] == fp)
        found = q_order[pos[rows]]
        ok = _confirmed(values, rows, self.qid_values, found)
        codes[rows[ok]] = found[ok]
        return codes

    def _head_codes(self, values: pa.ChunkedArray) -> np.ndarray | None:
        """:meth:`code_of` by the heads (see there), or None when the index's ids are not all of
        at most 8 bytes with distinct heads (an id and itself followed by zero bytes share one)."""
        found = self.memo(("query heads",), self._query_heads)
        if found is None:
            return None
        head, length = found
        h, n = heads(values)
        pos = np.minimum(np.searchsorted(head, h), len(head) - 1)
        return np.where((head[pos] == h) & (length[pos] == n), pos, -1).astype(np.int64)

    def _query_heads(self) -> tuple[np.ndarray, np.ndarray] | None:
        """(head, length) of the query ids (in ``qid_values`` order, so heads increasing) when
        every id has at most 8 bytes and no two share a head; else None."""
        head, length = heads(self.qid_values)
        if len(head) == 0 or int(length.max()) > 8 or bool(np.any(head[1:] <= head[:-1])):
            return None
        return head, length

    def _query_search(self) -> tuple[np.ndarray, np.ndarray]:
        """(the query ids' fingerprints sorted, the code of each), for :meth:`code_of`'s searches."""
        fp = fingerprints(self.qid_values)
        order = np.argsort(fp, kind="stable")
        return fp[order], order

    def labels(self, q: np.ndarray, docs: pa.ChunkedArray, doc_fp: np.ndarray | None = None,
               doc_at: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(judged, label) of each (query code, doc id) pair: the label 0 where unjudged.
        ``doc_at``: pair i's doc id is ``docs[doc_at[i]]`` (ascending; None: ``docs[i]``);
        ``doc_fp``: the pairs' doc id fingerprints (``columns.fingerprints``), when the caller has them.
        Keys looked up by the C loop when it is at hand (:mod:`ndcg_plugin.arrays.speedups`),
        each among its own query's keys (the same positions)."""
        if doc_at is not None and (self.exact or doc_fp is None):
            docs, doc_at = take_sorted(as_arrow_strings(docs), doc_at), None
        n = len(q)
        if n == 0 or len(self.keys) == 0:
            return self._labelled(n, _NONE, _NONE)
        if self.exact:
            at, rows = self._exact_positions(q, docs)
        else:
            keys = self.pair_keys(q, fingerprints(docs) if doc_fp is None else doc_fp)
            rows, at = self._found(q, keys)
            rows, at = self._confirmed_pairs(rows, at, docs, doc_at)
        return self._labelled(n, rows, at)

    def labels_by_group(self, group: np.ndarray, codes: np.ndarray, docs: pa.ChunkedArray, doc_fp: np.ndarray | None,
                        doc_at: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`labels` of the query codes ``codes[group]`` (``codes``: int64, each local query's
        code), without making them: by one C loop when it is at hand that makes each pair key and
        looks it up (:func:`ndcg_plugin.arrays.speedups.find_pairs`; the same pairs)."""
        n = len(group)
        found = None
        if speedups.available() and not self.exact and doc_fp is not None and n and len(self.keys):
            starts = self.memo(("code starts",), self._code_starts)
            found = speedups.find_pairs(self.keys, starts, group, codes, doc_fp, self._shift)
        if found is None:
            return self.labels(codes[group], docs, doc_fp, doc_at)
        return self._labelled(n, *self._confirmed_pairs(*found, docs, doc_at))

    def _labelled(self, n: int, rows: np.ndarray, at: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(judged, label) of ``n`` pairs, of which ``rows`` are the judgments at ``at``."""
        judged, rel = np.zeros(n, dtype=bool), np.zeros(n, dtype=np.int64)
        judged[rows] = True
        rel[rows] = self.rel[at]
        return judged, rel

    def _confirmed_pairs(self, rows: np.ndarray, at: np.ndarray, docs: Any,
                         doc_at: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        """The pairs (rows, positions in ``keys``) found by their keys whose doc ids are the
        index's own, compared as strings (a fingerprint is not the id)."""
        ok = _confirmed(as_arrow_strings(docs), rows if doc_at is None else doc_at[rows], self._docs,
                        self._doc_order[at])
        return rows[ok], at[ok]

    def _found(self, q: np.ndarray, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(rows, positions in ``keys``) of the pair keys the index holds (query codes ``q``)."""
        if speedups.available():  # the code starts are made only for the C loop
            starts = self.memo(("code starts",), self._code_starts)
            pos = speedups.find_in_ranges(self.keys, starts, q, keys)
            if pos is not None:
                rows = np.flatnonzero(pos >= 0)
                return rows, pos[rows]
        pos = search_sorted(self.keys, keys, near_sorted=in_runs(q, len(self.keys)))
        rows = np.flatnonzero(self.keys[pos] == keys)
        return rows, pos[rows]

    def _code_starts(self) -> np.ndarray:
        """Where each query code's keys start in ``keys`` (sorted by code), and their end: what
        ``np.searchsorted(key_q, np.arange(nq + 1))`` gives, from the keys per code."""
        return np.concatenate(([0], np.cumsum(np.bincount(self.key_q, minlength=self.nq)))).astype(np.int64)

    def _exact_positions(self, q: np.ndarray, docs: Any) -> tuple[np.ndarray, np.ndarray]:
        """(positions in ``keys``, rows) of the judged pairs, by Arrow's exact lookups: the doc ids
        factorized, (query, doc) packed into integers."""
        if self._exact_pairs is None:
            codes, values = factorize(self._docs)
            ndocs = max(len(values), 1)
            packed = self.key_q * ndocs + codes[self._doc_order]
            order = np.argsort(packed, kind="stable")
            self._exact_pairs = (values, ndocs, packed[order], order)
        values, ndocs, packed, order = self._exact_pairs
        dcode = to_numpy(pc.index_in(as_arrow_strings(docs), value_set=values), null=-1)
        cand = np.flatnonzero(dcode >= 0)
        wanted = q[cand].astype(np.int64) * ndocs + dcode[cand].astype(np.int64)
        pos = np.minimum(np.searchsorted(packed, wanted), len(packed) - 1)
        hit = packed[pos] == wanted
        return order[pos[hit]], cand[hit]
