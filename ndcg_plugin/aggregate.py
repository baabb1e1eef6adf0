"""Per-query values (:class:`Values`) and the aggregators that ir-measures' mean cannot express.

ir-measures aggregates through ``measure.aggregator()``, which sees only the per-query values,
unchanged. So the per-query value of an item-level measure (a micro average) is an
:class:`ItemValue`: a float (the per-query ratio) that also carries its numerator and
denominator, which :class:`MicroAgg` sums. The "no value" of a measure that leaves misses out
is NaN, which :class:`NanSkipMeanAgg` leaves out (``iter_calc`` yields no Metric at all for a
query with no value for any measure asked: see ``NdcgPluginEvaluator.metrics``).

Aggregation is the aggregator's job, and this module is its one home: :func:`aggregate_arrays`
gives a measure's aggregate from whole columns of per-query values (the provider, the CLI and
crosscheck, for the plugin's numbers and trec_eval's alike), and :func:`per_query_values` the
per-query values as ir-measures' aggregators read them one by one.
"""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Any

from ir_measures.measures.base import Agg, MeanAgg

from .exact import ExactSum, ratio


@dataclass
class Values:
    """One measure's per-query values, aligned with the qrels queries (``QrelsIndex.qids``);
    ``hits``/``returned``: the counts an item-level measure micro-averages."""
    values: Any                # numpy array
    hits: Any | None = None
    returned: Any | None = None


class ItemValue(float):
    """A per-query value of an item-level measure: ``hits / returned`` (0.0 when ``returned`` is 0), that
    remembers ``hits`` and ``returned`` for the micro average."""

    def __new__(cls, hits: float, returned: float) -> ItemValue:
        obj = super().__new__(cls, hits / returned if returned else 0.0)
        obj.hits = hits
        obj.returned = returned
        return obj

    def __getnewargs__(self):
        return (self.hits, self.returned)


class ArrayAgg(Agg):
    """An aggregator that can also aggregate a whole column of per-query values at once."""

    def from_arrays(self, values, hits=None, returned=None) -> float:
        for v in values.tolist():
            self.add(v)
        return self.result()


class ExactMeanAgg(ArrayAgg):
    """The mean of the values added, summed exactly and rounded once (:mod:`ndcg_plugin.exact`), so
    that it does not depend on the order of the values; NaN when none was added. A value that is
    not finite makes the mean NaN or infinite, as a float sum would."""

    def __init__(self) -> None:
        self.sum = ExactSum()
        self.other: list[float] = []  # NaN and infinities, summed as floats at the end

    def add(self, value: float) -> None:
        if math.isfinite(value):
            self.sum.add_value(value)
        else:
            self.other.append(value)

    def from_arrays(self, values, hits=None, returned=None) -> float:
        import numpy as np

        finite = np.isfinite(values)
        self.sum.add(values[finite])
        self.other += values[~finite].tolist()
        return self.result()

    def result(self) -> float:
        if self.other:
            return sum(self.other) + (0.0 if self.sum.count == 0 else self.sum.total())
        return self.sum.mean()


def aggregate_arrays(measure, values, hits=None, returned=None) -> float:
    """A measure's aggregate from per-query arrays (:class:`Values`: the values, and for
    item-level measures the hits and returned counts), with the measure's own aggregator (an
    ir-measures mean is taken exactly, as :class:`ExactMeanAgg`): the one place that knows how
    each measure aggregates (the provider and crosscheck call it, for the plugin's values and for
    trec_eval's)."""
    agg = measure.aggregator()
    if isinstance(agg, MeanAgg):
        agg = ExactMeanAgg()
    if isinstance(agg, ArrayAgg):
        return agg.from_arrays(values, hits, returned)
    for v in per_query_values(values, hits, returned):
        agg.add(v)
    return agg.result()


def per_query_values(values, hits=None, returned=None) -> list:
    """Per-query values as ir-measures' aggregators read them, one by one: :class:`ItemValue`
    (the ratio, carrying hits and returned) where there are counts, else floats."""
    if hits is None or returned is None:
        return values.tolist()
    return [ItemValue(h, r) for h, r in zip(hits.tolist(), returned.tolist(), strict=True)]


class MicroAgg(ArrayAgg):
    """sum(hits) / sum(returned) over the values added, both summed exactly and divided with one
    rounding; 0.0 when nothing was returned."""

    def __init__(self) -> None:
        self.hits = ExactSum()
        self.returned = ExactSum()

    def add(self, value: float) -> None:
        if not isinstance(value, ItemValue):
            raise TypeError(
                f"an item-level measure's micro average needs per-query values that carry hits and returned "
                f"counts (ndcg_plugin.aggregate.ItemValue), got a plain {type(value).__name__} {value!r}; "
                f"a mean of per-query ratios would be a different (macro) average")
        self.hits.add_value(value.hits)
        self.returned.add_value(value.returned)

    def result(self) -> float:
        return ratio(self.hits, self.returned)

    def from_arrays(self, values, hits=None, returned=None) -> float:
        if hits is None or returned is None:
            return super().from_arrays(values)
        self.hits.add(hits)
        self.returned.add(returned)
        return self.result()


class NanSkipMeanAgg(ExactMeanAgg):
    """The exact mean of the non-NaN values; NaN with a RuntimeWarning when there is none."""

    def __init__(self, name: str = "measure") -> None:
        super().__init__()
        self.name = name

    def add(self, value: float) -> None:
        if not math.isnan(value):
            super().add(value)

    def from_arrays(self, values, hits=None, returned=None) -> float:
        return super().from_arrays(values[values == values])  # not NaN

    def result(self) -> float:
        if self.sum.count == 0 and not self.other:
            warnings.warn(f"{self.name}: no query has a value (no relevant document in the top k "
                          f"for any query); the mean is NaN", RuntimeWarning, stacklevel=2)
            return float("nan")
        return super().result()
