"""Exact sums (ndcg_plugin.arrays.exact) against Python's fractions: correctly rounded, whatever the order
or the cut into pieces, also for subnormals, negatives, zeros and sums beyond the largest double."""
from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ndcg_plugin.arrays.exact import ExactSum, exact_mean, integer_sum, ratio, split_sums
from ndcg_plugin.measures.aggregate import ExactMeanAgg, MicroAgg, NanSkipMeanAgg, aggregate_arrays
from ndcg_plugin.measures.ndcg import NDCG_lin

FINITE = st.floats(allow_nan=False, allow_infinity=False)
SMALL = st.sampled_from([0.0, -0.0, 5e-324, -5e-324, 2.2250738585072014e-308, 1e-310, 1 / 3, 1.0, 0.1])


def rounded(q: Fraction) -> float:
    try:
        return float(q)
    except OverflowError:
        return math.inf if q > 0 else -math.inf


@settings(max_examples=500, deadline=None)
@given(st.lists(st.one_of(FINITE, SMALL), min_size=1, max_size=60), st.randoms(use_true_random=False))
def test_sums_and_means_are_the_correctly_rounded_exact_values(values, rnd):
    exact = sum(map(Fraction, values), Fraction(0))
    whole = ExactSum().add(np.array(values))
    assert whole.total() == rounded(exact)
    assert whole.mean() == rounded(exact / len(values))
    one_by_one = ExactSum()
    for v in values:
        one_by_one.add_value(v)
    shuffled = list(values)
    rnd.shuffle(shuffled)
    cut = rnd.randint(0, len(values))
    pieces = ExactSum().add(np.array(shuffled[:cut])).merge(ExactSum().add(np.array(shuffled[cut:])))
    assert whole.units == one_by_one.units == pieces.units and whole.count == pieces.count == len(values)


def test_the_sum_of_many_slices_is_exact():
    rng = np.random.default_rng(7)
    values = rng.random(300_000) / np.log2(rng.integers(2, 12, size=300_000))  # DCG-like terms
    exact = sum(map(Fraction, values.tolist()), Fraction(0))
    assert exact_mean(values) == float(exact / len(values))
    assert math.fsum(values) == ExactSum().add(values).total()
    assert exact_mean(values[rng.permutation(len(values))]) == exact_mean(values)


def test_aggregators_are_exact_and_keep_their_conventions():
    values = np.array([0.1, 0.2, 0.3, np.nan])
    agg = NanSkipMeanAgg("m")
    assert agg.from_arrays(values) == float((Fraction(0.1) + Fraction(0.2) + Fraction(0.3)) / 3)
    with pytest.warns(RuntimeWarning, match="no query has a value"):
        assert math.isnan(NanSkipMeanAgg("m").from_arrays(np.array([np.nan])))
    hits, returned = np.array([1.0, 2.0, 0.0]), np.array([3.0, 3.0, 0.0])
    assert MicroAgg().from_arrays(hits / np.maximum(returned, 1), hits, returned) == 0.5
    assert ratio(ExactSum(), ExactSum()) == 0.0
    assert math.isnan(ExactMeanAgg().result())
    assert math.isinf(ExactMeanAgg().from_arrays(np.array([1.0, np.inf])))
    assert aggregate_arrays(NDCG_lin @ 10, np.array([0.1] * 10)) == 0.1  # a float sum gives 0.09999999999999999
    assert sum([0.1] * 10) / 10 != 0.1


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.integers(-2**27, 2**27).map(float), st.sampled_from([0.0, -0.0, 1.0])), max_size=40),
       st.sampled_from([None, 0.5, 2.0**27 + 1, -2.0**28, 1e300, math.inf, math.nan]))
def test_small_integers_summed_as_integers_equal_the_split_sums(values, odd):
    """ExactSum.add's integer way against its general way (split_sums): the same units, and an
    array with anything else in it is left to the general way."""
    arr = np.array(values + ([] if odd is None else [odd]), dtype=np.float64)
    got = integer_sum(arr)
    if odd is not None or not values:
        assert got is None
        return
    assert got == sum(int(v) for v in values)  # oracle: Python's integers
    general = ExactSum().add_parts((p[:4] for p in split_sums(arr)), len(arr))
    fast = ExactSum().add(arr)
    assert fast.units == general.units and fast.count == general.count == len(arr)
