"""Explain one query's score, the way the NDCG tutorials lay it out.

For each rank: doc id, score, relevance, gain, discount 1/log2(rank+1), contribution and
cumulative DCG; the ideal ranking with its IDCG; the ratio. For MRR the first relevant rank,
for HitRate the hits. Tied scores are listed with the order trec_eval gives them. The ranking
comes from the engine itself (:func:`ndcg_plugin.engine.rank_query`), so the explanation and
the score cannot disagree.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import ir_measures
import numpy as np
import pandas as pd

from . import engine, reading
from .formatting import format_value
from .measures import PluginMeasure


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


def explain(qrels: Any, run: Any, query_id: str, measure: Any) -> Explanation:
    """Explain ``measure`` (a plugin measure, or its string) for one query."""
    if isinstance(measure, str):
        measure = ir_measures.parse_measure(measure)
    if not isinstance(measure, PluginMeasure):
        raise ValueError(f"explain covers the plugin's measures (NDCG_lin, NDCG_exp, HitRate, HitRate_item, "
                         f"MRR_zero, MRR_ignore); got {measure}")
    spec = engine.spec_of(measure)
    qrels_t = reading.read(qrels, "qrels")
    run_t = reading.read(run, "run")
    if query_id not in set(qrels_t["query_id"]):
        raise ValueError(f"query {query_id!r} is not in the qrels")
    q_qrels = qrels_t[qrels_t["query_id"] == query_id].reset_index(drop=True)
    q_run = run_t[run_t["query_id"] == query_id].reset_index(drop=True)
    index = engine.QrelsIndex(q_qrels)
    values = engine.compute(index, q_run, [spec])[spec]
    value = float(values.values[0])
    k = spec.cutoff
    order = engine.query_order(q_run)
    ranked = q_run.iloc[order].reset_index(drop=True)
    judged = dict(zip(q_qrels["doc_id"], q_qrels["relevance"].tolist(), strict=True))
    rel = np.array([judged.get(d, 0) for d in ranked["doc_id"]], dtype=np.int64)
    is_judged = np.array([d in judged for d in ranked["doc_id"]])
    table = pd.DataFrame({"rank": np.arange(1, len(ranked) + 1), "doc_id": ranked["doc_id"].astype(object),
                          "score": ranked["score"].to_numpy(),
                          "relevance": [str(r) if j else "unjudged" for r, j in zip(rel, is_judged, strict=True)]})
    ties = _ties(ranked, k)
    shown = table if k is None else table.head(k)
    ideal = None
    summary = []
    if spec.family == "ndcg":
        if spec.judged_only:
            keep = is_judged & (rel >= 0)
            shown = table[keep].head(k) if k else table[keep]
            shown = shown.assign(rank=np.arange(1, len(shown) + 1))
            rel_shown = rel[keep][: len(shown)]
        else:
            rel_shown = rel[: len(shown)]
        gain = np.where([r != "unjudged" for r in shown["relevance"]], engine.gain_of(rel_shown, spec), 0.0)
        discount = 1.0 / np.log2(np.arange(1, len(shown) + 1) + 1.0)
        shown = shown.assign(gain=gain, discount=discount, contribution=gain * discount,
                             dcg=np.cumsum(gain * discount))
        pool = rel[is_judged] if spec.ideal == "run" else q_qrels["relevance"].to_numpy()
        ideal_gain = np.sort(engine.gain_of(np.asarray(pool), spec))[::-1]
        ideal_gain = ideal_gain[ideal_gain > 0][: k] if k else ideal_gain[ideal_gain > 0]
        ideal_disc = 1.0 / np.log2(np.arange(1, len(ideal_gain) + 1) + 1.0)
        ideal = pd.DataFrame({"rank": np.arange(1, len(ideal_gain) + 1), "gain": ideal_gain,
                              "contribution": ideal_gain * ideal_disc, "idcg": np.cumsum(ideal_gain * ideal_disc)})
        dcg = float(shown["contribution"].sum())
        idcg = float(ideal["contribution"].sum())
        at = f"@{k}" if k else ""
        summary.append(f"DCG{at} = {dcg:.4f}, IDCG{at} = {idcg:.4f}, "
                       f"NDCG{at} = {'DCG / IDCG = ' + format(dcg / idcg, '.4f') if idcg > 0 else '0 (IDCG = 0)'}")
    else:
        relevant = is_judged[: len(shown)] & (rel[: len(shown)] >= spec.rel)
        shown = shown.assign(relevant=np.where(relevant, "yes", ""))
        if spec.family == "mrr":
            first = int(np.flatnonzero(relevant)[0]) + 1 if relevant.any() else None
            miss = "0 (MRR_zero)" if spec.variant == "zero" else "no value (MRR_ignore leaves the query out)"
            if first:
                summary.append(f"first relevant (rel >= {spec.rel}) rank within {k}: {first}; "
                               f"RR = 1/{first} = {1 / first:.4f}")
            else:
                summary.append(f"no relevant doc (rel >= {spec.rel}) in the top {k}: {miss}")
        else:
            hits = int(relevant.sum())
            if spec.variant == "query":
                summary.append(f"hits in the top {k}: {hits}; HitRate = {1 if hits else 0}")
            else:
                summary.append(f"hits in the top {k}: {hits} of {len(shown)} returned; HitRate_item = "
                               f"{hits}/{len(shown)} = {hits / len(shown) if len(shown) else 0:.4f}")
    summary.append(f"{measure} = {value:.4f}" if not math.isnan(value) else f"{measure}: no value")
    return Explanation(query_id, str(measure), value, shown.reset_index(drop=True), ideal, ties, summary)


def _ties(ranked: pd.DataFrame, k: int | None) -> list[str]:
    out = []
    scores = ranked["score"].to_numpy()
    n = len(scores) if k is None else min(len(scores), k + 1)
    start = 0
    while start < n:
        end = start
        while end + 1 < len(scores) and scores[end + 1] == scores[start]:
            end += 1
        if end > start:
            docs = ", ".join(ranked["doc_id"].iloc[start:end + 1].astype(str))
            out.append(f"tie: score {scores[start]:g} at ranks {start + 1}-{end + 1}: {docs} "
                       f"(ordered by doc id descending, as trec_eval)")
        start = end + 1
    return out
