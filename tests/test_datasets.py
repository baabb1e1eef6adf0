"""ir-datasets integration: loading by id, offline seeding of a fresh IR_DATASETS_HOME, info,
and every error path (exit status 2, one message, no traceback)."""
from __future__ import annotations

import gzip
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ndcg_plugin.datasets import load as datasets
from tests.conftest import msmarco_file
from tests.helpers import run_cli, run_main

DL19 = "msmarco-passage/trec-dl-2019/judged"


def cli(home, *args: str) -> subprocess.CompletedProcess:
    return run_cli(*args, env={"IR_DATASETS_HOME": str(home)})


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
    qrels = msmarco_file("qrels.dl19-passage.txt")
    before = cli(tmp_path, "datasets", "info", DL19)
    assert before.returncode == 0 and "qrels: MISSING" in before.stdout
    proc = cli(tmp_path, "datasets", "seed", DL19, "--qrels", str(qrels))
    assert proc.returncode == 0, proc.stderr
    assert "md5 2f4be390198da108f6845c822e5ada14 is the official 2019qrels-pass.txt" in proc.stdout
    assert (tmp_path / "msmarco-passage/trec-dl-2019/qrels").read_bytes() == qrels.read_bytes()
    info = cli(tmp_path, "datasets", "info", DL19)
    assert info.returncode == 0, info.stderr
    assert "official measures: nDCG@10 RR(rel=2) AP(rel=2)" in info.stdout
    assert "9260 judgments, 43 queries, relevance levels {0: 5158, 1: 1601, 2: 1804, 3: 697}" in info.stdout
    run = cli(tmp_path, "eval", DL19, str(msmarco_file("run.dl19-passage.bm25.trec")), "nDCG@10")
    assert run.stdout == "nDCG@10\t0.5058\n"


def official_dl19_queries(tmp_path) -> Path:
    """A stand-in for the official msmarco-test2019-queries.tsv: 200 queries, the count
    ir-datasets records for msmarco-passage/trec-dl-2019 (its md5 is of the .gz, not in shared/)."""
    path = tmp_path / "msmarco-test2019-queries.tsv"
    path.write_text("".join(f"{1000 + i}\tquery number {i}\n" for i in range(200)))
    return path


def test_seed_judged_with_the_43_query_file_is_refused_and_damages_nothing(tmp_path):
    home = tmp_path / "home"
    proc = cli(home, "datasets", "seed", DL19, "--queries", str(msmarco_file("queries.dl19-passage.tsv")))
    assert_one_line_error(proc, "43 queries, but ir-datasets records 200 for msmarco-passage/trec-dl-2019",
                          "msmarco-test2019-queries.tsv.gz", "queries are optional for evaluation")
    assert not (home / "msmarco-passage/trec-dl-2019/queries.tsv").exists()
    queries = str(msmarco_file("queries.dl19-passage.tsv"))
    assert_one_line_error(cli(home, "datasets", "seed", DL19, "--queries", queries, "--force"), "not even with --force")
    assert not (home / "msmarco-passage/trec-dl-2019/queries.tsv").exists()


def test_seed_judged_accepts_the_official_200_query_file_and_the_parent_keeps_200(tmp_path):
    home = tmp_path / "home"
    proc = cli(home, "datasets", "seed", DL19, "--queries", str(official_dl19_queries(tmp_path)))
    assert proc.returncode == 0, proc.stderr
    assert "200 queries, count matches" in proc.stdout
    count = subprocess.run([sys.executable, "-c", "import ir_datasets; print(sum(1 for _ in ir_datasets.load("
                            "'msmarco-passage/trec-dl-2019').queries_iter()))"], capture_output=True, text=True,
                           env={**os.environ, "IR_DATASETS_HOME": str(home)})
    assert count.stdout.strip() == "200", count.stderr


def test_seed_official_dl2020_queries_for_the_judged_id(tmp_path):
    plain = tmp_path / "msmarco-test2020-queries.tsv"
    plain.write_text("".join(f"{2000 + i}\tquery {i}\n" for i in range(200)))
    home = tmp_path / "home"
    proc = cli(home, "datasets", "seed", "msmarco-passage/trec-dl-2020/judged", "--queries", str(plain))
    assert proc.returncode == 0, proc.stderr
    assert gzip.decompress((home / "msmarco-passage/trec-dl-2020/queries.tsv.gz").read_bytes()) == plain.read_bytes()


def test_seed_accepts_a_crlf_copy_of_the_official_qrels_once_normalised(tmp_path):
    crlf = tmp_path / "qrels.crlf"
    original = msmarco_file("qrels.dl19-passage.txt").read_bytes()
    crlf.write_bytes(original.replace(b"\n", b"\r\n"))
    proc = cli(tmp_path / "home", "datasets", "seed", DL19, "--qrels", str(crlf))
    assert proc.returncode == 0, proc.stderr
    assert "CRLF line ends made LF: md5 2f4be390198da108f6845c822e5ada14 then matches" in proc.stdout
    assert (tmp_path / "home/msmarco-passage/trec-dl-2019/qrels").read_bytes() == original


def test_seed_writes_through_a_temporary_file_with_readable_permissions(tmp_path):
    # in a process of its own: ir-datasets reads IR_DATASETS_HOME once, at import
    script = f"""
import os
from ndcg_plugin.datasets import load as datasets, seed as dataset_seed
os.umask(0o022)
placed = list(dataset_seed.seed({DL19!r}, qrels={str(msmarco_file("qrels.dl19-passage.txt"))!r}))
print(oct(placed[0].path.stat().st_mode & 0o777), sorted(p.name for p in placed[0].path.parent.iterdir()))
def interrupted(*args, **kwargs):
    raise KeyboardInterrupt
os.replace = interrupted
target = datasets.locate("msmarco-passage/dev/small", "qrels").path
try:
    list(dataset_seed.seed("msmarco-passage/dev/small", qrels={str(msmarco_file("qrels.dev-small.txt"))!r}))
except KeyboardInterrupt:
    print(target.exists(), sorted(os.listdir(target.parent)))
"""
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env={**os.environ, "IR_DATASETS_HOME": str(tmp_path / "home")})
    assert proc.returncode == 0, proc.stderr
    permissions, interrupted = proc.stdout.splitlines()
    assert permissions == "0o644 ['qrels']"  # readable by others; no temporary file left
    assert interrupted == "False []"  # an interrupted seed leaves nothing, not even half a file


def test_seed_reports_what_it_placed_before_an_error(tmp_path):
    proc = cli(tmp_path, "datasets", "seed", DL19, "--qrels", str(msmarco_file("qrels.dl19-passage.txt")),
               "--queries", str(msmarco_file("queries.dl19-passage.tsv")))
    assert proc.returncode == 2
    assert "qrels: placed" in proc.stdout
    assert "placed before this error: the qrels at" in proc.stderr and "Traceback" not in proc.stderr


def test_the_private_ir_datasets_layout_is_read_as_the_pinned_version_has_it():
    # datasets.stream_layout is the one place that reads ir-datasets' private attributes
    import ir_datasets
    for dataset_id, kind, wrapped in [(DL19, "queries", True), (DL19, "qrels", False),
                                      ("msmarco-passage/dev/small", "qrels", False)]:
        found = datasets.stream_layout(datasets.dataset_handler(dataset_id, kind))
        assert found is not None and found[1] is wrapped, (ir_datasets.__version__, dataset_id, kind)
    target = datasets.locate(DL19, "queries")
    assert target.owner == "msmarco-passage/trec-dl-2019" and target.download == "msmarco-test2019-queries.tsv.gz"


def test_seed_refuses_a_wrong_file_unless_forced(tmp_path):
    wrong = msmarco_file("qrels.dev-small.txt")
    proc = cli(tmp_path, "datasets", "seed", DL19, "--qrels", str(wrong))
    assert_one_line_error(proc, "md5 521ff630abe77a3e120417565ff025f1 is not what ir-datasets records",
                          "a file with md5 2f4be390198da108f6845c822e5ada14", "--force")
    assert not (tmp_path / "msmarco-passage/trec-dl-2019/qrels").exists()
    # the judged subset reads its parent's file: --force does not write over it (it would change the
    # parent's numbers too); for the parent itself, --force places it
    refused = cli(tmp_path, "datasets", "seed", DL19, "--qrels", str(wrong), "--force")
    assert_one_line_error(refused, "would change msmarco-passage/trec-dl-2019 too", "not even with --force")
    assert not (tmp_path / "msmarco-passage/trec-dl-2019/qrels").exists()
    forced = cli(tmp_path, "datasets", "seed", "msmarco-passage/trec-dl-2019", "--qrels", str(wrong), "--force")
    assert forced.returncode == 0 and "(--force)" in forced.stdout


def test_seed_without_recorded_md5_checks_counts(tmp_path):
    # dev/small qrels come out of a tar in ir-datasets: no md5 for the file itself
    good = cli(tmp_path, "datasets", "seed", "msmarco-passage/dev/small", "--qrels",
               str(msmarco_file("qrels.dev-small.txt")))
    assert good.returncode == 0 and "7437 judgments, 6980 queries, counts match" in good.stdout
    short = tmp_path / "short.qrels"
    short.write_text("\n".join(msmarco_file("qrels.dev-small.txt").read_text().splitlines()[:100]) + "\n")
    proc = cli(tmp_path / "other", "datasets", "seed", "msmarco-passage/dev/small", "--qrels", str(short))
    assert_one_line_error(proc, "100 judgments, 93 queries, but ir-datasets records 7437 judgments")


def test_seed_gzips_a_plain_file_that_ir_datasets_reads_gzipped(tmp_path):
    # TREC DL 2020 queries: ir-datasets reads msmarco-passage/trec-dl-2020/queries.tsv.gz
    plain = tmp_path / "queries.tsv"
    plain.write_text("".join(f"{1000 + i}\tquery number {i}\n" for i in range(200)))
    home = tmp_path / "home"
    proc = cli(home, "datasets", "seed", "msmarco-passage/trec-dl-2020", "--queries", str(plain))
    assert proc.returncode == 0, proc.stderr
    assert "checked by content: 200 queries, count matches" in proc.stdout
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


# The three tests below are refused before any file of IR_DATASETS_HOME is read or written (an id
# ir-datasets does not know, a seed without a file, a file without measures): their subject is the
# message and the status, so the command runs in this process (run_main; was one process each with
# a fresh home). What a process reads from IR_DATASETS_HOME at start stays with the tests above.

def test_unknown_dataset_id(tmp_path):
    proc = run_main("eval", "msmarco-passage/no-such-split", "run.trec", "nDCG@10")
    assert_one_line_error(proc, "msmarco-passage/no-such-split", "not an ir-datasets id")
    proc = run_main("datasets", "info", "msmarco-passage/no-such-split")
    assert_one_line_error(proc, "unknown ir-datasets id 'msmarco-passage/no-such-split'")


def test_seed_needs_a_file(tmp_path):
    assert_one_line_error(run_main("datasets", "seed", DL19), "nothing to seed")
    assert_one_line_error(run_main("datasets", "seed", DL19, "--qrels", str(tmp_path / "nope")), "nope")


def test_dataset_without_measures_needs_measures_for_a_file(tmp_path):
    qrels = msmarco_file("qrels.dl19-passage.txt")
    proc = run_main("eval", str(qrels), str(msmarco_file("run.dl19-passage.bm25.trec")))
    assert_one_line_error(proc, "give at least one measure")


@pytest.mark.parametrize("dataset_id", ["msmarco-passage/dev/small", DL19])
def test_locate_matches_the_documented_cache_layout(dataset_id):
    target = datasets.locate(dataset_id, "qrels")
    suffix = {"msmarco-passage/dev/small": "msmarco-passage/dev/small/qrels",
              DL19: "msmarco-passage/trec-dl-2019/qrels"}[dataset_id]
    assert str(target.path).endswith(suffix) and not target.gzipped


def test_provider_msmarco_on_a_dataset_id_keeps_the_measures_it_computes(tmp_path):
    # docs/msmarco.md: `eval msmarco-passage/dev/small RUN --provider msmarco`. The plugin's
    # counterpart MRR_zero@10 is left out with a note, not refused as unsupported.
    qrels = msmarco_file("qrels.dev-small.txt")
    lines = qrels.read_text().splitlines()
    n_queries = len({line.split()[0] for line in lines})
    run = tmp_path / "run.trec"
    # three judged queries, each with an unjudged passage above its relevant one: RR 1/2 each;
    # every other query of dev/small is missing from the run and counts 0 (the MS MARCO script)
    run.write_text("".join(f"{q} Q0 {d} 2 1.0 x\n{q} Q0 unjudged{i} 1 5.0 x\n"
                           for i, (q, _, d, _) in enumerate(line.split() for line in lines[:3])))
    proc = run_main("eval", "msmarco-passage/dev/small", str(run), "--provider", "msmarco", "-p", "8")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == f"RR@10\t{3 * 0.5 / n_queries:.8f}\n"
    assert "MRR_zero@10 left out: --provider msmarco does not compute it" in proc.stderr
    named = run_main("eval", "msmarco-passage/dev/small", str(run), "MRR_zero@10", "--provider", "msmarco")
    assert_one_line_error(named, "provider msmarco does not compute MRR_zero@10")
