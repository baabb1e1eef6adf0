"""Command line: ``ndcg-plugin eval | compare | crosscheck | explain | reproduce | measures |
datasets | trec_eval | irm``.

The subcommands' handlers and the one place that sets exit codes: 0 success, 1 crosscheck
mismatch, 2 bad input, usage or output (one message on stderr, no traceback), 130 interrupted.
Messages and checked output go through :mod:`ndcg_plugin.cli.terminal`.
"""
from __future__ import annotations

import gc
import math
import os
import sys
import warnings
from collections.abc import Sequence

import ir_measures

from .. import interrupts
from ..errors import DatasetError, InputError, UsageError
from ..evaluation import DatasetQrels, Evaluation, ReadOptions, qrels_queries
from ..formatting import SUMMARY_QID, EvalWriter
from ..measures import examples, parse_measures, registry, same_as_builtin
from ..routing import NamedProvider
from ..trec_eval.check import crosscheck as run_crosscheck
from ..trec_eval.check import default_measures, format_rows
from . import parser as cli_parser
from .messages import for_cli, one_line
from .terminal import CheckedOutput, ClosedOutput, OutputError, leave_stdout, note, out_of_memory, progress_bar, say


def _read(data, kind: str, **options):
    from ..reading import read  # imported on use: `ndcg-plugin --help` and `measures` start fast
    return read(data, kind, **options)

def _parse_measures(strings: Sequence[str]) -> list:
    try:
        return parse_measures(strings)
    except ValueError as e:
        raise UsageError(str(e)) from None


def _parses(text: str) -> bool:
    try:
        parse_measures([text])
    except ValueError:
        return False
    return True


def _qrels_source(args) -> tuple[str | None, str | None]:
    """(QRELS as a file path, or None; the ir-datasets id, or None): a file if one exists at that
    path, else an ir-datasets id (loaded by :func:`_qrels`). The one way QRELS is found by eval,
    crosscheck, compare and explain."""
    if args.qrels == "-" or os.path.exists(args.qrels):
        return args.qrels, None
    from ..datasets import load as datasets
    try:
        if datasets.is_dataset_id(args.qrels):
            return None, args.qrels
    except DatasetError as e:
        raise InputError(args.qrels, None, f"no such file (and it cannot be read as an ir-datasets id: {e})") from None
    hint = datasets.did_you_mean(args.qrels) if "/" in args.qrels else ""
    raise InputError(args.qrels, None, "no such file, and not an ir-datasets id (e.g. msmarco-passage/dev/small)"
                     + hint)


def _qrels(path: str | None, dataset: str | None):
    """The file path as is, or the dataset's qrels as a table (ir-datasets reads them)."""
    if path is not None:
        return path
    from ..datasets import load as datasets
    return datasets.load_qrels(dataset)


def _read_qrels(args):
    """QRELS as a table (see :func:`_qrels_source`)."""
    path, dataset = _qrels_source(args)
    return _read(path, "qrels", duplicates=args.duplicates) if path is not None else _qrels(None, dataset)


def _dataset_measures(dataset: str | None) -> list:
    """The official measures of a dataset id, and the plugin's counterparts of those that have one."""
    if dataset is None:
        raise UsageError(f"give at least one measure, e.g. {' '.join(examples())} (only a dataset id has "
                         f"default measures)")
    from ..datasets.load import official_measures
    official = _parse_measures(official_measures(dataset))
    if not official:
        raise UsageError(f"{dataset} documents no official measures; give measures explicitly")
    extra = [m for m in (same_as_builtin(m) for m in official) if m is not None and m not in official]
    note = f" and the plugin's counterparts {' '.join(map(str, extra))}" if extra else ""
    say(f"no measures given: using the official measures of {dataset}: {' '.join(map(str, official))}{note}")
    return official + extra


def _note_other_providers(ev: Evaluation) -> None:
    """One stderr line naming the printed measures that a provider other than ndcg-plugin computed."""
    by_provider = ev.other_providers()
    if by_provider and not ev.provider:
        parts = "; ".join(f"{' '.join(map(str, ms))} by ir-measures' {p} provider" for p, ms in by_provider.items())
        say(f"computed by other providers: {parts}")


def cmd_eval(args) -> int:
    if args.no_summary and not args.by_query:
        raise UsageError("-n (no summary) only makes sense with -q (per-query output)")
    files = [m for m in args.measures if os.path.exists(m) and not _parses(m)]
    if files:
        raise UsageError(f"{files[0]!r} is a file, not a measure: eval evaluates one run; to compare runs, "
                         f"ndcg-plugin compare QRELS {args.run} {' '.join(files)} -m MEASURE ...")
    if args.qrels == "-" and args.run == "-":
        raise UsageError("QRELS and RUN cannot both be standard input (-): give one of them as a file")
    measures = _parse_measures([*args.measures, *args.more_measures])
    writer = EvalWriter(args.output, args.places)
    given = [name for name, value in (("--spark-plan", args.spark_plan), ("--spark-ship", args.spark_ship),
                                      ("--spark-master", args.spark_master), ("--spark-conf", args.spark_conf))
             if value is not None]
    if given and args.engine != "spark":
        raise UsageError(f"{given[0]} applies to --engine spark only: add --engine spark, or drop {given[0]}")
    if args.engine == "spark":
        return _eval_spark(args, measures, writer)
    provider = None
    if args.provider:
        try:
            provider = NamedProvider(args.provider)  # checked here, once
        except ValueError as e:
            raise UsageError(f"--{e}") from None
    path, dataset = _qrels_source(args)
    if not measures and provider:  # a dataset's measures: those the provider computes
        official = _dataset_measures(dataset)
        measures = [m for m in official if provider.supports(m)]
        left = [str(m) for m in official if m not in measures]
        if left:
            say(f"note: {', '.join(left)} left out: --provider {args.provider} does not compute "
                 f"{'it' if len(left) == 1 else 'them'}")
    measures = measures or _dataset_measures(dataset)
    options = ReadOptions(args.run_format, args.duplicates, args.block_size, progress_bar(args.run), args.qrels_columns,
                          args.run_columns)
    try:
        # routed once: every measure the plugin's engine computes is computed by it (trec_eval's tie
        # rule), the others by ir-measures, named on stderr (--provider: all by that one); a run
        # file that streams starts parsing before the qrels are read (a dataset's are loaded then)
        ev = Evaluation(measures, qrels=path if path is not None else DatasetQrels(dataset), provider=provider,
                        options=options)
        results = ev.compute(args.run, per_query=args.by_query)
    except ValueError as e:
        if isinstance(e, InputError):
            raise
        raise UsageError(str(e)) from None
    if args.by_query:
        for metric in results.metrics():
            if not math.isnan(metric.value):  # queries without a value are omitted
                writer.line(metric.query_id, metric.measure, metric.value)
    if not (args.by_query and args.no_summary):
        for m in measures:
            writer.line(SUMMARY_QID if args.by_query and args.output == "tsv" else None, m, results.aggregates[m])
    sys.stdout.flush()  # the numbers are out (or their write error raised) before the note
    _note_other_providers(ev)  # after the numbers: an error above stays the one line on stderr
    return 0


def _eval_spark(args, measures: list, writer: EvalWriter) -> int:
    """``eval --engine spark``: files read and measures computed by Spark (ndcg_plugin.spark.command),
    printed exactly as the local engine's. Spark logs nothing; any failure is one line, exit 2."""
    from ..spark import command
    if args.provider and measures:  # after spark's "give at least one measure", before its other refusals
        raise UsageError("--engine spark computes every measure itself: drop --provider")
    options = command.SparkOptions(args.qrels, args.run, args.run_format, args.duplicates, args.qrels_columns,
                                   args.run_columns, args.spark_plan or "engine", args.spark_ship or "auto",
                                   args.spark_master or "local[*]", tuple(args.spark_conf or ()), args.by_query)
    try:
        with command.files(options, measures, note) as (ev, results):
            for qid, values in (ev.rows() if args.by_query else ()):
                for m, v in zip(ev.measures, values, strict=True):
                    if not math.isnan(v):  # queries without a value are omitted
                        writer.line(qid, m, v)
    except ValueError as e:
        if isinstance(e, InputError):
            raise
        raise UsageError(str(e)) from None
    if not (args.by_query and args.no_summary):
        for m in ev.measures:
            writer.line(SUMMARY_QID if args.by_query and args.output == "tsv" else None, m, results[m])
    return 0


def cmd_datasets_seed(args) -> int:
    from ..datasets.seed import seed
    placed = []
    try:
        for done in seed(args.dataset, qrels=args.qrels, queries=args.queries, force=args.force):
            print(f"{done.kind}: placed {done.path} ({done.check})", flush=True)
            placed.append(f"the {done.kind} at {done.path}")
    except (DatasetError, InputError) as e:
        if placed:
            raise DatasetError(f"{e} (placed before this error: {', '.join(placed)})") from None
        raise
    return 0


def cmd_datasets_info(args) -> int:
    from ..datasets.load import info
    data = info(args.dataset)
    print(f"dataset: {data['dataset']}")
    print(f"official measures: {' '.join(data['official_measures']) or '(none documented)'}")
    for kind in ("qrels", "queries"):
        entry = data[kind]
        if entry is None:
            print(f"{kind}: not provided by this dataset")
            continue
        state = "present" if entry["present"] else "MISSING (ir-datasets downloads it when first read; " \
            f"offline: ndcg-plugin datasets seed {args.dataset} --{kind} FILE)"
        print(f"{kind}: {state} at {entry['path']}")
        if kind == "qrels" and entry["present"]:
            levels = ", ".join(f"{k}: {v}" for k, v in entry["relevance_levels"].items())
            print(f"  {entry['judgments']} judgments, {entry['queries']} queries, relevance levels {{{levels}}}")
        elif entry["present"]:
            print(f"  {entry['count']} queries")
    return 0


def cmd_crosscheck(args) -> int:
    measures = _parse_measures(args.measures or list(default_measures()))
    if args.trec_eval and not (os.path.isfile(args.trec_eval) and os.access(args.trec_eval, os.X_OK)):
        import shutil
        found = shutil.which(args.trec_eval) if os.sep not in args.trec_eval else None
        if found is None:  # a bare name is looked for on PATH, as a shell would
            raise UsageError(f"--trec-eval {args.trec_eval}: no executable file there or on PATH; give the path of "
                             "a trec_eval binary, or leave the option out to check against pytrec_eval")
        args.trec_eval = found
    try:
        rows = run_crosscheck(_read_qrels(args), args.run, measures, trec_eval=args.trec_eval,
                              duplicates=args.duplicates)
    except InputError:
        raise
    except (RuntimeError, ValueError, OSError) as e:
        raise UsageError(str(e)) from None
    print(format_rows(rows, args.places))
    bad = [r for r in rows if not r.ok]
    if bad:
        say(f"{len(bad)} of {len(rows)} measures differ from trec_eval")
        return 1
    return 0


def cmd_explain(args) -> int:
    from .explain import explain
    measure = _parse_measures(args.measure)
    if len(measure) != 1:
        raise UsageError(f"explain takes one measure, got {len(measure)}: {' '.join(args.measure)} "
                         f"(run explain once per measure)")
    qrels = _read_qrels(args)
    run = _read(args.run, "run", run_format=args.run_format, duplicates=args.duplicates,
                queries=qrels_queries(qrels))
    try:
        print(explain(qrels, run, args.query, measure[0], args.places).text(args.places))
    except ValueError as e:
        raise UsageError(str(e)) from None
    return 0


#: run files this large in all (about 10^6 lines of a TREC run: 5 s) get a note before compare reads them
NOTE_BYTES = 40 * 2**20


def cmd_compare(args) -> int:
    from .. import compare as cmp
    from ..compare import writers
    if len(args.runs) < 2:
        raise UsageError(f"compare needs two or more runs to test against each other, got one ({args.runs[0]}); "
                         "to evaluate one run, use: ndcg-plugin eval QRELS RUN MEASURE ...")
    names = args.names or [os.path.basename(r) for r in args.runs]
    if len(names) != len(args.runs):
        raise UsageError(f"--names gives {len(names)} names for {len(args.runs)} runs")
    if len(set(names)) != len(names):
        raise UsageError(f"run names must differ, got {names}; use --names")
    if args.baseline and len(set(args.baseline)) > writers.MAX_BASELINES:
        raise UsageError(f"at most {writers.MAX_BASELINES} baselines (one symbol each), got {len(args.baseline)}")
    target = None
    if args.plot:  # checked before the work, which can be long
        try:
            target = writers.plot_target(args.plot)
        except ValueError as e:
            raise UsageError(f"--plot {args.plot}: {e}") from None
    measures = _parse_measures(args.measures)
    if (size := sum(os.path.getsize(r) for r in args.runs if os.path.isfile(r))) >= NOTE_BYTES:
        note(f"reading, evaluating and testing {len(args.runs)} runs of {size / 2**20:,.0f} MiB in all")
    try:
        by_path = {os.path.realpath(r): n for r, n in zip(args.runs, names, strict=True)}
        baselines = [by_path.get(os.path.realpath(b)) or cmp.resolve_run(b, names) for b in args.baseline or ()]
        path, dataset = _qrels_source(args)
        # the run files are streamed by compare, one after the other, keeping only per-query values
        result = cmp.compare(_qrels(path, dataset), dict(zip(names, args.runs, strict=True)), measures,
                             baseline=baselines or None, test=args.test, correction=args.correction, alpha=args.alpha,
                             permutations=args.permutations, ci=args.ci, ci_level=args.ci_level,
                             all_pairs=args.all_pairs, run_format=args.run_format, duplicates=args.duplicates)
    except ValueError as e:
        raise e if isinstance(e, InputError) else UsageError(str(e)) from None
    show = tuple(args.show)
    writer = {"markdown": lambda r: writers.to_markdown(r, args.places, show),
              "latex": lambda r: writers.to_latex(r, args.places, show), "csv": writers.to_csv,
              "jsonl": writers.to_jsonl}[args.output]
    print(writer(result))
    for (name, _, m), why in result.untested.items():
        say(f"no p-value for {name} on {m}: {why}")
    if target:
        try:
            writers.plot(result, target)
        except (ValueError, OSError) as e:
            raise UsageError(f"--plot {target}: {getattr(e, 'strerror', None) or e}") from None
        say(f"wrote {os.path.abspath(target)}")
    return 0


def cmd_reproduce(args) -> int:
    """``reproduce runs|table``: computed and laid out by :func:`ndcg_plugin.cli.reproduce.command`."""
    from argparse import Namespace

    from .reproduce import command
    try:
        text, note, code = command(args, lambda qrels: _qrels(*_qrels_source(Namespace(qrels=qrels))))
    except ValueError as e:
        raise e if isinstance(e, InputError) else UsageError(str(e)) from None
    print(text)
    if note:
        print(f"ndcg-plugin: {note}", file=sys.stderr)
    return code


def cmd_measures(args) -> int:
    for m in registry.measures():
        print(f"{m.NAME}: {m.SHORT_DESC}")
        for key, info in m.SUPPORTED_PARAMS.items():
            default = "" if info.default is ir_measures.providers.base.NOT_PROVIDED else f" (default {info.default!r})"
            required = " (required)" if key == "cutoff" and m.CUTOFF_REQUIRED else ""
            print(f"    {key}{default}{required}: {info.desc}")
    return 0


def cmd_trec_eval(args) -> int:
    """``trec_eval``: trec_eval's command line (:mod:`ndcg_plugin.cli.trec_eval`)."""
    from . import trec_eval
    return trec_eval.main(args.argv)


def cmd_irm(args) -> int:
    """``irm``: the ``ir_measures`` command itself, with the plugin's measures registered and
    eval's failure paths (:mod:`ndcg_plugin.cli.irm`)."""
    from argparse import Namespace

    from . import irm
    return irm.main(args.argv, lambda qrels: _qrels_source(Namespace(qrels=qrels))[0])


HANDLERS = {"eval": cmd_eval, "crosscheck": cmd_crosscheck, "compare": cmd_compare, "explain": cmd_explain,
            "measures": cmd_measures, "datasets_seed": cmd_datasets_seed, "datasets_info": cmd_datasets_info,
            "reproduce": cmd_reproduce, "trec_eval": cmd_trec_eval, "irm": cmd_irm}


def build_parser():
    """The argument parser (:mod:`ndcg_plugin.cli.parser`)."""
    return cli_parser.build_parser()


def _parse_args(argv: Sequence[str] | None):
    """The arguments (:mod:`ndcg_plugin.cli.parser`); the text of ``--help`` and ``--version`` flushed
    before their SystemExit(0): one that cannot be written is an OutputError, not an exit 0."""
    try:
        return cli_parser.parse_args(argv)
    except SystemExit as e:
        if not e.code:
            sys.stdout.flush()
        raise


def main(argv: Sequence[str] | None = None) -> int:
    """Run one subcommand. Exit status: 0 success, 1 crosscheck mismatch, 2 bad input, usage, an
    output that cannot be written or memory exhausted (one line on stderr, no traceback), 130
    interrupted (Ctrl-C)."""
    # numpy's OpenBLAS starts a thread per core when numpy is imported, and each spins for about
    # 0.1 s of CPU waiting for work; no subcommand multiplies matrices large enough to gain from
    # them, and eval parses the run on the other cores meanwhile. Set before numpy is imported
    # (nothing above imports it); the user's own setting wins.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    original_format, original_stdout = warnings.formatwarning, sys.stdout
    sys.stdout = CheckedOutput(original_stdout) if original_stdout is not None else ClosedOutput()
    try:
        args = _parse_args(argv)
        if original_stdout is None:
            say("error: standard output is closed: nothing could be written")
            return 2
        with warnings.catch_warnings():
            warnings.formatwarning = lambda msg, cat, *a, **k: f"ndcg-plugin: warning: {one_line(msg)}\n"
            code = HANDLERS[args.handler](args)
        sys.stdout.flush()
        return code
    except (InputError, UsageError, DatasetError) as e:
        say(f"error: {for_cli(e)}")
    except OutputError as e:
        leave_stdout()
        say(f"error: writing standard output: {one_line(str(e))}")
    except BrokenPipeError:
        leave_stdout()
        return 0
    except KeyboardInterrupt:
        return interrupts.said(say)
    except (MemoryError, RuntimeError, ImportError) as e:  # also a thread or a library without memory to start
        if not isinstance(e, MemoryError) and not out_of_memory(e):
            raise
        say("error: out of memory (a run file streams in --block-size pieces; a run from stdin, from a "
             "DataFrame, or for other providers' measures is read whole)")
    finally:
        warnings.formatwarning = original_format
        sys.stdout = original_stdout
    return 2


#: how long a thread holding the GIL runs before one waiting for it gets it (Python's default:
#: 5 ms). A streamed eval's read-ahead thread waits for the GIL between Arrow's CSV reader (which
#: runs on all cores without it) and its next block, while the main thread evaluates in Python:
#: waiting 5 ms each time left the cores idle; 0.5 ms made a 7M-line eval 1-6% faster (A/B, 3x)
SWITCH_INTERVAL = 0.0005


def run() -> None:
    """The ``ndcg-plugin`` command (and ``python -m ndcg_plugin``): :func:`main`, then exit with its
    status. Process-wide settings belong to the command, not to :func:`main` (which tests and
    other programs call): the GIL's switch interval (:data:`SWITCH_INTERVAL`); Arrow's memory
    pool, the system allocator unless the user chose one (ARROW_DEFAULT_MEMORY_POOL, read when
    pyarrow is first imported: the default pool kept freed blocks, 90 MB more at the peak of a
    10^6-user log, and the Parquet reader takes no pool of its own); and at the end
    ``gc.freeze``, so that the interpreter's final collections skip the objects still alive:
    walking numpy's, Arrow's and ir-measures' module objects cost 20-40 ms after the output was
    written, a few percent of a 7M-line eval. They are still released by reference counting;
    atexit handlers and the flush of standard streams run as usual."""
    sys.setswitchinterval(SWITCH_INTERVAL)
    if os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "system") == "system":  # jemalloc unused: no idle thread
        os.environ.setdefault("JE_ARROW_MALLOC_CONF", "background_thread:false")  # (nor its line when none starts)
    # every warning shown, once per place; set here, not in main(), so that a program or a test
    # calling main() keeps its own warning filters
    warnings.simplefilter("default")
    code = interrupts.run_command(main, say)  # Ctrl-C: 130 and one line, also before main's own handling
    gc.freeze()
    sys.exit(code)


if __name__ == "__main__":
    run()
