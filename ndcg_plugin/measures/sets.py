"""The set family: trec_eval 10.0's measures of the retrieved set as a whole, ``set_P``,
``set_relative_P``, ``set_recall``, ``set_F`` and ``set_map``, served as ir-measures' built-in
``SetP``, ``SetP(relative=True)``, ``SetR``, ``SetF(beta=b)`` and ``SetAP``. One count each
(num_ret, num_rel_ret over every returned doc, num_rel), no order. Everything that is this
family's own is here."""
from __future__ import annotations

from .base import ServedFamily, Spec, builtin_common, builtin_rel, by_name, mark_relevant, param, pick, refuse


def _counts(index, ranked, spec: Spec):
    """(num_ret, num_rel_ret, num_rel) per query as float64 (num_rel_ret from every judged row the
    run returns: needs_every_row)."""
    import numpy as np

    from .judgments import num_rel
    rel_ret = np.bincount(ranked.pool_q[ranked.pool_rel >= spec.rel], minlength=ranked.nq).astype(np.float64)
    return ranked.returned.astype(np.float64), rel_ret, num_rel(index, ranked, spec.rel).astype(np.float64)


def set_values(index, ranked, spec: Spec):
    """With R = num_rel, r = num_rel_ret, n = num_ret, each 0 where its denominator is 0::

        SetP = r / n      SetP(relative=True) = r / min(n, R)      SetR = r / R
        SetAP = (r * r) / (n * R)      SetF(beta=b) = (b + 1) P R / (b P + R)  (P = r / n, R' = r / R; 0 when r = 0)

    ``b`` is trec_eval's ``set_F`` parameter as it is written there (b = 1: the harmonic mean)."""
    import numpy as np

    from .aggregate import Values
    n, r, big_r = _counts(index, ranked, spec)
    with np.errstate(divide="ignore", invalid="ignore"):
        formula = {
            "P": lambda: np.where(n > 0, r / n, 0.0),
            "relative_P": lambda: np.where((n > 0) & (big_r > 0), r / np.minimum(n, big_r), 0.0),
            "R": lambda: np.where(big_r > 0, r / big_r, 0.0),
            "map": lambda: np.where((n > 0) & (big_r > 0), (r * r) / (n * big_r), 0.0),
            "F": lambda: np.where(r > 0, _f(r / n, r / big_r, spec.beta), 0.0),
        }
        return Values(pick(formula, spec, "the local engine")())


def _f(p, r, x: float):
    return (x + 1.0) * p * r / (x * p + r)


#: the variant each built-in is (SetP by its relative parameter)
_BUILTIN = {"SetP": "P", "SetR": "R", "SetF": "F", "SetAP": "map"}


class SetFamily(ServedFamily):
    """SetP, SetP(relative=True), SetR, SetF, SetAP: the retrieved set as a whole."""
    name = "sets"
    variants = ("P", "relative_P", "R", "F", "map")
    builtins = ("SetP", "SetR", "SetF", "SetAP")
    trec_eval_names = {"set_P": ("SetP", None), "set_relative_P": ("SetP(relative=True)", None),
                       "set_recall": ("SetR", None), "set_F": ("SetF(beta={p})", None), "set_map": ("SetAP", None)}
    formula = set_values.__doc__

    def builtin_spec(self, measure) -> Spec:
        """``SetP(rel=r, relative=..., judged_only=j)``, ``SetR(rel=r)``, ``SetF(rel=r, beta=b, judged_only=j)``,
        ``SetAP(rel=r, judged_only=j)``: no cutoff."""
        cutoff, judged_only = builtin_common(measure)
        if cutoff is not None:
            refuse(measure, "a set measure takes no cutoff (cut the run with trec_eval -M)")
        beta = param(measure, "beta", 1.0)
        if isinstance(beta, bool) or not isinstance(beta, (int, float)) or not beta >= 0:
            refuse(measure, f"beta must be a number >= 0, got {beta!r}")
        variant = by_name(_BUILTIN, measure)
        if variant == "P" and param(measure, "relative", False):
            variant = "relative_P"
        return Spec(self.name, variant, None, rel=builtin_rel(measure), judged_only=judged_only, beta=float(beta))

    def depth(self, spec: Spec) -> int | None:
        return 1  # no order is read

    def needs_every_row(self, spec: Spec) -> bool:
        return True  # num_rel_ret counts every returned doc

    def values(self, index, ranked, spec: Spec):
        return set_values(index, ranked, spec)

    def explain(self, trace, shown, measure, num) -> tuple:
        n_rel = int((trace.qrels_rel >= trace.spec.rel).sum())
        rel_ret = int((trace.kept & trace.relevant).sum())
        line = f"returned {int(trace.kept.sum())}, relevant returned {rel_ret}, relevant in the qrels {n_rel}"
        return mark_relevant(trace, shown), None, [line]

    def counterpart(self, measure, qrels: dict, run: dict, oracle) -> tuple:
        """``set_P``, ``set_relative_P``, ``set_recall``, ``set_F``, ``set_map`` with ``-l rel``
        (``set_F`` with its default parameter only: pytrec_eval names every set_F alike)."""
        from .oracle import judged_run, per_query
        spec = self.builtin_spec(measure)
        if spec.beta != 1.0:
            return None, "no counterpart: pytrec_eval reports set_F under one name whatever its parameter"
        name = pick({"P": "set_P", "relative_P": "set_relative_P", "R": "set_recall", "map": "set_map",
                     "F": "set_F"}, spec, "crosscheck")
        res = oracle(qrels, judged_run(qrels, run) if spec.judged_only else run, name, rel=spec.rel)
        return per_query([res.get(q, 0.0) for q in qrels]), f"{name} -l{spec.rel} -c"


FAMILY = SetFamily()
