"""What every measure family shares: :class:`Spec` (what a backend computes), :class:`PluginMeasure`
(the ir-measures specification, with validation that says what was expected and what was got),
the parameters several families take, and :class:`Family`, the interface each family module
implements for every backend.

A backend (the local engine, the Spark engine, ``explain``, ``crosscheck``, the docs page) looks
a family up by name in :mod:`ndcg_plugin.measures.registry` and calls the family's hook for it; a
hook the family does not implement raises :class:`ndcg_plugin.errors.Unsupported` naming the
family and the backend, and a variant a family does not know is refused by :func:`pick`. No
backend computes a family or a variant it was not written for.

Nothing here imports numpy, pyarrow, pandas or pyspark: ``import ndcg_plugin`` stays light, and
the families import them inside the hooks that need them.
"""
from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import Any, ClassVar

from ir_measures.measures.base import Measure, ParamInfo
from ir_measures.providers.base import NOT_PROVIDED

from ..errors import Unsupported
from .aggregate import ExactMeanAgg


@dataclass(frozen=True)
class Spec:
    """What a backend computes for one measure: its family (a registry name), the family's
    variant, and the parameters (defaults where the measure does not take one)."""
    family: str
    variant: str
    cutoff: int | None
    rel: int = 1
    ideal: str = "qrels"
    gains: tuple = ()      # sorted ((label, gain), ...)
    judged_only: bool = False
    ties: str = "trec"     # "trec" (doc id descending) | "average" (expected value over tied orders)
    recall: float | None = None  # a recall level (IPrec), else None
    beta: float = 1.0      # SetF's parameter (trec_eval set_F's)
    params: tuple = ()     # a trec_eval-only measure's real parameters (Rprec_mult's multiple, utility's coefficients)

    def __post_init__(self) -> None:
        """Every value field a backend dispatches on is checked here, so that no backend computes a
        value it does not know as another (``ideal='bogus'`` as ``'qrels'``). The family and the
        variant are looked up in the registry by every backend, which refuses an unknown one by
        name (:func:`pick`, ``registry.family``)."""
        _expect(self.cutoff is None or (_is_int(self.cutoff) and self.cutoff >= 1),
                "cutoff", "None or an integer >= 1", self.cutoff)
        _expect(self.cutoff is None or self.cutoff <= MAX_CUTOFF, "cutoff", "at most 2^63 - 1", self.cutoff)
        _expect(_is_int(self.rel), "rel", "an integer", self.rel)
        _expect(self.ideal in IDEALS, "ideal", " or ".join(map(repr, IDEALS)), self.ideal)
        _expect(self.ties in TIE_ORDERS, "ties", " or ".join(map(repr, TIE_ORDERS)), self.ties)
        _expect(isinstance(self.judged_only, bool), "judged_only", "True or False", self.judged_only)
        _expect(isinstance(self.beta, float) and self.beta >= 0.0, "beta", "a float >= 0", self.beta)
        _expect(isinstance(self.params, tuple) and all(isinstance(x, float) and math.isfinite(x) for x in self.params),
                "params", "a tuple of finite floats", self.params)
        _expect(self.recall is None or (isinstance(self.recall, float) and 0.0 <= self.recall <= 1.0),
                "recall", "None or a float between 0 and 1", self.recall)
        _expect(isinstance(self.gains, tuple) and all(
            isinstance(g, tuple) and len(g) == 2 and _is_int(g[0]) and isinstance(g[1], numbers.Real)
            and not isinstance(g[1], bool) for g in self.gains)
            and all(a[0] < b[0] for a, b in zip(self.gains, self.gains[1:], strict=False)),
            "gains", "a tuple of (integer label, real gain) pairs, labels increasing", self.gains)


#: the values of :class:`Spec`'s fields that backends dispatch on
IDEALS = ("qrels", "run")
TIE_ORDERS = ("trec", "average")
#: the deepest cutoff (a C long, as trec_eval reads one): any deeper would not fit the engine's
#: 64-bit ranks; a cutoff past every ranking's length gives the value at that length anyway
MAX_CUTOFF = 2 ** 63 - 1


def _is_int(value: Any) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _expect(ok: bool, field: str, expected: str, got: Any) -> None:
    if not ok:
        raise Unsupported(f"Spec: {field} must be {expected}, got {got!r}")


def pick(table: dict, spec: Spec, backend: str) -> Any:
    """``table[spec.variant]``: a family's per-variant piece for a backend, or Unsupported naming
    the variant (a family dispatches on its variants through such tables, never with an else)."""
    try:
        return table[spec.variant]
    except KeyError:
        raise Unsupported(f"{backend}: the {spec.family} family has no variant {spec.variant!r} "
                          f"(known: {', '.join(sorted(table))})") from None


CUTOFF_DESC = "ranking cutoff threshold k (a positive integer)"
REL_DESC = "minimum relevance label that counts as relevant (inclusive, >= 1; TREC DL uses 2)"
TIES = ParamInfo(dtype=str, choices=list(TIE_ORDERS), default="trec",
                 desc="tied scores: 'trec' orders them by doc id descending (trec_eval); 'average' takes the "
                      "expected value over all orders of the tied docs, in closed form (see ndcg_plugin.measures.ties)")
#: the parameters of the families with a required cutoff and a relevance threshold
CUT_REL_PARAMS = {
    "cutoff": ParamInfo(dtype=int, required=True, desc=CUTOFF_DESC),
    "rel": ParamInfo(dtype=int, default=1, desc=REL_DESC),
    "ties": TIES,
}


class PluginMeasure(Measure):
    """Base of the plugin's measures: ir-measures' Measure with faithful printing of dict
    parameters and validation errors that say what was expected and what was got. A measure
    class names its family (``FAMILY``, a registry name) and its variant there (``VARIANT``);
    as in ir-measures, ``__name__`` (how it prints) is set in the class body, to ``NAME``."""

    FAMILY: ClassVar[str] = ""
    VARIANT: ClassVar[str] = ""
    PRETTY_NAME: ClassVar[str] = ""
    SHORT_DESC: ClassVar[str] = ""
    TREC_EVAL: ClassVar[str] = ""  # the trec_eval counterpart, for the docs
    BUILTIN: ClassVar[str] = ""    # the ir-measures measure that computes the same, if any (same_as_builtin)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """A variant's class without a docstring of its own carries its family's (the formula), so
        that ``help()`` and ``__doc__`` show it for every measure."""
        super().__init_subclass__(**kwargs)
        if cls.__doc__ is None:
            cls.__doc__ = next((b.__doc__ for b in cls.__mro__[1:] if b.__doc__), None)

    def aggregator(self) -> ExactMeanAgg:
        """The mean over queries, summed exactly (order-independent); a family's measure whose
        aggregate is not that mean overrides it."""
        return ExactMeanAgg()

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
        cutoff = self.params.get("cutoff", NOT_PROVIDED)
        if cutoff is NOT_PROVIDED:
            if self.CUTOFF_REQUIRED:
                raise ValueError(f"{name} needs a cutoff, e.g. {name}@10")
        elif isinstance(cutoff, bool) or not isinstance(cutoff, int) or cutoff < 1:
            raise ValueError(f"{name}: cutoff must be a positive integer, got {cutoff!r}")
        for key, info in self.SUPPORTED_PARAMS.items():
            if key != "cutoff" and key in self.params:
                _check_param(name, key, info, self.params[key])
        if "rel" in self.params and self.params["rel"] < 1:
            raise ValueError(f"{name}: rel must be >= 1 (a threshold of 0 would count judged "
                             f"non-relevant documents as relevant), got {self.params['rel']!r}")
        gains = self.params.get("gains", NOT_PROVIDED)
        if gains is not NOT_PROVIDED:
            for k, g in gains.items():
                if isinstance(k, bool) or not isinstance(k, int) or k < 0:
                    raise ValueError(f"{name}: gains keys must be relevance labels >= 0 (negative labels "
                                     f"always have gain 0), got {k!r}")
                if isinstance(g, bool) or not isinstance(g, numbers.Real) or not math.isfinite(g):
                    raise ValueError(f"{name}: gains values must be finite numbers, got {k!r}: {g!r}")
        self.validated = True

    def spec(self) -> Spec:
        """The :class:`Spec` of this measure (validated); a parameter it does not take keeps
        Spec's default."""
        self.validate_params()
        return Spec(self.FAMILY, self.VARIANT, param(self, "cutoff"), rel=param(self, "rel", 1),
                    ideal=param(self, "ideal", "qrels"), gains=tuple(sorted((param(self, "gains") or {}).items())),
                    judged_only=bool(param(self, "judged_only", False)), ties=param(self, "ties", "trec"))


def _check_param(name: str, key: str, info: ParamInfo, value: Any) -> None:
    if info.choices is not NOT_PROVIDED and value not in info.choices:
        raise ValueError(f"{name}: {key} must be one of {info.choices!r}, got {value!r}")
    if info.dtype is None:
        return
    if not isinstance(value, info.dtype) or (info.dtype is int and isinstance(value, bool)):
        raise ValueError(f"{name}: {key} must be of type {info.dtype.__name__}, got {value!r}")


def param(measure: Measure, key: str, default: Any = None) -> Any:
    """A parameter of a measure (its own or a built-in one), ``default`` when it does not take the
    parameter or it is not given."""
    if key not in measure.SUPPORTED_PARAMS:
        return default
    value = measure[key]
    return default if value is NOT_PROVIDED else value


def builtin_common(measure: Measure) -> tuple[int | None, bool]:
    """(cutoff, judged_only) of a built-in measure, refused (ValueError) where the engine would not
    compute them as pytrec_eval does."""
    cutoff, judged_only = param(measure, "cutoff"), param(measure, "judged_only", False)
    if cutoff is not None and (isinstance(cutoff, bool) or not isinstance(cutoff, int) or cutoff < 1):
        refuse(measure, f"the cutoff must be a positive integer, got {cutoff!r}")
    if not isinstance(judged_only, bool):
        refuse(measure, f"judged_only must be True or False, got {judged_only!r}")
    return cutoff, judged_only


def builtin_rel(measure: Measure) -> int:
    """``rel`` of a built-in measure: an integer >= 1, else refused."""
    rel = param(measure, "rel", 1)
    if isinstance(rel, bool) or not isinstance(rel, int) or rel < 1:
        refuse(measure, f"rel must be an integer >= 1 (negative labels are never relevant, label 0 is judged "
                        f"non-relevant), got {rel!r}")
    return rel


def refuse(measure: Measure, why: str):
    raise ValueError(f"the ndcg_plugin engine does not compute {measure}: {why}")


def by_name(table: dict, measure: Measure) -> Any:
    """``table[measure.NAME]``: a family's entry for one of its built-ins, or a refusal naming the
    built-in (a family dispatches on built-in names through such tables, never with an else)."""
    try:
        return table[measure.NAME]
    except KeyError:
        refuse(measure, f"no built-in named {measure.NAME!r} here (known: {', '.join(sorted(table))})")


class Family:
    """One family of measures, and everything about it that is not shared machinery: the
    measures (``measures``, each a variant), the built-in ir-measures measures the engine computes
    as this family, and one hook per backend. A hook a family does not implement refuses by name."""

    name: ClassVar[str] = ""
    variants: ClassVar[tuple[str, ...]] = ()
    builtins: ClassVar[tuple[str, ...]] = ()
    #: trec_eval measure names -> (the ir-measures name, the plugin's counterpart or None); "{k}": a cutoff
    trec_eval_names: ClassVar[dict[str, tuple[str, str | None]]] = {}
    #: rows of the conventions table of docs/measures.md that are this family's own
    conventions: ClassVar[tuple[str, ...]] = ()
    #: how the family computes the built-ins it serves, for docs/measures.md ("" when it has none)
    formula: ClassVar[str] = ""

    @property
    def measures(self) -> tuple[PluginMeasure, ...]:
        raise Unsupported(f"the {self.name} family lists no measures")

    def _refuse(self, backend: str):
        raise Unsupported(f"{backend} does not implement the {self.name} family")

    def builtin_spec(self, measure: Measure) -> Spec:
        """The Spec of a built-in measure of :attr:`builtins` (ValueError for parameters the
        engine would compute differently from pytrec_eval)."""
        self._refuse(f"the engine's reading of the built-in {getattr(measure, 'NAME', measure)}")

    def depth(self, spec: Spec) -> int | None:
        """How deep the local engine must rank a query's rows for this spec: the cutoff (None: the
        whole list). A family whose values read no order, or read deeper than the cutoff, says so."""
        return spec.cutoff

    def needs_every_row(self, spec: Spec) -> bool:
        """Whether the local engine must join the relevance of every run row (not only of the rows
        that rank within the cutoff) for this spec."""
        return False

    def values(self, index: Any, ranked: Any, spec: Spec) -> Any:
        """Local engine: per-query values (``aggregate.Values``) from a ranked run."""
        self._refuse("the local engine")

    def explain(self, trace: Any, shown: Any, measure: Measure, num: Any) -> tuple:
        """explain: (rows shown, ideal ranking or None, summary lines) for one query."""
        self._refuse("explain")

    def counterpart(self, measure: Measure, qrels: dict, run: dict, oracle: Any) -> tuple:
        """crosscheck: (per-query trec_eval values as ``aggregate.Values``, how) or (None, why not)."""
        self._refuse("crosscheck")


def mark_relevant(trace: Any, shown: Any) -> Any:
    """explain's rows with a ``relevant`` column: "yes" for a row judged with a label >= rel."""
    import numpy as np

    return shown.assign(relevant=np.where(trace.relevant[trace.top], "yes", ""))


class ServedFamily(Family):
    """A family that lists no measures of its own: it serves ir-measures' built-ins (when asked,
    :func:`ndcg_plugin.register` ``serve_builtins=True``) and the trec_eval drop-in's measures, so
    registering the plugin adds no name for it."""

    @property
    def measures(self) -> tuple:
        return ()

