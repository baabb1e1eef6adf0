"""A run file read and parsed on a worker thread, ahead of the thread that evaluates it.

:class:`RunFile` starts reading at once: the CLI opens the run as soon as it knows the run will
be streamed, before the engine's modules are imported and before the qrels are read, so the
first blocks are parsed meanwhile. This module imports only what parsing needs (numpy, pyarrow
and its CSV reader), not ``pyarrow.compute`` or the engine; a test keeps it that way.
"""
from __future__ import annotations

import os
import queue
import threading
from collections.abc import Iterator, Mapping
from typing import Any

from ..sizes import BLOCK_BYTES
from . import sources
from .parquet import ParquetSource
from .sources import source_name


class ReadAhead:
    """The items of ``items``, produced on a worker thread (started at once) up to ``depth``
    ahead of the consumer: the next block is read and parsed (Arrow and numpy release the GIL)
    while this one is evaluated. Items, and the exception that ends them, come in their order;
    :meth:`close` (or the consumer's ``for`` loop ending early) stops the worker at its next
    item and closes ``items``."""

    _END = object()

    def __init__(self, items: Iterator, depth: int = 2):
        self._slots: queue.Queue = queue.Queue(maxsize=depth)
        self._stop = threading.Event()
        self._done = False
        self._worker = threading.Thread(target=self._work, args=(items,), name="ndcg-plugin-read-ahead", daemon=True)
        self._worker.start()

    def _put(self, entry) -> bool:
        while not self._stop.is_set():
            try:
                self._slots.put(entry, timeout=0.05)
                return True
            except queue.Full:
                continue
        return False

    def _work(self, items: Iterator) -> None:
        held = sources.hold_warnings()  # shown by the consumer with the item they came with (__next__)
        try:
            for item in items:
                if not self._put((item, None, _taken(held))) or self._stop.is_set():
                    break  # closed: no further item is read
            else:
                self._put((self._END, None, _taken(held)))
        except BaseException as e:  # noqa: BLE001 - handed to the consumer, raised there
            self._put((self._END, e, _taken(held)))
        finally:
            close = getattr(items, "close", None)
            if close is not None:
                close()

    def __iter__(self) -> ReadAhead:
        return self

    def __next__(self):
        if self._done:
            raise StopIteration
        item, error, messages = self._get()
        for message in messages:  # in the consumer's thread, in the order of the items
            sources.warn(message)
        if item is self._END:
            self.close()
            if error is not None:
                raise error
            raise StopIteration
        return item

    def _get(self) -> tuple:
        """The next entry; a MemoryError when the worker ended without handing one over (it could
        not even put its exception: memory ran out on its thread), never a wait for ever."""
        while True:
            try:
                return self._slots.get(timeout=0.1)
            except queue.Empty:
                if not self._worker.is_alive() and self._slots.empty():
                    raise MemoryError("the read-ahead thread ended without its next block") from None

    def close(self) -> None:
        self._done = True
        self._stop.set()
        try:  # items not taken are dropped, which wakes a worker waiting for room at once
            while True:
                self._slots.get_nowait()
        except queue.Empty:
            pass
        self._worker.join()


def _taken(held: list[str]) -> tuple[str, ...]:
    """The messages held so far, the list emptied."""
    out = tuple(held)
    held.clear()
    return out


def read_ahead(items: Iterator, depth: int = 2) -> Iterator:
    """See :class:`ReadAhead`: a generator over it, so that leaving a ``for`` loop closes it."""
    ahead = ReadAhead(items, depth)
    try:
        yield from ahead
    finally:
        ahead.close()


class RunFile:
    """A run file opened for streaming: its first blocks are read and parsed on a worker
    thread from the moment it is opened (the CLI opens it before reading the qrels).

    A Parquet run (:func:`~ndcg_plugin.reading.parquet.is_parquet`) streams as pieces of about
    ``block_bytes // parquet.BYTES_PER_ROW`` rows, whose ``line`` is the 0-based row position;
    ``columns`` maps the ir-measures column names to its own (``{"query_id": "user_id"}``).
    ``path`` is then what reads the whole run again (with ``columns``). ``depth``: each query's
    top rows are evaluated, not all (trec_eval's ``-M``; None: all): the engine cuts them."""

    def __init__(self, path: Any, run_format: str = "auto", block_bytes: int = BLOCK_BYTES, progress=None,
                 columns: Mapping[str, str] | None = None, depth: int | None = None):
        self.run_format, self.progress, self.depth = run_format, progress, depth
        self.source = source_name(path, "<stream>")
        pieces = sources.pieces(path, "run", self.source, run_format, block_bytes, progress, columns)
        self.path = ParquetSource(os.fspath(path), columns) if columns is not None else path
        # one parsed block waits while the next is parsed: a deeper queue only holds more memory
        # (the side by side's workers hold blocks of their own); two ahead measured no faster
        self.blocks: ReadAhead | None = ReadAhead(pieces, depth=1)

    def take_blocks(self) -> ReadAhead:
        """The parsed blocks (once)."""
        if self.blocks is None:
            raise RuntimeError(f"the blocks of {self.source} were already taken")
        out, self.blocks = self.blocks, None
        return out

    def untouched(self) -> bool:
        """Whether the blocks are still here (not taken): then they can still be read from the start."""
        return self.blocks is not None

    def close(self) -> None:
        if self.blocks is not None:
            self.blocks.close()
            self.blocks = None
