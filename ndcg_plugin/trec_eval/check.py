"""Cross-check the plugin's measures against trec_eval (through pytrec_eval, or a binary).

Each family names its measures' trec_eval counterparts and computes them
(:meth:`ndcg_plugin.measures.Family.counterpart`, from :mod:`ndcg_plugin.measures.oracle`); trec_eval is
always run as with ``-c`` (a qrels query missing from the run scores 0), and a cut to k is done
independently of the engine, with Python's ``sorted`` on (score descending, doc id descending),
trec_eval's order. The plugin's side is computed as ``eval`` computes it
(:class:`ndcg_plugin.evaluation.Evaluation`); both sides are aggregated by the measure's own
aggregator. docs/measures.md lists every counterpart.
"""
from __future__ import annotations

import math
import warnings
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import ir_measures

from ..evaluation import Evaluation, ReadOptions, qrels_queries
from ..formatting import ALL_DIGITS, format_value
from ..measures import PluginMeasure, family, registry, same_as_builtin, spec_of
from ..measures.aggregate import aggregate_arrays
from ..measures.oracle import Oracle
from ..routing import engine_computes

TOLERANCE_PYTREC = 1e-9
TOLERANCE_BINARY = 5e-5  # the binary prints 4 decimals


def default_measures() -> tuple[str, ...]:
    """Every registered measure at cutoff 10: what crosscheck checks when given no measures."""
    return tuple(f"{m.NAME}@10" for m in registry.measures())


@dataclass
class Row:
    measure: str
    ours: float
    trec_eval: float | None
    max_diff: float | None
    verdict: str  # "match" | "MISMATCH" | "no counterpart: ..."

    @property
    def ok(self) -> bool:
        return self.verdict != "MISMATCH"


def _as_dicts(table) -> dict:
    col = "relevance" if "relevance" in table.columns else "score"
    out: dict = {}
    for q, d, v in zip(table["query_id"], table["doc_id"], table[col].tolist(), strict=True):
        out.setdefault(q, {})[d] = v
    return out


def counterpart(measure, qrels: dict, run: dict, oracle: Oracle) -> tuple:
    """Per-query trec_eval values for a measure the engine computes (the plugin's, or a built-in a
    family serves: AP, P@k, Bpref...) over every qrels query, as ``aggregate.Values`` (hits and
    returned for an item-level measure; NaN where a measure has no value), with how they were
    computed; or None and why not: the measure's family's counterpart."""
    spec = spec_of(measure)
    if spec.ties == "average":  # the expected value over every order of the tied docs: no trec_eval measure
        return None, ("not comparable: trec_eval takes one order of tied documents (doc id descending) and has no "
                      "ties='average'; crosscheck the measure without it")
    owner = family(spec.family)
    if not isinstance(measure, PluginMeasure) and owner.measures:  # nDCG@k, RR@k, Success@k: as their twins
        twin = same_as_builtin(measure)
        if twin is None:
            return None, f"no counterpart here for {measure}: crosscheck its plugin twin (NDCG_lin@k, MRR_zero@k, ...)"
        measure = twin
    return owner.counterpart(measure, qrels, run, oracle)


def _max_diff(ours, theirs) -> float:
    """The largest per-query difference: of the values (NaN only against NaN), or 1.0 where the
    (hits, returned) counts of an item-level measure differ."""
    import numpy as np  # imported on use: `import ndcg_plugin` stays light
    if theirs.hits is not None:
        same = (ours.hits == theirs.hits) & (ours.returned == theirs.returned)
        return 0.0 if same.all() else 1.0
    a, b = ours.values, theirs.values
    with np.errstate(invalid="ignore"):
        d = np.where(np.isnan(a) & np.isnan(b), 0.0, np.where(np.isnan(a) | np.isnan(b), math.inf, np.abs(a - b)))
    return float(d.max()) if len(d) else 0.0


def crosscheck(qrels: Any, run: Any, measures: Iterable | None = None, *, trec_eval: str | None = None,
               duplicates: str = "error") -> list[Row]:
    """Compute each plugin measure (default: every one at cutoff 10) and its trec_eval counterpart
    (pytrec_eval, or the binary at ``trec_eval``) and compare them per query. Returns one
    :class:`Row` per measure."""
    measures = [ir_measures.parse_measure(m) if isinstance(m, str) else m
                for m in (default_measures() if measures is None else measures)]
    for m in measures:
        if not isinstance(m, PluginMeasure) and not engine_computes(m):
            raise ValueError(f"crosscheck compares the measures the plugin's engine computes with trec_eval; {m} is "
                             f"not one of them")
    from .. import reading  # imported on use: `import ndcg_plugin` stays light

    qrels_t = reading.read(qrels, "qrels", duplicates=duplicates)
    run_t = reading.read(run, "run", duplicates=duplicates, queries=qrels_queries(qrels_t))
    ours = Evaluation(measures, qrels=qrels_t, options=ReadOptions(duplicates=duplicates)).compute(run_t)
    ours_perq, aggregates = ours.values, ours.aggregates
    qrels_d, run_d = _as_dicts(qrels_t), _as_dicts(run_t)
    qrels_d = {q: qrels_d[q] for q in ours.query_ids}  # the engine's query order
    oracle = Oracle(trec_eval)
    tol = TOLERANCE_BINARY if trec_eval else TOLERANCE_PYTREC
    rows = []
    for m in measures:
        theirs, how = counterpart(m, qrels_d, run_d, oracle)
        ours = aggregates[m]
        if theirs is None:
            rows.append(Row(str(m), ours, None, None, how))
            continue
        max_diff = _max_diff(ours_perq[m], theirs)
        with warnings.catch_warnings():  # "no query has a value": said once, for ours
            warnings.simplefilter("ignore", RuntimeWarning)
            agg = aggregate_arrays(m, theirs.values, theirs.hits, theirs.returned)
        agg_diff = 0.0 if (math.isnan(agg) and math.isnan(ours)) else abs(agg - ours)
        ok = max_diff <= tol and agg_diff <= tol
        rows.append(Row(str(m), ours, agg, max_diff, "match" if ok else "MISMATCH"))
    return rows


def format_rows(rows: list[Row], places: int = 4) -> str:
    """The rows as a table; ``places`` -1 prints every digit of both values."""
    width = 24 if places == ALL_DIGITS else 12
    name_width = max([28, *(len(r.measure) + 2 for r in rows)])  # long names keep the columns aligned
    head = f"{'measure':<{name_width}}{'ours':>{width}}{'trec_eval':>{width}}{'max |diff|':>13}  verdict"
    lines = [head]
    for r in rows:
        shown = places
        while places != ALL_DIGITS and r.trec_eval is not None and shown < 17 \
                and f"{r.ours:.{shown}f}" != f"{r.trec_eval:.{shown}f}" \
                and round(r.ours, shown) != round(r.trec_eval, shown) and abs(r.ours - r.trec_eval) < 10 ** -shown:
            shown += 1  # values that agree but print differently: enough digits to show why they match
        te = "-" if r.trec_eval is None else format_value(r.trec_eval, shown)
        md = "-" if r.max_diff is None else f"{r.max_diff:.1e}"
        ours = format_value(r.ours, shown)
        lines.append(f"{r.measure:<{name_width}}{ours:>{width}}{te:>{width}}{md:>13}  {r.verdict}")
    return "\n".join(lines)
