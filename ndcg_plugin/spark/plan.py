"""The Spark SQL plan's skeleton, shared by its two row plans (:mod:`.topk` and :mod:`.full`).

Each row plan gives one DataFrame of tagged rows hash-partitioned by query id: run rows
(``is_run``, with their ``rank`` and the qrels ``label`` joined to them by a window over
(query, doc)) and qrels rows (``lab``). Then, within each partition (no further shuffle):

1. what each measure's family asks for (:meth:`ndcg_plugin.measures.Family.spark`, through a
   :class:`MeasureColumns`) becomes one grouped aggregation per query: counts, minima, and for
   DCG the terms as a small array folded in rank order with numpy's discounts (:func:`discounts`),
   so that every per-query value is the local engine's to the bit;
2. :func:`result_rows`: the per-query values split for exact sums (per binary exponent, in 64-bit
   integers: :func:`exact_parts`) and the validation counts, in one grouped aggregation. The driver
   collects those few rows once and adds them up exactly (:class:`ndcg_plugin.arrays.exact.ExactSum`):
   the same digits as the local engine, whatever the partitioning.

A family the registry does not know, or one without a Spark hook, is refused by name.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from ..measures import Spec, family
from .failures import fail

#: ranks with a discount in the table of a plan that has a measure without a cutoff; a query that
#: needs more makes the evaluation run again with a table as long as it needs (one more job)
DEFAULT_DISCOUNTS = 1000


@dataclass(frozen=True)
class Output:
    """Per-query columns of one measure: ``value``; for an item-level measure also ``hits``/``den``
    (micro-averaged); ``ignore``: NULL is "no value" (the mean leaves it out)."""
    name: str        # str(measure)
    value: str
    hits: str | None = None
    den: str | None = None
    ignore: bool = False


@dataclass
class Plan:
    """What the families asked for, gathered before the DataFrames are built."""
    discounts: int                                       # ranks 1..discounts have a discount
    aggs: list = field(default_factory=list)             # per-query aggregates over the tagged rows
    post: list = field(default_factory=list)             # per-query values from the aggregates
    needs: list = field(default_factory=list)            # per query: the largest rank a discount is needed for
    label_checks: list = field(default_factory=list)     # (bad label condition, message)
    outputs: list = field(default_factory=list)
    table: Column | None = None                          # the discounts, made once

    def discount(self, rank: Column) -> Column:
        """numpy's log2(rank + 1) for an integer rank; NULL beyond the table."""
        if self.table is None:
            self.table = discounts(self.discounts)
        return F.try_element_at(self.table, rank)


def discounts(n: int) -> Column:
    """numpy's ``log2(r + 1)`` for ranks r = 1..n, as one array literal (folded once by Spark's
    optimizer): the divisors the local engine divides gains by (``np.log2(rank + 2.0)`` with
    0-based ranks). Spark's ``log2`` (ln x / ln 2) differs from numpy's in the last bit."""
    import numpy as np
    table = np.log2(np.arange(max(n, 1), dtype=np.int64) + 2.0)
    return F.from_json(F.lit(json.dumps([float(x) for x in table])), "array<double>")


def within(rank: Column, cutoff: int | None) -> Column:
    return F.lit(True) if cutoff is None else rank <= F.lit(cutoff)


def ratio(num: Column, den: Column) -> Column:
    """num / den, 0 where den is 0 (never a division by zero, whatever spark.sql.ansi.enabled)."""
    return F.when(den > 0, num / F.when(den > 0, den).otherwise(F.lit(1.0))).otherwise(F.lit(0.0))


class MeasureColumns:
    """What the plan gives a family for one measure (the ``ctx`` of ``Family.spark``): the tagged
    rows' columns for this measure's spec, helpers, and the registration of what it needs."""
    F = F
    within = staticmethod(within)
    ratio = staticmethod(ratio)

    def __init__(self, plan: Plan, name: str, spec: Spec, i: int):
        self.plan, self.name, self.spec, self.i = plan, name, spec, i
        self.is_run, self.judged, self.label = F.col("is_run"), F.col("judged"), F.col("label")
        self.is_qrels, self.qrels_label = ~F.col("is_run"), F.col("lab")
        self.rank = F.col("jrank") if spec.judged_only else F.col("rank")
        eligible = self.is_run & (F.col("kept") if spec.judged_only else F.lit(True))
        self.inside = eligible & within(self.rank, spec.cutoff)
        self.relevant = self.judged & (self.label >= F.lit(spec.rel))

    def run_agg(self, name: str, column: Column) -> Column:
        """A per-query aggregate over the tagged rows; the column that holds it."""
        self.plan.aggs.append(column.alias(f"{name}{self.i}"))
        return F.col(f"{name}{self.i}")

    def returned_within(self, cutoff: int) -> Column:
        """min(cutoff, rows the run returned for the query), a double (the top-k plan keeps at most
        the largest cutoff of the run's rows: the minimum is the same)."""
        return F.least(F.col("returned").cast("double"), F.lit(float(cutoff)))

    def dcg(self, name: str, gain: Column, where: Column) -> Column:
        """Per query, the sum of ``gain / log2(rank + 1)`` over the rows ``where`` holds, added in rank
        order with numpy's discounts, as the local engine adds them (rows of gain 0 add nothing)."""
        term = F.struct(self.rank.cast("int").alias("r"), gain.cast("double").alias("g"))
        terms = F.array_sort(self.run_agg(name, F.collect_list(F.when(where & (gain != 0), term))))
        if self.spec.cutoff is None:
            self.plan.needs.append(F.array_max(F.transform(terms, lambda t: t["r"])))
        return F.aggregate(terms, F.lit(0.0), lambda acc, t: acc + t["g"] / self.plan.discount(t["r"]))

    def ideal_dcg(self, name: str, gain: Column, cutoff: int | None) -> Column:
        """Per query, the DCG of the ideal ranking of the positive values of ``gain`` (NULL: not in the
        pool): sorted descending, the first ``cutoff``, added in that order as the local engine adds."""
        pool = self.run_agg(name, F.collect_list(F.when(gain > 0, gain.cast("double"))))
        top = F.sort_array(pool, asc=False)
        if cutoff is not None:
            top = F.slice(top, 1, cutoff)
        else:
            self.plan.needs.append(F.size(pool))
        terms = F.transform(top, lambda g, i: g / self.plan.discount(i + 1))
        return F.aggregate(terms, F.lit(0.0), lambda acc, t: acc + t)

    def check_labels(self, bad: Column, message: Column) -> None:
        """Refuse the input (with ``message``) where a qrels label (column ``lab``) is ``bad``."""
        self.plan.label_checks.append((bad, message))

    def parts(self, value: Column, hits: Column | None = None, den: Column | None = None,
              ignore: bool = False) -> Output:
        """The measure's per-query value (and counts, for a micro average), registered."""
        i = self.i
        self.plan.post.append(value.alias(f"v{i}"))
        if hits is not None:
            self.plan.post += [hits.alias(f"hits{i}"), den.alias(f"n{i}")]
        out = Output(self.name, f"v{i}", None if hits is None else f"hits{i}", None if hits is None else f"n{i}",
                     ignore)
        self.plan.outputs.append(out)
        return out


def plan_measures(specs: list[tuple[str, Spec]], table: int) -> Plan:
    """Ask each measure's family for its columns (a family without a Spark hook refuses by name)."""
    plan = Plan(table)
    for i, (name, spec) in enumerate(specs):
        family(spec.family).spark(spec, MeasureColumns(plan, name, spec, i))
    return plan


def check_labels(qrels: DataFrame, plan: Plan) -> DataFrame:
    """The qrels with the families' label checks as expressions (they fail the job)."""
    lab = F.col("lab")
    for bad, message in plan.label_checks:
        lab = F.when(bad, fail(message)).otherwise(lab)
    return qrels.withColumn("lab", lab) if plan.label_checks else qrels


def align(run: DataFrame, qrels: DataFrame) -> tuple[DataFrame, DataFrame]:
    """Integer ids stay integers through the shuffle (fewer bytes), unless the other input has
    strings there: then both sides are compared as strings."""
    for c in ("q", "d"):
        if run.schema[c].dataType != qrels.schema[c].dataType:
            run, qrels = run.withColumn(c, F.col(c).cast("string")), qrels.withColumn(c, F.col(c).cast("string"))
    return run, qrels


def repeated(pair_count: str, where: Column) -> Column:
    """The smallest repeated (query, doc) pair among the rows ``where`` holds, with its count: a
    struct (pair: [query, doc] as strings, n), NULL when there is none."""
    pair = F.array(F.col("q").cast("string"), F.col("d").cast("string"))
    return F.min(F.when(where & (F.col(pair_count) > 1), F.struct(pair.alias("pair"), F.col(pair_count).alias("n"))))


def per_query(rows: DataFrame, plan: Plan, checks: list[Column]) -> DataFrame:
    """One row per query id (run-only queries too, flagged by ``has_qrels``): each measure's
    per-query values, and the validation columns (``returned``, ``dup_qrels``, ``dup_run``, ``need``)."""
    is_run = F.col("is_run")
    base = [F.max(~is_run).alias("has_qrels"), F.count("rank").alias("returned"),
            repeated("n_qrels_pair", ~is_run).alias("dup_qrels"), *checks]
    grouped = rows.groupBy("q").agg(*base, *plan.aggs)
    need = F.greatest(*plan.needs, F.lit(0)) if plan.needs else F.lit(None).cast("int")
    keep = ["q", "has_qrels", "returned", "dup_qrels", "dup_run"]
    return grouped.select(*keep, need.cast("long").alias("need"), F.lit(False).alias("unverified"), *plan.post)


def exact_parts(value: Column) -> list[Column]:
    """A finite double column split for an exact sum as :func:`ndcg_plugin.arrays.exact.split` splits it:
    ``shift`` (E) and the pieces ``hi``, ``mid``, ``lo`` of the 53-bit mantissa, with integer
    arithmetic only where it must be exact. The binary exponent comes from log2, corrected by
    comparisons with exact powers of two; dividing by a power of two is exact."""
    two = F.lit(2.0)
    a = F.abs(value)
    e0 = F.floor(F.log2(a)).cast("int")
    e1 = F.when(F.pow(two, e0) > a, e0 - 1).otherwise(e0)
    e = F.when(F.pow(two, e1 + 1) <= a, e1 + 1).otherwise(e1)
    normal = a >= F.lit(2.0 ** -1022)
    magnitude = (F.when(a == 0, F.lit(0.0))
                 .when(normal, a / F.pow(two, e - 52))                           # in [2^52, 2^53)
                 .otherwise(a * F.lit(2.0 ** 537) * F.lit(2.0 ** 537))).cast("long")  # subnormal: a * 2^1074
    mantissa = F.when(value < 0, -magnitude).otherwise(magnitude)
    shift = F.when(normal, e + 1022).otherwise(F.lit(0))
    mask = F.lit((1 << 18) - 1).cast("long")
    return [shift.alias("shift"), F.shiftright(mantissa, 36).alias("hi"),
            F.shiftright(mantissa, 18).bitwiseAND(mask).alias("mid"), mantissa.bitwiseAND(mask).alias("lo")]


_NULL = {"i": "int", "part": "string", "v": "double", "big": "long"}
_EXAMPLE = "struct<pair:array<string>,n:bigint>"


def _item(kind: str, **given: Column) -> Column:
    """One row of the results, before they are grouped: NULL in the fields ``given`` lacks."""
    fields = [F.lit(kind).alias("kind")]
    fields += [given[name].alias(name) if name in given else F.lit(None).cast(t).alias(name)
               for name, t in _NULL.items()]
    fields.append((given["example"] if "example" in given else F.lit(None).cast(_EXAMPLE)).alias("example"))
    return F.struct(*fields)


def result_rows(wide: DataFrame, outputs: list[Output], key: Column | None, extra: DataFrame | None) -> DataFrame:
    """The few rows the driver collects, from one grouped aggregation over the per-query table of
    every query: per (key, measure i, part, shift) the exact partial sums (``hi``, ``mid``, ``lo``)
    of the values each measure aggregates and their number ``n`` (its values; an item-level
    measure's hits and den; NULL values, "no value", are left out); and the validation rows
    (kind ``unmatched``/``run_queries``: n; ``need``: big; ``dup_qrels``/``dup_run``: example).
    ``extra``: rows (kind, example) to add (the run's duplicate check in the top-k plan)."""
    has_qrels, returned = F.col("has_qrels"), F.col("returned")
    items = []
    for i, o in enumerate(outputs):
        parts = {"hits": o.hits, "den": o.den} if o.hits is not None else {"value": o.value}
        for part, c in parts.items():
            v = F.col(c).cast("double")
            items.append(F.when(has_qrels & v.isNotNull(), _item("sum", i=F.lit(i), part=F.lit(part), v=v)))
    items += [F.when(~has_qrels & (returned > 0), _item("unmatched")), F.when(returned > 0, _item("run_queries")),
              F.when(F.col("need").isNotNull(), _item("need", big=F.col("need"))),
              F.when(F.col("unverified"), _item("unverified")),
              F.when(F.col("dup_qrels").isNotNull(), _item("dup_qrels", example=F.col("dup_qrels"))),
              F.when(F.col("dup_run").isNotNull(), _item("dup_run", example=F.col("dup_run")))]
    keyed = key if key is not None else F.lit(None)
    x = wide.select(keyed.alias("key"), F.explode(F.filter(F.array(*items), lambda t: t.isNotNull())).alias("x"))
    is_sum = F.col("x.kind") == "sum"
    x = x.select(F.when(is_sum, F.col("key")).alias("key"), "x.kind", "x.i", "x.part", "x.big", "x.example",
                 *exact_parts(F.col("x.v")))
    out = x.groupBy("kind", "key", "i", "part", "shift").agg(
        F.sum("hi").alias("hi"), F.sum("mid").alias("mid"), F.sum("lo").alias("lo"), F.count(F.lit(1)).alias("n"),
        F.max("big").alias("big"), F.min("example").alias("example"))
    if extra is not None:
        out = out.unionByName(extra.select(*[F.col(c).cast(out.schema[c].dataType) if c in extra.columns
                                             else F.lit(None).cast(out.schema[c].dataType).alias(c)
                                             for c in out.columns]))
    return out


def observed(wide: DataFrame) -> list[Column]:
    """The validation counts of :func:`result_rows`, as aggregates over the per-query table (for
    ``DataFrame.observe``: the per-query output validates as it is computed)."""
    has_qrels, returned = F.col("has_qrels"), F.col("returned")
    return [F.count(F.when(~has_qrels & (returned > 0), True)).alias("unmatched"),
            F.count(F.when(returned > 0, True)).alias("run_queries"), F.max("need").alias("need"),
            F.min("dup_qrels").alias("dup_qrels"), F.min("dup_run").alias("dup_run"),
            F.count(F.when(F.col("unverified"), True)).alias("unverified")]
