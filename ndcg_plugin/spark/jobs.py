"""An evaluation on Spark: the engine plan built for the measures (:mod:`.partitions`), and the
actions that run it. :meth:`SparkJob.aggregates` is one action (one ``collect`` of a few rows)
that computes the aggregates and validates the input together; :meth:`SparkJob.per_query` is one
action too (it builds the cached per-query table, validated as it is computed).

The exact sums: each measure's per-query values are split per binary exponent, in 64-bit
integers (:func:`ndcg_plugin.arrays.exact.split_sums` in the workers, :func:`exact_parts` as
Spark expressions for :meth:`SparkJob.aggregates` by a key), and the driver adds up the few
rows it collects exactly (:class:`ndcg_plugin.arrays.exact.ExactSum`): the local engine's digits,
whatever the partitioning."""
from __future__ import annotations

import math
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..ranking.ranked import report_unmatched
from .session import quiet_pandas

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

#: the strategies :func:`ndcg_plugin.spark.prepare` takes: both are the engine plan
STRATEGIES = ("auto", "engine")
#: the Spark SQL plans, retired: one implementation per measure and backend (docs/spark.md)
RETIRED = ("top_k", "full")
#: what the engine plan ships when every measure has a cutoff: each query's best rows, every row,
#: or what a sample of the run says pays (:func:`.partitions.worth_cutting`)
SHIPS = ("auto", "best", "all")


@dataclass
class Built:
    """The DataFrames of the plan: ``every`` has one row per query (run-only ones too) with the
    per-query values and the validation columns (:func:`.worker.wide_schema`); ``summed`` the
    result rows without a key, summed in the workers."""
    every: Any
    outputs: list
    summed: Any


class SparkJob:
    """A lazy evaluation of ``measures`` by the engine plan (nothing runs until an action is
    called): the local engine on each partition (:mod:`.partitions`). ``strategy`` names the plan:
    ``'engine'``, the one there is."""

    def __init__(self, measures: list, specs: list, run, qrels, files: dict | None = None,
                 duplicates: str = "error", ship: str = "auto"):
        self.measures, self.strategy, self.files = measures, "engine", dict(files or {})
        self.duplicates, self.ship = duplicates, ship
        self._specs, self._run, self._qrels = specs, run, qrels
        self._persisted = None
        self._checked: dict | None = None
        self._ship_all = False  # the engine plan ships every row (its first run could not check the run)
        self._made: Built | None = None
        if not self._samples():
            self._made = self._build()
        else:  # the plan waits for the first action, which samples the run first
            from . import partitions
            partitions.outputs(measures)  # what the plan would refuse, refused now, by name

    def _cut_applies(self) -> bool:
        """Whether the engine plan may cut the run before the shuffle: every measure ranks the whole
        run with a cutoff, and no earlier run asked for every row."""
        from .partitions import cut_applies
        return not self._ship_all and all(cut_applies(s) for _, s in self._specs)

    def _samples(self) -> bool:
        """Whether the plan's build samples the run (``ship='auto'``, a cut that applies): then it
        waits for an action."""
        return self.ship == "auto" and self._cut_applies()

    @property
    def _built(self) -> Built:
        """The plan, built on first use: with ``ship='auto'`` its sample of the run is a Spark job,
        which waits for an action (nothing runs when the evaluation is prepared)."""
        if self._made is None:
            self._made = self._build()
        return self._made

    def _build(self) -> Built:
        from . import partitions
        cut = self._cut_applies() and self._cuts()
        with quiet_pandas():  # mapInArrow checks pandas' version, which pyspark 4 warns about
            every, summed, outs = partitions.per_query(
                self._run, self._qrels, self.measures, [s for _, s in self._specs],
                max(s.cutoff for _, s in self._specs) if cut else None, self.duplicates)
        return Built(every, outs, summed)

    def _cuts(self) -> bool:
        """Whether the engine plan ships each query's best rows (``ship``; for ``auto``, decided once
        from a sample of the run: :func:`.partitions.worth_cutting`); after it, ``ship`` says which
        (and becomes ``all`` when the run is evaluated again with every row: :meth:`_settle`)."""
        from . import failures, partitions
        if self.ship == "auto":
            k = max(s.cutoff for _, s in self._specs)
            with failures.reraise(self.files):  # the sample reads rows: a bad one is the evaluation's error
                self.ship = "best" if partitions.worth_cutting(self._run, k) else "all"
        return self.ship == "best"

    @property
    def outputs(self) -> list:
        if self._made is None:  # the engine plan's outputs, known without building it (and sampling)
            from . import partitions
            return partitions.outputs(self.measures)
        return self._made.outputs

    @property
    def wide(self):
        """One row per qrels query: ``query_id`` and one column per measure (``outputs`` order)."""
        from pyspark.sql import functions as F
        every, outputs = self._built.every, self._built.outputs
        extra = [c for o in outputs for c in (o.hits, o.den) if c is not None]
        return every.where("has_qrels").select(F.col("q").cast("string").alias("query_id"),
                                               *[o.value for o in outputs], *extra)

    def persist(self) -> SparkJob:
        """Keep the per-query table once computed, so that :meth:`aggregates` and then :meth:`rows`
        compute the evaluation once between them; :meth:`unpersist` releases it."""
        self._persisted = self._built.every.persist()
        return self

    def unpersist(self) -> None:
        if self._persisted is not None:
            self._persisted.unpersist()
            self._persisted = None

    def _rebuild(self) -> None:
        self._checked = None
        persisted = self._persisted is not None
        self.unpersist()
        self._made = self._build()
        if persisted:
            self.persist()

    def frame(self, by=None):
        """The DataFrame :meth:`aggregates` collects: exact partial sums and validation rows."""
        from pyspark.sql import functions as F
        if by is None:
            return self._built.summed
        every = self._built.every.withColumn("query_id", F.col("q").cast("string"))
        return result_rows(every, self._built.outputs, by)

    def check(self) -> None:
        """Validate the input: the action of :meth:`aggregates`, whose result is kept for it."""
        self._checked = self.aggregates()

    def aggregates(self, by=None) -> dict:
        """{measure: aggregate}; with ``by`` (a column expression over ``query_id``), a dict
        {key: {measure: aggregate}} per group of queries. One action, which also validates the input
        (repeated pairs raise ValueError; run queries absent from the qrels give a warning). Each
        aggregate is summed exactly, as the local engine sums it (:mod:`ndcg_plugin.arrays.exact`): the same
        digits whatever the partitioning."""
        from . import failures
        if by is None and self._checked is not None:
            return self._checked
        while True:
            with failures.reraise(self.files):
                rows = self.frame(by).collect()
            checks = {"unmatched": 0, "run_queries": 0, "dup_qrels": None, "dup_run": None, "unverified": 0}
            sums = [r for r in rows if r["kind"] == "sum"]
            for r in rows:
                if r["kind"] in ("unmatched", "run_queries", "unverified"):
                    checks[r["kind"]] = int(r["n"])
                elif r["kind"] in ("dup_qrels", "dup_run"):
                    checks[r["kind"]] = r["example"] or checks[r["kind"]]
            if not self._settle(checks):
                return self._results(sums, by)

    def _settle(self, checks: dict) -> bool:
        """Raise for repeated pairs (the qrels' first, as the local engine reads them first); True
        when the plan is rebuilt and must run again: a query could not be evaluated from the rows
        shipped: they came from several partitions with only their best rows, so that its pairs
        could not all be checked (and a repeated pair's count may be short), or
        (``duplicates='max'``) two copies of a pair were among them: every row is shipped then."""
        from .failures import duplicate_error
        for kind in ("qrels", "run"):
            if kind == "run" and checks.get("unverified"):
                self._ship_all, self.ship = True, "all"  # ship says what the numbers came from
                self._rebuild()
                return True
            found = checks[f"dup_{kind}"]
            if found is not None:
                self.unpersist()
                raise duplicate_error(kind, list(found["pair"]), int(found["n"]), self.files)
        report_unmatched(int(checks["unmatched"] or 0), int(checks["run_queries"] or 0))
        return False

    def _results(self, rows: list, by) -> dict:
        from ..arrays.exact import ExactSum
        sums: dict = {}
        for r in rows:
            acc = sums.setdefault(r["key"], {}).setdefault((r["i"], r["part"]), ExactSum())
            acc.add_parts([(int(r["shift"]), int(r["hi"]), int(r["mid"]), int(r["lo"]))], int(r["n"]))
        out = {key: {m: self._result(m, o, found.get((i, "value")), found.get((i, "hits")), found.get((i, "den")))
                     for i, (m, o) in enumerate(zip(self.measures, self.outputs, strict=True))}
               for key, found in (sums.items() if sums or by is not None else [(None, {})])}
        return out[None] if by is None else out

    @staticmethod
    def _result(measure, output, value, hits, den) -> float:
        from ..arrays.exact import ratio
        from ..measures.aggregate import ExactSumAgg, array_aggregator
        if output.hits is not None:
            return ratio(hits, den) if hits is not None and den is not None else 0.0
        if isinstance(array_aggregator(measure), ExactSumAgg):  # the counts (NumQ, NumRet...): summed
            return 0.0 if value is None else value.total()
        if value is None:
            if output.ignore:
                warnings.warn(f"{measure}: no query has a value (no relevant document in the top k for any "
                              f"query); the mean is NaN", RuntimeWarning, stacklevel=4)
            return math.nan
        return value.mean()

    def long(self, wide=None):
        """Per-query values as a DataFrame (query_id, measure, value), lazy; ``value`` is NULL where
        a measure has no value (one that leaves misses out, without a relevant doc in the top k)."""
        from pyspark.sql import functions as F
        wide = self.wide if wide is None else wide
        pairs = F.array(*[F.struct(F.lit(o.name).alias("measure"), F.col(o.value).alias("value"))
                          for o in self.outputs])
        return wide.select("query_id", F.inline(pairs)).select("query_id", "measure", "value")

    def per_query(self):
        """The per-query values (query_id, measure, value) of the qrels queries, computed and
        validated by one action and cached: the caller releases them with ``.unpersist()``."""
        from pyspark.sql import Observation
        from pyspark.sql import functions as F

        from . import failures
        while True:
            every = self._built.every
            seen = Observation("ndcg-plugin checks")
            every = every.observe(seen, *observed())
            wide = every.where("has_qrels").select(F.col("q").cast("string").alias("query_id"),
                                                   *[o.value for o in self.outputs])
            out = self.long(wide).persist()
            try:
                with failures.reraise(self.files):
                    out.count()
                again = self._settle(dict(seen.get))
            except BaseException as e:
                if not isinstance(e, KeyboardInterrupt):  # py4j shut the connection down: the call would
                    out.unpersist()                        # fail, and its error hide the interrupt
                raise
            if not again:
                return out
            out.unpersist()

    def rows(self) -> Iterator[tuple[str, list[float]]]:
        """(query_id, [value per measure]) in query id order (byte order), streamed to the driver
        a partition at a time: for printing per-query results."""
        from . import failures
        with failures.reraise(self.files):
            for r in self.wide.orderBy("query_id").toLocalIterator():
                yield r["query_id"], [math.nan if r[o.value] is None else float(r[o.value]) for o in self.outputs]


def exact_parts(value: Column) -> list[Column]:
    """A finite double column split for an exact sum as :func:`ndcg_plugin.arrays.exact.split` splits it:
    ``shift`` (E) and the pieces ``hi``, ``mid``, ``lo`` of the 53-bit mantissa, with integer
    arithmetic only where it must be exact. The binary exponent comes from log2, corrected by
    comparisons with exact powers of two; dividing by a power of two is exact."""
    from pyspark.sql import functions as F
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


_NULL = {"i": "int", "part": "string", "v": "double"}
_EXAMPLE = "struct<pair:array<string>,n:bigint>"


def _item(kind: str, **given: Column) -> Column:
    """One row of the results, before they are grouped: NULL in the fields ``given`` lacks."""
    from pyspark.sql import functions as F
    fields = [F.lit(kind).alias("kind")]
    fields += [given[name].alias(name) if name in given else F.lit(None).cast(t).alias(name)
               for name, t in _NULL.items()]
    fields.append((given["example"] if "example" in given else F.lit(None).cast(_EXAMPLE)).alias("example"))
    return F.struct(*fields)


def result_rows(wide: DataFrame, outputs: list, key: Column) -> DataFrame:
    """The few rows :meth:`SparkJob.aggregates` collects with a ``key`` (a column expression over
    ``query_id``), from one grouped aggregation over the per-query table of every query
    (:func:`.worker.wide_schema`): per (key, measure i, part, shift) the exact partial sums
    (``hi``, ``mid``, ``lo``) of the values each measure aggregates and their number ``n`` (its
    values; an item-level measure's hits and den; NULL values, "no value", are left out); and the
    validation rows (kind ``unmatched``/``run_queries``/``unverified``: n; ``dup_qrels``/``dup_run``:
    example). Without a key, the workers make the same rows (:func:`.worker.sums`)."""
    from pyspark.sql import functions as F
    has_qrels, returned = F.col("has_qrels"), F.col("returned")
    items = []
    for i, o in enumerate(outputs):
        parts = {"hits": o.hits, "den": o.den} if o.hits is not None else {"value": o.value}
        for part, c in parts.items():
            v = F.col(c).cast("double")
            items.append(F.when(has_qrels & v.isNotNull(), _item("sum", i=F.lit(i), part=F.lit(part), v=v)))
    items += [F.when(~has_qrels & (returned > 0), _item("unmatched")), F.when(returned > 0, _item("run_queries")),
              F.when(F.col("unverified"), _item("unverified")),
              F.when(F.col("dup_qrels").isNotNull(), _item("dup_qrels", example=F.col("dup_qrels"))),
              F.when(F.col("dup_run").isNotNull(), _item("dup_run", example=F.col("dup_run")))]
    x = wide.select(key.alias("key"), F.explode(F.filter(F.array(*items), lambda t: t.isNotNull())).alias("x"))
    is_sum = F.col("x.kind") == "sum"
    x = x.select(F.when(is_sum, F.col("key")).alias("key"), "x.kind", "x.i", "x.part", "x.example",
                 *exact_parts(F.col("x.v")))
    return x.groupBy("kind", "key", "i", "part", "shift").agg(
        F.sum("hi").alias("hi"), F.sum("mid").alias("mid"), F.sum("lo").alias("lo"), F.count(F.lit(1)).alias("n"),
        F.min("example").alias("example"))


def observed() -> list[Column]:
    """The validation counts of :func:`result_rows`, as aggregates over the per-query table (for
    ``DataFrame.observe``: the per-query output validates as it is computed)."""
    from pyspark.sql import functions as F
    has_qrels, returned = F.col("has_qrels"), F.col("returned")
    return [F.count(F.when(~has_qrels & (returned > 0), True)).alias("unmatched"),
            F.count(F.when(returned > 0, True)).alias("run_queries"),
            F.min("dup_qrels").alias("dup_qrels"), F.min("dup_run").alias("dup_run"),
            F.count(F.when(F.col("unverified"), True)).alias("unverified")]
