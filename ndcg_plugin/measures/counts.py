"""The counts family: trec_eval 10.0's ``num_q``, ``num_ret``, ``num_rel`` and ``num_rel_ret``,
served as ir-measures' built-in ``NumQ``, ``NumRet``, ``NumRel`` and ``NumRet(rel=r)`` (ir-measures'
``NumRelRet``). Their summaries are sums, not means (the measures' own aggregators). Everything
that is this family's own is here."""
from __future__ import annotations

from .base import ServedFamily, Spec, builtin_rel, by_name, mark_relevant, param, pick, refuse


def _np():
    import numpy as np  # on use: `import ndcg_plugin` imports no numpy

    return np


def num_q(index, ranked, spec: Spec):
    """``NumQ``: 1 per query evaluated: every qrels query (trec_eval ``-c``)."""
    from .aggregate import Values
    return Values(_np().ones(ranked.nq))


def num_ret(index, ranked, spec: Spec):
    """``NumRet``: the docs the run returns for the query (judged ones only with judged_only)."""
    from .aggregate import Values
    return Values(ranked.returned.astype(_np().float64))


def num_rel_ret(index, ranked, spec: Spec):
    """``NumRet(rel=r)``: the returned docs with a label >= r (trec_eval ``num_rel_ret`` with ``-l r``; r = 0:
    the judged docs returned, trec_eval ``num_ret`` with ``-J``)."""
    from .aggregate import Values
    np = _np()
    pool = ranked.pool_rel >= spec.rel  # every judged row the run returns (needs_every_row)
    return Values(np.bincount(ranked.pool_q[pool], minlength=ranked.nq).astype(np.float64))


def num_rel(index, ranked, spec: Spec):
    """``NumRel(rel=r)``: the qrels' docs with a label >= r (trec_eval ``num_rel`` with ``-l r``)."""
    from .aggregate import Values
    from .judgments import num_rel as count
    return Values(count(index, ranked, spec.rel).astype(_np().float64))


_LOCAL = {"q": num_q, "ret": num_ret, "rel_ret": num_rel_ret, "rel": num_rel}


def _num_q_spec(measure) -> Spec:
    return Spec("counts", "q", None)


def _num_rel_spec(measure) -> Spec:
    return Spec("counts", "rel", None, rel=builtin_rel(measure))


def _num_ret_spec(measure) -> Spec:
    """``NumRet``: every doc returned; ``NumRet(rel=r)``: those labelled >= r (0: the judged ones)."""
    rel = param(measure, "rel")
    if rel is None:
        return Spec("counts", "ret", None)
    if isinstance(rel, bool) or not isinstance(rel, int) or rel < 0:
        refuse(measure, f"rel must be an integer >= 0 (0: the judged docs returned, as trec_eval -J counts "
                        f"num_ret), got {rel!r}")
    return Spec("counts", "rel_ret", None, rel=rel)


class CountsFamily(ServedFamily):
    """NumQ, NumRet, NumRet(rel=r) and NumRel: counts per query, summed over queries."""
    name = "counts"
    variants = ("q", "ret", "rel_ret", "rel")
    builtins = ("NumQ", "NumRet", "NumRel")
    trec_eval_names = {"num_q": ("NumQ", None), "num_ret": ("NumRet", None), "num_rel": ("NumRel", None),
                       "num_rel_ret": ("NumRelRet", None)}
    conventions = (
        "| counts of a qrels query absent from the run | `NumQ` 1, `NumRel` its relevant docs, `NumRet` and "
        "`NumRet(rel=r)` 0, as trec_eval `-c` (ir-measures' pytrec_eval provider gives 0 for all four) "
        "| `test_counts_of_a_query_missing_from_the_run_are_trec_eval_c` |",
    )
    formula = "\n".join(f.__doc__ for f in _LOCAL.values())

    def builtin_spec(self, measure) -> Spec:
        """``NumQ``; ``NumRet`` (``NumRet(rel=r)``: the relevant ones); ``NumRel(rel=r)``."""
        return by_name({"NumQ": _num_q_spec, "NumRel": _num_rel_spec, "NumRet": _num_ret_spec}, measure)(measure)

    def depth(self, spec: Spec) -> int | None:
        return 1  # no measure of the family reads an order: the least the engine ranks

    def needs_every_row(self, spec: Spec) -> bool:
        return spec.variant == "rel_ret"

    def values(self, index, ranked, spec: Spec):
        return pick(_LOCAL, spec, "the local engine")(index, ranked, spec)

    def explain(self, trace, shown, measure, num) -> tuple:
        """The rows marked relevant; the count is the summary's value."""
        return mark_relevant(trace, shown), None, []

    def counterpart(self, measure, qrels: dict, run: dict, oracle) -> tuple:
        """``num_q``, ``num_ret``, ``num_rel_ret``, ``num_rel`` with ``-l rel``."""
        from .oracle import per_query
        spec = self.builtin_spec(measure)
        name = pick({"q": "num_q", "ret": "num_ret", "rel_ret": "num_rel_ret", "rel": "num_rel"}, spec, "crosscheck")
        res = oracle(qrels, run, name, rel=spec.rel)
        # -c: a qrels query missing from the run counts once, with its relevant docs and nothing returned
        missing = {"num_q": lambda q: 1.0, "num_rel": lambda q: float(sum(r >= spec.rel for r in qrels[q].values()))}
        absent = missing.get(name, lambda q: 0.0)
        return per_query([res[q] if q in res else absent(q) for q in qrels]), f"{name} -l{spec.rel} -c"


FAMILY = CountsFamily()
