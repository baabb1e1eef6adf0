"""A block of rows with what was computed of it once, carried with it from the reader to the
ranking: a whole run or qrels, or a block of whole queries of one (a streamed block, a piece of
one, a block of a run in memory).

What is carried: the query ids' group codes (:class:`~.columns.Groups`, always: made by
:meth:`Block.of` when the caller has none), the doc ids' fingerprints where someone hashed them
already (the duplicate check; else None, and the engine hashes only the rows it needs) and, for
a run's block, each query's code in a qrels index where the caller looked them up. The block
lives here, below both the reader (its duplicate check) and the ranking (the join, the qrels
index), which are one layer and do not import each other.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Protocol

import numpy as np

from .columns import Groups, as_arrow_strings, fingerprints, group_codes, ids_of


class QueryCodes(Protocol):
    """What :meth:`Block.with_q_map` looks query ids up in (a qrels index)."""

    def code_of(self, values: Any) -> np.ndarray: ...


@dataclass(frozen=True)
class Block:
    """``rows``: the reader's columns (:class:`ndcg_plugin.reading.lines.Parsed`) or a DataFrame
    (``query_id``, ``doc_id``, the value column); ``groups``: :func:`~.columns.group_codes` of
    their query ids; ``doc_fp``: :func:`~.columns.fingerprints` of their doc ids, or None (not
    hashed); ``q_map``: each group's code in a qrels index (-1: not there), or None (not looked
    up). Nothing is recomputed: a block whose rows change is made anew (:meth:`of`)."""
    rows: Any
    groups: Groups
    doc_fp: np.ndarray | None = None
    q_map: np.ndarray | None = None

    @classmethod
    def of(cls, rows: Any) -> Block:
        """The block of ``rows``, the group codes of their query ids (as strings) computed, nothing else."""
        return cls(rows, group_codes(as_arrow_strings(ids_of(rows, "query_id"))))

    def __len__(self) -> int:
        return len(self.groups.codes)

    def hashed(self) -> Block:
        """This block with its doc ids' fingerprints (computed here if it has none)."""
        if self.doc_fp is not None:
            return self
        return replace(self, doc_fp=fingerprints(ids_of(self.rows, "doc_id")))

    def with_q_map(self, index: QueryCodes) -> Block:
        """This block with each of its queries' codes in ``index`` (looked up here)."""
        return replace(self, q_map=index.code_of(self.groups.uniques))

    def in_qrels(self) -> np.ndarray:
        """Per row, whether its query is in the qrels index of :meth:`with_q_map`."""
        if self.q_map is None:
            raise ValueError("the block's queries were not looked up in a qrels index (Block.with_q_map)")
        return (self.q_map >= 0)[self.groups.codes]

    def slice(self, lo: int, hi: int, a: int, b: int) -> Block:
        """Queries ``lo:hi`` (rows ``a:b``) of a block grouped by query (each query one run of rows,
        codes counted in order), with what was computed of them: what the block of those rows
        alone would carry. The rows must slice themselves (``rows.slice(a, b)``: the reader's
        columns)."""
        return Block(self.rows.slice(a, b), self.groups.slice(lo, hi, a, b),
                     None if self.doc_fp is None else self.doc_fp[a:b],
                     None if self.q_map is None else self.q_map[lo:hi])

    @classmethod
    def joined(cls, parts: list[Block], rows: Any) -> Block:
        """Blocks put one after the other, when no query is in two of them (the pieces of one sorted
        file); ``rows``: their rows so joined. Fingerprints and qrels codes are kept where every
        part has them."""
        fps, maps = [p.doc_fp for p in parts], [p.q_map for p in parts]
        return cls(rows, Groups.joined([p.groups for p in parts]),
                   None if any(f is None for f in fps) else np.concatenate(fps),
                   None if any(m is None for m in maps) else np.concatenate(maps))
