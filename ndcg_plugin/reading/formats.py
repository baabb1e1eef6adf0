"""The file layouts both parsers share: columns, positions, value types, number syntax and the
rules for blanks, comments, byte order marks and line ends (trec_eval 10.0's, from
``get_trec_results.c`` and ``get_qrels.c``).

- A line is the bytes up to ``\\n``. Fields are separated by any run of ASCII whitespace
  (C ``isspace``: space, ``\\t``, ``\\n``, ``\\v``, ``\\f``, ``\\r``); blanks before the first
  field and after the last are ignored, so CRLF files read as LF. Any other byte, including
  non-ASCII spaces (U+00A0, U+3000, U+0085), is part of a field.
- Blank lines are skipped. In a run, a line whose first non-blank character is ``#`` is a
  comment; in qrels, a line with ``#`` in column 0. ``#`` anywhere else is part of an id
  (TREC RAG 2024 segment ids ``msmarco_v2.1_doc_00_0#1_2``).
- A UTF-8 byte order mark at the start of the file is dropped (a file of a mark and blanks only
  is refused as empty); ids must be valid UTF-8.
- A NUL byte is refused (trec_eval's files "may contain no NULL characters": it stops reading at
  one); other control bytes are bytes of an id. A line longer than ``sizes.LINE_BYTES`` (1 MiB)
  is refused before it is read whole.
- Numbers: integers (relevance labels, MS MARCO ranks) are ``[+-]?[0-9]+``; scores are decimal
  numbers with an optional exponent (``1``, ``-2.5``, ``.5``, ``3.``, ``1e-3``). trec_eval reads
  numbers with ``atof``/``atol``, which stop at the first character they cannot use (``1_0``
  reads as 1, ``0x1p-1`` as 0.5): anything outside this syntax is refused, never read
  differently. NaN and infinite scores are refused (no defined rank).
"""
from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from ..errors import InputError

BOM = b"\xef\xbb\xbf"
WHITESPACE = b" \t\n\v\f\r"  # C isspace in the C locale; bytes.split() splits on exactly these
INTEGER = re.compile(rb"[+-]?[0-9]+\Z")
#: a decimal number as trec_eval's scores are written. The digits before and after the point are
#: told apart by the point itself (not ``[0-9]+\.?[0-9]*``, whose two digit runs a regex engine
#: tries every way of sharing when the match fails: minutes on a 100,000-digit field)
DECIMAL = re.compile(rb"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?\Z")


@dataclass(frozen=True)
class Layout:
    """One file layout: how many fields, where the ids and the value are, the value's type."""
    name: str
    columns: int            # fields per line (a TREC run may have more: trec_eval ignores them)
    query_at: int
    doc_at: int
    value_at: int
    integer: bool           # the value is an integer (label, rank) rather than a decimal score
    expected: str           # what a line looks like, for error messages
    extra_allowed: bool = False
    rank_is_value: bool = False  # MS MARCO: score = -rank
    unit: str = "line"      # what a row's number counts: "line" (1-based, text) or "row" (0-based, Parquet)

    @property
    def what(self) -> str:
        if self.name == "qrels":
            return "an integer relevance label"
        return "an integer rank" if self.integer else "a numeric score"


LAYOUTS = {
    "qrels": Layout("qrels", 4, 0, 2, 3, True, "'query_id iteration doc_id relevance' in a qrels file"),
    "trec": Layout("trec", 6, 0, 2, 4, False, "'query_id Q0 doc_id rank score run_tag' in a TREC run",
                   extra_allowed=True),
    "msmarco": Layout("msmarco", 3, 0, 1, 2, True, "'query_id doc_id rank' in an MS MARCO run", rank_is_value=True),
}
RUN_FORMATS = ("auto", "trec", "msmarco")
ROLES = {"qrels": ("query_id", "doc_id", "relevance"), "run": ("query_id", "doc_id", "score")}


def column_names(kind: str, columns: Mapping[str, str] | None) -> dict[str, str]:
    """{ir-measures column name: the name it has in the data} for a table's ``columns=`` option
    (None: the ir-measures names themselves); a ValueError for a key that is not one of them."""
    roles = ROLES[kind]
    if columns is None:
        return {r: r for r in roles}
    if not isinstance(columns, Mapping):
        raise TypeError(f"columns must be a dict {{ir-measures name: name in the data}}, got {type(columns).__name__}")
    unknown = [k for k in columns if k not in roles]
    names = {r: columns.get(r, r) for r in roles}
    if unknown or not all(isinstance(v, str) for v in columns.values()) or len(set(names.values())) < len(roles):
        raise ValueError(f"columns maps the {kind} columns {', '.join(roles)} to the names in the data, e.g. "
                         f"{{'query_id': 'user_id'}}, one name each; got {dict(columns)!r}")
    return names


def error_at(source: str, unit: str, at: int, reason: str, text: str | None = None) -> InputError:
    """The InputError of row or line ``at``: ``FILE:LINE: reason`` for a text file's line (and a
    DataFrame's row), ``FILE: row N: reason`` for a Parquet row, whose ``line`` is then N."""
    if unit == "line":
        return InputError(source, at, reason, text)
    error = InputError(source, None, f"row {at}: {reason}", text)
    error.line = at
    return error


def is_comment(line: bytes, fields: list[bytes], kind: str) -> bool:
    """trec_eval's comment rule: a run line whose first non-blank character is ``#``; a qrels
    line with ``#`` in column 0."""
    return line.startswith(b"#") if kind == "qrels" else fields[0].startswith(b"#")


def layout_for(kind: str, run_format: str, fields: list[bytes]) -> Layout:
    """The layout of a file from its first data line: qrels have one; a run is MS MARCO when
    that line has 3 fields (``auto``), else TREC."""
    if kind == "qrels":
        return LAYOUTS["qrels"]
    if run_format == "auto":
        return LAYOUTS["msmarco" if len(fields) == 3 else "trec"]
    return LAYOUTS[run_format]


def first_data_line(data: bytes, kind: str) -> tuple[bytes, list[bytes]] | None:
    """The first line of ``data`` (a file's start) that is neither blank nor a comment, and its
    fields; None if there is none in ``data``. In qrels, as trec_eval reads them, the line after a
    comment is data whatever it starts with, and a blank line ends the search (it is an error the
    line parser reports)."""
    if data.startswith(BOM):
        data = data[len(BOM):]
    start, after_comment = 0, False
    while start < len(data):
        end = data.find(b"\n", start)
        end = len(data) if end < 0 else end
        line = data[start:end]
        fields = line.split()
        if kind == "qrels":
            if not fields:
                return None
            if after_comment or not line.startswith(b"#"):
                return line, fields
            after_comment = True
        elif fields and not is_comment(line, fields, kind):
            return line, fields
        start = end + 1
    return None


def delimiter_of(line: bytes, fields: list[bytes]) -> bytes | None:
    """The single-byte delimiter of a line in the simple form (one tab or one space between
    fields, nothing before or after), else None."""
    line = line[:-1] if line.endswith(b"\r") else line
    for delim in (b"\t", b" "):
        if line.split(delim) == fields:
            return delim
    return None
