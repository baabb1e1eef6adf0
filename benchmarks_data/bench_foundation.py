"""Foundation benchmark: a run of 1,000 queries x 1,000 docs given as DataFrames.

Times ``ir_measures.calc_aggregate`` of the six plugin measures (served by ndcg_plugin) against
pytrec_eval's ``RelevanceEvaluator.evaluate`` alone on the same data (building its dicts is not
counted), alternating, and reports medians. It first checks that both agree. A script, not a
timed test:

    python benchmarks_data/bench_foundation.py [--queries 1000] [--docs 1000] [--repeat 5]
"""
from __future__ import annotations

import argparse
import statistics
import time

import ir_measures
import numpy as np
import pandas as pd
import pytrec_eval

import ndcg_plugin  # noqa: F401
from ndcg_plugin import HitRate, HitRate_item, MRR_ignore, MRR_zero, NDCG_exp, NDCG_lin


def make(nq: int, nd: int, seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Random run (scores uniform, docs 'q<i>-<j>') and qrels judging ~5% of it, grades 0..3."""
    rng = np.random.default_rng(seed)
    qids = np.repeat(np.array([f"q{i}" for i in range(nq)], dtype=object), nd)
    docs = np.array([f"d{j}" for j in range(nd)], dtype=object)
    docs = qids + "-" + np.tile(docs, nq)
    run = pd.DataFrame({"query_id": qids, "doc_id": docs, "score": rng.random(nq * nd)})
    judged = rng.random(nq * nd) < 0.05
    qrels = pd.DataFrame({"query_id": qids[judged], "doc_id": docs[judged],
                          "relevance": rng.integers(0, 4, size=int(judged.sum()))})
    return qrels, run


def as_dict(df: pd.DataFrame, col: str) -> dict:
    out: dict = {}
    for q, d, v in zip(df["query_id"], df["doc_id"], df[col].tolist(), strict=True):
        out.setdefault(q, {})[d] = v
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--queries", type=int, default=1000)
    ap.add_argument("--docs", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    qrels, run = make(args.queries, args.docs)
    measures = [m @ 10 for m in (NDCG_lin, NDCG_exp, HitRate, HitRate_item, MRR_zero, MRR_ignore)]
    qd, rd = as_dict(qrels, "relevance"), as_dict(run, "score")
    evaluator = pytrec_eval.RelevanceEvaluator(qd, {"ndcg_cut.10", "recip_rank", "success.10", "P.10"})

    ours = ir_measures.calc_aggregate(measures, qrels, run)
    ref = evaluator.evaluate(rd)
    lin = sum(v["ndcg_cut_10"] for v in ref.values()) / len(qd)
    hit = sum(v["success_10"] for v in ref.values()) / len(qd)
    if abs(ours[NDCG_lin @ 10] - lin) > 1e-9 or abs(ours[HitRate @ 10] - hit) > 1e-9:
        raise SystemExit(f"disagreement: NDCG_lin@10 {ours[NDCG_lin @ 10]} vs {lin}, HitRate@10 {ours[HitRate @ 10]} "
                         f"vs {hit}; no time reported")

    t_ours, t_theirs = [], []
    for _ in range(args.repeat):
        t = time.perf_counter()
        ir_measures.calc_aggregate(measures, qrels, run)
        t_ours.append(time.perf_counter() - t)
        t = time.perf_counter()
        evaluator.evaluate(rd)
        t_theirs.append(time.perf_counter() - t)
    a, b = statistics.median(t_ours), statistics.median(t_theirs)
    print(f"{args.queries} queries x {args.docs} docs, median of {args.repeat}, numbers agree to 1e-9")
    print(f"ndcg_plugin calc_aggregate, 6 measures, DataFrames: {a:.3f} s")
    print(f"pytrec_eval evaluate() alone (4 measures):          {b:.3f} s")
    print(f"ratio ndcg_plugin / pytrec_eval:                    {a / b:.2f}")


if __name__ == "__main__":
    main()
