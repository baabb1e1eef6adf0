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


# The Spark reader took a NUL byte as a byte of an id and a line of any length, where the local
# reader refuses both (trec_eval stops at a NUL): the two engines computed on different inputs
@pytest.mark.parametrize("data", [
    b"q1 Q0 d1 1 1.0 t\nq1 Q0 d\x002 2 0.5 t\n",
    b"# a comment \x00\nq1 Q0 d1 1 1.0 t\n",
    b"q1 Q0 d1 1 1.0 t\nq1 Q0 " + b"d" * (2 << 20) + b" 2 0.5 t\n",
    b"q1 Q0 d1 1 1.0 t\nq1 Q0 d\xff 2 0.5 t\n",
], ids=["nul-in-an-id", "nul-in-a-comment", "a-line-of-2-mib", "invalid-utf-8"])
def test_bytes_the_local_reader_refuses_are_refused_by_spark_with_its_message(spark, tmp_path, data):
    from ndcg_plugin.spark import failures, files
    path = tmp_path / "run.txt"
    path.write_bytes(data)
    with pytest.raises(ndcg_plugin.InputError) as local:
        ndcg_plugin.read(str(path), "run")
    with pytest.raises(ndcg_plugin.InputError) as got:
        with failures.reraise({str(path): ("run", "auto", None)}):
            files.read(spark, str(path), "run").collect()
    assert str(got.value) == str(local.value)  # the local reader's message, naming the line
