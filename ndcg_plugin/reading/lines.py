"""The line-by-line parser: reads any file the columnar parser declines, and is the one that
names the line of an error. It works on bytes, so only ASCII whitespace separates fields
(:mod:`ndcg_plugin.reading.formats` has the rules), and it reports the first bad line in file
order, whatever is wrong with it.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from ..errors import InputError
from .formats import BOM, DECIMAL, INTEGER, Layout, first_data_line, is_comment, layout_for


@dataclass
class QrelsComments:
    """trec_eval's reading of comments in qrels, carried from block to block: a line with ``#`` in
    column 0 is a comment, but the line after one is always read as a judgment (trec_eval skips
    one comment line, then parses the next); ``after``: the last line read was a comment (at
    ``line``)."""
    after: bool = False
    line: int = 0

_INT_PREFIX = re.compile(rb"[+-]?[0-9]+")
_DECIMAL_PREFIX = re.compile(rb"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_INT64 = (-(2**63), 2**63 - 1)
_NON_FINITE = {b"nan", b"+nan", b"-nan", b"inf", b"+inf", b"-inf", b"infinity", b"+infinity", b"-infinity"}


@dataclass
class Parsed:
    """Columns of one parsed piece of a file: ids as Arrow strings, the value as numbers (the
    score, or -rank for MS MARCO runs), and ``line`` the 1-based line number of each row."""
    layout: Layout
    query_id: pa.Array
    doc_id: pa.Array
    value: np.ndarray
    line: np.ndarray | None

    def __len__(self) -> int:
        return len(self.value)

    def slice(self, lo: int, hi: int) -> Parsed:
        """Rows ``lo:hi`` (views, no copy)."""
        return Parsed(self.layout, self.query_id.slice(lo, hi - lo), self.doc_id.slice(lo, hi - lo), self.value[lo:hi],
                      None if self.line is None else self.line[lo:hi])

    @staticmethod
    def joined(pieces: list[Parsed]) -> Parsed:
        """One piece from consecutive pieces of a file, in order (the strings' chunks are not
        copied); line numbers only when every piece has them."""
        if len(pieces) == 1:
            return pieces[0]
        from ..arrays.columns import join_chunks
        lines = None if any(p.line is None for p in pieces) else np.concatenate([p.line for p in pieces])
        return Parsed(pieces[0].layout, join_chunks([p.query_id for p in pieces]),
                      join_chunks([p.doc_id for p in pieces]), np.concatenate([p.value for p in pieces]), lines)

    @classmethod
    def empty(cls, layout: Layout) -> Parsed:
        """No rows, in the reader's columns."""
        from ..arrays.columns import empty_strings
        none = empty_strings()
        return cls(layout, none, none, np.zeros(0, dtype=np.int64 if layout.integer else np.float64),
                   np.zeros(0, dtype=np.int64))


def _ids(raw: list[bytes]) -> pa.Array:
    return pa.array(raw, type=pa.large_binary()).cast(pa.large_string())


_SHOWN = 40  # the most characters of a field that an error message quotes


def shown(raw: bytes) -> str:
    """A field as an error message quotes it: in full up to 40 characters, else its start and length."""
    text = raw.decode(errors="replace")
    return repr(text) if len(text) <= _SHOWN else f"{text[:_SHOWN]!r}... ({len(raw):,} bytes)"


def _number(raw: bytes, layout: Layout, source: str, lineno: int, line: bytes):
    if layout.integer:
        if INTEGER.match(raw):
            digits = len(raw.lstrip(b"+-").lstrip(b"0"))
            value = int(raw) if digits <= 19 else None  # Python refuses ints of 4,300+ digits
            if value is not None and _INT64[0] <= value <= _INT64[1]:
                return value
            raise InputError(source, lineno, f"expected {layout.what}, got {shown(raw)}: out of the 64-bit integer "
                             "range", line.decode(errors="replace"))
    elif DECIMAL.match(raw):
        value = float(raw)
        if math.isfinite(value):
            return value
    if not layout.integer and (raw.lower() in _NON_FINITE or DECIMAL.match(raw)):
        raise InputError(source, lineno, f"score must be a finite number, got {shown(raw)}; NaN or infinite "
                         "scores have no defined rank", line.decode(errors="replace"))
    syntax = "an optional sign and digits" if layout.integer else "a decimal number such as 12, -0.5 or 1e-3"
    read = trec_eval_reads(raw, layout.integer)
    raise InputError(source, lineno, f"expected {layout.what}, got {shown(raw)} ({syntax}; trec_eval would read it "
                     f"as {read}, so it is refused rather than read differently)", line.decode(errors="replace"))


_HEX_FLOAT = re.compile(rb"[+-]?0[xX](?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)(?:[pP][+-]?[0-9]+)?")
_SPECIAL = re.compile(rb"[+-]?(?:inf(?:inity)?|nan(?:\([0-9a-zA-Z_]*\))?)", re.IGNORECASE)


def trec_eval_reads(raw: bytes, integer: bool) -> str:
    """What trec_eval reads a field as: C's atol for labels (a sign and digits, stopping at the
    first other character; 0 when there are none) and glibc's atof for scores (the longest prefix
    that is a decimal or hexadecimal number, an infinity or a NaN; 0 when there is none)."""
    if integer:
        found = _INT_PREFIX.match(raw)
        if not found:
            return "0"
        digits = found.group().lstrip(b"+-").lstrip(b"0") or b"0"
        negative = found.group().startswith(b"-")
        if len(digits) > 19 or int(digits) > _INT64[1] + negative:  # strtol saturates
            return str(_INT64[0] if negative else _INT64[1])
        return str(-int(digits) if negative else int(digits))
    special = _SPECIAL.match(raw)
    hexa = _HEX_FLOAT.match(raw)
    if special:
        return repr(float(special.group().split(b"(")[0].decode()))
    if hexa:
        text = hexa.group().decode()
        mantissa = text if "p" in text.lower() else text + "p0"
        return repr(float.fromhex(mantissa))
    found = _DECIMAL_PREFIX.match(raw)
    return repr(float(found.group())) if found else "0.0"


@dataclass(frozen=True)
class RefusedByte:
    """The first byte of a block that no line may hold, at ``at``: a NUL (``nul``) or a byte that
    is not valid UTF-8."""
    at: int
    nul: bool

    def reason(self, offset: int) -> str:
        if self.nul:
            return (f"a NUL byte at byte offset {offset} of the line, which trec_eval cannot read (its files 'may "
                    "contain no NULL characters': it stops reading there, or crashes); the file is damaged or not text")
        return f"not valid UTF-8 at byte offset {offset} of the line; ids must be UTF-8 text"


def refused_byte(data: bytes) -> RefusedByte | None:
    """The first NUL byte or byte that is not valid UTF-8 in ``data``, or None. Other control
    bytes (``\\x01``-``\\x1f`` but whitespace, ``\\x7f``) are bytes of an id, as trec_eval reads
    them."""
    nul = data.find(b"\0")
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as e:
        if nul < 0 or e.start < nul:
            return RefusedByte(e.start, False)
    return RefusedByte(nul, True) if nul >= 0 else None


def _qrels_data(line: bytes, fields: list[bytes], comments: QrelsComments, source: str, lineno: int) -> bool:
    """Whether a qrels line is a judgment, as trec_eval reads them: the line after a comment
    always is, else one with ``#`` in column 0 is a comment; a blank line is refused, as
    trec_eval refuses it."""
    if comments.after:
        comments.after = False
    elif line.startswith(b"#"):
        comments.after, comments.line = True, lineno
        return False
    if not fields:
        raise blank_qrels_line(source, lineno)
    return True


def blank_qrels_line(source: str, lineno: int) -> InputError:
    """The error of a blank qrels line."""
    return InputError(source, lineno, "a blank line, which trec_eval refuses in qrels ('Malformed line'); remove it")


def parse_lines(data: bytes, source: str, kind: str, run_format: str = "auto", layout: Layout | None = None,
                first_line: int = 1, file_start: bool = True, comments: QrelsComments | None = None) -> Parsed | None:
    """Parse qrels or run lines. ``layout`` is the file's (None: from the first data line, as
    :func:`formats.layout_for`); ``first_line`` is the line number of ``data``'s first line, and
    ``file_start`` whether ``data`` begins the file (where a byte order mark is dropped);
    ``comments``: for qrels, trec_eval's comment state at the start of ``data`` (updated).
    Returns None when ``data`` holds no data line."""
    data = bytes(data)
    bad = refused_byte(data)
    if bad is not None:
        lineno = first_line + data.count(b"\n", 0, bad.at)
        line_start = data.rfind(b"\n", 0, bad.at) + 1
        # the lines before it first: a bad line earlier in the file is reported first, whatever
        # the block size
        parse_lines(data[:line_start], source, kind, run_format, layout, first_line, file_start, comments)
        raise InputError(source, lineno, bad.reason(bad.at - line_start))  # its offset in the line
    if file_start and data.startswith(BOM):
        data = data[len(BOM):]
    if layout is None:
        found = first_data_line(data, kind)
        layout = layout_for(kind, run_format, found[1]) if found is not None else None
        if layout is None and kind != "qrels":
            return None
    qids: list[bytes] = []
    dids: list[bytes] = []
    values: list = []
    lines: list[int] = []
    parts = data.split(b"\n")
    if parts and parts[-1] == b"":
        parts.pop()  # what follows the last newline is no line
    for lineno, line in enumerate(parts, start=first_line):
        fields = line.split()
        if kind == "qrels":
            if not _qrels_data(line, fields, comments or QrelsComments(), source, lineno):
                continue
            layout = layout or layout_for(kind, run_format, fields)
        elif not fields or is_comment(line, fields, kind):
            continue
        ncols = layout.columns
        n = len(fields)
        if n != ncols and not (n > ncols and layout.extra_allowed):
            raise InputError(source, lineno, f"expected {ncols} columns {layout.expected}, got {n}",
                             line.decode(errors="replace"))
        values.append(_number(fields[layout.value_at], layout, source, lineno, line))
        qids.append(fields[layout.query_at])
        dids.append(fields[layout.doc_at])
        lines.append(lineno)
    if not lines:
        return None
    value = np.array(values, dtype=np.int64 if layout.integer else np.float64)
    if layout.rank_is_value:
        value = -value.astype(np.float64)  # rank 1 is best: a higher score is better
    return Parsed(layout, _ids(qids), _ids(dids), value, np.array(lines, dtype=np.int64))
