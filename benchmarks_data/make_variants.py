"""Derive variant runs from a TREC run, for the paper-table tutorial (docs/tutorial.md):

    python benchmarks_data/make_variants.py RUN OUT_DIR

writes OUT_DIR/reversed20.trec (each query's top 20 in reverse order, a worse "reranker") and
OUT_DIR/top100.trec (each query cut to its first 100 docs). The run is not modified.
"""
from __future__ import annotations

import sys
from pathlib import Path


def main(run: str, out: str) -> None:
    rows = [line.split() for line in Path(run).read_text().splitlines() if line.strip()]
    target = Path(out)
    target.mkdir(parents=True, exist_ok=True)
    with open(target / "reversed20.trec", "w") as f:
        for q, _, d, rank, score, _ in rows:
            s = -float(score) if int(rank) <= 20 else float(score) - 1000.0
            f.write(f"{q} Q0 {d} {rank} {s:.6f} reversed20\n")
    with open(target / "top100.trec", "w") as f:
        for q, _, d, rank, score, _ in rows:
            if int(rank) <= 100:
                f.write(f"{q} Q0 {d} {rank} {score} top100\n")


if __name__ == "__main__":
    main(*sys.argv[1:3])
