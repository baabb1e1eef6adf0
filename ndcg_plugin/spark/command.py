"""``ndcg-plugin eval --engine spark``, the Spark side: a quiet session sized for the input, the
evaluation of two files, and every failure as one line (:class:`CommandError`); the command
line (:func:`ndcg_plugin.cli.commands._eval_spark`) prints the results."""
from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass

from ..measures import examples
from .session import SparkUnavailable, session

#: inputs below this size start a JVM that compiles less (C1 only): seconds less to start
SMALL_INPUT = 64 << 20


@dataclass(frozen=True)
class SparkOptions:
    """What ``eval --engine spark`` evaluates and how: the two files, how they are read, the plan,
    and the Spark session's master and settings."""
    qrels: str
    run: str
    run_format: str = "auto"
    duplicates: str = "error"
    qrels_columns: Mapping[str, str] | None = None  # a Parquet file's column names, as read()'s columns=
    run_columns: Mapping[str, str] | None = None
    plan: str = "engine"
    ship: str = "auto"
    master: str = "local[*]"
    conf: tuple[tuple[str, str], ...] = ()  # --spark-conf KEY=VALUE settings, in order
    per_query: bool = False


class CommandError(ValueError):
    """Spark could not start or failed for a reason other than the input (one line)."""


def conf_for(given: list[tuple[str, str]], paths: list[str]) -> dict:
    """The --spark-conf settings, and for small local inputs a JVM that starts faster (unless set)."""
    conf = dict(given)
    sizes = [os.path.getsize(p) for p in paths if os.path.isfile(p)]
    options = conf.get("spark.driver.extraJavaOptions", "")
    if len(sizes) == len(paths) and sum(sizes) < SMALL_INPUT and "TieredStopAtLevel" not in options:
        conf["spark.driver.extraJavaOptions"] = f"{options} -XX:TieredStopAtLevel=1".strip()
    return conf


def reason(error: BaseException) -> str:
    """The first line of a Spark error that says something (py4j wraps Java's in many lines)."""
    lines = [ln.strip() for ln in str(error).splitlines() if ln.strip() and not ln.strip().startswith("at ")]
    return next((ln for ln in lines if not ln.startswith(("An error occurred", "py4j"))), type(error).__name__)


def qrels_file(qrels: str) -> str:
    """The qrels file Spark reads: the path given, or for an ir-datasets id the file ir-datasets keeps."""
    if "://" in qrels or os.path.exists(qrels):
        return qrels
    from ..datasets.load import is_dataset_id, locate
    from ..errors import DatasetError
    try:
        target = locate(qrels, "qrels") if is_dataset_id(qrels) else False
    except DatasetError:
        target = False
    if target is False:
        return qrels  # not an id: the reader says the file is not found
    if target is None or not os.path.isfile(target.path):
        raise CommandError(f"{qrels}: the Spark engine reads files, and ir-datasets has no qrels file for it here "
                           f"(`ndcg-plugin eval` without --engine spark downloads it); or give a qrels file")
    return str(target.path)


def check(options: SparkOptions, measures: list) -> None:
    """The options --engine spark refuses, in one line each."""
    if not measures:
        raise CommandError(f"give at least one measure (with --engine spark, e.g. {' '.join(examples())})")
    if options.duplicates == "first":
        raise CommandError("--engine spark: --duplicates first keeps the copy that comes first in the file, an order "
                           "Spark does not keep across partitions; use --duplicates max or error")
    if "-" in (options.qrels, options.run):
        raise CommandError("--engine spark reads files (text or Parquet), not standard input")


@contextmanager
def files(options: SparkOptions, measures: list) -> Iterator[tuple]:
    """(job, aggregates) of the command's two files; with ``per_query`` the per-query table
    stays cached while the caller reads
    :meth:`~ndcg_plugin.spark.jobs.SparkJob.rows`. Input errors stay ValueError/InputError;
    anything else from Spark becomes a :class:`CommandError`."""
    from . import prepare_files
    check(options, measures)
    qrels, ev = qrels_file(options.qrels), None
    try:
        spark = session(options.master, conf_for(list(options.conf), [qrels, options.run]), quiet=True)
        ev = prepare_files(spark, qrels, options.run, measures, options.run_format, strategy=options.plan,
                           qrels_columns=options.qrels_columns, run_columns=options.run_columns,
                           duplicates=options.duplicates, ship=options.ship)
        if options.per_query:
            ev.persist()  # the aggregates' job computes the per-query table once; the lines read it
        yield ev, ev.aggregates()  # validates the input too: nothing is printed for a bad one
    except SparkUnavailable as e:
        raise CommandError(str(e)) from None
    except (ValueError, OSError, GeneratorExit):
        raise
    except Exception as e:  # a job that failed for another reason (memory, a lost executor)
        if not type(e).__module__.startswith(("py4j", "pyspark")):
            raise
        raise CommandError(f"Spark failed: {reason(e)}") from None
    finally:
        if ev is not None:
            ev.unpersist()
