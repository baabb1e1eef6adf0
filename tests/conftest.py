"""Shared fixtures: the reference data beside the repository (../shared/data, or the directory
named by NDCG_PLUGIN_SHARED_DATA). Tests that need it skip, saying why, when it is absent."""
from __future__ import annotations

import atexit
import os
import shutil
import socket
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("NDCG_PLUGIN_SHARED_DATA", ROOT.parent / "shared" / "data"))
EXAMPLES = ROOT / "benchmarks_data"


def shared_file(*parts: str) -> Path:
    path = SHARED.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"reference data {path} is absent (set NDCG_PLUGIN_SHARED_DATA to the shared/data "
                    f"folder with the trec_eval test suite and MS MARCO files)")
    return path


@pytest.fixture
def trec_eval_dir() -> Path:
    return shared_file("trec_eval")


# ir-datasets never downloads from the internet in tests: every test process (and the CLI
# subprocesses it starts) sees a temporary IR_DATASETS_HOME seeded here by plain copies of
# ../shared/data/msmarco-passage, placed where ir-datasets' cache expects them
# (shared/data/README.md). Set before ir_datasets is imported anywhere, since it reads the
# variable once.
SEED_MAP = {
    "msmarco-passage/dev/small/qrels": "qrels.dev-small.txt",
    "msmarco-passage/dev/small/queries.tsv": "queries.dev-small.tsv",
    "msmarco-passage/trec-dl-2019/qrels": "qrels.dl19-passage.txt",
    # not msmarco-passage/trec-dl-2019/queries.tsv: ir-datasets expects the 200 official queries
    # there (the 43-query file would damage msmarco-passage/trec-dl-2019); evaluation needs none
}
IRDS_HOME = Path(tempfile.mkdtemp(prefix="ndcg-plugin-irds-"))
atexit.register(shutil.rmtree, IRDS_HOME, True)
for cache_path, name in SEED_MAP.items():
    src = SHARED / "msmarco-passage" / name
    if src.exists():
        (IRDS_HOME / cache_path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, IRDS_HOME / cache_path)
os.environ["IR_DATASETS_HOME"] = str(IRDS_HOME)
os.environ["IR_DATASETS_TMP"] = str(IRDS_HOME / "tmp")


def closed_port() -> int:
    """A port on 127.0.0.1 where nothing listens (bound, then released): connecting is refused at once."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ...and never reaches the internet at all: every HTTP(S) request goes through a "proxy" on a closed
# local port, so an accidental download fails at once instead of downloading or hanging (requests,
# which ir-datasets downloads with, reads these variables; the lower-case ones win, so both are
# set). Only 127.0.0.1, where tests serve files of their own, is reached directly. One try per
# download, a short timeout.
NO_INTERNET = f"http://127.0.0.1:{closed_port()}"
for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
    os.environ[name] = os.environ[name.lower()] = NO_INTERNET
os.environ["NO_PROXY"] = os.environ["no_proxy"] = "127.0.0.1,localhost"
os.environ["IR_DATASETS_DL_TRIES"] = "1"
os.environ["IR_DATASETS_DL_TIMEOUT"] = "5"


def msmarco_file(name: str) -> Path:
    return shared_file("msmarco-passage", name)


@pytest.fixture(scope="session")
def spark():
    """One SparkSession (local[2]) for every test that needs one; skipped without pyspark or Java.

    Two shuffle partitions (one per thread: a job's tasks run in one wave; with 4 each evaluation
    took about twice as long on tiny inputs), still several partitions after every shuffle. A test
    whose point is more partitions sets them itself (:func:`shuffle_partitions`)."""
    pytest.importorskip("pyspark", reason="the [spark] extra (pyspark) is not installed")
    if not shutil.which("java"):
        pytest.skip("Java is not installed (the Spark engine needs Java 17)")
    from ndcg_plugin import spark as ndcg_spark

    yield ndcg_spark.session("local[2]", {"spark.sql.shuffle.partitions": "2", "spark.sql.adaptive.enabled": "false"})


@contextmanager
def shuffle_partitions(spark, n: int) -> Iterator[None]:
    """The session's shuffle partitions set to ``n`` while the block runs, then set back."""
    before = spark.conf.get("spark.sql.shuffle.partitions")
    spark.conf.set("spark.sql.shuffle.partitions", str(n))
    try:
        yield
    finally:
        spark.conf.set("spark.sql.shuffle.partitions", before)
