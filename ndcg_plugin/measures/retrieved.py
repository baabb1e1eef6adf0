"""The retrieved family: trec_eval 10.0's ``relative_P.k``, ``Rprec_mult.m``, ``utility`` and
``num_nonrel_judged_ret``: what a run retrieved against what it could have (the relevant docs
within a cutoff over the most it could hold, a precision at a multiple of R, the contingency
table of retrieved and relevant docs). They have no ir-measures name: the trec_eval drop-in
computes them through the engine (:mod:`ndcg_plugin.measures.trec_only`)."""
from __future__ import annotations

from .base import ServedFamily, Spec, mark_relevant, pick
from .trec_only import trec_eval_measure


def _np():
    import numpy as np  # on use: `import ndcg_plugin` imports no numpy

    return np


def relative_p(index, ranked, spec: Spec):
    """``relative_P.k``: ``(relevant docs ranked <= k) / min(k, num_rel)``, 0 when num_rel = 0."""
    np = _np()
    from .aggregate import Values
    from .judgments import hits_in_top, num_rel
    n_rel = num_rel(index, ranked, spec.rel).astype(np.float64)
    den = np.minimum(float(spec.cutoff), n_rel)
    return Values(np.where(n_rel > 0, hits_in_top(ranked, spec.rel, spec.cutoff) / np.where(n_rel > 0, den, 1.0), 0.0))


def rprec_mult(index, ranked, spec: Spec):
    """``Rprec_mult.m``: with c = (long)(m * num_rel + 0.9) (C's truncation), ``(relevant docs
    ranked <= c) / c``, 0 when c = 0."""
    np = _np()
    from .aggregate import Values
    from .judgments import num_rel, relevant_rows
    (multiple,) = spec.params
    cut = np.trunc(multiple * num_rel(index, ranked, spec.rel).astype(np.float64) + 0.9)
    q, rank = relevant_rows(ranked, spec.rel)  # the relevant rows' (query, rank), found once for every multiple
    hit = rank < cut[q]
    hits = np.bincount(q[hit], minlength=ranked.nq).astype(np.float64)
    return Values(np.where(cut > 0, hits / np.where(cut > 0, cut, 1.0), 0.0))


def _table(index, ranked, spec: Spec):
    """(num_ret, num_rel_ret, num_rel, judged non-relevant docs retrieved) per query, as int64
    (counted over every judged row the run returns: needs_every_row)."""
    np = _np()
    from .judgments import num_rel
    rel_ret = np.bincount(ranked.pool_q[ranked.pool_rel >= spec.rel], minlength=ranked.nq)
    judged_nonrel = (ranked.pool_rel >= 0) & (ranked.pool_rel < spec.rel)
    nonrel = np.bincount(ranked.pool_q[judged_nonrel], minlength=ranked.nq)
    return ranked.returned.astype(np.int64), rel_ret, num_rel(index, ranked, spec.rel).astype(np.int64), nonrel


def utility(index, ranked, spec: Spec):
    """``utility.p1,p2,p3,p4`` (default 1,-1,0,0): with a = relevant retrieved, b = non-relevant
    (or unjudged) retrieved, c = relevant not retrieved, d = a - num_ret - num_rel (trec_eval
    without ``-N``), ``p1 a + p2 b + p3 c + p4 d``, added in that order."""
    np = _np()
    from .aggregate import Values
    ret, rel_ret, n_rel, _ = _table(index, ranked, spec)
    p1, p2, p3, p4 = spec.params
    with np.errstate(invalid="ignore"):
        value = p1 * rel_ret.astype(np.float64) + p2 * (ret - rel_ret).astype(np.float64)
        value = value + p3 * (n_rel - rel_ret).astype(np.float64)
        return Values(value + p4 * (rel_ret - ret - n_rel).astype(np.float64))


def nonrel_judged_ret(index, ranked, spec: Spec):
    """``num_nonrel_judged_ret``: the docs retrieved with a label in 0..rel-1."""
    np = _np()
    from .aggregate import Values
    return Values(_table(index, ranked, spec)[3].astype(np.float64))


_LOCAL = {"relative_P": relative_p, "Rprec_mult": rprec_mult, "utility": utility,
          "num_nonrel_judged_ret": nonrel_judged_ret}
#: how many real parameters each variant takes (Spec.params)
_PARAMS = {"relative_P": 0, "Rprec_mult": 1, "utility": 4, "num_nonrel_judged_ret": 0}
RELATIVE_P = trec_eval_measure("relative_P", "retrieved", "relative_P", "trec_eval's relative_P.k")
RPREC_MULT = trec_eval_measure("Rprec_mult", "retrieved", "Rprec_mult", "trec_eval's Rprec_mult.m")
UTILITY = trec_eval_measure("utility", "retrieved", "utility", "trec_eval's utility.p1,p2,p3,p4")
NONREL_JUDGED_RET = trec_eval_measure("num_nonrel_judged_ret", "retrieved", "num_nonrel_judged_ret",
                                      "trec_eval's num_nonrel_judged_ret")


class RetrievedFamily(ServedFamily):
    """relative_P, Rprec_mult, utility, num_nonrel_judged_ret (trec_eval's)."""
    name = "retrieved"
    variants = tuple(_LOCAL)
    trec_eval_names = {"relative_P": ("relative_P@{k}", None), "Rprec_mult": ("Rprec_mult(values=({m},))", None),
                       "utility": ("utility(values={ps})", None),
                       "num_nonrel_judged_ret": ("num_nonrel_judged_ret", None)}
    formula = "\n".join(f.__doc__ for f in _LOCAL.values())

    def depth(self, spec: Spec) -> int | None:
        depths = {"relative_P": spec.cutoff, "Rprec_mult": None, "utility": 1, "num_nonrel_judged_ret": 1}
        return pick(depths, spec, "the local engine")

    def needs_every_row(self, spec: Spec) -> bool:
        return spec.variant in ("utility", "num_nonrel_judged_ret")

    def values(self, index, ranked, spec: Spec):
        compute = pick(_LOCAL, spec, "the local engine")
        if len(spec.params) != _PARAMS[spec.variant]:
            from ..errors import Unsupported
            raise Unsupported(f"{spec.variant} takes {_PARAMS[spec.variant]} real parameters, got {spec.params!r}")
        return compute(index, ranked, spec)

    def explain(self, trace, shown, measure, num) -> tuple:
        return mark_relevant(trace, shown), None, [f"{measure.NAME} = {num(trace.value)}"]


FAMILY = RetrievedFamily()
