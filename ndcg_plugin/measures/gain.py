"""The gain family: trec_eval 10.0's experimental gain measures ``binG``, ``G``, ``ndcg_rel`` and
``Rndcg``, with trec_eval's default gains (a label's gain is the label; negative labels and
documents the qrels do not list gain 0). They have no ir-measures name: the trec_eval drop-in
computes them through the engine (:mod:`ndcg_plugin.measures.trec_only`). Each reads the whole
ranking. trec_eval computes them with running sums down the ranking; the sums here are the same
doubles: running sums are taken query by query in rank order (:func:`running_sum`), and sums of
terms are added in rank order (``np.bincount`` adds its weights in input order)."""
from __future__ import annotations

from .base import ServedFamily, Spec, mark_relevant, pick
from .trec_only import trec_eval_measure


def _np():
    import numpy as np  # on use: `import ndcg_plugin` imports no numpy

    return np


def running_sum(q, values):
    """For rows by query (``q`` never decreases): each row's sum of ``values`` over its query's
    rows up to it, added one by one in row order (``np.cumsum`` of each query alone: the doubles
    of a loop down the query's rows)."""
    np = _np()
    n = len(q)
    if n == 0:
        return np.zeros(0)
    starts = np.flatnonzero(np.r_[True, q[1:] != q[:-1]])
    sizes = np.diff(np.r_[starts, n])
    width = int(sizes.max())
    if len(starts) * width <= 4 * n + 4096:  # one matrix, a query a row, summed along the rows
        row, col = np.repeat(np.arange(len(starts)), sizes), np.arange(n) - np.repeat(starts, sizes)
        matrix = np.zeros((len(starts), width))
        matrix[row, col] = values
        np.cumsum(matrix, axis=1, out=matrix)
        return matrix[row, col]
    out = np.empty(n)
    for s, size in zip(starts.tolist(), sizes.tolist(), strict=True):
        out[s:s + size] = np.cumsum(values[s:s + size])
    return out


def ideal(index):
    """The qrels' ideal ranking with trec_eval's default gains, per query code: ``(start, n_pos,
    gain, idcg, last, qs)``: where the query's positive labels start in the flat arrays and how
    many it has; each one's gain (its label, descending within the query); the ideal DCG down to
    it; whether it is the last of its gain level (trec_eval's ideal gain changes after it); its
    query code."""
    np = _np()

    def compute():
        from .ndcg import ideal_by_label
        qs, rs, rank = ideal_by_label(index.key_q, index.rel, None)
        n_pos = np.bincount(qs, minlength=index.nq)
        start = np.cumsum(n_pos) - n_pos
        gain = rs.astype(np.float64)
        idcg = running_sum(qs, gain / np.log2(rank + 2.0))
        last = np.r_[(qs[1:] != qs[:-1]) | (rs[1:] != rs[:-1]), True] if len(qs) else np.zeros(0, dtype=bool)
        return start, n_pos, gain, idcg, last, qs
    return index.memo(("gain ideal",), compute)


def _hits(ranked):
    """(local query, rank, gain) of the ranked rows with a positive gain (a label > 0 in the
    qrels), in rank order: the only rows that change a sum of these measures (trec_eval adds a
    term only where the gain is not 0)."""
    np = _np()
    hit = ranked.relevant(1)
    return ranked.q[hit], ranked.rank[hit], ranked.rel[hit].astype(np.float64)


def bin_g(index, ranked, spec: Spec):
    """``binG``: with the relevant docs (label >= rel) retrieved at 0-based ranks i, each after
    n_i non-relevant ones, ``sum 1 / log2(2 + n_i)``, over num_rel (0 when none is retrieved)."""
    np = _np()
    from ..ranking.ranked import group_ranks
    from .aggregate import Values
    from .judgments import num_rel
    hit = ranked.relevant(spec.rel)
    q, rank = ranked.q[hit], ranked.rank[hit]
    so_far = group_ranks(q) + 1
    sums = np.bincount(q, weights=1.0 / np.log2((3 + rank - so_far).astype(np.float64)), minlength=ranked.nq)
    n_rel = num_rel(index, ranked, spec.rel).astype(np.float64)
    found = np.bincount(q, minlength=ranked.nq) > 0
    return Values(np.where(found, sums / np.where(found, n_rel, 1.0), 0.0))


def g(index, ranked, spec: Spec):
    """``G``: with g_i the gain at 0-based rank i, I_j the ideal gains (0 past the positive
    labels), ``cost_i = sum over j <= i of max(I_j, 1)`` and ``got_i = sum over j <= i of g_j``,
    ``sum over g_i != 0 of g_i / log2(2 + cost_i - got_i)``, over the sum of the ideal gains
    (0 when that is 0). Every cost and gain is an integer: the sums are exact."""
    np = _np()
    from .aggregate import Values
    start, n_pos, gain, _, _, _ = ideal(index)
    total = np.bincount(np.repeat(np.arange(index.nq), n_pos), weights=gain, minlength=index.nq)
    prefix = np.r_[0.0, np.cumsum(gain)]  # integers: exact in any order
    q, rank, gains = _hits(ranked)
    code = ranked.codes[q]
    depth = np.minimum(rank + 1, n_pos[code])
    cost = prefix[start[code] + depth] - prefix[start[code]] + (rank + 1 - depth)
    running = np.cumsum(gains)  # integers: the running sum of a query is exact as a difference
    got = running - np.repeat(np.r_[0.0, running][_starts(q)], np.diff(np.r_[_starts(q), len(q)]))
    sums = np.bincount(q, weights=gains / np.log2(2.0 + cost - got), minlength=ranked.nq)
    tot = total[ranked.codes]
    return Values(np.where(tot > 0, sums / np.where(tot > 0, tot, 1.0), 0.0))


def _starts(q):
    """Where each run of equal ``q`` starts."""
    np = _np()
    return np.flatnonzero(np.r_[True, q[1:] != q[:-1]]) if len(q) else np.zeros(0, dtype=np.int64)


def _dcg(ranked):
    """(local query, rank, running DCG) of the rows with a positive gain (:func:`_hits`): the DCG
    down to each, added in rank order (shared by ndcg_rel and Rndcg: read only)."""
    np = _np()
    q, rank, gains = _hits(ranked)
    dcg = ranked.memo(("gain dcg",), lambda: running_sum(q, gains / np.log2(rank + 2.0)))
    return q, rank, dcg


def ndcg_rel(index, ranked, spec: Spec):
    """``ndcg_rel``: the mean over the qrels' docs with a positive gain of an nDCG: at each one
    retrieved (rank i), DCG down to i over the ideal DCG down to min(i, P - 1) (P positive gains);
    the ones not retrieved, the whole DCG over the whole ideal DCG. 0 when that mean is not > 0."""
    np = _np()
    from .aggregate import Values
    start, n_pos, _, idcg, _, _ = ideal(index)
    q, rank, dcg = _dcg(ranked)
    code = ranked.codes[q]
    at = start[code] + np.minimum(rank, n_pos[code] - 1)
    sums = np.bincount(q, weights=dcg / idcg[at], minlength=ranked.nq)
    found = np.bincount(q, minlength=ranked.nq)
    pos = n_pos[ranked.codes]
    whole_idcg = np.where(pos > 0, idcg[np.maximum(start[ranked.codes] + pos - 1, 0)] if len(idcg) else 0.0, 0.0)
    whole_dcg = _last_per_query(q, dcg, ranked.nq)
    with np.errstate(divide="ignore", invalid="ignore"):
        sums = sums + (pos - found).astype(np.float64) * whole_dcg / whole_idcg
        return Values(np.where(sums > 0, sums / np.where(pos > 0, pos, 1), 0.0))


def _last_per_query(q, running, nq: int):
    """Each query's last value of a running sum over its rows (0 for a query without rows)."""
    np = _np()
    out = np.zeros(nq)
    out[q] = running  # rows in rank order: the last row of a query is written last
    return out


def r_ndcg(index, ranked, spec: Spec):
    """``Rndcg``: the mean of nDCG@p over the ranks p where the ideal gain changes (after the last
    doc of each gain level, P positive gains in all), and nDCG over the whole ranking when the
    run returns more than P + 1 docs; 0 when the query has no relevant doc (label >= rel)."""
    np = _np()
    from .aggregate import Values
    from .judgments import num_rel
    start, n_pos, _, idcg, last, qs = ideal(index)
    hq, hrank, dcg = _dcg(ranked)
    codes = ranked.codes
    # the level ends of each query of the ranking: positions in the flat ideal arrays
    ends = np.flatnonzero(last)
    per = np.bincount(qs[ends], minlength=index.nq)
    first = np.cumsum(per) - per
    take = per[codes]
    local = np.repeat(np.arange(ranked.nq), take)
    chosen = ends[np.arange(int(take.sum())) - np.repeat(np.cumsum(take) - take, take) + np.repeat(first[codes], take)]
    p = chosen - start[codes[local]] + 1                      # the change is at rank p (nDCG@p)
    # DCG@p: the running DCG at the query's last positive-gain row ranked above p (0 without one)
    width = int(max(int(ranked.returned.max()) if ranked.nq else 0, int(p.max()) if len(p) else 0)) + 1
    keys = hq.astype(np.int64) * width + hrank
    before = np.searchsorted(keys, local.astype(np.int64) * width + p) - 1
    found = before >= 0
    found[found] &= hq[before[found]] == local[found]
    dcg_p = np.where(found, dcg[np.maximum(before, 0)] if len(dcg) else 0.0, 0.0)
    sums = np.bincount(local, weights=dcg_p / idcg[chosen], minlength=ranked.nq)
    count = take.astype(np.float64)
    pos = n_pos[codes]
    tail = ranked.returned > pos + 1
    whole_idcg = np.where(pos > 0, idcg[np.maximum(start[codes] + pos - 1, 0)] if len(idcg) else 1.0, 1.0)
    whole = np.where(tail, _last_per_query(hq, dcg, ranked.nq) / whole_idcg, 0.0)
    sums, count = sums + whole, count + tail
    n_rel = num_rel(index, ranked, spec.rel)
    return Values(np.where((n_rel > 0) & (count > 0), sums / np.where(count > 0, count, 1.0), 0.0))


_LOCAL = {"binG": bin_g, "G": g, "ndcg_rel": ndcg_rel, "Rndcg": r_ndcg}
BIN_G = trec_eval_measure("binG", "gain", "binG", "trec_eval's binG (binary G)")
G = trec_eval_measure("G", "gain", "G", "trec_eval's G (normalized gain, experimental)")
NDCG_REL = trec_eval_measure("ndcg_rel", "gain", "ndcg_rel", "trec_eval's ndcg_rel (nDCG averaged over rel docs)")
RNDCG = trec_eval_measure("Rndcg", "gain", "Rndcg", "trec_eval's Rndcg (nDCG at the R levels)")


class GainFamily(ServedFamily):
    """binG, G, ndcg_rel, Rndcg: trec_eval's experimental gain measures (default gains)."""
    name = "gain"
    variants = tuple(_LOCAL)
    trec_eval_names = {name: (name, None) for name in _LOCAL}
    conventions = (
        "| trec_eval's binG, G, ndcg_rel, Rndcg | the trec_eval drop-in only, with trec_eval's default gains (the "
        "label; a gain map is refused by name) | `test_gain_measures_worked_example` |",
    )
    formula = "\n".join(f.__doc__ for f in _LOCAL.values())

    def depth(self, spec: Spec) -> int | None:
        return None  # the whole ranking

    def values(self, index, ranked, spec: Spec):
        return pick(_LOCAL, spec, "the local engine")(index, ranked, spec)

    def explain(self, trace, shown, measure, num) -> tuple:
        return mark_relevant(trace, shown), None, [f"{measure.NAME} = {num(trace.value)}"]


FAMILY = GainFamily()
