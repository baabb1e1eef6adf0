"""An evaluation on Spark: the plan built for the measures (top-k or full rows), and the actions
that run it. :meth:`SparkJob.aggregates` is one action (one ``collect`` of a few rows) that
computes the aggregates and validates the input together; :meth:`SparkJob.per_query` is one
action too (it builds the cached per-query table, validated as it is computed)."""
from __future__ import annotations

import math
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ..ranking.ranked import report_unmatched
from .session import quiet_pandas

#: how each strategy names itself to the user
STRATEGIES = ("auto", "engine", "top_k", "full")
#: what the engine plan ships when every measure has a cutoff: each query's best rows, every row,
#: or what a sample of the run says pays (:func:`.partitions.worth_cutting`)
SHIPS = ("auto", "best", "all")


@dataclass
class Built:
    """The DataFrames of one plan: ``every`` has one row per query (run-only ones too) with the
    per-query values and the validation columns; ``duplicates`` the run's repeated pairs when the
    row plan does not check them itself (top-k)."""
    every: Any
    outputs: list
    duplicates: Any
    discounts: int
    summed: Any = None   # the engine plan's result rows without a key, summed in its workers


class SparkJob:
    """A lazy evaluation of ``measures`` (nothing runs until an action is called). ``strategy``:
    ``engine`` (the local engine on each partition: :mod:`.partitions`), or the Spark SQL plans
    ``top_k`` (only each query's best rows are shuffled) and ``full`` (every row)."""

    def __init__(self, measures: list, specs: list, run, qrels, strategy: str, files: dict | None = None,
                 duplicates: str = "error", ship: str = "auto"):
        self.measures, self.strategy, self.files = measures, strategy, dict(files or {})
        self.duplicates, self.ship = duplicates, ship
        self._specs, self._run, self._qrels = specs, run, qrels
        self._persisted = None
        self._checked: dict | None = None
        self._ship_all = False  # the engine plan ships every row (its first run could not check the run)
        cutoffs = [s.cutoff for _, s in specs if s.cutoff is not None]
        from .plan import DEFAULT_DISCOUNTS
        unbounded = len(cutoffs) < len(specs)
        self._table = max(cutoffs + [DEFAULT_DISCOUNTS if unbounded else 1])
        self._made: Built | None = None
        if not self._samples():
            self._made = self._build(self._table)
        else:  # the plan waits for the first action, which samples the run first
            from . import partitions
            partitions.outputs(measures)  # what the plan would refuse, refused now, by name

    def _cut_applies(self) -> bool:
        """Whether the engine plan may cut the run before the shuffle: every measure ranks the whole
        run with a cutoff, and no earlier run asked for every row."""
        from . import topk
        return not self._ship_all and all(topk.serves(s) for _, s in self._specs)

    def _samples(self) -> bool:
        """Whether the plan's build samples the run (the engine plan, ``ship='auto'``, a cut that
        applies): then it waits for an action."""
        return self.strategy == "engine" and self.ship == "auto" and self._cut_applies()

    @property
    def _built(self) -> Built:
        """The plan, built on first use: with ``ship='auto'`` its sample of the run is a Spark job,
        which waits for an action (nothing runs when the evaluation is prepared)."""
        if self._made is None:
            self._made = self._build(self._table)
        return self._made

    def _build(self, table: int) -> Built:
        from . import duplicates, full, partitions, plan, topk
        if self.strategy == "engine":
            cut = self._cut_applies() and self._cuts()
            with quiet_pandas():  # mapInArrow checks pandas' version, which pyspark 4 warns about
                every, summed, outs = partitions.per_query(
                    self._run, self._qrels, self.measures, [s for _, s in self._specs],
                    max(s.cutoff for _, s in self._specs) if cut else None, self.duplicates)
            return Built(every, outs, None, table, summed)
        measure_plan = plan.plan_measures(self._specs, table)
        qrels = plan.check_labels(self._qrels, measure_plan)
        if self.strategy == "top_k":
            k = max(s.cutoff for _, s in self._specs)
            rows, checks = topk.rows(self._run, qrels, k)
            with quiet_pandas():  # mapInArrow checks pandas' version, which pyspark 4 warns about
                dups = duplicates.repeated_pairs(self._run, "group" if duplicates.small(self._run) else "summary")
        else:
            rows, checks = full.rows(self._run, qrels, any(s.judged_only for _, s in self._specs))
            dups = None
        return Built(plan.per_query(rows, measure_plan, checks), measure_plan.outputs, dups, table)

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

    def _rebuild(self, table: int) -> None:
        self._checked = None
        persisted = self._persisted is not None
        self.unpersist()
        self._made = self._build(table)
        if persisted:
            self.persist()

    def frame(self, by=None):
        """The DataFrame :meth:`aggregates` collects: exact partial sums and validation rows."""
        from pyspark.sql import functions as F

        from .plan import result_rows
        if by is None and self._built.summed is not None:
            return self._built.summed
        every = self._built.every.withColumn("query_id", F.col("q").cast("string"))
        return result_rows(every, self._built.outputs, by, self._built.duplicates)

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
            checks = {"unmatched": 0, "run_queries": 0, "need": None, "dup_qrels": None, "dup_run": None,
                      "unverified": 0}
            sums = [r for r in rows if r["kind"] == "sum"]
            for r in rows:
                if r["kind"] in ("unmatched", "run_queries", "unverified"):
                    checks[r["kind"]] = int(r["n"])
                elif r["kind"] == "need":
                    checks["need"] = r["big"]
                elif r["kind"] in ("dup_qrels", "dup_run"):
                    checks[r["kind"]] = r["example"] or checks[r["kind"]]
            if not self._settle(checks):
                return self._results(sums, by)

    def _settle(self, checks: dict) -> bool:
        """Raise for repeated pairs (the qrels' first, as the local engine reads them first); True
        when the plan is rebuilt and must run again: a query needs more discounts than the plan had,
        or (engine plan) a query could not be evaluated from the rows shipped: they came from several
        partitions with only their best rows, so that its pairs could not all be checked (and a
        repeated pair's count may be short), or (``duplicates='max'``) two copies of a pair were
        among them: every row is shipped then."""
        from .failures import duplicate_error
        for kind in ("qrels", "run"):
            if kind == "run" and checks.get("unverified"):
                self._ship_all, self.ship = True, "all"  # ship says what the numbers came from
                self._rebuild(self._built.discounts)
                return True
            found = checks[f"dup_{kind}"]
            if found is not None:
                self.unpersist()
                raise duplicate_error(kind, list(found["pair"]), int(found["n"]), self.files)
        if checks["need"] is not None and checks["need"] > self._built.discounts:
            self._rebuild(int(checks["need"]))
            return True
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
        if output.hits is not None:
            return ratio(hits, den) if hits is not None and den is not None else 0.0
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

        from . import failures, plan
        while True:
            every = self._built.every
            if self._built.duplicates is not None:
                edge = F.broadcast(self._built.duplicates.select(F.col("example").alias("dup_edge")))
                every = every.crossJoin(edge).withColumn("dup_run", F.coalesce("dup_run", "dup_edge"))
            seen = Observation("ndcg-plugin checks")
            every = every.observe(seen, *plan.observed(every))
            wide = every.where("has_qrels").select(F.col("q").cast("string").alias("query_id"),
                                                   *[o.value for o in self.outputs])
            out = self.long(wide).persist()
            try:
                with failures.reraise(self.files):
                    out.count()
                again = self._settle(dict(seen.get))
            except BaseException:
                out.unpersist()
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
