"""The AP family: average precision as trec_eval 10.0 computes ``map`` and ``map_cut.k``, served as
ir-measures' built-in ``AP`` and ``AP@k`` (with ``rel`` and ``judged_only``), and ``gm_map`` (the
same per-query value, its summary a geometric mean) in the trec_eval drop-in. Everything that is
this family's own is here: the local computation (the Spark engine runs it too), the explain
layout, the trec_eval counterpart and the docs rows."""
from __future__ import annotations

from .base import ServedFamily, Spec, builtin_common, builtin_rel, mark_relevant, pick


def average_precision(index, ranked, spec: Spec):
    """trec_eval's ``map`` (``map_cut.k`` with a cutoff), per query::

        AP@k(q) = sum over relevant docs d ranked r_d <= k of (relevant docs ranked <= r_d) / r_d
                  -------------------------------------------------------------------------
                                 num_rel(q)   (relevant docs in the qrels)

    0 when the query has no relevant document. The precisions are added in rank order, as
    trec_eval adds them, so the doubles are trec_eval's own."""
    import numpy as np

    from ..ranking.ranked import group_ranks
    from .aggregate import Values
    from .judgments import num_rel, ratio, relevant_rows
    q, rank = relevant_rows(ranked, spec.rel)  # the hits, by query in rank order
    if not ranked.all_in_top(spec.cutoff):
        q, rank = q[rank < spec.cutoff], rank[rank < spec.cutoff]
    so_far = (group_ranks(q) + 1).astype(np.float64)  # the hits of a query are in rank order
    sums = np.bincount(q, weights=so_far / (rank + 1.0), minlength=ranked.nq)
    return Values(ratio(sums, num_rel(index, ranked, spec.rel)))


_LOCAL = {"ap": average_precision}


class APFamily(ServedFamily):
    """Average precision (trec_eval ``map``, ``map_cut.k``)."""
    name = "ap"
    variants = ("ap",)
    builtins = ("AP",)
    trec_eval_names = {"map": ("AP", None), "map_cut": ("AP@{k}", None)}
    conventions = (
        "| AP denominator | the query's relevant docs in the qrels (trec_eval `map`), also with a cutoff "
        "(`map_cut.k`; Spark's RankingEvaluator divides by min(relevant, k)) "
        "| `test_ap_divides_by_every_relevant_doc` |",
    )
    formula = average_precision.__doc__

    def builtin_spec(self, measure) -> Spec:
        """``AP(rel=r, judged_only=j)@k``, with or without a cutoff."""
        cutoff, judged_only = builtin_common(measure)
        return Spec(self.name, "ap", cutoff, rel=builtin_rel(measure), judged_only=judged_only)

    def values(self, index, ranked, spec: Spec):
        return pick(_LOCAL, spec, "the local engine")(index, ranked, spec)

    def explain(self, trace, shown, measure, num) -> tuple:
        """The rows marked relevant; each relevant row's precision; their sum over num_rel."""
        import numpy as np
        hit = trace.top & trace.relevant
        ranks = trace.rank[hit]
        precisions = np.arange(1, len(ranks) + 1) / ranks if len(ranks) else np.zeros(0)
        n_rel = int((trace.qrels_rel >= trace.spec.rel).sum())
        terms = " + ".join(f"{i + 1}/{int(r)}" for i, r in enumerate(ranks)) or "0"
        line = (f"precision at each relevant rank: {terms}; AP = {num(float(sum(precisions.tolist())))} / "
                f"{n_rel} (relevant in the qrels) = {num(trace.value)}")
        return mark_relevant(trace, shown), None, [line]

    def counterpart(self, measure, qrels: dict, run: dict, oracle) -> tuple:
        """``map`` (``map_cut.k`` with a cutoff), ``-l rel``."""
        from .oracle import judged_run, per_query
        spec = self.builtin_spec(measure)
        name = "map" if spec.cutoff is None else f"map_cut.{spec.cutoff}"
        res = oracle(qrels, judged_run(qrels, run) if spec.judged_only else run, name, rel=spec.rel)
        return per_query([res.get(q, 0.0) for q in qrels]), f"{name} -l{spec.rel} -c{' -J' if spec.judged_only else ''}"


FAMILY = APFamily()
