"""The public contract of the measures: names, parsing, printing, registration."""
from __future__ import annotations

import importlib
import math
import pickle
import re

import ir_measures
import pytest

import ndcg_plugin
from ndcg_plugin import HitRate, HitRate_item, MRR_ignore, MRR_zero, NDCG_exp, NDCG_lin
from ndcg_plugin.measures import spec_of
from ndcg_plugin.measures.aggregate import ItemValue, MicroAgg

NAMES = ["NDCG_lin", "NDCG_exp", "HitRate", "HitRate_item", "MRR_zero", "MRR_ignore"]


@pytest.mark.parametrize("text", [
    "NDCG_lin@10", "NDCG_exp@10", "NDCG_lin", "HitRate@5", "HitRate_item@10", "MRR_zero@10", "MRR_ignore@10",
    "MRR_zero(rel=2)@10", "NDCG_exp(ideal='run')@10", "HitRate(rel=2)@10", "NDCG_lin(judged_only=True)@5",
    "NDCG_exp(gains={1:3,2:9,4:4.5})@10", "NDCG_exp(gains={2:2})@5",
])
def test_parse_and_print_round_trip(text):
    m = ir_measures.parse_measure(text)
    assert str(m) == text
    assert ir_measures.parse_measure(str(m)) == m


def test_defaults_are_omitted_when_printing():
    assert str(MRR_zero(rel=1) @ 10) == "MRR_zero@10"
    assert str(NDCG_exp(ideal="qrels") @ 10) == "NDCG_exp@10"
    assert str(NDCG_lin(judged_only=False)) == "NDCG_lin"


def test_gains_print_and_compare_faithfully():
    # ir-measures' own printing drops {2:2}, making it equal to {}; the plugin's does not
    assert str(NDCG_exp(gains={2: 2}) @ 5) == "NDCG_exp(gains={2:2})@5"
    assert NDCG_exp(gains={2: 2}) @ 5 != NDCG_exp(gains={}) @ 5
    assert NDCG_exp(gains={2: 2}) @ 5 != NDCG_exp @ 5
    assert str(ir_measures.nDCG(gains={2: 2}) @ 5) == "nDCG(gains={})@5"  # the quirk, for the record


def test_objects_importable_and_usable_with_at():
    from ndcg_plugin import NDCG_exp as imported
    assert (imported @ 10)["cutoff"] == 10
    assert [m.NAME for m in (NDCG_lin, NDCG_exp, HitRate, HitRate_item, MRR_zero, MRR_ignore)] == NAMES


def test_registered_with_ir_measures():
    for name in NAMES:
        assert name in ir_measures.measures.registry
    assert "ndcg_plugin" in ir_measures.providers.registry
    # last in the pipeline, serving the six measures only: built-ins keep their providers
    view = ir_measures.DefaultPipeline.providers[-1]
    assert view.NAME == "ndcg_plugin" and view.provider is ir_measures.providers.registry["ndcg_plugin"]
    assert not view.serve_builtins
    # ir-measures 0.4.3 has parse_measure only; ndcg_plugin.parse_measures parses several at once
    assert ndcg_plugin.parse_measures(["NDCG_exp@10 nDCG@10", "AP", "NDCG_exp@10"]) == [
        NDCG_exp @ 10, ir_measures.nDCG @ 10, ir_measures.AP]


def test_register_is_idempotent():
    n_providers = len(ir_measures.DefaultPipeline.providers)
    ndcg_plugin.register()
    ndcg_plugin.register()
    importlib.reload(ndcg_plugin)
    assert len(ir_measures.DefaultPipeline.providers) == n_providers
    assert sum(getattr(p, "NAME", "") == "ndcg_plugin" for p in ir_measures.DefaultPipeline.providers) == 1
    assert ir_measures.parse_measure("NDCG_lin@3") == NDCG_lin @ 3


def test_registering_over_a_foreign_measure_is_refused(monkeypatch):
    monkeypatch.setitem(ir_measures.measures.registry, "HitRate", ir_measures.Success)
    with pytest.raises(RuntimeError, match="already has a measure"):
        ndcg_plugin.register()


@pytest.mark.parametrize("text,message", [
    ("HitRate", "needs a cutoff"),
    ("MRR_zero", "needs a cutoff"),
    ("HitRate@0", "positive integer"),
    (NDCG_lin @ -3, "positive integer"),
    ("HitRate(foo=1)@3", "unknown parameter.*valid parameters: cutoff"),
    ("NDCG_lin(ideal='best')@3", "ideal must be one of"),
    ("MRR_zero(rel=0)@3", "rel must be >= 1"),
    (HitRate(rel=-1) @ 3, "rel must be >= 1"),
    ("MRR_zero(rel='2')@3", "rel must be of type int"),
    (NDCG_exp(gains={-1: 2}) @ 3, "gains keys"),
    ("NDCG_exp(gains={1:'x'})@3", "gains values"),
])
def test_bad_parameters_are_clear_errors(text, message):
    with pytest.raises(ValueError, match=message):
        (ir_measures.parse_measure(text) if isinstance(text, str) else text).validate_params()


def test_docstrings_state_the_formulas():
    assert "2^rel - 1" in NDCG_exp.__doc__ and "log2(r + 1)" in NDCG_lin.__doc__
    assert "sum_q hits_k(q) / sum_q min(k, n_q)" in HitRate_item.__doc__
    assert "no value" in MRR_ignore.__doc__
    for m in (NDCG_lin, NDCG_exp, HitRate, HitRate_item, MRR_zero, MRR_ignore):
        assert all(p.desc for p in m.SUPPORTED_PARAMS.values())


def test_item_value_pickles_and_aggregates():
    v = pickle.loads(pickle.dumps(ItemValue(2, 4)))
    assert (float(v), v.hits, v.returned) == (0.5, 2, 4)
    agg = MicroAgg()
    agg.add(ItemValue(1, 2))
    agg.add(ItemValue(0, 0))
    agg.add(ItemValue(3, 3))
    assert agg.result() == 4 / 5
    with pytest.raises(TypeError, match="micro average"):
        agg.add(0.5)


def test_accepted_rel_and_gains_values():
    # rel: an integer >= 1 (rel=0 would count judged non-relevant docs, a negative rel negative
    # labels, which are never relevant); gains: labels >= 0 to any finite number
    for m in (HitRate(rel=1) @ 3, MRR_zero(rel=3) @ 3, NDCG_lin(gains={0: 0.5, 1: -1, 3: 2.5}) @ 3):
        m.validate_params()
    for bad in (NDCG_lin(gains={-1: 2}) @ 3, NDCG_lin(gains={1: float("inf")}) @ 3, NDCG_lin(gains={1: True}) @ 3,
                HitRate(rel=True) @ 3):
        with pytest.raises(ValueError):
            bad.validate_params()
    # a negative gain lowers DCG; the ideal ranking holds positive gains only. Docs a (label 1,
    # gain -1) at rank 1 and b (label 2, gain 2) at rank 2:
    # DCG = -1/log2(2) + 2/log2(3); IDCG = 2/log2(2)
    qrels = {"q": {"a": 1, "b": 2}}
    run = {"q": {"a": 2.0, "b": 1.0}}
    m = NDCG_lin(gains={1: -1}) @ 2
    expected = (-1 + 2 / math.log2(3)) / 2
    assert ir_measures.calc_aggregate([m], qrels, run)[m] == pytest.approx(expected, abs=1e-15)


def test_measure_strings_with_spaces_parse_as_ir_measures_parses_them():
    from ndcg_plugin import parse_measures
    got = parse_measures(["MRR_zero(rel=2, ties='average')@10 nDCG@10"])
    assert got == [MRR_zero(rel=2, ties="average") @ 10, ir_measures.nDCG @ 10]


@pytest.mark.parametrize("text,suggestion", [
    ("ndcg_cut.10", "nDCG@10 (the plugin's NDCG_lin@10)"), ("P.10", "P@10"), ("P_5", "P@5"),
    ("recip_rank", "RR (the plugin's MRR_zero@k)"), ("success.5", "Success@5 (the plugin's HitRate@5)"),
    ("map", "AP"), ("recall.100", "R@100"),
])
def test_trec_eval_measure_names_get_their_equivalent(text, suggestion):
    from ndcg_plugin import parse_measures
    with pytest.raises(ValueError) as e:
        parse_measures([text])
    assert repr(text) in str(e.value) and f"here it is {suggestion}" in str(e.value)


@pytest.mark.parametrize("builtin, mine", [
    ("nDCG@10", "NDCG_lin@10"), ("RR@10", "MRR_zero@10"), ("RR(rel=2)@10", "MRR_zero(rel=2)@10"),
    ("RR(rel=1)@10", "MRR_zero@10"), ("Success@5", "HitRate@5"), ("Success(rel=2)@5", "HitRate(rel=2)@5"),
    ("nDCG", None), ("RR", None), ("nDCG(dcg='exp-log2')@10", None), ("nDCG(gains={0:0,1:1})@10", None),
    ("RR(judged_only=True)@10", None), ("Success(judged_only=True)@5", None), ("AP(rel=2)", None),
    ("P@10", None), ("NDCG_lin@10", None),
])
def test_same_as_builtin(builtin, mine):
    from ndcg_plugin.measures import same_as_builtin
    got = same_as_builtin(ir_measures.parse_measure(builtin))
    assert (None if got is None else str(got)) == mine


@pytest.mark.parametrize("fields, message", [
    (dict(family="ndcg", variant="linear", cutoff=10, ideal="bogus"), "ideal must be 'qrels' or 'run', got 'bogus'"),
    (dict(family="ndcg", variant="linear", cutoff=10, ties="bogus"), "ties must be 'trec' or 'average', got 'bogus'"),
    (dict(family="ndcg", variant="linear", cutoff=0), "cutoff must be None or an integer >= 1, got 0"),
    (dict(family="ndcg", variant="linear", cutoff=True), "cutoff must be None or an integer >= 1, got True"),
    (dict(family="ndcg", variant="linear", cutoff=2.5), "cutoff must be None or an integer >= 1, got 2.5"),
    (dict(family="mrr", variant="zero", cutoff=10, rel="2"), "rel must be an integer, got '2'"),
    (dict(family="mrr", variant="zero", cutoff=10, judged_only=1), "judged_only must be True or False, got 1"),
    (dict(family="ndcg", variant="linear", cutoff=10, gains={2: 3}), "gains must be a tuple of"),
    (dict(family="ndcg", variant="linear", cutoff=10, gains=((2, 3), (1, 1))), "labels increasing, got ((2, 3)"),
    (dict(family="ndcg", variant="linear", cutoff=10, gains=((2, 3), (2, 1))), "labels increasing, got ((2, 3)"),
    (dict(family="ndcg", variant="linear", cutoff=10, gains=((2.0, 3),)), "gains must be a tuple of"),
])
def test_a_spec_refuses_by_name_every_value_a_backend_would_not_know(fields, message):
    # Spec("ndcg", "linear", 10, ideal="bogus", ties="bogus") once computed as ideal='qrels', ties='trec'
    from ndcg_plugin.errors import Unsupported
    from ndcg_plugin.measures.base import Spec
    with pytest.raises(Unsupported, match=re.escape(message)):
        Spec(**fields)


def test_the_specs_of_every_measure_are_valid():
    from ndcg_plugin.measures.base import Spec
    assert Spec("ndcg", "exp", None, rel=2, ideal="run", gains=((0, 0.5), (2, 3)), judged_only=True, ties="average")
    for measure in ndcg_plugin.parse_measures(["NDCG_exp(ideal='run',gains={2:3,1:1})@10 MRR_ignore(rel=2)@5 "
                                               "HitRate_item(ties='average')@3 nDCG@10 RR(rel=2)@10 Success@3"]):
        assert spec_of(measure).family in ("ndcg", "mrr", "hitrate")
