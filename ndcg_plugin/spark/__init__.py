"""The plugin's measures on Spark DataFrames.

>>> from ndcg_plugin import spark as ndcg_spark
>>> ndcg_spark.evaluate(qrels_df, run_df, measures)   # measure objects or strings, as ir-measures takes them
{measure: aggregate, ...}

The numbers are the local engine's (:mod:`ndcg_plugin.engine.block`), to the bit, with the same
conventions: ties by doc id descending (byte order), qrels queries missing from the run score 0
(or have no value, for a measure that leaves misses out), run queries missing from the qrels
ignored, negative labels gain 0 and are never relevant, item-level measures micro-averaged. The
default plan (:mod:`.partitions`) shuffles the run (only each query's best rows, when every
measure has a cutoff) and the qrels once by query id, and the local engine evaluates each
partition in a Python worker; the Spark SQL plans (``strategy='top_k'``: :mod:`.topk`,
``'full'``: :mod:`.full`, both through :mod:`.plan` and each family's own expressions) need no
ndcg_plugin on the executors. Only a few rows reach the driver.

Needs the ``[spark]`` extra (pyspark) and Java 17 or later.
"""
from __future__ import annotations

from collections.abc import Iterable

from ..errors import Unsupported
from ..measures import examples, parse_measures, spec_of
from ..measures.registry import is_own
from .jobs import SHIPS, STRATEGIES, SparkJob
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


def _strategy(specs: list, strategy: str, duplicates: str = "error", ship: str = "auto") -> str:
    from . import topk
    from .worker import POLICIES
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
    if ship != "auto" and strategy in ("top_k", "full"):
        raise ValueError(f"ship={ship!r} chooses the rows the engine plan (strategy='engine') shuffles; the Spark "
                         f"SQL plan strategy={strategy!r} chooses its own")
    averaged = [name for name, spec in specs if spec.ties == "average"]
    if strategy in ("top_k", "full") and averaged:
        raise ValueError(f"{averaged[0]}: the Spark SQL plans order tied scores by doc id descending (ties='trec') "
                         f"and do not compute ties='average'; the engine plan (strategy='auto' or 'engine') does")
    others = [name for name, spec in specs if not topk.serves(spec)]
    if strategy == "top_k" and others:
        raise ValueError(f"strategy='top_k' computes measures with a cutoff that rank the whole run with the ideal "
                         f"ranking from the qrels; not {', '.join(others)}")
    foreign = [name for name, spec in specs if not is_own(spec.family)]
    if duplicates != "error" and strategy in ("top_k", "full"):
        raise ValueError(f"duplicates={duplicates!r} is applied by the engine plan only (strategy='engine'); the "
                         f"Spark SQL plans refuse repeated pairs")
    if duplicates != "error" and strategy == "auto" and foreign:
        raise ValueError(f"duplicates={duplicates!r} is applied by the engine plan only, and {foreign[0]} needs a "
                         f"Spark SQL plan (a family added in this process), which refuses repeated pairs")
    if ship != "auto" and strategy == "auto" and foreign:
        raise ValueError(f"ship={ship!r} chooses the rows the engine plan shuffles, and {foreign[0]} needs a Spark "
                         f"SQL plan (a family added in this process), which chooses its own")
    if strategy == "engine" and foreign:
        raise Unsupported(f"{foreign[0]}: strategy='engine' evaluates in the executors' Python, where ndcg_plugin "
                          f"has its own families only, and this one was added in this process (add_family); the "
                          f"Spark SQL plans (strategy='auto', 'top_k' or 'full') take a family with a Spark hook")
    if strategy != "auto":
        return strategy
    if foreign:  # the Spark SQL plans run the family's own Spark hook on the driver's plan
        return "full" if others else "top_k"
    return "engine"


def prepare(qrels, run, measures: Iterable, columns: dict | None = None, strategy: str = "auto",
            duplicates: str = "error", ship: str = "auto") -> SparkJob:
    """Build the plan (nothing runs). ``qrels``/``run`` are Spark DataFrames with the column
    names of ``columns`` (keys query, doc, relevance, score; defaults ir-measures' names).
    ``strategy``: ``engine`` (the local engine on each partition: :mod:`.partitions`), ``top_k`` or
    ``full`` (the Spark SQL plans, which need no ndcg_plugin on the executors), or ``auto``: the
    engine plan, unless a measure's family was added in this process (:func:`ndcg_plugin.measures.
    add_family`; the executors do not have it): then the top-k plan when it computes every measure,
    else the full one. Every plan gives the same numbers. ``duplicates``: a repeated (query, doc)
    pair is refused (``error``, trec_eval's rule) or kept once at its highest score or label
    (``max``, as the local engine's option; the engine plan only, and with it the cut before the
    shuffle is Spark's own, which makes it faster); ``first`` has no meaning in a DataFrame.
    ``ship`` (engine plan, every measure with a cutoff K): ``best`` cuts each query's rows to its
    best before the shuffle, ``all`` shuffles every row, ``auto`` decides from the run's first
    rows (one small job; :func:`.partitions.worth_cutting`: the cut when lists are longer than 4K).
    Pass ``best`` or ``all`` when the run is a DataFrame costly to compute, to skip that job. The
    numbers are the same either way."""
    from . import inputs, plan
    names = {**DEFAULT_COLUMNS, **(columns or {})}
    unknown = set(names) - set(DEFAULT_COLUMNS)
    if unknown:
        raise ValueError(f"columns: unknown keys {sorted(unknown)}; expected some of {sorted(DEFAULT_COLUMNS)}")
    measures = _measures(measures)
    if not measures:
        raise ValueError(f"give at least one measure, e.g. {examples()[0]}")
    specs = _specs(measures)
    chosen = _strategy(specs, strategy, duplicates, ship)
    q = inputs.normalise(qrels, "qrels", names)
    r = inputs.normalise(run, "run", names)
    r, q = plan.align(r, q)
    # a family without a Spark hook refuses here, by name
    return SparkJob(measures, specs, r, q, chosen, duplicates=duplicates, ship=ship)


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
