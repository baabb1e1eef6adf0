"""The columnar parser: a block of well-formed lines read by Arrow's CSV reader.

It returns exactly what :func:`ndcg_plugin.reading.lines.parse_lines` would (without line
numbers), or None, and the caller then uses the line parser. Arrow splits on one delimiter
byte, so a block is declined when anything could make the two differ:

- another column count on any line, a blank line (Arrow reads it as a row of one field), a
  ``\\r`` that does not end a line (Arrow ends a line there; trec_eval reads whitespace);
- an empty field (two delimiters in a row, or one at either end of a line) or an ASCII
  whitespace byte inside any field (there the line parser splits); only a TREC run's last
  field may hold whitespace, since more trailing fields are allowed and ignored;
- a query id starting with ``#`` (a comment line, for both runs and qrels);
- a byte order mark at the start of a block that is not the file's start (Arrow drops it);
- a NUL byte anywhere in the block (refused: the line parser names its line);
- a value outside the number syntax (Arrow also reads ``0x10`` as an integer, ``+1`` only as a
  decimal, and ``nan``/``inf``), or invalid UTF-8 anywhere in the block (the line parser
  decodes whole lines; the CSV reader is told not to check, the block is checked once).

Blank-free, comment-free blocks also let the caller count lines as rows.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv

from ..arrays import speedups
from ..arrays.columns import to_numpy
from .formats import BOM, Layout
from .lines import Parsed

_STR = pa.large_string()
#: the memory pool of the parsed columns. Arrow's default (mimalloc) gives the CSV reader's
#: threads fresh pages for each block, which the kernel zeroes on first touch (2 MiB at a time
#: with transparent huge pages): 10-15% of a streamed run's CPU on the benchmark machine. The
#: system allocator reuses what the previous block freed. Passed to each call; no global setting.
POOL = pa.system_memory_pool()
_BIN = pa.large_binary()
_WS = np.zeros(256, dtype=bool)
_WS[[9, 10, 11, 12, 13, 32]] = True
_DIGIT = np.zeros(256, dtype=bool)
_DIGIT[ord("0"): ord("9") + 1] = True
_POW10 = 10 ** np.arange(19, dtype=np.int64)
# the ASCII whitespace bytes other than the delimiter and line ends (a \r is one only before \n)
_OTHER_WS = {b" ": (b"\t", b"\x0b", b"\x0c"), b"\t": (b" ", b"\x0b", b"\x0c")}


def _pieces(column: pa.ChunkedArray):
    """(offsets, bytes) of each chunk of a string or binary column."""
    for chunk in column.chunks:
        n = len(chunk)
        if n == 0:
            continue
        width = np.int64 if chunk.type in (_STR, _BIN) else np.int32
        offsets = np.frombuffer(chunk.buffers()[1], dtype=width)[chunk.offset: chunk.offset + n + 1]
        buf = chunk.buffers()[2]
        data = np.frombuffer(buf, dtype=np.uint8) if buf is not None else np.zeros(0, dtype=np.uint8)
        yield offsets.astype(np.int64), data[offsets[0]: offsets[-1]]


def _clean(column: pa.ChunkedArray, whitespace_ok: bool = False) -> bool:
    """No empty field and (unless allowed) no ASCII whitespace byte inside a field."""
    for offsets, data in _pieces(column):
        if np.any(offsets[1:] == offsets[:-1]):
            return False
        if not whitespace_ok and np.count_nonzero(data <= 32) and _WS[data].any():
            return False
    return True


def _utf8(chunk) -> bool:
    """The block is valid UTF-8, as the line parser requires of every line; then so is each of its
    fields, since UTF-8 never uses an ASCII byte inside a multi-byte character and fields are cut
    at ASCII bytes. One pass for the largest byte (an ASCII block is valid); else Arrow's
    validation of the block as one string."""
    raw = np.frombuffer(chunk.data, dtype=np.uint8, count=len(chunk), offset=chunk.start)
    if len(raw) == 0 or raw.max() < 0x80:
        return True
    offsets = pa.py_buffer(np.array([0, len(chunk)], dtype=np.int64))
    try:
        pa.Array.from_buffers(_STR, 1, [None, offsets, chunk.buffer()]).validate(full=True)
    except pa.ArrowInvalid:
        return False
    return True


def _integers(column: pa.ChunkedArray) -> np.ndarray | None:
    """The column as int64 when every field is ``-?[0-9]+`` of at most 18 digits; None
    otherwise (the line parser then decides: a ``+`` sign, a longer number, out of range).

    Read here with numpy rather than by Arrow's cast, which also takes hexadecimal."""
    parts = []
    for offsets, data in _pieces(column):
        starts, ends = offsets[:-1] - offsets[0], offsets[1:] - offsets[0]
        length = ends - starts
        if np.any(length == 0):
            return None
        if len(data) == len(starts):  # every field one byte (graded labels 0-9): each is its digit
            if not _DIGIT[data].all():
                return None
            parts.append(data.astype(np.int64) - ord("0"))
            continue
        negative = data[starts] == ord("-")
        digits = length - negative
        if np.any(digits == 0) or np.any(digits > 18):
            return None
        body = data.copy()
        body[starts[negative]] = ord("0")  # the sign, read as a leading zero
        if not _DIGIT[body].all():
            return None
        # each byte's power of ten: its distance from the end of its field
        field = np.repeat(np.arange(len(starts)), length)
        power = (ends[field] - 1) - np.arange(len(body))
        values = np.add.reduceat((body - ord("0")).astype(np.int64) * _POW10[power], starts)
        parts.append(np.where(negative, -values, values))
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)


def empty_field(chunk, delimiter: bytes, first_column: bool, has_cr: bool) -> bool:
    """True when some field of the block is empty: a delimiter followed by a delimiter or a line
    end, or ending the block; with ``first_column``, also one starting a line. Read from the
    bytes, for the columns Arrow is not asked to convert. By the C loop when it is at hand
    (:mod:`ndcg_plugin.arrays.speedups`; the same answer)."""
    found = speedups.empty_field(chunk.data, chunk.start, chunk.end, delimiter, first_column, has_cr)
    if found is not None:
        return found
    if chunk.endswith(delimiter) or (first_column and chunk.startswith(delimiter)):
        return True
    pairs = [delimiter + delimiter, delimiter + b"\n"] + ([delimiter + b"\r"] if has_cr else [])
    if first_column:
        pairs.append(b"\n" + delimiter)
    codes = [int.from_bytes(p, "little") for p in pairs]
    for shift in (0, 1):  # the byte pairs starting at even, then at odd offsets
        count = (len(chunk) - shift) // 2
        if count > 0:
            words = np.frombuffer(chunk.data, dtype="<u2", count=count, offset=chunk.start + shift)
            if any(np.any(words == code) for code in codes):
                return True
    return False


def _in_c(chunk, layout: Layout, delimiter: bytes) -> Parsed | None:
    """The block read by the C loop when it is built and the block is in the simplest form (ASCII,
    plain decimal numbers: :func:`ndcg_plugin.arrays.speedups.parse_columns`; the same columns), or None."""
    found = speedups.parse_columns(chunk.data, chunk.start, chunk.end, delimiter, layout.columns,
                                   (layout.query_at, layout.doc_at, layout.value_at), layout.integer)
    if found is None:
        return None
    qids, docs, value = found
    if layout.rank_is_value:
        value = -value.astype(np.float64)
    return Parsed(layout, pa.chunked_array([qids]), pa.chunked_array([docs]), value, None)


def parse_block(chunk, layout: Layout, delimiter: bytes, file_start: bool) -> Parsed | None:
    """Parse a block of whole lines (a ``sources.Chunk``), or decline with None; the C loop first (:func:`_in_c`)."""
    if (parsed := _in_c(chunk, layout, delimiter)) is not None:
        return parsed
    if (not file_start and chunk.startswith(BOM)) or chunk.find(b"\0") >= 0:
        return None  # Arrow would drop the mark; a NUL byte is refused by the line parser, naming its line
    if not _utf8(chunk):  # in any column, also one not converted: the line parser names the line
        return None
    has_cr = chunk.find(b"\r") >= 0
    if has_cr and chunk.count(b"\r") != chunk.count(b"\r\n"):
        return None
    ncols = layout.columns
    names = [f"c{i}" for i in range(ncols)]
    # no other whitespace byte in the whole block (a few memchr scans) means none inside any
    # field: then each column is checked only for empty fields, and only the columns used are
    # converted (most of the parse's cost is per field converted)
    spaced = any(chunk.find(b) >= 0 for b in _OTHER_WS[delimiter])
    used = sorted({layout.query_at, layout.doc_at, layout.value_at})
    skipping = not spaced and len(used) < ncols
    if skipping and empty_field(chunk, delimiter, 0 not in used, has_cr):
        return None
    converted = used if skipping else range(ncols)
    types = {names[i]: _BIN for i in converted}
    types[names[layout.query_at]] = _STR
    types[names[layout.doc_at]] = _STR
    types[names[layout.value_at]] = _BIN if layout.integer else pa.float64()
    try:
        table = pacsv.read_csv(
            pa.BufferReader(chunk.arrow_copy(POOL)),
            read_options=pacsv.ReadOptions(column_names=names, use_threads=True, block_size=1 << 22),
            parse_options=pacsv.ParseOptions(delimiter=delimiter.decode(), quote_char=False, escape_char=False,
                                             double_quote=False, ignore_empty_lines=False),
            convert_options=pacsv.ConvertOptions(column_types=types, null_values=[], strings_can_be_null=False,
                                                 quoted_strings_can_be_null=False, check_utf8=False,
                                                 include_columns=[names[i] for i in converted]),
            memory_pool=POOL)
    except (pa.ArrowInvalid, OSError):
        return None  # a row with another column count, a value that is not a number
    if table.num_rows == 0:
        return None
    for i in converted:
        if i == layout.value_at and not layout.integer:
            continue
        last_trec = layout.extra_allowed and i == ncols - 1
        if not _clean(table.column(names[i]), whitespace_ok=last_trec or not spaced):
            return None
    qids = table.column(names[layout.query_at])
    if any(np.any(data[offsets[:-1] - offsets[0]] == ord("#")) for offsets, data in _pieces(qids)):
        return None  # a comment line
    if layout.integer:
        value = _integers(table.column(names[layout.value_at]))
        if value is None:
            return None
    else:
        value = to_numpy(table.column(names[layout.value_at]))
        if not np.isfinite(value).all():
            return None  # NaN / inf: the line parser names the line
    if layout.rank_is_value:
        value = -value.astype(np.float64)
    return Parsed(layout, qids, table.column(names[layout.doc_at]), value, None)
