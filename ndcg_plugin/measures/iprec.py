"""The interpolated precision family: trec_eval 10.0's ``iprec_at_recall`` (and, in the drop-in,
``11pt_avg``, the mean of its 11 levels), served as ir-measures' built-in ``IPrec@r`` (with ``rel``
and ``judged_only``). trec_eval 10.0 turns a recall level into a number of relevant documents with
``lround(level * num_rel)``; pytrec_eval's 9.0 code with ``(long)(level * num_rel + 0.9)``: the
numbers differ (on the trec_eval suite, ``iprec_at_recall_0.60`` of topic 302: 0.1528 against
0.1420), and the engine's are 10.0's. Everything that is this family's own is here."""
from __future__ import annotations

from .base import ServedFamily, Spec, builtin_common, builtin_rel, mark_relevant, param, pick, refuse


def lround(x):
    """C's ``lround`` of doubles >= 0 (halves away from zero), exactly: ``x - floor(x)`` is exact."""
    import numpy as np

    whole = np.floor(x)
    return (whole + (x - whole >= 0.5)).astype(np.int64)


def interpolated_precision(index, ranked, spec: Spec):
    """trec_eval's ``iprec_at_recall``, per query: with c = lround(r * num_rel), hit j the j-th
    relevant doc retrieved (at rank r_j) and P_j = j / r_j::

        IPrec@r(q) = max(num_rel_ret / num_ret, max over j >= c of P_j)   for 1 <= c <= num_rel_ret
                   = max(num_rel_ret / num_ret, max over every j of P_j)  for c = 0
                   = 0                                                    for c > num_rel_ret

    num_rel_ret / num_ret is 0 for a query with no returned doc (trec_eval -c ranks one unjudged
    doc for it), NaN with judged_only (trec_eval -J divides 0 by 0)."""
    import numpy as np

    from .aggregate import Values
    from .judgments import num_rel
    shared = ranked.memo(("iprec", spec.rel, spec.judged_only), lambda: _interpolated(ranked, spec))
    nq = ranked.nq
    first, rel_ret = shared[:nq].astype(np.int64), shared[nq:2 * nq].astype(np.int64)
    floor, best = shared[2 * nq:3 * nq], shared[3 * nq:]
    cut = lround(spec.recall * num_rel(index, ranked, spec.rel).astype(np.float64))
    if len(best):
        at = np.clip(first + np.maximum(cut, 1) - 1, 0, len(best) - 1)
        values = np.where(cut > rel_ret, 0.0, best[at])
    else:
        values = floor
    return Values(np.where(rel_ret == 0, np.where(cut > 0, 0.0, floor), values))


def _interpolated(ranked, spec: Spec):
    """What every recall level shares, as one float64 array (the ranking's memo holds arrays):
    per query, its first hit's position among the hits, its hits (both integers, exact in a
    double) and num_rel_ret / num_ret; then the interpolated precision at each hit (the hits by
    query in rank order)."""
    import numpy as np

    from ..ranking.ranked import group_ranks
    relevant = ranked.relevant(spec.rel)
    q, rank = ranked.q[relevant], ranked.rank[relevant]
    precision = (group_ranks(q) + 1) / (rank + 1.0)         # the hits of a query are in rank order
    rel_ret = np.bincount(q, minlength=ranked.nq)
    returned = ranked.returned
    with np.errstate(divide="ignore", invalid="ignore"):
        floor = np.where(returned > 0, rel_ret / np.where(returned > 0, returned, 1),
                         np.nan if spec.judged_only else 0.0)
    best = np.maximum(_suffix_max(q, precision), floor[q])  # IP at each hit: the max from it down
    first = np.cumsum(rel_ret) - rel_ret                    # each query's first hit's position in q
    out = np.zeros(3 * ranked.nq + len(best))
    out[:3 * ranked.nq] = np.concatenate([first, rel_ret, floor])
    out[3 * ranked.nq:] = best
    return out


def _suffix_max(q, values):
    """For rows by query (``q`` never decreases): the max of ``values`` over each row and the
    rows of its query after it, exactly (values ranked as integers, one offset per query)."""
    import numpy as np

    if not len(values):
        return values
    uniques, code = np.unique(values, return_inverse=True)
    width = len(uniques) + 1
    offset = (int(q.max()) - q).astype(np.int64) * width    # increasing from the last query to the first
    scanned = np.maximum.accumulate((code + offset)[::-1])[::-1]
    return uniques[scanned - offset]


_LOCAL = {"iprec": interpolated_precision}


class IPrecFamily(ServedFamily):
    """Interpolated precision at a recall level (trec_eval ``iprec_at_recall``)."""
    name = "iprec"
    variants = ("iprec",)
    builtins = ("IPrec",)
    trec_eval_names = {"iprec_at_recall": ("IPrec@{r}", None)}
    conventions = (
        "| recall level to a number of relevant docs (IPrec) | `lround(level * num_rel)`, as trec_eval 10.0 (9.0 and "
        "pytrec_eval: `(long)(level * num_rel + 0.9)`) | `test_iprec_rounds_the_recall_level_as_trec_eval_10` |",
    )
    formula = interpolated_precision.__doc__

    def builtin_spec(self, measure) -> Spec:
        """``IPrec(rel=r, judged_only=j)@level``: a recall level between 0 and 1."""
        _, judged_only = builtin_common(measure)
        level = param(measure, "recall")
        if isinstance(level, bool) or not isinstance(level, (int, float)) or not 0 <= level <= 1:
            refuse(measure, f"the recall level must be a number between 0 and 1, got {level!r}")
        return Spec(self.name, "iprec", None, rel=builtin_rel(measure), judged_only=judged_only,
                    recall=float(level))

    def values(self, index, ranked, spec: Spec):
        return pick(_LOCAL, spec, "the local engine")(index, ranked, spec)

    def explain(self, trace, shown, measure, num) -> tuple:
        n_rel = int((trace.qrels_rel >= trace.spec.rel).sum())
        line = (f"recall level {trace.spec.recall} of {n_rel} relevant docs: lround = "
                f"{int(lround(trace.spec.recall * n_rel))} docs; IPrec = {num(trace.value)}")
        return mark_relevant(trace, shown), None, [line]

    def counterpart(self, measure, qrels: dict, run: dict, oracle) -> tuple:
        return None, "no counterpart: pytrec_eval computes iprec_at_recall as trec_eval 9.0 (see the docs)"


FAMILY = IPrecFamily()
