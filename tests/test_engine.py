"""Conventions, one test named after each, and the NDCG tutorials' worked examples, with the
expected numbers computed by hand in the test (log2 discounts written out)."""
from __future__ import annotations

import math
import warnings
from math import log2

import ir_measures
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ndcg_plugin
from ndcg_plugin import HitRate, HitRate_item, InputError, MRR_ignore, MRR_zero, NDCG_exp, NDCG_lin
from ndcg_plugin.arrays.block import Block
from ndcg_plugin.engine.block import Unmatched
from tests.helpers import both_ways, qrels_df, ranked, run_df


def per_query(measure, qrels, run) -> dict:
    return {m.query_id: m.value for m in ir_measures.iter_calc([measure], qrels, run)}


def agg(measure, qrels, run) -> float:
    return ir_measures.calc_aggregate([measure], qrels, run)[measure]


def dcg(gains) -> float:
    return sum(g / log2(i + 2) for i, g in enumerate(gains))


# --- worked examples from the NDCG tutorials -------------------------------------------------

def test_worked_example_3_2_3_0_1_linear():
    q, r = ranked("q", [3, 2, 3, 0, 1])
    # DCG@5 = 3/log2(2) + 2/log2(3) + 3/log2(4) + 0/log2(5) + 1/log2(6) = 3 + 1.2619 + 1.5 + 0 + 0.3869
    # IDCG@5 over [3,3,2,1,0] = 3 + 1.8928 + 1 + 0.4307 + 0
    assert dcg([3, 2, 3, 0, 1]) / dcg([3, 3, 2, 1, 0]) == pytest.approx(0.9724, abs=5e-5)
    assert agg(NDCG_lin @ 5, qrels_df(q), run_df(r)) == pytest.approx(0.9724, abs=5e-5)
    # NDCG@3 = (3 + 2/log2 3 + 3/2) / (3 + 3/log2 3 + 2/2) = 0.9778
    assert agg(NDCG_lin @ 3, qrels_df(q), run_df(r)) == pytest.approx(0.9778, abs=5e-5)
    assert agg(NDCG_lin @ 5, qrels_df(q), run_df(r)) == pytest.approx(dcg([3, 2, 3, 0, 1]) / dcg([3, 3, 2, 1, 0]))


def test_worked_example_3_2_5_0_1_dcg_idcg():
    q, r = ranked("q", [3, 2, 5, 0, 1])
    assert dcg([3, 2, 5, 0, 1]) == pytest.approx(7.1487, abs=5e-5)   # 3 + 1.2619 + 2.5 + 0 + 0.3869
    assert dcg([5, 3, 2, 1, 0]) == pytest.approx(8.3235, abs=5e-5)   # 5 + 1.8928 + 1 + 0.4307
    assert agg(NDCG_lin @ 5, qrels_df(q), run_df(r)) == pytest.approx(0.8589, abs=5e-5)


def test_worked_example_1_3_2_0():
    q, r = ranked("q", [1, 3, 2, 0])
    # (1 + 3/log2 3 + 2/2 + 0) / (3 + 2/log2 3 + 1/2 + 0) = 3.8928 / 4.7619 = 0.8175
    assert agg(NDCG_lin @ 4, qrels_df(q), run_df(r)) == pytest.approx(0.8175, abs=5e-5)


def test_worked_example_mrr_first_relevant_at_2_1_none():
    qa, ra = ranked("a", [0, 1, 0])
    qb, rb = ranked("b", [1, 0, 0])
    qc, rc = ranked("c", [0, 0, 0])
    qrels, run = qrels_df(qa + qb + qc), run_df(ra + rb + rc)
    assert agg(MRR_zero @ 10, qrels, run) == pytest.approx((1 / 2 + 1 / 1 + 0) / 3)   # = 0.5
    assert agg(MRR_zero @ 10, qrels, run) == pytest.approx(0.5)
    assert agg(MRR_ignore @ 10, qrels, run) == pytest.approx((1 / 2 + 1 / 1) / 2)     # = 0.75


def test_exponential_gain_is_2_pow_rel_minus_1():
    q, r = ranked("q", [3, 2, 3, 0, 1])
    exp = [2 ** g - 1 for g in [3, 2, 3, 0, 1]]  # 7, 3, 7, 0, 1
    ideal = sorted(exp, reverse=True)
    assert agg(NDCG_exp @ 5, qrels_df(q), run_df(r)) == pytest.approx(dcg(exp) / dcg(ideal), abs=1e-12)


# --- conventions ----------------------------------------------------------------------------

def test_ties_broken_by_doc_id_descending():
    qrels = qrels_df([("q", "a", 1)])
    run = run_df([("q", "a", 1.0), ("q", "b", 1.0), ("q", "c", 1.0)])  # all tied: order c, b, a
    assert per_query(MRR_zero @ 3, qrels, run)["q"] == pytest.approx(1 / 3)
    assert per_query(HitRate @ 2, qrels, run)["q"] == 0.0
    # string order, not numeric: "9" > "10"
    qrels = qrels_df([("q", "10", 1)])
    run = run_df([("q", "10", 2.0), ("q", "9", 2.0)])
    assert per_query(MRR_zero @ 5, qrels, run)["q"] == pytest.approx(1 / 2)


def test_rank_column_is_ignored():
    qrels = "q 0 a 1\n"
    run = "q Q0 b 1 1.0 t\nq Q0 a 2 5.0 t\n"  # rank says b first, score says a first
    assert agg(MRR_zero @ 10, ndcg_plugin.read(qrels, "qrels"), ndcg_plugin.read(run, "run")) == 1.0


def test_query_missing_from_run_scores_zero():
    qrels = qrels_df([("q1", "a", 1), ("q2", "b", 1)])
    run = run_df([("q1", "a", 1.0)])
    for m in (NDCG_lin @ 10, NDCG_exp @ 10, HitRate @ 10, HitRate_item @ 10, MRR_zero @ 10):
        assert per_query(m, qrels, run) == {"q1": 1.0, "q2": 0.0}, m
        assert agg(m, qrels, run) == (1.0 if m.NAME == "HitRate_item" else 0.5), m
    values = per_query(MRR_ignore @ 10, qrels, run)
    assert values == {"q1": 1.0}  # q2 has no value: iter_calc yields no Metric for it
    assert agg(MRR_ignore @ 10, qrels, run) == 1.0


def test_run_query_not_in_qrels_is_ignored():
    qrels = qrels_df([("q1", "a", 1)])
    run = run_df([("q1", "b", 1.0), ("q9", "a", 1.0), ("q9", "x", 2.0)])
    for m in (NDCG_lin @ 10, HitRate @ 10, HitRate_item @ 10, MRR_zero @ 10):
        assert per_query(m, qrels, run) == {"q1": 0.0}, m


def test_query_with_no_returned_docs_adds_nothing_to_hitrate_item():
    # q1: 1 hit in 2 returned; q2: 3 returned, 0 hits; q3: nothing returned
    qrels = qrels_df([("q1", "a", 1), ("q2", "z", 1), ("q3", "a", 1)])
    run = run_df([("q1", "a", 2.0), ("q1", "b", 1.0), ("q2", "a", 3.0), ("q2", "b", 2.0), ("q2", "c", 1.0)])
    values = per_query(HitRate_item @ 10, qrels, run)
    assert values == {"q1": 0.5, "q2": 0.0, "q3": 0.0}
    assert agg(HitRate_item @ 10, qrels, run) == pytest.approx((1 + 0) / (2 + 3))  # micro: 0.2, not 1/6


def test_hitrate_item_micro_average_counts_min_k_returned():
    qrels = qrels_df([("q1", "a", 1), ("q1", "b", 1), ("q2", "c", 1)])
    run = run_df([("q1", "a", 5.0), ("q1", "b", 4.0), ("q1", "x", 3.0), ("q2", "c", 1.0)])
    # k=2: q1 has 2 hits in its top 2; q2 1 hit in 1 returned -> (2 + 1) / (2 + 1)
    assert agg(HitRate_item @ 2, qrels, run) == 1.0
    # k=3: q1 2 hits / 3, q2 1 / 1 -> micro 3/4 (the macro mean would be 5/6)
    assert agg(HitRate_item @ 3, qrels, run) == pytest.approx(3 / 4)


def test_negative_relevance_has_gain_zero_and_is_not_relevant():
    qrels = qrels_df([("q", "neg", -1), ("q", "rel", 1)])
    run = run_df([("q", "neg", 2.0), ("q", "rel", 1.0)])
    assert per_query(MRR_zero @ 10, qrels, run)["q"] == 0.5
    assert per_query(HitRate @ 1, qrels, run)["q"] == 0.0
    # DCG = 0 + 1/log2(3); IDCG = 1 (the negative doc is not in the ideal)
    assert per_query(NDCG_lin @ 10, qrels, run)["q"] == pytest.approx(1 / log2(3))
    assert per_query(NDCG_exp @ 10, qrels, run)["q"] == pytest.approx(1 / log2(3))


def test_query_without_relevant_docs_scores_zero_and_has_no_mrr_ignore_value():
    qrels = qrels_df([("q", "a", 0), ("q", "b", -1), ("p", "c", 1)])
    run = run_df([("q", "a", 2.0), ("q", "b", 1.0), ("p", "c", 1.0)])
    for m in (NDCG_lin @ 10, NDCG_exp @ 10, NDCG_lin, HitRate @ 10, MRR_zero @ 10, HitRate_item @ 10):
        assert per_query(m, qrels, run)["q"] == 0.0, m
    assert per_query(MRR_ignore @ 10, qrels, run) == {"p": 1.0}  # no Metric for q: it has no value


def test_mrr_ignore_is_nan_with_a_warning_when_no_query_has_a_value():
    qrels = qrels_df([("q", "a", 1)])
    run = run_df([("q", "b", 1.0)])
    with pytest.warns(RuntimeWarning, match="no query has a value"):
        assert math.isnan(agg(MRR_ignore @ 10, qrels, run))


def test_rel_threshold_counts_labels_at_or_above():
    qrels = qrels_df([("q", "a", 1), ("q", "b", 2)])
    run = run_df([("q", "a", 2.0), ("q", "b", 1.0)])
    assert per_query(MRR_zero(rel=2) @ 10, qrels, run)["q"] == 0.5
    assert per_query(HitRate(rel=2) @ 1, qrels, run)["q"] == 0.0
    assert per_query(HitRate_item(rel=2) @ 2, qrels, run)["q"] == 0.5
    assert per_query(MRR_zero(rel=3) @ 10, qrels, run)["q"] == 0.0


def test_ideal_from_qrels_uses_all_judged_docs():
    qrels = qrels_df([("q", "a", 1), ("q", "b", 3)])  # b is judged but never retrieved
    run = run_df([("q", "a", 1.0)])
    assert per_query(NDCG_lin @ 10, qrels, run)["q"] == pytest.approx(1 / (3 + 1 / log2(3)))


def test_ideal_from_run_uses_all_retrieved_docs_not_only_top_k():
    qrels = qrels_df([("q", "a", 1), ("q", "b", 3), ("q", "c", 2)])
    run = run_df([("q", "a", 3.0), ("q", "x", 2.0), ("q", "b", 1.0)])  # c never retrieved
    # @2: DCG = 1 + 0; ideal from retrieved {a:1, x:0, b:3} -> [3, 1] -> 3 + 1/log2 3
    assert per_query(NDCG_lin(ideal="run") @ 2, qrels, run)["q"] == pytest.approx(1 / (3 + 1 / log2(3)))
    # ideal from qrels -> [3, 2]
    assert per_query(NDCG_lin @ 2, qrels, run)["q"] == pytest.approx(1 / (3 + 2 / log2(3)))


def test_ndcg_without_cutoff_uses_the_whole_list():
    q, r = ranked("q", [0] * 20 + [1])
    assert agg(NDCG_lin, qrels_df(q), run_df(r)) == pytest.approx(1 / log2(22))
    assert agg(NDCG_lin @ 20, qrels_df(q), run_df(r)) == 0.0


def test_gains_override_listed_labels_only():
    q, r = ranked("q", [1, 2, 3])
    # gains {2: 10}: labels 1 and 3 keep the linear gain -> [1, 10, 3], ideal [10, 3, 1]
    expected = dcg([1, 10, 3]) / dcg([10, 3, 1])
    assert agg(NDCG_lin(gains={2: 10}) @ 3, qrels_df(q), run_df(r)) == pytest.approx(expected)
    # exponential family: unlisted labels keep 2^rel - 1 -> [1, 10, 7]
    expected = dcg([1, 10, 7]) / dcg([10, 7, 1])
    assert agg(NDCG_exp(gains={2: 10}) @ 3, qrels_df(q), run_df(r)) == pytest.approx(expected)


def test_a_gain_for_label_0_goes_to_judged_docs_only():
    # gains {0: 5}: "a" judged 0 gains 5, "x" unjudged gains 0 -> DCG 0 + 5/log2(3) + 1/log2(4);
    # ideal: gains 5 (a) then 1 (b) -> 5 + 1/log2(3)
    qrels = qrels_df([("q", "a", 0), ("q", "b", 1)])
    run = run_df([("q", "x", 3.0), ("q", "a", 2.0), ("q", "b", 1.0)])
    expected = (5 / log2(3) + 1 / log2(4)) / (5 + 1 / log2(3))
    assert per_query(NDCG_lin(gains={0: 5}) @ 3, qrels, run)["q"] == pytest.approx(expected, abs=1e-15)
    expected_exp = (5 / log2(3) + 1 / log2(4)) / (5 + 1 / log2(3))  # 2^1 - 1 = 1: the same gains
    assert per_query(NDCG_exp(gains={0: 5}) @ 3, qrels, run)["q"] == pytest.approx(expected_exp, abs=1e-15)


def test_judged_only_drops_unjudged_docs_before_cutting():
    qrels = qrels_df([("q", "a", 1), ("q", "b", 1)])
    run = run_df([("q", "x", 3.0), ("q", "a", 2.0), ("q", "b", 1.0)])
    assert per_query(NDCG_lin(judged_only=True) @ 2, qrels, run)["q"] == pytest.approx(1.0)
    assert per_query(NDCG_lin @ 2, qrels, run)["q"] == pytest.approx((1 / log2(3)) / (1 + 1 / log2(3)))


def test_cutoff_required_for_hitrate_and_mrr():
    for m in (HitRate, HitRate_item, MRR_zero, MRR_ignore):
        with pytest.raises(ValueError, match="needs a cutoff"):
            ir_measures.calc_aggregate([m], qrels_df([("q", "a", 1)]), run_df([("q", "a", 1.0)]))


def test_duplicate_run_pairs_are_an_error_naming_both_lines():
    run = "q Q0 a 1 2.0 t\nq Q0 b 2 1.5 t\nq Q0 a 3 1.0 t\n"
    with pytest.raises(InputError, match=r"lines 1 and 3") as e:
        ndcg_plugin.read(run, "run")
    assert e.value.line == 3


def test_duplicate_qrels_pairs_are_an_error_naming_both_lines():
    with pytest.raises(InputError, match=r"lines 2 and 3"):
        ndcg_plugin.read("q 0 a 1\nq 0 b 0\nq 0 b 1\n", "qrels")
    with pytest.raises(InputError, match="duplicate"):
        ir_measures.calc_aggregate([NDCG_lin @ 5], list(ir_measures.read_trec_qrels("q 0 a 1\nq 0 a 1\n")),
                                   run_df([("q", "a", 1.0)]))


def test_duplicates_keep_first_or_max_when_asked():
    run = "q Q0 a 1 1.0 t\nq Q0 b 2 1.5 t\nq Q0 a 3 2.0 t\n"
    first = ndcg_plugin.read(run, "run", duplicates="first")
    assert first.set_index("doc_id")["score"].to_dict() == {"a": 1.0, "b": 1.5}
    best = ndcg_plugin.read(run, "run", duplicates="max")
    assert best.set_index("doc_id")["score"].to_dict() == {"a": 2.0, "b": 1.5}


def test_inputs_are_not_modified():
    qrels = qrels_df([("q", "a", 1), ("q", "b", 2)])
    run = run_df([("q", "b", 1.0), ("q", "a", 2.0)])
    qd, rd = {"q": {"a": 1}}, {"q": {"a": 1.0, "b": 3.0}}
    before = (qrels.copy(), run.copy(), repr(qd), repr(rd))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ir_measures.calc_aggregate([NDCG_exp @ 5, HitRate_item @ 5, MRR_ignore @ 5], qrels, run)
        ir_measures.calc_aggregate([NDCG_exp @ 5, HitRate_item @ 5, MRR_ignore @ 5], qd, rd)
    assert qrels.equals(before[0]) and run.equals(before[1])
    assert (repr(qd), repr(rd)) == before[2:]


# --- fast paths against the general computation they stand for -------------------------------

@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 6), st.integers(-2, 40)), max_size=120),
       st.sampled_from([None, 1, 3, 10]), st.sampled_from(["linear", "exp"]))
def test_ideal_dcg_from_the_shared_label_order_equals_the_sort_of_gains(rows, cutoff, variant):
    # the IDCG the variants take from one ideal order by label (ndcg.ideal_by_label, or the C loop
    # of ndcg_plugin.arrays.speedups when built) against the variant's own sort of its gains
    # (ndcg.ideal_dcg): bit for bit, rows in any order
    import numpy as np

    from ndcg_plugin.measures import ndcg
    from ndcg_plugin.measures.base import Spec
    from ndcg_plugin.ranking.qrels_index import QrelsIndex

    rows = rows + [(7, (i * 7) % 11 - 1) for i in range(50)]  # and a query of 50 judgments (44 positive)
    judgments = list({(f"q{q}", f"d{i}"): rel for i, (q, rel) in enumerate(rows)}.items())
    qrels = qrels_df([(q, d, rel) for (q, d), rel in judgments] or [("q0", "d", 0)])
    index = QrelsIndex(ndcg_plugin.read(qrels, "qrels"))
    spec = Spec("ndcg", variant, cutoff)
    general = ndcg.ideal_dcg(index.key_q, ndcg.gain_of(index.rel, spec), cutoff, index.nq)
    for _, way in both_ways():
        with way:
            fast = ndcg.FAMILY._idcg(index, spec)
        assert fast.view(np.int64).tolist() == general.view(np.int64).tolist()


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.integers(0, 12), st.integers(0, 9), st.integers(0, 4)), max_size=120),
       st.lists(st.tuples(st.integers(0, 14), st.integers(0, 9), st.sampled_from([0.5, 1.0, 2.0, 3.5])), min_size=8,
                max_size=150),
       st.integers(1, 12), st.sampled_from([True, True, True, False]))
def test_a_run_in_blocks_gives_the_values_of_one_block(monkeypatch, judgments, rows, block_rows, grouped):
    # engine.compute_in_blocks (blocks of whole queries, on worker threads) against engine.compute
    # (the whole run as one block), bit for bit, for every family and the variants that rank
    # differently (judged_only, ideal='run', ties='average')
    import numpy as np

    from ndcg_plugin import sizes
    from ndcg_plugin.engine import block as engine
    from ndcg_plugin.measures import spec_of
    from ndcg_plugin.ranking.qrels_index import QrelsIndex

    qrels = ndcg_plugin.read(qrels_df(list({(f"q{q}", f"d{d}"): (f"q{q}", f"d{d}", r)
                                            for q, d, r in judgments}.values()) or [("q0", "d0", 1)]), "qrels")
    pairs = list({(f"q{q}", f"d{d}"): (f"q{q}", f"d{d}", s) for q, d, s in rows}.values()) or [("q1", "d1", 1.0)]
    if grouped:
        pairs.sort(key=lambda r: r[0])
    run = ndcg_plugin.read(run_df(pairs), "run")
    measures = [NDCG_lin @ 3, NDCG_exp @ 5, HitRate @ 2, HitRate_item @ 3, MRR_zero @ 2, MRR_ignore @ 4,
                NDCG_lin(ideal="run") @ 4, NDCG_exp(judged_only=True) @ 3, MRR_zero(ties="average") @ 3]
    specs = [spec_of(m) for m in measures]
    index = QrelsIndex(qrels)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        whole = engine.compute(index, run, specs, counts=Unmatched())
        monkeypatch.setattr(sizes, "BLOCK_ROWS", block_rows)
        blocks = engine.compute_in_blocks(index, run, specs)
    for spec in specs:
        for a, b in ((whole[spec].values, blocks[spec].values), (whole[spec].hits, blocks[spec].hits),
                     (whole[spec].returned, blocks[spec].returned)):
            if a is not None:
                assert np.asarray(a, dtype=np.float64).view(np.int64).tolist() == \
                    np.asarray(b, dtype=np.float64).view(np.int64).tolist()


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 8), st.integers(0, 9), st.integers(-1, 4)), min_size=1, max_size=100),
       st.lists(st.tuples(st.integers(0, 8), st.integers(0, 9), st.sampled_from([0.5, 1.0, 2.0])), max_size=120),
       st.booleans())
def test_a_block_of_every_qrels_query_gives_the_values_scattered_over_the_empty_ones(judgments, rows, every):
    # engine.compute takes a block's own values when its queries are every qrels query in the
    # index's order (covers_all); against empty_values + scatter of the same block, which it
    # stands for: the same doubles and dtypes, for every family and the variants that rank apart
    import numpy as np

    from ndcg_plugin.engine import block as engine
    from ndcg_plugin.measures import spec_of
    from ndcg_plugin.ranking.qrels_index import QrelsIndex

    judged = {(f"q{q}", f"d{d}"): (f"q{q}", f"d{d}", r) for q, d, r in judgments}
    pairs = {(f"q{q}", f"d{d}"): (f"q{q}", f"d{d}", s) for q, d, s in rows}
    if every:  # a row for each qrels query, so that the block covers them all
        for q in {q for q, _ in judged}:
            pairs.setdefault((q, "dx"), (q, "dx", 0.25))
    if not pairs:
        pairs[("q0", "dx")] = ("q0", "dx", 1.0)
    index = QrelsIndex(ndcg_plugin.read(qrels_df(list(judged.values())), "qrels"))
    run = ndcg_plugin.read(run_df(sorted(pairs.values())), "run")
    measures = [NDCG_lin @ 3, NDCG_exp @ 5, HitRate @ 2, HitRate_item @ 3, MRR_zero @ 2, MRR_ignore @ 4,
                NDCG_lin(ideal="run") @ 4, NDCG_exp(judged_only=True) @ 3, MRR_zero(ties="average") @ 3]
    specs = [spec_of(m) for m in measures]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = engine.compute(index, run, specs, counts=Unmatched())
        block = engine.compute_block(index, Block.of(run), specs)
    assert engine.covers_all(block, index.nq) == (every or len(block.codes) == index.nq)
    expected = engine.empty_values(index, specs)
    engine.scatter(expected, block)
    for spec in specs:
        for a, b in ((got[spec].values, expected[spec].values), (got[spec].hits, expected[spec].hits),
                     (got[spec].returned, expected[spec].returned)):
            assert (a is None) == (b is None)
            if a is not None:
                assert a.dtype == b.dtype and a.flags.writeable
                assert a.view(np.uint8).tolist() == b.view(np.uint8).tolist()
