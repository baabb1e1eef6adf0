"""The Spark SQL plan: every measure from one shuffle of the run and the qrels by query id.

1. run rows and qrels rows are put in one DataFrame (a union, tagged) and hash-partitioned by
   query id: the only shuffle of the data. Every later step needs rows clustered by query id
   (or by (query id, doc id), which that partitioning also satisfies), so it runs within a
   partition after a local sort;
2. a window over (query, doc) gives each run row its qrels label (the join) and counts repeated
   pairs; a window over the query tells whether the qrels hold it;
3. a window over the query, ordered by score descending then doc id descending (trec_eval's
   order; Spark compares strings by their UTF-8 bytes), numbers the run rows (the rank), and
   counts judged rows above each row (the rank under ``judged_only``, trec_eval -J);
4. what each measure's family asks for (:meth:`ndcg_plugin.measures.Family.spark`, through a
   :class:`MeasureColumns`): per-query aggregates over the tagged rows, per-query aggregates
   over the qrels alone (shuffled on their own by query id: a small shuffle), ranks of an ideal
   ordering (windows), and checks of the labels;
5. one grouped aggregation per query computes every measure, then one global aggregation gives
   exact partial sums of the per-query values (:func:`exact_sums`: per binary exponent, in 64-bit
   integers), which the driver adds up exactly: the same digits as the local engine, whatever
   the partitioning. Only those few rows reach the driver.

A family the registry does not know, or one without a Spark hook, is refused by name.
``ties="average"`` is refused (:func:`ndcg_plugin.spark.prepare`): the local engine computes it.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from ..measures import Spec, family
from .failures import fail


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
    run_aggs: list = field(default_factory=list)        # per-query aggregates over the tagged rows
    qrels_aggs: list = field(default_factory=list)      # per-query aggregates over the qrels alone
    post: list = field(default_factory=list)            # per-query values from the aggregates
    run_ranks: dict = field(default_factory=dict)       # ideal key -> (column name, order) over the run rows
    qrels_ranks: dict = field(default_factory=dict)     # ideal key -> (column name, order) over the qrels
    label_checks: list = field(default_factory=list)    # (bad label condition, message)
    outputs: list = field(default_factory=list)


def within(rank: Column, cutoff: int | None) -> Column:
    return F.lit(True) if cutoff is None else rank <= F.lit(cutoff)


def disc(rank: Column) -> Column:
    return F.lit(1.0) / F.log2(rank.cast("double") + F.lit(1.0))


def ratio(num: Column, den: Column) -> Column:
    """num / den, 0 where den is 0 (never a division by zero, whatever spark.sql.ansi.enabled)."""
    return F.when(den > 0, num / F.when(den > 0, den).otherwise(F.lit(1.0))).otherwise(F.lit(0.0))


class MeasureColumns:
    """What the plan gives a family for one measure (the ``ctx`` of ``Family.spark``): the tagged
    rows' columns for this measure's spec, helpers, and the registration of what it needs."""
    F = F
    within = staticmethod(within)
    disc = staticmethod(disc)
    ratio = staticmethod(ratio)

    def __init__(self, plan: Plan, name: str, spec: Spec, i: int):
        self.plan, self.name, self.spec, self.i = plan, name, spec, i
        self.is_run, self.judged, self.label = F.col("is_run"), F.col("judged"), F.col("label")
        self.rank = F.col("jrank") if spec.judged_only else F.col("rank")
        eligible = self.is_run & (F.col("kept") if spec.judged_only else F.lit(True))
        self.inside = eligible & within(self.rank, spec.cutoff)
        self.relevant = self.judged & (self.label >= F.lit(spec.rel))
        self.returned = F.col("returned")

    def run_agg(self, name: str, column: Column) -> Column:
        """A per-query aggregate over the tagged rows; the column that holds it."""
        self.plan.run_aggs.append(column.alias(f"{name}{self.i}"))
        return F.col(f"{name}{self.i}")

    def qrels_agg(self, name: str, column: Column) -> Column:
        """A per-query aggregate over the qrels rows alone (NULL for a query without qrels)."""
        self.plan.qrels_aggs.append(column.alias(f"{name}{self.i}"))
        return F.col(f"{name}{self.i}")

    def run_ideal_rank(self, key: tuple, order: Column) -> Column:
        """The rank of each run row in an ideal ordering of the query's judged run rows (shared by
        the measures with the same ``key``)."""
        name, _ = self.plan.run_ranks.setdefault(key, (f"irank{len(self.plan.run_ranks)}", order))
        return F.col(name)

    def qrels_ideal_rank(self, key: tuple, order: Column) -> Column:
        """The rank of each qrels row in an ideal ordering of the query's judgments."""
        name, _ = self.plan.qrels_ranks.setdefault(key, (f"qrank{len(self.plan.qrels_ranks)}", order))
        return F.col(name)

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


def plan_measures(specs: list[tuple[str, Spec]]) -> Plan:
    """Ask each measure's family for its columns (a family without a Spark hook refuses by name)."""
    plan = Plan()
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


def ranked_rows(run: DataFrame, qrels: DataFrame, specs: list[Spec], plan: Plan) -> DataFrame:
    """Steps 1-3, and the families' ideal ranks over the run rows: the tagged rows with label,
    rank, judged rank and ideal ranks as columns. ``run`` has (q, d, s), ``qrels`` (q, d, lab), as
    from :func:`align`."""
    r = run.select("q", "d", F.when(F.col("s") == 0, F.lit(0.0)).otherwise(F.col("s")).alias("s"),
                   F.lit(None).cast("long").alias("lab"), F.lit(True).alias("is_run"))
    j = qrels.select("q", "d", F.lit(None).cast("double").alias("s"), F.col("lab").cast("long").alias("lab"),
                     F.lit(False).alias("is_run"))
    rows = r.unionByName(j).repartition("q")
    pair = Window.partitionBy("q", "d")
    query = Window.partitionBy("q")
    rows = rows.select(
        "q", "d", "s", "is_run",
        F.max("lab").over(pair).alias("label"),
        F.count("lab").over(pair).alias("n_qrels_pair"),
        F.sum(F.col("is_run").cast("int")).over(pair).alias("n_run_pair"),
    ).withColumn("has_qrels", F.max((~F.col("is_run")).cast("int")).over(query) > 0)
    judged = F.col("label").isNotNull()
    rows = rows.withColumn("judged", judged).withColumn("kept", F.col("judged") & (F.col("label") >= 0))
    doc = F.col("d").cast("string")  # trec_eval's tie rule compares doc ids as strings (bytes)
    order = Window.partitionBy("q").orderBy(F.col("is_run").desc(), F.col("s").desc(), doc.desc())
    rows = rows.withColumn("rank", F.row_number().over(order))
    if any(s.judged_only for s in specs):
        running = order.rowsBetween(Window.unboundedPreceding, Window.currentRow)
        rows = rows.withColumn("jrank", F.sum(F.col("kept").cast("int")).over(running))
    for name, ideal in plan.run_ranks.values():
        # an ideal ranking from the run: its judged rows first, in the family's order
        w = Window.partitionBy("q").orderBy((F.col("is_run") & judged).desc(), ideal)
        rows = rows.withColumn(name, F.row_number().over(w))
    return rows


def qrels_side(qrels: DataFrame, plan: Plan) -> DataFrame | None:
    """The families' per-query aggregates over the qrels alone (a small shuffle of the qrels by
    query id, one sort per ideal ordering): (q, ...); None if no family asked for one."""
    if not plan.qrels_aggs:
        return None
    rows = qrels.select("q", F.col("lab").cast("long").alias("label")).repartition("q")
    for name, order in plan.qrels_ranks.values():
        rows = rows.withColumn(name, F.row_number().over(Window.partitionBy("q").orderBy(order)))
    return rows.groupBy("q").agg(*plan.qrels_aggs)


def per_query(rows: DataFrame, plan: Plan, qrels: DataFrame | None) -> DataFrame:
    """Step 5: one row per query id (run-only queries too, flagged by ``has_qrels``), with each
    measure's per-query value, and the validation counts."""
    is_run = F.col("is_run")
    pair = F.concat_ws(" ", F.col("q").cast("string"), F.col("d").cast("string"))
    checks = [
        F.max(F.col("has_qrels")).alias("has_qrels"),
        F.sum(is_run.cast("long")).alias("returned"),
        F.max(F.when(is_run, F.col("n_run_pair"))).alias("max_run_pair"),
        F.max(F.when(~is_run, F.col("n_qrels_pair"))).alias("max_qrels_pair"),
        F.min(F.when(is_run & (F.col("n_run_pair") > 1), pair)).alias("dup_run"),
        F.min(F.when(~is_run & (F.col("n_qrels_pair") > 1), pair)).alias("dup_qrels"),
    ]
    grouped = rows.groupBy("q").agg(*checks, *plan.run_aggs)
    if qrels is not None:
        grouped = grouped.join(qrels, "q", "left")
    keep = ["q", "has_qrels", "returned", "max_run_pair", "max_qrels_pair", "dup_run", "dup_qrels"]
    return grouped.select(*keep, *plan.post)


def exact_parts(value: Column) -> list[Column]:
    """A finite double column split for an exact sum as :func:`ndcg_plugin.exact.split` splits it:
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


def exact_sums(wide: DataFrame, outputs: list[Output], key: Column | None = None) -> DataFrame:
    """The per-query columns each measure aggregates (its values; an item-level measure's hits and
    den), as exact partial sums: one row per (key, measure i, part, shift) with the sums of
    ``hi``, ``mid``, ``lo`` and the number of values; NULL values (no value) are left out. A few
    hundred rows, combined on the driver (:class:`ndcg_plugin.exact.ExactSum`)."""
    items = []
    for i, o in enumerate(outputs):
        parts = {"hits": o.hits, "den": o.den} if o.hits is not None else {"value": o.value}
        items += [F.struct(F.lit(i).alias("i"), F.lit(part).alias("part"), F.col(c).cast("double").alias("v"))
                  for part, c in parts.items()]
    keys = [key.alias("key")] if key is not None else []
    long = wide.select(*keys, F.explode(F.array(*items)).alias("x")).select(*(["key"] if keys else []), "x.*")
    long = long.where(F.col("v").isNotNull()).select(*(["key"] if keys else []), "i", "part", *exact_parts(F.col("v")))
    return long.groupBy(*(["key"] if keys else []), "i", "part", "shift").agg(
        F.sum("hi").alias("hi"), F.sum("mid").alias("mid"), F.sum("lo").alias("lo"), F.count(F.lit(1)).alias("n"))


def check_columns() -> list[Column]:
    """Global counts that say whether the input was valid, over the per-query table of all queries."""
    return [
        F.sum(F.when(~F.col("has_qrels"), 1).otherwise(0)).alias("unmatched"),
        F.sum(F.when(F.col("returned") > 0, 1).otherwise(0)).alias("run_queries"),
        F.max("max_run_pair").alias("max_run_pair"),
        F.max("max_qrels_pair").alias("max_qrels_pair"),
        F.min("dup_run").alias("dup_run"),
        F.min("dup_qrels").alias("dup_qrels"),
    ]
