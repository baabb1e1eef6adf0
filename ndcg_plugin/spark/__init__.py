"""The plugin's measures on Spark DataFrames, computed natively with Spark SQL.

>>> from ndcg_plugin import spark as ndcg_spark
>>> ndcg_spark.evaluate(qrels_df, run_df, measures)   # measure objects or strings, as ir-measures takes them
{measure: aggregate, ...}

The numbers are the local engine's (:mod:`ndcg_plugin.engine`), with the same conventions:
ties by doc id descending (byte order), qrels queries missing from the run score 0 (or have no
value, for a measure that leaves misses out), run queries missing from the qrels ignored,
negative labels gain 0 and are never relevant, item-level measures micro-averaged. The work is
window functions, one shuffle by query id and grouped aggregations (:mod:`.plan`, with each
family's own expressions); only the aggregates reach the driver.

Needs the ``[spark]`` extra (pyspark) and Java 17 or later.
"""
from __future__ import annotations

import math
import os
import shutil
import warnings
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from ..errors import Unsupported
from ..measures import examples, parse_measures, spec_of
from ..ranking import report_unmatched

DEFAULT_COLUMNS = {"query": "query_id", "doc": "doc_id", "relevance": "relevance", "score": "score"}


class SparkUnavailable(RuntimeError):
    """pyspark or Java is missing; the message says what to install."""


def require_spark() -> None:
    """Raise :class:`SparkUnavailable` with one clear line when pyspark or Java is missing."""
    try:
        import pyspark  # noqa: F401
    except ImportError:
        raise SparkUnavailable("the Spark engine needs pyspark: pip install 'ndcg-plugin[spark]' "
                               "(and Java 17 or later)") from None
    java_home = os.environ.get("JAVA_HOME")
    if not (java_home and os.path.exists(os.path.join(java_home, "bin", "java"))) and not shutil.which("java"):
        raise SparkUnavailable("the Spark engine needs Java 17 or later: install a JDK (e.g. apt-get install "
                               "openjdk-17-jre-headless) and put java on PATH or set JAVA_HOME")


def session(master: str = "local[*]", conf: dict | None = None):
    """The active SparkSession, or a new one on ``master`` (quiet logging, no UI)."""
    require_spark()
    with warnings.catch_warnings():
        # pyspark warns that it does not fully support pandas >= 3; the engine converts no pandas data
        warnings.filterwarnings("ignore", message="PySpark does not yet fully support pandas", category=FutureWarning)
        return _session(master, conf)


def _session(master: str, conf: dict | None):
    from pyspark.sql import SparkSession
    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    builder = (SparkSession.builder.master(master).appName("ndcg-plugin")
               .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false"))
    conf = dict(conf or {})
    if master.startswith("local") and "spark.sql.shuffle.partitions" not in conf:
        # Spark's default of 200 shuffle partitions costs seconds per stage on one machine
        threads = master[len("local"):].strip("[]").split(",")[0]
        cores = (os.cpu_count() or 2) if threads in ("", "*") else (int(threads) if threads.isdigit() else 2)
        conf["spark.sql.shuffle.partitions"] = str(2 * cores)
    for key, value in conf.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def _measures(measures: Iterable) -> list:
    if isinstance(measures, str):
        measures = [measures]
    out = []
    for m in measures:
        out.extend(parse_measures([m]) if isinstance(m, str) else [m])
    return list(dict.fromkeys(out))


def _specs(measures: list) -> list:
    specs = []
    for m in measures:
        try:
            specs.append((str(m), spec_of(m)))
        except Unsupported:
            raise
        except ValueError as e:
            raise ValueError(f"the Spark engine computes the measures of the plugin's families as the local engine "
                             f"does; not {m} ({e})") from None
        if specs[-1][1].ties == "average":
            raise ValueError(f"{m}: the Spark engine orders tied scores by doc id descending (ties='trec') and does "
                             f"not compute ties='average'; use the local engine (ndcg-plugin eval without --engine "
                             f"spark, or ir_measures.calc_aggregate) for it")
    return specs


@dataclass
class Evaluation:
    """A lazy evaluation: ``wide`` holds one row per qrels query (``query_id`` and one column per
    measure, in ``outputs`` order); nothing runs until an action is called."""
    measures: list
    wide: Any                 # DataFrame
    outputs: list
    _all: Any                 # per-query table of every query (run-only ones too), for checks
    files: dict = field(default_factory=dict)   # {path: (kind, run_format)} read by Spark, for errors

    def persist(self) -> Evaluation:
        """Keep the per-query table once computed (one row per query), so that :meth:`check`,
        :meth:`aggregates` and :meth:`rows` run the evaluation once between them."""
        self._all.persist()
        return self

    def unpersist(self) -> None:
        self._all.unpersist()

    def check(self) -> None:
        """One Spark job over the per-query table: refuses repeated (query, doc) pairs and warns
        about run queries absent from the qrels, as the local engine does."""
        from . import failures, plan
        with failures.reraise(self.files):
            row = self._all.agg(*plan.check_columns()).collect()[0]
        if row["dup_run"] is not None:
            raise ValueError(f"run: the pair (query_id doc_id) {row['dup_run']!r} occurs "
                             f"{row['max_run_pair']} times; trec_eval refuses repeated pairs")
        if row["dup_qrels"] is not None:
            raise ValueError(f"qrels: the pair (query_id doc_id) {row['dup_qrels']!r} occurs "
                             f"{row['max_qrels_pair']} times; trec_eval refuses repeated pairs")
        report_unmatched(int(row["unmatched"] or 0), int(row["run_queries"] or 0))

    def aggregates(self, by=None) -> dict:
        """{measure: aggregate}; with ``by`` (a column expression over ``query_id``), a dict
        {key: {measure: aggregate}} per group of queries. Each aggregate is summed exactly, as the
        local engine sums it (:mod:`ndcg_plugin.exact`): the same digits whatever the partitioning."""
        from ..exact import ExactSum
        from . import failures, plan
        with failures.reraise(self.files):
            rows = plan.exact_sums(self.wide, self.outputs, by).collect()
        sums: dict = {}
        for r in rows:
            key = r["key"] if by is not None else None
            acc = sums.setdefault(key, {}).setdefault((r["i"], r["part"]), ExactSum())
            acc.add_parts([(int(r["shift"]), int(r["hi"]), int(r["mid"]), int(r["lo"]))], int(r["n"]))
        out = {key: {m: self._result(m, o, found.get((i, "value")), found.get((i, "hits")), found.get((i, "den")))
                     for i, (m, o) in enumerate(zip(self.measures, self.outputs, strict=True))}
               for key, found in (sums.items() if sums or by is not None else [(None, {})])}
        return out[None] if by is None else out

    @staticmethod
    def _result(measure, output, value, hits, den) -> float:
        from ..exact import ratio
        if output.hits is not None:
            return ratio(hits, den) if hits is not None and den is not None else 0.0
        if value is None:
            if output.ignore:
                warnings.warn(f"{measure}: no query has a value (no relevant document in the top k for any "
                              f"query); the mean is NaN", RuntimeWarning, stacklevel=3)
            return math.nan
        return value.mean()

    def long(self):
        """Per-query values as a DataFrame (query_id, measure, value); ``value`` is NULL where
        a measure has no value (one that leaves misses out, without a relevant doc in the top k)."""
        from pyspark.sql import functions as F
        pairs = F.array(*[F.struct(F.lit(o.name).alias("measure"), F.col(o.value).alias("value"))
                          for o in self.outputs])
        return (self.wide.select("query_id", F.inline(pairs))
                .select("query_id", "measure", "value"))

    def rows(self) -> Iterator[tuple[str, list[float]]]:
        """(query_id, [value per measure]) in query id order (byte order), streamed to the driver
        a partition at a time: for printing per-query results."""
        from . import failures
        with failures.reraise(self.files):
            for r in self.wide.orderBy("query_id").toLocalIterator():
                yield r["query_id"], [math.nan if r[o.value] is None else float(r[o.value]) for o in self.outputs]


def prepare(qrels, run, measures: Iterable, columns: dict | None = None) -> Evaluation:
    """Build the plan (nothing runs). ``qrels``/``run`` are Spark DataFrames with the column
    names of ``columns`` (keys query, doc, relevance, score; defaults ir-measures' names)."""
    from . import inputs, plan
    names = {**DEFAULT_COLUMNS, **(columns or {})}
    unknown = set(names) - set(DEFAULT_COLUMNS)
    if unknown:
        raise ValueError(f"columns: unknown keys {sorted(unknown)}; expected some of {sorted(DEFAULT_COLUMNS)}")
    measures = _measures(measures)
    if not measures:
        raise ValueError(f"give at least one measure, e.g. {examples()[0]}")
    specs = _specs(measures)
    measure_plan = plan.plan_measures(specs)
    q = plan.check_labels(inputs.normalise(qrels, "qrels", names), measure_plan)
    r = inputs.normalise(run, "run", names)
    r, q = plan.align(r, q)
    rows = plan.ranked_rows(r, q, [s for _, s in specs], measure_plan)
    every = plan.per_query(rows, measure_plan, plan.qrels_side(q, measure_plan))
    outputs = measure_plan.outputs
    extra = [c for o in outputs for c in (o.hits, o.den) if c is not None]
    wide = every.where("has_qrels").select(every["q"].cast("string").alias("query_id"),
                                           *[o.value for o in outputs], *extra)
    return Evaluation(measures, wide, outputs, every)


def prepare_files(spark, qrels: str, run: str, measures: Iterable, run_format: str = "auto") -> Evaluation:
    """:func:`prepare` on files read by Spark (TREC or MS MARCO text, or Parquet; see
    :mod:`.files`). Errors in a file name the file (and the line, for a local text file)."""
    from . import files
    ev = prepare(files.read(spark, qrels, "qrels"), files.read(spark, run, "run", run_format), measures)
    ev.files = {str(qrels): ("qrels", "auto"), str(run): ("run", run_format)}
    return ev


def evaluate(qrels, run, measures: Iterable, per_query: bool = False, columns: dict | None = None):
    """Evaluate a run (Spark DataFrame) against qrels (Spark DataFrame).

    ``measures``: measure objects or strings (as ``ir_measures.parse_measure`` reads them). ``columns`` maps query, doc,
    relevance, score to column names (e.g. ``{"query": "user_id", "doc": "item_id",
    "relevance": "rating", "score": "prediction"}``). Ids may be strings or integers (compared
    as their decimal strings); relevance an integer; score a number.

    Returns ``{measure: aggregate}``, or with ``per_query=True`` a DataFrame (query_id, measure,
    value) over the qrels queries; the per-query table (one row per query) stays cached after
    the validation job, and the returned DataFrame reads from it.
    Repeated (query, doc) pairs, NaN or infinite scores, missing or empty ids and non-integer
    labels raise ValueError, as in the local engine.
    """
    ev = prepare(qrels, run, measures, columns).persist()
    ev.check()
    if per_query:
        return ev.long()
    try:
        return ev.aggregates()
    finally:
        ev.unpersist()


__all__ = ["evaluate", "prepare", "prepare_files", "session", "require_spark", "SparkUnavailable", "Evaluation",
           "DEFAULT_COLUMNS"]
