"""The infAP family: trec_eval 10.0's ``infAP`` (inferred AP, Yilmaz and Aslam, CIKM 2006), served
as ir-measures' built-in ``infAP`` (with ``rel``). Everything that is this family's own is here."""
from __future__ import annotations

from .base import ServedFamily, Spec, builtin_common, builtin_rel, mark_relevant, pick

#: trec_eval's INFAP_EPSILON
EPSILON = 0.00001


def inferred_ap(index, ranked, spec: Spec):
    """trec_eval's ``infAP``, per query: for each relevant doc retrieved at 0-based rank j, with
    r, n, u the relevant, judged non-relevant and pooled-but-unjudged (negative label) docs ranked
    above it (unjudged docs the qrels do not list are skipped)::

        term = 1                                                                   for j = 0
             = 1/(j+1) + (j/(j+1)) * ((r + n + u) / j) * ((r + eps) / (r + n + 2 eps))  otherwise

        infAP(q) = (sum of the terms, in rank order) / num_rel(q), 0 when num_rel(q) = 0; eps = 0.00001"""
    import numpy as np

    from .aggregate import Values
    from .judgments import num_rel, ratio, running_count
    # r, n, u count judged rows only: the running counts are taken over them (few), in the same order
    rows = ranked.memo(("judged positions",), lambda: np.flatnonzero(ranked.judged))
    q_rows, labels = ranked.q[rows], ranked.rel[rows]
    relevant = labels >= spec.rel
    nonrel = (labels >= 0) & (labels < spec.rel)
    unjudged = labels < 0
    q = q_rows[relevant]
    r = (running_count(q_rows, relevant)[relevant] - 1).astype(np.float64)
    n = running_count(q_rows, nonrel)[relevant].astype(np.float64)
    u = running_count(q_rows, unjudged)[relevant].astype(np.float64)
    j = ranked.rank[rows][relevant].astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        later = 1.0 / (j + 1.0) + (j / (j + 1.0)) * ((r + n + u) / j) * ((r + EPSILON) / (r + n + 2 * EPSILON))
    terms = np.where(j == 0, 1.0, later)
    return Values(ratio(np.bincount(q, weights=terms, minlength=ranked.nq), num_rel(index, ranked, spec.rel)))


_LOCAL = {"infAP": inferred_ap}


class InfAPFamily(ServedFamily):
    """Inferred AP (trec_eval ``infAP``)."""
    name = "infap"
    variants = ("infAP",)
    builtins = ("infAP",)
    trec_eval_names = {"infAP": ("infAP", None)}
    formula = inferred_ap.__doc__

    def builtin_spec(self, measure) -> Spec:
        """``infAP(rel=r)``: the whole ranking."""
        _, judged_only = builtin_common(measure)
        return Spec(self.name, "infAP", None, rel=builtin_rel(measure), judged_only=judged_only)

    def values(self, index, ranked, spec: Spec):
        return pick(_LOCAL, spec, "the local engine")(index, ranked, spec)

    def explain(self, trace, shown, measure, num) -> tuple:
        n_rel = int((trace.qrels_rel >= trace.spec.rel).sum())
        return mark_relevant(trace, shown), None, [f"relevant in the qrels: {n_rel}; infAP = {num(trace.value)}"]

    def counterpart(self, measure, qrels: dict, run: dict, oracle) -> tuple:
        """``infAP -l rel``."""
        from .oracle import per_query
        spec = self.builtin_spec(measure)
        res = oracle(qrels, run, "infAP", rel=spec.rel)
        return per_query([res.get(q, 0.0) for q in qrels]), f"infAP -l{spec.rel} -c"


FAMILY = InfAPFamily()
