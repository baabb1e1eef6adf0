"""The precision family: trec_eval 10.0's ``P.k``, ``recall.k`` and ``Rprec``, served as
ir-measures' built-in ``P@k``, ``R@k`` and ``Rprec`` (with ``rel`` and ``judged_only``). One
count, the relevant documents ranked within a depth, over three denominators. Everything that is
this family's own is here: the local computation (the Spark engine runs it too), the explain
layout, the trec_eval counterparts and the docs rows."""
from __future__ import annotations

from .base import ServedFamily, Spec, builtin_common, builtin_rel, by_name, mark_relevant, pick, refuse


def precision(index, ranked, spec: Spec):
    """``P@k(q) = (relevant docs ranked <= k) / k``: k also when the run returns fewer (trec_eval ``P.k``)."""
    from .aggregate import Values
    from .judgments import hits_in_top
    return Values(hits_in_top(ranked, spec.rel, spec.cutoff) / float(spec.cutoff))


def recall(index, ranked, spec: Spec):
    """``R@k(q) = (relevant docs ranked <= k) / num_rel(q)``, 0 without relevant docs (trec_eval ``recall.k``)."""
    from .aggregate import Values
    from .judgments import hits_in_top, num_rel, ratio
    return Values(ratio(hits_in_top(ranked, spec.rel, spec.cutoff), num_rel(index, ranked, spec.rel)))


def r_precision(index, ranked, spec: Spec):
    """``Rprec(q) = (relevant docs ranked <= R) / R`` with R = num_rel(q), 0 when R = 0 (trec_eval ``Rprec``)."""
    import numpy as np

    from .aggregate import Values
    from .judgments import num_rel, ratio, relevant_rows
    n_rel = num_rel(index, ranked, spec.rel)
    q, rank = relevant_rows(ranked, spec.rel)  # only the relevant rows can count
    return Values(ratio(np.bincount(q[rank < n_rel[q]], minlength=ranked.nq).astype(np.float64), n_rel))


_LOCAL = {"P": precision, "R": recall, "Rprec": r_precision}
#: the variant each built-in is, and whether it needs a cutoff
_BUILTIN = {"P": ("P", True), "R": ("R", True), "Rprec": ("Rprec", False)}


class PrecisionFamily(ServedFamily):
    """P@k, R@k and Rprec: relevant docs ranked within a depth, over k, num_rel, num_rel."""
    name = "precision"
    variants = ("P", "R", "Rprec")
    builtins = ("P", "R", "Rprec")
    trec_eval_names = {"P": ("P@{k}", None), "recall": ("R@{k}", None), "Rprec": ("Rprec", None)}
    conventions = (
        "| P@k denominator | k, also when the run returns fewer than k docs (trec_eval `P.k`; `SetP` divides by the "
        "docs returned) | `test_precision_divides_by_k_even_for_short_runs` |",
    )
    formula = "\n".join(f.__doc__ for f in _LOCAL.values())

    def builtin_spec(self, measure) -> Spec:
        """``P(rel=r, judged_only=j)@k``, ``R(...)@k`` (both need a cutoff), ``Rprec(...)`` (none)."""
        cutoff, judged_only = builtin_common(measure)
        variant, needs_cutoff = by_name(_BUILTIN, measure)
        if needs_cutoff and cutoff is None:
            refuse(measure, f"{measure.NAME} needs a cutoff, e.g. {measure.NAME}@10")
        return Spec(self.name, variant, cutoff, rel=builtin_rel(measure), judged_only=judged_only)

    def depth(self, spec: Spec) -> int | None:
        return None if spec.variant == "Rprec" else spec.cutoff  # Rprec: each query's own R

    def values(self, index, ranked, spec: Spec):
        return pick(_LOCAL, spec, "the local engine")(index, ranked, spec)

    def explain(self, trace, shown, measure, num) -> tuple:
        """The rows marked relevant; the count and its denominator."""
        spec = trace.spec
        n_rel = int((trace.qrels_rel >= spec.rel).sum())
        if spec.variant == "Rprec":
            hits = int((trace.kept & trace.relevant & (trace.rank >= 1) & (trace.rank <= n_rel)).sum())
            line = f"relevant in the top R = {n_rel}: {hits}; Rprec = {num(trace.value)}"
        else:
            hits = int((trace.top & trace.relevant).sum())
            den = pick({"P": f"{spec.cutoff} (k)", "R": f"{n_rel} (relevant in the qrels)"}, spec, "explain")
            line = f"relevant in the top {spec.cutoff}: {hits}; {spec.variant} = {hits} / {den} = {num(trace.value)}"
        return mark_relevant(trace, shown), None, [line]

    def counterpart(self, measure, qrels: dict, run: dict, oracle) -> tuple:
        """``P.k``, ``recall.k``, ``Rprec`` with ``-l rel``."""
        from .oracle import judged_run, per_query
        spec = self.builtin_spec(measure)
        name = pick({"P": f"P.{spec.cutoff}", "R": f"recall.{spec.cutoff}", "Rprec": "Rprec"}, spec, "crosscheck")
        res = oracle(qrels, judged_run(qrels, run) if spec.judged_only else run, name, rel=spec.rel)
        return per_query([res.get(q, 0.0) for q in qrels]), f"{name} -l{spec.rel} -c{' -J' if spec.judged_only else ''}"


FAMILY = PrecisionFamily()
