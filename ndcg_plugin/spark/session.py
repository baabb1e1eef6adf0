"""Starting Spark for the engine: what must be there (pyspark, Java), a master URL checked before
a JVM is started for it, quiet logging, and one line when Spark cannot start.

A session the engine starts logs nothing below ERROR (``quiet``: nothing at all; the command
line's sessions), through a log4j2 configuration of its own; on a ``local`` master it takes 2
shuffle partitions per core instead of Spark's 200, and half the machine's memory for the driver
(which is also the executor) unless ``spark.driver.memory`` is given. In a driver started by
``spark-submit`` (or the ``pyspark`` shell), :func:`session` without a master takes the session of
that configuration as it is.
"""
from __future__ import annotations

import os
import re
import shutil
import socket
import sys
import tempfile
import warnings
from collections.abc import Iterator
from contextlib import contextmanager

from . import launch

#: local, local[4], local[*], local[4,2] (threads, max failures), local-cluster[2,1,1024]
LOCAL = re.compile(r"^local(\[(\*|[1-9][0-9]*)(,[1-9][0-9]*)?\])?$|^local-cluster\[[0-9]+, *[0-9]+, *[0-9]+\]$")
LOG4J = """\
rootLogger.level = {level}
logger.repl.name = org.apache.spark.repl.Main
logger.repl.level = {level}
logger.submit.name = org.apache.spark.deploy.SparkSubmit
logger.submit.level = {level}
logger.gateway.name = org.apache.spark.api.python.PythonGatewayServer
logger.gateway.level = {level}
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{{yy/MM/dd HH:mm:ss}} %p %c{{1}}: %m%n%ex
"""


class SparkUnavailable(RuntimeError):
    """pyspark or Java is missing, or Spark cannot start; the message (one line) says why."""


def require_spark() -> None:
    """Raise :class:`SparkUnavailable` with one clear line when pyspark or Java is missing."""
    try:
        import pyspark  # noqa: F401
    except ImportError:
        raise SparkUnavailable("the Spark engine needs pyspark: pip install 'ndcg-plugin[spark]' "
                               "(and Java 17 or later)") from None
    java_home = os.environ.get("JAVA_HOME")
    if java_home and not os.path.exists(os.path.join(java_home, "bin", "java")):
        raise SparkUnavailable(f"JAVA_HOME={java_home} has no bin/java: point JAVA_HOME at a Java 17 (or later) "
                               f"installation, or unset it to use the java on PATH")
    if not java_home and not shutil.which("java"):
        raise SparkUnavailable("the Spark engine needs Java 17 or later: install a JDK (e.g. apt-get install "
                               "openjdk-17-jre-headless) and put java on PATH or set JAVA_HOME")


def check_master(master: str) -> None:
    """One line for a master URL Spark would refuse with a stack trace, or wait on: a malformed
    ``local[...]``, YARN without its configuration, a standalone master nobody listens at."""
    if master.startswith("local"):
        if not LOCAL.match(master):
            raise SparkUnavailable(f"--spark-master {master!r}: expected local, local[N], local[*] or local[N,F] "
                                   f"(N threads, F task failures allowed)")
    elif master.startswith("spark://"):
        hosts = master[len("spark://"):].split(",")
        reasons = [r for r in (_unreachable(h) for h in hosts) if r]
        if len(reasons) == len(hosts):
            raise SparkUnavailable(f"no Spark master answers at {master}: {'; '.join(reasons)}")
    elif master == "yarn":
        if not (os.environ.get("HADOOP_CONF_DIR") or os.environ.get("YARN_CONF_DIR")):
            raise SparkUnavailable("--spark-master yarn needs HADOOP_CONF_DIR or YARN_CONF_DIR set to the cluster's "
                                   "configuration directory")
    elif not master.startswith(("k8s://", "mesos://")):
        raise SparkUnavailable(f"--spark-master {master!r}: expected local[...], spark://HOST:PORT, yarn or "
                               f"k8s://HOST:PORT")


def _unreachable(host_port: str) -> str | None:
    host, _, port = host_port.rpartition(":")
    if not host or not port.isdigit():
        return f"{host_port!r} is not HOST:PORT"
    try:
        with socket.create_connection((host, int(port)), timeout=5):
            return None
    except OSError as e:
        return f"{host_port}: {e.strerror or e}"


def _log_config(level: str) -> str:
    path = os.path.join(tempfile.gettempdir(), f"ndcg-plugin-log4j2-{level}-{os.getuid()}.properties")
    text = LOG4J.format(level=level)
    try:
        with open(path) as f:
            if f.read() == text:
                return path
    except OSError:
        pass
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), suffix=".properties")
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.replace(tmp, path)
    return path


def _local_conf(master: str, conf: dict) -> dict:
    """Spark's defaults sized for one machine: 2 shuffle partitions per core (not 200), and half the
    memory for the driver (the default 1 GB cannot hold the sorts of 10^7 rows); and Python workers
    run by this interpreter, where ndcg-plugin, numpy and pyarrow are (Spark's default is the
    ``python3`` on PATH, which a virtual environment not activated, or pipx, does not put there):
    PYSPARK_PYTHON, which pyspark reads when the session starts, is set to it unless already set."""
    if not os.environ.get("PYSPARK_PYTHON") and sys.executable:
        os.environ["PYSPARK_PYTHON"] = sys.executable
    threads = master[len("local"):].strip("[]").split(",")[0]
    cores = (os.cpu_count() or 2) if threads in ("", "*") else (int(threads) if threads.isdigit() else 2)
    conf.setdefault("spark.sql.shuffle.partitions", str(2 * cores))
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        conf.setdefault("spark.driver.memory", f"{max(1024, total // 2 // 2 ** 20)}m")
    except (ValueError, OSError, AttributeError):
        pass
    return conf


@contextmanager
def quiet_pandas() -> Iterator[None]:
    """pyspark 4 warns that it does not fully support pandas >= 3; the engine converts no pandas data."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="PySpark does not yet fully support pandas", category=FutureWarning)
        yield


def submitted() -> bool:
    """Whether this Python is the driver of a JVM started before it (by ``spark-submit`` or the
    ``pyspark`` shell), which pyspark joins through the gateway port it is given: then that JVM's
    configuration (master, memory, partitions) is the user's, and a session must not override it."""
    return "PYSPARK_GATEWAY_PORT" in os.environ


def session(master: str | None = None, conf: dict | None = None, quiet: bool = False):
    """The active SparkSession; or, in a driver started by ``spark-submit`` and with no ``master``
    given, the session of spark-submit's configuration, as it is (``conf`` added); or a new one on
    ``master`` (default ``local[*]``), with no UI and quiet logging: ERROR only, or nothing with
    ``quiet``, where the JVM's own output goes to a log file named on failure."""
    require_spark()
    with quiet_pandas():
        from pyspark.sql import SparkSession
        active = SparkSession.getActiveSession()
        if active is not None:
            return active
        if master is None and submitted():
            builder = SparkSession.builder
            for key, value in (conf or {}).items():
                builder = builder.config(key, value)
            return builder.getOrCreate()
        master = master or "local[*]"
        check_master(master)
        return _start(master, dict(conf or {}), quiet)


def _start(master: str, conf: dict, quiet: bool):
    from pyspark.sql import SparkSession
    try:
        launch.start_timeout()
    except ValueError as e:
        raise SparkUnavailable(str(e)) from None
    builder = (SparkSession.builder.master(master).appName("ndcg-plugin")
               .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false"))
    if master.startswith("local"):
        conf = _local_conf(master, conf)
    level = "off" if quiet else "error"
    options = conf.get("spark.driver.extraJavaOptions", "")
    if "log4j2.configurationFile" not in options:
        config = f"-Dlog4j2.configurationFile=file:{_log_config(level)}"
        conf["spark.driver.extraJavaOptions"] = f"{options} {config}".strip()
    for key, value in conf.items():
        builder = builder.config(key, value)
    log = None
    if quiet:  # the JVM inherits standard error when it starts: give it a file instead
        log = tempfile.NamedTemporaryFile("w+b", prefix="ndcg-plugin-spark-", suffix=".log", delete=False)
        saved = os.dup(2)
        os.dup2(log.fileno(), 2)
    failure = None
    try:
        with launch.bounded():  # the JVM in a group of its own, its start bounded
            spark = builder.getOrCreate()
    except launch.StartTimeout as e:
        failure = str(e)
    except Exception as e:  # pyspark raises several classes for a JVM that did not start
        failure = _why(e, log)
    except BaseException:  # Ctrl-C: the JVM was stopped (launch.bounded); its log goes too
        if log is not None:
            log.close()
            os.unlink(log.name)
        raise
    finally:
        if log is not None:
            os.dup2(saved, 2)
            os.close(saved)
    if failure is not None:
        _release_quietly(log)
        raise SparkUnavailable(failure)
    if log is not None:
        os.unlink(log.name)  # the JVM keeps writing to it, unnamed (log4j is off: only a crash would)
    spark.sparkContext.setLogLevel(level.upper())
    return spark


def _release_quietly(log) -> None:
    """After a JVM that did not start: close the log (left on disk for the user, whom the message
    names it to) and collect what pyspark's failed launch left open (the JVM's stdin pipe), with
    their ResourceWarnings ("unclosed file"), which would otherwise follow the one-line error."""
    import gc
    if log is not None:
        log.close()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        gc.collect()


def _why(error: Exception, log) -> str:
    """One line: the first exception message Java printed (or pyspark's own), and where the log is."""
    text = ""
    if log is not None:
        log.flush()
        log.seek(0)
        text = log.read().decode("utf-8", "replace")
    lines = [ln.strip() for ln in (text + "\n" + str(error)).splitlines() if ln.strip()]
    found = next((ln for ln in lines if re.search(r"(Exception|Error)\b.*?: ", ln) and not ln.startswith("at ")),
                 lines[0] if lines else type(error).__name__)
    reason = re.sub(r"^.*?(Exception|Error)[^:]*: ", "", found)
    where = f" (Spark's output: {log.name})" if log is not None and text.strip() else ""
    return f"Spark could not start: {reason}{where}"
