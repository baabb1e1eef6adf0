"""The order of a long run of tied scores: the C loop (``sort_ties``, a merge sort) against its
numpy twin (a stable lexsort), on one query whose rows all have the same score. A script, not a
timed test (tests/test_speedups_ranks.py checks that both give the same order):

    python benchmarks_data/bench_ties.py [--rows 100000] [--repeat 5]

Doc ids ``d000000``, ``d000001``... in ascending order, which trec_eval's order (doc id
descending) reverses: the worst case of the insertion sort the C loop used before (20.7 s for
10^5 rows on the benchmark machine, against 15 ms now). Prints one line per engine: the median
time of --repeat calls of ``ranking.ranked.trec_eval_order``, after checking that the two agree.
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import pyarrow as pa

from ndcg_plugin.arrays import speedups
from ndcg_plugin.ranking.ranked import trec_eval_order


def timed(fn, repeat: int) -> tuple[float, np.ndarray]:
    times, out = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    n = args.rows
    docs = pa.array([f"d{i:06d}" for i in range(n)], type=pa.large_string())
    group, score = np.zeros(n, dtype=np.int32), np.full(n, 0.5)
    if not speedups.available():
        raise SystemExit("the C loops are not built (python setup.py build_ext --inplace)")
    c_time, c_order = timed(lambda: trec_eval_order(group, score, docs), args.repeat)
    with speedups.disabled():
        np_time, np_order = timed(lambda: trec_eval_order(group, score, docs), args.repeat)
    if c_order.tolist() != np_order.tolist():
        raise SystemExit("the C tie order differs from numpy's: no time reported")
    print(f"ties\tC\t{n} rows\t{c_time * 1000:.1f} ms")
    print(f"ties\tnumpy\t{n} rows\t{np_time * 1000:.1f} ms")


if __name__ == "__main__":
    main()
