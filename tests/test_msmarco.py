"""MS MARCO end to end, by dataset id, through the CLI, with ir-datasets reading a cache seeded
from ../shared/data (conftest.py): the published DL 2019 BM25 row, trec_eval's per-query
output, and the MS MARCO dev MRR@10 convention."""
from __future__ import annotations

from collections import defaultdict

import pytest

from tests.conftest import msmarco_file
from tests.helpers import run_cli, run_main

DL19 = "msmarco-passage/trec-dl-2019/judged"
DEV = "msmarco-passage/dev/small"


cli = run_cli


def table(stdout: str) -> dict:
    out = {}
    for line in stdout.strip().splitlines():
        measure, value = line.split("\t")
        out[measure] = value
    return out


def test_dl19_bm25_reproduces_the_published_row():
    run = msmarco_file("run.dl19-passage.bm25.trec")
    proc = cli("eval", DL19, str(run), "nDCG@10", "NDCG_lin@10", "NDCG_exp@10", "AP(rel=2)", "R(rel=2)@1000",
               "MRR_zero(rel=2)@10", "HitRate(rel=2)@10")
    assert proc.returncode == 0, proc.stderr
    values = table(proc.stdout)
    # the published Anserini BM25 baseline (shared/data/README.md)
    assert values["nDCG@10"] == "0.5058"
    assert values["AP(rel=2)"] == "0.3013"
    assert values["R(rel=2)@1000"] == "0.7501"
    assert values["NDCG_lin@10"] == values["nDCG@10"]
    assert list(values) == ["nDCG@10", "NDCG_lin@10", "NDCG_exp@10", "AP(rel=2)", "R(rel=2)@1000",
                            "MRR_zero(rel=2)@10", "HitRate(rel=2)@10"]


def test_dl19_per_query_output_equals_trec_eval_for_every_query():
    # trec_eval -q -c -l 2 -m recall.1000 -m ndcg_cut.10,100 -m map_cut.10,100 (shared file)
    expected: dict = defaultdict(dict)
    for line in msmarco_file("run.dl19-passage.bm25.trec_eval.txt").read_text().splitlines():
        name, qid, value = line.split()
        expected[name][qid] = value
    names = {"nDCG@10": "ndcg_cut_10", "NDCG_lin@10": "ndcg_cut_10", "nDCG@100": "ndcg_cut_100",
             "NDCG_lin@100": "ndcg_cut_100", "R(rel=2)@1000": "recall_1000", "AP(rel=2)@10": "map_cut_10",
             "AP(rel=2)@100": "map_cut_100"}
    proc = run_main("eval", DL19, str(msmarco_file("run.dl19-passage.bm25.trec")), *names, "-q")
    assert proc.returncode == 0, proc.stderr
    got: dict = defaultdict(dict)
    for line in proc.stdout.strip().splitlines():
        qid, measure, value = line.split("\t")
        got[names[measure]].setdefault(measure, {})[qid] = value
    for measure, trec_name in names.items():
        ours = got[trec_name][measure]
        assert set(ours) == set(expected[trec_name]), measure  # 43 queries + all
        for qid, value in expected[trec_name].items():
            assert ours[qid] == value, (measure, qid, ours[qid], value)


def _dev_run(tmp_path) -> tuple:
    """A run over the real dev-small qrels placing each query's first relevant passage at a known
    rank r = (i mod 13) + 1 for the i-th query (sorted ids); r = 13 leaves the query out of the run.
    Other docs are ids no qrels has. Returns (path, expected MRR@10 by the official script's rule)."""
    qrels: dict = defaultdict(list)
    for line in msmarco_file("qrels.dev-small.txt").read_text().splitlines():
        qid, _, pid, rel = line.split()
        if int(rel) >= 1:
            qrels[qid].append(pid)
    lines, total = [], 0.0
    for i, qid in enumerate(sorted(qrels)):
        r = i % 13 + 1
        if r == 13:
            continue  # missing from the run: counts 0 in the denominator of all queries
        for rank in range(1, 21):
            pid = qrels[qid][0] if rank == r else f"none-{qid}-{rank}"
            lines.append(f"{qid}\t{pid}\t{rank}")
        total += 1 / r if r <= 10 else 0.0
    path = tmp_path / "dev.small.run.tsv"
    path.write_text("\n".join(lines) + "\n")
    return path, total / len(qrels)


def test_msmarco_dev_mrr10_convention_is_mrr_zero_at_10(tmp_path):
    run, expected = _dev_run(tmp_path)
    proc = run_main("eval", DEV, str(run), "-p", "-1")  # no measures: the official RR@10, plus MRR_zero@10
    assert proc.returncode == 0, proc.stderr
    assert "official measures of msmarco-passage/dev/small: RR@10" in proc.stderr
    assert "MRR_zero@10" in proc.stderr
    values = {k: float(v) for k, v in table(proc.stdout).items()}
    assert list(values) == ["RR@10", "MRR_zero@10"]
    assert values["MRR_zero@10"] == pytest.approx(expected, abs=1e-12)
    assert values["RR@10"] == pytest.approx(values["MRR_zero@10"], abs=1e-12)


def test_msmarco_dev_by_query_counts_queries_missing_from_the_run(tmp_path):
    run, expected = _dev_run(tmp_path)
    proc = run_main("eval", DEV, str(run), "MRR_zero@10", "MRR_ignore@10", "-q", "-p", "-1")
    assert proc.returncode == 0, proc.stderr
    rows = [line.split("\t") for line in proc.stdout.strip().splitlines()]
    zero = {q: float(v) for q, m, v in rows if m == "MRR_zero@10" and q != "all"}
    ignore = {q: float(v) for q, m, v in rows if m == "MRR_ignore@10" and q != "all"}
    assert len(zero) == 6980  # every qrels query, those missing from the run included
    assert sum(zero.values()) / 6980 == pytest.approx(expected, abs=1e-12)
    assert all(v > 0 for v in ignore.values()) and len(ignore) == sum(v > 0 for v in zero.values())
