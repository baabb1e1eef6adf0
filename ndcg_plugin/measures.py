"""The plugin's measures: specifications only (name, parameters, default, aggregator).

Three families, each one implementation in :mod:`ndcg_plugin.engine` with the variant as a
parameter (``VARIANT``):

- ``NDCG_lin`` / ``NDCG_exp``: the gain function (linear or exponential);
- ``HitRate`` / ``HitRate_item``: the granularity (query or item);
- ``MRR_zero`` / ``MRR_ignore``: what a query with no relevant document in the top k gives.

Conventions shared by all (trec_eval's): within a query documents are ordered by score
descending, ties broken by doc id descending (string order); the rank column of a run file is
ignored. A query in the qrels but not in the run scores 0 (trec_eval ``-c``), except for
``MRR_ignore`` where it has no value. A query in the run but not in the qrels is ignored.
Negative relevance labels have gain 0 and are never relevant.
"""
from __future__ import annotations

import math
import numbers
from collections.abc import Iterable

import ir_measures
from ir_measures.measures.base import Measure, ParamInfo
from ir_measures.providers.base import NOT_PROVIDED as _NOT_PROVIDED

from .aggregate import ItemValue, MicroAgg, NanSkipMeanAgg

CUTOFF_DESC = "ranking cutoff threshold k (a positive integer)"
REL_DESC = "minimum relevance label that counts as relevant (inclusive, >= 1; TREC DL uses 2)"


class PluginMeasure(Measure):
    """Base of the plugin's measures: ir-measures' Measure with faithful printing of dict
    parameters and validation errors that say what was expected and what was got."""

    FAMILY: str = ""       # the engine's implementation (ndcg_plugin.engine)
    VARIANT: str = ""      # its parameter there
    TREC_EVAL: str = ""    # the trec_eval counterpart, for docs
    ORACLE: str = ""       # the trec_eval measure crosscheck computes it from (ndcg_plugin.trec_eval_check)
    BUILTIN: str = ""      # the ir-measures measure that computes the same, if any (see same_as_builtin)

    @property
    def CUTOFF_REQUIRED(self) -> bool:  # noqa: N802 - reads like the class constants beside it
        """Whether the measure needs a cutoff: from its ``cutoff`` parameter's ``required``."""
        info = self.SUPPORTED_PARAMS.get("cutoff")
        return bool(info is not None and info.required)

    def __repr__(self) -> str:
        """As ir-measures prints a measure (``Name(param=value)@cutoff``, defaults left out), but
        a dict parameter prints every entry: ir-measures drops entries whose key equals the
        value, so ``gains={2:2}`` would print (and compare) as ``gains={}``."""
        def shown(v):
            return "{" + ",".join(f"{k!r}:{v[k]!r}" for k in sorted(v)) + "}" if isinstance(v, dict) else repr(v)

        def default(k):
            info = self.SUPPORTED_PARAMS.get(k)
            return None if info is None else info.default

        params = ",".join(f"{k}={shown(v)}" for k, v in self.params.items()
                          if k != self.AT_PARAM and (k not in self.SUPPORTED_PARAMS or v != default(k)))
        name = f"{self.__name__}({params})" if params else self.__name__
        return f"{name}@{self.params[self.AT_PARAM]}" if self.AT_PARAM in self.params else name

    def validate_params(self) -> None:
        if self.validated:
            return
        name = self.__name__
        valid = ", ".join(f"{k} ({p.desc})" for k, p in self.SUPPORTED_PARAMS.items())
        unknown = sorted(set(self.params) - set(self.SUPPORTED_PARAMS))
        if unknown:
            raise ValueError(f"{name}: unknown parameter(s) {unknown}; valid parameters: {valid}")
        cutoff = self.params.get("cutoff", _NOT_PROVIDED)
        if cutoff is _NOT_PROVIDED:
            if self.CUTOFF_REQUIRED:
                raise ValueError(f"{name} needs a cutoff, e.g. {name}@10")
        elif isinstance(cutoff, bool) or not isinstance(cutoff, int) or cutoff < 1:
            raise ValueError(f"{name}: cutoff must be a positive integer, got {cutoff!r}")
        for key, info in self.SUPPORTED_PARAMS.items():
            if key == "cutoff" or key not in self.params:
                continue
            value = self.params[key]
            if info.choices is not _NOT_PROVIDED and value not in info.choices:
                raise ValueError(f"{name}: {key} must be one of {info.choices!r}, got {value!r}")
            if info.dtype is not None and (not isinstance(value, info.dtype)
                                           or (info.dtype is int and isinstance(value, bool))):
                raise ValueError(f"{name}: {key} must be of type {info.dtype.__name__}, got {value!r}")
        if "rel" in self.params and self.params["rel"] < 1:
            raise ValueError(f"{name}: rel must be >= 1 (a threshold of 0 would count judged "
                             f"non-relevant documents as relevant), got {self.params['rel']!r}")
        gains = self.params.get("gains", _NOT_PROVIDED)
        if gains is not _NOT_PROVIDED:
            for k, g in gains.items():
                if isinstance(k, bool) or not isinstance(k, int) or k < 0:
                    raise ValueError(f"{name}: gains keys must be relevance labels >= 0 (negative labels "
                                     f"always have gain 0), got {k!r}")
                if isinstance(g, bool) or not isinstance(g, numbers.Real) or not math.isfinite(g):
                    raise ValueError(f"{name}: gains values must be finite numbers, got {k!r}: {g!r}")
        self.validated = True


TIES = ParamInfo(dtype=str, choices=["trec", "average"], default="trec",
                 desc="tied scores: 'trec' orders them by doc id descending (trec_eval); 'average' takes the "
                      "expected value over all orders of the tied docs, in closed form (see ndcg_plugin.ties)")

_NDCG_PARAMS = {
    "cutoff": ParamInfo(dtype=int, required=False,
                        desc="ranking cutoff threshold k; without it the whole ranked list counts"),
    "ideal": ParamInfo(dtype=str, choices=["qrels", "run"], default="qrels",
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
    ORACLE = "ndcg_cut"
    SUPPORTED_PARAMS = _NDCG_PARAMS


def _variant(family: type, name: str, variant: str, pretty: str, short: str, trec_eval: str,
             **extra) -> type:
    """A measure class of a family: its name, its variant and its descriptions; ``extra``
    adds class attributes (DEFAULT, aggregator, ORACLE; for NDCG ``gain``, the gain of a label
    >= 0 in integer arithmetic, for crosscheck). The family's docstring documents both."""
    attrs = {"__doc__": family.__doc__, "__name__": name, "NAME": name, "VARIANT": variant,
             "PRETTY_NAME": pretty, "SHORT_DESC": short, "TREC_EVAL": trec_eval, "__module__": __name__, **extra}
    return type(f"_{name}", (family,), attrs)


_NDCG_lin = _variant(_NDCG, "NDCG_lin", "linear", "NDCG with linear gain",
                     "NDCG with gain = rel (trec_eval ndcg_cut).", "ndcg_cut.k (ndcg without cutoff)",
                     BUILTIN="nDCG", gain=staticmethod(lambda rel: rel))
_NDCG_exp = _variant(_NDCG, "NDCG_exp", "exp", "NDCG with exponential gain",
                     "NDCG with gain = 2^rel - 1 (Burges et al.).", "ndcg_cut.k on qrels mapped rel -> 2^rel - 1",
                     gain=staticmethod(lambda rel: 2 ** rel - 1))


_CUT_REL_PARAMS = {
    "cutoff": ParamInfo(dtype=int, required=True, desc=CUTOFF_DESC),
    "rel": ParamInfo(dtype=int, default=1, desc=REL_DESC),
    "ties": TIES,
}


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
    SUPPORTED_PARAMS = _CUT_REL_PARAMS


_HitRate_query = _variant(_HitRate, "HitRate", "query", "Hit rate (query level)",
                          "1 if a relevant doc is in the top k, averaged over queries (trec_eval success.k).",
                          "success.k with -l rel", ORACLE="success", BUILTIN="Success")
_HitRate_item = _variant(_HitRate, "HitRate_item", "item", "Hit rate (item level)",
                         "Relevant docs in the top k over docs in the top k, micro-averaged over all queries.",
                         "P.k x k / min(k, num_ret) per query, summed over queries (run cut to k)",
                         ORACLE="P", DEFAULT=ItemValue(0, 0), aggregator=lambda self: MicroAgg())


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
    ORACLE = "recip_rank"
    SUPPORTED_PARAMS = _CUT_REL_PARAMS


_MRR_zero = _variant(_MRR, "MRR_zero", "zero", "MRR, misses count 0",
                     "Reciprocal rank of the first relevant doc in the top k, 0 if none; mean over all queries.",
                     "recip_rank with -M k", BUILTIN="RR")
_MRR_ignore = _variant(_MRR, "MRR_ignore", "ignore", "MRR, misses left out",
                       "Reciprocal rank of the first relevant doc in the top k; queries without one are left out.",
                       "recip_rank with -M k, averaged over queries with recip_rank > 0",
                       DEFAULT=float("nan"), aggregator=lambda self: NanSkipMeanAgg(str(self)))


# trec_eval measure names -> (ir-measures name, the plugin's counterpart or None); ".k" takes a cutoff
TREC_EVAL_NAMES = {
    "ndcg_cut": ("nDCG@{k}", "NDCG_lin@{k}"), "ndcg": ("nDCG", "NDCG_lin"), "P": ("P@{k}", None),
    "recip_rank": ("RR", "MRR_zero@k"), "success": ("Success@{k}", "HitRate@{k}"), "map": ("AP", None),
    "map_cut": ("AP@{k}", None), "recall": ("R@{k}", None), "Rprec": ("Rprec", None), "bpref": ("Bpref", None),
    "num_rel_ret": ("NumRelRet", None), "num_ret": ("NumRet", None), "num_rel": ("NumRel", None),
}


def same_as_builtin(measure) -> PluginMeasure | None:
    """The plugin's measure that computes what a built-in one does (its ``BUILTIN``): ``nDCG@k``
    is ``NDCG_lin@k``, ``RR(rel=r)@k`` is ``MRR_zero(rel=r)@k``, ``Success(rel=r)@k`` is
    ``HitRate(rel=r)@k``; only with a cutoff and no parameter but ``rel`` (and judged_only=False),
    else None."""
    mine = next((m for m in ALL if m.BUILTIN and m.BUILTIN == getattr(measure, "NAME", None)), None)
    cutoff = measure.params.get("cutoff") if mine is not None else None
    others = set(measure.params) - {"cutoff", "judged_only"}
    if cutoff is None or measure.params.get("judged_only") or not others <= {"rel"} & set(mine.SUPPORTED_PARAMS):
        return None
    rel = measure.params.get("rel", 1)
    return (mine(rel=rel) if rel != 1 else mine) @ cutoff


def _trec_eval_hint(text: str) -> str:
    """'; trec_eval's ndcg_cut.10 is nDCG@10 here (the plugin's NDCG_lin@10)' for a trec_eval
    measure name such as ndcg_cut.10, P_10 or recip_rank, else ''."""
    name, k = text, None
    for sep in (".", "_"):
        head, _, tail = text.rpartition(sep)
        if head and tail.isdigit():
            name, k = head, tail
            break
    if name not in TREC_EVAL_NAMES:
        return ""
    ours, plugin = (x.replace("{k}", k or "k") if x else x for x in TREC_EVAL_NAMES[name])
    extra = f" (the plugin's {plugin})" if plugin else ""
    return f"; that is trec_eval's name: here it is {ours}{extra}"


def split_measures(text: str) -> list[str]:
    """Measure strings in one argument: separated by spaces outside parentheses, so that
    ``"MRR_zero(rel=2, ties='average')@10 nDCG@10"`` is two measures."""
    parts, depth, current = [], 0, []
    for ch in text:
        depth += (ch == "(") - (ch == ")")
        if ch.isspace() and depth == 0:
            if current:
                parts.append("".join(current))
                current = []
        else:
            current.append(ch)
    if current:
        parts.append("".join(current))
    return parts


def parse_measures(strings: Iterable[str]) -> list:
    """Parse measure strings (one argument may hold several, separated by spaces outside
    parentheses) with ``ir_measures.parse_measure``, validate them and drop repeats, keeping
    the order. Raises ValueError naming the string at fault: unknown names list the plugin's
    measures, and trec_eval names (``ndcg_cut.10``, ``recip_rank``) get their equivalent."""
    measures = []
    for s in strings:
        for part in split_measures(str(s)):
            try:
                m = ir_measures.parse_measure(part)
            except (NameError, ValueError, SyntaxError) as e:
                hint = _trec_eval_hint(part)
                if hint:
                    raise ValueError(f"unknown measure {part!r}{hint}") from None
                if isinstance(e, NameError):
                    names = ", ".join(m.NAME for m in ALL)
                    raise ValueError(f"unknown measure {part!r}; the plugin's measures are {names}, plus any "
                                     f"ir-measures measure (nDCG@10, AP, RR@10, ...)") from None
                raise ValueError(f"cannot read measure {part!r}: expected Name, Name@k or "
                                 f"Name(param=value, ...)@k, e.g. NDCG_exp@10 or \"MRR_zero(rel=2)@10\"") from None
            try:
                m.validate_params()
            except (ValueError, AssertionError) as e:
                raise ValueError(f"invalid measure {part!r}: {e}") from None
            if m not in measures:
                measures.append(m)
    return measures


NDCG_lin = _NDCG_lin()
NDCG_exp = _NDCG_exp()
HitRate = _HitRate_query()
HitRate_item = _HitRate_item()
MRR_zero = _MRR_zero()
MRR_ignore = _MRR_ignore()

ALL = (NDCG_lin, NDCG_exp, HitRate, HitRate_item, MRR_zero, MRR_ignore)


def register() -> None:
    """Add the six measures to ``ir_measures.measures.registry`` (idempotent)."""
    registry = ir_measures.measures.registry
    for measure in ALL:
        existing = registry.get(measure.NAME)
        if existing is not None and not type(existing).__module__.startswith("ndcg_plugin"):
            raise RuntimeError(f"cannot register {measure.NAME}: ir-measures already has a measure "
                               f"of that name from {type(existing).__module__}")
        registry[measure.NAME] = measure  # replaces an earlier copy of ours (e.g. after a reload)


__all__ = ["NDCG_lin", "NDCG_exp", "HitRate", "HitRate_item", "MRR_zero", "MRR_ignore",
           "PluginMeasure", "ALL", "register", "parse_measures", "same_as_builtin"]
