"""The columnar engine: one ranking of the run, every measure from the same arrays.

Pipeline (no Python loop per query or per document):

1. qrels are indexed once (:class:`ndcg_plugin.ranking.qrels_index.QrelsIndex`): query ids sorted as strings
   (trec_eval's output order), doc ids factorized, (query, doc) packed into sorted int64 keys;
2. the run's query ids become codes from their runs of equal values (one string hashed per
   query in a grouped run) and are mapped to qrels query codes; run queries absent from the
   qrels are dropped, with a warning;
3. only the rows that can rank within the deepest cutoff are kept (:func:`ranking.candidates`): read
   off directly for a ranked run (grouped by query, scores descending: the usual TREC file),
   np.partition for a run grouped by query, one numeric sort otherwise;
4. those rows are ordered by score descending, and only rows whose score ties with a
   neighbour are compared as strings (doc id descending, trec_eval's rule);
5. relevance is joined for those rows only (hash probes into the small qrels, then the packed
   keys), unless a measure needs every row (a family's ``needs_every_row``, ``judged_only``);
   each measure is then its family's reduction of the ranked arrays
   (:meth:`ndcg_plugin.measures.Family.values`), looked up in the registry.
"""
from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass, replace

import numpy as np

from .. import sizes as sizing
from ..arrays.block import Block
from ..arrays.columns import from_numpy
from ..measures import Spec, family
from ..measures.aggregate import Values
from ..ranking import ranked as ranking
from ..ranking.qrels_index import QrelsIndex


class Unmatched:
    """The run queries the qrels lack, counted over the blocks of a run (by the threads that
    evaluate them) and reported once, by :meth:`report`."""

    def __init__(self) -> None:
        self.unmatched = self.total = 0
        self._lock = threading.Lock()

    def add(self, unmatched: int, total: int) -> None:
        """A block's count: ``unmatched`` of its ``total`` run queries are not in the qrels."""
        with self._lock:
            self.unmatched += unmatched
            self.total += total

    def report(self) -> None:
        ranking.report_unmatched(self.unmatched, self.total)


@dataclass
class BlockValues:
    """The values of a run's queries (or of a streamed block's) that the qrels hold: ``codes`` are
    their qrels codes, and each spec's ``values`` are aligned with them. ``run_queries``: the
    block's run queries, with those the qrels lack (:attr:`unmatched`)."""
    codes: np.ndarray
    values: dict[Spec, Values]
    run_queries: int

    @property
    def unmatched(self) -> int:
        """Run queries of the block that the qrels lack (not evaluated)."""
        return self.run_queries - len(self.codes)


def compute_block(index: QrelsIndex, run, specs: Iterable[Spec]) -> BlockValues:
    """Every spec's values for the queries of a run block (a :class:`~ndcg_plugin.arrays.block.Block`;
    a table given is made one), in work proportional to the block (not to the qrels). The block
    is joined once (:func:`ranking.join`) and ranked once per judged_only setting, only as deep
    as the deepest cutoff asks. Run queries absent from the qrels are counted
    (:attr:`BlockValues.unmatched`), not reported: the caller reports them once. A spec of a
    family the registry does not know is refused by name before anything is read."""
    specs = list(dict.fromkeys(specs))
    families = {spec: family(spec.family) for spec in specs}
    block = run if isinstance(run, Block) else Block.of(run)
    every = any(s.judged_only or families[s].needs_every_row(s) for s in specs)
    depths = {s: families[s].depth(s) for s in specs}
    # with one depth asked of every row, a ranked run is cut at it as it is joined
    cut = None if every or not specs or any(d is None for d in depths.values()) else max(depths.values())
    rows = ranking.join(index, block, depth=cut)
    if every:
        rows.judge(index)  # these need the relevance of every row, not only the top ones
    by_judged: dict[bool, ranking.RankedRun] = {}
    for judged_only in sorted({s.judged_only for s in specs}):
        mine = [s for s in specs if s.judged_only == judged_only]
        depth = None if any(depths[s] is None for s in mine) else max(depths[s] for s in mine)
        # judged_only, as trec_eval -J: drop unjudged docs and negative labels, then rank
        subset = rows.subset(rows.judged & (rows.rel >= 0)) if judged_only else rows
        by_judged[judged_only] = ranking.rank_rows(subset, depth, index, any(s.ties == "average" for s in mine))
    return BlockValues(rows.codes, {spec: families[spec].values(index, by_judged[spec.judged_only], spec)
                                    for spec in specs}, len(block.groups.uniques))


def empty_values(index: QrelsIndex, specs: Iterable[Spec]) -> dict[Spec, Values]:
    """Every spec's values over all the qrels queries as if the run held no row for any of them
    (what a qrels query missing from the run gets): arrays aligned with ``index.qids``."""
    none = np.zeros(0, dtype=np.int64)
    ranked = ranking.RankedRun(q=none, rank=none, rel=none, judged=none.astype(bool), score=none.astype(np.float64),
                               returned=np.zeros(index.nq, dtype=np.int64), pool_q=none, pool_rel=none, nq=index.nq,
                               codes=np.arange(index.nq))
    return {spec: family(spec.family).values(index, ranked, spec) for spec in dict.fromkeys(specs)}


def scatter(out: dict[Spec, Values], block: BlockValues) -> None:
    """Write a block's values into arrays over all the qrels queries (from :func:`empty_values`)."""
    for spec, vals in block.values.items():
        acc = out[spec]
        acc.values[block.codes] = vals.values
        if vals.hits is not None:
            acc.hits[block.codes] = vals.hits
            acc.returned[block.codes] = vals.returned


def covers_all(block: BlockValues, nq: int) -> bool:
    """Whether the block's queries are every qrels query of the index, in its order (``codes`` is
    0..nq-1): then its values are already what :func:`scatter` would write over
    :func:`empty_values` (a block of an interaction log and the qrels streamed beside it)."""
    codes = block.codes
    return len(codes) == nq and (nq == 0 or (int(codes[-1]) == nq - 1 and
                                             bool(np.all(codes[1:] > codes[:-1]))))


def compute(index: QrelsIndex, run, specs: Iterable[Spec], counts: Unmatched | None = None
            ) -> dict[Spec, Values]:
    """Every spec's per-query values over all the qrels queries (aligned with ``index.qids``) for a
    run (a table, or a :class:`~ndcg_plugin.arrays.block.Block` of one): a query the run lacks
    gets what :func:`empty_values` gives it. Run queries absent from the qrels are reported in a
    warning, or counted into ``counts`` when given. See :func:`compute_block`."""
    specs = list(dict.fromkeys(specs))
    block = compute_block(index, run, specs)
    if counts is None:
        ranking.report_unmatched(block.unmatched, block.run_queries)
    else:
        counts.add(block.unmatched, block.run_queries)
    if covers_all(block, index.nq):  # each qrels query has its run rows, in the qrels' order
        return {spec: Values(v.values.copy(), None if v.hits is None else v.hits.copy(),
                             None if v.returned is None else v.returned.copy()) for spec, v in block.values.items()}
    out = empty_values(index, specs)
    scatter(out, block)
    return out


def compute_in_blocks(index: QrelsIndex, run, specs: Iterable[Spec]) -> dict[Spec, Values]:
    """:func:`compute` of a whole run in memory (a DataFrame, the reader's columns, or a
    :class:`~ndcg_plugin.arrays.block.Block` of either), cut into blocks of whole queries of
    about ``sizes.BLOCK_ROWS`` rows, ``sizes.WORKERS`` evaluated at once: the values of one block
    of the whole run, since each query's rows stay in one block (a run not grouped by query is
    evaluated as one block). Smaller blocks keep each step's arrays in cache and numpy releases
    the GIL in most of a block's work. Run queries absent from the qrels are reported once, as
    :func:`compute` reports them."""
    from concurrent.futures import ThreadPoolExecutor

    from ..arrays.columns import columns_of, query_pieces
    from ..reading.formats import LAYOUTS
    from ..reading.lines import Parsed
    specs = list(dict.fromkeys(specs))
    given = run if isinstance(run, Block) else None
    qids, docs, score = columns_of(run if given is None else given.rows, "score")
    if len(score) <= sizing.BLOCK_ROWS:
        return compute(index, run, specs)
    # the run's columns, each block a slice of them, with the group codes given or computed once
    columns = Parsed(LAYOUTS["trec"], qids, docs, score, None)
    whole = Block.of(columns) if given is None else replace(given, rows=columns)
    codes = whole.groups.codes
    if np.any(codes[1:] < codes[:-1]):
        return compute(index, whole, specs)  # not grouped by query
    counts = Unmatched()
    out = empty_values(index, specs)
    with ThreadPoolExecutor(max_workers=sizing.WORKERS, thread_name_prefix="ndcg-plugin-block") as pool:
        for result in pool.map(lambda b: compute_block(index, whole.slice(*b), specs),
                               query_pieces(whole.groups.sizes, sizing.BLOCK_ROWS)):
            counts.add(result.unmatched, result.run_queries)
            scatter(out, result)
    counts.report()
    return out


@dataclass
class QueryTrace:
    """One query as :func:`compute` ranks and scores it, row by row (for ``explain``). Rows are
    the run's docs for the query in trec_eval's order (score descending, doc id descending)."""
    spec: Spec
    doc_id: list
    score: np.ndarray
    relevance: np.ndarray     # the label, 0 where unjudged
    judged: np.ndarray        # the doc is judged for the query (a label, possibly 0 or negative)
    kept: np.ndarray          # ranked by the measure (judged_only drops the others)
    rank: np.ndarray          # 1-based rank among the rows the measure ranks; 0 for a row judged_only drops
    top: np.ndarray           # ranked within the cutoff
    relevant: np.ndarray      # judged with a label >= spec.rel
    qrels_rel: np.ndarray     # the labels the qrels give the query
    value: float              # compute()'s value for the query
    hits: float | None = None       # item-level measures: compute()'s hits and returned
    returned: float | None = None


def explain_query(index: QrelsIndex, run, query_id: str, spec: Spec) -> QueryTrace:
    """One query's rows, ranks and value (see :class:`QueryTrace`), from the functions
    :func:`compute` uses: the join, the order and the family's computation."""
    code = int(index.code_of([query_id])[0])
    if code < 0:
        raise ValueError(f"query {query_id!r} is not in the qrels")
    run = run[run["query_id"] == query_id]
    values = compute(index, run, [spec], Unmatched())[spec]  # counted, not warned of
    rows = ranking.join(index, Block.of(run)).judge(index)
    docs = rows.doc_ids()
    order = ranking.trec_eval_order(rows.group, rows.score, docs)
    rel, judged = rows.rel[order], rows.judged[order]
    kept = judged & (rel >= 0) if spec.judged_only else np.ones(len(order), dtype=bool)
    rank = np.where(kept, np.cumsum(kept), 0)
    top = kept & (rank <= spec.cutoff) if spec.cutoff is not None else kept
    counts = [None if a is None else float(a[code]) for a in (values.hits, values.returned)]
    return QueryTrace(spec, docs.take(from_numpy(order)).to_pylist(), rows.score[order], rel, judged, kept,
                      rank, top, judged & (rel >= spec.rel), index.rel[index.key_q == code],
                      float(values.values[code]), *counts)
