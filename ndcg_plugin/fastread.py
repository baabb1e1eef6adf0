"""The columnar path of the reader: well-formed qrels and run files parsed by Arrow's CSV reader.

A file takes this path when its first line shows a single delimiter (one tab or one space
between fields) and the expected number of columns. Anything unusual on any line (another
column count, a value that is not a number, NaN) makes :func:`parse` return None, and the
reader falls back to its line-by-line parser, which names the line and what was expected.
So this path only ever has to be fast, never to explain.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.csv as pacsv

from .columns import as_arrow_strings

_STR = pa.large_string()  # what pandas' string arrays hold: no conversion when wrapping

# layout -> (number of columns, positions of query_id, doc_id and the value): shared with the
# line parser (textread)
LAYOUTS = {"qrels": (4, (0, 2, 3)), "trec": (6, (0, 2, 4)), "msmarco": (3, (0, 1, 2))}
_VALUE_TYPE = {"qrels": ("relevance", pa.int64()), "trec": ("score", pa.float64()), "msmarco": ("score", pa.int64())}


def _columns(layout: str) -> dict:
    """{column index: (name, arrow type)} of the columns read."""
    q_at, d_at, v_at = LAYOUTS[layout][1]
    return {q_at: ("query_id", _STR), d_at: ("doc_id", _STR), v_at: _VALUE_TYPE[layout]}


def _first_line(data) -> bytes:
    data = bytes(data[: 1 << 16])  # a first line longer than this is not a simple layout
    start = 0
    while start < len(data):
        end = data.find(b"\n", start)
        end = len(data) if end < 0 else end
        line = data[start:end].rstrip(b"\r")
        if line.strip():
            return line
        start = end + 1
    return b""


def _layout(first: bytes, kind: str, run_format: str) -> tuple[str, bytes] | None:
    """(layout name, delimiter) when the first line is in the simple form, else None."""
    if first.startswith(b"\xef\xbb\xbf"):
        first = first[3:]
    for delim in (b"\t", b" "):
        fields = first.split(delim)
        if len(fields) < 3 or any(not f or f != f.strip() for f in fields):
            continue
        n = len(fields)
        if kind == "qrels":
            name = "qrels"
        elif run_format == "auto":
            name = "msmarco" if n == 3 else "trec"
        else:
            name = run_format
        if n == LAYOUTS[name][0]:
            return name, delim
    return None


def parse(data, kind: str, run_format: str, progress=None, gzipped: bool = False) -> pd.DataFrame | None:
    """Parse a file (a path, read as a stream so the whole file is never in memory, gzip
    decompressed on the fly when ``gzipped``) or a whole file's bytes; None when the file needs
    the line-by-line parser. ``progress(done, total)`` gets bytes of the file read so far."""
    is_path = isinstance(data, str)
    if is_path:
        try:
            with pa.input_stream(data, compression="gzip" if gzipped else None) as f:
                head = f.read(1 << 16)
        except (pa.ArrowInvalid, OSError):
            return None  # e.g. corrupt gzip: the line parser says what is wrong
    else:
        head = data
    found = _layout(_first_line(head), kind, run_format)
    if found is None:
        return None
    name, delim = found
    ncols, wanted = LAYOUTS[name][0], _columns(name)
    names = [f"c{i}" for i in range(ncols)]

    def invalid(row):
        return "error"  # Arrow then raises ArrowInvalid: the line parser will name the line

    read_opts = pacsv.ReadOptions(column_names=names, block_size=1 << 20)
    parse_opts = pacsv.ParseOptions(delimiter=delim.decode(), quote_char=False, escape_char=False,
                                    ignore_empty_lines=True, invalid_row_handler=invalid)
    convert_opts = pacsv.ConvertOptions(column_types={f"c{i}": t for i, (_, t) in wanted.items()},
                                        include_columns=[f"c{i}" for i in wanted], null_values=[],
                                        strings_can_be_null=False, quoted_strings_can_be_null=False)
    try:
        if is_path:
            raw = pa.OSFile(data, "rb")
            source = pa.CompressedInputStream(raw, "gzip") if gzipped else raw
            total = raw.size()
        else:
            raw = source = pa.BufferReader(pa.py_buffer(data))
            total = raw.size()
        with source:
            if progress is None:
                table = pacsv.read_csv(source, read_options=read_opts, parse_options=parse_opts,
                                       convert_options=convert_opts)
            else:
                reader = pacsv.open_csv(source, read_options=read_opts, parse_options=parse_opts,
                                        convert_options=convert_opts)
                batches = []
                for batch in reader:
                    batches.append(batch)
                    progress(min(raw.tell(), total), total)
                progress(total, total)
                table = pa.Table.from_batches(batches, schema=reader.schema)
    except (pa.ArrowInvalid, OSError):
        return None
    if table.num_rows == 0:
        return None
    columns = {}
    for i, (col, _) in wanted.items():
        arr = table.column(f"c{i}")
        if col in ("query_id", "doc_id"):
            columns[col] = pd.arrays.ArrowStringArray(as_arrow_strings(arr))
        else:
            columns[col] = arr.to_numpy()
    if name == "msmarco":
        columns["score"] = -columns["score"].astype(np.float64)  # rank 1 is best
    elif kind == "run" and not np.isfinite(columns["score"]).all():
        return None  # NaN / inf: the line-by-line parser names the line
    return pd.DataFrame(columns)
