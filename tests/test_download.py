"""ir-datasets downloads a dataset's missing qrels when `eval` is given its id, and a failed
download ends in one line (exit status 2, no traceback) naming the file and the `seed` command.

No test reaches the internet (conftest.py sends every request to a closed local port). The
downloads here come from a file server on 127.0.0.1: a dataset is registered, in the CLI's own
process, the way ir-datasets defines its datasets (a TrecQrels whose Download has a URL and an
expected md5), with its URL pointing to that server."""
from __future__ import annotations

import functools
import hashlib
import http.server
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tests import helpers
from tests.conftest import closed_port, msmarco_file

DATASET = "ndcg-plugin-test/served"

# the CLI, after registering DATASET: qrels downloaded from URL, expected to have md5 MD5
CLI = f"""
import sys

import ir_datasets
from ir_datasets.datasets.base import Dataset
from ir_datasets.formats import TrecQrels
from ir_datasets.util import Download, RequestsDownload

url, md5, *argv = sys.argv[1:]
cache = str(ir_datasets.util.home_path() / "ndcg-plugin-test" / "qrels")
download = Download([RequestsDownload(url)], expected_md5=md5, cache_path=cache)
ir_datasets.registry.register({DATASET!r}, Dataset(TrecQrels(download, {{0: "not relevant", 1: "relevant"}})))

from ndcg_plugin.cli.commands import main
sys.exit(main(argv))
"""

# q1: first relevant document at rank 2; q2: at rank 3; q3: not in the run
QRELS = b"q1 0 d1 1\nq1 0 d2 0\nq1 0 d5 1\nq2 0 d3 1\nq3 0 d9 1\n"
RUN = "q1 Q0 d2 1 3.0 r\nq1 Q0 d1 2 2.0 r\nq2 Q0 d4 1 3.0 r\nq2 Q0 d5 2 2.0 r\nq2 Q0 d3 3 1.0 r\n"
# MRR_zero@10 = (1/2 + 1/3 + 0) / 3 = 0.27778; HitRate@2 = (1 + 0 + 0) / 3 = 0.33333
EXPECTED = "MRR_zero@10\t0.2778\nHitRate@2\t0.3333\n"


class Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def server(tmp_path):
    """A file server on 127.0.0.1 for the files in tmp_path/served: (its base URL, that folder)."""
    root = tmp_path / "served"
    root.mkdir()
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(root)))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield httpd, f"http://127.0.0.1:{httpd.server_port}", root
    httpd.shutdown()
    httpd.server_close()
    thread.join()


def run_cli(home: Path, url: str, md5: str, *args: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", CLI, url, md5, *args], capture_output=True, text=True,
                          env={**os.environ, "IR_DATASETS_HOME": str(home), **env})


def eval_args(tmp_path: Path) -> list[str]:
    run = tmp_path / "run.trec"
    run.write_text(RUN)
    return ["eval", DATASET, str(run), "MRR_zero@10", "HitRate@2"]


def cache_folder(home: Path) -> list[str]:
    folder = home / "ndcg-plugin-test"
    return sorted(os.listdir(folder)) if folder.exists() else []


def assert_one_line_error(proc, *fragments: str) -> str:
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr and "[WARNING]" not in proc.stderr, proc.stderr
    lines = [line.strip() for line in proc.stderr.replace("\r", "\n").splitlines() if line.strip()]
    assert lines and lines[-1].startswith("ndcg-plugin: error: "), proc.stderr
    for fragment in fragments:
        assert fragment in lines[-1], (fragment, lines[-1])
    return lines[-1]


def test_missing_qrels_are_downloaded_by_ir_datasets_then_evaluated(tmp_path, server):
    httpd, base, root = server
    (root / "qrels").write_bytes(QRELS)
    home = tmp_path / "home"
    args = eval_args(tmp_path)
    proc = run_cli(home, f"{base}/qrels", hashlib.md5(QRELS).hexdigest(), *args)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == EXPECTED
    assert f"[starting] {base}/qrels" in proc.stderr  # ir-datasets' own progress, on stderr
    assert (home / "ndcg-plugin-test" / "qrels").read_bytes() == QRELS  # placed by ir-datasets
    assert cache_folder(home) == ["qrels"]
    httpd.shutdown()  # the second time, from the cache: no server needed, nothing downloaded
    again = run_cli(home, f"{base}/qrels", hashlib.md5(QRELS).hexdigest(), *args)
    assert again.returncode == 0 and again.stdout == EXPECTED and again.stderr == "", again.stderr


def test_a_failed_download_is_one_line_naming_the_file_and_the_seed_command(tmp_path):
    home = tmp_path / "home"
    url = f"http://127.0.0.1:{closed_port()}/qrels"  # no server there: as offline
    # retries too: ir-datasets' retry and failure messages are held back for the one line
    proc = run_cli(home, url, hashlib.md5(QRELS).hexdigest(), *eval_args(tmp_path), IR_DATASETS_DL_TRIES="3")
    assert_one_line_error(proc, f"missing file {home}/ndcg-plugin-test/qrels",
                          f"ir-datasets could not download them (ConnectionError for {url})",
                          f"place a local copy with: ndcg-plugin datasets seed {DATASET} --qrels FILE")
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert cache_folder(home) == []


def test_a_download_with_the_wrong_md5_is_one_line_and_places_nothing(tmp_path, server):
    _, base, root = server
    (root / "qrels").write_bytes(QRELS.replace(b"d9", b"d8"))  # not the file whose md5 is expected
    home = tmp_path / "home"
    expected, got = hashlib.md5(QRELS).hexdigest(), hashlib.md5(QRELS.replace(b"d9", b"d8")).hexdigest()
    proc = run_cli(home, f"{base}/qrels", expected, *eval_args(tmp_path))
    assert_one_line_error(proc, f"ir-datasets downloaded the qrels of {DATASET}, but not the file it expects",
                          f"Expected md5 hash to be {expected} but got {got}",
                          f"nothing was placed at {home}/ndcg-plugin-test/qrels",
                          f"ndcg-plugin datasets seed {DATASET} --qrels FILE")
    # before the line, only ir-datasets' progress of the download
    progress = proc.stderr.replace("\r", "\n").strip().splitlines()[:-1]
    assert all(line.startswith(("[INFO] [starting]", "[INFO] [finished]", f"{base}/qrels")) or not line.strip()
               for line in progress), proc.stderr
    assert cache_folder(home) == []  # no file, no temporary file


@pytest.mark.parametrize("dataset_id, urls", [
    ("msmarco-passage/trec-dl-2019/judged", ["https://trec.nist.gov/data/deep/2019qrels-pass.txt",
                                             "https://mirror.ir-datasets.com/2f4be390198da108f6845c822e5ada14"]),
    ("msmarco-passage/dev/small", ["https://msmarco.z22.web.core.windows.net/msmarcoranking/"
                                   "collectionandqueries.tar.gz"]),
])
def test_a_real_dataset_id_asks_ir_datasets_to_download_from_its_sources(tmp_path, dataset_id, urls):
    # conftest.py's proxy refuses every connection: each source ir-datasets records is tried and
    # named (for DL 2019 two: ir-datasets raises them together, as datasets._source_errors reads)
    proc = helpers.run_cli("eval", dataset_id, str(msmarco_file("run.dl19-passage.bm25.trec")), "MRR_zero@10",
                           env={"IR_DATASETS_HOME": str(tmp_path)})
    line = assert_one_line_error(proc, "ir-datasets could not download them",
                                 f"ndcg-plugin datasets seed {dataset_id} --qrels FILE")
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr  # not its data usage agreement either
    for url in urls:
        assert f"Error for {url}" in line, line
