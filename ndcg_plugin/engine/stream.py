"""Evaluate a run file as it streams: memory bounded by the block size, not by the run.

The file is read in blocks of whole lines (:func:`ndcg_plugin.reading.sources.blocks`), each
parsed as the reader would parse it. The rows of the last query of a block may go on in the
next block, so they are carried over; every other query of a block is complete, and is
checked for duplicates and evaluated there (duplicates are pairs within one query, so the
check stays exact). Only the per-query values are kept.

Runs are grouped by query in practice (TREC and MS MARCO files). A query that appears again
after other queries were completed cannot be evaluated from the blocks kept, so the file is
then read again whole, into memory, and evaluated as :func:`ndcg_plugin.engine.block.compute` does:
correct, with memory that grows with the run. Standard input cannot be read twice and is
always read whole.

A depth (trec_eval's ``-M``: :attr:`RunFile.depth <ndcg_plugin.reading.ahead.RunFile>`) cuts each
query of a block to its top rows (:mod:`ndcg_plugin.engine.depth`) after the duplicate check.

The result equals ``engine.compute(index, reading.read(path, "run", ...), specs)`` exactly:
the same values, the same warning, and the same error for a bad file (the first bad line in
file order; a duplicate is reported only once the whole file has parsed, as the in-memory
reader does).
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .. import reading
from ..arrays.block import Block
from ..arrays.columns import from_numpy, to_numpy
from ..errors import InputError
from ..ranking.qrels_index import QrelsIndex
from ..reading.ahead import ReadAhead, RunFile
from ..reading.duplicates import resolve_duplicates
from ..reading.lines import Parsed
from ..sizes import BLOCK_BYTES
from . import block as engine
from .depth import top_of_block


class _Regrouped(Exception):
    """A query appeared again after it was completed."""


def _split(p: Parsed, at: int) -> tuple[Parsed, Parsed]:
    return p.slice(0, at), p.slice(at, len(p))


def _last_query_start(qids: pa.ChunkedArray | pa.Array) -> int:
    """Row where the trailing run of the last query id begins (looked for from the end, in
    growing slices: a query is usually a small part of a block)."""
    n = len(qids)
    last = qids[n - 1]
    width = 4096
    end = n
    while end > 0:
        lo = max(0, end - width)
        other = np.flatnonzero(~to_numpy(pc.equal(qids.slice(lo, end - lo), last)))
        if len(other):
            return lo + int(other[-1]) + 1
        end, width = lo, width * 4
    return 0


def complete_queries(pieces: Iterable[Parsed]) -> Iterator[Parsed]:
    """Pieces of whole queries: each block's rows up to its last query, which is carried over."""
    pending: Parsed | None = None
    for piece in pieces:
        if len(piece) == 0:  # a run with no result line (only comments): no query to complete
            yield piece
            continue
        merged = piece if pending is None else Parsed.joined([pending, piece])
        cut = _last_query_start(merged.query_id)
        if cut == 0:
            pending = merged
            continue
        done, pending = _split(merged, cut)
        yield done
    if pending is not None and len(pending):
        yield pending


class _Seen:
    """The queries a stream has completed: a flag per qrels query, and the names of the run's
    queries that the qrels lack (usually few). A query seen again means the run is not grouped."""

    def __init__(self, nq: int):
        self.done = np.zeros(nq, dtype=bool)
        self.others: set[str] = set()

    def check(self, block: Block) -> None:
        """Mark the queries of a block (its qrels codes looked up), or raise _Regrouped."""
        q_map = block.q_map
        mine = q_map[q_map >= 0]
        if self.done[mine].any():
            raise _Regrouped()
        self.done[mine] = True
        if len(mine) < len(q_map):
            names = block.groups.uniques.take(from_numpy(np.flatnonzero(q_map < 0))).to_pylist()
            if not self.others.isdisjoint(names):
                raise _Regrouped()
            self.others.update(names)


def compute_file(index: QrelsIndex, run: Any, specs: Iterable, *, run_format: str = "auto",
                 duplicates: str = "error", block_bytes: int = BLOCK_BYTES, progress=None) -> dict:
    """Per-query values of every spec for the run file ``run`` (a path, or a :class:`RunFile`
    opened with the same options), as :func:`ndcg_plugin.engine.block.compute` gives them for the whole
    file read into memory. Whether a run streams is the caller's decision
    (:class:`ndcg_plugin.evaluation.Evaluation`): standard input, text and streams are refused here."""
    specs = list(dict.fromkeys(specs))
    reading.check_options("run", run_format, duplicates)
    opened = run if isinstance(run, RunFile) else None
    if opened is None:
        if not reading.sources.is_path(run) or str(run) == "-":
            raise ValueError(f"compute_file streams a run file from its path; got {run!r} (read standard input, "
                             f"text or a stream with ndcg_plugin.read)")
        opened = RunFile(run, run_format, block_bytes, progress)
    pieces = opened.take_blocks()
    try:
        try:
            return _stream(index, pieces, opened.source, specs, duplicates, opened.depth)
        finally:
            pieces.close()  # the worker stops before the file is read again below
    except _Regrouped:
        block = reading.read_grouped(opened.path, "run", run_format=opened.run_format, duplicates=duplicates,
                                     source=opened.source, progress=opened.progress, queries=index.qid_values)
        return engine.compute(index, top_of_block(block, opened.depth), specs)


def _stream(index, pieces: ReadAhead, source, specs, duplicates, depth: int | None) -> dict:
    out = engine.empty_values(index, specs)
    seen = _Seen(index.nq)
    counts = engine.Unmatched()
    pending_error: Exception | None = None
    any_rows = False
    for part in complete_queries(pieces):
        any_rows = True
        block = Block.of(part).with_q_map(index)  # computed once: for the checks below and the engine
        seen.check(block)
        if pending_error is not None:
            continue  # only parse on: a bad line later in the file is reported first
        block = block.hashed()  # hashed once: for the duplicate check and the qrels lookups
        try:  # a repeated pair in a query the qrels lack is accepted, as trec_eval accepts it
            # rows dropped (duplicates='first' or 'max'): a new block, which the engine completes
            block = resolve_duplicates(block, "run", duplicates, source, only=block.in_qrels())
        except InputError as e:
            pending_error = e
            continue
        values = engine.compute_block(index, top_of_block(block, depth), specs)  # each query whole: cut here
        counts.add(values.unmatched, values.run_queries)
        engine.scatter(out, values)
    if not any_rows:
        raise InputError(source, None, "no run lines found: the input is empty")
    if pending_error is not None:
        raise pending_error
    counts.report()
    return out
