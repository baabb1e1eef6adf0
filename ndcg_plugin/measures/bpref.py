"""The bpref family: trec_eval 10.0's ``bpref``, served as ir-measures' built-in ``Bpref`` (with
``rel``). Everything that is this family's own is here: the local computation (the Spark engine
runs it too), the explain layout, the trec_eval counterpart and the docs rows."""
from __future__ import annotations

from .base import ServedFamily, Spec, builtin_common, builtin_rel, mark_relevant, pick


def bpref(index, ranked, spec: Spec):
    """trec_eval's ``bpref``, per query, with R the relevant and N the judged non-relevant docs of
    the qrels (labels 0..rel-1; a negative label is neither, and unjudged docs are skipped)::

        bpref(q) = 1/R * sum over relevant docs d retrieved of
                   1 - min(n_d, R) / min(N, R)   (1 when n_d = 0)

    where n_d is the number of judged non-relevant docs ranked above d; 0 when R = 0. The terms are
    added in rank order, as trec_eval adds them."""
    import numpy as np

    from .aggregate import Values
    from .judgments import num_nonrel, num_rel, ratio, running_count
    # only the judged rows count: the running count is taken over them (few), in the same order
    rows = ranked.memo(("judged positions",), lambda: np.flatnonzero(ranked.judged))
    q_rows, labels = ranked.q[rows], ranked.rel[rows]
    relevant_at, nonrel = labels >= spec.rel, (labels >= 0) & (labels < spec.rel)
    above = running_count(q_rows, nonrel)[relevant_at]  # a relevant row is not non-relevant: exclusive
    q = q_rows[relevant_at]
    r, n = num_rel(index, ranked, spec.rel)[q], num_nonrel(index, ranked, spec.rel)[q]
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(above > 0, 1.0 - np.minimum(above, r) / np.minimum(n, r).astype(np.float64), 1.0)
    sums = np.bincount(q, weights=terms, minlength=ranked.nq)
    return Values(ratio(sums, num_rel(index, ranked, spec.rel)))


_LOCAL = {"bpref": bpref}


class BprefFamily(ServedFamily):
    """bpref (trec_eval ``bpref``)."""
    name = "bpref"
    variants = ("bpref",)
    builtins = ("Bpref",)
    trec_eval_names = {"bpref": ("Bpref", None)}
    conventions = (
        "| bpref's non-relevant docs | judged with a label 0..rel-1; negative labels and unjudged docs are skipped, "
        "as trec_eval skips them | `test_bpref_skips_unjudged_and_negative_labels` |",
    )
    formula = bpref.__doc__

    def builtin_spec(self, measure) -> Spec:
        """``Bpref(rel=r)``: no cutoff (the whole ranking)."""
        cutoff, judged_only = builtin_common(measure)
        return Spec(self.name, "bpref", cutoff, rel=builtin_rel(measure), judged_only=judged_only)

    def values(self, index, ranked, spec: Spec):
        return pick(_LOCAL, spec, "the local engine")(index, ranked, spec)

    def explain(self, trace, shown, measure, num) -> tuple:
        """The rows marked relevant; R, N and the value."""
        rel = trace.spec.rel
        r = int((trace.qrels_rel >= rel).sum())
        n = int(((trace.qrels_rel >= 0) & (trace.qrels_rel < rel)).sum())
        line = f"relevant in the qrels R = {r}, judged non-relevant N = {n}; bpref = {num(trace.value)}"
        return mark_relevant(trace, shown), None, [line]

    def counterpart(self, measure, qrels: dict, run: dict, oracle) -> tuple:
        """``bpref -l rel``."""
        from .oracle import per_query
        spec = self.builtin_spec(measure)
        res = oracle(qrels, run, "bpref", rel=spec.rel)
        return per_query([res.get(q, 0.0) for q in qrels]), f"bpref -l{spec.rel} -c"


FAMILY = BprefFamily()
