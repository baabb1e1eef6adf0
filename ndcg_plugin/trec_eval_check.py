"""Cross-check the plugin's measures against trec_eval (through pytrec_eval, or a binary).

Counterparts (trec_eval is always run as with ``-c``: a qrels query missing from the run
scores 0):

=====================  =========================================================================
NDCG_lin@k             ``ndcg_cut.k`` (``ndcg`` without cutoff)
NDCG_exp@k             ``ndcg_cut.k`` on qrels mapped rel -> 2^rel - 1
NDCG_*(ideal='run')    the same, with qrels restricted to the docs the run retrieved
NDCG_*(gains=...)      the same, with qrels mapped through the gains (integer gains only)
NDCG_*(judged_only)    the same on the run without unjudged docs (trec_eval ``-J``, written out)
HitRate@k              ``success.k`` with ``-l rel``
MRR_zero@k             ``recip_rank`` on the run cut to its top k (``-M k``)
MRR_ignore@k           per-query ``recip_rank`` (``-M k``), averaged over the queries where it is > 0
HitRate_item@k         per-query ``P.k`` x k (hits) over ``num_ret`` of the run cut to k, micro-averaged
=====================  =========================================================================

The cut to k is done here, independently of the engine, with Python's ``sorted`` on
(score descending, doc id descending), trec_eval's order.
"""
from __future__ import annotations

import math
import os
import subprocess
import tempfile
import warnings
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import ir_measures

from .aggregate import aggregate_arrays
from .formatting import ALL_DIGITS, format_value
from .measures import PluginMeasure
from .provider import NdcgPluginProvider

DEFAULT_MEASURES = ("NDCG_lin@10", "NDCG_exp@10", "HitRate@10", "HitRate_item@10", "MRR_zero@10", "MRR_ignore@10")
TOLERANCE_PYTREC = 1e-9
TOLERANCE_BINARY = 5e-5  # the binary prints 4 decimals


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


class _Oracle:
    """Per-query trec_eval values for measure strings, on given (qrels, run) dicts."""

    def __init__(self, trec_eval: str | None):
        self.binary = trec_eval

    def __call__(self, qrels: dict, run: dict, measure: str, rel: int = 1) -> dict:
        if self.binary is None:
            import pytrec_eval
            ev = pytrec_eval.RelevanceEvaluator(_pytrec_safe(qrels), {measure}, relevance_level=rel)
            res = ev.evaluate(run)
            key = measure.replace(".", "_")
            return {q: v[key] for q, v in res.items()}
        return _run_binary(self.binary, qrels, run, measure, rel)


PADDING_DOC = "\x00ndcg-plugin-padding"


def _pytrec_safe(qrels: dict) -> dict:
    """pytrec_eval (0.5.x) corrupts memory and may segfault when a query's qrels hold only
    negative labels. Such a query gets one extra judged-non-relevant (label 0) doc that no run
    retrieves: it changes no measure (label 0 has gain 0 and is not relevant) but avoids the crash."""
    return {q: (docs if any(r >= 0 for r in docs.values()) else {**docs, PADDING_DOC: 0}) for q, docs in qrels.items()}


def _run_binary(binary: str, qrels: dict, run: dict, measure: str, rel: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        qpath, rpath = os.path.join(tmp, "qrels"), os.path.join(tmp, "run")
        with open(qpath, "w") as f:
            for q, docs in qrels.items():
                for d, r in docs.items():
                    f.write(f"{q} 0 {d} {r}\n")
        with open(rpath, "w") as f:
            for q, docs in run.items():
                for i, (d, s) in enumerate(docs.items()):
                    f.write(f"{q} Q0 {d} {i + 1} {s!r} crosscheck\n")
        if not any(run.values()):
            return {}
        cmd = [binary, "-c", "-q", "-l", str(rel), "-m", measure, qpath, rpath]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} failed with status {proc.returncode}: {proc.stderr.strip()}")
    out = {}
    key = measure.replace(".", "_")
    for line in proc.stdout.splitlines():
        name, qid, value = line.split()
        if name == key and qid != "all":
            out[qid] = float(value)
    return out


def _as_dicts(table) -> dict:
    col = "relevance" if "relevance" in table.columns else "score"
    out: dict = {}
    for q, d, v in zip(table["query_id"], table["doc_id"], table[col].tolist(), strict=True):
        out.setdefault(q, {})[d] = v
    return out


def cut_run(run: dict, k: int) -> dict:
    """Each query's top k by (score descending, doc id descending): trec_eval's -M k."""
    return {q: dict(sorted(docs.items(), key=lambda x: (x[1], x[0]), reverse=True)[:k]) for q, docs in run.items()}


def counterpart(measure, qrels: dict, run: dict, oracle: _Oracle) -> tuple:
    """Per-query trec_eval values for a plugin measure over every qrels query, as an
    ``engine.Values`` (hits and returned for an item-level measure; NaN where MRR_ignore has no
    value), with how they were computed; or None and why not. The trec_eval measure is the
    measure's ``ORACLE``."""
    k = measure["cutoff"] if "cutoff" in measure.params else None
    return _ORACLES[measure.ORACLE](measure, k, qrels, run, oracle)


def _per_query(values: list, hits: list | None = None, returned: list | None = None):
    """Lists over the qrels queries as an ``engine.Values``."""
    import numpy as np  # imported on use: `import ndcg_plugin` stays light

    from .engine import Values

    def array(x):
        return None if x is None else np.asarray(x, dtype=np.float64)

    return Values(array(values), array(hits), array(returned))


def _ndcg_cut(measure, k, qrels: dict, run: dict, oracle: _Oracle) -> tuple:
    gains = measure.params.get("gains", {})
    if any(g != int(g) or g < 0 for g in gains.values()):
        return None, "no counterpart: trec_eval's ndcg_cut takes integer qrels (non-integer or negative gains)"

    def gain(r):
        if r < 0:
            return r  # trec_eval: unjudged, gain 0
        return int(gains[r]) if r in gains else measure.gain(r)

    mapped = {q: {d: gain(r) for d, r in docs.items()} for q, docs in qrels.items()}
    if measure["ideal"] == "run":
        mapped = {q: {d: r for d, r in docs.items() if d in run.get(q, {})} for q, docs in mapped.items()}
    name = "ndcg" if k is None else f"ndcg_cut.{k}"
    if measure["judged_only"]:  # trec_eval -J, written out: pytrec_eval's flag can segfault
        run = {q: {d: s for d, s in docs.items() if qrels.get(q, {}).get(d, -1) >= 0} for q, docs in run.items()}
    res = oracle(mapped, run, name)
    return _per_query([res.get(q, 0.0) for q in qrels]), f"{name} (-c{' -J' if measure['judged_only'] else ''})"


def _success(measure, k, qrels: dict, run: dict, oracle: _Oracle) -> tuple:
    rel = measure["rel"]
    res = oracle(qrels, run, f"success.{k}", rel=rel)
    return _per_query([res.get(q, 0.0) for q in qrels]), f"success.{k} -l{rel} -c"


def _recip_rank(measure, k, qrels: dict, run: dict, oracle: _Oracle) -> tuple:
    """recip_rank on the run cut to k; a query without a relevant doc there gets the measure's
    DEFAULT (0 for MRR_zero, NaN, no value, for MRR_ignore)."""
    rel, miss = measure["rel"], float(measure.DEFAULT)
    res = oracle(qrels, cut_run(run, k), "recip_rank", rel=rel)
    how = f"recip_rank -M{k} -l{rel} -c" if miss == 0 else f"recip_rank -M{k} -l{rel}, mean over queries > 0"
    return _per_query([res[q] if res.get(q, 0.0) > 0 else miss for q in qrels]), how


def _precision(measure, k, qrels: dict, run: dict, oracle: _Oracle) -> tuple:
    """Hits (P.k x k) and returned docs (num_ret) of the run cut to k."""
    rel, cut = measure["rel"], cut_run(run, k)
    p = oracle(qrels, cut, f"P.{k}", rel=rel)
    n = oracle(qrels, cut, "num_ret", rel=rel)
    hits = [round(p.get(q, 0.0) * k) for q in qrels]
    returned = [min(k, int(n.get(q, 0))) for q in qrels]
    values = [h / r if r else 0.0 for h, r in zip(hits, returned, strict=True)]
    return _per_query(values, hits, returned), f"P.{k} x {k} / num_ret -M{k} -l{rel}, micro-averaged"


# a measure's ORACLE -> how its per-query values come from trec_eval
_ORACLES = {"ndcg_cut": _ndcg_cut, "success": _success, "recip_rank": _recip_rank, "P": _precision}


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


def crosscheck(qrels: Any, run: Any, measures: Iterable = DEFAULT_MEASURES, *, trec_eval: str | None = None,
               duplicates: str = "error") -> list[Row]:
    """Compute each plugin measure and its trec_eval counterpart (pytrec_eval, or the binary at
    ``trec_eval``) and compare them per query. Returns one :class:`Row` per measure."""
    measures = [ir_measures.parse_measure(m) if isinstance(m, str) else m for m in measures]
    for m in measures:
        if not isinstance(m, PluginMeasure):
            raise ValueError(f"crosscheck compares the plugin's measures with trec_eval; {m} is not one of them")
    from . import reading  # imported on use: `import ndcg_plugin` stays light

    qrels_t = reading.read(qrels, "qrels", duplicates=duplicates)
    run_t = reading.read(run, "run", duplicates=duplicates)
    provider = NdcgPluginProvider(duplicates=duplicates)
    evaluator = provider.evaluator(measures, qrels_t)
    ours_perq = evaluator.values(run_t)
    aggregates = evaluator.aggregate(ours_perq)
    qrels_d, run_d = _as_dicts(qrels_t), _as_dicts(run_t)
    qrels_d = {q: qrels_d[q] for q in evaluator.index.qids}  # the engine's query order
    oracle = _Oracle(trec_eval)
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
    head = f"{'measure':<28}{'ours':>{width}}{'trec_eval':>{width}}{'max |diff|':>13}  verdict"
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
        lines.append(f"{r.measure:<28}{ours:>{width}}{te:>{width}}{md:>13}  {r.verdict}")
    return "\n".join(lines)
