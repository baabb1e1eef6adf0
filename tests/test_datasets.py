"""ir-datasets integration: loading by id, offline seeding of a fresh IR_DATASETS_HOME, info,
and every error path (exit status 2, one message, no traceback)."""
from __future__ import annotations

import gzip
import os
import subprocess
import sys

import pytest

from ndcg_plugin import datasets

from .conftest import msmarco_file

DL19 = "msmarco-passage/trec-dl-2019/judged"


def cli(home, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "IR_DATASETS_HOME": str(home)}
    return subprocess.run([sys.executable, "-m", "ndcg_plugin", *args], capture_output=True, text=True, env=env)


def assert_one_line_error(proc, *fragments: str) -> None:
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    for fragment in fragments:
        assert fragment in proc.stderr, (fragment, proc.stderr)


def test_load_qrels_by_id_through_ir_datasets():
    msmarco_file("qrels.dl19-passage.txt")
    table = datasets.load_qrels(DL19)
    assert len(table) == 9260 and table["query_id"].nunique() == 43
    assert datasets.official_measures(DL19) == ["nDCG@10", "RR(rel=2)", "AP(rel=2)"]
    assert datasets.official_measures("msmarco-passage/dev/small") == ["RR@10"]


def test_seed_then_info_on_a_fresh_home(tmp_path):
    qrels, queries = msmarco_file("qrels.dl19-passage.txt"), msmarco_file("queries.dl19-passage.tsv")
    before = cli(tmp_path, "datasets", "info", DL19)
    assert before.returncode == 0 and "qrels: MISSING" in before.stdout
    proc = cli(tmp_path, "datasets", "seed", DL19, "--qrels", str(qrels), "--queries", str(queries))
    assert proc.returncode == 0, proc.stderr
    assert "md5 2f4be390198da108f6845c822e5ada14 matches ir-datasets" in proc.stdout
    assert (tmp_path / "msmarco-passage/trec-dl-2019/qrels").read_bytes() == qrels.read_bytes()
    info = cli(tmp_path, "datasets", "info", DL19)
    assert info.returncode == 0, info.stderr
    assert "official measures: nDCG@10 RR(rel=2) AP(rel=2)" in info.stdout
    assert "9260 judgments, 43 queries, relevance levels {0: 5158, 1: 1601, 2: 1804, 3: 697}" in info.stdout
    assert "43 queries" in info.stdout
    run = cli(tmp_path, "eval", DL19, str(msmarco_file("run.dl19-passage.bm25.trec")), "nDCG@10")
    assert run.stdout == "nDCG@10\t0.5058\n"


def test_seed_refuses_a_wrong_file_unless_forced(tmp_path):
    wrong = msmarco_file("qrels.dev-small.txt")
    proc = cli(tmp_path, "datasets", "seed", DL19, "--qrels", str(wrong))
    assert_one_line_error(proc, "md5 521ff630abe77a3e120417565ff025f1 differs from the "
                                "2f4be390198da108f6845c822e5ada14 ir-datasets records", "--force")
    assert not (tmp_path / "msmarco-passage/trec-dl-2019/qrels").exists()
    forced = cli(tmp_path, "datasets", "seed", DL19, "--qrels", str(wrong), "--force")
    assert forced.returncode == 0 and "placed anyway (--force)" in forced.stdout


def test_seed_without_recorded_md5_checks_counts(tmp_path):
    # dev/small qrels come out of a tar in ir-datasets: no md5 for the file itself
    good = cli(tmp_path, "datasets", "seed", "msmarco-passage/dev/small", "--qrels",
               str(msmarco_file("qrels.dev-small.txt")))
    assert good.returncode == 0 and "7437 judgments, 6980 queries, counts match" in good.stdout
    short = tmp_path / "short.qrels"
    short.write_text("\n".join(msmarco_file("qrels.dev-small.txt").read_text().splitlines()[:100]) + "\n")
    proc = cli(tmp_path / "other", "datasets", "seed", "msmarco-passage/dev/small", "--qrels", str(short))
    assert_one_line_error(proc, "100 judgments, but ir-datasets records 7437")


def test_seed_gzips_a_plain_file_that_ir_datasets_reads_gzipped(tmp_path):
    # TREC DL 2020 queries: ir-datasets reads msmarco-passage/trec-dl-2020/queries.tsv.gz
    plain = tmp_path / "queries.tsv"
    plain.write_text("".join(f"{1000 + i}\tquery number {i}\n" for i in range(200)))
    home = tmp_path / "home"
    proc = cli(home, "datasets", "seed", "msmarco-passage/trec-dl-2020", "--queries", str(plain))
    assert proc.returncode == 0, proc.stderr
    assert "transformed (gzipped), so checked by content: 200 queries, count matches" in proc.stdout
    placed = home / "msmarco-passage/trec-dl-2020/queries.tsv.gz"
    assert gzip.decompress(placed.read_bytes()).decode() == plain.read_text()
    info = cli(home, "datasets", "info", "msmarco-passage/trec-dl-2020")
    assert "queries: present" in info.stdout and "200 queries" in info.stdout
    wrong = tmp_path / "few.tsv"
    wrong.write_text("1\tonly one\n")
    proc = cli(tmp_path / "home2", "datasets", "seed", "msmarco-passage/trec-dl-2020", "--queries", str(wrong))
    assert_one_line_error(proc, "1 queries, but ir-datasets records 200")


def test_missing_data_offline_is_one_message_naming_the_file_and_the_fix(tmp_path):
    proc = cli(tmp_path, "eval", DL19, str(msmarco_file("run.dl19-passage.bm25.trec")), "nDCG@10")
    assert_one_line_error(proc, f"missing file {tmp_path}/msmarco-passage/trec-dl-2019/qrels",
                          f"ndcg-plugin datasets seed {DL19} --qrels FILE")


def test_unknown_dataset_id(tmp_path):
    proc = cli(tmp_path, "eval", "msmarco-passage/no-such-split", "run.trec", "nDCG@10")
    assert_one_line_error(proc, "msmarco-passage/no-such-split", "not an ir-datasets id")
    proc = cli(tmp_path, "datasets", "info", "msmarco-passage/no-such-split")
    assert_one_line_error(proc, "unknown ir-datasets id 'msmarco-passage/no-such-split'")


def test_seed_needs_a_file(tmp_path):
    assert_one_line_error(cli(tmp_path, "datasets", "seed", DL19), "nothing to seed")
    assert_one_line_error(cli(tmp_path, "datasets", "seed", DL19, "--qrels", str(tmp_path / "nope")),
                          "nope")


def test_dataset_without_measures_needs_measures_for_a_file(tmp_path):
    qrels = msmarco_file("qrels.dl19-passage.txt")
    proc = cli(tmp_path, "eval", str(qrels), str(msmarco_file("run.dl19-passage.bm25.trec")))
    assert_one_line_error(proc, "give at least one measure")


@pytest.mark.parametrize("dataset_id", ["msmarco-passage/dev/small", DL19])
def test_locate_matches_the_documented_cache_layout(dataset_id):
    target = datasets.locate(dataset_id, "qrels")
    suffix = {"msmarco-passage/dev/small": "msmarco-passage/dev/small/qrels",
              DL19: "msmarco-passage/trec-dl-2019/qrels"}[dataset_id]
    assert str(target.path).endswith(suffix) and not target.gzipped
