"""The NDCG family: NDCG with an explicit gain function, NDCG_lin (gain = rel) and NDCG_exp
(gain = 2^rel - 1). Everything that is this family's own is here: the measures, the built-in
``nDCG`` the engine computes as this family, the gains, the local computation (which the Spark
engine runs too), the explain layout, the trec_eval counterpart and the docs rows."""
from __future__ import annotations

from typing import Any

from ir_measures.measures.base import ParamInfo

from .base import IDEALS, TIES, Family, PluginMeasure, Spec, builtin_common, param, pick, refuse

_PARAMS = {
    "cutoff": ParamInfo(dtype=int, required=False,
                        desc="ranking cutoff threshold k; without it the whole ranked list counts"),
    "ideal": ParamInfo(dtype=str, choices=list(IDEALS), default="qrels",
                       desc="ideal ranking from all judged docs of the query ('qrels', as trec_eval) "
                            "or from the docs the run retrieved for the query, all of them ('run', as sklearn)"),
    "gains": ParamInfo(dtype=dict, desc="custom gain per relevance label {rel: gain}; unlisted labels keep "
                                        "the family's gain"),
    "judged_only": ParamInfo(dtype=bool, default=False,
                             desc="drop unjudged documents before ranking and cutting (as ir-measures)"),
    "ties": TIES,
}


class _NDCG(PluginMeasure):
    """Normalised Discounted Cumulative Gain with an explicit gain function.

    For a query with documents ranked r = 1..n (score descending, doc id descending on ties)::

        DCG@k  = sum_{r=1}^{min(k,n)} gain(rel_r) / log2(r + 1)
        IDCG@k = the same sum over the ideal ranking (gains sorted descending)
        NDCG@k = DCG@k / IDCG@k, and 0 when IDCG@k = 0

    ``VARIANT`` picks gain(rel): ``linear`` -> rel (NDCG_lin), ``exp`` -> 2^rel - 1 (NDCG_exp).
    Negative labels and unjudged documents have gain 0; ``gains`` overrides listed labels.
    """
    FAMILY = "ndcg"
    SUPPORTED_PARAMS = _PARAMS


class _NDCG_lin(_NDCG):  # noqa: N801 - named as its measure, as ir-measures names its classes
    __name__ = "NDCG_lin"
    NAME = __name__
    VARIANT = "linear"
    PRETTY_NAME = "NDCG with linear gain"
    SHORT_DESC = "NDCG with gain = rel (trec_eval ndcg_cut)."
    TREC_EVAL = "ndcg_cut.k (ndcg without cutoff)"
    BUILTIN = "nDCG"


class _NDCG_exp(_NDCG):  # noqa: N801
    __name__ = "NDCG_exp"
    NAME = __name__
    VARIANT = "exp"
    PRETTY_NAME = "NDCG with exponential gain"
    SHORT_DESC = "NDCG with gain = 2^rel - 1 (Burges et al.)."
    TREC_EVAL = "ndcg_cut.k on qrels mapped rel -> 2^rel - 1"


NDCG_lin = _NDCG_lin()
NDCG_exp = _NDCG_exp()

# the gain of a label >= 0, per variant: on numpy arrays of float labels, on integers (crosscheck
# writes integer qrels for trec_eval)
_GAIN = {"linear": lambda pos: pos, "exp": lambda pos: _np().exp2(pos) - 1.0}
_INT_GAIN = {"linear": lambda rel: rel, "exp": lambda rel: 2 ** rel - 1}
#: the builtin nDCG's dcg parameter -> the variant that computes it
_DCG = {"log2": "linear", "exp-log2": "exp"}


def _np():
    import numpy as np  # on use: `import ndcg_plugin` imports no numpy

    return np


def gain_of(rel: Any, spec: Spec) -> Any:
    """Gain per relevance label (numpy): the variant's gain of labels >= 0, then the overrides of
    labels >= 0; negative labels always have gain 0 (trec_eval treats them as unjudged)."""
    np = _np()
    rel = rel.astype(np.int64, copy=False)
    with np.errstate(over="ignore"):
        gain = pick(_GAIN, spec, "the local engine")(np.maximum(rel, 0).astype(np.float64))
    for label, g in spec.gains:
        if label >= 0:
            gain[rel == label] = float(g)
    if not np.all(np.isfinite(gain)):
        bad = rel[~np.isfinite(gain)][0]
        raise ValueError(f"relevance label {bad} gives an infinite gain under {_name(spec)} (2^rel - 1 "
                         f"overflows a double above 1023); use gains={{...}} or {NDCG_lin.NAME}")
    return gain


def log2_discounts(n: int) -> Any:
    """``np.log2(rank + 2.0)`` for the 0-based ranks 0..n-1: the divisor of the gain at each rank,
    the same doubles as that expression computed per row (a test compares them); a table of the
    deepest rank's size, looked up instead of a logarithm per row."""
    np = _np()
    return np.log2(np.arange(n, dtype=np.int64) + 2.0)


def judged_gain(ranked, spec: Spec) -> Any:
    """The gain of each ranked row: an unjudged row has label 0, whose gain is 0 unless gains=
    sets it, and then only for judged rows."""
    gain = gain_of(ranked.rel, spec)
    if any(label == 0 for label, _ in spec.gains):
        gain = _np().where(ranked.judged, gain, 0.0)
    return gain


def dcg_of(ranked, spec: Spec) -> Any:
    """DCG per query of a :class:`~ndcg_plugin.ranking.ranked.RankedRun` in trec_eval's order: the sum over
    its rows ranked within the cutoff of gain / log2(rank + 2), added row by row as
    ``np.bincount`` adds. By one C loop when it is at hand (:mod:`ndcg_plugin.arrays.speedups`),
    with the gains numpy computes per label and the same discounts, added in the same order (the
    same doubles), where no gain of label 0 is set (that gain depends on the row being judged)."""
    np = _np()
    q, rank = ranked.q, ranked.rank
    if len(rank) and not any(label == 0 for label, _ in spec.gains):
        top = int(ranked.rel.max())
        if top <= _LABEL_ORDER_MAX:  # every gain up to it finite, in a table of labels 0..top
            from ..arrays import speedups
            cut = None if ranked.all_in_top(spec.cutoff) else spec.cutoff
            found = speedups.dcg(q, rank, ranked.rel, ranked.nq, cut, gain_of(np.arange(max(top, 0) + 1), spec),
                                 float(gain_of(np.array([-1]), spec)[0]), log2_discounts(ranked.ranks_held()))
            if found is not None:
                return found
    gain = judged_gain(ranked, spec)
    if not ranked.all_in_top(spec.cutoff):
        keep = rank < spec.cutoff
        q, rank, gain = q[keep], rank[keep], gain[keep]
    return np.bincount(q, weights=gain / log2_discounts(ranked.ranks_held())[rank], minlength=ranked.nq)


def _ideal_by_variant(index, cutoff: int | None) -> dict | None:
    """{variant: the IDCG per qrels query} of every variant without overridden gains, by one C loop
    (:func:`ndcg_plugin.arrays.speedups.ideal_dcg` with a gain table per variant); None where it is not
    at hand. The labels are at most ``_LABEL_ORDER_MAX``: every gain is finite."""
    np = _np()
    top = max(int(index.rel.max()), 0)
    variants = FAMILY.variants
    tables = np.stack([gain_of(np.arange(top + 1), Spec(FAMILY.name, v, cutoff)) for v in variants])
    from ..arrays import speedups
    # no query's ideal ranking is longer than the qrels: a deeper cutoff cuts nothing (the tables
    # stay the qrels' size, however large the cutoff)
    cutoff = None if cutoff is not None and cutoff >= len(index.rel) else cutoff
    found = speedups.ideal_dcg(index.key_q, index.rel, index.nq, cutoff, tables,
                               log2_discounts(len(index.rel) if cutoff is None else cutoff))
    return None if found is None else dict(zip(variants, found, strict=True))


def _name(spec: Spec) -> str:
    return next(m.NAME for m in FAMILY.measures if m.VARIANT == spec.variant)


def ideal_dcg(q: Any, gain: Any, cutoff: int | None, nq: int) -> Any:
    """IDCG per query code from the positive gains sorted descending (trec_eval leaves gains <= 0
    out of the ideal ranking)."""
    from ..ranking.ranked import group_ranks
    np = _np()
    positive = gain > 0
    q, gain = q[positive], gain[positive]
    # by query, then gain descending, stably: the order of np.lexsort((-gain, q)), as one integer
    # key (gains take few distinct values), cheaper to sort than two float keys; the distinct
    # gains found by hashing (Arrow), not by a sort of every gain
    import pyarrow.compute as pc

    from ..arrays.columns import from_numpy, to_numpy
    levels = np.sort(-to_numpy(pc.unique(from_numpy(gain.astype(np.float64, copy=False)))))
    level = np.searchsorted(levels, -gain)
    order = np.argsort(q.astype(np.int64) * len(levels) + level, kind="stable")
    qs, gs = q[order], gain[order]
    rank = group_ranks(qs)
    keep = rank < cutoff if cutoff is not None else np.ones(len(qs), dtype=bool)
    return np.bincount(qs[keep], weights=gs[keep] / np.log2(rank[keep] + 2.0), minlength=nq)


def ideal_by_label(q: Any, rel: Any, cutoff: int | None) -> tuple[Any, Any, Any]:
    """(query code, label, rank) of each label > 0 that ranks within ``cutoff`` in its query's
    ideal ranking, in rank order: what :func:`ideal_dcg` sorts, found once for every variant whose
    gain rises with the label (each variant's IDCG is then one weighted count over these rows,
    the same sums in the same order as its own sort of gains would give)."""
    from ..ranking.ranked import group_ranks
    np = _np()
    positive = rel > 0
    q, rel = q[positive], rel[positive]
    top = int(rel.max()) if len(rel) else 0
    order = np.argsort(q.astype(np.int64) * (top + 1) + (top - rel), kind="stable")
    qs, rs = q[order], rel[order]
    rank = group_ranks(qs)
    if cutoff is not None:
        keep = rank < cutoff
        qs, rs, rank = qs[keep], rs[keep], rank[keep]
    return qs, rs, rank


def _overflow(spec: Spec) -> None:
    """Refuse a DCG or ideal DCG that overflowed a double (gains near 1e308): its ratio would be NaN,
    or 0 where only the ideal overflowed, printed as a number."""
    gains = f" with gains {dict(spec.gains)}" if spec.gains else ""
    raise ValueError(f"{_name(spec)}{gains}: a query's DCG overflows a double (its sum of gain / log2(rank + 1) "
                     f"exceeds 1.8e308), so its NDCG has no value; scale the gains down (NDCG does not change when "
                     f"every gain is multiplied by the same factor)")


def _tie_mean(score: Any, kept: Any, gain: Any) -> Any:
    """Each kept row's tie group's mean gain (a group: consecutive kept rows of equal score, in
    trec_eval's order), 0 elsewhere: E[DCG@k]'s gain per rank (:func:`ndcg_plugin.measures.ties.ndcg_dcg`)."""
    np = _np()
    rows = np.flatnonzero(kept)
    s = score[rows]
    group = np.cumsum(np.r_[True, s[1:] != s[:-1]]) - 1 if len(rows) else np.zeros(0, dtype=np.int64)
    out = np.zeros(len(score))
    if len(rows):
        out[rows] = (np.bincount(group, weights=gain[rows]) / np.bincount(group))[group]
    return out


#: labels up to this go through ideal_by_label (2^rel - 1 is then finite and rises with rel)
_LABEL_ORDER_MAX = 1000


class NDCGFamily(Family):
    """NDCG_lin and NDCG_exp: one computation, the gain as the variant."""
    name = "ndcg"
    variants = ("linear", "exp")
    builtins = ("nDCG",)
    trec_eval_names = {"ndcg_cut": ("nDCG@{k}", "NDCG_lin@{k}"), "ndcg": ("nDCG", "NDCG_lin")}
    conventions = (
        "| NDCG ideal ranking | `ideal='qrels'`: all judged docs (trec_eval); `ideal='run'`: every doc the run "
        "retrieved, not only its top k | `test_ideal_from_qrels_uses_all_judged_docs`, "
        "`test_ideal_from_run_uses_all_retrieved_docs_not_only_top_k` |",
        "| NDCG gains | linear `rel` or `2^rel - 1`; `gains={rel: gain}` overrides listed labels >= 0; the ideal "
        "ranking uses positive gains only, sorted by gain | `test_gains_override_listed_labels_only`, "
        "`test_exponential_gain_is_2_pow_rel_minus_1` |",
    )

    @property
    def measures(self) -> tuple[PluginMeasure, ...]:
        return (NDCG_lin, NDCG_exp)

    def builtin_spec(self, measure) -> Spec:
        """``nDCG``: ``dcg='log2'`` is the linear variant, ``'exp-log2'`` the exponential one;
        ``gains`` as pytrec_eval reads them (integer labels and gains >= 0, with log2 only)."""
        cutoff, judged_only = builtin_common(measure)
        dcg = param(measure, "dcg", "log2")
        if dcg not in _DCG:
            refuse(measure, f"dcg must be 'log2' or 'exp-log2', got {dcg!r}")
        gains = param(measure, "gains")
        if gains is not None:
            if dcg != "log2":
                refuse(measure, "gains are defined for dcg='log2' only (pytrec_eval's relevance -> gain map)")
            if not isinstance(gains, dict) or not all(
                    isinstance(v, int) and not isinstance(v, bool) and v >= 0 for k in gains for v in (k, gains[k])):
                refuse(measure, f"gains must map labels >= 0 to integer gains >= 0 (pytrec_eval reads a gain as an "
                                f"integer relevance label, and a negative one as judged non-relevant), got {gains!r}")
        return Spec(self.name, _DCG[dcg], cutoff, gains=tuple(sorted((gains or {}).items())), judged_only=judged_only)

    def needs_every_row(self, spec: Spec) -> bool:
        return spec.ideal == "run"  # the ideal ranking takes every judged doc the run retrieved

    def values(self, index, ranked, spec: Spec):
        from . import ties
        from .aggregate import Values
        np = _np()
        if spec.ties == "average":
            dcg = ties.ndcg_dcg(ranked, judged_gain(ranked, spec), spec.cutoff)
        else:
            dcg = dcg_of(ranked, spec)
        if spec.ideal == "run":
            idcg = ideal_dcg(ranked.pool_q, gain_of(ranked.pool_rel, spec), spec.cutoff, ranked.nq)
        else:
            idcg = index.memo(("ndcg ideal", spec.variant, spec.gains, spec.cutoff), lambda: self._idcg(index, spec))
            idcg = idcg[ranked.codes]
        if not (np.isfinite(dcg).all() and np.isfinite(idcg).all()):
            _overflow(spec)
        with np.errstate(divide="ignore", invalid="ignore"):
            return Values(np.where(idcg > 0, dcg / idcg, 0.0))

    @staticmethod
    def _idcg(index, spec: Spec):
        """IDCG per qrels query: from the ideal order by label shared by the variants (both gains
        rise with the label) when no label's gain is overridden, else by :func:`ideal_dcg`.
        By the C loop when it is at hand (:mod:`ndcg_plugin.arrays.speedups`; the same doubles added
        in the same order)."""
        np = _np()
        if spec.gains or not len(index.rel) or int(index.rel.max()) > _LABEL_ORDER_MAX:
            return ideal_dcg(index.key_q, gain_of(index.rel, spec), spec.cutoff, index.nq)
        from ..arrays import speedups
        if speedups.available():  # every variant's at once (one order by label, a sum per gain), each asked once
            found = index.memo(("ndcg ideal by label", spec.cutoff), lambda: _ideal_by_variant(index, spec.cutoff))
            if found is not None:
                return found[spec.variant]
        qs, rs, rank = index.memo(("ndcg ideal order", spec.cutoff),
                                  lambda: ideal_by_label(index.key_q, index.rel, spec.cutoff))
        return np.bincount(qs, weights=gain_of(rs, spec) / np.log2(rank + 2.0), minlength=index.nq)

    def explain(self, trace, shown, measure, num) -> tuple:
        """The rows' gains, discounts and contributions; the ideal ranking; DCG / IDCG."""
        import pandas as pd
        np = _np()
        spec = trace.spec
        rank = np.maximum(trace.rank, 1)
        gain = np.where(trace.kept & trace.judged, gain_of(trace.relevance, spec), 0.0)
        discount = np.where(trace.kept, 1.0 / np.log2(rank + 1.0), 0.0)
        contribution = np.where(trace.top, gain / np.log2(rank + 1.0), 0.0)
        mean_gain = _tie_mean(trace.score, trace.kept, gain) if spec.ties == "average" else None
        if mean_gain is not None:  # E[DCG@k]: each rank's gain is its tie group's mean gain
            contribution = np.where(trace.top, mean_gain / np.log2(rank + 1.0), 0.0)
        if spec.ideal == "run":
            pool = gain_of(trace.relevance[trace.kept & trace.judged], spec)
            idcg = float(ideal_dcg(np.zeros(len(pool), dtype=np.int64), pool, spec.cutoff, 1)[0])
        else:
            pool = gain_of(trace.qrels_rel, spec)
            idcg = float(ideal_dcg(np.zeros(len(pool), dtype=np.int64), pool, spec.cutoff, 1)[0])
        ideal_gain = -np.sort(-pool[pool > 0])[:spec.cutoff]
        ideal_contribution = ideal_gain / np.log2(np.arange(len(ideal_gain)) + 2.0)
        top = contribution[trace.top]
        means = {} if mean_gain is None else {"mean_gain": mean_gain[trace.top]}
        shown = shown.assign(gain=gain[trace.top], **means, discount=discount[trace.top], contribution=top,
                             dcg=np.cumsum(top))
        ideal = pd.DataFrame({"rank": np.arange(1, len(ideal_gain) + 1), "gain": ideal_gain,
                              "contribution": ideal_contribution, "idcg": np.cumsum(ideal_contribution)})
        dcg = sum(top.tolist())
        at = f"@{spec.cutoff}" if spec.cutoff else ""
        if mean_gain is None:
            ratio = "DCG / IDCG = " + num(dcg / idcg) if idcg > 0 else "0 (IDCG = 0)"
            return shown, ideal, [f"DCG{at} = {num(dcg)}, IDCG{at} = {num(idcg)}, NDCG{at} = {ratio}"]
        ratio = "E[DCG] / IDCG = " + num(dcg / idcg) if idcg > 0 else "0 (IDCG = 0)"
        return shown, ideal, ["ties='average': each rank's gain is the mean gain of its tie group (every order of "
                              "the tied documents equally likely), so the DCG is its expected value",
                              f"E[DCG{at}] = {num(dcg)}, IDCG{at} = {num(idcg)}, NDCG{at} = {ratio}"]

    def counterpart(self, measure, qrels: dict, run: dict, oracle) -> tuple:
        """``ndcg_cut.k`` (``ndcg`` without a cutoff) on qrels mapped through the variant's gain
        and ``gains``; ``ideal='run'``: qrels restricted to the docs the run retrieved;
        ``judged_only``: the run without unjudged docs (trec_eval -J, written out)."""
        from .oracle import per_query
        spec = measure.spec()
        if any(g != int(g) or g < 0 for _, g in spec.gains):
            return None, "no counterpart: trec_eval's ndcg_cut takes integer qrels (non-integer or negative gains)"
        overrides, integer_gain = dict(spec.gains), pick(_INT_GAIN, spec, "crosscheck")

        def gain(r):
            if r < 0:
                return r  # trec_eval: unjudged, gain 0
            return int(overrides[r]) if r in overrides else integer_gain(r)

        mapped = {q: {d: gain(r) for d, r in docs.items()} for q, docs in qrels.items()}
        if spec.ideal == "run":
            mapped = {q: {d: r for d, r in docs.items() if d in run.get(q, {})} for q, docs in mapped.items()}
        name = "ndcg" if spec.cutoff is None else f"ndcg_cut.{spec.cutoff}"
        if spec.judged_only:  # trec_eval -J, written out: pytrec_eval's flag can segfault
            run = {q: {d: s for d, s in docs.items() if qrels.get(q, {}).get(d, -1) >= 0} for q, docs in run.items()}
        res = oracle(mapped, run, name)
        return per_query([res.get(q, 0.0) for q in qrels]), f"{name} (-c{' -J' if spec.judged_only else ''})"


FAMILY = NDCGFamily()
