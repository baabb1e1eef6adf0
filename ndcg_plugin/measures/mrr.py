"""The MRR family: mean reciprocal rank at k, where a query with no relevant document in the top
k counts 0 (MRR_zero) or is left out of the mean (MRR_ignore). Everything that is this family's
own is here: the measures, the built-in ``RR`` the engine computes as this family, the local
computation (which the Spark engine runs too), the explain layout, the trec_eval counterpart and
the docs rows."""
from __future__ import annotations

import math

from .aggregate import NanSkipMeanAgg
from .base import CUT_REL_PARAMS, Family, PluginMeasure, Spec, builtin_common, builtin_rel, mark_relevant, pick


class _MRR(PluginMeasure):
    """Mean reciprocal rank at k; ``VARIANT`` decides what a query with no relevant document
    in the top k gives::

        RR@k(q) = 1 / rank of the first doc with rel >= rel_threshold, if that rank <= k
        zero:   RR@k(q) = 0 otherwise; aggregate = mean over all queries of the qrels
                (the MS MARCO MRR@10 convention; trec_eval recip_rank with -M k)
        ignore: RR@k(q) has no value otherwise (iter_calc: no Metric for a query with no
                value for any measure asked, else NaN); aggregate = mean over the queries
                that have a value, NaN with a warning when none has
    """
    FAMILY = "mrr"
    SUPPORTED_PARAMS = CUT_REL_PARAMS


class _MRR_zero(_MRR):  # noqa: N801 - named as its measure, as ir-measures names its classes
    __name__ = "MRR_zero"
    NAME = __name__
    VARIANT = "zero"
    PRETTY_NAME = "MRR, misses count 0"
    SHORT_DESC = "Reciprocal rank of the first relevant doc in the top k, 0 if none; mean over all queries."
    TREC_EVAL = "recip_rank with -M k"
    BUILTIN = "RR"


class _MRR_ignore(_MRR):  # noqa: N801
    __name__ = "MRR_ignore"
    NAME = __name__
    VARIANT = "ignore"
    PRETTY_NAME = "MRR, misses left out"
    SHORT_DESC = "Reciprocal rank of the first relevant doc in the top k; queries without one are left out."
    TREC_EVAL = "recip_rank with -M k, averaged over queries with recip_rank > 0"
    DEFAULT = float("nan")

    def aggregator(self) -> NanSkipMeanAgg:
        return NanSkipMeanAgg(str(self))


MRR_zero = _MRR_zero()
MRR_ignore = _MRR_ignore()

#: what a query without a relevant doc in the top k gives, per variant (NaN: no value)
_MISS = {"zero": 0.0, "ignore": math.nan}


def _first_hit(ranked, relevant, spec: Spec):
    """The 0-based rank of each query's first relevant row within the cutoff (inf for none), the
    same for both variants."""
    import numpy as np

    hit = relevant if ranked.all_in_top(spec.cutoff) else relevant & ranked.in_top(spec.cutoff)
    first = np.full(ranked.nq, np.inf)
    q, rank = ranked.q[hit], ranked.rank[hit]
    later = q[1:] != q[:-1]
    if len(q) and np.all(np.where(later, q[1:] > q[:-1], rank[1:] > rank[:-1])):
        # by query, in rank order (as rank_rows gives them): a query's first hit is its best
        at = np.flatnonzero(np.concatenate(([True], later)))
        first[q[at]] = rank[at]
    else:
        np.minimum.at(first, q, rank.astype(np.float64))
    return first


class MRRFamily(Family):
    """MRR_zero and MRR_ignore: one reciprocal rank, what a miss gives as the variant."""
    name = "mrr"
    variants = ("zero", "ignore")
    builtins = ("RR",)
    trec_eval_names = {"recip_rank": ("RR", "MRR_zero@k")}

    @property
    def measures(self) -> tuple[PluginMeasure, ...]:
        return (MRR_zero, MRR_ignore)

    def builtin_spec(self, measure) -> Spec:
        """``RR(rel=r)@k``, with or without a cutoff: MRR where a miss counts 0."""
        cutoff, judged_only = builtin_common(measure)
        return Spec(self.name, "zero", cutoff, rel=builtin_rel(measure), judged_only=judged_only)

    def values(self, index, ranked, spec: Spec):
        import numpy as np

        from . import ties
        from .aggregate import Values
        miss = pick(_MISS, spec, "the local engine")
        relevant = ranked.relevant(spec.rel)
        if spec.ties == "average":
            return Values(ties.reciprocal_rank(ranked, relevant, spec.cutoff, ignore=math.isnan(miss)))
        first = ranked.memo(("first relevant rank", spec.rel, spec.cutoff), lambda: _first_hit(ranked, relevant, spec))
        return Values(np.where(np.isfinite(first), 1.0 / (first + 1.0), miss))

    def explain(self, trace, shown, measure, num) -> tuple:
        """The rows marked relevant or not; the first relevant rank within the cutoff, or what a
        miss gives."""
        miss = pick(_MISS, trace.spec, "explain")
        k, rel = trace.spec.cutoff, trace.spec.rel
        ranks = trace.rank[trace.top & trace.relevant]
        if len(ranks):
            first = int(ranks[0])
            line = f"first relevant (rel >= {rel}) rank within {k}: {first}; RR = 1/{first} = {num(1 / first)}"
        else:
            gives = (f"no value ({measure.NAME} leaves the query out)" if math.isnan(miss)
                     else f"{miss:g} ({measure.NAME})")
            line = f"no relevant doc (rel >= {rel}) in the top {k}: {gives}"
        return mark_relevant(trace, shown), None, [line]

    def counterpart(self, measure, qrels: dict, run: dict, oracle) -> tuple:
        """``recip_rank`` on the run cut to k (``-M k``); a query without a relevant doc there gets
        what a miss gives (0, or no value: NaN)."""
        from .oracle import cut_run, per_query
        spec = measure.spec()
        k, rel, miss = spec.cutoff, spec.rel, pick(_MISS, spec, "crosscheck")
        res = oracle(qrels, cut_run(run, k), "recip_rank", rel=rel)
        how = f"recip_rank -M{k} -l{rel}" + (", mean over queries > 0" if math.isnan(miss) else " -c")
        return per_query([res[q] if res.get(q, 0.0) > 0 else miss for q in qrels]), how


FAMILY = MRRFamily()
