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

from ir_measures.measures.base import Agg, MeanAgg, SumAgg

from ..arrays.exact import ExactSum, ratio


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
    """An aggregator that can also take whole columns of per-query values, at once
    (:meth:`from_arrays`) or block after block (:meth:`add_arrays`, then :meth:`result`)."""

    def add_arrays(self, values, hits=None, returned=None) -> None:
        for v in values.tolist():
            self.add(v)

    def from_arrays(self, values, hits=None, returned=None) -> float:
        self.add_arrays(values, hits, returned)
        return self.result()


class ExactMeanAgg(ArrayAgg):
    """The mean of the values added, summed exactly and rounded once (:mod:`ndcg_plugin.arrays.exact`), so
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

    def add_arrays(self, values, hits=None, returned=None) -> None:
        import numpy as np

        finite = np.isfinite(values)
        if finite.all():
            self.sum.add(values)
            return
        self.sum.add(values[finite])
        self.other += values[~finite].tolist()

    def result(self) -> float:
        if self.other:
            return sum(self.other) + (0.0 if self.sum.count == 0 else self.sum.total())
        return self.sum.mean()


class ExactSumAgg(ExactMeanAgg):
    """The sum of the values added (ir-measures' SumAgg: the counts ``NumQ``, ``NumRet``,
    ``NumRel``), summed exactly; 0.0 when none was added."""

    def result(self) -> float:
        if self.other:
            return sum(self.other) + self.sum.total()
        return self.sum.total()


def array_aggregator(measure) -> ArrayAgg | None:
    """The measure's aggregator as one that takes whole columns (an ir-measures mean is taken
    exactly, as :class:`ExactMeanAgg`); None for an aggregator of another kind."""
    agg = measure.aggregator()
    if isinstance(agg, MeanAgg):
        return ExactMeanAgg()
    if isinstance(agg, SumAgg):
        return ExactSumAgg()
    return agg if isinstance(agg, ArrayAgg) else None


def aggregate_arrays(measure, values, hits=None, returned=None) -> float:
    """A measure's aggregate from per-query arrays (:class:`Values`: the values, and for
    item-level measures the hits and returned counts), with the measure's own aggregator: the one
    place that knows how each measure aggregates (the provider and crosscheck call it, for the
    plugin's values and for trec_eval's; :class:`Aggregates` block by block)."""
    agg = array_aggregator(measure)
    if agg is not None:
        return agg.from_arrays(values, hits, returned)
    agg = measure.aggregator()
    for v in per_query_values(values, hits, returned):
        agg.add(v)
    return agg.result()


class Aggregates:
    """Each measure's aggregate over blocks of per-query values (``specs``: {measure: the Spec its
    values come under}), without keeping the values; with ``keep``, also the values, to give
    them all at the end in trec_eval's query order (:meth:`per_query`)."""

    def __init__(self, specs: dict, keep: bool = False):
        self.specs = specs
        self.aggs = {m: array_aggregator(m) for m in specs}
        unknown = [str(m) for m, agg in self.aggs.items() if agg is None]
        if unknown:
            raise ValueError(f"cannot aggregate {', '.join(unknown)} block by block: its aggregator takes values "
                             f"one at a time")
        self.blocks: list | None = [] if keep else None

    def add(self, qids: Any, values: dict) -> None:
        """One block: the query ids (an Arrow string array) and each spec's values over them."""
        for m, agg in self.aggs.items():
            v = values[self.specs[m]]
            agg.add_arrays(v.values, v.hits, v.returned)
        if self.blocks is not None:
            self.blocks.append((qids, {m: values[s] for m, s in self.specs.items()}))

    def result(self) -> dict:
        return {m: agg.result() for m, agg in self.aggs.items()}

    def per_query(self) -> tuple[list, dict]:
        """(query ids, {measure: Values}) of every block kept, in trec_eval's order (byte order)."""
        import numpy as np
        import pyarrow as pa
        import pyarrow.compute as pc

        qids = pa.chunked_array([q for q, _ in self.blocks], type=pa.large_string()) if self.blocks else \
            pa.chunked_array([], type=pa.large_string())
        order = pc.sort_indices(qids).to_numpy() if len(qids) else np.zeros(0, dtype=np.int64)

        def joined(m, field):
            parts = [getattr(v[m], field) for _, v in self.blocks]
            return None if not parts or parts[0] is None else np.concatenate(parts)[order]

        values = {m: Values(joined(m, "values"), joined(m, "hits"), joined(m, "returned")) for m in self.specs}
        return qids.take(pa.array(order)).to_pylist(), values


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
                f"counts (ndcg_plugin.measures.aggregate.ItemValue), got a plain {type(value).__name__} {value!r}; "
                f"a mean of per-query ratios would be a different (macro) average")
        self.hits.add_value(value.hits)
        self.returned.add_value(value.returned)

    def result(self) -> float:
        return ratio(self.hits, self.returned)

    def add_arrays(self, values, hits=None, returned=None) -> None:
        if hits is None or returned is None:
            super().add_arrays(values)
            return
        self.hits.add(hits)
        self.returned.add(returned)


class NanSkipMeanAgg(ExactMeanAgg):
    """The exact mean of the non-NaN values; NaN with a RuntimeWarning when there is none."""

    def __init__(self, name: str = "measure") -> None:
        super().__init__()
        self.name = name

    def add(self, value: float) -> None:
        if not math.isnan(value):
            super().add(value)

    def add_arrays(self, values, hits=None, returned=None) -> None:
        super().add_arrays(values[values == values])  # not NaN

    def result(self) -> float:
        if self.sum.count == 0 and not self.other:
            warnings.warn(f"{self.name}: no query has a value (no relevant document in the top k "
                          f"for any query); the mean is NaN", RuntimeWarning, stacklevel=2)
            return float("nan")
        return super().result()
