"""The line-by-line parser of qrels and run files: the reader's fallback for any file the
columnar path (:mod:`ndcg_plugin.fastread`) declines, and the one that names the line of an
error.
"""
from __future__ import annotations

import gzip
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from .fastread import LAYOUTS
from .validate import VALUE_COLUMN, InputError, Kind, _check_values

_EXPECTED = {"qrels": "'query_id iteration doc_id relevance' in a qrels file",
             "trec": "'query_id Q0 doc_id rank score run_tag' in a TREC run",
             "msmarco": "'query_id doc_id rank' in an MS MARCO run"}


def _open_bytes(path: str | Path) -> tuple[bytes, str]:
    """Return (content, source name); gzip is detected by its magic bytes, not the extension."""
    if str(path) == "-":
        data = sys.stdin.buffer.read()
        source = "<stdin>"
    else:
        source = str(path)
        try:
            with open(path, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            raise InputError(source, None, "file not found") from None
        except IsADirectoryError:
            raise InputError(source, None, "is a directory, expected a qrels or run file") from None
        except PermissionError:
            raise InputError(source, None, "permission denied") from None
    if data[:2] == b"\x1f\x8b":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError) as e:
            raise InputError(source, None, f"corrupt or truncated gzip data ({e})") from None
    elif source.endswith(".gz"):
        raise InputError(source, None, "the name ends in .gz but the content is not gzip; "
                         "rename the file or compress it")
    return data, source


def _decode(data: bytes, source: str) -> str:
    try:
        return bytes(data).decode("utf-8-sig")  # a leading BOM is dropped
    except UnicodeDecodeError as e:
        raise InputError(source, None, f"not valid UTF-8 at byte {e.start}") from None


def _detect_run_format(fields: list[str]) -> str:
    return "msmarco" if len(fields) == 3 else "trec"


def _parse_lines(text: str, source: str, kind: Kind, run_format: str, progress=None) -> pd.DataFrame:
    """Parse TREC qrels (``qid iter docid rel``), TREC runs (``qid Q0 docid rank score tag``,
    extra trailing columns allowed as trec_eval allows them) or MS MARCO runs
    (``qid docid rank``: score = -rank)."""
    qids: list[str] = []
    dids: list[str] = []
    vals: list[str] = []
    lines: list[int] = []
    fmt = run_format
    all_lines = text.splitlines()
    total = len(all_lines)
    for lineno, line in enumerate(all_lines, start=1):
        if progress is not None and lineno % 500_000 == 0:
            progress(lineno, total)
        fields = line.split()
        if not fields:
            continue  # blank lines are skipped, as trec_eval does
        n = len(fields)
        if fmt == "auto":
            fmt = _detect_run_format(fields)
        layout = "qrels" if kind == "qrels" else fmt
        ncols, columns = LAYOUTS[layout]
        if n < ncols or (n > ncols and layout != "trec"):  # trec_eval accepts extra run columns
            raise InputError(source, lineno, f"expected {ncols} columns {_EXPECTED[layout]}, got {n}", line)
        q_at, d_at, v_at = columns
        qids.append(fields[q_at])
        dids.append(fields[d_at])
        vals.append(fields[v_at])
        lines.append(lineno)
    if progress is not None and total >= 500_000:
        progress(total, total)
    if not lines:
        raise InputError(source, None, f"no {kind} lines found: the input is empty")
    col = VALUE_COLUMN[kind]
    line_numbers = np.array(lines)
    values = _to_numbers(np.array(vals, dtype=object), source, line_numbers, kind,
                         integer=(kind == "qrels" or fmt == "msmarco"))
    if kind == "run" and fmt == "msmarco":
        values = -values.astype(np.float64)  # rank 1 is best: higher score is better
    values = _check_values(values, source, kind, line_numbers)
    return pd.DataFrame({"query_id": qids, "doc_id": dids, col: values, "line": line_numbers})


def _to_numbers(raw: np.ndarray, source: str, lines: np.ndarray, kind: Kind, integer: bool) -> np.ndarray:
    what = "an integer relevance label" if kind == "qrels" else ("an integer rank" if integer else "a numeric score")
    try:
        return raw.astype(np.int64) if integer else raw.astype(np.float64)
    except (ValueError, OverflowError):
        pass
    for i, v in enumerate(raw):  # slow path, only to find the offending line
        try:
            int(v) if integer else float(v)
        except (ValueError, OverflowError):
            raise InputError(source, int(lines[i]), f"expected {what}, got {v!r}") from None
    raise InputError(source, None, f"could not read {what}")  # pragma: no cover
