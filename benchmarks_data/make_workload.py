"""Generate an MS MARCO dev-small shaped workload: qrels and a TREC run of N queries x D docs.

    python benchmarks_data/make_workload.py                      # 6,980 x 1,000 (~7M lines)
    python benchmarks_data/make_workload.py --queries 200        # a CI-sized smoke workload
    python benchmarks_data/make_workload.py --scale 10           # 69,800 x 1,000 (~70M lines)

Qrels come from the real MS MARCO dev-small qrels when ../shared/data is present (query and
passage ids as published; beyond 6,980 queries the real ones are repeated with a suffix),
and are synthetic otherwise. Each query's run has D distinct passage ids, scores descending
with some exact ties (as BM25 produces), and the query's first relevant passage at a random
rank for 70% of the queries (a third of those in the top 10). Files go to
benchmarks_data/cache/ (not committed); existing files are reused unless --force.
"""
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
DEFAULT_SHARED = HERE.parent.parent / "shared" / "data" / "msmarco-passage" / "qrels.dev-small.txt"


def real_or_synthetic_qrels(n: int, shared: Path, rng: np.random.Generator) -> pd.DataFrame:
    if shared.exists():
        base = pd.read_csv(shared, sep=r"\s+", header=None, names=["query_id", "it", "doc_id", "relevance"],
                           dtype=str)[["query_id", "doc_id", "relevance"]]
        qids = base["query_id"].drop_duplicates().to_numpy()
        parts = []
        for rep in range(-(-n // len(qids))):
            take = qids[: n - rep * len(qids)]
            part = base[base["query_id"].isin(set(take))].copy()
            if rep:
                part["query_id"] = part["query_id"] + f"_r{rep}"
            parts.append(part)
        return pd.concat(parts, ignore_index=True)
    qids = np.arange(n).astype(str)
    extra = rng.random(n) < 0.06  # dev small has ~1.07 relevant passages per query
    q = np.concatenate([qids, qids[extra]])
    docs = rng.integers(0, 8_841_823, size=len(q)).astype(str)
    return pd.DataFrame({"query_id": q, "doc_id": docs, "relevance": "1"}).drop_duplicates(["query_id", "doc_id"])


def make_run(qrels: pd.DataFrame, depth: int, rng: np.random.Generator) -> pd.DataFrame:
    qids = qrels["query_id"].drop_duplicates().to_numpy()
    n = len(qids)
    first_rel = qrels.drop_duplicates("query_id").set_index("query_id")["doc_id"].reindex(qids).to_numpy()
    # distinct ids within a query: the last three digits are a permutation of the positions
    blocks = rng.integers(0, 8_841, size=(n, depth))
    pos = np.argsort(rng.random((n, depth)), axis=1)
    pids = (blocks * 1000 + pos).astype(np.int64).astype(str).astype(object)
    hit = rng.random(n) < 0.7
    top = rng.random(n) < 1 / 3
    ranks = np.where(top, rng.integers(0, 10, size=n), rng.integers(0, depth, size=n))
    rows = np.flatnonzero(hit)
    pids[rows, ranks[rows]] = first_rel[rows]
    scores = 30.0 - np.sort(rng.gamma(2.0, 2.0, size=(n, depth)), axis=1)
    scores = np.round(scores, 3)  # rounding makes exact ties, as real BM25 runs have
    return pd.DataFrame({
        "query_id": np.repeat(qids, depth), "q0": "Q0", "doc_id": pids.ravel(),
        "rank": np.tile(np.arange(1, depth + 1), n), "score": scores.ravel(), "tag": "synthetic",
    })


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--queries", type=int, default=6980)
    ap.add_argument("--scale", type=int, default=1, help="multiply the number of queries")
    ap.add_argument("--docs", type=int, default=1000)
    ap.add_argument("--shared-qrels", type=Path, default=DEFAULT_SHARED)
    ap.add_argument("--out", type=Path, default=HERE / "cache")
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--force", action="store_true")
    args = ap.parse_args()
    n = args.queries * args.scale
    out = args.out / f"msmarco-shaped-{n}x{args.docs}"
    qrels_path, run_path = out / "qrels.txt", out / "run.trec"
    if qrels_path.exists() and run_path.exists() and not args.force:
        print(f"{qrels_path}\n{run_path}\n(reused; --force regenerates)")
        return
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(args.seed)
    qrels = real_or_synthetic_qrels(n, args.shared_qrels, rng)
    run = make_run(qrels, args.docs, rng)
    run = run.drop_duplicates(["query_id", "doc_id"])  # a planted relevant id may repeat a generated one
    qrels.assign(it="0")[["query_id", "it", "doc_id", "relevance"]].to_csv(qrels_path, sep=" ", header=False,
                                                                           index=False)
    run.to_csv(run_path, sep=" ", header=False, index=False, float_format="%.3f")
    source = "real dev-small qrels" if args.shared_qrels.exists() else "synthetic qrels"
    print(f"{qrels_path}\n{run_path}\n({n} queries x {args.docs} docs, {len(run):,} run lines, {source})")


if __name__ == "__main__":
    main()
