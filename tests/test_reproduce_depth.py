"""reproduce runs: --depth (repro_eval's top 1,000 per topic), JSON lines' inf/-inf/nan, and ER
over an original effect of exactly zero."""
from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from ndcg_plugin import reproduce
from ndcg_plugin.cli import reproduce as writers
from tests import helpers
from tests.test_reproduce import value, write_qrels, write_run


def deep_runs(tmp_path, docs: int = 1005) -> dict:
    """Three topics of ``docs`` documents; each run's relevant documents below rank 1,000 on some topics."""
    rng = np.random.default_rng(3)
    qrels = {t: {f"{t}-rel{i}": 1 for i in range(4)} for t in ("t1", "t2", "t3")}
    paths = {"qrels": write_qrels(tmp_path / "qrels", qrels)}
    for name in ("ob", "oa", "rb", "ra"):
        run = {}
        for t in qrels:
            ranks = list(rng.choice(1000, size=3, replace=False)) + [1002 if t == "t1" else int(rng.integers(0, 1000))]
            ids = [f"{t}-n{i}" for i in range(docs)]
            for i, r in enumerate(ranks):  # where the relevant ones go (0-based); t1's last one below 1,000
                ids[r] = f"{t}-rel{i}"
            run[t] = [(d, float(docs - k)) for k, d in enumerate(ids)]
        paths[name] = write_run(tmp_path / name, run)
    return paths


def cut_by_hand(path, tmp_path, depth: int):
    """The run file with each topic's first ``depth`` lines (it is written in trec_eval's order)."""
    seen: dict = {}
    out = tmp_path / (path.name + f".top{depth}")
    with open(path) as f, open(out, "w") as g:
        for line in f:
            t = line.split()[0]
            seen[t] = seen.get(t, 0) + 1
            if seen[t] <= depth:
                g.write(line)
    return out


MEASURES = ["nDCG", "AP", "R@2000", "NumRet"]


def test_depth_keeps_each_topics_top_1000_as_files_cut_by_hand(tmp_path):
    p = deep_runs(tmp_path)
    runs = [p["ob"], p["oa"], p["rb"], p["ra"]]
    default = reproduce.runs(p["qrels"], *runs, MEASURES, cutoffs=[10])
    every = reproduce.runs(p["qrels"], *runs, MEASURES, cutoffs=[10], depth=None)
    cut = reproduce.runs(p["qrels"], *(cut_by_hand(r, tmp_path, 1000) for r in runs), MEASURES, cutoffs=[10],
                         depth=None)
    pd.testing.assert_frame_equal(default, cut)
    assert value(default, statistic="ARP", run="baseline", version="original", measure="nDCG") < \
        value(every, statistic="ARP", run="baseline", version="original", measure="nDCG")
    # 3 topics x 1,000 documents: NumRet says the cut happened; every document: 3 x 1,005
    assert value(default, statistic="ARP", run="baseline", version="original", measure="NumRet") == 3000
    assert value(every, statistic="ARP", run="baseline", version="original", measure="NumRet") == 3015
    small = reproduce.runs(p["qrels"], *runs, MEASURES, cutoffs=[10], depth=5)
    assert value(small, statistic="ARP", run="baseline", version="original", measure="NumRet") == 15


def test_depth_numbers_equal_repro_eval_which_trims_to_1000(tmp_path):
    pytest.importorskip("repro_eval")
    from tests.test_reproduce import repro_eval_report
    p = deep_runs(tmp_path)
    frame = reproduce.runs(p["qrels"], p["ob"], p["oa"], p["rb"], p["ra"], ["nDCG", "AP"], cutoffs=[10])
    theirs = repro_eval_report(p["qrels"], p["ob"], p["oa"], p["rb"], p["ra"], [10])
    for version, v in (("original", "orig"), ("reproduced", "rep")):
        for run in ("baseline", "advanced"):
            for m in ("nDCG", "AP"):
                ours = value(frame, statistic="ARP", run=run, version=version, measure=m)
                assert ours == pytest.approx(theirs["arp"][(v, run)][m], rel=1e-12), (version, run, m)


def test_the_report_states_its_depth(tmp_path):
    p = deep_runs(tmp_path)
    args = ["reproduce", "runs", str(p["qrels"]), *(str(p[k]) for k in ("ob", "oa", "rb", "ra")), "-m", "nDCG",
            "--cutoffs", "10"]
    default = helpers.run_main(*args)
    assert default.returncode == 0, default.stderr
    assert "each topic's top 1,000 documents in trec_eval's order (repro_eval's depth: --depth)" in default.stdout
    every = helpers.run_main(*args, "--depth", "0")
    assert "every document of each topic (--depth 0)" in every.stdout
    bad = helpers.run_main(*args, "--depth", "-1")
    assert bad.returncode == 2 and "--depth" in bad.stderr.strip().splitlines()[-1]


def test_jsonl_writes_inf_minus_inf_and_nan_as_strings():
    frame = pd.DataFrame({"statistic": ["ER", "ER", "KTU", "ARP"], "measure": ["a", "b", None, "c"],
                          "value": [math.inf, -math.inf, math.nan, 0.5], "topics": [None, None, 0, 3]})
    lines = [json.loads(x) for x in writers.to_jsonl(frame).splitlines()]
    assert [x["value"] for x in lines] == ["inf", "-inf", "nan", 0.5]
    assert "topics" not in lines[0] and lines[2]["topics"] == 0


def zero_effect_runs(tmp_path) -> dict:
    """By hand, P@10 over two topics: original baseline 0.3, 0.2; original advanced 0.4, 0.1 (ARP 0.25
    both: no original effect); reproduced baseline as the original; reproduced advanced 0.5, 0.2
    (ARP 0.35: an effect of +0.1). Per topic the original differences are +0.1 and -0.1, whose float
    mean is 2.8e-17 ((0.4 - 0.3) + (0.1 - 0.2) = 0.10000000000000003 - 0.1), not 0."""
    qrels = {t: {f"{t}-r{i}": 1 for i in range(6)} for t in ("t1", "t2")}

    def run(hits: dict) -> dict:
        return {t: [(f"{t}-r{i}" if i < h else f"{t}-n{i}", float(10 - i)) for i in range(10)] for t, h in hits.items()}
    paths = {"qrels": write_qrels(tmp_path / "qrels", qrels)}
    for name, hits in (("ob", {"t1": 3, "t2": 2}), ("oa", {"t1": 4, "t2": 1}), ("rb", {"t1": 3, "t2": 2}),
                       ("ra", {"t1": 5, "t2": 2})):
        paths[name] = write_run(tmp_path / name, run(hits))
    return paths


def test_er_over_an_original_effect_of_exactly_zero_is_inf_and_said(tmp_path):
    p = zero_effect_runs(tmp_path)
    frame = reproduce.runs(p["qrels"], p["ob"], p["oa"], p["rb"], p["ra"], ["P@10"], cutoffs=[10])
    assert value(frame, statistic="ARP", run="baseline", version="original", measure="P@10") == 0.25
    assert value(frame, statistic="ARP", run="advanced", version="original", measure="P@10") == 0.25
    assert value(frame, statistic="ER", measure="P@10") == math.inf  # 0.1 / 0: no original effect
    args = ["reproduce", "runs", str(p["qrels"]), *(str(p[k]) for k in ("ob", "oa", "rb", "ra")), "-m", "P@10",
            "--cutoffs", "10"]
    md = helpers.run_main(*args)
    assert "ER of P@10: the original runs' ARPs are equal (no original effect to reproduce)" in md.stdout
    jsonl = helpers.run_main(*args, "-o", "jsonl")
    er = [json.loads(x) for x in jsonl.stdout.splitlines() if '"ER"' in x]
    assert er[0]["value"] == "inf"


def test_repro_eval_gives_er_a_finite_value_from_the_rounding_of_the_mean_of_differences(tmp_path):
    # the documented difference: repro_eval divides by the mean of per-topic differences, 2.8e-17 here
    pytest.importorskip("repro_eval")
    from tests.test_reproduce import repro_eval_report
    p = zero_effect_runs(tmp_path)
    theirs = repro_eval_report(p["qrels"], p["ob"], p["oa"], p["rb"], p["ra"], [10])["er"]["P@10"]
    assert math.isfinite(theirs) and abs(theirs) > 1e14
