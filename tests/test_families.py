"""Every backend over every registered family and variant, and a family registered here (a toy)
that each backend either computes or refuses by name: the registry is where a backend finds a
family, and nothing computes a family or variant it was not written for."""
from __future__ import annotations

import math
from typing import ClassVar

import ir_measures
import numpy as np
import pytest
from ir_measures.measures.base import ParamInfo

import ndcg_plugin
from ndcg_plugin.cli.explain import explain
from ndcg_plugin.docs import measures_markdown
from ndcg_plugin.engine import block as engine
from ndcg_plugin.engine.block import Unmatched
from ndcg_plugin.engine.stream import compute_file
from ndcg_plugin.errors import Unsupported
from ndcg_plugin.evaluation import Evaluation, route
from ndcg_plugin.measures import Family, PluginMeasure, Spec, add_family, families, family, measures, spec_of
from ndcg_plugin.measures.aggregate import Values
from tests.helpers import qrels_df, run_df

QRELS = qrels_df([("q1", "a", 2), ("q1", "b", 0), ("q1", "c", 1), ("q2", "d", 1), ("q3", "e", 3)])
RUN = run_df([("q1", "a", 0.5), ("q1", "b", 3.0), ("q1", "c", 2.0), ("q1", "x", 2.0), ("q2", "y", 1.0),
              ("q2", "d", 0.5)])
# by hand: q1 ranks b (0), then x (unjudged) and c (1), tied at 2.0 and ordered by doc id descending,
# then a (2); q2 ranks y (unjudged), d (1); q3 has no run
RUN_TEXT = "".join(f"{q} Q0 {d} 1 {s} t\n" for q, d, s in RUN.itertuples(index=False))
QRELS_TEXT = "".join(f"{q} 0 {d} {r}\n" for q, d, r in QRELS.itertuples(index=False))


def every_variant() -> list:
    return [m @ 3 for m in measures()]


def test_every_family_lists_a_measure_for_each_of_its_variants():
    """A family's variants are its measures' (the plugin's own), or, for a family that serves only
    built-ins (AP, P, Bpref, the counts) and trec_eval's measures without an ir-measures name
    (relative_P, G, rbp...: the drop-in's, never registered with ir-measures), the variants its
    built-ins' specs and those measures name."""
    from ndcg_plugin.measures.trec_only import CLASSES
    for f in families():
        if f.measures:
            assert sorted(m.VARIANT for m in f.measures) == sorted(f.variants), f.name
            assert all(m.FAMILY == f.name for m in f.measures)
        else:
            built = {f.builtin_spec(ir_measures.parse_measure(t)).variant for t in BUILTIN_EXAMPLES[f.name]}
            built |= {m.VARIANT for m in CLASSES.values() if m.FAMILY == f.name}
            assert built == set(f.variants), f.name
    assert not set(CLASSES) & set(ir_measures.measures.registry)  # no new public name


#: built-ins of each family that serves only built-ins, one per variant at least
BUILTIN_EXAMPLES = {"ap": ["AP", "AP@5"], "precision": ["P@5", "R@5", "Rprec"], "bpref": ["Bpref"],
                    "counts": ["NumQ", "NumRet", "NumRelRet", "NumRel"], "iprec": ["IPrec@0.3"],
                    "sets": ["SetP", "SetP(relative=True)", "SetR", "SetF", "SetAP"], "infap": ["infAP"],
                    "retrieved": [], "gain": [], "unjudged": ["Judged@5"]}


@pytest.mark.parametrize("measure", every_variant(), ids=str)
def test_every_backend_computes_every_variant(measure, tmp_path):
    spec = spec_of(measure)
    index = engine.QrelsIndex(QRELS)
    local = engine.compute(index, RUN, [spec], counts=Unmatched())[spec]
    (tmp_path / "run").write_text(RUN_TEXT)
    streamed = compute_file(index, str(tmp_path / "run"), [spec], block_bytes=32)[spec]
    np.testing.assert_array_equal(local.values, streamed.values)
    assert route(measure) == "ndcg_plugin"
    # through ir-measures, the CLI's evaluation and crosscheck: the same aggregate
    ours = ir_measures.calc_aggregate([measure], QRELS, RUN)[measure]
    assert Evaluation([measure], qrels=QRELS).compute(RUN).aggregates[measure] == ours
    (row,) = ndcg_plugin.crosscheck(QRELS, RUN, [measure])
    assert row.verdict == "match" and row.ours == ours
    for i, q in enumerate(index.qids):
        value = explain(QRELS, RUN, q, measure).value
        assert value == local.values[i] or (math.isnan(value) and math.isnan(local.values[i]))
    assert f"## {measure.NAME}:" in measures_markdown()


BUILTINS_SERVED = [t for f in BUILTIN_EXAMPLES.values() for t in f] + ["P(rel=2,judged_only=True)@3"]


@pytest.mark.parametrize("text", BUILTINS_SERVED)
def test_every_backend_computes_every_builtin_a_family_serves(text, tmp_path):
    """The built-ins of the trec_eval families through every backend: streamed equals in memory,
    routed to the engine by eval, the provider by name gives the Evaluation's aggregate, crosscheck
    matches pytrec_eval (IPrec: no counterpart, pytrec_eval rounds levels as 9.0; Judged: none in
    trec_eval, test_judged_at_k_served_natively compares it with ir-measures' judged provider), explain gives
    each query's value."""
    measure = ir_measures.parse_measure(text)
    spec = spec_of(measure)
    index = engine.QrelsIndex(QRELS)
    local = engine.compute(index, RUN, [spec], counts=Unmatched())[spec]
    (tmp_path / "run").write_text(RUN_TEXT)
    streamed = compute_file(index, str(tmp_path / "run"), [spec], block_bytes=32)[spec]
    np.testing.assert_array_equal(local.values, streamed.values)
    assert route(measure) == "ndcg_plugin"
    ours = ir_measures.providers.registry["ndcg_plugin"].calc_aggregate([measure], QRELS, RUN)[measure]
    assert Evaluation([measure], qrels=QRELS).compute(RUN).aggregates[measure] == ours
    (row,) = ndcg_plugin.crosscheck(QRELS, RUN, [measure])
    assert row.verdict == ("match" if spec.family not in ("iprec", "unjudged") else row.verdict) and row.ours == ours
    assert row.verdict.startswith("no counterpart") == (spec.family in ("iprec", "unjudged"))
    for i, q in enumerate(index.qids):
        assert explain(QRELS, RUN, q, measure).value == local.values[i]


@pytest.mark.filterwarnings("ignore:.*run queries are (not )?in the qrels:RuntimeWarning")
def test_every_variant_on_spark_equals_the_local_engine(spark):
    from ndcg_plugin import spark as ndcg_spark

    ms = every_variant()
    got = ndcg_spark.evaluate(spark.createDataFrame(QRELS), spark.createDataFrame(RUN), ms)
    local = ir_measures.calc_aggregate(ms, QRELS, RUN)
    for m in ms:
        assert got[m] == pytest.approx(local[m], abs=1e-15), m


# --- a toy family: precision at k, with one variant ----------------------------------------------

class _Prec(PluginMeasure):
    """Precision at k: relevant docs in the top k over k."""
    FAMILY = "toy_precision"
    SUPPORTED_PARAMS: ClassVar[dict] = {"cutoff": ParamInfo(dtype=int, required=True, desc="k"),
                                        "rel": ParamInfo(dtype=int, default=1, desc="threshold")}


class _PrecPlain(_Prec):
    __name__ = "ToyPrec"
    NAME = __name__
    VARIANT = "plain"
    PRETTY_NAME = "toy precision"
    SHORT_DESC = "relevant docs in the top k over k"
    TREC_EVAL = "P.k"


TOY = _PrecPlain()


class ToyFamily(Family):
    """Implements the local engine only: every other backend must refuse it by name."""
    name = "toy_precision"
    variants = ("plain",)

    @property
    def measures(self):
        return (TOY,)

    def values(self, index, ranked, spec: Spec) -> Values:
        hits = np.bincount(ranked.q[ranked.relevant(spec.rel) & ranked.in_top(spec.cutoff)], minlength=ranked.nq)
        return Values(hits / spec.cutoff)


@pytest.fixture
def toy():
    with add_family(ToyFamily()) as f:
        yield f
    with pytest.raises(Unsupported, match="no measure family 'toy_precision'"):
        family("toy_precision")


def test_a_toy_family_is_computed_by_the_local_engine_and_refused_by_name_elsewhere(toy, tmp_path):
    measure = TOY @ 2
    # computed: the local engine, streamed or not, and every front on it (by hand: q1 has b (0) and x
    # (unjudged) in its top 2: 0 relevant; q2 has y (unjudged) and d (1): 1; q3 has no run: 0)
    expected = [0.0, 0.5, 0.0]
    spec = spec_of(measure)
    index = engine.QrelsIndex(QRELS)
    assert engine.compute(index, RUN, [spec], counts=Unmatched())[spec].values.tolist() == expected
    (tmp_path / "run").write_text(RUN_TEXT)
    assert compute_file(index, str(tmp_path / "run"), [spec])[spec].values.tolist() == expected
    assert Evaluation([measure], qrels=QRELS).compute(RUN).aggregates[measure] == pytest.approx(1 / 6)
    assert "## ToyPrec: toy precision" in measures_markdown()
    # refused by name: explain, crosscheck
    with pytest.raises(Unsupported, match="explain does not implement the toy_precision family"):
        explain(QRELS, RUN, "q1", measure)
    with pytest.raises(Unsupported, match="crosscheck does not implement the toy_precision family"):
        ndcg_plugin.crosscheck(QRELS, RUN, [measure])


def test_a_toy_family_is_refused_by_name_by_the_spark_engine(toy, spark):
    from ndcg_plugin import spark as ndcg_spark
    with pytest.raises(Unsupported, match="the Spark engine does not implement the toy_precision family"):
        ndcg_spark.evaluate(spark.createDataFrame(QRELS), spark.createDataFrame(RUN), [TOY @ 2])
    # the engine plan evaluates in the executors' Python, which has the package's own families only
    with pytest.raises(Unsupported, match=r"strategy='engine' evaluates in the executors' Python.*added in this"):
        ndcg_spark.prepare(spark.createDataFrame(QRELS), spark.createDataFrame(RUN), [TOY @ 2], strategy="engine")


def test_an_unregistered_family_is_refused_by_every_backend(tmp_path):
    spec = Spec("toy_precision", "plain", 2)
    index = engine.QrelsIndex(QRELS)
    with pytest.raises(Unsupported, match="no measure family 'toy_precision'"):
        engine.compute(index, RUN, [spec], counts=Unmatched())
    with pytest.raises(Unsupported, match="no measure family 'toy_precision'"):
        spec_of(TOY @ 2)
    (tmp_path / "run").write_text(RUN_TEXT)
    with pytest.raises(Unsupported, match="no measure family 'toy_precision'"):
        compute_file(index, str(tmp_path / "run"), [spec])


def _variant(name: str, variant: str) -> PluginMeasure:
    """A measure of the family ``name`` with a variant the family may not have."""
    cls = type("_Odd", (PluginMeasure,), {"FAMILY": name, "VARIANT": variant, "__name__": "Odd", "NAME": "Odd",
                                          "SUPPORTED_PARAMS": {"cutoff": ParamInfo(dtype=int, desc="k")}})
    return cls() @ 3


@pytest.mark.parametrize("name", [f.name for f in families()])
def test_an_unknown_variant_is_refused_by_name_not_computed_as_another(name):
    spec = Spec(name, "cubic", 3)
    with pytest.raises(Unsupported, match=f"the {name} family has no variant 'cubic'"):
        engine.compute(engine.QrelsIndex(QRELS), RUN, [spec], counts=Unmatched())
    with pytest.raises(Unsupported, match=f"the {name} family has no variant 'cubic'"):
        spec_of(_variant(name, "cubic"))
    with pytest.raises(Unsupported, match=f"the {name} family has no variant 'cubic'"):
        Evaluation([_variant(name, "cubic")], qrels=QRELS)


@pytest.mark.parametrize("owner, measure", [("counts", ir_measures.P @ 5), ("precision", ir_measures.NumQ),
                                            ("sets", ir_measures.AP)])
def test_a_builtin_a_family_does_not_serve_is_refused_by_name_not_computed_as_another(owner, measure):
    # a family picks the spec of a built-in from a table of the names it serves; before, counts took
    # every name but NumQ and NumRel for NumRet, and sets every name but SetP for a KeyError
    with pytest.raises(ValueError, match=rf"no built-in named '{measure.NAME}' here \(known: "):
        family(owner).builtin_spec(measure)
