"""Bytes from where qrels and runs come from (a path, ``-`` for standard input, an open binary
or text stream, or the text itself), gzip detected from the content, cut into blocks of whole
lines; and :func:`parse_blocks`, which parses each block with the columnar parser or, where it
declines, the line parser, numbering lines across blocks. :func:`pieces` reads either a text
file that way or a Parquet file (:mod:`.parquet`)."""
from __future__ import annotations

import gzip
import io
import os
import sys
import threading
import warnings
import zlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, BinaryIO

import numpy as np

from .. import sizes
from ..errors import InputError
from ..sizes import BLOCK_BYTES
from . import columnar, lines
from .formats import BOM, LAYOUTS, Layout, column_names, delimiter_of, first_data_line, layout_for
from .lines import Parsed
from .parquet import check_run_format, files_of, is_parquet, parquet_pieces

Progress = Callable[[int, int], None]


def is_path(data: Any) -> bool:
    return isinstance(data, os.PathLike) or (isinstance(data, str) and "\n" not in data)


def source_name(data: Any, default: str) -> str:
    if is_path(data):
        return "<stdin>" if str(data) == "-" else str(data)
    return getattr(data, "name", None) if isinstance(getattr(data, "name", None), str) else default


#: the warnings of a thread that reads ahead of its consumer (:class:`~ndcg_plugin.reading.ahead.ReadAhead`),
#: held for the consumer to show when it takes the block they came with: two files read at once (the
#: qrels here, the run ahead) then warn in one order, the order in which they are used
_held = threading.local()


_REGISTRY: dict = {}


def warn(message: str) -> None:
    """A RuntimeWarning about an input; on a thread that reads ahead (:func:`hold_warnings`), held
    for its consumer. Its place is this function's, so that under the ``default`` filter a file
    read twice (the side by side peeks at the qrels' first ids) warns once."""
    held = getattr(_held, "messages", None)
    if held is None:
        warnings.warn_explicit(message, RuntimeWarning, __file__, 0, module=__name__, registry=_REGISTRY)
    else:
        held.append(message)


def hold_warnings() -> list[str]:
    """From now on, this thread's :func:`warn` messages are appended to the list returned."""
    _held.messages = []
    return _held.messages


def standard_input() -> BinaryIO:
    """Standard input's binary stream; an InputError when it is closed (``<&-``: Python has no
    ``sys.stdin`` then)."""
    stdin = getattr(sys.stdin, "buffer", None)
    if stdin is None:
        raise InputError("<stdin>", None, "standard input is closed: nothing to read (give a file instead of -)")
    return stdin


def _open(data: Any, source: str) -> tuple[BinaryIO, int]:
    """A binary stream of the raw content and its size in bytes (0 when unknown)."""
    if is_path(data):
        if str(data) == "-":
            return standard_input(), 0
        try:
            f = open(data, "rb")  # noqa: SIM115 - closed by blocks()
        except FileNotFoundError:
            raise InputError(source, None, "file not found") from None
        except IsADirectoryError:
            raise InputError(source, None, "is a directory, expected a qrels or run file") from None
        except PermissionError:
            raise InputError(source, None, "permission denied") from None
        return f, os.fstat(f.fileno()).st_size
    if isinstance(data, (bytes, bytearray)):
        return io.BytesIO(data), len(data)
    if isinstance(data, str):  # the text of a file
        raw = data.encode("utf-8")
        return io.BytesIO(raw), len(raw)
    if hasattr(data, "read"):
        stream = getattr(data, "buffer", None)
        if stream is not None and hasattr(stream, "read"):
            return stream, 0
        return _TextAsBytes(data), 0
    raise TypeError(f"not a readable source: {type(data).__name__}")


class _TextAsBytes:
    """A text stream read as UTF-8 bytes."""

    def __init__(self, stream):
        self.stream = stream

    def read(self, n: int = -1) -> bytes:
        chunk = self.stream.read(n)
        return chunk.encode("utf-8") if isinstance(chunk, str) else chunk

    def close(self) -> None:
        pass


class _Counting:
    """Counts the raw (possibly compressed) bytes read, for progress."""

    def __init__(self, raw: BinaryIO):
        self.raw = raw
        self.done = 0

    def read(self, n: int = -1) -> bytes:
        chunk = self.raw.read(n)
        self.done += len(chunk)
        return chunk


class Chunk:
    """Whole lines: ``data[start:end]`` of a bytes object, without copying them out."""

    __slots__ = ("data", "start", "end")

    def __init__(self, data: bytes, start: int = 0, end: int | None = None):
        self.data, self.start, self.end = data, start, len(data) if end is None else end

    def __len__(self) -> int:
        return self.end - self.start

    def find(self, sub: bytes) -> int:
        at = self.data.find(sub, self.start, self.end)
        return at - self.start if at >= 0 else -1

    def count(self, sub: bytes) -> int:
        return self.data.count(sub, self.start, self.end)

    def startswith(self, prefix: bytes) -> bool:
        return self.data.startswith(prefix, self.start, self.end)

    def endswith(self, suffix: bytes) -> bool:
        return self.data.endswith(suffix, self.start, self.end)

    def head(self, n: int) -> bytes:
        return self.data[self.start: min(self.start + n, self.end)]

    def tobytes(self) -> bytes:
        if self.start == 0 and self.end == len(self.data):
            return self.data
        return self.data[self.start: self.end]

    def buffer(self):
        """The lines as an Arrow buffer over this object's bytes (no copy): for synchronous use
        only, see :meth:`arrow_copy`."""
        import pyarrow as pa
        return pa.py_buffer(self.data).slice(self.start, len(self))

    def arrow_copy(self, pool):
        """The lines copied into memory Arrow owns (from ``pool``). What Arrow reads on its own
        threads must not be a Python object: Arrow's CSV reader reads ahead on its IO threads and
        may release its last reference to the input there after returning; releasing a Python
        buffer takes the GIL, and a thread that asks for the GIL while the interpreter exits is
        ended inside Arrow's C++ code: "terminate called without an active exception" (SIGABRT)
        on an exit path, about once in a hundred short runs."""
        import numpy as np
        import pyarrow as pa
        out = pa.allocate_buffer(len(self), memory_pool=pool)
        np.frombuffer(out, dtype=np.uint8)[:] = np.frombuffer(self.data, dtype=np.uint8, count=len(self),
                                                              offset=self.start)
        return out


class LineTooLong(InputError):
    """A line longer than ``sizes.LINE_BYTES``, found by :func:`blocks`, which counts no lines:
    :func:`parse_blocks` names it by its number."""


def _too_long(source: str) -> LineTooLong:
    return LineTooLong(source, None, f"a line longer than {sizes.LINE_BYTES:,} bytes, refused before it is read "
                       "whole: trec_eval's reader is written for lines of 10,000 bytes (MAXLINE in "
                       "get_trec_results.c) and no id or score comes near this; a file without line ends, or not "
                       "a qrels or run file?")


def _check_length(length: int, source: str) -> None:
    """Refuse a line of ``length`` bytes (so far) when it is longer than ``sizes.LINE_BYTES``."""
    if length > sizes.LINE_BYTES:
        raise _too_long(source)


def _long_line_at(data: bytes, start: int, end: int) -> int:
    """Where the first line of ``data[start:end]`` (whole lines) longer than ``sizes.LINE_BYTES``
    bytes (its newline not counted) starts, or -1: each window of that many bytes and one must
    hold a newline; the windows jump from newline to the last newline in them (a few a block)."""
    most, pos = sizes.LINE_BYTES, start
    while end - pos > most + 1:
        newline = data.rfind(b"\n", pos, pos + most + 1)
        if newline < 0:
            return pos
        pos = newline + 1
    return -1


def blocks(data: Any, source: str, block_bytes: int = BLOCK_BYTES,
           progress: Progress | None = None) -> Iterator[Chunk]:
    """The content as blocks of whole lines (each ends with a newline, but perhaps the last). A
    line longer than ``sizes.LINE_BYTES`` is refused (:class:`LineTooLong`, after the lines
    before it) as soon as a block shows it, so that at most that and a block are held."""
    raw, total = _open(data, source)
    counting = _Counting(raw)
    try:
        head = _read(counting, 2, source, False)
        gz = head == b"\x1f\x8b"
        if not gz and source.endswith(".gz") and head:
            raise InputError(source, None, "the name ends in .gz but the content is not gzip; rename the file "
                             "or compress it")
        stream: Any = counting
        pending = head
        if gz:
            stream = gzip.GzipFile(fileobj=_Prefixed(head, counting), mode="rb")
            pending = b""
        while True:
            chunk = _read(stream, block_bytes, source, gz)
            if progress is not None:
                progress(counting.done, total)
            if not chunk:
                break
            first = chunk.find(b"\n")
            if first < 0:  # a line longer than a block
                pending += chunk
                _check_length(len(pending), source)
                continue
            start = 0
            if pending:  # the line cut at the end of the previous chunk, completed
                _check_length(len(pending) + first, source)
                yield Chunk(pending + chunk[: first + 1])
                start = first + 1
            last = chunk.rfind(b"\n")
            long = _long_line_at(chunk, start, last + 1)
            if long >= 0:
                if long > start:
                    yield Chunk(chunk, start, long)
                raise _too_long(source)
            if last + 1 > start:
                yield Chunk(chunk, start, last + 1)  # no copy of the bulk of the block
            pending = chunk[last + 1:]
            _check_length(len(pending), source)
        if pending:
            yield Chunk(pending)
    finally:
        if raw is not getattr(sys.stdin, "buffer", None) and hasattr(raw, "close") and is_path(data):
            raw.close()


def _read(stream: Any, n: int, source: str, gz: bool) -> bytes:
    """``stream.read(n)``, its failures as one InputError naming the file: a read error of the
    system (EIO, a file removed from a network mount), or gzip data that is corrupt or cut short."""
    try:
        return stream.read(n)
    except OSError as e:
        if e.errno is not None:
            raise InputError(source, None, f"cannot be read: {e.strerror or e} (errno {e.errno})") from None
        if not gz:
            raise InputError(source, None, f"cannot be read: {e}") from None
        raise InputError(source, None, f"corrupt or truncated gzip data ({e})") from None
    except (EOFError, zlib.error) as e:
        raise InputError(source, None, f"corrupt or truncated gzip data ({e})") from None


class _Prefixed:
    """A stream with bytes already read put back in front."""

    def __init__(self, head: bytes, stream):
        self.head = head
        self.stream = stream

    def read(self, n: int = -1) -> bytes:
        if self.head:
            out, self.head = self.head, b""
            if n is None or n < 0:
                return out + self.stream.read()
            return out + self.stream.read(max(n - len(out), 0)) if n > len(out) else out
        return self.stream.read(n)


def pieces(data: Any, kind: str, source: str, run_format: str = "auto", block_bytes: int = BLOCK_BYTES,
           progress: Progress | None = None, columns: Mapping[str, str] | None = None) -> Iterator[Parsed]:
    """A file's parsed pieces, in order, before the duplicate policy: a text file's blocks
    (:func:`parse_blocks`, lines numbered from 1) or a Parquet file's batches
    (:func:`.parquet.parquet_pieces`, rows numbered from 0). ``columns``: the names of a Parquet
    file's columns (see :func:`.formats.column_names`)."""
    if is_parquet(data):  # pyarrow.parquet is imported only there
        if run_format != "auto" and is_path(data) and os.path.isdir(data):
            files_of(os.fspath(data), source)  # a directory of other files is refused as such, not as Parquet
        check_run_format(run_format, source)
        column_names(kind, columns)  # a bad mapping is refused at once, not where the pieces are read
        return parquet_pieces(data, kind, columns, source, block_bytes, progress)
    if columns is not None:
        raise ValueError("columns= names the columns of a Parquet file or a DataFrame; a text file's columns are "
                         "found by their position")
    return parse_blocks(blocks(data, source, block_bytes, progress), source, kind, run_format)


@dataclass
class _Reading:
    """Where :func:`parse_blocks` is in a file: the layout and delimiter found from its first data
    line, the number of the next block's first line, and what the rules at the file's start and
    end need (:func:`_start`, :func:`_held_blank`, :func:`_end_of_file`)."""
    kind: str
    run_format: str
    columnar_ok: bool
    comments: lines.QrelsComments | None
    layout: Layout | None = None
    delimiter: bytes | None = None
    first_line: int = 1
    file_start: bool = True
    any_bytes: bool = False
    any_rows: bool = False
    #: the file starts with a byte order mark followed, so far, by blanks only (its warning waits)
    bom_blank: bool = False
    #: qrels: the first of those blank lines, refused once a line with text follows
    blank_line: int | None = None


def parse_blocks(chunks: Iterator[Chunk], source: str, kind: str, run_format: str = "auto",
                 columnar_ok: bool = True) -> Iterator[Parsed]:
    """Parse blocks in order: each with the columnar parser when the file's first data line is
    in the simple form, else (or where it declines) with the line parser. Line numbers run on
    across blocks: a block the columnar parser took has one row per line. A line too long
    (:class:`LineTooLong`, from :func:`blocks`) is refused with its number."""
    at = _Reading(kind, run_format, columnar_ok, lines.QrelsComments() if kind == "qrels" else None)
    try:
        for chunk in chunks:
            at.any_bytes = at.any_bytes or len(chunk) > 0
            if at.file_start:
                _start(chunk, source, at)
            if at.bom_blank and _held_blank(chunk, source, at):
                continue
            parsed = _parse(chunk, source, at)
            at.file_start = False
            if parsed is not None:
                at.layout = at.layout or parsed.layout
                at.any_rows = True
                yield parsed
    except LineTooLong as e:
        raise InputError(source, at.first_line, e.reason) from None
    yield from _end_of_file(source, at)


def _start(chunk: Chunk, source: str, at: _Reading) -> None:
    """The checks of a file's first block: Parquet bytes are refused; a byte order mark is dropped
    with a warning, which waits while only blanks follow it (:func:`_held_blank`)."""
    if chunk.startswith(b"PAR1") and b"\0" in chunk.head(4096):
        raise InputError(source, None, "Parquet data (it starts with PAR1), which is read from a file: give its "
                         "path, named *.parquet (a file that starts with PAR1 but does not end with it is a "
                         "truncated Parquet file)")
    if chunk.startswith(BOM):
        at.bom_blank = True


def _held_blank(chunk: Chunk, source: str, at: _Reading) -> bool:
    """For a file that starts with a byte order mark and, so far, blanks only: whether ``chunk``
    holds blanks only too (then it is passed over, its lines counted: at the file's end such a
    file is refused as empty, as trec_eval refuses it). Else the warning that the mark is dropped,
    and a blank qrels line before is refused, as the line parser refuses it."""
    skip = len(BOM) if at.file_start else 0
    if not chunk.head(skip + 256)[skip:].strip() and not chunk.tobytes()[skip:].strip():  # blanks: C isspace
        if at.kind == "qrels" and at.blank_line is None:
            at.blank_line = at.first_line
        at.first_line += chunk.count(b"\n")
        at.file_start = False
        return True
    at.bom_blank = False
    warn(f"{source} starts with a UTF-8 byte order mark: it is dropped (trec_eval would keep it as part of the "
         f"first query id, which then matches no query)")
    if at.blank_line is not None:
        raise lines.blank_qrels_line(source, at.blank_line)
    return False


def _parse(chunk: Chunk, source: str, at: _Reading) -> Parsed | None:
    """One block parsed, by the columnar parser where it takes it, else by the line parser."""
    if at.layout is None:
        head = chunk.head(1 << 20)
        if len(head) < len(chunk):
            head = head[: head.rfind(b"\n") + 1]  # whole lines only
        found = first_data_line(head, at.kind)
        if found is not None:
            at.layout = layout_for(at.kind, at.run_format, found[1])
            at.delimiter = delimiter_of(*found) if at.columnar_ok else None
    if at.delimiter is not None:
        parsed = columnar.parse_block(chunk, at.layout, at.delimiter, at.file_start)
        if parsed is not None:
            parsed.line = np.arange(at.first_line, at.first_line + len(parsed), dtype=np.int64)
            at.first_line += len(parsed)
            if at.comments is not None:
                at.comments.after = False  # a block the columnar parser takes holds no comment line
            return parsed
    parsed = lines.parse_lines(chunk.tobytes(), source, at.kind, at.run_format, at.layout, at.first_line,
                               at.file_start, at.comments)
    at.first_line += chunk.count(b"\n")
    return parsed


def _end_of_file(source: str, at: _Reading):
    """trec_eval's rules at a file's end: a qrels file may not end with a comment line (trec_eval
    10.0 crashes on it); a run with lines but no result line is a run that returned nothing (an
    empty piece: every qrels query scores 0), where a file with no line at all is refused, and so
    is a file of a byte order mark and blanks (trec_eval: "Malformed line 1")."""
    if at.bom_blank:
        raise InputError(source, None, f"no {at.kind} lines found: the input is empty (a UTF-8 byte order mark "
                         "and blanks only, which trec_eval refuses too: 'Malformed line 1')")
    if at.comments is not None and at.comments.after:
        raise InputError(source, at.comments.line, "the qrels file ends with a comment line, on which trec_eval 10.0 "
                         "crashes (it reads past the line); remove it, or put a judgment after it")
    if at.kind == "run" and at.any_bytes and not at.any_rows:
        warn(f"{source} holds no result line (only comments or blank lines): every qrels query scores 0, "
             f"as trec_eval -c scores them")
        yield lines.Parsed.empty(LAYOUTS["msmarco" if at.run_format == "msmarco" else "trec"])
