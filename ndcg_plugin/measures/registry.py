"""The registry of measure families: the one place a backend looks a family up.

:func:`family` gives the family of a name, or raises :class:`ndcg_plugin.errors.Unsupported`
naming it; :func:`spec_of` turns a measure (the plugin's, or a built-in one a family computes)
into a :class:`Spec`. :func:`add_family` registers another family (a test's toy family, or an
extension) and gives back a handle that removes it again.
"""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import ir_measures

from ..errors import Unsupported
from . import ap, bpref, counts, gain, hitrate, infap, iprec, mrr, ndcg, precision, retrieved, sets, unjudged
from .base import Family, PluginMeasure, Spec

_FAMILIES: dict[str, Family] = {f.name: f for f in (ndcg.FAMILY, hitrate.FAMILY, mrr.FAMILY, ap.FAMILY,
                                                    precision.FAMILY, bpref.FAMILY, counts.FAMILY,
                                                    iprec.FAMILY, sets.FAMILY, infap.FAMILY, retrieved.FAMILY,
                                                    gain.FAMILY, unjudged.FAMILY)}


#: the families the package registers on import (every process that imports it has them)
_OWN = frozenset(_FAMILIES)


def is_own(name: str) -> bool:
    """Whether ``name`` is one of the package's own families, not one :func:`add_family` added in
    this process (a Spark executor's Python, say, has only the package's own)."""
    return name in _OWN


def families() -> tuple[Family, ...]:
    """The registered families, in the order the docs list them."""
    return tuple(_FAMILIES.values())


def family(name: str) -> Family:
    """The family registered as ``name``; Unsupported naming it (and the known ones) otherwise."""
    try:
        return _FAMILIES[name]
    except KeyError:
        raise Unsupported(f"no measure family {name!r} is registered (known: {', '.join(_FAMILIES)})") from None


@contextmanager
def add_family(new: Family) -> Iterator[Family]:
    """Register ``new`` for the duration of a ``with`` block (its name must be new)."""
    if new.name in _FAMILIES:
        raise ValueError(f"a measure family named {new.name!r} is already registered")
    _FAMILIES[new.name] = new
    try:
        yield new
    finally:
        del _FAMILIES[new.name]


def measures() -> tuple[PluginMeasure, ...]:
    """Every registered family's measures, in registry order."""
    return tuple(m for f in _FAMILIES.values() for m in f.measures)


def builtin_family(measure) -> Family | None:
    """The family that computes a built-in ir-measures measure (by its NAME), or None."""
    name = getattr(measure, "NAME", None)
    return next((f for f in _FAMILIES.values() if name in f.builtins), None)


def spec_of(measure) -> Spec:
    """A plugin measure, or a built-in one a family computes (``nDCG``, ``RR``, ``Success``), as a
    :class:`Spec`. A built-in's parameters are accepted only where the engine computes the measure
    as pytrec_eval defines it; otherwise a ValueError says why."""
    measure.validate_params()
    if isinstance(measure, PluginMeasure):
        spec = measure.spec()
        if spec.variant not in family(spec.family).variants:
            raise Unsupported(f"{measure}: the {spec.family} family has no variant {spec.variant!r}")
        return spec
    owner = builtin_family(measure)
    if owner is None:
        raise ValueError(f"the ndcg_plugin engine does not compute {measure}")
    return owner.builtin_spec(measure)


def same_as_builtin(measure) -> PluginMeasure | None:
    """The plugin's measure that computes what a built-in one does (its ``BUILTIN``), e.g. the
    linear NDCG for ``nDCG@k``; only with a cutoff and no parameter but ``rel`` (and
    judged_only=False), else None."""
    mine = next((m for m in measures() if m.BUILTIN and m.BUILTIN == getattr(measure, "NAME", None)), None)
    cutoff = measure.params.get("cutoff") if mine is not None else None
    others = set(measure.params) - {"cutoff", "judged_only"}
    if cutoff is None or measure.params.get("judged_only") or not others <= {"rel"} & set(mine.SUPPORTED_PARAMS):
        return None
    rel = measure.params.get("rel", 1)
    return (mine(rel=rel) if rel != 1 else mine) @ cutoff


def register() -> None:
    """Add every family's measures to ``ir_measures.measures.registry`` (idempotent)."""
    registry = ir_measures.measures.registry
    for measure in measures():
        existing = registry.get(measure.NAME)
        if existing is not None and not type(existing).__module__.startswith("ndcg_plugin"):
            raise RuntimeError(f"cannot register {measure.NAME}: ir-measures already has a measure "
                               f"of that name from {type(existing).__module__}")
        registry[measure.NAME] = measure  # replaces an earlier copy of ours (e.g. after a reload)
