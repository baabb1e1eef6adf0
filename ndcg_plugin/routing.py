"""Who computes each measure of an evaluation: the plugin's engine (:data:`ENGINE`) for the
measures a family computes, else the first ir-measures provider that supports it (:func:`route`);
or one provider the caller names for every measure (:class:`NamedProvider`, checked once, when
it is made). :class:`ndcg_plugin.evaluation.Evaluation` routes its measures here, once."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import ir_measures

from .measures import PluginMeasure, registry, spec_of

#: the name of the plugin's engine among ir-measures' providers
ENGINE = "ndcg_plugin"


def engine_computes(measure) -> bool:
    """True for the plugin's measures (a ValueError for bad parameters) and for the built-ins a
    family computes whose parameters the engine computes as pytrec_eval defines them."""
    if isinstance(measure, PluginMeasure):
        spec_of(measure)
        return True
    if registry.builtin_family(measure) is None:
        return False
    try:
        spec_of(measure)
    except ValueError:
        return False
    return True


def route(measure) -> str:
    """The provider that computes ``measure`` in an evaluation: :data:`ENGINE` for every measure
    the engine computes, else the first available provider of ir-measures' DefaultPipeline that
    supports it (a ValueError when none does)."""
    if engine_computes(measure):
        return ENGINE
    for p in ir_measures.DefaultPipeline.providers:
        if getattr(p, "NAME", None) != ENGINE and p.supports(measure) and p.is_available():
            return p.NAME
    raise ValueError(f"no ir-measures provider computes {measure}")


#: the package that brings each optional ir-measures provider's library
PROVIDER_PACKAGES = {"ranx": "ranx", "cwl_eval": "cwl-eval", "trectools": "trectools", "pyndeval": "pyndeval",
                     "pytrec_eval": "pytrec-eval-terrier"}


@dataclass(frozen=True)
class NamedProvider:
    """An ir-measures provider the caller named to compute every measure, checked once, when it
    is made: a ValueError unless it is a provider that can run here (its library is installed),
    saying what to install."""
    name: str

    def __post_init__(self) -> None:
        registry = ir_measures.providers.registry
        if self.name not in registry:
            raise ValueError(f"no ir-measures provider is named {self.name!r} (known: {', '.join(sorted(registry))})")
        if not registry[self.name].is_available():
            package = PROVIDER_PACKAGES.get(self.name)
            how = f"pip install {package}" if package else "its library is not installed"
            raise ValueError(f"provider {self.name} is not available here ({how}); leave it out to use the plugin "
                             f"and ir-measures' default providers")

    @property
    def provider(self) -> Any:
        """The ir-measures provider itself (``supports``, ``calc_aggregate``, ``iter_calc``)."""
        return ir_measures.providers.registry[self.name]

    def supports(self, measure) -> bool:
        return self.provider.supports(measure)
