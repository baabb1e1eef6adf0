"""Explain one query's score, the way the NDCG tutorials lay it out.

For each rank: doc id, score, relevance, gain, discount 1/log2(rank+1), contribution and
cumulative DCG; the ideal ranking with its IDCG; the ratio. For MRR the first relevant rank,
for HitRate the hits. Tied scores are listed with the order trec_eval gives them. Every number
comes from the engine itself (:func:`ndcg_plugin.engine.explain_query`, built from what
:func:`ndcg_plugin.engine.compute` uses), so the explanation and the score cannot disagree;
this module only lays them out.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import ir_measures
import numpy as np
import pandas as pd

from . import engine, reading
from .formatting import format_value
from .measures import ALL, PluginMeasure
from .specs import spec_of


@dataclass
class Explanation:
    query_id: str
    measure: str
    value: float
    ranking: pd.DataFrame          # rank, doc_id, score, relevance, gain, discount, contribution, dcg
    ideal: pd.DataFrame | None     # rank, relevance, gain, contribution, idcg (NDCG only)
    ties: list[str] = field(default_factory=list)
    summary: list[str] = field(default_factory=list)

    def text(self, places: int = 4) -> str:
        out = [f"query {self.query_id}: {self.measure}"]
        fmt = {c: (lambda v, p=places: format_value(v, p)) for c in ("score", "gain", "discount", "contribution", "dcg",
                                                             "idcg")}
        out.append(self.ranking.to_string(index=False, formatters=fmt))
        if self.ideal is not None:
            out += ["", "ideal ranking:", self.ideal.to_string(index=False, formatters=fmt)]
        if self.ties:
            out += ["", *self.ties]
        out += ["", *self.summary]
        return "\n".join(out)


def explain(qrels: Any, run: Any, query_id: str, measure: Any, places: int = 4) -> Explanation:
    """Explain ``measure`` (a plugin measure, or its string) for one query; the summary lines
    print ``places`` decimals (-1: every digit)."""
    if isinstance(measure, str):
        measure = ir_measures.parse_measure(measure)
    if not isinstance(measure, PluginMeasure):
        raise ValueError(f"explain covers the plugin's measures ({', '.join(m.NAME for m in ALL)}); got {measure}")
    spec = spec_of(measure)
    qrels_t = reading.read(qrels, "qrels")
    run_t = reading.read(run, "run")
    if query_id not in set(qrels_t["query_id"]):
        raise ValueError(f"query {query_id!r} is not in the qrels")
    index = engine.QrelsIndex(qrels_t[qrels_t["query_id"] == query_id].reset_index(drop=True))
    t = engine.explain_query(index, run_t, query_id, spec)
    labels = [str(r) if j else "unjudged" for r, j in zip(t.relevance.tolist(), t.judged, strict=True)]
    table = pd.DataFrame({"rank": np.arange(1, len(t.doc_id) + 1), "doc_id": pd.Series(t.doc_id, dtype=object),
                          "score": t.score, "relevance": labels})
    shown = table[t.top].assign(rank=t.rank[t.top])
    lay_out = _LAYOUTS.get(spec.family, _relevant_rows)
    num = partial(format_value, places=places)
    shown, ideal, summary = lay_out(t, shown, measure, num)
    summary.append(f"{measure} = {num(t.value)}" if not math.isnan(t.value) else f"{measure}: no value")
    return Explanation(query_id, str(measure), t.value, shown.reset_index(drop=True), ideal,
                       _ties(t.score, t.doc_id, spec.cutoff), summary)


def _ndcg(t: engine.QueryTrace, shown: pd.DataFrame, measure, num) -> tuple:
    """The rows' gains, discounts and contributions; the ideal ranking; DCG / IDCG."""
    contribution = t.contribution[t.top]
    shown = shown.assign(gain=t.gain[t.top], discount=t.discount[t.top], contribution=contribution,
                         dcg=np.cumsum(contribution))
    ideal = pd.DataFrame({"rank": np.arange(1, len(t.ideal_gain) + 1), "gain": t.ideal_gain,
                          "contribution": t.ideal_contribution, "idcg": np.cumsum(t.ideal_contribution)})
    at = f"@{t.spec.cutoff}" if t.spec.cutoff else ""
    ratio = "DCG / IDCG = " + num(t.dcg / t.idcg) if t.idcg > 0 else "0 (IDCG = 0)"
    return shown, ideal, [f"DCG{at} = {num(t.dcg)}, IDCG{at} = {num(t.idcg)}, NDCG{at} = {ratio}"]


def _relevant_rows(t: engine.QueryTrace, shown: pd.DataFrame, measure, num=None) -> tuple:
    """The rows marked relevant (label >= rel) or not; no summary line of its own."""
    return shown.assign(relevant=np.where(t.relevant[t.top], "yes", "")), None, []


def _mrr(t: engine.QueryTrace, shown: pd.DataFrame, measure, num) -> tuple:
    """The first relevant rank within the cutoff, or what a miss gives (the measure's DEFAULT)."""
    shown, _, summary = _relevant_rows(t, shown, measure, num)
    k, rel = t.spec.cutoff, t.spec.rel
    ranks = t.rank[t.top & t.relevant]
    if len(ranks):
        first = int(ranks[0])
        summary.append(f"first relevant (rel >= {rel}) rank within {k}: {first}; RR = 1/{first} = {num(1 / first)}")
    else:
        miss = (f"no value ({measure.NAME} leaves the query out)" if math.isnan(measure.DEFAULT)
                else f"{measure.DEFAULT:g} ({measure.NAME})")
        summary.append(f"no relevant doc (rel >= {rel}) in the top {k}: {miss}")
    return shown, None, summary


def _hitrate(t: engine.QueryTrace, shown: pd.DataFrame, measure, num) -> tuple:
    """The hits within the cutoff; for an item-level measure, over the docs returned there."""
    shown, _, summary = _relevant_rows(t, shown, measure, num)
    k, hits, n = t.spec.cutoff, int((t.top & t.relevant).sum()), len(shown)
    if t.hits is None:
        summary.append(f"hits in the top {k}: {hits}; {measure.NAME} = {1 if hits else 0}")
    else:
        summary.append(f"hits in the top {k}: {hits} of {n} returned; {measure.NAME} = "
                       f"{hits}/{n} = {num(hits / n if n else 0)}")
    return shown, None, summary


# how each family is laid out; a family without an entry gets its rows marked relevant or not
_LAYOUTS = {"ndcg": _ndcg, "mrr": _mrr, "hitrate": _hitrate}


def _ties(scores: np.ndarray, docs: list, k: int | None) -> list[str]:
    out = []
    n = len(scores) if k is None else min(len(scores), k + 1)
    start = 0
    while start < n:
        end = start
        while end + 1 < len(scores) and scores[end + 1] == scores[start]:
            end += 1
        if end > start:
            out.append(f"tie: score {scores[start]:g} at ranks {start + 1}-{end + 1}: {', '.join(docs[start:end + 1])} "
                       f"(ordered by doc id descending, as trec_eval)")
        start = end + 1
    return out
