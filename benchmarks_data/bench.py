"""Side-by-side benchmark: ndcg-plugin against trec_eval, pytrec_eval, ir-measures and ranx.

    python benchmarks_data/bench.py --trec-eval /path/to/trec_eval          # full: writes docs/performance.md
    python benchmarks_data/bench.py --queries 200 --repeat 1 --no-write     # CI smoke test

Every tool runs on the same files from make_workload.py, alternating, --repeat times; the table
reports the median wall time, the peak RSS (per process, from wait4) and the ratio to
ndcg-plugin. Before any time is reported, every tool's numbers are compared with ndcg-plugin's;
a tool that disagrees without a listed explanation gets no time ("DISAGREES") and the script
exits with status 1. No timing assertion is made here: the targets are printed, not enforced.
"""
from __future__ import annotations

import argparse
import math
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
# every tool runs from this script's directory (no ndcg_plugin package in it): `python -m
# ndcg_plugin` started in the repository's root would import the checkout (the working directory
# comes first on sys.path) rather than the installed package that compile_package() compiled, and
# be timed compiling its modules
WORKDIR = HERE
OURS = ["NDCG_lin@10", "NDCG_exp@10", "HitRate@10", "HitRate_item@10", "MRR_zero@10", "MRR_ignore@10", "nDCG@10"]
TREC_ARGS = ["-c", "-m", "ndcg_cut.10", "-m", "recip_rank", "-m", "success.10", "-m", "P.10"]
TIE_NOTE = "ties: this tool orders tied scores by doc id ascending or arbitrarily; trec_eval by doc id descending"


# --- tools run as separate processes -------------------------------------------------------------

def read_dicts(qrels: str, run: str) -> tuple[dict, dict]:
    """The two files as pytrec_eval's users parse them: {query: {doc: label}}, {query: {doc: score}}."""
    q: dict = {}
    for line in open(qrels):
        f = line.split()
        q.setdefault(f[0], {})[f[2]] = int(f[3])
    r: dict = {}
    for line in open(run):
        f = line.split()
        r.setdefault(f[0], {})[f[2]] = float(f[4])
    return q, r


def tool_pytrec(qrels: str, run: str) -> None:
    """pytrec_eval, whole process: its users parse the files into dicts, then evaluate."""
    import pytrec_eval
    q, r = read_dicts(qrels, run)
    res = pytrec_eval.RelevanceEvaluator(q, {"ndcg_cut.10", "recip_rank", "success.10", "P.10"}).evaluate(r)
    for m in ("ndcg_cut_10", "recip_rank", "success_10", "P_10"):  # trec_eval -c: missing queries are 0
        print(f"{m}\tall\t{sum(v[m] for v in res.values()) / len(q):.12f}")


def tool_ranx(qrels: str, run: str) -> None:
    from ranx import Qrels, Run, evaluate
    q = Qrels.from_file(qrels, kind="trec")
    r = Run.from_file(run, kind="trec")
    res = evaluate(q, r, ["ndcg@10", "mrr@10", "hit_rate@10"], make_comparable=True)
    for k, v in res.items():
        print(f"{k}\tall\t{v:.12f}")


def _frames(qrels: str, run: str):
    """Qrels and run as DataFrames read by pandas (not by the plugin, so nothing is pre-validated)."""
    import pandas as pd
    q = pd.read_csv(qrels, sep=" ", header=None, names=["query_id", "it", "doc_id", "relevance"],
                    dtype={"query_id": str, "doc_id": str})
    r = pd.read_csv(run, sep=" ", header=None, names=["query_id", "q0", "doc_id", "rank", "score", "tag"],
                    dtype={"query_id": str, "doc_id": str})
    return q, r


def _print_timed(seconds: float, results: dict) -> None:
    print(f"time\tinproc\t{seconds:.6f}")
    for m, v in results.items():
        print(f"{m}\tall\t{v:.12f}")


def tool_irmeasures_df(qrels: str, run: str) -> None:
    """ir-measures' default pipeline (no plugin) from DataFrames, timed in-process."""
    import ir_measures
    q, r = _frames(qrels, run)
    t = time.perf_counter()
    res = ir_measures.calc_aggregate([ir_measures.nDCG @ 10, ir_measures.RR @ 10], q, r)
    _print_timed(time.perf_counter() - t, res)


def tool_irmeasures_iter(qrels: str, run: str, plugin: str) -> None:
    """From ir_measures.read_trec_* iterators, timed in-process: default pipeline or the plugin."""
    import ir_measures
    measures = [ir_measures.nDCG @ 10, ir_measures.RR @ 10]
    if plugin == "yes":
        import ndcg_plugin
        ndcg_plugin.register(serve_builtins=True)  # nDCG@10 by the plugin's engine: opt-in
        measures = [ir_measures.nDCG @ 10, ndcg_plugin.MRR_zero @ 10]
    t = time.perf_counter()
    res = ir_measures.calc_aggregate(measures, ir_measures.read_trec_qrels(qrels), ir_measures.read_trec_run(run))
    _print_timed(time.perf_counter() - t, res)


def tool_frames(qrels: str, run: str) -> None:
    """From DataFrames already in memory: the plugin's calc_aggregate vs pytrec_eval's evaluate()."""
    import ir_measures
    import pytrec_eval

    import ndcg_plugin
    ndcg_plugin.register(serve_builtins=True)  # nDCG@10 by the plugin's engine: opt-in
    q, r = _frames(qrels, run)
    measures = ndcg_plugin.parse_measures(OURS)
    qd: dict = {}
    for a, b, c in zip(q.query_id, q.doc_id, q.relevance.tolist(), strict=True):
        qd.setdefault(a, {})[b] = c
    rd: dict = {}
    for a, b, c in zip(r.query_id, r.doc_id, r.score.tolist(), strict=True):
        rd.setdefault(a, {})[b] = c
    ev = pytrec_eval.RelevanceEvaluator(qd, {"ndcg_cut.10", "recip_rank", "success.10", "P.10"})
    ours, theirs = [], []
    for _ in range(3):
        fresh = r.copy()  # a DataFrame the plugin has not seen: validated in full every time
        t = time.perf_counter()
        res = ir_measures.calc_aggregate(measures, q, fresh)
        ours.append(time.perf_counter() - t)
        t = time.perf_counter()
        out = ev.evaluate(rd)
        theirs.append(time.perf_counter() - t)
    print(f"time\tplugin\t{statistics.median(ours):.6f}")
    print(f"time\tpytrec\t{statistics.median(theirs):.6f}")
    print(f"NDCG_lin@10\tall\t{res[measures[0]]:.12f}")
    print(f"ndcg_cut_10\tall\t{sum(v['ndcg_cut_10'] for v in out.values()) / len(qd):.12f}")


TOOLS = {"pytrec": tool_pytrec, "ranx": tool_ranx, "irm_df": tool_irmeasures_df, "irm_iter": tool_irmeasures_iter,
         "frames": tool_frames}


# --- the driver ------------------------------------------------------------------------------------

def timed(cmd: list[str]) -> tuple[float, float, str]:
    """(wall seconds, peak RSS in MB, stdout) of one process; the RSS comes from /usr/bin/time."""
    if Path("/usr/bin/time").exists():
        full = ["/usr/bin/time", "-f", "__rss__ %M", *cmd]
        t = time.perf_counter()
        proc = subprocess.run(full, capture_output=True, text=True, cwd=WORKDIR)
        wall = time.perf_counter() - t
        if proc.returncode != 0:
            raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}): {proc.stderr.strip()[-2000:]}")
        rss = next(float(x.split()[1]) / 1024 for x in proc.stderr.splitlines() if x.startswith("__rss__"))
        return wall, rss, proc.stdout
    t = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=WORKDIR)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}): {proc.stderr.strip()[-2000:]}")
    return time.perf_counter() - t, math.nan, proc.stdout


def parse_values(text: str) -> dict:
    out = {}
    for line in text.splitlines():
        parts = line.split("\t")
        if len(parts) == 2:
            out[parts[0].strip()] = float(parts[1])
        elif len(parts) == 3 and parts[1] in ("all", "inproc", "plugin", "pytrec"):
            out[parts[0].strip() if parts[1] == "all" else f"{parts[0]}:{parts[1]}"] = float(parts[2])
    return out


def agree(name: str, pairs: list[tuple[str, float, float, float, str | None]]) -> tuple[bool, list[str]]:
    """pairs of (what, theirs, ours, tolerance, explanation-if-they-may-differ)."""
    ok, notes = True, []
    for what, a, b, tol, why in pairs:
        d = abs(a - b)
        if d <= tol:
            notes.append(f"{what}: {a:.6f} = {b:.6f}")
        elif why:
            notes.append(f"{what}: {a:.6f} vs {b:.6f} (|diff| {d:.1e}; {why})")
        else:
            ok = False
            notes.append(f"{what}: {a:.6f} vs {b:.6f} DISAGREES (|diff| {d:.1e} > {tol})")
    return ok, notes


def machine() -> str:
    cpu = "unknown CPU"
    try:
        cpu = next(line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    mem = ""
    try:
        kb = int(next(line.split()[1] for line in open("/proc/meminfo") if line.startswith("MemTotal")))
        mem = f", {kb / 2**20:.0f} GiB RAM"
    except (OSError, StopIteration):
        pass
    system = f"{platform.system()} {platform.release()}"
    return f"{os.cpu_count()} cores ({cpu}){mem}, {system}, Python {platform.python_version()}"


def versions() -> str:
    from importlib.metadata import PackageNotFoundError, version
    out = []
    for pkg in ("ndcg-plugin", "ir-measures", "pytrec-eval-terrier", "ranx", "pandas", "numpy", "pyarrow"):
        try:
            out.append(f"{pkg} {version(pkg)}")
        except PackageNotFoundError:
            pass
    return ", ".join(out)


def workload(queries: int, scale: int) -> tuple[str, str]:
    out = subprocess.run([sys.executable, str(HERE / "make_workload.py"), "--queries", str(queries),
                          "--scale", str(scale)], capture_output=True, text=True, check=True).stdout.splitlines()
    return out[0], out[1]


def compile_package() -> None:
    """Compile ndcg-plugin's modules to bytecode first, as pip does when it installs a package (the
    other tools are installed so): from a checkout with PYTHONDONTWRITEBYTECODE set, or a tree it
    cannot write, every timed process would otherwise compile them from source (~50 ms)."""
    import compileall
    import importlib.util
    where = importlib.util.find_spec("ndcg_plugin").submodule_search_locations[0]
    if not compileall.compile_dir(where, quiet=1):
        print(f"could not compile {where} to bytecode: ndcg-plugin is timed compiling its modules", flush=True)


def install_kind() -> str:
    """How the timed ndcg-plugin is installed: from the checkout in editable mode, or as a package
    (what `pip install .` gives); PEP 610's direct_url.json says which."""
    import json
    from importlib import metadata
    try:
        raw = metadata.distribution("ndcg-plugin").read_text("direct_url.json")
    except metadata.PackageNotFoundError:
        return "ndcg-plugin not installed, imported from the checkout"
    editable = bool(raw) and json.loads(raw).get("dir_info", {}).get("editable", False)
    return "an editable install of the checkout" if editable else "installed as a package (pip install .)"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--queries", type=int, default=6980)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--trec-eval", default=shutil.which("trec_eval"), help="trec_eval binary (built with -O2)")
    ap.add_argument("--scale10", action="store_true",
                    help="also run ndcg-plugin, pytrec_eval and trec_eval at 10x the queries")
    ap.add_argument("--repeat10", type=int, default=1, help="runs of each tool at 10x (default 1)")
    ap.add_argument("--no-write", action="store_true", help="print only; do not write docs/performance.md")
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "performance.md")
    args = ap.parse_args()

    compile_package()
    qrels, run = workload(args.queries, 1)
    lines_in_run = sum(1 for _ in open(run))
    print(f"workload: {qrels}, {run} ({lines_in_run:,} lines)", flush=True)
    py = sys.executable
    me = [py, __file__, "tool"]
    procs = {"ndcg-plugin": [py, "-m", "ndcg_plugin", "eval", qrels, run, *OURS, "-p", "-1"],
             "pytrec_eval": [*me, "pytrec", qrels, run],
             "ir-measures": [py, "-m", "ir_measures", qrels, run, "nDCG@10", "RR@10", "-p", "12"]}
    if args.trec_eval:
        procs["trec_eval"] = [args.trec_eval, *TREC_ARGS, qrels, run]
    try:
        import ranx  # noqa: F401
        procs["ranx"] = [*me, "ranx", qrels, run]
    except ImportError:
        print("ranx not installed (pip install '.[bench]'): left out", flush=True)

    # reference numbers, untimed: ours, plus MRR_zero@1000 = trec_eval's recip_rank (no cutoff)
    ref = parse_values(subprocess.run([py, "-m", "ndcg_plugin", "eval", qrels, run, *OURS, "MRR_zero@1000",
                                       "-p", "-1"], capture_output=True, text=True, check=True,
                                      cwd=WORKDIR).stdout)
    walls: dict = {k: [] for k in procs}
    rss: dict = {k: [] for k in procs}
    outputs: dict = {}
    for rep in range(args.repeat):
        for name, cmd in procs.items():  # alternating: one of each, then again
            w, m, out = timed(cmd)
            walls[name].append(w)
            rss[name].append(m)
            outputs[name] = out
            print(f"  rep {rep + 1} {name}: {w:.2f} s, {m:.0f} MB", flush=True)

    checks = {}
    v = parse_values(outputs["ndcg-plugin"])
    checks["ndcg-plugin"] = agree("ndcg-plugin", [("nDCG@10 (served by the plugin) = NDCG_lin@10", v["nDCG@10"],
                                                   v["NDCG_lin@10"], 1e-12, None)])
    t = parse_values(outputs["pytrec_eval"])
    checks["pytrec_eval"] = agree("pytrec_eval", [
        ("ndcg_cut_10 / NDCG_lin@10", t["ndcg_cut_10"], ref["NDCG_lin@10"], 1e-9, None),
        ("success_10 / HitRate@10", t["success_10"], ref["HitRate@10"], 1e-9, None),
        ("recip_rank / MRR_zero@1000", t["recip_rank"], ref["MRR_zero@1000"], 1e-9, None)])
    i = parse_values(outputs["ir-measures"])
    checks["ir-measures"] = agree("ir-measures", [
        ("nDCG@10 / NDCG_lin@10", i["nDCG@10"], ref["NDCG_lin@10"], 1e-9, None),
        ("RR@10 / MRR_zero@10", i["RR@10"], ref["MRR_zero@10"], 1e-9,
         "msmarco provider: " + TIE_NOTE)])
    if "trec_eval" in procs:
        t = parse_values("\n".join("\t".join(x.split()) for x in outputs["trec_eval"].splitlines()))
        checks["trec_eval"] = agree("trec_eval", [
            ("ndcg_cut_10 / NDCG_lin@10", t["ndcg_cut_10"], ref["NDCG_lin@10"], 5e-5, None),
            ("success_10 / HitRate@10", t["success_10"], ref["HitRate@10"], 5e-5, None),
            ("P_10 / HitRate_item@10 (every query returns >= 10 docs)", t["P_10"], ref["HitRate_item@10"], 5e-5, None),
            ("recip_rank / MRR_zero@1000", t["recip_rank"], ref["MRR_zero@1000"], 5e-5, None)])
    if "ranx" in procs:
        r = parse_values(outputs["ranx"])
        checks["ranx"] = agree("ranx", [
            ("ndcg@10 / NDCG_lin@10", r["ndcg@10"], ref["NDCG_lin@10"], 1e-9, TIE_NOTE),
            ("mrr@10 / MRR_zero@10", r["mrr@10"], ref["MRR_zero@10"], 1e-9, TIE_NOTE),
            ("hit_rate@10 / HitRate@10", r["hit_rate@10"], ref["HitRate@10"], 1e-9, TIE_NOTE)])

    base = statistics.median(walls["ndcg-plugin"])
    rows = []
    for name in procs:
        ok, notes = checks[name]
        wall = statistics.median(walls[name])
        peak = max(rss[name])
        if ok:
            rows.append(f"| {name} | {wall:.2f} s | {peak:.0f} MB | {wall / base:.2f} | {'; '.join(notes)} |")
        else:
            rows.append(f"| {name} | DISAGREES | - | - | {'; '.join(notes)} |")
    all_ok = all(ok for ok, _ in checks.values())

    # in-process comparisons
    frames = parse_values(subprocess.run([*me, "frames", qrels, run], capture_output=True, text=True,
                                         check=True, cwd=WORKDIR).stdout)
    irm_df = parse_values(timed([*me, "irm_df", qrels, run])[2])
    it_default = parse_values(timed([*me, "irm_iter", qrels, run, "no"])[2])
    it_plugin = parse_values(timed([*me, "irm_iter", qrels, run, "yes"])[2])
    frames_ok = abs(frames["NDCG_lin@10"] - frames["ndcg_cut_10"]) <= 1e-9
    iter_ok = abs(it_default["nDCG@10"] - it_plugin["nDCG@10"]) <= 1e-9
    plugin_df, pytrec_df = frames["time:plugin"], frames["time:pytrec"]
    irm_ratio = irm_df["time:inproc"] / plugin_df
    iter_ratio = it_default["time:inproc"] / it_plugin["time:inproc"]
    inproc = [
        f"| `ir_measures.calc_aggregate` of the 7 measures (plugin, serve_builtins=True) from DataFrames | "
        f"{plugin_df:.2f} s | 1.00 |",
        f"| pytrec_eval `evaluate()` alone, same data as dicts | {frames['time:pytrec']:.2f} s | "
        f"{frames['time:pytrec'] / frames['time:plugin']:.2f} |",
        f"| ir-measures default pipeline, nDCG@10 + RR@10, from DataFrames | {irm_df['time:inproc']:.2f} s | "
        f"{irm_df['time:inproc'] / frames['time:plugin']:.1f} |",
        f"| plugin, nDCG@10 + MRR_zero@10, from `read_trec_*` iterators | {it_plugin['time:inproc']:.2f} s | 1.00 |",
        f"| ir-measures default pipeline, nDCG@10 + RR@10, from `read_trec_*` iterators | "
        f"{it_default['time:inproc']:.2f} s | {it_default['time:inproc'] / it_plugin['time:inproc']:.1f} |",
    ]
    scale_rows = []
    w10_median = m10_peak = None
    if args.scale10:
        q10, r10 = workload(args.queries, 10)
        lines10 = sum(1 for _ in open(r10))
        tools10 = {"ndcg-plugin": [py, "-m", "ndcg_plugin", "eval", q10, r10, *OURS, "-p", "-1"],
                   "pytrec_eval": [*me, "pytrec", q10, r10]}
        if args.trec_eval:
            tools10["trec_eval"] = [args.trec_eval, *TREC_ARGS, q10, r10]
        w10: dict = {k: [] for k in tools10}
        m10: dict = {k: [] for k in tools10}
        out10: dict = {}
        for rep in range(args.repeat10):
            for name, cmd in tools10.items():
                w, m, out = timed(cmd)
                w10[name].append(w)
                m10[name].append(m)
                out10[name] = out
                print(f"  10x rep {rep + 1} {name}: {w:.2f} s, {m:.0f} MB", flush=True)
        ours10 = parse_values(out10["ndcg-plugin"])
        te10 = parse_values(out10["pytrec_eval"])
        same10 = abs(ours10["NDCG_lin@10"] - te10["ndcg_cut_10"]) <= 1e-9
        all_ok = all_ok and same10
        w10_median, m10_peak = statistics.median(w10["ndcg-plugin"]), max(m10["ndcg-plugin"])
        for name in tools10:
            wall = statistics.median(w10[name])
            scale_rows.append(f"| {name} | {wall:.2f} s | {max(m10[name]):.0f} MB | {wall / w10_median:.2f} |")
        scale_rows.append("")
        scale_rows.append(f"{args.queries * 10:,} queries x 1,000 ({lines10:,} lines); median of {args.repeat10}. "
                          f"ndcg-plugin's NDCG_lin@10 {'equals' if same10 else 'DIFFERS FROM'} pytrec_eval's "
                          f"ndcg_cut_10 here; its time is {w10_median / base:.1f}x its 1x time.")

    te = statistics.median(walls["trec_eval"]) if "trec_eval" in walls else None
    targets = [
        f"- 1x whole process vs trec_eval -O2: {base / te:.3f} (target <= 0.18, goal 0.15)" if te
        else "- trec_eval: not given",
        f"- 1x peak RSS of ndcg-plugin: {max(rss['ndcg-plugin']):.0f} MB (target <= 400)",
        *([f"- 10x peak RSS of ndcg-plugin: {m10_peak:.0f} MB (target <= 1024)",
           f"- 10x time / 1x time: {w10_median / base:.1f} (target <= 10.5)"] if w10_median else []),
        f"- from DataFrames vs pytrec_eval evaluate(): {plugin_df / pytrec_df:.3f} (target <= 0.19, as before)",
        f"- from DataFrames, default pipeline / plugin: {irm_ratio:.1f}x",
        f"- from iterators, default pipeline / plugin: {iter_ratio:.1f}x",
        f"- agreement: {'all tools agree (or differ for the stated reason)' if all_ok else 'DISAGREEMENT'}; "
        f"DataFrame path {'agrees' if frames_ok else 'DISAGREES'}; "
        f"iterator path {'agrees' if iter_ok else 'DISAGREES'}",
    ]
    cmd_line = " ".join(["python", "benchmarks_data/bench.py", *sys.argv[1:]])
    report = "\n".join([
        "# Performance", "",
        f"Written by `{cmd_line}` on {time.strftime('%Y-%m-%d')}.",
        f"Machine: {machine()}.", f"Versions: {versions()}.", "",
        f"Workload: `benchmarks_data/make_workload.py --queries {args.queries}` "
        f"({args.queries:,} queries x 1,000 docs, {lines_in_run:,} run lines; MS MARCO dev-small qrels ids when "
        "../shared/data is present). Measures: " + " ".join(OURS) + f". Median of {args.repeat} alternating runs; "
        f"ndcg-plugin {install_kind()}, its modules compiled to bytecode first, as pip does when it installs a "
        "package.",
        "", "## Whole process (files in, numbers out)", "",
        "| tool | wall | peak RSS | / ndcg-plugin | agreement with ndcg-plugin |", "|---|---|---|---|---|", *rows, "",
        "Commands: `ndcg-plugin eval QRELS RUN " + " ".join(OURS) + "`; `trec_eval " + " ".join(TREC_ARGS) +
        " QRELS RUN`; pytrec_eval: parse both files into dicts, `RelevanceEvaluator(...).evaluate`; "
        "`ir_measures QRELS RUN nDCG@10 RR@10` (default pipeline, no plugin); ranx: "
        "`Qrels.from_file`, `Run.from_file`, `evaluate(ndcg@10, mrr@10, hit_rate@10)`.",
        "", "## In one process", "", "| what | time | ratio |", "|---|---|---|", *inproc, "",
        *(["## 10x the queries", "", "| tool | wall | peak RSS | / ndcg-plugin |", "|---|---|---|---|", *scale_rows, "",
           "ndcg-plugin streams the run file (blocks of 8 MiB, per-query values kept), so its memory does not grow "
           "with the run; trec_eval and pytrec_eval hold the whole run.", ""] if scale_rows else []),
        "## Targets", "", *targets, "",
    ])
    print(report)
    if not args.no_write:
        args.out.write_text(report)
        print(f"wrote {args.out}")
    return 0 if all_ok and frames_ok and iter_ok else 1


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "tool":
        TOOLS[sys.argv[2]](*sys.argv[3:])
    else:
        sys.exit(main())
