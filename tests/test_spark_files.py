"""ndcg_plugin.spark.files: text files read by Spark as the local reader reads them, here for
lines with long runs of whitespace (the semantics on random files are in tests/test_spark.py)."""
from __future__ import annotations

import pytest

pytest.importorskip("pyspark", reason="the [spark] extra (pyspark) is not installed")

import ndcg_plugin  # noqa: E402


def test_long_runs_of_whitespace_inside_and_around_lines(spark, tmp_path):
    # 300,000 whitespace bytes inside a line and at its ends: trimmed as characters, split once; a
    # regex trim that tries every start inside the run took 27 s on 80,000 spaces (quadratic)
    from ndcg_plugin.spark import files
    wide = " \t" * 150_000
    path = tmp_path / "wide.run"
    path.write_text(f"q1 Q0 d1 1 2.5 r\nq1{wide}Q0 d2\t1 1.5{wide}r{wide}\n{wide}q2 Q0 d3 1 0.5 r\n")
    rows = sorted(tuple(r) for r in files.read(spark, str(path), "run").collect())
    local = ndcg_plugin.read(str(path), "run")
    assert rows == sorted(zip(local["query_id"], local["doc_id"], local["score"].tolist(), strict=True))
    assert rows == [("q1", "d1", 2.5), ("q1", "d2", 1.5), ("q2", "d3", 0.5)]
