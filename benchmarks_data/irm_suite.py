"""Run ir-measures' own test suite without and with ``import ndcg_plugin`` and compare outcomes.

ir-measures' tests are not part of this repository (nor of its sdist, which lacks their data
files): give the ``tests`` folder of an ir_measures checkout at the installed version's tag::

    git clone --depth 1 --branch v0.4.3 https://github.com/terrierteam/ir_measures /tmp/ir_measures
    python benchmarks_data/irm_suite.py /tmp/ir_measures/tests --object-strings

Each mode runs ``python -m pytest -rA TESTS`` in its own process; the plugin is imported with
``-p ndcg_plugin`` (as ``import ndcg_plugin`` at start-up), or, with ``--serve-builtins``, a
third run also calls ``ndcg_plugin.register(serve_builtins=True)`` (for information: that mode
changes built-ins on purpose). The comparison requires every test to have the same outcome with
and without the plugin; with it, ir-measures' pairwise provider comparison
(``test_measures.py``) also compares the ``ndcg_plugin`` provider with the others, as extra
passing subtests. ``--object-strings`` makes pandas >= 3 build object (not ``str``) columns,
which ranx 0.3.21 requires; it applies to every run alike. Exit status 0 when the outcomes
agree, 1 otherwise.
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

OUTCOME = re.compile(r"^(PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS)\s+(\S+)")
SUBFAILED = re.compile(r"^SUBFAILED\((.*?)\)\s+(\S+)")
SUMMARY = re.compile(r"^=*\s*(\d+ (?:passed|failed|errors?).*?) in [\d.]+s")

SETUP_MODULES = {
    "_irm_suite_object_strings": "import pandas as pd\npd.set_option('future.infer_string', False)\n",
    "_irm_suite_serve_builtins": "import ndcg_plugin\nndcg_plugin.register(serve_builtins=True)\n",
}


def run_suite(tests: Path, plugins: list[str], setup_dir: str) -> dict:
    """One pytest run: per-test outcomes, failed subtests and the summary line."""
    cmd = [sys.executable, "-m", "pytest", "-q", "-rA", "-p", "no:cacheprovider", "-o", "addopts="]
    for p in plugins:
        cmd += ["-p", p]
    cmd.append(str(tests))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [setup_dir, os.environ.get("PYTHONPATH")])))
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=tests.parent, env=env, check=False)
    elapsed = time.perf_counter() - start
    outcomes, subfailed, summary = {}, set(), None
    for line in proc.stdout.splitlines():
        if m := OUTCOME.match(line):
            outcomes[m.group(2)] = m.group(1)
        elif m := SUBFAILED.match(line):
            subfailed.add((m.group(2), m.group(1)))
        elif m := SUMMARY.search(line):
            summary = m.group(1)
    if summary is None:
        tail = proc.stdout[-2000:] + proc.stderr[-2000:]
        raise SystemExit(f"pytest gave no summary (exit {proc.returncode}):\n{tail}")
    return {"outcomes": outcomes, "subfailed": subfailed, "summary": summary, "seconds": elapsed}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("tests", type=Path, help="the tests folder of an ir_measures checkout at the installed version")
    ap.add_argument("--object-strings", action="store_true",
                    help="pandas >= 3: object columns for strings (ranx 0.3.21 refuses the str dtype)")
    ap.add_argument("--serve-builtins", action="store_true",
                    help="also run with ndcg_plugin.register(serve_builtins=True), for information")
    args = ap.parse_args(argv)
    if not (args.tests / "test_providers.py").is_file():
        ap.error(f"{args.tests} does not look like ir_measures' tests folder (no test_providers.py)")
    import ir_measures
    print(f"ir-measures {ir_measures.__version__}, tests from {args.tests}")
    with tempfile.TemporaryDirectory() as setup_dir:
        for name, text in SETUP_MODULES.items():
            Path(setup_dir, f"{name}.py").write_text(text)
        base = ["_irm_suite_object_strings"] if args.object_strings else []
        modes = {"without the plugin": base, "with import ndcg_plugin": [*base, "ndcg_plugin"]}
        if args.serve_builtins:
            modes["with serve_builtins=True"] = [*base, "_irm_suite_serve_builtins"]
        results = {}
        for label, plugins in modes.items():
            results[label] = res = run_suite(args.tests, plugins, setup_dir)
            print(f"{label:28s} {res['summary']}  ({res['seconds']:.0f} s)")
    plain, plugin = results["without the plugin"], results["with import ndcg_plugin"]
    changed = sorted(t for t in set(plain["outcomes"]) | set(plugin["outcomes"])
                     if plain["outcomes"].get(t) != plugin["outcomes"].get(t))
    new_subfailures = sorted(plugin["subfailed"] - plain["subfailed"])
    for t in changed:
        print(f"  outcome changed: {t}: {plain['outcomes'].get(t)} -> {plugin['outcomes'].get(t)}")
    for t, params in new_subfailures:
        print(f"  subtest failing only with the plugin: {t} [{params}]")
    same = not changed and not new_subfailures
    print("same outcomes with and without the plugin" if same else "OUTCOMES DIFFER")
    if args.serve_builtins:
        serve = results["with serve_builtins=True"]
        for t in sorted(serve["outcomes"]):
            if serve["outcomes"][t] != plain["outcomes"].get(t):
                print(f"  (serve_builtins) {t}: {plain['outcomes'].get(t)} -> {serve['outcomes'][t]}")
        for t, params in sorted(serve["subfailed"] - plain["subfailed"]):
            print(f"  (serve_builtins) subtest failing: {t} [{params}]")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
