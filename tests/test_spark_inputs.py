"""ndcg_plugin.spark.inputs.file_split: the number of the file split each run row came from,
which the pass before the shuffle uses to find the queries that may go on in another split.

It is cheap (the split's start and length, no file name), so the splits of two files of one size
can share it. The tests read grouped runs from text files cut into several splits, packed
several to a partition, and check that the engine plan's numbers and its refusal of repeated
pairs do not depend on it: a query it cannot prove whole is evaluated again with every row."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("pyspark", reason="the [spark] extra (pyspark) is not installed")

import ndcg_plugin  # noqa: E402
from ndcg_plugin import spark as ndcg_spark  # noqa: E402
from tests.helpers import local_engine, same  # noqa: E402

MEASURES = ["NDCG_lin@2", "NDCG_exp@2", "HitRate@2", "HitRate_item@2", "MRR_zero@2", "MRR_ignore@1"]
PER_QUERY = 11        # rows per query: queries straddle the files' and the splits' edges
LINES = 120           # lines per file; every line is 24 bytes: "u007 Q0 d0042 1 0.125 t\n"
SPLIT = 2000          # bytes per split (see `packed`): a file's second split starts at its line 84
TAIL = -(-SPLIT // 24)


def _rows(rng, sizes: list[int]) -> list[list]:
    """A run sorted by query, no pair repeated, as many rows as ``sizes`` add up to."""
    return [[f"u{i // PER_QUERY:03d}", f"d{i * 7919 % 10_000:04d}", float(rng.integers(1, 1000)) / 1000]
            for i in range(sum(sizes))]


def _repeat_in(rows: list[list], sizes: list[int], file: int) -> None:
    """The query that straddles the edge between file ``file``'s first and second split gets its
    first pair (in the first split) again as its last row in the second split, with the lowest
    score: a copy that only a check of every row finds."""
    edge = sum(sizes[:file]) + TAIL            # the first row of the file's second split
    q = edge // PER_QUERY
    first, last = q * PER_QUERY, min((q + 1) * PER_QUERY, sum(sizes[: file + 1])) - 1
    assert first < edge < last
    rows[last][1:] = [rows[first][1], 0.0]


def _write(tmp_path, rows: list[list], sizes: list[int]) -> tuple[str, pd.DataFrame]:
    """The rows over files of ``sizes`` lines (fixed-width lines: files of one line count have one
    byte size) in a folder, and as a frame."""
    folder = tmp_path / "run"
    folder.mkdir(exist_ok=True)
    at = 0
    for i, size in enumerate(sizes):
        text = "".join(f"{q} Q0 {d} 1 {s:.3f} t\n" for q, d, s in rows[at: at + size])
        (folder / f"part-{i}.txt").write_text(text)
        at += size
    return str(folder), pd.DataFrame(rows, columns=["query_id", "doc_id", "score"])


def _second_of_two(spark, folder: str) -> int:
    """The file whose second split comes second in a partition that holds two splits (where
    Spark put them: it packs splits by size, largest first)."""
    from pyspark.sql import functions as F
    rows = (spark.read.text(folder)
            .select(F.spark_partition_id().alias("p"), F.monotonically_increasing_id().alias("at"),
                    F.input_file_name().alias("file"), F.input_file_block_start().alias("start"))
            .groupBy("p", "file", "start").agg(F.min("at").alias("at")).collect())
    parts: dict = {}
    for r in sorted(rows, key=lambda r: r["at"]):
        parts.setdefault(r["p"], []).append(r)
    second = next(splits[1] for splits in parts.values() if len(splits) == 2)
    assert second["start"] > 0
    return int(second["file"].rsplit("part-", 1)[1].split(".")[0])


def _read(spark, folder: str):
    """The run as a user reads it: Spark's text reader over the folder (the file split of each
    row known to Spark), split into columns."""
    from pyspark.sql import functions as F
    f = F.split(F.col("value"), " ")
    return spark.read.text(folder).select(f[0].alias("query_id"), f[2].alias("doc_id"),
                                          f[4].cast("double").alias("score"))


def _qrels(rng, run: pd.DataFrame) -> pd.DataFrame:
    judged = run.sample(frac=0.3, random_state=int(rng.integers(0, 2**31)))
    return judged.assign(relevance=rng.integers(0, 4, size=len(judged)))[["query_id", "doc_id", "relevance"]]


@pytest.fixture()
def packed(spark):
    """Splits of SPLIT bytes, packed several to a partition: a 2880-byte file is cut at 2000, and
    the 880-byte tails of two files share a partition."""
    keys = ("spark.sql.files.maxPartitionBytes", "spark.sql.files.openCostInBytes")
    old = {k: spark.conf.get(k) for k in keys}
    spark.conf.set(keys[0], str(SPLIT))
    spark.conf.set(keys[1], "1")
    yield spark
    for k, v in old.items():
        spark.conf.set(k, v)


@pytest.mark.parametrize("sizes", [[LINES, LINES, LINES], [LINES, LINES + 1, LINES + 2]])
def test_a_grouped_run_over_files_gives_the_local_engines_numbers(packed, tmp_path, sizes):
    # files of one size: their tails have one start and length, so the edge between two tails
    # packed into one partition is not seen, and the queries there make the evaluation run again
    # with every row; files of three sizes: every edge is seen and the one job suffices
    rng = np.random.default_rng(sum(sizes))
    folder, run = _write(tmp_path, _rows(rng, sizes), sizes)
    qrels = _qrels(rng, run)
    measures = ndcg_plugin.parse_measures(MEASURES)
    want, want_rows = local_engine(qrels, run, measures)
    spark = packed
    df = _read(spark, folder)
    assert df.rdd.getNumPartitions() < 2 * len(sizes)  # some partitions hold two splits
    ev = ndcg_spark.prepare(spark.createDataFrame(qrels), df, measures, ship="best")
    got, rows = ev.aggregates(), dict(ev.rows())
    assert all(same(got[m], want[m]) for m in measures), [(str(m), got[m], want[m]) for m in measures]
    assert len(rows) == qrels["query_id"].nunique()
    for q, values in rows.items():
        for m, v in zip(measures, values, strict=True):
            assert same(v, want_rows[(q, str(m))]), (q, str(m), v, want_rows[(q, str(m))])
    assert ev.ship == ("all" if len(set(sizes)) == 1 else "best")


@pytest.mark.parametrize("sizes", [[LINES, LINES, LINES], [LINES, LINES + 1, LINES + 2]])
def test_a_pair_repeated_across_two_splits_is_refused(packed, tmp_path, sizes):
    # the copies lie in two splits of one file, in two partitions, the lower one below the cut, in
    # the second split of a partition that holds two: with files of one size, the edge between
    # those two splits is not seen, so that only the evaluation with every row finds the copy
    rng = np.random.default_rng(7 + sum(sizes))
    rows = _rows(rng, sizes)
    folder, _ = _write(tmp_path, rows, sizes)
    _repeat_in(rows, sizes, _second_of_two(packed, folder))
    folder, run = _write(tmp_path, rows, sizes)  # the same sizes: the same splits
    assert run.duplicated(["query_id", "doc_id"]).sum() == 1
    q, d = run.loc[run.duplicated(["query_id", "doc_id"]), ["query_id", "doc_id"]].iloc[0]
    ev = ndcg_spark.prepare(packed.createDataFrame(_qrels(rng, run)), _read(packed, folder),
                            ndcg_plugin.parse_measures(MEASURES), ship="best")
    with pytest.raises(ValueError, match=f"'{q}'.*'{d}'"):
        ev.aggregates()
