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
import warnings
import zlib
from collections.abc import Callable, Iterator, Mapping
from typing import Any, BinaryIO

import numpy as np

from ..errors import InputError
from ..sizes import BLOCK_BYTES
from . import columnar, lines
from .formats import BOM, LAYOUTS, column_names, delimiter_of, first_data_line, layout_for
from .lines import Parsed
from .parquet import check_run_format, is_parquet, parquet_pieces

Progress = Callable[[int, int], None]


def is_path(data: Any) -> bool:
    return isinstance(data, os.PathLike) or (isinstance(data, str) and "\n" not in data)


def source_name(data: Any, default: str) -> str:
    if is_path(data):
        return "<stdin>" if str(data) == "-" else str(data)
    return getattr(data, "name", None) if isinstance(getattr(data, "name", None), str) else default


def _open(data: Any, source: str) -> tuple[BinaryIO, int]:
    """A binary stream of the raw content and its size in bytes (0 when unknown)."""
    if is_path(data):
        if str(data) == "-":
            return sys.stdin.buffer, 0
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


def blocks(data: Any, source: str, block_bytes: int = BLOCK_BYTES,
           progress: Progress | None = None) -> Iterator[Chunk]:
    """The content as blocks of whole lines (each ends with a newline, but perhaps the last)."""
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
                continue
            last = chunk.rfind(b"\n")
            if pending:  # the line cut at the end of the previous chunk, completed
                yield Chunk(pending + chunk[: first + 1])
                pending = b""
                start = first + 1
            else:
                start = 0
            if last + 1 > start:
                yield Chunk(chunk, start, last + 1)  # no copy of the bulk of the block
            pending = chunk[last + 1:]
        if pending:
            yield Chunk(pending)
    finally:
        if raw is not sys.stdin.buffer and hasattr(raw, "close") and is_path(data):
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
        check_run_format(run_format, source)
        column_names(kind, columns)  # a bad mapping is refused at once, not where the pieces are read
        return parquet_pieces(data, kind, columns, source, block_bytes, progress)
    if columns is not None:
        raise ValueError("columns= names the columns of a Parquet file or a DataFrame; a text file's columns are "
                         "found by their position")
    return parse_blocks(blocks(data, source, block_bytes, progress), source, kind, run_format)


def parse_blocks(chunks: Iterator[Chunk], source: str, kind: str, run_format: str = "auto",
                 columnar_ok: bool = True) -> Iterator[Parsed]:
    """Parse blocks in order: each with the columnar parser when the file's first data line is
    in the simple form, else (or where it declines) with the line parser. Line numbers run on
    across blocks: a block the columnar parser took has one row per line."""
    layout = delimiter = None
    first_line = 1
    file_start, any_bytes, any_rows = True, False, False
    comments = lines.QrelsComments() if kind == "qrels" else None
    for chunk in chunks:
        any_bytes = any_bytes or len(chunk) > 0
        if file_start and chunk.startswith(b"PAR1") and b"\0" in chunk.head(4096):
            raise InputError(source, None, "Parquet data (it starts with PAR1), which is read from a file: give its "
                             "path, named *.parquet (a file that starts with PAR1 but does not end with it is a "
                             "truncated Parquet file)")
        if file_start and chunk.startswith(BOM):
            warnings.warn(f"{source} starts with a UTF-8 byte order mark: it is dropped (trec_eval would keep it as "
                          f"part of the first query id, which then matches no query)", RuntimeWarning, stacklevel=2)
        if layout is None:
            head = chunk.head(1 << 20)
            if len(head) < len(chunk):
                head = head[: head.rfind(b"\n") + 1]  # whole lines only
            found = first_data_line(head, kind)
            if found is not None:
                layout = layout_for(kind, run_format, found[1])
                delimiter = delimiter_of(*found) if columnar_ok else None
        parsed = None
        if delimiter is not None:
            parsed = columnar.parse_block(chunk, layout, delimiter, file_start)
            if parsed is not None:
                parsed.line = np.arange(first_line, first_line + len(parsed), dtype=np.int64)
                first_line += len(parsed)
                if comments is not None:
                    comments.after = False  # a block the columnar parser takes holds no comment line
        if parsed is None:
            parsed = lines.parse_lines(chunk.tobytes(), source, kind, run_format, layout, first_line, file_start,
                                       comments)
            first_line += chunk.count(b"\n")
        file_start = False
        if parsed is not None:
            layout = layout or parsed.layout
            any_rows = True
            yield parsed
    yield from _end_of_file(source, kind, run_format, comments, any_bytes, any_rows)


def _end_of_file(source: str, kind: str, run_format: str, comments, any_bytes: bool, any_rows: bool):
    """trec_eval's rules at a file's end: a qrels file may not end with a comment line (trec_eval
    10.0 crashes on it); a run with lines but no result line is a run that returned nothing (an
    empty piece: every qrels query scores 0), where a file with no line at all is refused."""
    if comments is not None and comments.after:
        raise InputError(source, comments.line, "the qrels file ends with a comment line, on which trec_eval 10.0 "
                         "crashes (it reads past the line); remove it, or put a judgment after it")
    if kind == "run" and any_bytes and not any_rows:
        warnings.warn(f"{source} holds no result line (only comments or blank lines): every qrels query scores 0, "
                      f"as trec_eval -c scores them", RuntimeWarning, stacklevel=3)
        yield lines.Parsed.empty(LAYOUTS["msmarco" if run_format == "msmarco" else "trec"])
