"""Stream the qrels beside the run, when both files are sorted by query id in one order: memory
flat in the size of both files (interaction logs: millions of users, and qrels as large as the run).

Logs written per user are usually sorted by user id, in the ids' string order or, for plain
integer ids, in numeric order. Then each block of whole queries of the run needs only the
qrels of the queries up to its last one: the qrels are read in blocks too (on a worker thread,
as the run is), those qrels rows are indexed on their own (a small
:class:`ndcg_plugin.qrels_index.QrelsIndex`), the block is evaluated against them, and its values
go to an aggregator (:class:`ndcg_plugin.aggregate.Aggregates`); qrels queries the run lacks
are evaluated as the in-memory engine evaluates them (no row), in the block that passes them.

Whether the files are so sorted is found while reading: the order is chosen from the first
blocks (numeric when every id is a canonical integer, else byte order) and every block of both
files is checked against it. The first query out of order raises :class:`Unsorted`, before any
result is given, and the caller evaluates the files the other way (the qrels indexed whole, the
run streamed), so the result never depends on the way taken. Errors are those of the in-memory
reading: any error in the qrels first (a bad line before a duplicate pair), then the run's (a bad
line before a duplicate pair).
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from . import engine, ranking
from .columns import fingerprints, group_codes
from .errors import BLOCK_BYTES, InputError
from .qrels_index import QrelsIndex
from .reading import concat
from .reading.ahead import read_ahead
from .reading.duplicates import resolve_duplicates
from .reading.formats import LAYOUTS
from .reading.lines import Parsed
from .reading.sources import pieces, source_name
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
    the order (checked by the caller), with their keys, where each starts, and the block's
    :func:`~ndcg_plugin.columns.group_codes` (``groups``), which a split cuts as it cuts the rows:
    a query's code is its position among the block's queries."""

    def __init__(self, parsed: Parsed, order: _Order, groups: tuple):
        codes, uniques, sizes = groups
        self.parsed, self.groups, self.keys = parsed, groups, order.keys(uniques)
        self.starts = np.cumsum(sizes) - sizes

    def split(self, last: Any) -> tuple[tuple[Parsed, tuple], _Piece | None]:
        """((the rows of the queries up to ``last``, their groups), the rest as a piece, or None)."""
        count = int(pc.sum(pc.less_equal(self.keys, last)).as_py() or 0)
        if count == len(self.keys):
            return (self.parsed, self.groups), None
        at = int(self.starts[count])
        codes, uniques, sizes = self.groups
        head = (_slice(self.parsed, 0, at), (codes[:at], uniques.slice(0, count), sizes[:count]))
        self.parsed, self.keys, self.starts = _slice(self.parsed, at, len(self.parsed)), self.keys.slice(count), \
            self.starts[count:] - at
        self.groups = (codes[at:] - codes.dtype.type(count), uniques.slice(count), sizes[count:])
        return head, self


def _one_run_each(codes: np.ndarray) -> bool:
    """Whether each query is one run of rows: group codes (numbered by first appearance) that never
    go down."""
    return len(codes) < 2 or bool(np.all(codes[1:] >= codes[:-1]))


def _joined(groups: list[tuple]) -> tuple:
    """The group codes of blocks put one after the other, when no query is in two of them (the
    pieces of one sorted file): each block's codes shifted by the queries before it."""
    offsets = np.cumsum([0] + [len(u) for _, u, _ in groups[:-1]])
    dtype = np.int32 if int(offsets[-1]) + len(groups[-1][1]) < 2**31 else np.int64
    codes = np.concatenate([c.astype(dtype) + dtype(o) for (c, _, _), o in zip(groups, offsets, strict=True)])
    uniques = pa.concat_arrays([u if isinstance(u, pa.Array) else u.combine_chunks() for _, u, _ in groups])
    return codes, uniques, np.concatenate([s for _, _, s in groups])


def _slice(p: Parsed, lo: int, hi: int) -> Parsed:
    return Parsed(p.layout, p.query_id.slice(lo, hi - lo), p.doc_id.slice(lo, hi - lo), p.value[lo:hi], p.line[lo:hi])


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
        self.pieces = read_ahead(complete_queries(pieces(path, "qrels", self.source, block_bytes=block_bytes,
                                                         columns=columns)), depth=1)
        self.duplicates, self.order = duplicates, None
        self.pending: _Piece | None = None
        self.first: Parsed | None = None
        self.first_groups: tuple | None = None
        self.last: Any = None

    def _raw(self) -> Parsed | None:
        try:
            return next(self.pieces, None)
        except InputError as e:
            raise _QrelsFailed(e) from None

    def first_ids(self) -> pa.Array:
        """The query ids of the first block (for the choice of the order), read once."""
        if self.first_groups is None:
            self.first = self._raw()
            if self.first is None:
                raise _QrelsFailed(InputError(self.source, None, "no qrels lines found: the input is empty"))
            self.first_groups = group_codes(self.first.query_id)
        return self.first_groups[1]

    def sorted_at_start(self) -> bool:
        """Whether the first block is grouped by query, the queries increasing in byte order or as
        integers: else the files cannot go side by side, which is known before the run is touched
        (its blocks, parsed ahead, then serve the other way)."""
        ids = self.first_ids()
        return _one_run_each(self.first_groups[0]) and (_Order(False).increasing(ids) or _Order.of(ids).numeric)

    def _next(self) -> _Piece | None:
        if self.first is not None:
            raw, groups, self.first = self.first, self.first_groups, None
        else:
            raw = self._raw()
            if raw is None:
                return None
            groups = group_codes(raw.query_id)
        if not _one_run_each(groups[0]):
            raise Unsorted()  # a query's judgments in two places: the qrels are indexed whole instead
        try:
            kept = resolve_duplicates(raw, "qrels", self.duplicates, self.source, q_codes=groups[0])
        except InputError as e:
            while self._raw() is not None:  # a bad line later in the qrels is reported first
                pass
            raise _QrelsFailed(e) from None
        piece = _Piece(kept, self.order, groups if kept is raw else group_codes(kept.query_id))
        if not self.order.increasing(piece.keys, self.last):
            raise Unsorted()
        if len(piece.keys):
            self.last = piece.keys[len(piece.keys) - 1]
        return piece

    def through(self, last: Any | None) -> tuple[Parsed, tuple | None]:
        """The qrels rows of the queries up to ``last`` (every remaining one for None), and their
        group codes (None for no row)."""
        taken = []
        while True:
            piece = self.pending or self._next()
            self.pending = None
            if piece is None:
                break
            head, rest = piece.split(last) if last is not None else ((piece.parsed, piece.groups), None)
            taken.append(head)
            if rest is not None:
                self.pending = rest
                break
        if not taken:
            return Parsed.empty(LAYOUTS["qrels"]), None
        if len(taken) == 1:
            return taken[0]
        return concat([t for t, _ in taken]), _joined([g for _, g in taken])

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


def _merge(qrels: _Qrels, run_pieces, run_source: str, specs: list, sink: Any, duplicates: str) -> None:
    counts: list = []
    last, order, pending_error, any_rows = None, None, None, False
    try:
        for part in complete_queries(run_pieces):
            any_rows = True
            if len(part) == 0:
                continue  # a run with no result line: its qrels queries are evaluated at the end
            groups = group_codes(part.query_id)
            if not _one_run_each(groups[0]):
                raise Unsorted()  # a query's rows in two places: not grouped by query
            if order is None:
                order = qrels.order = _Order.of(groups[1], qrels.first_ids())
            keys = order.keys(groups[1])
            if not order.increasing(keys, last):
                raise Unsorted()
            last = keys[len(keys) - 1]
            mine, mine_groups = qrels.through(last)
            if pending_error is not None:
                continue  # only parse on: a bad line later in the run is reported first
            index = QrelsIndex(mine, groups=mine_groups)
            q_map = index.code_of(groups[1])
            doc_fp = fingerprints(part.doc_id)  # hashed once: for the duplicate check and the qrels lookups
            try:  # a repeated pair in a query the qrels lack is accepted, as trec_eval accepts it
                table = resolve_duplicates(part, "run", duplicates, run_source, q_codes=groups[0],
                                           only=(q_map >= 0)[groups[0]], docs_fp=doc_fp)
            except InputError as e:
                pending_error = e
                continue
            whole = len(table) == len(part)  # else the engine recomputes what depends on the rows
            sink.add(index.qid_values, engine.compute(index, table, specs, counts, groups if whole else None,
                                                      q_map if whole else None, doc_fp if whole else None))
    except InputError as e:  # the run's bad line: the qrels are read to their end first, for theirs
        pending_error = e
    if not any_rows and pending_error is None:
        pending_error = InputError(run_source, None, "no run lines found: the input is empty")
    if order is None:
        qrels.order = _Order(False)
        qrels.first_ids()
    if pending_error is not None:
        qrels.drain()  # an error in the qrels is reported before the run's
        raise pending_error
    rest, rest_groups = qrels.through(None)  # the qrels queries after the run's last one (also checks their order)
    if len(rest):
        index = QrelsIndex(rest, groups=rest_groups)
        sink.add(index.qid_values, engine.empty_values(index, specs))
    ranking.report_unmatched(sum(u for u, _ in counts), sum(t for _, t in counts))
