"""The Spark engine (ndcg_plugin.spark) against the local engine: a differential test on many
random cases, run as one Spark job (each case's query ids carry their own prefix), plus inputs,
errors and the CLI. Needs the [spark] extra and Java; one SparkSession (local[2]) serves all."""
from __future__ import annotations

import math
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

MEASURES = [
    "NDCG_lin@3", "NDCG_exp@5", "NDCG_lin", "NDCG_exp", "NDCG_lin(ideal='run')@3", "NDCG_exp(ideal='run')",
    "NDCG_lin(judged_only=True)@3", "NDCG_exp(judged_only=True,ideal='run')@4",
    "NDCG_lin(gains={0:0.5,2:3.0,4:0})@4", "NDCG_exp(gains={1:2.5})@2",
    "HitRate@1", "HitRate@3", "HitRate(rel=2)@5", "HitRate_item@2", "HitRate_item@10", "HitRate_item(rel=3)@4",
    "MRR_zero@3", "MRR_zero(rel=2)@10", "MRR_ignore@2", "MRR_ignore(rel=2)@5",
    "nDCG@5", "nDCG(dcg='exp-log2')@3", "RR(rel=2)@4", "Success@2",
]
ODD_IDS = ["d", "D", "d1", "d10", "d2", "01", "1", "é", "e\u0301", "a#b", "x\u00a0y", "\u3000", "zz", "Ω", "d 1"]
CASES = 240


@pytest.fixture(scope="session")
def spark():
    s = ndcg_spark.session("local[2]", {"spark.sql.shuffle.partitions": "4",
                                         "spark.sql.adaptive.enabled": "false"})
    yield s


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


def _local(qrels: pd.DataFrame, run: pd.DataFrame, measures: list) -> tuple[dict, dict]:
    """(aggregates, {(query, measure): value}) from the local engine (the plugin's provider)."""
    evaluator = ir_measures.providers.registry["ndcg_plugin"].evaluator(measures, qrels)
    aggregates = evaluator.calc_aggregate(run)
    per_query = {(m.query_id, str(m.measure)): float(m.value) for m in evaluator.iter_calc(run)}
    return aggregates, per_query


def _same(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or abs(a - b) <= 1e-12


def _batched(spark, cases: list, measures: list):
    """Every case in one Spark evaluation: case i's query ids are prefixed 'c<i>|'."""
    qrels = pd.concat([q.assign(query_id=f"c{i}|" + q["query_id"]) for i, (q, _) in enumerate(cases)])
    run = pd.concat([r.assign(query_id=f"c{i}|" + r["query_id"]) for i, (_, r) in enumerate(cases)])
    ev = ndcg_spark.prepare(spark.createDataFrame(qrels), spark.createDataFrame(run), measures)
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
            local_agg, local_pq = _local(qrels, run, measures)
        for m in measures:
            assert _same(aggregates[f"c{i}"][m], local_agg[m]), (i, str(m), aggregates[f"c{i}"][m], local_agg[m])
        mine = {(q, m): v for (c, q, m), v in per_query.items() if c == f"c{i}"}
        assert set(mine) == set(local_pq), i
        for key, value in local_pq.items():
            assert _same(mine[key], value), (i, key, mine[key], value)
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
    ([("q", "d", 1.0), ("q", "d", 2.0)], "run", "'q d' occurs 2 times"),
    ([("q", "d", 1), ("q", "d", 0)], "qrels", "'q d' occurs 2 times"),
])
def test_bad_input_is_refused(spark, rows, kind, message):
    good = {"run": [("q", "d", 1.0)], "qrels": [("q", "d", 1)]}
    good[kind] = rows
    qrels = spark.createDataFrame(good["qrels"], "query_id string, doc_id string, relevance long")
    run = spark.createDataFrame(good["run"], "query_id string, doc_id string, score double")
    with pytest.raises(ValueError, match=message):
        ndcg_spark.evaluate(qrels, run, ["NDCG_lin@3"])


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
    with pytest.raises(ValueError, match="not AP"):
        ndcg_spark.evaluate(qrels, run, ["AP"])


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
