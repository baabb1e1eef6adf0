"""The HitRate family: hit rate at k at the level of queries (users), HitRate, and of items,
HitRate_item. Everything that is this family's own is here: the measures, the built-in
``Success`` the engine computes as this family, the local computation (which the Spark engine
runs too), the explain layout, the trec_eval counterparts and the docs rows."""
from __future__ import annotations

from .aggregate import ItemValue, MicroAgg
from .base import CUT_REL_PARAMS, Family, PluginMeasure, Spec, builtin_common, builtin_rel, mark_relevant, pick, refuse


class _HitRate(PluginMeasure):
    """Hit rate at k, at one of two granularities (``VARIANT``).

    ``query`` (HitRate, the per-user hit rate; trec_eval ``success.k``)::

        HitRate@k(q) = 1 if some doc in the top k has rel >= rel_threshold else 0
        aggregate    = mean over the queries of the qrels

    ``item`` (HitRate_item, the recommender-systems hit ratio)::

        HitRate_item@k(q) = hits_k(q) / min(k, n_q)    (0 when the run returns nothing for q)
        aggregate         = sum_q hits_k(q) / sum_q min(k, n_q)   (micro average over items)

    where hits_k(q) is the number of relevant docs in the top k and n_q the number of docs
    returned for q. A query with no returned docs adds nothing to the micro average.
    """
    FAMILY = "hitrate"
    SUPPORTED_PARAMS = CUT_REL_PARAMS


class _HitRate_query(_HitRate):  # noqa: N801 - named as its measure, as ir-measures names its classes
    __name__ = "HitRate"
    NAME = __name__
    VARIANT = "query"
    PRETTY_NAME = "Hit rate (query level)"
    SHORT_DESC = "1 if a relevant doc is in the top k, averaged over queries (trec_eval success.k)."
    TREC_EVAL = "success.k with -l rel"
    BUILTIN = "Success"


class _HitRate_item(_HitRate):  # noqa: N801
    __name__ = "HitRate_item"
    NAME = __name__
    VARIANT = "item"
    PRETTY_NAME = "Hit rate (item level)"
    SHORT_DESC = "Relevant docs in the top k over docs in the top k, micro-averaged over all queries."
    TREC_EVAL = "P.k x k / min(k, num_ret) per query, summed over queries (run cut to k)"
    DEFAULT = ItemValue(0, 0)

    def aggregator(self) -> MicroAgg:
        return MicroAgg()


HitRate = _HitRate_query()
HitRate_item = _HitRate_item()


def _np():
    import numpy as np  # on use: `import ndcg_plugin` imports no numpy

    return np


def _hits(ranked, spec: Spec):
    """Relevant docs in the top k per query (their expected number over tied orders for ties='average')."""
    from . import ties
    if spec.ties == "average":
        return ties.expected_hits(ranked, ranked.relevant(spec.rel), spec.cutoff)
    np = _np()

    def count():
        hit = ranked.relevant(spec.rel)
        if not ranked.all_in_top(spec.cutoff):
            hit = hit & ranked.in_top(spec.cutoff)
        return np.bincount(ranked.q[hit], minlength=ranked.nq).astype(np.float64)
    return ranked.memo(("relevant in top", spec.rel, spec.cutoff), count)  # shared by both variants: read only


def _query_values(ranked, spec: Spec):
    from . import ties
    from .aggregate import Values
    if spec.ties == "average":
        return Values(ties.hit_probability(ranked, ranked.relevant(spec.rel), spec.cutoff))
    return Values((_hits(ranked, spec) > 0).astype(_np().float64))


def _item_values(ranked, spec: Spec):
    from .aggregate import Values
    np = _np()
    hits = _hits(ranked, spec).copy()  # the caller's own (the ranking's is shared, read only)
    returned = np.minimum(ranked.returned.astype(np.float64), spec.cutoff)
    with np.errstate(divide="ignore", invalid="ignore"):
        return Values(np.where(returned > 0, hits / returned, 0.0), hits=hits, returned=returned)


def _query_explain(trace, hits: int, n: int, measure, num) -> str:
    return f"hits in the top {trace.spec.cutoff}: {hits}; {measure.NAME} = {1 if hits else 0}"


def _item_explain(trace, hits: int, n: int, measure, num) -> str:
    return (f"hits in the top {trace.spec.cutoff}: {hits} of {n} returned; {measure.NAME} = "
            f"{hits}/{n} = {num(hits / n if n else 0)}")


def _success(spec: Spec, qrels: dict, run: dict, oracle) -> tuple:
    """``success.k`` with ``-l rel``."""
    from .oracle import per_query
    res = oracle(qrels, run, f"success.{spec.cutoff}", rel=spec.rel)
    return per_query([res.get(q, 0.0) for q in qrels]), f"success.{spec.cutoff} -l{spec.rel} -c"


def _precision(spec: Spec, qrels: dict, run: dict, oracle) -> tuple:
    """Hits (``P.k`` x k) and returned docs (``num_ret``) of the run cut to k, micro-averaged."""
    from .oracle import cut_run, per_query
    k, rel = spec.cutoff, spec.rel
    cut = cut_run(run, k)
    p = oracle(qrels, cut, f"P.{k}", rel=rel)
    n = oracle(qrels, cut, "num_ret", rel=rel)
    hits = [round(p.get(q, 0.0) * k) for q in qrels]
    returned = [min(k, int(n.get(q, 0))) for q in qrels]
    values = [h / r if r else 0.0 for h, r in zip(hits, returned, strict=True)]
    return per_query(values, hits, returned), f"P.{k} x {k} / num_ret -M{k} -l{rel}, micro-averaged"


_LOCAL = {"query": _query_values, "item": _item_values}
_EXPLAIN = {"query": _query_explain, "item": _item_explain}
_COUNTERPART = {"query": _success, "item": _precision}


class HitRateFamily(Family):
    """HitRate and HitRate_item: one count of the relevant docs in the top k, the granularity as
    the variant."""
    name = "hitrate"
    variants = ("query", "item")
    builtins = ("Success",)
    trec_eval_names = {"success": ("Success@{k}", "HitRate@{k}")}
    conventions = (
        "| query with no returned docs (HitRate_item) | per-query value 0; adds 0 hits and 0 docs to the micro "
        "average | `test_query_with_no_returned_docs_adds_nothing_to_hitrate_item` |",
    )

    @property
    def measures(self) -> tuple[PluginMeasure, ...]:
        return (HitRate, HitRate_item)

    def builtin_spec(self, measure) -> Spec:
        """``Success(rel=r)@k``: the query-level hit rate; it needs a cutoff."""
        cutoff, judged_only = builtin_common(measure)
        if cutoff is None:
            refuse(measure, "Success needs a cutoff, e.g. Success@10")
        return Spec(self.name, "query", cutoff, rel=builtin_rel(measure), judged_only=judged_only)

    def values(self, index, ranked, spec: Spec):
        return pick(_LOCAL, spec, "the local engine")(ranked, spec)

    def explain(self, trace, shown, measure, num) -> tuple:
        """The rows marked relevant or not; the hits within the cutoff (and the docs returned there,
        for the item level)."""
        line = pick(_EXPLAIN, trace.spec, "explain")
        hits = int((trace.top & trace.relevant).sum())
        return mark_relevant(trace, shown), None, [line(trace, hits, len(shown), measure, num)]

    def counterpart(self, measure, qrels: dict, run: dict, oracle) -> tuple:
        spec = measure.spec()
        return pick(_COUNTERPART, spec, "crosscheck")(spec, qrels, run, oracle)


FAMILY = HitRateFamily()
