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

    @classmethod
    def empty(cls, layout: Layout) -> Parsed:
        """No rows, in the reader's columns."""
        from ..columns import empty_strings
        none = empty_strings()
        return cls(layout, none, none, np.zeros(0, dtype=np.int64 if layout.integer else np.float64),
                   np.zeros(0, dtype=np.int64))


def _ids(raw: list[bytes]) -> pa.Array:
    return pa.array(raw, type=pa.large_binary()).cast(pa.large_string())


def _number(raw: bytes, layout: Layout, source: str, lineno: int, line: bytes):
    if layout.integer:
        if INTEGER.match(raw):
            value = int(raw)
            if _INT64[0] <= value <= _INT64[1]:
                return value
            raise InputError(source, lineno, f"expected {layout.what}, got {raw.decode(errors='replace')!r}: "
                             "out of the 64-bit integer range", line.decode(errors="replace"))
    elif DECIMAL.match(raw):
        value = float(raw)
        if math.isfinite(value):
            return value
    if not layout.integer and (raw.lower() in _NON_FINITE or DECIMAL.match(raw)):
        raise InputError(source, lineno, f"score must be a finite number, got {raw.decode()!r}; NaN or infinite "
                         "scores have no defined rank", line.decode(errors="replace"))
    syntax = "an optional sign and digits" if layout.integer else "a decimal number such as 12, -0.5 or 1e-3"
    prefix = (_INT_PREFIX if layout.integer else _DECIMAL_PREFIX).match(raw)
    read_as = f"; trec_eval would read only {prefix.group().decode()!r}, so it is refused" if prefix else ""
    raise InputError(source, lineno, f"expected {layout.what}, got {raw.decode(errors='replace')!r} "
                     f"({syntax}{read_as})", line.decode(errors="replace"))


def parse_lines(data: bytes, source: str, kind: str, run_format: str = "auto", layout: Layout | None = None,
                first_line: int = 1, file_start: bool = True) -> Parsed | None:
    """Parse qrels or run lines. ``layout`` is the file's (None: from the first data line, as
    :func:`formats.layout_for`); ``first_line`` is the line number of ``data``'s first line, and
    ``file_start`` whether ``data`` begins the file (where a byte order mark is dropped).
    Returns None when ``data`` holds no data line."""
    data = bytes(data)
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as e:
        lineno = first_line + data.count(b"\n", 0, e.start)
        line_start = data.rfind(b"\n", 0, e.start) + 1
        at = e.start - line_start  # in the line, not in the block read
        # the lines before it first: a bad line earlier in the file is reported first, whatever
        # the block size
        parse_lines(data[:line_start], source, kind, run_format, layout, first_line, file_start)
        raise InputError(source, lineno, f"not valid UTF-8 at byte offset {at} of the line; ids must be "
                         "UTF-8 text") from None
    if file_start and data.startswith(BOM):
        data = data[len(BOM):]
    if layout is None:
        found = first_data_line(data, kind)
        if found is None:
            return None
        layout = layout_for(kind, run_format, found[1])
    qids: list[bytes] = []
    dids: list[bytes] = []
    values: list = []
    lines: list[int] = []
    ncols = layout.columns
    for lineno, line in enumerate(data.split(b"\n"), start=first_line):
        fields = line.split()
        if not fields or is_comment(line, fields, kind):
            continue
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
