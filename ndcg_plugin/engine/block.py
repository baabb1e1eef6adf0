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

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from .. import sizes as sizing
from ..arrays.columns import Groups, from_numpy
from ..measures import Spec, family
from ..measures.aggregate import Values
from ..ranking import ranked as ranking
from ..ranking.qrels_index import QrelsIndex


@dataclass
class Block:
    """The values of a run's queries (or of a streamed block's) that the qrels hold: ``codes`` are
    their qrels codes, and each spec's ``values`` are aligned with them."""
    codes: np.ndarray
    values: dict[Spec, Values]


def compute_block(index: QrelsIndex, run, specs: Iterable[Spec], counts: list | None = None,
                  groups: Groups | None = None, q_map: np.ndarray | None = None,
                  doc_fp: np.ndarray | None = None) -> Block:
    """Every spec's values for the run's queries, in work proportional to the run (not to the
    qrels). The run is joined once and ranked once per judged_only setting, only as deep as the
    deepest cutoff asks. Run queries absent from the qrels are reported in a warning, or counted
    into ``counts`` (see :func:`ranking.join`, also for ``groups``, ``q_map`` and ``doc_fp``). A spec of a
    family the registry does not know is refused by name before anything is read."""
    specs = list(dict.fromkeys(specs))
    families = {spec: family(spec.family) for spec in specs}
    every = any(s.judged_only or families[s].needs_every_row(s) for s in specs)
    # with one depth asked of every row, a ranked run is cut at it as it is joined
    cut = None if every or not specs or any(s.cutoff is None for s in specs) else max(s.cutoff for s in specs)
    rows = ranking.join(index, run, counts, groups, q_map, doc_fp, depth=cut)
    if every:
        rows.judge(index)  # these need the relevance of every row, not only the top ones
    by_judged: dict[bool, ranking.RankedRun] = {}
    for judged_only in sorted({s.judged_only for s in specs}):
        mine = [s for s in specs if s.judged_only == judged_only]
        depth = None if any(s.cutoff is None for s in mine) else max(s.cutoff for s in mine)
        # judged_only, as trec_eval -J: drop unjudged docs and negative labels, then rank
        subset = rows.subset(rows.judged & (rows.rel >= 0)) if judged_only else rows
        by_judged[judged_only] = ranking.rank_rows(subset, depth, index, any(s.ties == "average" for s in mine))
    return Block(rows.codes, {spec: families[spec].values(index, by_judged[spec.judged_only], spec) for spec in specs})


def empty_values(index: QrelsIndex, specs: Iterable[Spec]) -> dict[Spec, Values]:
    """Every spec's values over all the qrels queries as if the run held no row for any of them
    (what a qrels query missing from the run gets): arrays aligned with ``index.qids``."""
    none = np.zeros(0, dtype=np.int64)
    ranked = ranking.RankedRun(q=none, rank=none, rel=none, judged=none.astype(bool), score=none.astype(np.float64),
                               returned=np.zeros(index.nq, dtype=np.int64), pool_q=none, pool_rel=none, nq=index.nq,
                               codes=np.arange(index.nq))
    return {spec: family(spec.family).values(index, ranked, spec) for spec in dict.fromkeys(specs)}


def scatter(out: dict[Spec, Values], block: Block) -> None:
    """Write a block's values into arrays over all the qrels queries (from :func:`empty_values`)."""
    for spec, vals in block.values.items():
        acc = out[spec]
        acc.values[block.codes] = vals.values
        if vals.hits is not None:
            acc.hits[block.codes] = vals.hits
            acc.returned[block.codes] = vals.returned


def covers_all(block: Block, nq: int) -> bool:
    """Whether the block's queries are every qrels query of the index, in its order (``codes`` is
    0..nq-1): then its values are already what :func:`scatter` would write over
    :func:`empty_values` (a block of an interaction log and the qrels streamed beside it)."""
    codes = block.codes
    return len(codes) == nq and (nq == 0 or (int(codes[-1]) == nq - 1 and
                                             bool(np.all(codes[1:] > codes[:-1]))))


def compute(index: QrelsIndex, run, specs: Iterable[Spec], counts: list | None = None,
            groups: Groups | None = None, q_map: np.ndarray | None = None,
            doc_fp: np.ndarray | None = None) -> dict[Spec, Values]:
    """Every spec's per-query values over all the qrels queries (aligned with ``index.qids``): a
    query the run lacks gets what :func:`empty_values` gives it. See :func:`compute_block`."""
    specs = list(dict.fromkeys(specs))
    block = compute_block(index, run, specs, counts, groups, q_map, doc_fp)
    if covers_all(block, index.nq):  # each qrels query has its run rows, in the qrels' order
        return {spec: Values(v.values.copy(), None if v.hits is None else v.hits.copy(),
                             None if v.returned is None else v.returned.copy()) for spec, v in block.values.items()}
    out = empty_values(index, specs)
    scatter(out, block)
    return out




def compute_in_blocks(index: QrelsIndex, run, specs: Iterable[Spec],
                      groups: Groups | None = None) -> dict[Spec, Values]:
    """:func:`compute` of a whole run in memory (a DataFrame, or the reader's columns), cut into
    blocks of whole queries of about ``sizes.BLOCK_ROWS`` rows, ``sizes.WORKERS`` evaluated at once: the
    values of one block of the whole run, since each query's rows stay in one block (a run not
    grouped by query is evaluated as one block). Smaller blocks keep each step's arrays in cache
    and numpy releases the GIL in most of a block's work. Run queries absent from the qrels are
    reported once, as :func:`compute` reports them."""
    from concurrent.futures import ThreadPoolExecutor

    from ..arrays.columns import columns_of, group_codes, query_pieces
    from ..reading.formats import LAYOUTS
    from ..reading.lines import Parsed
    specs = list(dict.fromkeys(specs))
    qids, docs, score = columns_of(run, "score")
    if len(score) <= sizing.BLOCK_ROWS:
        return compute(index, run, specs, groups=groups)
    groups = groups if groups is not None else group_codes(qids)
    codes = groups.codes
    if np.any(codes[1:] < codes[:-1]):
        return compute(index, run, specs, groups=groups)  # not grouped by query
    counts: list = []

    def block(bounds: tuple[int, int, int, int]) -> Block:
        lo, hi, a, b = bounds
        piece = Parsed(LAYOUTS["trec"], qids.slice(a, b - a), docs.slice(a, b - a), score[a:b], None)
        return compute_block(index, piece, specs, counts, groups.slice(lo, hi, a, b))

    out = empty_values(index, specs)
    with ThreadPoolExecutor(max_workers=sizing.WORKERS, thread_name_prefix="ndcg-plugin-block") as pool:
        for result in pool.map(block, query_pieces(groups.sizes, sizing.BLOCK_ROWS)):
            scatter(out, result)
    ranking.report_unmatched(sum(u for u, _ in counts), sum(t for _, t in counts))
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
    values = compute(index, run, [spec], counts=[])[spec]
    rows = ranking.join(index, run, counts=[]).judge(index)
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
