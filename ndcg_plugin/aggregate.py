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


def aggregate_arrays(measure, values, hits=None, returned=None) -> float:
    """A measure's aggregate from per-query arrays (``engine.Values``: the values, and for
    item-level measures the hits and returned counts), with the measure's own aggregator:
    the one place that knows how each measure aggregates (the provider and crosscheck call it,
    for the plugin's values and for trec_eval's)."""
    agg = measure.aggregator()
    if isinstance(agg, ArrayAgg):
        return agg.from_arrays(values, hits, returned)
    if isinstance(agg, MeanAgg):
        return float(values.mean()) if len(values) else agg.result()
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
    """sum(hits) / sum(returned) over the values added; 0.0 when nothing was returned."""

    def __init__(self) -> None:
        self.hits = 0.0
        self.returned = 0.0

    def add(self, value: float) -> None:
        if not isinstance(value, ItemValue):
            raise TypeError(
                f"an item-level measure's micro average needs per-query values that carry hits and returned "
                f"counts (ndcg_plugin.aggregate.ItemValue), got a plain {type(value).__name__} {value!r}; "
                f"a mean of per-query ratios would be a different (macro) average")
        self.hits += value.hits
        self.returned += value.returned

    def result(self) -> float:
        return self.hits / self.returned if self.returned else 0.0

    def from_arrays(self, values, hits=None, returned=None) -> float:
        if hits is None or returned is None:
            return super().from_arrays(values)
        self.add(ItemValue(float(hits.sum()), float(returned.sum())))
        return self.result()


class NanSkipMeanAgg(ArrayAgg):
    """Mean of the non-NaN values; NaN with a RuntimeWarning when there is none."""

    def __init__(self, name: str = "measure") -> None:
        self.name = name
        self.sum = 0.0
        self.count = 0

    def add(self, value: float) -> None:
        if not math.isnan(value):
            self.sum += value
            self.count += 1

    def from_arrays(self, values, hits=None, returned=None) -> float:
        kept = values[values == values]  # not NaN
        if len(kept):
            self.sum += float(kept.cumsum()[-1])  # summed in order, as add() sums
            self.count += len(kept)
        return self.result()

    def result(self) -> float:
        if self.count == 0:
            warnings.warn(f"{self.name}: no query has a value (no relevant document in the top k "
                          f"for any query); the mean is NaN", RuntimeWarning, stacklevel=2)
            return float("nan")
        return self.sum / self.count
