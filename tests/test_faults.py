"""Faults of the machine and the environment (issue 27): one line on stderr and a clear exit
status (2; 130 for Ctrl-C), never a traceback, never a death by a signal, never output silently
lost, nothing left half-written."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import EXAMPLES, msmarco_file
from tests.helpers import FAULT_HANDLER_ENV, communicate_or_dump, run_batch, run_cli, run_main

QRELS, RUN = str(EXAMPLES / "example.qrels"), str(EXAMPLES / "example.run")


def one_line(proc: subprocess.CompletedProcess, code: int, *fragments: str) -> str:
    assert proc.returncode == code, (proc.returncode, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]


def shell(command: str, **env: str) -> subprocess.CompletedProcess:
    """A command line in sh (for redirections such as >&- and > /dev/full)."""
    return subprocess.run(["sh", "-c", command], capture_output=True, text=True, env={**os.environ, **env})


PY = f"{sys.executable} -m ndcg_plugin"
COMMANDS = [f"eval {QRELS} {RUN} NDCG_exp@10", f"eval -q {QRELS} {RUN} NDCG_exp@10 AP",
            f"crosscheck {QRELS} {RUN}", f"explain {QRELS} {RUN} --query q1 -m NDCG_exp@5", "measures",
            f"compare {QRELS} {RUN} {RUN} --names a b -m NDCG_exp@10"]


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c.split()[0] + (" -q" if " -q " in c else ""))
def test_a_full_disk_for_the_output_is_one_line_and_exit_2(command):
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full on this system")
    one_line(shell(f"{PY} {command} > /dev/full"), 2, "writing standard output", "No space left on device")


@pytest.mark.parametrize("command", COMMANDS[:2])
def test_a_closed_stdout_is_an_error_not_lost_output(command):
    one_line(shell(f"{PY} {command} >&-"), 2, "standard output is closed")


def test_a_closed_stderr_still_prints_the_result():
    proc = shell(f"{PY} eval {QRELS} {RUN} NDCG_exp@10 2>&-")
    assert proc.returncode == 0 and proc.stdout == "NDCG_exp@10\t0.5977\n"


def test_a_closed_pipe_is_not_an_error():
    proc = shell(f"{PY} eval -q {QRELS} {RUN} NDCG_exp@10 NDCG_lin@10 | head -1")
    assert proc.stdout.count("\n") == 1 and proc.stderr == ""


def _wait_until_open(proc: subprocess.Popen, path, timeout: float = 30.0) -> None:
    """Return once ``proc`` holds ``path`` open (Linux /proc), it has ended, or ``timeout`` passed."""
    import time
    fds = f"/proc/{proc.pid}/fd"
    end = time.monotonic() + timeout
    while time.monotonic() < end and proc.poll() is None and os.path.isdir(fds):
        try:
            if any(os.path.realpath(os.path.join(fds, fd)) == os.path.realpath(path) for fd in os.listdir(fds)):
                return
        except OSError:  # a descriptor closed while it was read
            pass
        time.sleep(0.01)


def test_ctrl_c_is_one_line_and_exit_130(tmp_path):
    # a run long enough to be interrupted while it is read and evaluated (several seconds: a signal
    # in the last milliseconds of a run, as it exits, may find the work done and no handler left)
    run = tmp_path / "run"
    run.write_text("".join(f"q{i // 50} Q0 d{i} 1 {1000 - i % 50} t\n" for i in range(4_000_000)))
    for delay in (0.3, 1.5):
        proc = subprocess.Popen([sys.executable, "-m", "ndcg_plugin", "eval", QRELS, str(run), "NDCG_exp@10"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=FAULT_HANDLER_ENV,
                                preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        # the signal goes once the run file is open (the work has begun: on a loaded machine 0.3 s
        # can still be the interpreter importing numpy and pyarrow), then ``delay`` later
        _wait_until_open(proc, run)
        try:
            proc.wait(timeout=delay)
            continue  # finished first: nothing to interrupt
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGINT)
        out, err = communicate_or_dump(proc, 60)
        assert proc.returncode == 130 and err.strip().splitlines() == ["ndcg-plugin: interrupted"], (delay, err)
        assert out == ""


@pytest.mark.parametrize("measure", ["P@0", "nDCG@0", "RR@0", "NDCG_lin@0", "Success@0"])
def test_a_cutoff_of_0_is_refused(measure):
    one_line(run_main("eval", QRELS, RUN, measure), 2, f"invalid measure {measure!r}", "positive integer")


def test_ir_datasets_that_cannot_start_is_one_line_naming_the_variable(tmp_path):
    home = tmp_path / "a-file"
    home.write_text("not a folder")
    proc = run_cli("eval", "nope.txt", RUN, "NDCG_exp@10", env={"IR_DATASETS_HOME": str(home)})
    one_line(proc, 2, "nope.txt: no such file", f"IR_DATASETS_HOME={home}")
    proc = run_cli("datasets", "info", "msmarco-passage/dev/small", env={"IR_DATASETS_HOME": str(home)})
    one_line(proc, 2, f"IR_DATASETS_HOME={home}")
    # a file that exists needs no ir-datasets at all
    assert run_cli("eval", QRELS, RUN, "NDCG_exp@10", env={"IR_DATASETS_HOME": str(home)}).returncode == 0


@pytest.mark.parametrize("label", ["-2", "-1"])
def test_queries_with_only_negative_labels_never_reach_pytrec_eval(tmp_path, label):
    # trec_eval 10.0 stops (-1: "Can't calculate measure") or crashes (-2: SIGSEGV) on such a query, and
    # pytrec_eval crashes (-1 with several measures, P@5 AP Rprec Bpref NumRet: SIGSEGV); the engine's
    # measures need no pytrec_eval
    # the four commands in one process (tests/cli_batch.py; was one process each): a death by a
    # signal (pytrec_eval reached) still ends that process and fails the test, naming the command
    (tmp_path / "q").write_text(f"q1 0 d1 1\nq2 0 d2 {label}\n")
    (tmp_path / "r").write_text("q1 Q0 d1 1 1 r\nq2 Q0 d3 1 1 r\n")
    files = [str(tmp_path / "q"), str(tmp_path / "r")]
    refused, by_pytrec_eval, proc, crosscheck = run_batch([
        ["eval", *files, "AP", "--provider", "pytrec_eval"], ["eval", *files, "nDCG@10", "--provider", "pytrec_eval"],
        ["eval", *files, "NDCG_lin@10", "RR", "AP"], ["crosscheck", *files]])
    one_line(refused, 2, "query 'q2' has only negative labels", "AP")
    one_line(by_pytrec_eval, 2, "query 'q2'")
    # q1: d1 relevant at rank 1 (1 each); q2: no relevant doc (0 each): means of 0.5
    assert proc.returncode == 0 and proc.stdout == "NDCG_lin@10\t0.5000\nRR\t0.5000\nAP\t0.5000\n"
    assert crosscheck.returncode == 0 and "MISMATCH" not in crosscheck.stdout


# --- datasets seed ------------------------------------------------------------------------------

DL19 = "msmarco-passage/trec-dl-2019"


def seed(home: Path, dataset: str, qrels: Path, *extra: str) -> subprocess.CompletedProcess:
    return run_cli("datasets", "seed", dataset, "--qrels", str(qrels), *extra, env={"IR_DATASETS_HOME": str(home)})


def test_seed_removes_what_a_killed_seed_left_and_nothing_a_running_one_writes(tmp_path):
    folder = tmp_path / DL19
    folder.mkdir(parents=True)
    old = folder / ".qrels.abc123.part"           # an earlier version's name: no process id
    dead = folder / ".qrels.999999999.xyz.part"   # a process that no longer runs
    alive = folder / f".qrels.{os.getpid()}.xyz.part"  # this test's process: still running
    for f in (old, dead, alive):
        f.write_text("half")
    proc = seed(tmp_path, DL19, msmarco_file("qrels.dl19-passage.txt"))
    assert proc.returncode == 0, proc.stderr
    assert not old.exists() and not dead.exists() and alive.exists()


@pytest.mark.parametrize("content", [b"some/path/to/qrels", b""])
def test_seed_reads_a_file_as_its_content_never_as_a_path(tmp_path, content):
    path = tmp_path / "p.txt"
    path.write_bytes(content)
    proc = seed(tmp_path / "home", DL19, path)
    line = one_line(proc, 2)
    assert ("expected 4 columns" if content else "no qrels lines found") in line and "file not found" not in line
    assert not (tmp_path / "home" / DL19 / "qrels").exists()


def test_a_write_error_while_seeding_is_one_line_and_leaves_nothing(tmp_path, monkeypatch):
    from ndcg_plugin.datasets import seed as dataset_seed
    from ndcg_plugin.errors import DatasetError

    def full(fd, mode):  # the disk fills while the temporary file is written
        class Full:
            def __enter__(self):
                return self

            def __exit__(self, *a):
                os.close(fd)

            def write(self, data):
                raise OSError(28, "No space left on device")
        return Full()

    monkeypatch.setattr(dataset_seed.os, "fdopen", full)
    target = tmp_path / "out" / "qrels"
    with pytest.raises(DatasetError, match="cannot write it .No space left on device.; nothing was placed"):
        dataset_seed.write_atomically(target, b"q 0 d 1\n")
    assert list(target.parent.iterdir()) == []


# --- fault injection: errors raised at random points of reading, parsing, evaluating, writing ----

HARNESS = """
import builtins, errno, os, runpy, sys
point, nth, kind = sys.argv[1], int(sys.argv[2]), sys.argv[3]
calls = [0]

def hit():
    calls[0] += 1
    if calls[0] == nth:
        raise {"EIO": OSError(errno.EIO, os.strerror(errno.EIO)),
               "ENOSPC": OSError(errno.ENOSPC, os.strerror(errno.ENOSPC)),
               "MemoryError": MemoryError(), "KeyboardInterrupt": KeyboardInterrupt()}[kind]

def failing(fn):
    def wrapped(*a, **k):
        hit()
        return fn(*a, **k)
    return wrapped

Reader = runpy.run_path(READER_PATH)["Reader"]  # a file whose reads fail at the nth call

if point == "read":
    real_open = builtins.open
    builtins.open = lambda f, mode="r", *a, **k: (Reader(real_open(f, mode, *a, **k), hit)
                                                  if "b" in mode and "r" in mode and str(f).endswith((".qrels", ".run"))
                                                  else real_open(f, mode, *a, **k))
elif point == "parse":
    from ndcg_plugin.reading import columnar, lines
    columnar.parse_block = failing(columnar.parse_block)
    lines.parse_lines = failing(lines.parse_lines)
elif point == "evaluate":
    from ndcg_plugin.engine import block as engine
    engine.compute = failing(engine.compute)
    engine.compute_block = failing(engine.compute_block)
elif point == "spark-evaluate":
    from ndcg_plugin.spark import jobs
    jobs.SparkJob.aggregates = failing(jobs.SparkJob.aggregates)
elif point == "write":
    real_write = sys.stdout.write
    sys.stdout.write = failing(real_write)
sys.argv = ["ndcg-plugin"] + sys.argv[4:]
from ndcg_plugin.cli.commands import run
run()
"""
HARNESS = HARNESS.replace("READER_PATH", repr(str(Path(__file__).with_name("fault_reader.py"))))

FAULT_COMMANDS = [
    ["eval", QRELS, RUN, "NDCG_exp@10", "MRR_zero@10"],
    ["eval", "--block-size", "64", "-q", QRELS, RUN, "NDCG_lin@5", "HitRate@3"],
    ["eval", "--block-size", "0", QRELS, RUN, "NDCG_lin@5", "P@2"],
    ["crosscheck", QRELS, RUN, "-m", "NDCG_lin@5"],
    ["compare", QRELS, RUN, RUN, "--names", "a", "b", "-m", "NDCG_exp@10"],
    ["explain", QRELS, RUN, "--query", "q1", "-m", "NDCG_exp@5"],
]
EXPECTED = {
    "EIO": (2, ("cannot be read", "Input/output error")),
    "ENOSPC": (2, ("writing standard output", "No space left on device")),
    "MemoryError": (2, ("out of memory",)),
    "KeyboardInterrupt": (130, ("interrupted",)),
}
# what each point can raise: a read error (reading), memory exhausted (anywhere), Ctrl-C where the
# main thread runs (reading and parsing may run on the read-ahead thread), a full disk (writing)
KINDS = {"read": ["EIO", "MemoryError"], "parse": ["MemoryError"], "evaluate": ["MemoryError", "KeyboardInterrupt"],
         "write": ["ENOSPC", "MemoryError", "KeyboardInterrupt"]}


def _inject(point: str, nth: int, kind: str, command: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", HARNESS, point, str(nth), kind, *command],
                          capture_output=True, text=True, timeout=120)


# the cases of HARNESS in one process: each (point, nth, kind, argv) through the command's entry
# point (tests/cli_batch.py), its point patched before it runs (its own count of calls) and restored
# after; one JSON line per case, as soon as it ends, on a copy of fd 1 (a death by a signal is seen)
FAULT_BATCH = """
import builtins, errno, json, os, runpy, sys
one = runpy.run_path(sys.argv[1])["one"]
from ndcg_plugin.engine import block as engine
from ndcg_plugin.reading import columnar, lines
FAULTS = {"EIO": lambda: OSError(errno.EIO, os.strerror(errno.EIO)),
          "ENOSPC": lambda: OSError(errno.ENOSPC, os.strerror(errno.ENOSPC)),
          "MemoryError": MemoryError, "KeyboardInterrupt": KeyboardInterrupt}
real_open = builtins.open
PATCHED = {"parse": [(columnar, "parse_block"), (lines, "parse_lines")],
           "evaluate": [(engine, "compute"), (engine, "compute_block")]}

Reader = runpy.run_path(READER_PATH)["Reader"]  # a file whose reads fail at the nth call

def case(point, nth, kind, argv):
    calls = [0]
    def hit():
        calls[0] += 1
        if calls[0] == nth:
            raise FAULTS[kind]()
    def failing(fn):
        def wrapped(*a, **k):
            hit()
            return fn(*a, **k)
        return wrapped
    def setup(stdout):
        if point == "write":
            stdout.write = failing(stdout.write)
    saved = [(m, name, getattr(m, name)) for m, name in PATCHED.get(point, [])]
    for m, name, fn in saved:
        setattr(m, name, failing(fn))
    def opening(f, mode="r", *a, **k):
        if "b" in mode and "r" in mode and str(f).endswith((".qrels", ".run")):
            return Reader(real_open(f, mode, *a, **k), hit)
        return real_open(f, mode, *a, **k)
    if point == "read":
        builtins.open = opening
    try:
        return one(argv, None, setup)
    finally:
        builtins.open = real_open
        for m, name, fn in saved:
            setattr(m, name, fn)

with os.fdopen(os.dup(1), "w") as results:
    for point, nth, kind, argv in json.loads(sys.stdin.read()):
        results.write(json.dumps(case(point, nth, kind, argv)) + "\\n")
        results.flush()
"""
FAULT_BATCH = FAULT_BATCH.replace("READER_PATH", repr(str(Path(__file__).with_name("fault_reader.py"))))


def _inject_in_one_process(cases: list[tuple[str, int, str, list[str]]]) -> list[subprocess.CompletedProcess]:
    """HARNESS's outcome for each case, the cases run one after the other in one process, which must
    end with status 0 (never a signal) and print nothing on standard error outside the commands."""
    from tests.helpers import BATCH
    child = subprocess.run([sys.executable, "-c", FAULT_BATCH, str(BATCH)], capture_output=True, text=True,
                           timeout=600, input=json.dumps(cases))
    outcomes = [json.loads(line) for line in child.stdout.splitlines()]
    assert child.returncode == 0 and child.stderr == "" and len(outcomes) == len(cases), (
        child.returncode, cases[len(outcomes):][:1], child.stderr[-3000:])
    return [subprocess.CompletedProcess(["<batch>", *case[3]], code, out, err)
            for case, (code, out, err) in zip(cases, outcomes, strict=True)]


def test_faults_at_random_points_end_in_one_line_and_the_right_status():
    """Each case: a command, a point, a fault, and the call it is raised at (drawn at random; a
    draw past the last call is a run without a fault, whose output must be the clean one).

    Was one process per case (30 processes): the clean runs stay one real process each, the faulted
    cases run in one process (FAULT_BATCH), and the first case of each fault also runs as a real
    process (HARNESS), whose status, stdout and stderr must equal the batch's: the same checks on
    the same draws, a fault that kills the process by a signal still fails the test."""
    import random
    rnd = random.Random(27)
    clean = {i: _inject("none", 0, "EIO", c) for i, c in enumerate(FAULT_COMMANDS)}
    assert all(p.returncode == 0 and p.stdout for p in clean.values()), clean
    cases = [(rnd.randrange(len(FAULT_COMMANDS)), point, kind, rnd.randint(1, 6))
             for point, kinds in KINDS.items() for kind in kinds for _ in range(3)]
    procs = _inject_in_one_process([(point, nth, kind, FAULT_COMMANDS[i]) for i, point, kind, nth in cases])
    faulted, real, hit = 0, set(), set()
    for (i, point, kind, nth), proc in zip(cases, procs, strict=True):
        what = (FAULT_COMMANDS[i], point, kind, nth)
        if kind not in real and proc.returncode != 0:  # the same case in a process of its own
            real.add(kind)
            alone = _inject(point, nth, kind, FAULT_COMMANDS[i])
            assert (alone.returncode, alone.stdout, alone.stderr) == (proc.returncode, proc.stdout, proc.stderr), what
        assert proc.returncode >= 0, (what, proc.stderr)  # never a signal
        assert "Traceback" not in proc.stderr and "Exception" not in proc.stderr, (what, proc.stderr)
        if proc.returncode == 0:  # the fault's call never came: all of the clean output, nothing else
            assert proc.stdout == clean[i].stdout and proc.stderr == clean[i].stderr, what
            continue
        faulted += 1
        hit.add(kind)
        code, fragments = EXPECTED[kind]
        assert proc.returncode == code, (what, proc.returncode, proc.stderr)
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and all(f in lines[0] for f in fragments), (what, proc.stderr)
        if kind == "EIO":
            assert ("example.qrels" in lines[0]) != ("example.run" in lines[0]), lines[0]  # names the file
    assert faulted >= len(cases) // 2, faulted  # most draws hit a call
    assert real == hit, (real, hit)  # each fault that was raised, raised in a real process too


SPARK_FAULTS = [("spark-evaluate", "MemoryError"), ("spark-evaluate", "KeyboardInterrupt"), ("write", "ENOSPC"),
                ("write", "KeyboardInterrupt")]

# the faults of SPARK_FAULTS, each raised at the first call of its point (as _inject(point, 1, kind)
# raises it), in one process: one JVM started for the four commands instead of one each. Each command
# runs through the command's entry point (tests/cli_batch.py); its point is patched before it runs
# and restored after; one JSON line per command, as soon as it ends, on a copy of fd 1.
SPARK_BATCH = """
import errno, json, os, runpy, sys
one = runpy.run_path(sys.argv[1])["one"]
from ndcg_plugin.spark import jobs
FAULTS = {"ENOSPC": lambda: OSError(errno.ENOSPC, os.strerror(errno.ENOSPC)), "MemoryError": MemoryError,
          "KeyboardInterrupt": KeyboardInterrupt}

def failing(kind):
    def wrapped(*a, **k):
        raise FAULTS[kind]()
    return wrapped

real = jobs.SparkJob.aggregates
with os.fdopen(os.dup(1), "w") as results:
    for point, kind, argv in json.loads(sys.stdin.read()):
        def setup(stdout, point=point, kind=kind):
            if point == "write":
                stdout.write = failing(kind)
        if point == "spark-evaluate":
            jobs.SparkJob.aggregates = failing(kind)
        try:
            outcome = one(argv, None, setup)
        finally:
            jobs.SparkJob.aggregates = real
        results.write(json.dumps(outcome) + "\\n")
        results.flush()
"""


@pytest.fixture(scope="module")
def spark_faults() -> dict:
    """{(point, kind): (status, stdout, stderr)} of ``eval --engine spark`` with each fault of
    SPARK_FAULTS, from one process; that process must end with status 0 (never a signal) and
    print nothing on standard error outside the commands (the JVM's own output included)."""
    pytest.importorskip("pyspark")
    from tests.helpers import BATCH
    command = ["eval", "--engine", "spark", "-q", QRELS, RUN, "NDCG_exp@10"]
    child = subprocess.run([sys.executable, "-c", SPARK_BATCH, str(BATCH)], capture_output=True, text=True,
                           timeout=600, input=json.dumps([[point, kind, command] for point, kind in SPARK_FAULTS]))
    outcomes = [tuple(json.loads(line)) for line in child.stdout.splitlines()]
    assert child.returncode == 0 and child.stderr == "" and len(outcomes) == len(SPARK_FAULTS), (
        child.returncode, outcomes, child.stderr[-3000:])
    return dict(zip(SPARK_FAULTS, outcomes, strict=True))


@pytest.mark.parametrize(("point", "kind"), SPARK_FAULTS)
def test_faults_on_the_spark_engines_path_end_in_one_line(point, kind, spark_faults):
    """Was one process (one JVM) per fault: the four now share one process and one JVM, each
    command still through the command's entry point with its own streams and the same checks."""
    code, _, stderr = spark_faults[(point, kind)]
    expected_code, fragments = EXPECTED[kind]
    assert code == expected_code, stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and all(f in lines[0] for f in fragments), stderr


@pytest.mark.skipif(not os.path.exists("/proc/self/mem"), reason="needs Linux's /proc/self/mem (reads fail with EIO)")
@pytest.mark.parametrize("command", ["eval-run", "eval-qrels", "crosscheck", "read"])
def test_a_read_error_names_the_file_in_one_line(command):
    bad = "/proc/self/mem"  # open() succeeds, read() fails with EIO
    if command == "read":
        import ndcg_plugin
        with pytest.raises(ndcg_plugin.InputError, match=r"/proc/self/mem: cannot be read: Input/output error"):
            ndcg_plugin.read(bad, "run")
        return
    args = {"eval-run": ["eval", QRELS, bad, "NDCG_exp@10"], "eval-qrels": ["eval", bad, RUN, "NDCG_exp@10"],
            "crosscheck": ["crosscheck", QRELS, bad, "-m", "NDCG_exp@10"]}[command]
    one_line(run_main(*args), 2, "/proc/self/mem: cannot be read", "Input/output error")


def _interleaved(tmp_path) -> Path:
    """example.run with its lines shuffled: not grouped by query, so a streamed reading must go back."""
    import random
    lines = Path(RUN).read_text().splitlines()
    random.Random(3).shuffle(lines)
    path = tmp_path / "interleaved.run"
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("block", ["64", "1048576"])
def test_a_run_not_grouped_by_query_from_a_pipe_or_fifo_reads_as_from_the_file(tmp_path, block):
    import threading
    run = _interleaved(tmp_path)
    args = ["eval", "--block-size", block, QRELS]
    from_file = run_cli(*args, str(run), "NDCG_exp@10", "MRR_zero@10")
    assert from_file.returncode == 0
    piped = shell(f"cat {run} | {PY} eval --block-size {block} {QRELS} - NDCG_exp@10 MRR_zero@10")
    assert piped.returncode == 0 and piped.stdout == from_file.stdout, piped.stderr
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    writer = threading.Thread(target=lambda: fifo.write_bytes(run.read_bytes()))
    writer.start()
    named = subprocess.run([sys.executable, "-m", "ndcg_plugin", *args, str(fifo), "NDCG_exp@10", "MRR_zero@10"],
                           capture_output=True, text=True, timeout=60)
    writer.join(timeout=60)
    assert named.returncode == 0 and named.stdout == from_file.stdout, named.stderr
