"""The benchmark refuses to report a time for a tool whose numbers disagree unexplained."""
from __future__ import annotations

import importlib.util

from tests.conftest import ROOT


def load_bench():
    spec = importlib.util.spec_from_file_location("bench", ROOT / "benchmarks_data" / "bench.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_agreement_check_flags_unexplained_differences():
    bench = load_bench()
    ok, notes = bench.agree("tool", [("a", 0.5, 0.5 + 1e-12, 1e-9, None)])
    assert ok and "=" in notes[0]
    ok, notes = bench.agree("tool", [("a", 0.5, 0.6, 1e-9, None)])
    assert not ok and "DISAGREES" in notes[0]
    ok, notes = bench.agree("tool", [("a", 0.5, 0.6, 1e-9, "ties are ordered differently")])
    assert ok and "ties are ordered differently" in notes[0]


def test_parse_values_reads_both_output_layouts():
    bench = load_bench()
    assert bench.parse_values("NDCG_lin@10\t0.25\nndcg_cut_10\tall\t0.5\ntime\tinproc\t1.5\n") == {
        "NDCG_lin@10": 0.25, "ndcg_cut_10": 0.5, "time:inproc": 1.5}
