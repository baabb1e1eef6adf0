"""trec_eval's measures in the engine, side by side with their peers (issue 41's targets).

    python benchmarks_data/bench_trec.py --trec-eval /path/to/trec_eval-O2 [--repeat 3] [--write]

On the MS MARCO dev-small shape (make_workload.py) and the recommendation-log shape
(make_logs.py), every command runs alternating, --repeat times; the table gives the median wall
time, the peak RSS and the ratio each target names. Outputs are checked first: the drop-in's
against trec_eval's (byte for byte, less the lines of measures it does not compute), and the
engine's numbers against pytrec_eval's (ties: pytrec_eval compares scores in float32, ranx orders
tied docs its own way; both are said where they differ). No timing is asserted.
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
NOT_COMPUTED = re.compile(r"^(relstring(_\d+)?|rbp|rbp_resid|unj_\d+)\s")


def tool_pytrec(qrels: str, run: str) -> None:
    """pytrec_eval on dicts, as its users call it: the group's measures, means printed."""
    import pytrec_eval
    q, r = read_dicts(qrels, run)
    names = {"ndcg_cut.10", "map", "recall.1000", "P.10", "recip_rank", "Rprec", "bpref"}
    res = pytrec_eval.RelevanceEvaluator(q, names).evaluate(r)
    for key, ours in PYTREC_GROUP.items():  # -c: queries missing from the run count 0
        print(f"{ours}\t{sum(v[key] for v in res.values()) / len(q):.12f}")


def tool_ranx(qrels: str, run: str) -> None:
    import ranx
    q, r = ranx.Qrels.from_file(qrels, kind="trec"), ranx.Run.from_file(run, kind="trec")
    res = ranx.evaluate(q, r, ["ndcg@10", "map", "recall@1000", "precision@10", "mrr", "r-precision", "bpref"])
    for name, value in res.items():
        print(f"{name}\t{value:.12f}")


def _median(cmd: list[str], repeat: int, store: dict, name: str) -> None:
    for _ in range(repeat):
        wall, rss, out = timed(cmd)
        store.setdefault(name, []).append((wall, rss, out))
        print(f"  {name}: {wall:.2f} s, {rss:.0f} MB", flush=True)


def _row(store: dict, name: str, base: str | None) -> str:
    wall = statistics.median(w for w, _, _ in store[name])
    rss = max(m for _, m, _ in store[name])
    ratio = "" if base is None else f"{wall / statistics.median(w for w, _, _ in store[base]):.2f}x {base}"
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
    try:
        import ranx  # noqa: F401
        procs["ranx (same group; its own tie order)"] = [*me, "ranx", qrels, run]
    except ImportError:
        pass
    store: dict = {}
    for _ in range(repeat):
        for name, cmd in procs.items():
            _median(cmd, 1, store, name)
    if trec_eval:
        theirs = store["trec_eval -O2 (default measures)"][0][2]
        if store["trec_eval drop-in (default measures)"][0][2] != theirs:
            raise SystemExit("the drop-in's output differs from trec_eval's")
        all_theirs = "".join(ln for ln in store["trec_eval -O2 -m all_trec"][0][2].splitlines(keepends=True)
                             if not NOT_COMPUTED.match(ln))
        if store["trec_eval drop-in -m all_trec"][0][2] != all_theirs:
            raise SystemExit("the drop-in's -m all_trec output differs from trec_eval's")
    ours = dict(line.split("\t") for line in store["eval " + " ".join(GROUP)][0][2].splitlines())
    for line in store["pytrec_eval (same group, dicts)"][0][2].splitlines():
        name, value = line.split("\t")
        if abs(float(value) - float(ours[name])) > 1e-9:
            print(f"  pytrec_eval {name} {value} vs ours {ours[name]} (float32 ties)", flush=True)
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


def log_shape(repeat: int) -> list[str]:
    qrels, run = logs(1_000_000)
    py = sys.executable
    procs = {"eval the six": [py, "-m", "ndcg_plugin", "eval", qrels, run, *SIX],
             "eval the six + AP@10 P@10": [py, "-m", "ndcg_plugin", "eval", qrels, run, *SIX, "AP@10", "P@10"]}
    store: dict = {}
    for _ in range(repeat):
        for name, cmd in procs.items():
            _median(cmd, 1, store, name)
    return ["| command | wall (median) | peak RSS | ratio |", "|---|---|---|---|",
            _row(store, "eval the six", None), _row(store, "eval the six + AP@10 P@10", "eval the six")]


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "tool":
        {"pytrec": tool_pytrec, "ranx": tool_ranx}[sys.argv[2]](sys.argv[3], sys.argv[4])
        return 0
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--trec-eval", help="a trec_eval 10.0 binary built with -O2")
    ap.add_argument("--write", action="store_true", help="write the tables into docs/performance.md")
    args = ap.parse_args()
    compile_package()
    out = ["## trec_eval's measures (bench_trec.py)", "", f"Machine: {machine()}; {versions()}.", "",
           "MS MARCO dev-small shape (6,980 queries x 1,000):", "", *msmarco(args.repeat, args.trec_eval), "",
           "Recommendation-log shape (10^6 users):", "", *log_shape(args.repeat), ""]
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
