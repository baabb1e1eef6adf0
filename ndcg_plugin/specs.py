"""What the engine computes for a measure (:class:`Spec`), and the translation of a measure into
one (:func:`spec_of`). Kept apart from the engine so that routing a measure (the CLI decides
whether the run is streamed) imports neither numpy nor pyarrow."""
from __future__ import annotations

from dataclasses import dataclass

from ir_measures.providers.base import NOT_PROVIDED

from .measures import PluginMeasure


@dataclass(frozen=True)
class Spec:
    """What the engine computes: one family, its variant and parameters."""
    family: str            # "ndcg" | "hitrate" | "mrr"
    variant: str           # ndcg: linear|exp; hitrate: query|item; mrr: zero|ignore
    cutoff: int | None
    rel: int = 1
    ideal: str = "qrels"
    gains: tuple = ()      # sorted ((label, gain), ...)
    judged_only: bool = False
    ties: str = "trec"     # "trec" (doc id descending) | "average" (expected value over tied orders)


def spec_of(measure) -> Spec:
    """Translate a plugin measure, or a built-in one the plugin serves (``nDCG``, ``RR``,
    ``Success``), into a :class:`Spec`. A built-in's parameters are accepted only where the
    engine computes the measure as pytrec_eval defines it; otherwise a ValueError says why."""
    measure.validate_params()

    def param(key, default=None):
        if key not in measure.SUPPORTED_PARAMS:
            return default
        value = measure[key]
        return default if value is NOT_PROVIDED else value

    cutoff = param("cutoff")
    if isinstance(measure, PluginMeasure):  # a parameter the measure does not take keeps Spec's default
        return Spec(measure.FAMILY, measure.VARIANT, cutoff, rel=param("rel", 1), ideal=param("ideal", "qrels"),
                    gains=tuple(sorted((param("gains") or {}).items())),
                    judged_only=bool(param("judged_only", False)), ties=param("ties", "trec"))
    name = getattr(measure, "NAME", None)
    if name not in ("nDCG", "RR", "Success"):
        raise ValueError(f"the ndcg_plugin engine does not compute {measure}")

    def refuse(why: str):
        raise ValueError(f"the ndcg_plugin engine does not compute {measure}: {why}")

    if cutoff is None and name == "Success":
        refuse("Success needs a cutoff, e.g. Success@10")
    if cutoff is not None and (isinstance(cutoff, bool) or not isinstance(cutoff, int) or cutoff < 1):
        refuse(f"the cutoff must be a positive integer, got {cutoff!r}")
    judged_only = param("judged_only", False)
    if not isinstance(judged_only, bool):
        refuse(f"judged_only must be True or False, got {judged_only!r}")
    if name == "nDCG":
        dcg = param("dcg", "log2")
        if dcg not in ("log2", "exp-log2"):
            refuse(f"dcg must be 'log2' or 'exp-log2', got {dcg!r}")
        gains = param("gains")
        if gains is not None:
            if dcg != "log2":
                refuse("gains are defined for dcg='log2' only (pytrec_eval's relevance -> gain map)")
            if not isinstance(gains, dict) or not all(
                    isinstance(v, int) and not isinstance(v, bool) and v >= 0 for k in gains for v in (k, gains[k])):
                refuse(f"gains must map labels >= 0 to integer gains >= 0 (pytrec_eval reads a gain as an "
                       f"integer relevance label, and a negative one as judged non-relevant), got {gains!r}")
        return Spec("ndcg", "exp" if dcg == "exp-log2" else "linear", cutoff,
                    gains=tuple(sorted((gains or {}).items())), judged_only=judged_only)
    rel = param("rel", 1)
    if isinstance(rel, bool) or not isinstance(rel, int) or rel < 1:
        refuse(f"rel must be an integer >= 1 (negative labels are never relevant, label 0 is judged "
               f"non-relevant), got {rel!r}")
    family, variant = ("mrr", "zero") if name == "RR" else ("hitrate", "query")
    return Spec(family, variant, cutoff, rel=rel, judged_only=judged_only)
