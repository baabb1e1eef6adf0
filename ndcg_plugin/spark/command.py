"""``ndcg-plugin eval --engine spark``, the Spark side: a quiet session sized for the input, the
evaluation of two files, and every failure as one line (:class:`CommandError`); the command
line (:func:`ndcg_plugin.cli.commands._eval_spark`) prints the results."""
from __future__ import annotations

import logging
import os
import signal
import stat
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass

from ..errors import InputError
from ..measures import examples
from .launch import stop_at_exit
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


def check_file(path: str) -> None:
    """A local input Spark can be given, checked before a JVM starts: it exists, is a regular file
    (or a directory of them, read as Parquet) and can be read. Spark's reader would wait forever
    on a FIFO (a terminal, a socket), and a read error (EIO) would come out of it as a traceback;
    each is one :class:`~ndcg_plugin.errors.InputError` naming the path."""
    if "://" in path and not path.startswith("file://"):
        return  # read by Spark's file system (HDFS, S3): nothing to check here
    local = path[len("file://"):] if path.startswith("file://") else path
    try:
        mode = os.stat(local).st_mode
    except FileNotFoundError:
        raise InputError(path, None, "file not found") from None
    except OSError as e:
        raise InputError(path, None, f"cannot be read: {e.strerror or e}") from None
    if stat.S_ISDIR(mode):
        return _check_directory(path, local)
    if not stat.S_ISREG(mode):
        raise InputError(path, None, f"not a regular file ({_kind(mode)}): the Spark engine reads files; write "
                         f"it to a file, or evaluate it without --engine spark (which reads pipes)")
    try:
        with open(local, "rb") as f:
            f.read(1)
    except OSError as e:
        raise InputError(path, None, f"cannot be read: {e.strerror or e}") from None


def _kind(mode: int) -> str:
    return ("a FIFO" if stat.S_ISFIFO(mode) else "a character device" if stat.S_ISCHR(mode)
            else "a block device" if stat.S_ISBLK(mode) else "a socket" if stat.S_ISSOCK(mode) else "not a file")


def _check_directory(path: str, local: str) -> None:
    """The files Spark would read in a directory (names not starting with ``_`` or ``.``) are regular."""
    for top, dirs, names in os.walk(local):
        dirs[:] = [d for d in dirs if not d.startswith(("_", "."))]
        for name in names:
            if not name.startswith(("_", ".")):
                entry = os.path.join(top, name)
                try:
                    mode = os.stat(entry).st_mode
                except OSError:
                    continue  # a dangling link: Spark says so
                if not stat.S_ISREG(mode):
                    raise InputError(path, None, f"{entry} is not a regular file ({_kind(mode)}): the Spark "
                                     f"engine reads files")


@contextmanager
def files(options: SparkOptions, measures: list, note: Callable[[str], None] | None = None) -> Iterator[tuple]:
    """(job, aggregates) of the command's two files; with ``per_query`` the per-query table
    stays cached while the caller reads
    :meth:`~ndcg_plugin.spark.jobs.SparkJob.rows`. Input errors stay ValueError/InputError;
    anything else from Spark becomes a :class:`CommandError`. ``note``, if given, is told of each
    long phase before it starts (the JVM's start, the job). On Ctrl-C the JVM this process started
    is stopped, with its workers, when the process exits (:func:`~.launch.stop_at_exit`)."""
    from . import prepare_files
    check(options, measures)
    qrels, ev = qrels_file(options.qrels), None
    for path in (qrels, options.run):
        check_file(path)
    note = note or (lambda text: None)
    try:
        try:
            note(f"starting Spark ({options.master}): a JVM starts, which takes 10-60 s")
            began, handler = time.monotonic(), _sigint_handler()
            spark = session(options.master, conf_for(list(options.conf), [qrels, options.run]), quiet=True)
            _interrupt_plainly(handler)
            note(f"Spark started in {time.monotonic() - began:.0f} s; reading {options.qrels} and {options.run} "
                 f"and evaluating")
            ev = prepare_files(spark, qrels, options.run, measures, options.run_format, strategy=options.plan,
                               qrels_columns=options.qrels_columns, run_columns=options.run_columns,
                               duplicates=options.duplicates, ship=options.ship)
            if options.per_query:
                ev.persist()  # the aggregates' job computes the per-query table once; the lines read it
            yield ev, ev.aggregates()  # validates the input too: nothing is printed for a bad one
        except Exception as e:
            if _made_of_interrupt(e):
                # Ctrl-C broke a call to the JVM, and the error of a call after it (pyspark's
                # cleanup on the broken connection: "Answer from Java side is empty") took its place
                raise KeyboardInterrupt from None
            raise
    except KeyboardInterrupt:
        ev = None  # the JVM is stopped as the process exits: nothing to unpersist
        stop_at_exit()
        raise
    except SparkUnavailable as e:
        raise CommandError(str(e)) from None
    except ConnectionError as e:  # py4j's socket to a JVM that went away
        raise CommandError(f"Spark failed: the connection to its JVM was lost ({e.strerror or e})") from None
    except OSError as e:  # a read error after the checks above (EIO in the middle of a file)
        raise InputError(e.filename or f"{qrels} or {options.run}", None,
                         f"cannot be read: {e.strerror or e}") from None
    except (ValueError, GeneratorExit):
        raise
    except Exception as e:  # a job that failed for another reason (memory, a lost executor)
        if not type(e).__module__.startswith(("py4j", "pyspark")):
            raise
        raise CommandError(f"Spark failed: {reason(e)}") from None
    finally:
        if ev is not None:
            ev.unpersist()


def _made_of_interrupt(error: BaseException) -> bool:
    """Whether ``error`` came of Ctrl-C: raised while a KeyboardInterrupt was handled (its context
    or cause), or after the command's handler saw SIGINT (:data:`ndcg_plugin.interrupts.received`:
    a library swallowed the KeyboardInterrupt, then failed on what it left broken)."""
    from .. import interrupts
    link: BaseException | None = error
    for _ in range(100):  # a chain of contexts is short; a cycle in one ends the walk here
        if link is None:
            break
        if isinstance(link, KeyboardInterrupt):
            return True
        link = link.__cause__ or link.__context__
    return interrupts.received


#: where py4j logs: the root logger (``logging.exception``, which also gives the root a handler on
#: stderr) and its own two loggers, whose records reach that handler (a logger's filter applies to
#: the records made on it only, not to those its children pass up)
_PY4J_LOGGERS = ("", "py4j.java_gateway", "py4j.clientserver")


class _NoInterruptLogs(logging.Filter):
    """Drops a log record of an error that came of Ctrl-C (:func:`_made_of_interrupt`): py4j logs
    the KeyboardInterrupt, with its traceback, when Ctrl-C interrupts a call to the JVM, then the
    BrokenPipeError of closing that connection; the command says "interrupted" itself."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        return not (isinstance(error, BaseException) and _made_of_interrupt(error))


def _sigint_handler() -> object:
    """SIGINT's handler now (None off the main thread, where it cannot be set)."""
    if threading.current_thread() is not threading.main_thread():
        return None
    return signal.getsignal(signal.SIGINT)


def _interrupt_plainly(handler: object) -> None:
    """Ctrl-C handled as before the session started (``handler``: the command's, which raises
    KeyboardInterrupt and notes it in :data:`ndcg_plugin.interrupts.received`; or a program's
    own), instead of pyspark's, which first asks the JVM over py4j to cancel its jobs, from inside
    the call it interrupts; the command stops the JVM instead (:func:`files`), and py4j's log of
    the interrupted call is dropped."""
    if handler is not None and threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, handler)
    for name in _PY4J_LOGGERS:
        log = logging.getLogger(name)
        if not any(isinstance(f, _NoInterruptLogs) for f in log.filters):
            log.addFilter(_NoInterruptLogs())
