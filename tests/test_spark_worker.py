"""What the Spark engine plan runs in its Python workers (ndcg_plugin.spark.worker), without Spark:
the rows shipped before the shuffle hold every row that can matter, and a partition's values and
partial sums are the local engine's."""
from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

pytest.importorskip("pyspark", reason="the [spark] extra (pyspark) is not installed")

import ir_measures  # noqa: E402

import ndcg_plugin  # noqa: E402
from ndcg_plugin.arrays.exact import ExactSum  # noqa: E402
from ndcg_plugin.measures import spec_of  # noqa: E402
from ndcg_plugin.spark import worker  # noqa: E402
from ndcg_plugin.spark.partitions import outputs  # noqa: E402

MEASURES = ["NDCG_lin@3", "NDCG_exp@5", "HitRate@2", "HitRate_item@3", "MRR_zero@2", "MRR_ignore@3",
            "NDCG_exp(judged_only=True)@4", "NDCG_lin", "RR(rel=2)@4"]


def _table(q: list, d: list, s: list, split: list | None = None) -> pa.Table:
    return pa.table({"q": q, "d": d, "s": pa.array(s, pa.float64()),
                     "split": pa.array(split if split is not None else [0] * len(q), pa.int64())})


def _shipped(t: pa.Table, k: int) -> dict:
    out = worker.shipped_rows(t, k, 7)
    assert out.column_names == ["q", "d", "s", "x"]
    assert {x // 2 for x in out.column("x").to_pylist()} <= {7}   # the partition, x = 2 * pid + tag
    return {(q, d, s): x % 2 for q, d, s, x in zip(*(out.column(c).to_pylist() for c in ("q", "d", "s", "x")),
                                                   strict=True)}


def test_edge_queries_go_whole_and_inner_ones_keep_their_best_rows():
    # one split: a (first) and c (last) are edges; b lies inside: its 2 best rows (k = 2), the tie
    # at the 2nd score kept
    q = ["a"] * 4 + ["b"] * 5 + ["c"] * 3
    s = [1, 2, 3, 4, 5, 4, 4, 1, 0, 1, 2, 3]
    d = [f"x{i}" for i in range(12)]
    got = _shipped(_table(q, d, s), 2)
    assert {(q_, d_) for q_, d_, _ in got if q_ != "b"} == {(q[i], d[i]) for i in range(12) if q[i] != "b"}
    assert all(tag == worker.WHOLE for (q_, _, _), tag in got.items() if q_ != "b")
    assert {d_ for q_, d_, _ in got if q_ == "b"} == {"x4", "x5", "x6"}      # scores 5, 4, 4
    assert all(tag == worker.CAND for (q_, _, _), tag in got.items() if q_ == "b")


def test_each_file_split_has_its_own_edges():
    # splits [a a b] [b c c] [d]: every query is at an edge of a split; x is inside [x ... ]
    q = ["a", "a", "b", "b", "c", "c", "d", "y", "x", "x", "x", "z"]
    split = [0, 0, 0, 1, 1, 1, 2, 3, 3, 3, 3, 3]
    got = _shipped(_table(q, [str(i) for i in range(12)], [float(i) for i in range(12)], split), 1)
    whole = {q_ for (q_, _, _), tag in got.items() if tag == worker.WHOLE}
    assert whole == {"a", "b", "c", "d", "y", "z"}
    assert {d_ for q_, d_, _ in got if q_ == "x"} == {"10"}


def test_a_query_in_the_middle_of_a_split_and_at_its_edge_too_is_not_whole():
    # runs [a] [b] [a] [c]: a starts the split but comes back inside it; c ends it
    q = ["a", "b", "a", "c"]
    got = _shipped(_table(q, ["1", "2", "3", "4"], [2.0, 3.0, 4.0, 1.0]), 1)
    assert {(q_, d_): tag for (q_, d_, _), tag in got.items()} == {("a", "3"): worker.CAND, ("b", "2"): worker.CAND,
                                                                   ("c", "4"): worker.WHOLE}


def test_repeated_pairs_are_shipped_even_below_the_cutoff():
    q = ["s"] + ["b"] * 6 + ["e"]
    d = ["0", "top", "x", "y", "x", "z", "w", "9"]
    s = [0.0, 9.0, 1.0, 2.0, 0.5, 3.0, 4.0, 0.0]
    got = _shipped(_table(q, d, s), 1)
    assert sorted((d_, s_) for q_, d_, s_ in got if q_ == "b") == [("top", 9.0), ("x", 0.5), ("x", 1.0)]


@pytest.mark.parametrize("seed", range(40))
def test_shipped_rows_hold_each_querys_k_best_in_trec_eval_order(seed):
    # the k best rows of a query (score descending, then doc id descending as strings) are among
    # those shipped from the partition: whatever the layout, ties, integer or string ids
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 300))
    ints = seed % 2 == 0
    q = rng.integers(0, 12, size=n)
    if seed % 3:
        q = np.sort(q)
    d = rng.permutation(np.arange(n) * 7 + 3)
    s = rng.choice([0.0, 1.0, 2.5, -1.0, 3.0], size=n)
    split = np.sort(rng.integers(0, 3, size=n))
    k = int(rng.integers(1, 6))
    t = _table(q.tolist() if ints else [f"q{x}" for x in q], d.tolist() if ints else [f"d{x}" for x in d],
               s.tolist(), split.tolist())
    got = _shipped(t, k)
    frame = pd.DataFrame({"q": t.column("q").to_pylist(), "d": t.column("d").to_pylist(), "s": s})
    frame["key"] = frame["d"].astype(str)
    for _, rows in frame.groupby("q"):
        best = rows.sort_values(["s", "key"], ascending=False).head(k)
        assert all((r.q, r.d, r.s) in got for r in best.itertuples()), (seed, best)
    assert len(got) == len(set(got))


@pytest.mark.parametrize("seed", range(40))
def test_integer_ids_ship_the_rows_their_decimal_strings_ship(seed):
    # the integer path (ids as their own keys, no string per row) against the same ids cast to
    # strings: the same rows with the same tags, repeated pairs (some) included
    rng = np.random.default_rng(1000 + seed)
    n = int(rng.integers(1, 400))
    q = rng.integers(-3, 15, size=n) * (10 ** int(rng.integers(0, 12)))
    if seed % 3:
        q = np.sort(q)
    d = rng.integers(-5, 40, size=n) if seed % 2 else rng.permutation(np.arange(n) - 100)
    s = rng.choice([0.0, 1.0, 2.5, -1.0, 3.0], size=n)
    split = np.sort(rng.integers(0, 3, size=n))
    k = int(rng.integers(1, 6))
    ints = worker.shipped_rows(_table(q.tolist(), d.tolist(), s.tolist(), split.tolist()), k, 3)
    text = worker.shipped_rows(_table([str(x) for x in q], [str(x) for x in d], s.tolist(), split.tolist()), k, 3)
    assert ints.column("q").type == pa.int64() and text.column("q").type == pa.string()
    as_text = [(str(a), str(b), c, x) for a, b, c, x in zip(*(ints.column(n).to_pylist() for n in "qdsx"), strict=True)]
    assert as_text == list(zip(*(text.column(n).to_pylist() for n in "qdsx"), strict=True))


def _case(rng: np.random.Generator) -> tuple[pd.DataFrame, pd.DataFrame]:
    queries = [f"q{i}" for i in range(int(rng.integers(1, 8)))]
    docs = [f"d{i}" for i in range(int(rng.integers(2, 12)))]
    qrels = [(q, d, int(rng.integers(-1, 4))) for q in queries if rng.random() < 0.8 for d in docs
             if rng.random() < 0.5]
    run = [(q, d, float(rng.choice([0.0, 1.0, 2.0, 0.5]))) for q in queries if rng.random() < 0.8 for d in docs
           if rng.random() < 0.7]
    qrels = qrels or [("qz", "d0", 1)]
    run = run + [("only_run", "d0", 1.0)] if rng.random() < 0.3 else run
    return (pd.DataFrame(qrels, columns=["query_id", "doc_id", "relevance"]),
            pd.DataFrame(run or [("qy", "d1", 1.0)], columns=["query_id", "doc_id", "score"]))


def _shuffled(qrels: pd.DataFrame, run: pd.DataFrame) -> pa.Table:
    n, m = len(run), len(qrels)
    return pa.table({
        "q": run["query_id"].tolist() + qrels["query_id"].tolist(),
        "d": run["doc_id"].tolist() + qrels["doc_id"].tolist(),
        "s": pa.array(run["score"].tolist() + [None] * m, pa.float64()),   # NULL: a qrels row
        "x": pa.array([worker.source(0, worker.WHOLE)] * n + qrels["relevance"].tolist(), pa.int64())})


@pytest.mark.parametrize("seed", range(30))
def test_a_partitions_values_and_sums_are_the_local_engines(seed):
    rng = np.random.default_rng(1000 + seed)
    qrels, run = _case(rng)
    measures = ndcg_plugin.parse_measures(MEASURES)
    outs = outputs(measures)
    wide = worker.evaluated(_shuffled(qrels, run), [spec_of(m) for m in measures], outs)
    assert wide.schema == worker.wide_schema(outs)
    evaluator = ir_measures.providers.registry["ndcg_plugin"].evaluator(measures, qrels)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        local = {(m.query_id, str(m.measure)): m.value for m in evaluator.iter_calc(run)}
        local_agg = evaluator.calc_aggregate(run)
    rows = wide.to_pylist()
    assert {r["q"] for r in rows if r["has_qrels"]} == set(qrels["query_id"])
    assert {r["q"] for r in rows if not r["has_qrels"]} == set(run["query_id"]) - set(qrels["query_id"])
    for r in rows:
        for m, o in zip(measures, outs, strict=True):
            if r["has_qrels"] and (r["q"], str(m)) in local:
                v = local[(r["q"], str(m))]
                assert (r[o.value] is None and math.isnan(v)) or r[o.value] == v, (r["q"], str(m))
    sums: dict = {}
    for r in worker.sums(wide, outs).to_pylist():
        if r["kind"] == "sum":
            sums.setdefault((r["i"], r["part"]), ExactSum()).add_parts([(r["shift"], r["hi"], r["mid"], r["lo"])],
                                                                      r["n"])
    for i, (m, o) in enumerate(zip(measures, outs, strict=True)):
        if o.hits is not None:
            from ndcg_plugin.arrays.exact import ratio
            got = ratio(sums[(i, "hits")], sums[(i, "den")])
        else:
            got = sums[(i, "value")].mean() if (i, "value") in sums else math.nan
        want = local_agg[m]
        assert got == want or (math.isnan(got) and math.isnan(want)), (str(m), got, want)


def test_repeated_pairs_and_spread_queries_are_flagged():
    qrels = pd.DataFrame([("q", "a", 1), ("q", "a", 2), ("p", "b", 1)], columns=["query_id", "doc_id", "relevance"])
    run = pd.DataFrame([("p", "b", 1.0), ("p", "c", 2.0), ("p", "b", 0.5), ("r", "z", 1.0)],
                       columns=["query_id", "doc_id", "score"])
    t = _shuffled(qrels, run)
    wide = worker.evaluated(t, [spec_of(ndcg_plugin.parse_measures(["HitRate@2"])[0])],
                            outputs(ndcg_plugin.parse_measures(["HitRate@2"])))
    got = {r["kind"]: r for r in worker.sums(wide, outputs(ndcg_plugin.parse_measures(["HitRate@2"]))).to_pylist()}
    assert got["dup_qrels"]["example"] == {"pair": ["q", "a"], "n": 2}
    assert got["dup_run"]["example"] == {"pair": ["p", "b"], "n": 2}
    assert got["unmatched"]["n"] == 1 and got["run_queries"]["n"] == 2 and got["unverified"]["n"] == 0
    # rows of p from two partitions, one of them only its best: p cannot be checked here
    x = np.array(t.column("x").to_pylist())
    x[0], x[1] = worker.source(0, worker.CAND), worker.source(1, worker.CAND)
    t2 = t.set_column(3, "x", pa.array(x, pa.int64()))
    wide2 = worker.evaluated(t2, [spec_of(ndcg_plugin.parse_measures(["HitRate@2"])[0])],
                             outputs(ndcg_plugin.parse_measures(["HitRate@2"])))
    assert {r["q"] for r in wide2.to_pylist() if r["unverified"]} == {"p"}


def test_the_tables_spark_is_told_of_are_named_in_its_ddl():
    outs = outputs(ndcg_plugin.parse_measures(["HitRate_item@3", "MRR_ignore@2"]))
    assert worker.ddl(worker.wide_schema(outs)) == (
        "q string, has_qrels boolean, returned bigint, dup_qrels struct<pair:array<string>,n:bigint>, "
        "dup_run struct<pair:array<string>,n:bigint>, unverified boolean, v0 double, hits0 double, "
        "n0 double, v1 double")
    with pytest.raises(ValueError, match=r"no Spark type for x: float"):
        worker.ddl(pa.schema([("x", pa.float32())]))
