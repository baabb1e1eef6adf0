"""The Spark engine (ndcg_plugin.spark) against the local engine: a differential test on many
random cases, run as one Spark job (each case's query ids carry their own prefix), plus inputs,
errors and the CLI. Needs the [spark] extra and Java; one SparkSession (local[2]) serves all."""
from __future__ import annotations

import math
import os
import shutil
import warnings

import numpy as np
import pandas as pd
import pytest

pyspark = pytest.importorskip("pyspark", reason="the [spark] extra (pyspark) is not installed")
if not shutil.which("java"):
    pytest.skip("Java is not installed (the Spark engine needs Java 17)", allow_module_level=True)

import ir_measures  # noqa: E402

import ndcg_plugin  # noqa: E402
from ndcg_plugin import spark as ndcg_spark  # noqa: E402
from ndcg_plugin.spark import SparkUnavailable  # noqa: E402
from tests.helpers import local_engine, same  # noqa: E402

MEASURES = [
    "NDCG_lin@3", "NDCG_exp@5", "NDCG_lin", "NDCG_exp", "NDCG_lin(ideal='run')@3", "NDCG_exp(ideal='run')",
    "NDCG_lin(judged_only=True)@3", "NDCG_exp(judged_only=True,ideal='run')@4",
    "NDCG_lin(gains={0:0.5,2:3.0,4:0})@4", "NDCG_exp(gains={1:2.5})@2",
    "HitRate@1", "HitRate@3", "HitRate(rel=2)@5", "HitRate_item@2", "HitRate_item@10", "HitRate_item(rel=3)@4",
    "MRR_zero@3", "MRR_zero(rel=2)@10", "MRR_ignore@2", "MRR_ignore(rel=2)@5",
    "nDCG@5", "nDCG(dcg='exp-log2')@3", "RR(rel=2)@4", "Success@2", "RR(judged_only=True)@3",
    "Success(judged_only=True,rel=2)@2", "nDCG(gains={0:1,3:7})@4",
]
ODD_IDS = ["d", "D", "d1", "d10", "d2", "01", "1", "é", "e\u0301", "a#b", "x\u00a0y", "\u3000", "zz", "Ω", "d 1"]
CASES = 160


def _case(rng: np.random.Generator) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Random qrels and run: ties, odd ids, labels -2..5, queries missing on either side, short
    lists, scores with -0.0."""
    queries = [f"q{i}" for i in range(int(rng.integers(1, 6)))]
    docs = list(rng.choice(ODD_IDS, size=int(rng.integers(2, len(ODD_IDS))), replace=False))
    qrels, run = [], []
    for q in queries:
        if rng.random() < 0.85:
            for d in rng.choice(docs, size=int(rng.integers(1, len(docs) + 1)), replace=False):
                qrels.append((q, d, int(rng.integers(-2, 6))))
        if rng.random() < 0.85:
            scores = rng.choice([0.0, -0.0, 1.0, 1.5, 2.0, -3.25, 7.0], size=len(docs)) if rng.random() < 0.6 \
                else np.round(rng.normal(size=len(docs)), 1)
            for d, s in zip(docs[: int(rng.integers(1, len(docs) + 1))], scores, strict=False):
                run.append((q, d, float(s)))
    if rng.random() < 0.3:
        run.append(("only_in_run", "d", 1.0))
    if not qrels:
        qrels.append(("qx", "d", 1))
    if not run:
        run.append(("qy", "d", 0.5))
    return (pd.DataFrame(qrels, columns=["query_id", "doc_id", "relevance"]),
            pd.DataFrame(run, columns=["query_id", "doc_id", "score"]))


def _batched(spark, cases: list, measures: list, parts: int = 0):
    """Every case in one Spark evaluation: case i's query ids are prefixed 'c<i>|'; ``parts``: the
    run cut into that many partitions at random (each query's rows spread over them)."""
    qrels = pd.concat([q.assign(query_id=f"c{i}|" + q["query_id"]) for i, (q, _) in enumerate(cases)])
    run = pd.concat([r.assign(query_id=f"c{i}|" + r["query_id"]) for i, (_, r) in enumerate(cases)])
    run_df = spark.createDataFrame(run)
    if parts:
        run_df = run_df.repartition(parts)
    ev = ndcg_spark.prepare(spark.createDataFrame(qrels), run_df, measures)
    from pyspark.sql import functions as F
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        aggregates = ev.aggregates(by=F.split(F.col("query_id"), r"\|").getItem(0))
    per_query = {}
    for qid, values in ev.rows():
        case, q = qid.split("|", 1)
        for m, v in zip(ev.measures, values, strict=True):
            per_query[(case, q, str(m))] = v
    return ev.measures, aggregates, per_query


def test_random_cases_equal_the_local_engine(spark):
    rng = np.random.default_rng(20261122)
    cases = [_case(rng) for _ in range(CASES)]
    measures, aggregates, per_query = _batched(spark, cases, MEASURES)
    assert len(measures) == len(MEASURES)
    checked = 0
    for i, (qrels, run) in enumerate(cases):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            local_agg, local_pq = local_engine(qrels, run, measures)
        for m in measures:
            assert same(aggregates[f"c{i}"][m], local_agg[m]), (i, str(m), aggregates[f"c{i}"][m], local_agg[m])
        mine = {(q, m): v for (c, q, m), v in per_query.items() if c == f"c{i}"}
        assert set(mine) == set(local_pq), i
        for key, value in local_pq.items():
            assert same(mine[key], value), (i, key, mine[key], value)
            checked += 1
    assert checked > 10_000


def test_hand_computed_example(spark):
    # q1 ranks d2 (2.0) > d4 (2.0, unjudged; doc id descending puts d4 first) ... :
    # scores d1 1.0, d2 2.0, d4 2.0 -> order d4, d2, d1; labels d1=2, d2=0, d3=1 (not retrieved)
    qrels = spark.createDataFrame([("q1", "d1", 2), ("q1", "d2", 0), ("q1", "d3", 1), ("q2", "x", 1)],
                                  ["query_id", "doc_id", "relevance"])
    run = spark.createDataFrame([("q1", "d1", 1.0), ("q1", "d2", 2.0), ("q1", "d4", 2.0), ("q9", "z", 1.0)],
                                ["query_id", "doc_id", "score"])
    with pytest.warns(RuntimeWarning, match="1 of 2 run queries are not in the qrels"):
        res = ndcg_spark.evaluate(qrels, run, ["NDCG_lin@3", "MRR_zero@3", "MRR_ignore@3", "HitRate_item@2"])
    idcg = 2 + 1 / math.log2(3)
    # q1: DCG@3 = 2 / log2(4) = 1; q2 (not in the run) scores 0
    assert res[ndcg_plugin.NDCG_lin @ 3] == pytest.approx((1 / idcg + 0) / 2, abs=1e-15)
    assert res[ndcg_plugin.MRR_zero @ 3] == pytest.approx((1 / 3 + 0) / 2, abs=1e-15)
    assert res[ndcg_plugin.MRR_ignore @ 3] == pytest.approx(1 / 3, abs=1e-15)
    assert res[ndcg_plugin.HitRate_item @ 2] == 0.0  # d4, d2 in the top 2: none relevant; q2 returned nothing


def test_column_names_and_integer_ids(spark):
    qrels = spark.createDataFrame([(1, 10, 3), (1, 11, 1), (2, 10, 1)], ["user", "item", "rating"])
    run = spark.createDataFrame([(1, 11, 0.9), (1, 10, 0.1), (2, 12, 0.5)], ["user", "item", "prediction"])
    cols = {"query": "user", "doc": "item", "relevance": "rating", "score": "prediction"}
    res = ndcg_spark.evaluate(qrels, run, ["HitRate@1", "MRR_ignore@2"], columns=cols)
    assert res[ndcg_plugin.HitRate @ 1] == 0.5
    assert res[ndcg_plugin.MRR_ignore @ 2] == 1.0
    long = ndcg_spark.evaluate(qrels, run, ["MRR_ignore@2"], per_query=True, columns=cols)
    assert {(r["query_id"], r["value"]) for r in long.collect()} == {("1", 1.0), ("2", None)}


@pytest.mark.parametrize("rows, kind, message", [
    ([("q", "d", float("nan"))], "run", "score must be a finite number"),
    ([("q", "d", float("inf"))], "run", "score must be a finite number"),
    ([("q", None, 1.0)], "run", "missing value in column doc_id"),
    ([("q", "", 1.0)], "run", "empty doc id"),
    ([("", "d", 1.0)], "run", "empty query id"),          # read by ship='auto''s sample too
    ([(None, "d", 1.0)], "run", "missing value in column query_id"),
    ([("q", "d", 1.0), ("q", "d", 2.0)], "run", r"^run: duplicate \(query_id, doc_id\) = \('q', 'd'\): 2 rows"),
    ([("q", "d", 1), ("q", "d", 0)], "qrels", r"^qrels: duplicate \(query_id, doc_id\) = \('q', 'd'\): 2 rows"),
])
def test_bad_input_is_refused(spark, rows, kind, message):
    good = {"run": [("q", "d", 1.0)], "qrels": [("q", "d", 1)]}
    good[kind] = rows
    qrels = spark.createDataFrame(good["qrels"], "query_id string, doc_id string, relevance long")
    run = spark.createDataFrame(good["run"], "query_id string, doc_id string, score double")
    for ship in ("auto", "best", "all"):
        with pytest.raises(ValueError, match=message):
            ndcg_spark.evaluate(qrels, run, ["NDCG_lin@3"], ship=ship)


def test_non_integer_labels_and_float_ids_are_refused(spark):
    run = spark.createDataFrame([("q", "d", 1.0)], ["query_id", "doc_id", "score"])
    qrels = spark.createDataFrame([("q", "d", 1.5)], ["query_id", "doc_id", "relevance"])
    with pytest.raises(ValueError, match="relevance must be an integer, got 1.5"):
        ndcg_spark.evaluate(qrels, run, ["NDCG_lin@3"])
    qrels = spark.createDataFrame([(1.0, "d", 1)], ["query_id", "doc_id", "relevance"])
    with pytest.raises(ValueError, match="must hold strings or integers, got double"):
        ndcg_spark.evaluate(qrels, run, ["NDCG_lin@3"])


def test_measures_it_does_not_compute_are_named(spark):
    qrels = spark.createDataFrame([("q", "d", 1)], ["query_id", "doc_id", "relevance"])
    run = spark.createDataFrame([("q", "d", 1.0)], ["query_id", "doc_id", "score"])
    with pytest.raises(ValueError, match=r"not ERR@10"):
        ndcg_spark.evaluate(qrels, run, ["ERR@10"])


def test_missing_pyspark_or_java_is_one_clear_line(monkeypatch):
    import builtins
    real_import = builtins.__import__

    def no_pyspark(name, *args, **kwargs):
        if name == "pyspark":
            raise ImportError("No module named 'pyspark'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_pyspark)
    with pytest.raises(SparkUnavailable, match=r"pip install 'ndcg-plugin\[spark\]'"):
        ndcg_spark.require_spark()
    monkeypatch.setattr(builtins, "__import__", real_import)
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.delenv("JAVA_HOME", raising=False)
    with pytest.raises(SparkUnavailable, match="needs Java 17"):
        ndcg_spark.require_spark()


# --- files read by Spark: exactly the local reader's table ------------------------------------------

SEPARATORS = [" ", "\t", "  ", " \t", "\v", "\f", "\r", "\t\t "]
FILE_IDS = ["q1", "Q1", "a#b", "x\u00a0y", "é", "\u3000z", "n\u0085", "l\u2028m", "7", "007", "#", "d;1", "\ufeffb"]
LABELS = ["0", "1", "-2", "+3", "007", "5", "-0"]
SCORES = ["1", "-2.5", ".5", "3.", "1e-3", "+4E2", "0", "-0", "12345678901234567890", "-1.5e+2", "0.1"]
BAD_VALUES = {"qrels": ["1.5", "1_0", "0x1", "99999999999999999999", "one", "1e3"],
              "trec": ["1_0", "0x10", "nan", "inf", "-Infinity", "1e999", "1.0d", "1,5", "--1"],
              "msmarco": ["1.0", "2_0", "+-1", "1e2"]}


def _text_file(rng: np.random.Generator, layout: str, bad: bool) -> tuple[bytes, bool]:
    """A qrels / TREC run / MS MARCO run file with mixed separators, comments, blank lines,
    CRLF, a BOM, odd ids and numbers; with ``bad``, one line the reader must refuse."""
    lines = []
    pairs = set()
    n = int(rng.integers(1, 25))
    bad_at = int(rng.integers(0, n)) if bad else -1
    for i in range(n):
        while True:
            q, d = str(rng.choice(FILE_IDS[:-1])), str(rng.choice(FILE_IDS[:-1]))
            if (q, d) not in pairs or len(pairs) > 100:
                break
        pairs.add((q, d))
        if layout == "qrels":
            fields = [q, str(rng.choice(["0", "Q0", "x"])), d, str(rng.choice(LABELS))]
        elif layout == "trec":
            fields = [q, "Q0", d, str(i + 1), str(rng.choice(SCORES)), "tag"] + ["extra"] * int(rng.integers(0, 2))
        else:
            fields = [q, d, str(rng.choice(["1", "2", "+3", "10", "-1", "0"]))]
        if i == bad_at:
            if rng.random() < 0.3:
                fields = fields[:-2] if layout != "trec" else fields[:4]  # too few columns
            else:
                at = {"qrels": 3, "trec": 4, "msmarco": 2}[layout]
                fields[at] = str(rng.choice(BAD_VALUES[layout]))
        seps = [str(rng.choice(SEPARATORS)) for _ in fields]
        line = "".join(f + s for f, s in zip(fields, seps, strict=True))[: -len(seps[-1])]
        if rng.random() < 0.3:
            line = str(rng.choice([" ", "\t", "\f"])) + line
        if rng.random() < 0.3:
            line += str(rng.choice([" ", "\t", "\r"]))
        lines.append(line)
        if rng.random() < (0.02 if layout == "qrels" else 0.2):  # trec_eval refuses a blank line in qrels
            lines.append(str(rng.choice(["", "   ", "\t", "\r"])))
        if rng.random() < 0.15:
            lines.append("# a comment 1 2 3" if layout == "qrels" or rng.random() < 0.5 else "  \t# indented comment")
        if layout == "qrels" and rng.random() < 0.1:
            lines.append(f" #q{i} 0 doc#1 2")  # not a comment in qrels (the '#' is not in column 0): a data line
    end = "\r\n" if rng.random() < 0.3 else "\n"
    text = end.join(lines) + (end if rng.random() < 0.7 else "")
    data = text.encode("utf-8")
    if rng.random() < 0.2:
        data = b"\xef\xbb\xbf" + data
    return data, bad


def _write(tmp_path, i: int, data: bytes, rng) -> str:
    import gzip
    if rng.random() < 0.2:
        path = tmp_path / f"f{i}.gz"
        path.write_bytes(gzip.compress(data))
    else:
        path = tmp_path / f"f{i}.txt"
        path.write_bytes(data)
    return str(path)


def test_files_read_by_spark_equal_the_local_reader(spark, tmp_path):
    from ndcg_plugin.spark import failures, files
    rng = np.random.default_rng(7)
    good = bad = 0
    for i in range(40):
        layout = ["qrels", "trec", "msmarco"][i % 3]
        kind = "qrels" if layout == "qrels" else "run"
        data, _ = _text_file(rng, layout, bad=i % 4 == 3)  # a 'bad' line may still be a comment
        path = _write(tmp_path, i, data, rng)
        try:
            local = ndcg_plugin.read(path, kind)
        except ndcg_plugin.InputError as e:
            local = e
        if isinstance(local, Exception):
            with pytest.raises(ndcg_plugin.InputError) as got:
                df = files.read(spark, path, kind)
                with failures.reraise({path: (kind, "auto", None)}):
                    df.collect()
            assert str(got.value) == str(local)
            bad += 1
            continue
        value = "relevance" if kind == "qrels" else "score"
        rows = files.read(spark, path, kind).collect()
        mine = sorted((r["query_id"], r["doc_id"], r[value]) for r in rows)
        theirs = sorted(zip(local["query_id"], local["doc_id"], local[value].tolist(), strict=True))
        assert mine == theirs, path
        good += 1
    assert good >= 25 and bad >= 6


def test_empty_and_misnamed_files(spark, tmp_path):
    from ndcg_plugin.spark import files
    empty = tmp_path / "empty.run"
    empty.write_bytes(b"")
    with pytest.raises(ndcg_plugin.InputError, match="no run lines found"):
        files.read(spark, str(empty), "run")
    nothing = tmp_path / "nothing.run"  # as the local reader: a run that returned nothing, with a warning
    nothing.write_text("# only a comment\n\n")
    with pytest.warns(RuntimeWarning, match="holds no result line"):
        assert files.read(spark, str(nothing), "run").count() == 0
    bom = tmp_path / "bom.run"
    bom.write_bytes(b"\xef\xbb\xbfq Q0 d 1 1.0 t\n")
    with pytest.warns(RuntimeWarning, match="byte order mark"):
        assert [r["query_id"] for r in files.read(spark, str(bom), "run").collect()] == ["q"]
    qrels = tmp_path / "comments.qrels"  # the line after a comment is a judgment, as trec_eval reads it
    qrels.write_text("# c\n#q 0 d 1\nq 0 e 2\n")
    rows = sorted(tuple(r) for r in files.read(spark, str(qrels), "qrels").collect())
    local = ndcg_plugin.read(str(qrels), "qrels")
    assert rows == sorted(zip(local["query_id"], local["doc_id"], local["relevance"].tolist(), strict=True))
    assert ("#q", "d", 1) in rows
    fake = tmp_path / "run.gz"
    fake.write_text("q Q0 d 1 1.0 t\n")
    with pytest.raises(ndcg_plugin.InputError, match="not gzip"):
        files.read(spark, str(fake), "run")
    with pytest.raises(ndcg_plugin.InputError, match="file not found"):
        files.read(spark, str(tmp_path / "nothing"), "run")


# --- the CLI --------------------------------------------------------------------------------------

def _cli(capsys, *args) -> tuple[int, str, str]:
    from ndcg_plugin.cli import commands as cli
    code = cli.main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


CLI_MEASURES = ["NDCG_exp@10", "HitRate_item@3", "MRR_ignore@2", "NDCG_lin(judged_only=True)@5", "HitRate(rel=2)@5"]


@pytest.mark.parametrize("options", [[], ["-q"], ["-q", "-n"], ["-o", "jsonl"], ["-q", "-o", "jsonl", "-p", "-1"],
                                     ["--spark-plan", "engine", "-p", "-1"], ["--spark-ship", "all", "-p", "-1"],
                                     ["--spark-ship", "best", "-q", "-p", "-1"]])
def test_cli_output_equals_the_local_engine(spark, capsys, tmp_path, options):
    rng = np.random.default_rng(3)
    qrels, run = _case(rng)
    qrels_path, run_path = tmp_path / "q.qrels", tmp_path / "r.run"
    qrels_path.write_text("".join(f"{q} 0 {d.replace(' ', '_')} {r}\n" for q, d, r in qrels.itertuples(index=False)))
    run_path.write_text("".join(f"{q}\tQ0\t{d.replace(' ', '_')}\t{i}\t{s!r}\tt\n"
                                for i, (q, d, s) in enumerate(run.itertuples(index=False))))
    # the --spark-* options go to the Spark side only (the local engine refuses them by name)
    shared = [o for i, o in enumerate(options) if not o.startswith("--spark") and
              not (i and options[i - 1].startswith("--spark"))]
    code, local, _ = _cli(capsys, "eval", *shared, str(qrels_path), str(run_path), *CLI_MEASURES)
    assert code == 0
    code, mine, err = _cli(capsys, "eval", "--engine", "spark", *options, str(qrels_path), str(run_path), *CLI_MEASURES)
    assert code == 0, err
    # the local engine prints a query's measures in an order that varies between runs (ir-measures'
    # sets); the Spark engine in the order given. The lines are the same.
    assert sorted(mine.splitlines()) == sorted(local.splitlines())
    if "-q" not in options:
        assert mine == local


def test_cli_parquet_and_msmarco(spark, capsys, tmp_path):
    qrels = pd.DataFrame({"query_id": ["1", "1", "2"], "doc_id": ["a", "b", "c"], "relevance": [1, 2, 1]})
    run_text = "1\tb\t1\n1\ta\t2\n2\tz\t1\n"
    (tmp_path / "run.tsv").write_text(run_text)
    spark.createDataFrame(qrels).write.parquet(str(tmp_path / "qrels.parquet"))
    (tmp_path / "q.qrels").write_text("".join(f"{q} 0 {d} {r}\n" for q, d, r in qrels.itertuples(index=False)))
    code, mine, err = _cli(capsys, "eval", "--engine", "spark", str(tmp_path / "qrels.parquet"),
                           str(tmp_path / "run.tsv"), "MRR_zero@10", "NDCG_lin@2")
    assert code == 0, err
    code, local, _ = _cli(capsys, "eval", str(tmp_path / "q.qrels"), str(tmp_path / "run.tsv"), "MRR_zero@10",
                          "NDCG_lin@2")
    assert mine == local == "MRR_zero@10\t0.5000\nNDCG_lin@2\t0.5000\n"  # q1: b first (rank 1); q2: nothing


def test_cli_bad_line_names_file_and_line(spark, capsys, tmp_path):
    (tmp_path / "q.qrels").write_text("q1 0 d1 1\n")
    (tmp_path / "r.run").write_text("q1 Q0 d1 1 2.0 t\n# comment\nq1 Q0 d2 2 1_0 t\n")
    code, out, err = _cli(capsys, "eval", "--engine", "spark", str(tmp_path / "q.qrels"), str(tmp_path / "r.run"),
                          "NDCG_lin@10")
    assert code == 2 and out == ""
    where = f"ndcg-plugin: error: {tmp_path / 'r.run'}:3: expected a numeric score"
    assert err.strip().splitlines()[-1].startswith(where)


def test_cli_spark_refusals(capsys, tmp_path):
    (tmp_path / "q.qrels").write_text("q1 0 d1 1\n")
    code, _, err = _cli(capsys, "eval", "--engine", "spark", str(tmp_path / "q.qrels"), "-", "NDCG_lin@10")
    assert code == 2 and "not standard input" in err
    code, _, err = _cli(capsys, "eval", "--engine", "spark", "--duplicates", "first", str(tmp_path / "q.qrels"),
                        str(tmp_path / "q.qrels"), "NDCG_lin@10")
    assert code == 2 and "--duplicates first" in err and "max" in err
    code, _, err = _cli(capsys, "eval", "--engine", "spark", "--provider", "ndcg_plugin", str(tmp_path / "q.qrels"),
                        str(tmp_path / "q.qrels"), "NDCG_lin@10")
    assert code == 2 and "--provider" in err


def test_ties_average_is_computed_by_the_engine_plan(spark):
    # the rows shipped before the shuffle keep every row tied with a query's K-th best score, so
    # the expected value over tied orders is the local engine's, on grouped and spread runs
    rng = np.random.default_rng(7)
    cases = [_long_case(rng) for _ in range(40)]
    qrels = pd.concat([q.assign(query_id=f"c{i}|" + q["query_id"]) for i, (q, _) in enumerate(cases)])
    run = pd.concat([r.assign(query_id=f"c{i}|" + r["query_id"]) for i, (_, r) in enumerate(cases)])
    measures = ndcg_plugin.parse_measures(["NDCG_lin(ties='average')@3", "NDCG_exp(ties='average')@5",
                                           "HitRate(ties='average')@2", "MRR_zero(ties='average')@4"])
    local, local_pq = local_engine(qrels, run, measures)
    for layout in ("grouped", "spread"):
        ev = ndcg_spark.prepare(spark.createDataFrame(qrels), _laid_out(spark, run, layout), measures)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            assert ev.aggregates() == local, layout
        got = {(q, str(m)): v for q, vs in ev.rows() for m, v in zip(measures, vs, strict=True)}
        assert got.keys() == local_pq.keys() and all(same(got[k], v) for k, v in local_pq.items()), layout


def test_exponential_gain_overflow_is_refused_as_locally(spark):
    qrels = spark.createDataFrame([("q", "d", 1024)], ["query_id", "doc_id", "relevance"])
    run = spark.createDataFrame([("q", "d", 1.0)], ["query_id", "doc_id", "score"])
    with pytest.raises(ValueError, match="relevance label 1024 gives an infinite gain under NDCG_exp"):
        ndcg_spark.evaluate(qrels, run, ["NDCG_exp@3"])
    # mapped by gains=, or under linear gain, the label is fine: 2^1024 is never computed
    res = ndcg_spark.evaluate(qrels, run, ["NDCG_exp(gains={1024:5})@3", "NDCG_lin@3"])
    assert list(res.values()) == [1.0, 1.0]


def test_the_exact_split_in_spark_is_the_local_one(spark):
    from ndcg_plugin.arrays.exact import split
    from ndcg_plugin.spark.jobs import exact_parts
    rng = np.random.default_rng(5)
    powers = 2.0 ** np.arange(-60, 3)
    odd = [0.0, 1.0, 5e-324, 1e-310, 2.2250738585072014e-308, 1.7976931348623157e308, -2.5]
    values = np.concatenate([rng.random(200), -rng.random(50), 1 / np.log2(np.arange(2, 60)), powers,
                             np.nextafter(powers, 0), odd])
    df = spark.createDataFrame(pd.DataFrame({"v": values.tolist()}))
    got = df.select(*exact_parts(df["v"])).toPandas()
    shift, hi, mid, lo = split(values)
    assert got["shift"].tolist() == shift.tolist()
    assert (got["hi"].tolist(), got["mid"].tolist(), got["lo"].tolist()) == (hi.tolist(), mid.tolist(), lo.tolist())


# --- exactness: the same digits as the local engine, whatever the partitioning and the rows shipped -

@pytest.mark.filterwarnings("ignore:.*run queries are (not )?in the qrels:RuntimeWarning")
def test_aggregates_print_the_local_digits_whatever_the_partitioning(spark):
    # exact sums in both engines: at -p -1 (every digit) the printed aggregates are the local
    # engine's byte for byte, with the run and qrels cut into 1, 3 or 17 partitions and the shuffle
    # into 4 (the tests' session has 2)
    from ndcg_plugin.formatting import format_value
    from tests.conftest import shuffle_partitions
    rng = np.random.default_rng(11)
    cases = [_case(rng) for _ in range(40)]
    qrels = pd.concat([q.assign(query_id=f"c{i}_" + q["query_id"]) for i, (q, _) in enumerate(cases)])
    run = pd.concat([r.assign(query_id=f"c{i}_" + r["query_id"]) for i, (_, r) in enumerate(cases)])
    measures = ndcg_plugin.parse_measures(MEASURES)
    local = ir_measures.providers.registry["ndcg_plugin"].calc_aggregate(measures, qrels, run)
    expected = "\n".join(f"{m}\t{format_value(local[m], -1)}" for m in measures)
    for parts in (1, 3, 17):
        with shuffle_partitions(spark, 4):
            got = ndcg_spark.evaluate(spark.createDataFrame(qrels).repartition(parts),
                                      spark.createDataFrame(run).repartition(parts), measures)
        assert "\n".join(f"{m}\t{format_value(got[m], -1)}" for m in measures) == expected, parts


TOP_K_MEASURES = [m for m in MEASURES if "@" in m and "judged_only" not in m and "ideal='run'" not in m]


def _long_case(rng: np.random.Generator) -> tuple[pd.DataFrame, pd.DataFrame]:
    """A case with lists longer than the cutoffs: 5 to 40 docs a query, scores with ties."""
    qrels, run = _case(rng)
    extra = [(q, f"x{j}", float(rng.choice([0.0, 0.5, 1.0, 2.0]))) for q in run["query_id"].unique()
             for j in range(int(rng.integers(0, 30)))]
    judged = [(q, d, int(rng.integers(-1, 4))) for q, d, _ in extra if rng.random() < 0.3]
    return (pd.concat([qrels, pd.DataFrame(judged, columns=qrels.columns)]),
            pd.concat([run, pd.DataFrame(extra, columns=run.columns)]))


def _laid_out(spark, run: pd.DataFrame, layout: str):
    """The run as Spark holds it: ``grouped`` (sorted by query, cut into 7 partitions of
    consecutive rows: queries cut at the partitions' edges) or ``spread`` (every query's rows over
    3 partitions at random)."""
    if layout == "grouped":
        rows = run.sort_values("query_id", kind="stable").itertuples(index=False, name=None)
        return spark.createDataFrame(spark.sparkContext.parallelize(list(rows), 7), list(run.columns))
    return spark.createDataFrame(run).repartition(3)


@pytest.mark.parametrize("ship", ["best", "all"])
@pytest.mark.parametrize("layout", ["grouped", "spread"])
def test_the_engine_plan_gives_the_local_engines_numbers_whatever_it_ships(spark, layout, ship):
    # the engine plan (the local engine on each partition; with ship='best' only the best rows
    # shipped when every measure has a cutoff, with 'all' every row) against the local engine on the
    # whole input, bit for bit, so the two ways of shipping against each other too; with 'best' a
    # grouped run is checked for repeated pairs in one job, a spread one makes the engine plan ship
    # every row
    rng = np.random.default_rng(20261126)
    cases = [_long_case(rng) for _ in range(100)]
    qrels = pd.concat([q.assign(query_id=f"c{i}|" + q["query_id"]) for i, (q, _) in enumerate(cases)])
    run = pd.concat([r.assign(query_id=f"c{i}|" + r["query_id"]) for i, (_, r) in enumerate(cases)])
    for names in (TOP_K_MEASURES, MEASURES):
        measures = ndcg_plugin.parse_measures(names)
        ev = ndcg_spark.prepare(spark.createDataFrame(qrels), _laid_out(spark, run, layout), measures, ship=ship)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            agg, rows = ev.aggregates(), dict(ev.rows())
            local_agg, local_pq = local_engine(qrels, run, measures)
        assert ev._ship_all == (ship == "best" and layout == "spread" and names is TOP_K_MEASURES)
        assert ev.ship == ("all" if ev._ship_all else ship)  # what the numbers came from
        assert ("MapInArrow ship" in _plan_text(ev)) == (ship == "best" and names is TOP_K_MEASURES
                                                         and not ev._ship_all)
        mine = {(q, str(m)): v for q, values in rows.items() for m, v in zip(measures, values, strict=True)}
        assert mine.keys() == local_pq.keys() and len(rows) > 300
        assert all(same(mine[k], v) for k, v in local_pq.items()), [k for k, v in local_pq.items()
                                                                     if not same(mine[k], v)][:5]
        assert all(same(agg[m], local_agg[m]) for m in measures)


def test_measures_that_need_every_row_ship_every_row_in_the_engine_plan(spark):
    qrels = spark.createDataFrame([("q", "d", 1)], ["query_id", "doc_id", "relevance"])
    run = spark.createDataFrame([("q", "d", 1.0)], ["query_id", "doc_id", "score"])
    for m in ["NDCG_lin", "NDCG_lin(judged_only=True)@3", "NDCG_exp(ideal='run')@3", "RR"]:
        ev = ndcg_spark.prepare(qrels, run, ["HitRate@3", m])
        assert ev.strategy == "engine" and "MapInArrow ship" not in _plan_text(ev), m
    ev = ndcg_spark.prepare(qrels, run, ["HitRate@3", "NDCG_exp@10"], ship="best")
    assert ev.strategy == "engine" and "MapInArrow ship" in _plan_text(ev)


def _plan_text(ev) -> str:
    import contextlib
    import io
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        ev.frame().explain()
    return out.getvalue()


def test_executors_without_the_package_are_one_clear_line():
    from ndcg_plugin.spark import failures
    with pytest.raises(SparkUnavailable, match=r"executors' Python cannot import ndcg_plugin.*install ndcg-plugin "
                                               r"in the executors' environment") as got:
        with failures.reraise():
            raise RuntimeError("PythonException: Traceback ...\nModuleNotFoundError: No module named 'ndcg_plugin'\n")
    assert "\n" not in str(got.value) and "strategy" not in str(got.value)  # no retired plan offered


def test_the_retired_spark_sql_plans_are_refused_by_name(spark, capsys, tmp_path):
    qrels = spark.createDataFrame([("q", "d", 1)], ["query_id", "doc_id", "relevance"])
    run = spark.createDataFrame([("q", "d", 1.0)], ["query_id", "doc_id", "score"])
    for strategy in ("top_k", "full"):
        for options in ({}, {"duplicates": "max"}, {"ship": "all"}):
            with pytest.raises(ValueError, match=rf"^strategy='{strategy}': the Spark SQL plans \(top_k, full\) were "
                                                 r"retired.*the engine plan \(strategy='auto' or 'engine'\) computes "
                                                 r"the same numbers"):
                ndcg_spark.prepare(qrels, run, ["HitRate@5"], strategy=strategy, **options)
    with pytest.raises(ValueError, match=r"strategy must be one of \('auto', 'engine'\), got 'fast'"):
        ndcg_spark.prepare(qrels, run, ["HitRate@5"], strategy="fast")
    assert ndcg_spark.prepare(qrels, run, ["HitRate@5"], strategy="auto").strategy == "engine"
    # the command line: --spark-plan takes the engine plan only; a retired one is a usage error
    (tmp_path / "q").write_text("q 0 d 1\n")
    for plan in ("top_k", "full"):
        with pytest.raises(SystemExit) as code:
            _cli(capsys, "eval", "--engine", "spark", "--spark-plan", plan, str(tmp_path / "q"), str(tmp_path / "q"),
                 "HitRate@5")
        err = capsys.readouterr().err
        assert code.value.code == 2 and f"--spark-plan: invalid choice: '{plan}' (choose from" in err, err


def test_long_lists_without_a_cutoff_equal_the_local_engine(spark):
    # measures without a cutoff over every rank (once the Spark SQL plans' discount table, retired
    # with them: the engine plan's discounts are the local engine's own)
    qrels = pd.DataFrame([("q", f"d{i}", i % 3) for i in range(9)] + [("p", "a", 1)],
                         columns=["query_id", "doc_id", "relevance"])
    run = pd.DataFrame([("q", f"d{i}", float(-i)) for i in range(12)] + [("p", "a", 1.0)],
                       columns=["query_id", "doc_id", "score"])
    measures = ndcg_plugin.parse_measures(["NDCG_lin", "NDCG_exp(gains={0:0.5})", "HitRate@2"])
    ev = ndcg_spark.prepare(spark.createDataFrame(qrels), spark.createDataFrame(run), measures)
    got = ev.aggregates()
    local, local_pq = local_engine(qrels, run, measures)
    assert got == local
    assert {(q, str(m)): v for q, vs in ev.rows() for m, v in zip(measures, vs, strict=True)} == local_pq


def _persistent(spark) -> int:
    return spark.sparkContext._jsc.getPersistentRDDs().size()


def test_one_action_per_evaluation_and_nothing_left_cached(spark, monkeypatch):
    qrels = spark.createDataFrame([("q", "d", 1), ("p", "e", 2)], ["query_id", "doc_id", "relevance"])
    run = spark.createDataFrame([("q", "d", 1.0), ("q", "e", 0.5)], ["query_id", "doc_id", "score"])
    calls = []
    for name in ("collect", "count", "toLocalIterator", "first", "take", "toPandas", "head", "toArrow"):
        real = getattr(type(run), name)
        monkeypatch.setattr(type(run), name, lambda self, *a, _real=real, _name=name, **k: (
            calls.append(_name), _real(self, *a, **k))[1])
    before = _persistent(spark)
    for ship in ("best", "all"):
        ndcg_spark.evaluate(qrels, run, ["NDCG_exp@10", "HitRate_item@3", "MRR_zero@2"], ship=ship)
    ndcg_spark.evaluate(qrels, run, ["NDCG_exp", "HitRate_item@3"])
    assert calls == ["collect", "collect", "collect"] and _persistent(spark) == before
    # ship='auto' (the default) with every measure at a cutoff: a small job reads the run's first
    # rows (their query ids) to decide, then the one action
    ndcg_spark.evaluate(qrels, run, ["NDCG_exp@10", "HitRate_item@3"])
    assert calls[3:] == ["toArrow", "collect"] and _persistent(spark) == before
    del calls[:]
    per_query = ndcg_spark.evaluate(qrels, run, ["NDCG_exp@10", "MRR_ignore@2"], per_query=True, ship="all")
    assert calls == ["count"] and _persistent(spark) == before + 1
    assert sorted(r["value"] is None for r in per_query.collect()) == [False, False, False, True]
    per_query.unpersist()
    assert _persistent(spark) == before


def test_per_query_output_refuses_bad_input_and_keeps_nothing(spark):
    qrels = spark.createDataFrame([("q", "d", 1)], ["query_id", "doc_id", "relevance"])
    run = spark.createDataFrame([("q", "d", 1.0), ("q", "x", 0.5), ("q", "d", 0.1)], ["query_id", "doc_id", "score"])
    before = _persistent(spark)
    for measures in (["NDCG_exp@1"], ["NDCG_exp"]):
        with pytest.raises(ValueError, match=r"run: duplicate \(query_id, doc_id\) = \('q', 'd'\): 2 rows"):
            ndcg_spark.evaluate(qrels, run, measures, per_query=True)
    assert _persistent(spark) == before


def _dup_layouts(spark, tmp_path):
    """Runs whose one repeated pair lies far below the top k: in one partition, across files, at a
    file boundary, and in a shuffled layout; and the same runs without it."""
    rows = [(f"u{u:03d}", f"i{i}", float((u * 7 + i * 13) % 50)) for u in range(60) for i in range(30)]
    dup = ("u031", "i29", -1.0)  # u031 already has i29; the lowest score: never in a top 10
    at_edge = rows.index(("u031", "i0", rows[31 * 30][2]))
    layouts = {}
    for name, data in {"inside": rows[:900] + [dup] + rows[900:], "edge": rows[:at_edge] + [dup] + rows[at_edge:],
                       "none": rows}.items():
        path = tmp_path / f"{name}.parquet"
        frame = pd.DataFrame(data, columns=["query_id", "doc_id", "score"])
        for j, start in enumerate(range(0, len(frame), 317)):  # files cut inside queries
            path.mkdir(exist_ok=True)
            frame.iloc[start:start + 317].to_parquet(path / f"part-{j:03d}.parquet", index=False)
        layouts[name] = spark.read.parquet(str(path))
    layouts["shuffled"] = spark.createDataFrame(pd.DataFrame(rows + [dup], columns=["query_id", "doc_id", "score"])
                                                .sample(frac=1, random_state=3)).repartition(5)
    layouts["across"] = layouts["none"].unionByName(spark.createDataFrame([dup], ["query_id", "doc_id", "score"]))
    return layouts, pd.DataFrame(rows, columns=["query_id", "doc_id", "score"])


def test_a_pair_repeated_across_spread_partitions_is_counted_whole(spark):
    # three copies of (q, d), below the top 2, in three partitions among other queries' rows: each
    # partition alone sees at most one copy; the count reported is the run's
    rows = [(f"q{i % 7}", f"x{i}", float(i % 11)) for i in range(210)] + [("q3", "d", -1.0)] * 3
    run = spark.createDataFrame(pd.DataFrame(rows, columns=["query_id", "doc_id", "score"])
                                .sample(frac=1, random_state=5)).repartition(3)
    qrels = spark.createDataFrame([("q3", "d", 1)], ["query_id", "doc_id", "relevance"])
    with pytest.raises(ValueError, match=r"^run: duplicate \(query_id, doc_id\) = \('q3', 'd'\): 3 rows"):
        ndcg_spark.evaluate(qrels, run, ["HitRate@2"])


def test_a_repeated_pair_anywhere_in_the_run_is_refused(spark, tmp_path):
    qrels = pd.DataFrame([("u031", "i3", 1), ("u002", "i1", 2), ("u002", "i22", 1)],
                         columns=["query_id", "doc_id", "relevance"])
    layouts, clean = _dup_layouts(spark, tmp_path)
    measures = ndcg_plugin.parse_measures(["NDCG_exp@10", "HitRate@10"])
    for name, run in layouts.items():
        ev = ndcg_spark.prepare(spark.createDataFrame(qrels), run, measures)
        if name == "none":
            assert ev.aggregates() == local_engine(qrels, clean, measures)[0]
            continue
        with pytest.raises(ValueError, match=r"^run: duplicate \(query_id, doc_id\) = \('u031', 'i29'\): 2 rows"):
            ev.aggregates()


@pytest.mark.parametrize(("option", "env", "expected"), [
    (["--spark-master", "yarn"], {"HADOOP_CONF_DIR": "", "YARN_CONF_DIR": ""}, "needs HADOOP_CONF_DIR"),
    (["--spark-master", "local[abc]"], {}, "expected local, local[N], local[*]"),
    (["--spark-master", "spark://127.0.0.1:{port}"], {}, "no Spark master answers at spark://127.0.0.1:"),
    (["--spark-master", "nonsense"], {}, "expected local[...], spark://HOST:PORT, yarn"),
    ([], {"JAVA_HOME": "/nonexistent/jdk"}, "JAVA_HOME=/nonexistent/jdk has no bin/java"),
], ids=["yarn", "local-abc", "spark-closed-port", "unknown", "stale-java-home"])
def test_spark_that_cannot_start_is_one_line_before_any_jvm(tmp_path, option, env, expected):
    # in a process of its own: the tests' shared session would be taken as the active one
    import subprocess
    import sys

    from tests.conftest import closed_port
    (tmp_path / "q").write_text("q1 0 d1 1\n")
    (tmp_path / "r").write_text("q1 Q0 d1 1 1.0 t\n")
    option = [o.format(port=closed_port()) for o in option]
    env = {k: v for k, v in {**os.environ, **env}.items() if v != ""}
    proc = subprocess.run([sys.executable, "-m", "ndcg_plugin", "eval", "--engine", "spark", *option,
                           str(tmp_path / "q"), str(tmp_path / "r"), "NDCG_lin@10"], capture_output=True, text=True,
                          env=env, timeout=120)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and expected in lines[0] and "Traceback" not in proc.stderr, proc.stderr


def test_cli_column_options_name_a_parquet_files_columns(spark, capsys, tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq
    pq.write_table(pa.table({"user_id": [1, 1, 2], "item_id": [10, 11, 12], "rating": [1, 2, 1]}),
                   tmp_path / "qrels.parquet")
    pq.write_table(pa.table({"user_id": [1, 1, 2], "item_id": [11, 10, 99], "prediction": [2.0, 1.0, 1.0]}),
                   tmp_path / "run.parquet")
    (tmp_path / "q.qrels").write_text("1 0 10 1\n1 0 11 2\n2 0 12 1\n")
    (tmp_path / "r.trec").write_text("1 Q0 11 1 2.0 t\n1 Q0 10 2 1.0 t\n2 Q0 99 1 1.0 t\n")
    options = ["--qrels-columns", "query_id=user_id,doc_id=item_id,relevance=rating",
               "--run-columns", "query_id=user_id,doc_id=item_id,score=prediction"]
    code, mine, err = _cli(capsys, "eval", "--engine", "spark", str(tmp_path / "qrels.parquet"),
                           str(tmp_path / "run.parquet"), "MRR_zero@10", "NDCG_lin@2", *options)
    assert code == 0, err
    code, local, _ = _cli(capsys, "eval", str(tmp_path / "q.qrels"), str(tmp_path / "r.trec"), "MRR_zero@10",
                          "NDCG_lin@2")
    # user 1: 11 (label 2) first, then 10 (label 1): RR 1, NDCG 1; user 2: nothing relevant: 0, 0
    assert mine == local == "MRR_zero@10\t0.5000\nNDCG_lin@2\t0.5000\n"


def test_a_local_session_runs_its_python_workers_with_this_interpreter(monkeypatch):
    # Spark's default worker is the python3 on PATH, which lacks pyarrow and ndcg-plugin when the
    # command runs from a virtual environment that is not activated (or from pipx): the duplicate
    # check's mapInArrow then failed with "No module named 'pyarrow'"
    import importlib
    import sys
    spark_session = importlib.import_module("ndcg_plugin.spark.session")  # the module (spark.session is a function)
    monkeypatch.delenv("PYSPARK_PYTHON", raising=False)
    spark_session._local_conf("local[2]", {})
    assert os.environ["PYSPARK_PYTHON"] == sys.executable
    monkeypatch.setenv("PYSPARK_PYTHON", "/opt/other/python")  # the user's choice stands
    spark_session._local_conf("local[2]", {})
    assert os.environ["PYSPARK_PYTHON"] == "/opt/other/python"


def test_a_dataset_id_gives_spark_the_qrels_file_ir_datasets_keeps(tmp_path):
    # the conftest's seeded cache holds DL19's qrels: the id resolves to that file; an empty cache
    # has none, and the Spark engine does not download: one line saying so, before any JVM
    import importlib
    import subprocess
    import sys

    from tests.conftest import msmarco_file
    command = importlib.import_module("ndcg_plugin.spark.command")
    msmarco_file("qrels.dl19-passage.txt")
    path = command.qrels_file("msmarco-passage/trec-dl-2019/judged")
    assert os.path.isfile(path) and open(path).read() == msmarco_file("qrels.dl19-passage.txt").read_text()
    (tmp_path / "r").write_text("1 Q0 d1 1 1.0 t\n")
    proc = subprocess.run([sys.executable, "-m", "ndcg_plugin", "eval", "--engine", "spark",
                           "msmarco-passage/trec-dl-2019/judged", str(tmp_path / "r"), "NDCG_lin@10"],
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, "IR_DATASETS_HOME": str(tmp_path / "home")})
    assert proc.returncode == 2 and "the Spark engine reads files" in proc.stderr, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_a_spark_submit_driver_keeps_the_master_and_settings_it_was_submitted_with(tmp_path):
    # the cluster recipe of docs/spark.md: a driver script calls ndcg_spark.session() under
    # spark-submit. It used to start a builder with master local[*] and local defaults, which
    # override spark-submit's --master and --conf: on a cluster, every task ran on the driver.
    import subprocess
    import sys
    import textwrap
    from pathlib import Path
    home = Path(pyspark.__file__).parent
    script = tmp_path / "evaluate_recs.py"
    script.write_text(textwrap.dedent("""
        from ndcg_plugin import spark as ndcg_spark
        spark = ndcg_spark.session()
        print("master", spark.conf.get("spark.master"))
        print("partitions", spark.conf.get("spark.sql.shuffle.partitions"))
        qrels = spark.createDataFrame([("u1", "i1", 1), ("u2", "i9", 2)], ["query_id", "doc_id", "relevance"])
        run = spark.createDataFrame([("u1", "i2", 0.9), ("u1", "i1", 0.5), ("u2", "i3", 0.7)],
                                    ["query_id", "doc_id", "score"])
        for measure, value in ndcg_spark.evaluate(qrels, run, ["MRR_zero@10", "HitRate@1"]).items():
            print(measure, value)
    """))
    env = {**os.environ, "SPARK_HOME": str(home), "PYSPARK_PYTHON": sys.executable,
           "PYSPARK_DRIVER_PYTHON": sys.executable}
    env.pop("PYSPARK_GATEWAY_PORT", None)
    proc = subprocess.run([str(home / "bin" / "spark-submit"), "--master", "local[1]",
                           "--conf", "spark.sql.shuffle.partitions=3", str(script)],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.splitlines()
    assert "master local[1]" in lines and "partitions 3" in lines, proc.stdout
    # u1: i1 (relevant) at rank 2: RR 1/2, no hit at 1; u2: nothing relevant returned: 0, 0
    assert "MRR_zero@10 0.25" in lines and "HitRate@1 0.0" in lines, proc.stdout


def _with_repeats(rng: np.random.Generator, qrels: pd.DataFrame,
                  run: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Copies of some pairs: in the run with a lower, equal, higher or much higher score (some of
    them within a query's best rows, some below), in the qrels with another label."""
    seed = int(rng.integers(1 << 30))
    picked = run.sample(frac=0.2, random_state=seed)
    copies = picked.assign(score=picked["score"] + rng.choice([-2.0, 0.0, 0.5, 9.0], size=len(picked)))
    judged = qrels.sample(frac=0.1, random_state=seed)
    relabelled = judged.assign(relevance=judged["relevance"] + rng.integers(-1, 3, size=len(judged)))
    return (pd.concat([qrels, relabelled]).sample(frac=1, random_state=seed),
            pd.concat([run, copies]).sample(frac=1, random_state=seed + 1))


@pytest.mark.filterwarnings("ignore:.*run queries are (not )?in the qrels:RuntimeWarning")
@pytest.mark.parametrize("layout", ["grouped", "spread"])
def test_duplicates_max_gives_the_local_engines_numbers_with_spark_cutting_the_run(spark, layout):
    # duplicates='max' keeps each repeated pair once, at its highest score or label, as the local
    # engine's option does. With every measure at a cutoff the run is cut by Spark's own partial
    # limit (no Python before the shuffle); a query with two copies among its shipped rows makes
    # the evaluation run again with every row. Both ways against the local engine, bit for bit.
    from ndcg_plugin.provider import NdcgPluginProvider
    rng = np.random.default_rng(4242 + (layout == "spread"))
    cases = [_with_repeats(rng, *_long_case(rng)) for _ in range(60)]
    qrels = pd.concat([q.assign(query_id=f"c{i}|" + q["query_id"]) for i, (q, _) in enumerate(cases)])
    run = pd.concat([r.assign(query_id=f"c{i}|" + r["query_id"]) for i, (_, r) in enumerate(cases)])
    assert qrels.duplicated(["query_id", "doc_id"]).any() and run.duplicated(["query_id", "doc_id"]).any()
    for names in (TOP_K_MEASURES, MEASURES):
        measures = ndcg_plugin.parse_measures(names)
        evaluator = NdcgPluginProvider(duplicates="max").evaluator(measures, qrels)
        want = evaluator.calc_aggregate(run)
        want_rows = {(m.query_id, str(m.measure)): float(m.value) for m in evaluator.iter_calc(run)}
        ev = ndcg_spark.prepare(spark.createDataFrame(qrels), _laid_out(spark, run, layout), measures,
                                duplicates="max", ship="best")
        got, rows = ev.aggregates(), dict(ev.rows())
        # measures without a cutoff ship every row from the start; with cutoffs, some query here has
        # two copies among its best rows, so the cut plan ran and then shipped every row
        assert ev._ship_all == (names is TOP_K_MEASURES)
        assert ev.ship == ("all" if ev._ship_all else "best")
        assert all(same(got[m], want[m]) for m in measures), [(str(m), got[m], want[m]) for m in measures]
        for q, values in rows.items():
            for m, v in zip(measures, values, strict=True):
                assert same(v, want_rows[(q, str(m))]), (q, str(m))


def test_duplicates_max_with_copies_below_the_cut_needs_no_second_run(spark):
    # copies only below each query's best rows: Spark's cut drops them (the lower copy is the one
    # 'max' drops) and the numbers come from one run; a copy scoring above the first copy's rank
    # would have been shipped with it
    from ndcg_plugin.provider import NdcgPluginProvider
    rows = [(f"q{i % 5}", f"x{i}", float(i % 13)) for i in range(200)]
    low = [(q, d, s - 100.0) for q, d, s in rows[::7] if s < 5]        # below the top 3 of every query
    run = pd.DataFrame(rows + low, columns=["query_id", "doc_id", "score"])
    qrels = pd.DataFrame([(q, d, 1 + i % 3) for i, (q, d, _) in enumerate(rows[::4])] + [("q1", "x1", 0)],
                         columns=["query_id", "doc_id", "relevance"])
    measures = ndcg_plugin.parse_measures(["NDCG_exp@3", "HitRate_item@3", "MRR_zero@2"])
    want = NdcgPluginProvider(duplicates="max").evaluator(measures, qrels).calc_aggregate(run)
    for layout in ("grouped", "spread"):
        ev = ndcg_spark.prepare(spark.createDataFrame(qrels), _laid_out(spark, run, layout), measures,
                                duplicates="max", ship="best")
        plan = _plan_text(ev)
        assert "WindowGroupLimit" in plan and "Partial" in plan and "MapInArrow ship" not in plan
        got = ev.aggregates()
        assert not ev._ship_all, layout
        assert all(same(got[m], want[m]) for m in measures), layout


def test_duplicates_policies_spark_cannot_apply_are_refused_by_name(spark):
    qrels = spark.createDataFrame([("q", "d", 1)], ["query_id", "doc_id", "relevance"])
    run = spark.createDataFrame([("q", "d", 1.0)], ["query_id", "doc_id", "score"])
    with pytest.raises(ValueError, match="duplicates='first'.*no such order"):
        ndcg_spark.evaluate(qrels, run, ["HitRate@5"], duplicates="first")
    with pytest.raises(ValueError, match="duplicates must be one of .*got 'last'"):
        ndcg_spark.evaluate(qrels, run, ["HitRate@5"], duplicates="last")


def test_cli_duplicates_max_on_spark_prints_the_local_output(spark, capsys, tmp_path):
    # q1's d1 twice in the run (scores 1 and 3: 3 kept, d1 first) and in the qrels (labels 0 and 2:
    # 2 kept); without --duplicates max both engines refuse the run
    (tmp_path / "q.qrels").write_text("q1 0 d1 0\nq1 0 d2 1\nq1 0 d1 2\nq2 0 d3 1\n")
    (tmp_path / "r.trec").write_text("q1 Q0 d1 1 1.0 t\nq1 Q0 d2 2 2.0 t\nq1 Q0 d1 3 3.0 t\nq2 Q0 d4 1 1.0 t\n")
    args = [str(tmp_path / "q.qrels"), str(tmp_path / "r.trec"), "MRR_zero@10", "HitRate_item@1", "-p", "-1"]
    code, mine, err = _cli(capsys, "eval", "--engine", "spark", "--duplicates", "max", *args)
    assert code == 0, err
    code, local, _ = _cli(capsys, "eval", "--duplicates", "max", *args)
    # q1: d1 (label 2) ranks first: RR 1, one hit in the top 1; q2: d4 unjudged: RR 0, no hit
    assert mine == local == "MRR_zero@10\t0.5\nHitRate_item@1\t0.5\n"
    code, _, err = _cli(capsys, "eval", "--engine", "spark", *args)
    assert code == 2 and "duplicate" in err


@pytest.mark.filterwarnings("ignore:.*run queries are (not )?in the qrels:RuntimeWarning")
def test_ship_auto_cuts_long_lists_and_ships_short_lists_whole(spark):
    # 'auto' looks at the run's first rows: 30 rows a query at @5 (more than 4 x 5) are cut to each
    # query's best before the shuffle, 8 rows a query at @5 (fewer) are shuffled whole; the numbers
    # are the local engine's both ways
    from ndcg_plugin.provider import NdcgPluginProvider
    measures = ndcg_plugin.parse_measures(["NDCG_exp@5", "HitRate_item@5", "MRR_ignore@3"])
    for per_query, want_ship in ((30, "best"), (8, "all"), (11, "all")):
        run = pd.DataFrame([(f"q{i}", f"d{j}", float((i * 7 + j * 3) % 11))
                            for i in range(40) for j in range(per_query)], columns=["query_id", "doc_id", "score"])
        qrels = pd.DataFrame([(f"q{i}", f"d{j}", (i + j) % 4) for i in range(0, 44, 2) for j in range(0, 30, 3)],
                             columns=["query_id", "doc_id", "relevance"])
        want = NdcgPluginProvider().evaluator(measures, qrels).calc_aggregate(run)
        ev = ndcg_spark.prepare(spark.createDataFrame(qrels), _laid_out(spark, run, "grouped"), measures)
        assert ev.ship == "auto"  # prepared: nothing has run, the sample waits for the first action
        got = ev.aggregates()
        assert ev.ship == want_ship, per_query
        assert ("MapInArrow ship" in _plan_text(ev)) == (want_ship == "best")
        assert all(same(got[m], want[m]) for m in measures), (per_query, got, want)


def test_ship_options_spark_cannot_apply_are_refused_by_name(spark):
    qrels = spark.createDataFrame([("q", "d", 1)], ["query_id", "doc_id", "relevance"])
    run = spark.createDataFrame([("q", "d", 1.0)], ["query_id", "doc_id", "score"])
    with pytest.raises(ValueError, match="ship must be one of .*got 'some'"):
        ndcg_spark.evaluate(qrels, run, ["HitRate@5"], ship="some")
