"""trec_eval's measures in the engine, side by side with their peers (issue 41's targets).

    python benchmarks_data/bench_trec.py --trec-eval /path/to/trec_eval-O2 [--repeat 3] [--write]
    python benchmarks_data/bench_trec.py --trec-eval /path/to/trec_eval-O2 --shape log   # one shape

On the MS MARCO dev-small shape (make_workload.py) and the recommendation-log shape
(make_logs.py), every command runs alternating, --repeat times; the table gives the median wall
time, the peak RSS and the ratio each target names. Outputs are checked first: the drop-in's
against trec_eval's (byte for byte), and the engine's numbers against pytrec_eval's (ties:
pytrec_eval compares scores in float32, ranx orders tied docs its own way; both are said where
they differ). No timing is asserted.
"""
from __future__ import annotations

import argparse
import re
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench import ROOT, compile_package, machine, read_dicts, timed, versions, workload  # noqa: E402
from bench_logs import logs  # noqa: E402

SIX = ["NDCG_lin@10", "NDCG_exp@10", "HitRate@10", "HitRate_item@10", "MRR_zero@10", "MRR_ignore@10"]
GROUP = ["nDCG@10", "AP", "R@1000", "P@10", "RR", "Rprec", "Bpref"]
PYTREC_GROUP = {"ndcg_cut_10": "nDCG@10", "map": "AP", "recall_1000": "R@1000", "P_10": "P@10",
                "recip_rank": "RR", "Rprec": "Rprec", "bpref": "Bpref"}
#: the log shape's trec_eval group: AP@10 and P@10 (trec_eval map_cut.10 and P.10)
LOG_GROUP = ["AP@10", "P@10"]
PYTREC_LOG_GROUP = {"map_cut_10": "AP@10", "P_10": "P@10"}
RANX_NAMES = {"ndcg@10": "nDCG@10", "map": "AP", "recall@1000": "R@1000", "precision@10": "P@10", "mrr": "RR",
              "r-precision": "Rprec", "bpref": "Bpref", "map@10": "AP@10"}
def tool_pytrec(qrels: str, run: str, group: str = "paper") -> None:
    """pytrec_eval on dicts, as its users call it: the group's measures (the paper table's, or
    the log shape's ``log``), means printed."""
    import pytrec_eval
    q, r = read_dicts(qrels, run)
    keys = PYTREC_GROUP if group == "paper" else PYTREC_LOG_GROUP
    names = {re.sub(r"_(\d+)$", r".\1", k) for k in keys}  # ndcg_cut_10 -> ndcg_cut.10
    res = pytrec_eval.RelevanceEvaluator(q, names).evaluate(r)
    for key, ours in keys.items():  # -c: queries missing from the run count 0
        print(f"{ours}\t{sum(v[key] for v in res.values()) / len(q):.12f}")


def tool_ranx(qrels: str, run: str, group: str = "paper") -> None:
    import ranx
    q, r = ranx.Qrels.from_file(qrels, kind="trec"), ranx.Run.from_file(run, kind="trec")
    names = (["ndcg@10", "map", "recall@1000", "precision@10", "mrr", "r-precision", "bpref"] if group == "paper"
             else ["map@10", "precision@10"])
    res = ranx.evaluate(q, r, names, make_comparable=True)  # the qrels' queries, as the others
    for name, value in res.items():
        print(f"{RANX_NAMES[name]}\t{value:.12f}")


def _median(cmd: list[str], repeat: int, store: dict, name: str) -> None:
    for _ in range(repeat):
        wall, rss, out = timed(cmd)
        store.setdefault(name, []).append((wall, rss, out))
        print(f"  {name}: {wall:.2f} s, {rss:.0f} MB", flush=True)


def _add_ranx(procs: dict, name: str, cmd: list[str]) -> None:
    """``cmd`` as ``procs[name]`` when ranx is installed."""
    try:
        import ranx  # noqa: F401
    except ImportError:
        return
    procs[name] = cmd


def _alternate(procs: dict, repeat: int) -> dict:
    """{name: [(wall, rss, stdout)] of each run}: every command once per round, ``repeat`` rounds."""
    store: dict = {}
    for _ in range(repeat):
        for name, cmd in procs.items():
            _median(cmd, 1, store, name)
    return store


def _differences(store: dict, ours: str, tools: list[str]) -> None:
    """Print each mean of ``tools`` (lines ``name<TAB>value``, those that ran) that differs from
    ``ours``' by more than 1e-9 (pytrec_eval ties scores in float32, ranx orders ties its own way)."""
    mine = dict(line.split("\t") for line in store[ours][0][2].splitlines())
    for tool in (t for t in tools if t in store):
        for line in store[tool][0][2].splitlines():
            name, value = line.split("\t")
            if abs(float(value) - float(mine[name])) > 1e-9:
                print(f"  {tool}: {name} {value} vs ours {mine[name]}", flush=True)


def _row(store: dict, name: str, base: str | None) -> str:
    wall = statistics.median(w for w, _, _ in store[name])
    rss = max(m for _, m, _ in store[name])
    ratio = "" if base is None else f"{wall / statistics.median(w for w, _, _ in store[base]):.3g}x {base}"
    return f"| {name} | {wall:.2f} s | {rss:.0f} MB | {ratio} |"


def msmarco(repeat: int, trec_eval: str | None) -> list[str]:
    qrels, run = workload(6980, 1)
    py, me = sys.executable, [sys.executable, __file__, "tool"]
    procs = {"eval nDCG@10": [py, "-m", "ndcg_plugin", "eval", qrels, run, "nDCG@10"],
             "eval " + " ".join(GROUP): [py, "-m", "ndcg_plugin", "eval", qrels, run, *GROUP, "-p", "-1"],
             "trec_eval drop-in (default measures)": [py, "-m", "ndcg_plugin", "trec_eval", qrels, run],
             "pytrec_eval (same group, dicts)": [*me, "pytrec", qrels, run]}
    if trec_eval:
        procs["trec_eval -O2 (default measures)"] = [trec_eval, qrels, run]
        procs["trec_eval drop-in -m all_trec"] = [py, "-m", "ndcg_plugin", "trec_eval", "-m", "all_trec", qrels, run]
        procs["trec_eval -O2 -m all_trec"] = [trec_eval, "-m", "all_trec", qrels, run]
    _add_ranx(procs, "ranx (same group; its own tie order)", [*me, "ranx", qrels, run])
    store = _alternate(procs, repeat)
    if trec_eval:
        theirs = store["trec_eval -O2 (default measures)"][0][2]
        if store["trec_eval drop-in (default measures)"][0][2] != theirs:
            raise SystemExit("the drop-in's output differs from trec_eval's")
        if store["trec_eval drop-in -m all_trec"][0][2] != store["trec_eval -O2 -m all_trec"][0][2]:
            raise SystemExit("the drop-in's -m all_trec output differs from trec_eval's")
    _differences(store, "eval " + " ".join(GROUP), ["pytrec_eval (same group, dicts)"])
    base_te = "trec_eval -O2 (default measures)" if trec_eval else None
    rows = ["| command | wall (median) | peak RSS | ratio |", "|---|---|---|---|",
            _row(store, "eval nDCG@10", None),
            _row(store, "eval " + " ".join(GROUP), "eval nDCG@10"),
            _row(store, "pytrec_eval (same group, dicts)", "eval nDCG@10")]
    if "ranx (same group; its own tie order)" in store:
        rows.append(_row(store, "ranx (same group; its own tie order)", "eval nDCG@10"))
    if trec_eval:
        rows += [_row(store, base_te, None), _row(store, "trec_eval drop-in (default measures)", base_te),
                 _row(store, "trec_eval -O2 -m all_trec", None),
                 _row(store, "trec_eval drop-in -m all_trec", "trec_eval -O2 -m all_trec")]
    return rows


#: users of the log shape on which trec_eval runs: trec_eval 10.0 finds each qrels query's results
#: by a linear scan of the run's queries (trec_eval.c's main loop), so its time grows with the
#: square of the users; at 10^6 users (10^12 comparisons) it ran for more than 7 minutes without end
TREC_EVAL_LOG_USERS = 100_000


def _log_peers(users: int, repeat: int, trec_eval: str | None, with_six: bool) -> list[str]:
    """The log shape at ``users``: AP@10 P@10 by ``eval``, pytrec_eval, ranx (with ``with_six``
    also the six, and the six with AP@10 and P@10: issue 41's target), and, given a binary,
    trec_eval -O2 (``-m map_cut.10 -m P.10``) and the drop-in. Every user of the qrels is in the
    run, so trec_eval's mean (over the run's queries) and the others' (over the qrels') agree."""
    qrels, run = logs(users)
    py, me = sys.executable, [sys.executable, __file__, "tool"]
    pair = "eval " + " ".join(LOG_GROUP)
    procs = {}
    if with_six:
        procs = {"eval the six": [py, "-m", "ndcg_plugin", "eval", qrels, run, *SIX],
                 "eval the six + AP@10 P@10": [py, "-m", "ndcg_plugin", "eval", qrels, run, *SIX, *LOG_GROUP]}
    procs |= {pair: [py, "-m", "ndcg_plugin", "eval", qrels, run, *LOG_GROUP, "-p", "-1"],
              "pytrec_eval (AP@10 P@10, dicts)": [*me, "pytrec", qrels, run, "log"]}
    if trec_eval:
        procs["trec_eval -O2 -m map_cut.10 -m P.10"] = [trec_eval, "-m", "map_cut.10", "-m", "P.10", qrels, run]
        procs["trec_eval drop-in -m map_cut.10 -m P.10"] = [py, "-m", "ndcg_plugin", "trec_eval", "-m", "map_cut.10",
                                                            "-m", "P.10", qrels, run]
    _add_ranx(procs, "ranx (AP@10 P@10; its own tie order)", [*me, "ranx", qrels, run, "log"])
    store = _alternate(procs, repeat)
    if trec_eval and store["trec_eval drop-in -m map_cut.10 -m P.10"][0][2] != \
            store["trec_eval -O2 -m map_cut.10 -m P.10"][0][2]:
        raise SystemExit("the drop-in's output differs from trec_eval's on the log shape")
    _differences(store, pair, ["pytrec_eval (AP@10 P@10, dicts)", "ranx (AP@10 P@10; its own tie order)"])
    rows = ["| command | wall (median) | peak RSS | ratio |", "|---|---|---|---|"]
    if with_six:
        rows += [_row(store, "eval the six", None), _row(store, "eval the six + AP@10 P@10", "eval the six")]
    rows += [_row(store, pair, None), _row(store, "pytrec_eval (AP@10 P@10, dicts)", pair)]
    if "ranx (AP@10 P@10; its own tie order)" in store:
        rows.append(_row(store, "ranx (AP@10 P@10; its own tie order)", pair))
    if trec_eval:
        te = "trec_eval -O2 -m map_cut.10 -m P.10"
        rows += [_row(store, te, None), _row(store, "trec_eval drop-in -m map_cut.10 -m P.10", te),
                 _row(store, pair, te)]
    return rows


def log_shape(repeat: int, trec_eval: str | None) -> list[str]:
    """The log shape: at 10^6 users the plugin (issue 41's target) and pytrec_eval; at
    :data:`TREC_EVAL_LOG_USERS` users every peer, trec_eval and ranx included."""
    return [*_log_peers(1_000_000, repeat, None, with_six=True), "",
            f"The same shape at {TREC_EVAL_LOG_USERS:,} users (trec_eval's time grows with the square of the users: "
            f"see TREC_EVAL_LOG_USERS), every peer:", "",
            *_log_peers(TREC_EVAL_LOG_USERS, repeat, trec_eval, with_six=False)]


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "tool":
        {"pytrec": tool_pytrec, "ranx": tool_ranx}[sys.argv[2]](*sys.argv[3:])
        return 0
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--trec-eval", help="a trec_eval 10.0 binary built with -O2")
    ap.add_argument("--shape", choices=["both", "msmarco", "log"], default="both", help="the shapes measured")
    ap.add_argument("--write", action="store_true", help="write the tables into docs/performance.md")
    args = ap.parse_args()
    if args.write and args.shape != "both":
        ap.error("--write replaces both shapes' tables: give --shape both")
    compile_package()
    out = ["## trec_eval's measures (bench_trec.py)", "", f"Machine: {machine()}; {versions()}.", ""]
    if args.shape in ("both", "msmarco"):
        out += ["MS MARCO dev-small shape (6,980 queries x 1,000):", "", *msmarco(args.repeat, args.trec_eval), ""]
    if args.shape in ("both", "log"):
        out += ["Recommendation-log shape (10^6 users):", "", *log_shape(args.repeat, args.trec_eval), ""]
    text = "\n".join(out)
    print(text)
    if args.write:
        path = ROOT / "docs" / "performance.md"
        doc = path.read_text()
        head = doc.split("## trec_eval's measures (bench_trec.py)")[0].rstrip("\n")
        rest = doc.split("## trec_eval's measures (bench_trec.py)")[1] if "## trec_eval's measures" in doc else ""
        tail = rest[rest.find("\n## "):] if "\n## " in rest else ""
        path.write_text(head + "\n\n" + text + tail)
    return 0


if __name__ == "__main__":
    sys.exit(main())
