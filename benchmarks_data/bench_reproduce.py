"""A reproduction report on 4 MS MARCO dev-sized runs, side by side with repro_eval 0.5.0.

    python benchmarks_data/bench_reproduce.py                      # 6,980 x 1,000 (repro_eval: ~10 min)
    python benchmarks_data/bench_reproduce.py --queries 200        # a smoke-sized run
    python benchmarks_data/bench_reproduce.py --skip-repro-eval    # ndcg-plugin only

The original baseline is make_workload.py's run (6,980 queries x 1,000 docs, real dev-small
qrels); the three other runs are derived from it here and cached beside it: the original
advanced run (relevant docs boosted, score noise), and the two reproductions (30% of each
list's docs replaced by unseen ids, score noise). Every file is sorted as trec_eval orders its
docs (score descending, doc id descending), so repro_eval's file order is trec_eval's, and
every reproduced list is as long as its original (repro_eval's KTU refuses other lists).

Timed, each in its own process (wall time, peak RSS): ``ndcg-plugin eval`` on each of the 4 runs
(the reference: a report should take less than twice their sum), ``ndcg-plugin reproduce runs``
on the 4 runs, and repro_eval's RpdEvaluator (load, trim, evaluate, ktu, rbo, rmse, er, dri,
ttest). Before a time is printed, the numbers both compute (KTU and RBO at 1,000, RMSE, ER,
DeltaRI and the paired p-value of nDCG@10 and RR) are compared; a disagreement exits with 1.
It is a script, not a timed test: the target is printed, not enforced.
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
MEASURES = ["nDCG@10", "RR", "RR@10"]
SHARED = ["nDCG@10", "RR"]  # the measures repro_eval computes too (it has no RR@10)
REPRO_EVAL = r"""
import json, sys, time, warnings
warnings.filterwarnings("ignore")
from repro_eval.Evaluator import RpdEvaluator
q, ob, oa, rb, ra = sys.argv[1:6]
out, t0 = {"time": {}}, time.perf_counter()
def stage(name, fn):
    t = time.perf_counter(); value = fn(); out["time"][name] = time.perf_counter() - t; return value
rpd = stage("load", lambda: RpdEvaluator(qrels_orig_path=q, run_b_orig_path=ob, run_a_orig_path=oa,
                                          run_b_rep_path=rb, run_a_rep_path=ra))
stage("trim", rpd.trim)
stage("evaluate", rpd.evaluate)
out["KTU"] = stage("ktu", rpd.ktu)
out["RBO"] = stage("rbo", rpd.rbo)
measures = ["nDCG@10", "RR"]
out["RMSE"] = {r: {m: v[m] for m in measures} for r, v in stage("rmse", rpd.rmse).items()}
out["ER"] = {m: v for m, v in stage("er", rpd.er).items() if m in measures}
out["DeltaRI"] = {m: v for m, v in stage("dri", rpd.dri).items() if m in measures}
out["p_value"] = {r: {m: v[m] for m in measures} for r, v in stage("ttest", rpd.ttest).items()}
out["time"]["total"] = time.perf_counter() - t0
print(json.dumps(out))
"""


def derive(run: pd.DataFrame, relevant: set, rng: np.random.Generator, noise: float, replace: float,
           boost: float) -> pd.DataFrame:
    """A copy of ``run`` with score noise, relevant docs boosted, ``replace`` of the docs replaced
    by ids no run has (9,000,000 + rank * 1,000 + a random 0..999: distinct within a query), and
    each query's rows in trec_eval's order (rounded scores descending, doc id descending)."""
    out = run[["query_id", "doc_id", "score"]].copy()
    score = out["score"].to_numpy() + rng.normal(0, noise, len(out))
    if boost:
        hit = np.fromiter(((q, d) in relevant for q, d in zip(out["query_id"], out["doc_id"], strict=True)),
                          dtype=bool, count=len(out))
        score = score + boost * hit
    out["score"] = np.round(score, 3)  # rounded: exact ties, as BM25 runs have
    rank = out.groupby("query_id", sort=False).cumcount().to_numpy()
    swap = rng.random(len(out)) < replace
    new = (9_000_000 + rank * 1000 + rng.integers(0, 1000, len(out))).astype(str)
    out["doc_id"] = np.where(swap, new, out["doc_id"].to_numpy())
    out["first"] = pd.factorize(out["query_id"])[0]
    out = out.sort_values(["first", "score", "doc_id"], ascending=[True, False, False], kind="stable")
    return out.drop(columns="first")


def write_run(frame: pd.DataFrame, path: Path, tag: str) -> None:
    frame = frame.assign(q0="Q0", rank=frame.groupby("query_id", sort=False).cumcount() + 1, tag=tag)
    frame[["query_id", "q0", "doc_id", "rank", "score", "tag"]].to_csv(path, sep=" ", header=False, index=False,
                                                                       float_format="%.3f")


def make_runs(queries: int) -> tuple[str, list[str]]:
    out = subprocess.run([sys.executable, str(HERE / "make_workload.py"), "--queries", str(queries)],
                         capture_output=True, text=True, check=True).stdout.splitlines()
    qrels, base = out[0], out[1]
    folder = Path(base).parent / "reproduce"
    names = ["orig_b", "orig_a", "rep_b", "rep_a"]
    paths = [folder / f"{n}.trec" for n in names]
    if all(p.exists() for p in paths):
        return qrels, [str(p) for p in paths]
    folder.mkdir(exist_ok=True)
    run = pd.read_csv(base, sep=" ", header=None, names=["query_id", "q0", "doc_id", "rank", "score", "tag"],
                      dtype={"query_id": str, "doc_id": str})
    q = pd.read_csv(qrels, sep=" ", header=None, names=["query_id", "it", "doc_id", "rel"], dtype=str)
    relevant = set(zip(q["query_id"], q["doc_id"], strict=True))
    rng = np.random.default_rng(25)
    orig_b = derive(run, relevant, rng, 0.0, 0.0, 0.0)  # the workload's run, ties in trec_eval's order
    orig_a = derive(run, relevant, rng, 0.3, 0.0, 1.5)
    runs = [orig_b, orig_a, derive(orig_b, relevant, rng, 0.3, 0.3, 0.0), derive(orig_a, relevant, rng, 0.3, 0.3, 0.0)]
    for name, frame, path in zip(names, runs, paths, strict=True):
        write_run(frame, path, name)
    return qrels, [str(p) for p in paths]


def timed(cmd: list[str]) -> tuple[float, float, float, str]:
    """(wall seconds, CPU seconds (user + system), peak RSS in MB, stdout) of one process."""
    full = ["/usr/bin/time", "-f", "__rss__ %M %U %S", *cmd] if Path("/usr/bin/time").exists() else cmd
    t = time.perf_counter()
    proc = subprocess.run(full, capture_output=True, text=True, cwd=HERE)
    wall = time.perf_counter() - t
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}): {proc.stderr.strip()[-2000:]}")
    stats = [x.split()[1:] for x in proc.stderr.splitlines() if x.startswith("__rss__")]
    if not stats:
        return wall, float("nan"), float("nan"), proc.stdout
    return wall, float(stats[0][1]) + float(stats[0][2]), float(stats[0][0]) / 1024, proc.stdout


def ours(report: str) -> dict:
    """The numbers of ``reproduce runs -o jsonl`` that repro_eval computes too, in its layout."""
    out: dict = {"KTU": {}, "RBO": {}, "RMSE": {}, "p_value": {}, "ER": {}, "DeltaRI": {}}
    for line in report.splitlines():
        r = json.loads(line)
        stat = r["statistic"]
        if stat in ("KTU", "RBO") and r["cutoff"] == 1000:
            out[stat][r["run"]] = r["value"]
        elif stat in ("RMSE", "p_value") and r["measure"] in SHARED:
            out[stat].setdefault(r["run"], {})[r["measure"]] = r["value"]
        elif stat in ("ER", "DeltaRI") and r["measure"] in SHARED:
            out[stat][r["measure"]] = r["value"]
    return out


def disagreements(a: dict, b: dict, path: str = "") -> list[str]:
    if isinstance(a, dict):
        return [d for k in a for d in disagreements(a[k], b.get(k, float("nan")), f"{path} {k}")]
    return [] if abs(a - b) <= 1e-9 * max(1.0, abs(a)) else [f"{path}: repro_eval {a!r}, ndcg-plugin {b!r}"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--queries", type=int, default=6980)
    ap.add_argument("--skip-repro-eval", action="store_true", help="time ndcg-plugin only")
    ap.add_argument("--repeat", type=int, default=3, help="runs of eval and reproduce, alternating (default 3)")
    args = ap.parse_args()
    qrels, runs = make_runs(args.queries)
    cli = [sys.executable, "-m", "ndcg_plugin"]
    timed([*cli, "eval", qrels, runs[0], *MEASURES])  # warm-up: bytecode, page cache
    evals, reports = [], []
    for _ in range(args.repeat):  # alternating, so that both see the same load
        evals.append([timed([*cli, "eval", qrels, r, *MEASURES]) for r in runs])
        reports.append(timed([*cli, "reproduce", "runs", qrels, *runs, "-m", *MEASURES, "-o", "jsonl"]))
    eval_wall = statistics.median(sum(e[0] for e in rep) for rep in evals)
    eval_cpu = statistics.median(sum(e[1] for e in rep) for rep in evals)
    wall, cpu = statistics.median(r[0] for r in reports), statistics.median(r[1] for r in reports)
    eval_rss, rss, report = max(e[2] for rep in evals for e in rep), max(r[2] for r in reports), reports[0][3]
    print(f"workload: {args.queries} queries x 1,000 docs, 4 runs ({Path(runs[0]).parent}); measures {MEASURES}; "
          f"medians of {args.repeat}")
    print(f"ndcg-plugin eval, 4 runs one after the other  {eval_wall:8.2f} s   (CPU {eval_cpu:.2f} s, "
          f"max RSS {eval_rss:.0f} MB)")
    print(f"ndcg-plugin reproduce runs (4 runs)            {wall:8.2f} s   (CPU {cpu:.2f} s, max RSS {rss:.0f} MB)")
    print(f"ratio reproduce / eval of the 4 runs           {wall / eval_wall:8.2f}   (CPU {cpu / eval_cpu:.2f}; "
          f"target < 2)")
    if args.skip_repro_eval:
        return 0
    t, _, theirs_rss, out = timed([sys.executable, "-c", REPRO_EVAL, qrels, *runs])
    theirs = json.loads(out)
    stages = "  ".join(f"{k} {v:.1f}" for k, v in theirs.pop("time").items())
    bad = disagreements(theirs, ours(report))
    for line in bad:
        print(f"DISAGREES {line}")
    print(f"repro_eval 0.5.0 RpdEvaluator                  {t:8.2f} s   (max RSS {theirs_rss:.0f} MB; {stages})")
    print(f"ratio repro_eval / ndcg-plugin reproduce       {t / wall:8.1f}")
    print("numbers both compute agree (KTU, RBO at 1000; RMSE, ER, DeltaRI, p of nDCG@10 and RR)" if not bad else
          f"{len(bad)} numbers disagree")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
