"""Importing the plugin changes nothing about built-in measures (issue 14; issue 9, item 5).

The same random cases are evaluated with built-in measures in separate processes: without the
plugin, with ``import ndcg_plugin``, and (the control that shows the comparison can fail) with
``ndcg_plugin.register(serve_builtins=True)``. The first two must give identical per-query
values in the same order, identical aggregates, identical exception types and identical
warnings. Cases include near-ties at single precision, qrels queries without judgments,
duplicate (query, doc) pairs, NaN scores, empty doc ids, integer ids, run queries absent from
the qrels, and every input form (DataFrame, dict of dicts, namedtuples).

Left out: queries whose labels are all negative (pytrec_eval has been reported to crash on some,
with or without the plugin), so every generated qrels query has a label >= 0.

Run as a script, this file is the worker: ``python tests/test_builtins.py MODE N`` prints the
results of the first N cases as JSON; MODE is ``plain``, ``plugin`` or ``serve``.
"""
from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

MEASURES = ["nDCG", "nDCG@5", "nDCG(dcg='exp-log2')@5", "RR", "RR@3", "Success@3", "P@3", "AP", "R@5", "Judged@3"]
N_CASES = 300
SCORES = [0.5, 1.0, 1.5, 2.0, 3.0]


def make_case(i: int) -> dict:
    """Case i: qrels and run rows, plus the extras only some input forms can express."""
    import numpy as np
    rng = np.random.default_rng(1000 + i)
    int_ids = i % 13 == 5
    qrels, run = [], []
    for q in range(int(rng.integers(1, 5))):
        qid = q if int_ids else (f"{100 + q}" if i % 2 else f"q{q}")  # gdeval.pl reads numeric ids only
        n = int(rng.integers(1, 8))
        labels = rng.integers(-2, 4, n)
        if labels.max() < 0:
            labels[int(rng.integers(0, n))] = int(rng.integers(0, 4))  # no all-negative query (see above)
        docs = [f"d{j}" for j in range(n)]
        qrels += [(qid, d, int(r)) for d, r in zip(docs, labels, strict=True)]
        pool = [d for d in docs if rng.random() < 0.8] + [f"u{j}" for j in range(int(rng.integers(0, 4)))]
        scores = [float(rng.choice(SCORES)) + (float(rng.integers(0, 3)) if rng.random() < 0.5 else 0.0)
                  for _ in pool]
        if i % 3 == 0 and len(pool) >= 2:  # equal at single precision, not at double
            scores[0] = 0.30000000000000004
            scores[1] = 0.3
        if i % 4 == 1 and len(pool) >= 2:
            scores[1] = float(np.nextafter(scores[0], np.inf))
        run += [(qid, d, s) for d, s in zip(pool, scores, strict=True)]
    if i % 5 == 2:
        run.append(("zz" if not int_ids else 99, "d0", 1.0))  # a run query absent from the qrels
    if i % 11 == 3 and run:
        qid, doc, score = run[0]
        run.append((qid, doc, score + 1.0))  # a duplicate (query, doc) pair
    if i % 29 == 7:
        run[-1] = (run[-1][0], run[-1][1], float("nan"))
    if i % 31 == 11:
        run[0] = (run[0][0], "", run[0][2])
    empty_query = i % 7 == 4  # a qrels query without judgments (dict of dicts only)
    return {"qrels": qrels, "run": run, "empty_query": empty_query, "int_ids": int_ids}


def forms(case: dict):
    import ir_measures
    import pandas as pd
    qrels, run = case["qrels"], case["run"]
    yield "dataframe", (pd.DataFrame(qrels, columns=["query_id", "doc_id", "relevance"]),
                        pd.DataFrame(run, columns=["query_id", "doc_id", "score"]))
    qd, rd = {}, {}
    for q, d, r in qrels:
        qd.setdefault(q, {})[d] = r
    for q, d, s in run:
        rd.setdefault(q, {})[d] = s
    if case["empty_query"]:
        qd["q_empty" if not case["int_ids"] else 77] = {}
        rd["q_empty" if not case["int_ids"] else 77] = {"d0": 1.0}
    yield "dict", (qd, rd)
    yield "namedtuple", ([ir_measures.Qrel(*r) for r in qrels], [ir_measures.ScoredDoc(*r) for r in run])


def _value(v) -> str:
    return "nan" if isinstance(v, float) and math.isnan(v) else repr(float(v))


def _call(fn):
    """(result, exception type name or None, warnings as (category, message))."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            out, err = fn(), None
        except Exception as e:  # noqa: BLE001 - the exception type is what is compared
            out, err = None, type(e).__name__
    return out, err, [(w.category.__name__, str(w.message)) for w in caught if w.category is not DeprecationWarning]


def gdeval_once_per_input() -> None:
    """ir-measures' gdeval provider runs ``perl gdeval.pl QRELS RUN CUTOFF`` for each call; a case's
    three input forms and its two kinds of call (iter_calc, calc_aggregate) mostly write the same
    two files. gdeval.pl's output is a function of those files and the cutoff: its result (output,
    or the exit status it failed with) is kept per (script, files' bytes, cutoff) and given again
    for the same bytes, in this worker process only. What the provider writes, reads and raises is
    unchanged; a difference in what it writes (with or without the plugin) is a new key: perl runs."""
    import subprocess
    real, seen = subprocess.check_output, {}

    def check_output(cmd, *args, **kwargs):
        if not (isinstance(cmd, list) and len(cmd) == 5 and cmd[0] == "perl" and not args and not kwargs):
            return real(cmd, *args, **kwargs)
        key = (*(Path(f).read_bytes() for f in cmd[1:4]), cmd[4])
        if key not in seen:
            try:
                seen[key] = (0, real(cmd))
            except subprocess.CalledProcessError as e:
                seen[key] = (e.returncode, e.output)
        code, output = seen[key]
        if code:
            raise subprocess.CalledProcessError(code, cmd, output)
        return output

    subprocess.check_output = check_output


def worker(mode: str, n: int) -> list:
    gdeval_once_per_input()
    if mode in ("plugin", "serve"):
        import ndcg_plugin
        if mode == "serve":
            ndcg_plugin.register(serve_builtins=True)
    import ir_measures
    measures = [ir_measures.parse_measure(m) for m in MEASURES]
    out = []
    for i in range(n):
        case = make_case(i)
        for form, (qrels, run) in forms(case):
            record = {"case": i, "form": form}

            def per_query(qrels=qrels, run=run):
                rows = []
                try:
                    for m in ir_measures.iter_calc(measures, qrels, run):
                        rows.append([repr(m.query_id), str(m.measure), _value(m.value)])
                except Exception as e:  # noqa: BLE001
                    rows.append(["raised", type(e).__name__])
                return rows

            record["iter_calc"] = _call(per_query)
            record["calc_aggregate"] = {
                str(m): _call(lambda m=m, qrels=qrels, run=run: {
                    str(k): _value(v) for k, v in ir_measures.calc_aggregate([m], qrels, run).items()})
                for m in measures}
            out.append(record)
    return out


def run_worker_processes(runs: list[tuple[str, int]]) -> list[list]:
    """The worker's results for each (mode, number of cases), the processes running side by side."""
    env = dict(os.environ, PYTHONHASHSEED="0", PYTHONWARNINGS="")
    procs = [subprocess.Popen([sys.executable, str(Path(__file__).resolve()), mode, str(n)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=env) for mode, n in runs]
    results = []
    for proc in procs:
        out, err = proc.communicate(timeout=1200)
        assert proc.returncode == 0, err[-3000:]
        results.append(json.loads(out))
    return results


CONTROL_CASES = 60


@pytest.fixture(scope="module")
def workers() -> dict:
    """The three workers' results, their processes started together: plain and plugin on every
    case, serve on the first CONTROL_CASES. (The control compared serve with a plain worker of
    its own on those cases; each case is evaluated on its own, warnings recorded per call, so that
    worker printed the first CONTROL_CASES cases of this plain worker: it is no longer run twice.)"""
    plain, plugin, serve = run_worker_processes([("plain", N_CASES), ("plugin", N_CASES), ("serve", CONTROL_CASES)])
    return {"plain": plain, "plugin": plugin, "serve": serve}


def differences(a: list, b: list) -> list:
    return [(x["case"], x["form"]) for x, y in zip(a, b, strict=True) if x != y]


def test_generated_cases_exercise_what_they_claim():
    import numpy as np
    cases = [make_case(i) for i in range(N_CASES)]
    near = sum(any(s != t and np.float32(s) == np.float32(t) for (q, _, s) in c["run"] for (p, _, t) in c["run"]
                   if p == q) for c in cases)
    dups = sum(len({(q, d) for q, d, _ in c["run"]}) < len(c["run"]) for c in cases)
    assert near >= 100 and dups >= 20
    assert sum(c["empty_query"] for c in cases) >= 40 and sum(c["int_ids"] for c in cases) >= 20
    for c in cases:
        by_query: dict = {}
        for q, _, r in c["qrels"]:
            by_query.setdefault(q, []).append(r)
        assert all(max(labels) >= 0 for labels in by_query.values())


def test_builtins_identical_with_and_without_the_plugin(workers):
    plain, plugin = workers["plain"], workers["plugin"]
    assert len(plain) == 3 * N_CASES
    assert differences(plain, plugin) == []
    # the cases produce numbers, errors and warnings, so identical results are not vacuous
    results = [r["calc_aggregate"][m] for r in plain for m in MEASURES]
    assert sum(err is None for _, err, _ in results) > 0.5 * len(results)
    assert {err for _, err, _ in results} - {None}


def test_the_comparison_detects_a_takeover_of_builtins(workers):
    # the control: serving built-ins with the plugin's engine changes near-tie results and errors
    serve = workers["serve"]
    plain = workers["plain"][:len(serve)]
    assert len(serve) == 3 * CONTROL_CASES
    assert differences(plain, serve)  # the per-query order alone changes in every case
    changed = {m for x, y in zip(plain, serve, strict=True) for m in MEASURES
               if x["calc_aggregate"][m] != y["calc_aggregate"][m]}
    assert {"nDCG", "RR", "Success@3"} <= changed  # near-ties, duplicates, NaN scores, int ids


if __name__ == "__main__":
    print(json.dumps(worker(sys.argv[1], int(sys.argv[2]))))


def _load_irm_suite():
    import importlib.util
    path = Path(__file__).resolve().parent.parent / "benchmarks_data" / "irm_suite.py"
    spec = importlib.util.spec_from_file_location("irm_suite", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_irm_suite_script_reports_an_outcome_the_plugin_changes(tmp_path, capsys, monkeypatch):
    # a stand-in for ir-measures' tests folder: one test the plugin cannot change, one it does.
    # The script's four pytest runs load no installed pytest plugins (the stand-in uses none; their
    # loading was most of this test's time): the plugin itself is still loaded by name (-p ndcg_plugin)
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    tests = tmp_path / "tests"
    tests.mkdir()
    (tests / "test_providers.py").write_text(
        "import ir_measures\n\n"
        "def test_builtin():\n"
        "    assert ir_measures.calc_aggregate([ir_measures.P @ 1], {'q': {'a': 1}}, {'q': {'a': 1.0}}) == "
        "{ir_measures.P @ 1: 1.0}\n\n"
        "def test_registry_untouched():\n"
        "    assert 'ndcg_plugin' not in ir_measures.providers.registry\n")
    assert _load_irm_suite().main([str(tests)]) == 1
    out = capsys.readouterr().out
    assert "without the plugin           2 passed" in out and "with import ndcg_plugin      1 failed, 1 passed" in out
    assert "outcome changed: tests/test_providers.py::test_registry_untouched: PASSED -> FAILED" in out
    (tests / "test_providers.py").write_text("def test_nothing():\n    pass\n")
    assert _load_irm_suite().main([str(tests)]) == 0
    assert "same outcomes with and without the plugin" in capsys.readouterr().out


SERVED = ["nDCG", "nDCG@5", "nDCG(gains={0:0,1:3,2:1,3:7})@5", "nDCG(judged_only=True)@5", "nDCG(judged_only=True)",
          "RR", "RR(rel=2)", "RR(judged_only=True)", "Success@3", "Success(rel=2)@3", "Success(judged_only=True)@3"]


def test_served_builtins_equal_pytrec_eval_where_docs_say_they_do():
    """The plugin's engine serving built-ins (by name) against pytrec_eval, per query, on inputs
    outside the differences docs/measures.md lists: scores distinct at single precision (or
    equal at double), no duplicates, finite scores, string ids; queries without judgments kept."""
    import ir_measures
    import numpy as np

    import ndcg_plugin  # noqa: F401 - registers the provider
    plugin = ir_measures.providers.registry["ndcg_plugin"]
    measures = [ir_measures.parse_measure(m) for m in SERVED]
    compared = gdeval_compared = 0
    for i in range(N_CASES):
        case = make_case(i)
        if case["int_ids"]:
            continue
        # ties at single precision are ties at double
        qrels, run = _case_dicts(case, lambda j, s: float(np.float32(s)))
        if case["empty_query"]:
            qrels["q_empty"], run["q_empty"] = {}, {"d0": 1.0}
        ours = {(m.query_id, str(m.measure)): m.value for m in plugin.iter_calc(measures, qrels, run)}
        theirs = {(m.query_id, str(m.measure)): m.value
                  for m in ir_measures.pytrec_eval.iter_calc(measures, qrels, run)}
        assert ours.keys() == theirs.keys(), i
        for key, value in theirs.items():
            assert ours[key] == pytest.approx(value, abs=1e-12), (i, key)
        compared += len(theirs)
        if all(q.isdigit() for q in [*qrels, *run]):  # gdeval.pl: numeric ids only; it prints 5 decimals
            exp = ir_measures.nDCG(dcg="exp-log2") @ 5
            ours = {m.query_id: m.value for m in plugin.iter_calc([exp], qrels, run)}
            theirs = {m.query_id: m.value for m in ir_measures.gdeval.iter_calc([exp], qrels, run)}
            assert ours.keys() == theirs.keys(), i
            for q, value in theirs.items():
                assert ours[q] == pytest.approx(value, abs=5.1e-6), (i, q)
            gdeval_compared += len(theirs)
    assert compared > 5000 and gdeval_compared > 200


def _case_dicts(case: dict, score) -> tuple[dict, dict]:
    """A random case's qrels and run as ir-measures' dicts: the run's rows with a doc id and a
    score that is a number, each score given by ``score(row number, score)``."""
    qrels: dict = {}
    run: dict = {}
    for q, d, r in case["qrels"]:
        qrels.setdefault(q, {})[d] = r
    for j, (q, d, s) in enumerate(case["run"]):
        if d and not math.isnan(s):
            run.setdefault(q, {})[d] = score(j, s)
    return qrels, run


def test_cli_eval_uses_one_tie_rule_and_names_the_other_providers(tmp_path, capsys):
    # issue 9, item 5: RR@10 beside MRR_zero@10 in the CLI, both by the plugin's engine
    from ndcg_plugin.cli.commands import main
    (tmp_path / "q").write_text("q1 0 d1 1\nq1 0 d2 0\n")
    (tmp_path / "r").write_text("q1 Q0 d1 1 5.0 t\nq1 Q0 d2 2 5.0 t\n")
    assert main(["eval", str(tmp_path / "q"), str(tmp_path / "r"), "RR@10", "MRR_zero@10", "nDCG@2", "P@1",
                 "Judged@2"]) == 0
    out, err = capsys.readouterr()
    # ranking d2, d1 (doc id descending): RR = 1/2; nDCG@2 = (1/log2 3) / 1; P@1 = 0 (the engine too);
    # Judged@2 = 2/2 (both docs are judged; the engine's unjudged family computes it too)
    assert out.splitlines() == ["RR@10\t0.5000", "MRR_zero@10\t0.5000", f"nDCG@2\t{1 / math.log2(3):.4f}",
                                "P@1\t0.0000", "Judged@2\t1.0000"]
    assert err == ""
    assert main(["eval", str(tmp_path / "q"), str(tmp_path / "r"), "RR@10", "--provider", "msmarco"]) == 0
    assert capsys.readouterr().out == "RR@10\t1.0000\n"  # the user's choice of provider is kept


def test_judged_at_k_served_natively():
    """Judged@k by the engine (the unjudged family) against ir-measures' judged provider, per query,
    on the cases above with distinct scores (the judged provider breaks ties by doc id ascending,
    trec_eval's order by doc id descending: docs/measures.md); served only when asked."""
    import ir_measures

    import ndcg_plugin
    plugin = ir_measures.providers.registry["ndcg_plugin"]
    measures = [ir_measures.Judged @ 1, ir_measures.Judged @ 3, ir_measures.Judged @ 20, ir_measures.Judged]
    compared = 0
    for i in range(0, N_CASES, 4):  # a quarter of the cases: enough draws of every kind
        case = make_case(i)
        if case["int_ids"]:
            continue
        qrels, run = _case_dicts(case, lambda j, s: float(s) + j * 1e-6)  # no tie: the two orders differ on ties
        ours = {(m.query_id, str(m.measure)): m.value for m in plugin.iter_calc(measures, qrels, run)}
        theirs = {(m.query_id, str(m.measure)): m.value for m in ir_measures.judged.iter_calc(measures, qrels, run)}
        assert ours.keys() == theirs.keys(), i
        assert all(ours[k] == pytest.approx(v, abs=1e-12) for k, v in theirs.items()), i
        compared += len(theirs)
    assert compared > 100
    assert not any(p.supports(ir_measures.Judged @ 3) for p in ir_measures.DefaultPipeline.providers
                   if getattr(p, "NAME", None) == "ndcg_plugin")
    ndcg_plugin.register(serve_builtins=True)
    try:
        assert ir_measures.DefaultPipeline.providers[0].supports(ir_measures.Judged @ 3)
    finally:
        ndcg_plugin.register()
