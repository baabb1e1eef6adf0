"""Explain one query's score, the way the NDCG tutorials lay it out.

For each rank: doc id, score, relevance, then what the measure's family adds (for NDCG: gain,
discount 1/log2(rank+1), contribution and cumulative DCG, the ideal ranking with its IDCG and
the ratio; for the others the relevant rows and the first relevant rank or the hits). Tied
scores are listed with the order trec_eval gives them. The rows and the value come from the
engine itself (:func:`ndcg_plugin.engine.block.explain_query`, built from what
:func:`ndcg_plugin.engine.block.compute` uses), so the explanation and the score cannot disagree; each
family lays out its own part (:meth:`ndcg_plugin.measures.Family.explain`).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import ir_measures
import numpy as np
import pandas as pd

from .. import reading
from ..engine import block as engine
from ..formatting import format_value
from ..measures import PluginMeasure, families, family, measures, spec_of
from ..routing import engine_computes


@dataclass
class Explanation:
    query_id: str
    measure: str
    value: float
    ranking: pd.DataFrame          # rank, doc_id, score, relevance, and the family's columns
    ideal: pd.DataFrame | None     # the ideal ranking, where the family has one (NDCG)
    ties: list[str] = field(default_factory=list)
    summary: list[str] = field(default_factory=list)
    retrieved: int = 0             # the run's documents for the query

    def text(self, places: int = 4) -> str:
        out = [f"query {self.query_id}: {self.measure}"]
        fmt = {c: (lambda v, p=places: format_value(v, p)) for c in ("score", "gain", "mean_gain", "discount",
                                                                     "contribution", "dcg", "idcg")}
        if self.retrieved:
            out.append(self.ranking.to_string(index=False, formatters=fmt))
        else:
            out.append(f"no documents retrieved for query {self.query_id} (the run has no line for it)")
        if self.ideal is not None:
            out += ["", "ideal ranking:", self.ideal.to_string(index=False, formatters=fmt)]
        if self.ties:
            out += ["", *self.ties]
        out += ["", *self.summary]
        return "\n".join(out)


def explain(qrels: Any, run: Any, query_id: str, measure: Any, places: int = 4) -> Explanation:
    """Explain ``measure`` (a measure the engine computes: the plugin's, or a built-in a family
    serves, such as AP or P@10; or its string) for one query; the summary lines print ``places``
    decimals (-1: every digit)."""
    if isinstance(measure, str):
        measure = ir_measures.parse_measure(measure)
    if not isinstance(measure, PluginMeasure) and not engine_computes(measure):
        names = ", ".join([m.NAME for m in measures()] + [b for f in families() for b in f.builtins])
        raise ValueError(f"explain covers the measures the engine computes ({names}); got {measure}")
    spec = spec_of(measure)
    owner = family(spec.family)
    qrels_t = reading.read(qrels, "qrels")
    run_t = reading.read(run, "run", queries=qrels_t["query_id"].array)
    if query_id not in set(qrels_t["query_id"]):
        raise ValueError(f"query {query_id!r} is not in the qrels")
    index = engine.QrelsIndex(qrels_t[qrels_t["query_id"] == query_id].reset_index(drop=True))
    t = engine.explain_query(index, run_t, query_id, spec)
    labels = [str(r) if j else "unjudged" for r, j in zip(t.relevance.tolist(), t.judged, strict=True)]
    table = pd.DataFrame({"rank": np.arange(1, len(t.doc_id) + 1), "doc_id": pd.Series(t.doc_id, dtype=object),
                          "score": t.score, "relevance": labels})
    shown = table[t.top].assign(rank=t.rank[t.top])
    num = partial(format_value, places=places)
    shown, ideal, summary = owner.explain(t, shown, measure, num)
    if spec.ties == "average" and not any("ties='average'" in line for line in summary):
        summary.append("ties='average': the lines above follow the order listed; the value is the expected one over "
                       "every order of the tied documents (ndcg_plugin.measures.ties)")
    summary.append(f"{measure} = {num(t.value)}" if not math.isnan(t.value) else f"{measure}: no value")
    return Explanation(query_id, str(measure), t.value, shown.reset_index(drop=True), ideal,
                       _ties(t.score, t.doc_id, spec.cutoff, spec.ties), summary, len(t.doc_id))


def _ties(scores: np.ndarray, docs: list, k: int | None, ties: str = "trec") -> list[str]:
    how = ("listed by doc id descending; the value averages over every order of them: ties='average'"
           if ties == "average" else "ordered by doc id descending, as trec_eval")
    out = []
    n = len(scores) if k is None else min(len(scores), k + 1)
    start = 0
    while start < n:
        end = start
        while end + 1 < len(scores) and scores[end + 1] == scores[start]:
            end += 1
        if end > start:
            out.append(f"tie: score {scores[start]:g} at ranks {start + 1}-{end + 1}: {', '.join(docs[start:end + 1])} "
                       f"({how})")
        start = end + 1
    return out
