"""The plugin's measures on Spark DataFrames.

>>> from ndcg_plugin import spark as ndcg_spark
>>> ndcg_spark.evaluate(qrels_df, run_df, measures)   # measure objects or strings, as ir-measures takes them
{measure: aggregate, ...}

The numbers are the local engine's (:mod:`ndcg_plugin.engine.block`), to the bit, with the same
conventions: ties by doc id descending (byte order), qrels queries missing from the run score 0
(or have no value, for a measure that leaves misses out), run queries missing from the qrels
ignored, negative labels gain 0 and are never relevant, item-level measures micro-averaged. The
engine plan (:mod:`.partitions`) shuffles the run (only each query's best rows, when every
measure has a cutoff) and the qrels once by query id, and the local engine evaluates each
partition in a Python worker (so the executors' Python must import ndcg_plugin, as any library
a Python UDF uses). Only a few rows reach the driver. That is the one plan: the Spark SQL plans
(``strategy='top_k'``, ``'full'``) were retired, one implementation per measure and backend.

Needs the ``[spark]`` extra (pyspark) and Java 17 or later.
"""
from __future__ import annotations

from collections.abc import Iterable

from ..errors import Unsupported
from ..measures import examples, parse_measures, spec_of
from ..measures.registry import is_own
from .jobs import RETIRED, SHIPS, STRATEGIES, SparkJob
from .session import SparkUnavailable, check_master, require_spark, session

DEFAULT_COLUMNS = {"query": "query_id", "doc": "doc_id", "relevance": "relevance", "score": "score"}


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
    return specs


def _check(specs: list, strategy: str, duplicates: str = "error", ship: str = "auto") -> None:
    """Refuse by name a strategy, option or measure the engine plan (the one plan) does not take."""
    from .worker import POLICIES
    if strategy in RETIRED:
        raise ValueError(f"strategy={strategy!r}: the Spark SQL plans (top_k, full) were retired, one implementation "
                         f"per measure and backend; the engine plan (strategy='auto' or 'engine') computes the same "
                         f"numbers, with ndcg_plugin importable on the executors (docs/spark.md)")
    if strategy not in STRATEGIES:
        raise ValueError(f"strategy must be one of {STRATEGIES}, got {strategy!r}")
    if duplicates == "first":
        raise ValueError("duplicates='first' keeps the copy of a repeated pair that comes first in the file, and a "
                         "Spark DataFrame has no such order across its partitions: use duplicates='max' (the copy "
                         "with the highest score or label) or 'error'")
    if duplicates not in POLICIES:
        raise ValueError(f"duplicates must be one of {POLICIES}, got {duplicates!r}")
    if ship not in SHIPS:
        raise ValueError(f"ship must be one of {SHIPS}, got {ship!r}")
    foreign = [(name, spec.family) for name, spec in specs if not is_own(spec.family)]
    if foreign:
        name, added = foreign[0]
        raise Unsupported(f"the Spark engine does not implement the {added} family ({name}): strategy='engine' "
                          f"evaluates in the executors' Python, where ndcg_plugin has its own families only, and "
                          f"this one was added in this process (add_family)")


def _check_frame(kind: str, df) -> None:
    """A TypeError saying what to pass when ``df`` is no Spark DataFrame (a pandas one, a path)."""
    if not hasattr(df, "sparkSession"):  # pyspark's DataFrame, and Spark Connect's
        got = f"{type(df).__module__}.{type(df).__qualname__}"
        raise TypeError(f"{kind}: expected a Spark DataFrame, got {got}; for a pandas DataFrame, pass "
                        f"spark.createDataFrame(df), or evaluate it locally (ir_measures.calc_aggregate with the "
                        f"plugin registered); for files, ndcg_plugin.spark.prepare_files(spark, qrels, run, measures)")


def prepare(qrels, run, measures: Iterable, columns: dict | None = None, strategy: str = "auto",
            duplicates: str = "error", ship: str = "auto") -> SparkJob:
    """Build the plan (nothing runs). ``qrels``/``run`` are Spark DataFrames with the column
    names of ``columns`` (keys query, doc, relevance, score; defaults ir-measures' names).
    ``strategy``: ``auto`` or ``engine``, both the engine plan (the local engine on each partition:
    :mod:`.partitions`; the executors' Python imports ndcg_plugin); the retired Spark SQL plans
    ``top_k`` and ``full`` are refused by name, as is a measure whose family was added in this
    process (:func:`ndcg_plugin.measures.add_family`; the executors do not have it).
    ``duplicates``: a repeated (query, doc) pair is refused (``error``, trec_eval's rule) or kept
    once at its highest score or label (``max``, as the local engine's option; the cut before the
    shuffle is then Spark's own, which makes it faster); ``first`` has no meaning in a DataFrame.
    ``ship`` (engine plan, every measure with a cutoff K): ``best`` cuts each query's rows to its
    best before the shuffle, ``all`` shuffles every row, ``auto`` decides from the run's first
    rows (one small job; :func:`.partitions.worth_cutting`: the cut when lists are longer than 4K).
    Pass ``best`` or ``all`` when the run is a DataFrame costly to compute, to skip that job. The
    numbers are the same either way."""
    from . import inputs
    for kind, df in (("qrels", qrels), ("run", run)):
        _check_frame(kind, df)
    names = {**DEFAULT_COLUMNS, **(columns or {})}
    unknown = set(names) - set(DEFAULT_COLUMNS)
    if unknown:
        raise ValueError(f"columns: unknown keys {sorted(unknown)}; expected some of {sorted(DEFAULT_COLUMNS)}")
    measures = _measures(measures)
    if not measures:
        raise ValueError(f"give at least one measure, e.g. {examples()[0]}")
    specs = _specs(measures)
    _check(specs, strategy, duplicates, ship)
    q = inputs.normalise(qrels, "qrels", names)
    r = inputs.normalise(run, "run", names)
    r, q = inputs.align(r, q)
    return SparkJob(measures, specs, r, q, duplicates=duplicates, ship=ship)


def prepare_files(spark, qrels: str, run: str, measures: Iterable, run_format: str = "auto",
                  strategy: str = "auto", qrels_columns: dict | None = None,
                  run_columns: dict | None = None, duplicates: str = "error", ship: str = "auto") -> SparkJob:
    """:func:`prepare` on files read by Spark (TREC or MS MARCO text, or Parquet; see
    :mod:`.files`). Errors in a file name the file (and the line, for a local file).
    ``qrels_columns``, ``run_columns``: a Parquet file's column names, as :func:`ndcg_plugin.read`'s
    ``columns=`` (``{"query_id": "user_id", ...}``)."""
    from . import files
    ev = prepare(files.read(spark, qrels, "qrels", columns=qrels_columns),
                 files.read(spark, run, "run", run_format, columns=run_columns), measures, strategy=strategy,
                 duplicates=duplicates, ship=ship)
    ev.files = {str(qrels): ("qrels", "auto", qrels_columns), str(run): ("run", run_format, run_columns)}
    return ev


def evaluate(qrels, run, measures: Iterable, per_query: bool = False, columns: dict | None = None,
             duplicates: str = "error", ship: str = "auto"):
    """Evaluate a run (Spark DataFrame) against qrels (Spark DataFrame): one Spark action.

    ``measures``: measure objects or strings (as ``ir_measures.parse_measure`` reads them). ``columns`` maps query, doc,
    relevance, score to column names (e.g. ``{"query": "user_id", "doc": "item_id",
    "relevance": "rating", "score": "prediction"}``). Ids may be strings or integers (compared
    as their decimal strings); relevance an integer; score a number.

    Returns ``{measure: aggregate}``, or with ``per_query=True`` a DataFrame (query_id, measure,
    value) over the qrels queries, computed and cached: release it with ``.unpersist()`` when done
    (nothing else stays cached).
    Repeated (query, doc) pairs (unless ``duplicates='max'``: see :func:`prepare`), NaN or infinite
    scores, missing or empty ids and non-integer labels raise ValueError, as in the local engine.
    ``ship``: see :func:`prepare`.
    """
    ev = prepare(qrels, run, measures, columns, duplicates=duplicates, ship=ship)
    return ev.per_query() if per_query else ev.aggregates()


__all__ = ["evaluate", "prepare", "prepare_files", "session", "require_spark", "check_master", "SparkUnavailable",
           "SparkJob", "DEFAULT_COLUMNS"]
