"""Stream the qrels beside the run, when both files are sorted by query id in one order: memory
flat in the size of both files (interaction logs: millions of users, and qrels as large as the run).

Logs written per user are usually sorted by user id, in the ids' string order or, for plain
integer ids, in numeric order. Then each block of whole queries of the run needs only the
qrels of the queries up to its last one: the qrels are read in blocks too (on a worker thread,
as the run is), those qrels rows are indexed on their own (a small
:class:`ndcg_plugin.ranking.qrels_index.QrelsIndex`), the block is evaluated against them, and its values
go to an aggregator (:class:`ndcg_plugin.measures.aggregate.Aggregates`); qrels queries the run lacks
are evaluated as the in-memory engine evaluates them (no row), in the block that passes them.

The work is spread over threads, since numpy and Arrow release the GIL for most of it: the
qrels' reading thread also finds their blocks' group codes and doc fingerprints and applies the
duplicate policy; the main thread finds the run's group codes (its order checks need them) and
hands each block to one of ``sizes.WORKERS`` threads, which evaluate blocks at once; their values go
to the aggregator in the run's order (so that per-query output and the first error reported are
those of one block at a time; tests compare the two).

Whether the files are so sorted is found while reading: the order is chosen from the first
blocks (numeric when every id is a canonical integer, else byte order) and every block of both
files is checked against it. The first query out of order raises :class:`Unsorted`, before any
result is given, and the caller evaluates the files the other way (the qrels indexed whole, the
run streamed), so the result never depends on the way taken. Errors are those of the in-memory
reading: any error in the qrels first (a bad line before a duplicate pair), then the run's (a bad
line before a duplicate pair).
"""
from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .. import sizes
from ..arrays.block import Block
from ..arrays.columns import query_pieces
from ..errors import InputError
from ..ranking.qrels_index import QrelsIndex
from ..reading.ahead import read_ahead
from ..reading.duplicates import resolve_duplicates
from ..reading.formats import LAYOUTS
from ..reading.lines import Parsed
from ..reading.sources import pieces, source_name
from ..sizes import BLOCK_BYTES
from . import block as engine
from .stream import complete_queries

_CANONICAL_INT = r"^(0|[1-9][0-9]{0,17})$"


class Unsorted(Exception):
    """The run and the qrels are not both sorted by query id in one order."""


class _Order:
    """The order of the query ids: their bytes (``numeric`` False), or their integer values."""

    def __init__(self, numeric: bool):
        self.numeric = numeric

    @classmethod
    def of(cls, *samples: pa.Array) -> _Order:
        """Numeric when every sampled id is a canonical integer and each sample increases as
        numbers, else byte order."""
        numeric = cls(True)
        if all(len(s) and pc.all(pc.match_substring_regex(s, _CANONICAL_INT)).as_py() for s in samples):
            if all(numeric.increasing(numeric.keys(s)) for s in samples):
                return numeric
        return cls(False)

    def keys(self, uniques: pa.Array) -> pa.Array:
        if not self.numeric:
            return uniques
        if not pc.all(pc.match_substring_regex(uniques, _CANONICAL_INT)).as_py():
            raise Unsorted()
        return pc.cast(uniques, pa.int64())

    @staticmethod
    def increasing(keys: pa.Array, after: Any = None) -> bool:
        """Strictly increasing, and beyond ``after`` (a scalar key, or None)."""
        n = len(keys)
        if n > 1 and not pc.all(pc.greater(keys.slice(1), keys.slice(0, n - 1))).as_py():
            return False
        return after is None or n == 0 or pc.greater(keys[0], after).as_py()


class _Piece:
    """A block of whole queries, each query one run of rows and the queries strictly increasing in
    the order (checked by the caller), with their keys and where each starts; a split cuts the
    block's group codes and fingerprints as it cuts the rows (a query's code is its position
    among the block's queries)."""

    def __init__(self, block: Block, order: _Order):
        sizes = block.groups.sizes
        self.block, self.keys = block, order.keys(block.groups.uniques)
        self.starts = np.cumsum(sizes) - sizes

    def split(self, last: Any) -> tuple[Block, _Piece | None]:
        """(the block of the queries up to ``last``, the rest as a piece, or None)."""
        count = int(pc.sum(pc.less_equal(self.keys, last)).as_py() or 0)
        nq = len(self.keys)
        if count == nq:
            return self.block, None
        at, n = int(self.starts[count]), len(self.block)
        head = self.block.slice(0, count, 0, at)
        self.block, self.keys, self.starts = self.block.slice(count, nq, at, n), self.keys.slice(count), \
            self.starts[count:] - at
        return head, self


def _one_run_each(codes: np.ndarray) -> bool:
    """Whether each query is one run of rows: group codes (numbered by first appearance) that never
    go down."""
    return len(codes) < 2 or bool(np.all(codes[1:] >= codes[:-1]))


class _Prepared:
    """A qrels block as the reading thread hands it over: the block of its parsed rows (their group
    codes), and the block of the rows kept under the duplicate policy with their doc ids'
    fingerprints, or the policy's error (raised by the consumer, after the later blocks are
    parsed for a bad line)."""

    def __init__(self, raw: Parsed, duplicates: str, source: str):
        block = Block.of(raw)
        self.ids = block.groups.uniques  # the parsed rows' query ids, each once
        self.kept, self.error = block, None
        self.grouped = _one_run_each(block.groups.codes)  # each query one run of rows
        if not self.grouped:
            return  # the consumer declines the side by side for this block
        self.kept = block = block.hashed()
        try:
            self.kept = resolve_duplicates(block, "qrels", duplicates, source).hashed()
        except InputError as e:
            self.error = e


def _prepared(blocks: Iterator[Parsed], duplicates: str, source: str) -> Iterator[_Prepared]:
    """The blocks prepared on the reading thread (their group codes and duplicate check: work
    the main thread, busy with the run, need not do)."""
    for raw in blocks:
        yield _Prepared(raw, duplicates, source)


class _QrelsFailed(Exception):
    """The qrels file's error, raised out of the run's loop (it is reported before any run error)."""

    def __init__(self, error: InputError):
        super().__init__(str(error))
        self.error = error


class _Qrels:
    """The qrels file as blocks of whole queries, checked for order and duplicates, handed out up
    to a given query."""

    def __init__(self, path: Any, duplicates: str, block_bytes: int, columns: Any = None):
        self.source = source_name(path, "<stream>")
        blocks = complete_queries(pieces(path, "qrels", self.source, block_bytes=block_bytes, columns=columns))
        self.pieces = read_ahead(_prepared(blocks, duplicates, self.source), depth=1)
        self.duplicates, self.order = duplicates, None
        self.pending: _Piece | None = None
        self.first: _Prepared | None = None
        self.first_uniques: pa.Array | None = None
        self.first_grouped = False
        self.last: Any = None

    def _raw(self) -> _Prepared | None:
        try:
            return next(self.pieces, None)
        except InputError as e:
            raise _QrelsFailed(e) from None

    def first_ids(self) -> pa.Array:
        """The query ids of the first block (for the choice of the order), read once."""
        if self.first_uniques is None:
            self.first = self._raw()
            if self.first is None:
                raise _QrelsFailed(InputError(self.source, None, "no qrels lines found: the input is empty"))
            self.first_uniques, self.first_grouped = self.first.ids, self.first.grouped
        return self.first_uniques

    def sorted_at_start(self) -> bool:
        """Whether the first block is grouped by query, the queries increasing in byte order or as
        integers: else the files cannot go side by side, which is known before the run is touched
        (its blocks, parsed ahead, then serve the other way)."""
        ids = self.first_ids()
        return self.first_grouped and (_Order(False).increasing(ids) or _Order.of(ids).numeric)

    def _next(self) -> _Piece | None:
        if self.first is not None:
            block, self.first = self.first, None
        else:
            block = self._raw()
            if block is None:
                return None
        if not block.grouped:
            raise Unsorted()  # a query's judgments in two places: the qrels are indexed whole instead
        if block.error is not None:
            while self._raw() is not None:  # a bad line later in the qrels is reported first
                pass
            raise _QrelsFailed(block.error) from None
        piece = _Piece(block.kept, self.order)
        if not self.order.increasing(piece.keys, self.last):
            raise Unsorted()
        if len(piece.keys):
            self.last = piece.keys[len(piece.keys) - 1]
        return piece

    def through(self, last: Any | None) -> Block:
        """The block of the qrels rows of the queries up to ``last`` (every remaining one for None),
        with their group codes and their doc ids' fingerprints."""
        taken = []
        while True:
            piece = self.pending or self._next()
            self.pending = None
            if piece is None:
                break
            head, rest = piece.split(last) if last is not None else (piece.block, None)
            taken.append(head)
            if rest is not None:
                self.pending = rest
                break
        if not taken:
            return Block.of(Parsed.empty(LAYOUTS["qrels"]))
        if len(taken) == 1:
            return taken[0]
        return Block.joined(taken, Parsed.joined([b.rows for b in taken]))

    def drain(self) -> None:
        """Read the rest of the qrels for their errors only."""
        self.pending = None
        while self._next() is not None:
            pass

    def close(self) -> None:
        self.pieces.close()


def evaluate(qrels_path: Any, run_blocks: Callable[[], Iterator[Parsed]], run_source: str, specs: Iterable,
             sink: Any, duplicates: str = "error", block_bytes: int = BLOCK_BYTES, qrels_columns: Any = None) -> None:
    """Evaluate the run's blocks (``run_blocks()``, parsed) against the qrels file at
    ``qrels_path``, both streamed, into ``sink`` (``add(query ids, {spec: Values})`` per block).
    Unsorted when the files are not both sorted in one order: the caller then discards the sink.
    ``run_blocks`` is called only once the qrels' first block is found sorted: when it is not, the
    run is untouched. ``qrels_columns``: a Parquet qrels file's column names (``columns=`` of
    :func:`ndcg_plugin.read`)."""
    specs = list(dict.fromkeys(specs))
    # the qrels in smaller blocks: a run block needs the qrels of its own queries only, and two
    # qrels blocks are held (one read ahead) beside the run's
    qrels = _Qrels(qrels_path, duplicates, max(block_bytes // 4, 1 << 16), qrels_columns)
    run_pieces = None
    try:
        if not qrels.sorted_at_start():
            raise Unsorted()
        run_pieces = run_blocks()
        _merge(qrels, run_pieces, run_source, specs, sink, duplicates)
    except _QrelsFailed as e:
        raise e.error from None
    finally:
        qrels.close()
        close = getattr(run_pieces, "close", None)
        if close is not None:
            close()


def cut_in_pieces(block: Block) -> list[Block]:
    """A block of whole queries (each one run of rows), cut at query boundaries into blocks of about
    ``sizes.PIECE_ROWS`` rows (itself alone when it holds no more), each with what was computed
    of the block cut as the rows are."""
    if len(block) <= sizes.PIECE_ROWS or len(block.groups.sizes) < 2:
        return [block]
    return [block.slice(lo, hi, a, b) for lo, hi, a, b in query_pieces(block.groups.sizes, sizes.PIECE_ROWS)]


def _block(mine: Block, part: Block, run_source: str, specs: list, counts: engine.Unmatched,
           duplicates: str) -> tuple:
    """One run block of whole queries against the qrels of its queries (``mine``: their block, with
    its group codes and doc fingerprints): (the qrels' query ids, every spec's values), or the
    duplicate policy's InputError. Runs on a worker thread."""
    index = QrelsIndex(mine)
    part = part.hashed().with_q_map(index)  # hashed once: for the duplicate check and the qrels lookups
    # a repeated pair in a query the qrels lack is accepted, as trec_eval accepts it; rows dropped
    # under the policy: a new block, which the engine completes
    block = resolve_duplicates(part, "run", duplicates, run_source, only=part.in_qrels())
    return index.qid_values, engine.compute(index, block, specs, counts)


def _collect(future: Future, sink: Any, pending_error: InputError | None) -> InputError | None:
    """A block's values into ``sink`` (blocks are collected in the run's order); the first error in
    that order is the one kept."""
    try:
        qids, values = future.result()
    except InputError as e:
        return pending_error or e
    if pending_error is None:
        sink.add(qids, values)
    return pending_error


def _merge(qrels: _Qrels, run_pieces, run_source: str, specs: list, sink: Any, duplicates: str) -> None:
    counts = engine.Unmatched()
    last, order, pending_error, any_rows = None, None, None, False
    inflight: deque = deque()
    with ThreadPoolExecutor(max_workers=sizes.WORKERS, thread_name_prefix="ndcg-plugin-block") as pool:
        try:
            for whole in complete_queries(run_pieces):
                any_rows = True
                if len(whole) == 0:
                    continue  # a run with no result line: its qrels queries are evaluated at the end
                block = Block.of(whole)
                if not _one_run_each(block.groups.codes):
                    raise Unsorted()  # a query's rows in two places: not grouped by query
                if order is None:
                    order = qrels.order = _Order.of(block.groups.uniques, qrels.first_ids())
                keys = order.keys(block.groups.uniques)
                if not order.increasing(keys, last):
                    raise Unsorted()
                last, seen = keys[len(keys) - 1], 0
                for part in cut_in_pieces(block):
                    seen += len(part.groups.uniques)
                    mine = qrels.through(keys[seen - 1])
                    if pending_error is not None:
                        continue  # only parse on: a bad line later in the run is reported first
                    inflight.append(pool.submit(_block, mine, part, run_source, specs, counts, duplicates))
                    while len(inflight) >= sizes.WORKERS or (inflight and inflight[0].done()):
                        pending_error = _collect(inflight.popleft(), sink, pending_error)
            while inflight:
                pending_error = _collect(inflight.popleft(), sink, pending_error)
        except InputError as e:  # the run's bad line: the qrels are read to their end first, for theirs
            pending_error = e
        finally:
            for future in inflight:
                future.cancel()
    if not any_rows and pending_error is None:
        pending_error = InputError(run_source, None, "no run lines found: the input is empty")
    if order is None:
        qrels.order = _Order(False)
        qrels.first_ids()
    if pending_error is not None:
        qrels.drain()  # an error in the qrels is reported before the run's
        raise pending_error
    rest = qrels.through(None)  # the qrels queries after the run's last one (and their order)
    if len(rest):
        index = QrelsIndex(rest)
        sink.add(index.qid_values, engine.empty_values(index, specs))
    counts.report()
