"""Recommendation-log benchmark: many users, short lists, qrels as large as the run.

    python benchmarks_data/bench_logs.py --trec-eval /path/to/trec_eval      # 10^5 and 10^6 users
    python benchmarks_data/bench_logs.py --users 100000 --repeat 1 --no-write # quicker
    python benchmarks_data/bench_logs.py --users 10000000 --repeat 1 --only-plugin  # the 10^7 run

Files from make_logs.py (users u0000042 sorted by id, ~15 items each, ~4 held-out interactions
with labels 0-5). Timed side by side, alternating, median of --repeat: ``ndcg-plugin eval`` (six
measures at @10), reading both files with ``pyarrow.csv.read_csv`` (the floor: what reading them
costs), ``ir_measures.calc_aggregate`` through the plugin from DataFrames (the DataFrames built
beforehand, not timed), pytrec_eval (parsing into dicts and evaluate()), ranx, and trec_eval
(at 10^5 users only: it is quadratic in the number of queries). Every tool's numbers are checked
against ndcg-plugin's before a time is reported. Writes docs/performance-logs.md.
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

from bench import TIE_NOTE, compile_package, install_kind, machine, parse_values, timed, versions

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SIX = ["NDCG_lin@10", "NDCG_exp@10", "HitRate@10", "HitRate_item@10", "MRR_zero@10", "MRR_ignore@10"]


def tool_arrow(qrels: str, run: str) -> None:
    import pyarrow.csv as pacsv
    options = pacsv.ParseOptions(delimiter=" ")
    names = pacsv.ReadOptions(autogenerate_column_names=True)
    t = time.perf_counter()
    rows = sum(pacsv.read_csv(path, read_options=names, parse_options=options).num_rows for path in (qrels, run))
    print(f"time\tinproc\t{time.perf_counter() - t:.6f}\nrows\t{rows}")


def tool_frames(qrels: str, run: str) -> None:
    """The plugin through ir_measures.calc_aggregate, from DataFrames built first (untimed)."""
    import ir_measures
    import pyarrow.csv as pacsv

    import ndcg_plugin
    names = ["query_id", "it", "doc_id", "relevance"]
    q = pacsv.read_csv(qrels, read_options=pacsv.ReadOptions(column_names=names),
                       parse_options=pacsv.ParseOptions(delimiter=" ")).to_pandas()
    names = ["query_id", "q0", "doc_id", "rank", "score", "tag"]
    r = pacsv.read_csv(run, read_options=pacsv.ReadOptions(column_names=names),
                       parse_options=pacsv.ParseOptions(delimiter=" ")).to_pandas()
    measures = ndcg_plugin.parse_measures(SIX)
    q, r = q[["query_id", "doc_id", "relevance"]], r[["query_id", "doc_id", "score"]]
    t = time.perf_counter()
    res = ir_measures.calc_aggregate(measures, q, r)
    print(f"time\tinproc\t{time.perf_counter() - t:.6f}")
    for m, v in res.items():
        print(f"{m}\tall\t{v:.12f}")


def tool_pytrec(qrels: str, run: str) -> None:
    import pytrec_eval
    q: dict = {}
    for line in open(qrels):
        f = line.split()
        q.setdefault(f[0], {})[f[2]] = int(f[3])
    r: dict = {}
    for line in open(run):
        f = line.split()
        r.setdefault(f[0], {})[f[2]] = float(f[4])
    res = pytrec_eval.RelevanceEvaluator(q, {"ndcg_cut.10", "success.10"}).evaluate(r)
    for m in ("ndcg_cut_10", "success_10"):  # -c: a qrels query missing from the run scores 0
        print(f"{m}\tall\t{sum(v[m] for v in res.values()) / len(q):.12f}")


def tool_ranx(qrels: str, run: str) -> None:
    from ranx import Qrels, Run, evaluate
    res = evaluate(Qrels.from_file(qrels, kind="trec"), Run.from_file(run, kind="trec"), ["ndcg@10", "hit_rate@10"],
                   make_comparable=True)
    for k, v in res.items():
        print(f"{k}\tall\t{v:.12f}")


TOOLS = {"arrow": tool_arrow, "frames": tool_frames, "pytrec": tool_pytrec, "ranx": tool_ranx}


def logs(users: int) -> tuple[str, str]:
    out = subprocess.run([sys.executable, str(HERE / "make_logs.py"), "--users", str(users)], capture_output=True,
                         text=True, check=True).stdout.splitlines()
    return out[0], out[1]


def scenario(users: int, repeat: int, trec_eval: str | None, only_plugin: bool) -> tuple[list[str], bool]:
    qrels, run = logs(users)
    py, me = sys.executable, [sys.executable, __file__, "tool"]
    procs = {"ndcg-plugin eval": [py, "-m", "ndcg_plugin", "eval", qrels, run, *SIX, "-p", "-1"],
             "pyarrow.csv.read_csv of both files": [*me, "arrow", qrels, run]}
    if not only_plugin:
        procs["ir_measures.calc_aggregate (plugin) from DataFrames"] = [*me, "frames", qrels, run]
        procs["pytrec_eval"] = [*me, "pytrec", qrels, run]
        try:
            import ranx  # noqa: F401
            procs["ranx"] = [*me, "ranx", qrels, run]
        except ImportError:
            pass
        if trec_eval and users <= 100_000:
            procs["trec_eval -O2"] = [trec_eval, "-c", "-m", "ndcg_cut.10", "-m", "success.10", qrels, run]
    walls: dict = {k: [] for k in procs}
    peaks: dict = {k: [] for k in procs}
    outs: dict = {}
    for rep in range(repeat):
        for name, cmd in procs.items():
            w, m, out = timed(cmd)
            inproc = parse_values(out).get("time:inproc")
            walls[name].append(inproc if inproc is not None else w)
            peaks[name].append(m)
            outs[name] = out
            print(f"  {users:,} users, rep {rep + 1}, {name}: {walls[name][-1]:.2f} s, {m:.0f} MB", flush=True)
    ours = parse_values(outs["ndcg-plugin eval"])
    checks = {"pytrec_eval": [("ndcg_cut_10", "NDCG_lin@10"), ("success_10", "HitRate@10")],
              "ranx": [("ndcg@10", "NDCG_lin@10"), ("hit_rate@10", "HitRate@10")],
              "trec_eval -O2": [("ndcg_cut_10", "NDCG_lin@10"), ("success_10", "HitRate@10")],
              "ir_measures.calc_aggregate (plugin) from DataFrames": [(m, m) for m in SIX]}
    ok, rows = True, []
    base = statistics.median(walls["ndcg-plugin eval"])
    floor = statistics.median(walls["pyarrow.csv.read_csv of both files"])
    for name in procs:
        theirs = parse_values("\n".join("\t".join(x.split()) for x in outs[name].splitlines())) \
            if name.startswith("trec_eval") else parse_values(outs[name])
        tol = 5e-5 if name.startswith("trec_eval") else 1e-9
        bad = [f"{a} {theirs.get(a)} vs {b} {ours[b]}" for a, b in checks.get(name, [])
               if theirs.get(a) is None or abs(theirs[a] - ours[b]) > tol]
        why = TIE_NOTE if name == "ranx" else None  # the log's scores tie: ranx orders ties otherwise
        ok = ok and (not bad or why is not None)
        wall = statistics.median(walls[name])
        verdict = "agrees" if not bad else f"differs ({why}): " if why else "DISAGREES: "
        rows.append(f"| {name} | {wall:.2f} s | {max(peaks[name]):.0f} MB | {wall / floor:.2f} | "
                    f"{verdict}{'; '.join(bad)} |")
    lines = sum(1 for _ in open(run)), sum(1 for _ in open(qrels))
    head = [f"### {users:,} users ({lines[0]:,} run lines, {lines[1]:,} qrels lines)", "",
            "| tool | wall | peak RSS | / reading both files with Arrow | numbers |", "|---|---|---|---|---|", *rows,
            "", f"ndcg-plugin eval / Arrow read: {base / floor:.2f} (target <= 1.5); peak "
            f"{max(peaks['ndcg-plugin eval']):.0f} MB.", ""]
    return head, ok


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--users", type=int, nargs="+", default=[100_000, 1_000_000])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--trec-eval", help="a trec_eval binary (built with -O2); run at 10^5 users only")
    ap.add_argument("--only-plugin", action="store_true", help="time only ndcg-plugin and the Arrow read")
    ap.add_argument("--no-write", action="store_true")
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "performance-logs.md")
    args = ap.parse_args()
    compile_package()  # as bench.py does: the timed processes do not compile the modules from source
    sections, all_ok = [], True
    for users in args.users:
        section, ok = scenario(users, args.repeat, args.trec_eval, args.only_plugin)
        sections += section
        all_ok = all_ok and ok
    cmd = " ".join(["python", "benchmarks_data/bench_logs.py", *sys.argv[1:]])
    report = "\n".join(["# Performance on recommendation logs", "",
                        f"Written by `{cmd}` on {time.strftime('%Y-%m-%d')}.", f"Machine: {machine()}.",
                        f"Versions: {versions()}.",
                        f"ndcg-plugin {install_kind()}, its modules compiled to bytecode first, as pip does when "
                        f"it installs a package.", "", f"Median of {args.repeat} alternating runs. Measures: "
                        + " ".join(SIX) + ".", "", *sections])
    print(report)
    if not args.no_write:
        args.out.write_text(report + "\n")
    return 0 if all_ok else 1


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "tool":
        TOOLS[sys.argv[2]](*sys.argv[3:])
    else:
        sys.exit(main())
