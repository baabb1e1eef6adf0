"""Each query's top rows in trec_eval's order (score descending, then doc id descending): the
rows trec_eval's ``-M N`` evaluates, and the ones repro_eval keeps at its depth. The rows kept
keep their order; a query with no more rows than the depth keeps them all."""
from __future__ import annotations

from typing import Any

import numpy as np

from ..arrays.block import Block
from ..arrays.columns import columns_of, group_codes
from ..ranking.ranked import group_ranks, trec_eval_order
from ..reading.duplicates import take_rows


def check_depth(depth: Any) -> int | None:
    """``depth`` when it is None (every row) or a whole number >= 1; a ValueError that says so otherwise."""
    if depth is not None and (isinstance(depth, bool) or not isinstance(depth, (int, np.integer)) or depth < 1):
        raise ValueError(f"depth must be a whole number >= 1 (or None: every row), got {depth!r}")
    return None if depth is None else int(depth)


def kept_rows(codes: np.ndarray, score: np.ndarray, docs: Any, depth: int) -> np.ndarray | None:
    """The rows (ascending) among each query's first ``depth`` in trec_eval's order, for rows of
    query codes ``codes``; None when no query has more rows than that (every row is kept)."""
    if len(codes) == 0 or int(np.bincount(codes).max()) <= depth:
        return None
    order = trec_eval_order(codes, np.asarray(score, dtype=np.float64), docs)
    return np.sort(order[group_ranks(codes[order]) < depth])


def top_documents(rows: Any, depth: int | None) -> Any:
    """A table (the reader's columns, or a DataFrame with a ``score`` column) cut to each query's
    top ``depth`` rows (see the module docstring); the table itself when nothing is cut (or
    ``depth`` is None)."""
    if depth is None:
        return rows
    qids, docs, score = columns_of(rows, "score")
    keep = kept_rows(group_codes(qids)[0], score, docs, depth)
    return rows if keep is None else take_rows(rows, keep)


def top_of_block(block: Block, depth: int | None) -> Block:
    """:func:`top_documents` of a block's rows, its group codes reused; a block of fewer rows is
    made anew (:meth:`Block.of`), the block itself when nothing is cut."""
    if depth is None:
        return block
    _, docs, score = columns_of(block.rows, "score")
    keep = kept_rows(block.groups.codes, score, docs, depth)
    return block if keep is None else Block.of(take_rows(block.rows, keep))
