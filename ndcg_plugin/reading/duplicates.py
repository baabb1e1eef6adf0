"""Repeated (query_id, doc_id) pairs: found through 64-bit fingerprints, confirmed on the
strings, then refused (naming both lines) or resolved as the caller asks. One implementation
on columns, for DataFrames and for the reader's own columns alike."""
from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np
import pyarrow as pa

from ..arrays import speedups
from ..arrays.block import Block
from ..arrays.columns import as_arrow_strings, columns_of, fingerprints, from_numpy, ids_of
from ..errors import DUPLICATES_HINT, VALUE_COLUMN, Kind
from .formats import error_at

POLICIES = ("error", "first", "max")
_Q_MIX = np.uint64(0xD6E8FEB86659FD93)  # the query code's multiplier, other than the fingerprint's
# the longest queries checked one by one (the C loop's hash table holds at most 4096 rows)
_ROW_SORT_MAX = 4096
# grouped queries of several sizes, each of at most this many rows, are checked size by size
_SMALL_MAX = 64


def _columns(table):
    """(query ids, doc ids, values, line numbers) of a DataFrame or of the reader's columns."""
    value = "relevance" if "relevance" in getattr(table, "columns", ()) else "score"
    lines = table.line if hasattr(table, "layout") else table["line"].to_numpy()
    return (*columns_of(table, value), lines)


def _pairs(qids: pa.ChunkedArray, docs: pa.ChunkedArray, rows: np.ndarray) -> list[tuple]:
    idx = from_numpy(rows.astype(np.int64))
    return list(zip(qids.take(idx).to_pylist(), docs.take(idx).to_pylist(), strict=True))


def duplicate_mask(table) -> np.ndarray | None:
    """Rows whose (query_id, doc_id) pair occurs more than once, or None when all are unique.
    Each pair gets a 64-bit fingerprint (query code mixed with the doc id's byte hash); pairs
    whose fingerprints are all distinct are distinct, and only rows sharing a fingerprint are
    compared as strings."""
    return mask_of(Block.of(table))


def mask_of(block: Block) -> np.ndarray | None:
    """:func:`duplicate_mask` of a block's rows, from its group codes and, where it has them, its
    doc fingerprints (else hashed here)."""
    n = len(block)
    if n < 2:
        return None
    qids, docs = ids_of(block.rows, "query_id"), ids_of(block.rows, "doc_id")
    q_codes = block.groups.codes
    docs_fp = fingerprints(docs) if block.doc_fp is None else block.doc_fp
    if distinct_within_queries(docs_fp, q_codes) or distinct_within_small_queries(docs_fp, q_codes):
        return None

    def pair_keys() -> np.ndarray:
        with np.errstate(over="ignore"):
            return docs_fp ^ (q_codes.astype(np.uint64) * _Q_MIX)

    # sorted in place, as int64: only equal neighbours matter, not the order, and numpy sorts
    # signed integers about twice as fast as unsigned ones (a hash table costs more than either)
    ordered = pair_keys().view(np.int64)
    ordered.sort()
    repeated = ordered[1:] == ordered[:-1]
    if not repeated.any():
        return None
    suspects = np.flatnonzero(np.isin(pair_keys().view(np.int64), ordered[1:][repeated]))
    pairs = _pairs(qids, docs, suspects)
    counts = Counter(pairs)
    exact = np.array([counts[p] > 1 for p in pairs], dtype=bool)
    if not exact.any():
        return None
    mask = np.zeros(n, dtype=bool)
    mask[suspects[exact]] = True
    return mask


def distinct_within_queries(docs_fp: np.ndarray, q_codes: np.ndarray) -> bool:
    """True when no query holds a doc fingerprint twice, for rows grouped by query with the same
    number per query (a streamed block of a TREC run, 1000 per query): each query's fingerprints
    checked on their own, which costs less than one sort of the whole block. False when it cannot
    show it: rows not so arranged, or two equal fingerprints within a query (a duplicate, or a
    collision the caller's exact check sorts out). Each query's fingerprints go into a hash
    table by the C loop when it is at hand (:mod:`ndcg_plugin.arrays.speedups`), else are sorted
    by numpy, row by row: the same answer."""
    n = len(docs_fp)
    if n < 2 or q_codes[0] != 0 or q_codes[-1] < 0:
        return False
    nq = int(q_codes[-1]) + 1
    size = n // nq
    # the O(1) tests first: most inputs of other shapes stop here, before a pass over the codes
    if size * nq != n or size > _ROW_SORT_MAX or np.any(q_codes[1:] < q_codes[:-1]):
        return False  # not grouped by query, or queries of different sizes
    rows = q_codes.reshape(nq, size)
    # row i starts and ends with code i: with nondecreasing codes, each query is one row
    first = np.arange(nq, dtype=q_codes.dtype)
    if np.any(rows[:, 0] != first) or np.any(rows[:, -1] != first):
        return False  # queries of different sizes
    shown = speedups.distinct_small(docs_fp, q_codes, size)  # the queries are its runs of `size` rows
    if shown is not None:
        return shown
    keys = np.sort(docs_fp.view(np.int64).reshape(nq, size), axis=1)  # numpy sorts signed integers faster
    return not np.any(keys[:, 1:] == keys[:, :-1])


def distinct_within_small_queries(docs_fp: np.ndarray, q_codes: np.ndarray) -> bool:
    """True when no query holds a doc fingerprint twice, shown for rows grouped by query (each
    query one run of rows, codes counted from 0 as ``group_codes`` gives them) of at most
    ``_SMALL_MAX`` rows each, of any sizes (recommendation logs: a few items per user): the
    queries of each size are the rows of a 2-D array, each row sorted on its own, which costs
    less than one sort of all the rows. False when it cannot show it (other shapes, or two equal
    fingerprints in a query: a duplicate, or a collision the caller's exact check sorts out).
    Through the C loop when it is at hand (:mod:`ndcg_plugin.arrays.speedups`; the same answer)."""
    shown = speedups.distinct_small(docs_fp, q_codes, _SMALL_MAX)
    if shown is not None:
        return shown
    n = len(docs_fp)
    if n < 2 or q_codes[0] != 0 or n > _SMALL_MAX * (int(q_codes[-1]) + 1):
        return False  # the O(1) tests first (the last: queries of more than _SMALL_MAX rows on average)
    steps = np.diff(q_codes)
    new_query = steps != 0
    if np.any(steps[new_query] != 1):
        return False  # a query seen again, or codes not counted from 0 in order
    starts = np.flatnonzero(np.concatenate(([True], new_query)))
    sizes = np.diff(np.append(starts, n))
    if int(sizes.max()) > _SMALL_MAX:
        return False
    keys = docs_fp.view(np.int64)  # numpy sorts signed integers faster
    for size in range(2, int(sizes.max()) + 1):
        first = starts[sizes == size]
        if len(first):
            rows = np.sort(keys[first[:, None] + np.arange(size)], axis=1)
            if np.any(rows[:, 1:] == rows[:, :-1]):
                return False
    return True


def _unit(table) -> tuple[str, str]:
    """(what a row's number counts, how an error names it; see :func:`.formats.error_at`): a
    text file's lines, a Parquet file's rows, or an in-memory table's rows (``NAME:ROW:``)."""
    if hasattr(table, "layout"):
        return table.layout.unit, table.layout.unit
    unit = getattr(table, "attrs", {}).get("unit")
    return (unit, unit) if unit is not None else ("row", "line")


def kept_rows(table: Any, kind: Kind, policy: str, source: str, only: np.ndarray | None = None) -> np.ndarray | None:
    """Positions of the rows to keep under the duplicate policy (None: all of them), or an
    InputError naming both lines of the first repeated pair (policy "error"). ``table``: a table
    or a :class:`~ndcg_plugin.arrays.block.Block` of one (its group codes and fingerprints are
    used). ``only``: the rows the policy applies to (a run's rows of queries the qrels hold:
    trec_eval accepts a repeated pair in a query it does not evaluate); None for every row."""
    if policy not in POLICIES:
        raise ValueError(f"duplicates must be 'error', 'first' or 'max', got {policy!r}")
    block = table if isinstance(table, Block) else Block.of(table)
    table = block.rows
    qids, docs, values, lines = _columns(table)
    dup = mask_of(block)
    if dup is not None and only is not None:
        dup &= only
    if dup is None or not dup.any():
        return None
    rows = np.flatnonzero(dup)
    pairs = _pairs(qids, docs, rows)
    if policy == "error":
        first = pairs[0]
        twin = rows[pairs.index(first, 1)]
        unit, style = _unit(table)
        col = VALUE_COLUMN[kind]
        raise error_at(
            source, style, int(lines[twin]),
            f"duplicate (query_id, doc_id) = ({first[0]!r}, {first[1]!r}): {unit}s {int(lines[rows[0]])} and "
            f"{int(lines[twin])} ({col} {values[rows[0]]} and {values[twin]}); trec_eval refuses duplicates; "
            f"{DUPLICATES_HINT}")
    best: dict = {}
    for row, pair in zip(rows.tolist(), pairs, strict=True):
        if pair not in best or (policy == "max" and values[row] > values[best[pair]]):
            best[pair] = row
    drop = np.ones(len(dup), dtype=bool)
    drop[rows] = False
    drop[list(best.values())] = True
    return np.flatnonzero(drop)


def resolve_duplicates(table: Any, kind: Kind, policy: str, source: str, only: np.ndarray | None = None) -> Any:
    """Apply the duplicate policy ("error", "first", "max") to (query_id, doc_id) pairs of a
    DataFrame (with a ``line`` column) or of the reader's columns, or of a
    :class:`~ndcg_plugin.arrays.block.Block` of either (``only``: see :func:`kept_rows`): the
    rows kept, as given (the same table or block when every row is kept; a block of fewer rows
    is made anew, its group codes recomputed)."""
    keep = kept_rows(table, kind, policy, source, only)
    if keep is None:
        return table
    if isinstance(table, Block):
        return Block.of(take_rows(table.rows, keep))
    return take_rows(table, keep)


def take_rows(table: Any, keep: np.ndarray) -> Any:
    """The rows at ``keep`` (ascending) of a DataFrame or of the reader's columns, as a new one."""
    if hasattr(table, "layout"):
        from .lines import Parsed
        idx = from_numpy(keep.astype(np.int64))
        return Parsed(table.layout, as_arrow_strings(table.query_id).take(idx),
                      as_arrow_strings(table.doc_id).take(idx), table.value[keep],
                      None if table.line is None else table.line[keep])
    return table.iloc[keep].reset_index(drop=True)
