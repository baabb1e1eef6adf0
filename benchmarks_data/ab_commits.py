"""A/B of ``ndcg-plugin eval`` at two checkouts on the same files: alternating runs, median wall
time of each, and whether their outputs at ``-p -1`` are equal (a regression check between
commits, e.g. the MS MARCO shape against the commit before a refactoring).

    git worktree add /tmp/old 76d356c
    python benchmarks_data/make_workload.py
    python benchmarks_data/ab_commits.py /tmp/old . QRELS RUN --repeat 11

Each checkout runs as ``python -m ndcg_plugin`` with ``PYTHONPATH`` pointing at it, in this
interpreter's environment (the dependencies must suit both).
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

SEVEN = ["NDCG_lin@10", "NDCG_exp@10", "HitRate@10", "HitRate_item@10", "MRR_zero@10", "MRR_ignore@10", "nDCG@10"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("old", help="the checkout to compare against (a directory holding ndcg_plugin/)")
    ap.add_argument("new", help="the checkout under test")
    ap.add_argument("qrels")
    ap.add_argument("run")
    ap.add_argument("--repeat", type=int, default=11)
    ap.add_argument("--measures", nargs="+", default=SEVEN)
    args = ap.parse_args()
    sides = {"old": os.path.abspath(args.old), "new": os.path.abspath(args.new)}
    walls: dict = {k: [] for k in sides}
    outs: dict = {}
    for _ in range(args.repeat):
        for name, path in sides.items():
            cmd = [sys.executable, "-m", "ndcg_plugin", "eval", os.path.abspath(args.qrels), os.path.abspath(args.run),
                   *args.measures, "-p", "-1"]
            t = time.perf_counter()
            done = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": path},
                                  cwd="/")
            walls[name].append(time.perf_counter() - t)
            if done.returncode != 0:
                print(f"{name}: exit {done.returncode}: {done.stderr.strip()}", file=sys.stderr)
                return 1
            outs[name] = done.stdout
    for name, path in sides.items():
        print(f"{name} ({path}): median {statistics.median(walls[name]):.3f} s of {args.repeat}")
    print(f"new / old: {statistics.median(walls['new']) / statistics.median(walls['old']):.3f}")
    print("outputs equal" if outs["old"] == outs["new"] else f"outputs differ:\n{outs['old']}---\n{outs['new']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
