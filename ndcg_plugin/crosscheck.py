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
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import ir_measures

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


def counterpart(measure, qrels: dict, run: dict, oracle: _Oracle) -> tuple[dict | None, str]:
    """Per-query trec_eval values for a plugin measure over every qrels query, or None and why
    not. For MRR_ignore the dict holds NaN where the query has no value; for HitRate_item it
    holds (hits, returned) pairs."""
    qids = list(qrels)
    k = measure["cutoff"] if "cutoff" in measure.params else None
    if measure.FAMILY == "ndcg":
        gains = measure.params.get("gains", {})
        if any(g != int(g) or g < 0 for g in gains.values()):
            return None, "no counterpart: trec_eval's ndcg_cut takes integer qrels (non-integer or negative gains)"
        def gain(r):
            if r < 0:
                return r  # trec_eval: unjudged, gain 0
            if r in gains:
                return int(gains[r])
            return r if measure.VARIANT == "linear" else 2 ** r - 1
        mapped = {q: {d: gain(r) for d, r in docs.items()} for q, docs in qrels.items()}
        if measure["ideal"] == "run":
            mapped = {q: {d: r for d, r in docs.items() if d in run.get(q, {})} for q, docs in mapped.items()}
        name = "ndcg" if k is None else f"ndcg_cut.{k}"
        if measure["judged_only"]:  # trec_eval -J, written out: pytrec_eval's flag can segfault
            run = {q: {d: s for d, s in docs.items() if qrels.get(q, {}).get(d, -1) >= 0} for q, docs in run.items()}
        res = oracle(mapped, run, name)
        return {q: res.get(q, 0.0) for q in qids}, f"{name} (-c{' -J' if measure['judged_only'] else ''})"
    rel = measure["rel"]
    if measure.FAMILY == "hitrate" and measure.VARIANT == "query":
        res = oracle(qrels, run, f"success.{k}", rel=rel)
        return {q: res.get(q, 0.0) for q in qids}, f"success.{k} -l{rel} -c"
    cut = cut_run(run, k)
    if measure.FAMILY == "mrr":
        res = oracle(qrels, cut, "recip_rank", rel=rel)
        if measure.VARIANT == "zero":
            return {q: res.get(q, 0.0) for q in qids}, f"recip_rank -M{k} -l{rel} -c"
        return ({q: res[q] if res.get(q, 0.0) > 0 else math.nan for q in qids},
                f"recip_rank -M{k} -l{rel}, mean over queries > 0")
    p = oracle(qrels, cut, f"P.{k}", rel=rel)
    n = oracle(qrels, cut, "num_ret", rel=rel)
    return ({q: (round(p.get(q, 0.0) * k), min(k, int(n.get(q, 0)))) for q in qids},
            f"P.{k} x {k} / num_ret -M{k} -l{rel}, micro-averaged")


def _aggregate(measure, per_query: dict) -> float:
    vals = list(per_query.values())
    if measure.NAME == "HitRate_item":
        hits = sum(h for h, _ in vals)
        ret = sum(r for _, r in vals)
        return hits / ret if ret else 0.0
    if measure.NAME == "MRR_ignore":
        vals = [v for v in vals if not math.isnan(v)]
        return sum(vals) / len(vals) if vals else math.nan
    return sum(vals) / len(vals) if vals else math.nan


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
    qids = list(evaluator.index.qids)
    qrels_d, run_d = _as_dicts(qrels_t), _as_dicts(run_t)
    qrels_d = {q: qrels_d[q] for q in qids}
    oracle = _Oracle(trec_eval)
    tol = TOLERANCE_BINARY if trec_eval else TOLERANCE_PYTREC
    rows = []
    for m in measures:
        theirs, how = counterpart(m, qrels_d, run_d, oracle)
        ours = aggregates[m]
        if theirs is None:
            rows.append(Row(str(m), ours, None, None, how))
            continue
        vals = ours_perq[m]
        max_diff = 0.0
        for i, q in enumerate(qids):
            if m.NAME == "HitRate_item":
                h, r = theirs[q]
                a, b = (vals.hits[i], vals.returned[i]), (h, r)
                d = 0.0 if a == b else 1.0
            else:
                a, b = vals.values[i], theirs[q]
                d = 0.0 if (math.isnan(a) and math.isnan(b)) else (math.inf if math.isnan(a) or math.isnan(b)
                                                                    else abs(a - b))
            max_diff = max(max_diff, d)
        agg = _aggregate(m, theirs)
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
