"""Command line: ``ndcg-plugin eval | crosscheck | measures``.

The only module that prints and sets exit codes: 0 success, 1 crosscheck mismatch, 2 bad
input or usage (one message on stderr, no traceback).
"""
from __future__ import annotations

import argparse
import csv
import io as io_module
import json
import math
import os
import sys
import warnings
from collections.abc import Sequence

import ir_measures

from .errors import DatasetError, InputError
from .formatting import format_value, places_option
from .measures import ALL, parse_measures, same_as_builtin
from .provider import evaluate_tables, route
from .trec_eval_check import DEFAULT_MEASURES, format_rows
from .trec_eval_check import crosscheck as run_crosscheck

BLOCK_MIB = 16  # the reader's block size (ndcg_plugin.reading.sources.BLOCK_BYTES), in MiB: kept light here


def _read(data, kind: str, **options):
    from .reading import read  # imported on use: `ndcg-plugin --help` and `measures` start fast
    return read(data, kind, **options)

SUMMARY_QID = "all"


class UsageError(Exception):
    """A problem with what the user asked for, reported in one line with exit status 2."""


def _parse_measures(strings: Sequence[str]) -> list:
    try:
        return parse_measures(strings)
    except ValueError as e:
        raise UsageError(str(e)) from None


def _csv_line(*fields: str) -> str:
    buf = io_module.StringIO()
    csv.writer(buf, lineterminator="").writerow(fields)
    return buf.getvalue()


def _emit(args, qid: str | None, measure, value: float) -> None:
    """One result line. ``qid`` None: the aggregate (``all`` in tsv under -q, trec_eval and csv)."""
    if args.output == "trec_eval":  # trec_eval's own layout: printf("%-22s\t%s\t%6.4f\n", ...)
        print(f"{str(measure):<22}\t{SUMMARY_QID if qid is None else qid}\t"
              + (f"{value:6.{args.places}f}" if args.places >= 0 else format_value(value, args.places)))
    elif args.output == "csv":
        if not getattr(args, "csv_header_written", False):  # written with the first value, not before an error
            print(_csv_line("query_id", "measure", "value"))
            args.csv_header_written = True
        print(_csv_line(SUMMARY_QID if qid is None else qid, str(measure), format_value(value, args.places)))
    elif args.output == "jsonl":
        rec = {"query_id": qid, "measure": str(measure), "value": None if math.isnan(value) else float(value)}
        if qid is None:
            del rec["query_id"]
        print(json.dumps(rec))
    elif qid is None:
        print(f"{measure}\t{format_value(value, args.places)}")
    else:
        print(f"{qid}\t{measure}\t{format_value(value, args.places)}")


class _Progress:
    """A tqdm bar of the bytes of a file read so far, on ``file`` (stderr); the CLI makes one
    only when stderr is a terminal, so logs and pipes stay quiet. Called as the reader's
    ``progress(done, total)`` (total 0 when unknown, as for standard input)."""

    def __init__(self, label: str, file=None):
        from tqdm import tqdm  # imported only for a terminal

        self.bar = tqdm(total=None, unit="B", unit_scale=True, unit_divisor=1024, desc=f"reading {label}",
                        file=file or sys.stderr, leave=False, dynamic_ncols=True)
        self.done = 0

    def __call__(self, done: int, total: int) -> None:
        if total and self.bar.total != total:
            self.bar.total = total
        if done > self.done:
            self.bar.update(done - self.done)
            self.done = done
        if total and done >= total:
            self.bar.close()


def _read_qrels(args, columns: bool = False) -> tuple:
    """(qrels table, dataset id or None): a file if one exists at that path, else an ir-datasets id.
    The one way QRELS is read by eval, crosscheck, compare and explain. ``columns``: a file is
    read into the reader's columns (``reading.read_columns``: for the engine alone, no pandas)."""
    if args.qrels == "-" or os.path.exists(args.qrels):
        if columns:
            from .reading import read_columns
            return read_columns(args.qrels, "qrels", duplicates=args.duplicates), None
        return _read(args.qrels, "qrels", duplicates=args.duplicates), None
    from . import datasets
    if datasets.is_dataset_id(args.qrels):
        return datasets.load_qrels(args.qrels), args.qrels
    hint = datasets.did_you_mean(args.qrels) if "/" in args.qrels else ""
    raise InputError(args.qrels, None, "no such file, and not an ir-datasets id (e.g. msmarco-passage/dev/small)"
                     + hint)


def _plugin_counterparts(measures: list) -> list:
    """The plugin's measures that compute the same thing as official built-in ones."""
    return [mine for mine in map(same_as_builtin, measures) if mine is not None]


def _note_other_providers(routed) -> None:
    """One stderr line naming the printed measures that a provider other than ndcg-plugin computed."""
    by_provider: dict = {}
    for m in routed.others:
        by_provider.setdefault(routed.routes[m], []).append(str(m))
    if by_provider:
        parts = "; ".join(f"{' '.join(ms)} by ir-measures' {p} provider" for p, ms in by_provider.items())
        print(f"ndcg-plugin: computed by other providers: {parts}", file=sys.stderr)


def cmd_eval(args) -> int:
    if args.no_summary and not args.by_query:
        raise UsageError("-n (no summary) only makes sense with -q (per-query output)")
    measures = _parse_measures([*args.measures, *args.more_measures])
    if args.engine == "spark":
        return _eval_spark(args, measures)
    opened = None
    if _streams(args, measures):  # the run's first blocks are parsed while the qrels are read
        from .stream import RunFile
        opened = RunFile(args.run, args.run_format, args.block_size, _progress(args))
    try:
        return _eval_tables(args, measures, opened)
    finally:
        if opened is not None:
            opened.close()


def _streams(args, measures: list) -> bool:
    """True when the run file is evaluated as it streams: every measure is the engine's."""
    if not measures or args.provider or args.block_size <= 0 or args.run == "-":
        return False
    try:
        return all(route(m) == "ndcg_plugin" for m in measures)
    except ValueError:  # no provider computes one of them: said where the measures are evaluated
        return False


def _progress(args):
    return _Progress(args.run) if sys.stderr.isatty() else None


def _eval_tables(args, measures: list, opened) -> int:
    qrels, dataset = _read_qrels(args, columns=opened is not None)  # the engine alone reads them
    if not measures:
        if dataset is None:
            raise UsageError("give at least one measure, e.g. NDCG_exp@10 MRR_zero@10 (only a dataset id "
                             "has default measures)")
        from .datasets import official_measures
        official = _parse_measures(official_measures(dataset))
        if not official:
            raise UsageError(f"{dataset} documents no official measures; give measures explicitly")
        extra = [m for m in _plugin_counterparts(official) if m not in official]
        measures = official + extra
        note = f" and the plugin's counterparts {' '.join(map(str, extra))}" if extra else ""
        print(f"ndcg-plugin: no measures given: using the official measures of {dataset}: "
              f"{' '.join(map(str, official))}{note}", file=sys.stderr)
    if opened is not None:
        run, options = opened, {"run_format": args.run_format, "duplicates": args.duplicates}
    elif _streams(args, measures):  # every measure is the engine's: the run file is evaluated as it streams
        run = args.run
        options = {"run_format": args.run_format, "duplicates": args.duplicates, "progress": _progress(args),
                   "block_bytes": args.block_size}
    else:
        run = _read(args.run, "run", run_format=args.run_format, duplicates=args.duplicates,
                    progress=_progress(args))
        options = None
    try:
        # every measure the plugin's engine computes is computed by it, from the tables read above
        # (trec_eval's tie rule); the others by ir-measures, named on stderr (--provider: all by one)
        routed = None if args.provider else evaluate_tables(measures, qrels, run, options)
        calc = ir_measures.providers.registry[args.provider] if args.provider else None
        if calc is not None and not calc.is_available():
            raise UsageError(f"--provider {args.provider} is not available here (its library is not installed: "
                             f"for ranx, pip install ranx); leave --provider out to use the plugin and ir-measures' "
                             f"default providers")
        if routed is not None:
            _note_other_providers(routed)
        if args.by_query:
            aggs = {m: m.aggregator() for m in measures}
            metrics = routed.iter_calc() if routed is not None else calc.iter_calc(measures, qrels, run)
            for metric in metrics:
                aggs[metric.measure].add(metric.value)
                if not math.isnan(metric.value):  # MRR_ignore: queries without a value are omitted
                    _emit(args, metric.query_id, metric.measure, metric.value)
            if not args.no_summary:
                for m in measures:
                    _emit(args, SUMMARY_QID if args.output == "tsv" else None, m, aggs[m].result())
        else:
            results = routed.calc_aggregate() if routed is not None else calc.calc_aggregate(measures, qrels, run)
            for m in measures:
                _emit(args, None, m, results[m])
    except ValueError as e:
        if isinstance(e, InputError):
            raise
        raise UsageError(str(e)) from None
    return 0


def _eval_spark(args, measures: list) -> int:
    """``eval --engine spark``: files read and measures computed by Spark (ndcg_plugin.spark),
    printed exactly as the local engine's."""
    from . import spark as ndcg_spark
    if not measures:
        raise UsageError("give at least one measure (with --engine spark, e.g. NDCG_exp@10 HitRate_item@10)")
    if args.provider or args.duplicates != "error":
        raise UsageError("--engine spark computes every measure itself and refuses repeated (query, doc) pairs; "
                         "drop --provider and --duplicates")
    if "-" in (args.qrels, args.run):
        raise UsageError("--engine spark reads files (text or Parquet), not standard input")
    try:
        spark = ndcg_spark.session(args.spark_master)
        ev = ndcg_spark.prepare_files(spark, args.qrels, args.run, measures, args.run_format).persist()
        ev.check()
        if args.by_query:
            for qid, values in ev.rows():
                for m, v in zip(ev.measures, values, strict=True):
                    if not math.isnan(v):  # MRR_ignore: queries without a value are omitted
                        _emit(args, qid, m, v)
        if not (args.by_query and args.no_summary):
            results = ev.aggregates()
            for m in ev.measures:
                _emit(args, SUMMARY_QID if args.by_query and args.output == "tsv" else None, m, results[m])
    except ndcg_spark.SparkUnavailable as e:
        raise UsageError(str(e)) from None
    except ValueError as e:
        if isinstance(e, InputError):
            raise
        raise UsageError(str(e)) from None
    return 0


def cmd_datasets_seed(args) -> int:
    from .dataset_seed import seed
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
    from .datasets import info
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
    measures = _parse_measures(args.measures or list(DEFAULT_MEASURES))
    if args.trec_eval and not (os.path.isfile(args.trec_eval) and os.access(args.trec_eval, os.X_OK)):
        raise UsageError(f"--trec-eval {args.trec_eval}: no executable file there; give the path of a trec_eval "
                         "binary, or leave the option out to check against pytrec_eval")
    try:
        rows = run_crosscheck(_read_qrels(args)[0], args.run, measures, trec_eval=args.trec_eval,
                              duplicates=args.duplicates)
    except InputError:
        raise
    except (RuntimeError, ValueError, OSError) as e:
        raise UsageError(str(e)) from None
    print(format_rows(rows, args.places))
    bad = [r for r in rows if not r.ok]
    if bad:
        print(f"{len(bad)} of {len(rows)} measures differ from trec_eval", file=sys.stderr)
        return 1
    return 0


def cmd_explain(args) -> int:
    from .explain import explain
    measure = _parse_measures([args.measure])
    if len(measure) != 1:
        raise UsageError("explain takes one measure")
    qrels, _ = _read_qrels(args)
    run = _read(args.run, "run", run_format=args.run_format, duplicates=args.duplicates)
    try:
        print(explain(qrels, run, args.query, measure[0]).text(args.places))
    except ValueError as e:
        raise UsageError(str(e)) from None
    return 0


def cmd_compare(args) -> int:
    from . import compare as cmp
    from . import compare_writers as writers
    if len(args.runs) < 2:
        raise UsageError(f"compare needs two or more runs to test against each other, got one ({args.runs[0]}); "
                         "to evaluate one run, use: ndcg-plugin eval QRELS RUN MEASURE ...")
    names = args.names or [os.path.basename(r) for r in args.runs]
    if len(names) != len(args.runs):
        raise UsageError(f"--names gives {len(names)} names for {len(args.runs)} runs")
    if len(set(names)) != len(names):
        raise UsageError(f"run names must differ, got {names}; use --names")
    runs = {n: _read(r, "run", run_format=args.run_format, duplicates=args.duplicates)
            for n, r in zip(names, args.runs, strict=True)}
    qrels, _ = _read_qrels(args)
    baseline = None
    if args.baseline:
        baseline = args.baseline if args.baseline in runs else os.path.basename(args.baseline)
    try:
        result = cmp.compare(qrels, runs, _parse_measures(args.measures), baseline=baseline, test=args.test,
                             correction=args.correction, alpha=args.alpha, permutations=args.permutations)
    except ValueError as e:
        raise UsageError(str(e)) from None
    writer = {"markdown": lambda r: writers.to_markdown(r, args.places),
              "latex": lambda r: writers.to_latex(r, args.places), "csv": writers.to_csv,
              "jsonl": writers.to_jsonl}[args.output]
    print(writer(result))
    if args.plot:
        try:
            writers.plot(result, args.plot)
        except (ValueError, OSError) as e:
            raise UsageError(f"--plot {args.plot}: {getattr(e, 'strerror', None) or e}") from None
        print(f"ndcg-plugin: wrote {args.plot}", file=sys.stderr)
    return 0


def cmd_measures(args) -> int:
    for m in ALL:
        print(f"{m.NAME}: {m.SHORT_DESC}")
        for key, info in m.SUPPORTED_PARAMS.items():
            default = "" if info.default is ir_measures.providers.base.NOT_PROVIDED else f" (default {info.default!r})"
            required = " (required)" if key == "cutoff" and m.CUTOFF_REQUIRED else ""
            print(f"    {key}{default}{required}: {info.desc}")
    return 0


def _parents() -> dict[str, argparse.ArgumentParser]:
    """Options shared by subcommands, defined once: the two input files, how files are read, and
    the number of decimal places."""
    files = argparse.ArgumentParser(add_help=False)
    files.add_argument("qrels", help="TREC qrels file (plain or .gz), or an ir-datasets id such as "
                       "msmarco-passage/dev/small")
    files.add_argument("run", help="TREC run file (plain or .gz), MS MARCO run (qid pid rank), or - for stdin")
    reading = argparse.ArgumentParser(add_help=False)
    reading.add_argument("--run-format", choices=["auto", "trec", "msmarco"], default="auto",
                         help="run file format (default: detected from the first line)")
    reading.add_argument("--duplicates", choices=["error", "first", "max"], default="error",
                         help="repeated (query, doc) pairs: refuse (default, as trec_eval), keep the first, "
                              "or keep the highest score/label")
    places = argparse.ArgumentParser(add_help=False)
    places.add_argument("-p", "--places", type=places_option, default=4, help="decimal places (default 4; -1: all)")
    return {"files": files, "reading": reading, "places": places}


def _add_eval(sub, parents: dict) -> None:
    e = sub.add_parser("eval", help="evaluate a run", parents=[parents["files"], parents["reading"], parents["places"]])
    e.add_argument("measures", nargs="*", help="measures, e.g. NDCG_exp@10 'MRR_zero(rel=2)@10' nDCG@10 AP "
                   "(default with a dataset id: its official measures)")
    e.add_argument("-m", "--measure", dest="more_measures", action="extend", nargs="+", default=[], metavar="MEASURE",
                   help="measures given as options (the form of compare and crosscheck), added to the others")
    e.add_argument("-q", "--by-query", action="store_true", help="per-query values, then the aggregate")
    e.add_argument("-n", "--no-summary", action="store_true", help="with -q: omit the aggregate")
    e.add_argument("-o", "--output", choices=["tsv", "jsonl", "trec_eval", "csv"], default="tsv",
                   help="tsv (default), jsonl, trec_eval (trec_eval's own layout) or csv")
    e.add_argument("--provider", choices=sorted(ir_measures.providers.registry),
                   help="compute every measure with this ir-measures provider")
    e.add_argument("--block-size", type=int, default=BLOCK_MIB << 20, metavar="BYTES",
                   help="read a run file in blocks of this many bytes, keeping only per-query values, when "
                        f"the plugin computes every measure (default {BLOCK_MIB} MiB; 0: read it "
                        "whole into memory)")
    e.add_argument("--engine", choices=["local", "spark"], default="local",
                   help="local (default) or spark: the same measures and output computed by Spark SQL on text "
                        "or Parquet files (needs the [spark] extra and Java 17)")
    e.add_argument("--spark-master", default="local[*]", metavar="URL",
                   help="with --engine spark: the Spark master (default local[*])")
    e.set_defaults(func=cmd_eval)


def _add_crosscheck(sub, parents: dict) -> None:
    c = sub.add_parser("crosscheck", help="compare the plugin's measures with trec_eval",
                       parents=[parents["files"], parents["reading"], parents["places"]])
    c.add_argument("-m", "--measures", nargs="+", help=f"plugin measures (default: {' '.join(DEFAULT_MEASURES)})")
    c.add_argument("--trec-eval", metavar="PATH", help="a trec_eval binary to use instead of pytrec_eval "
                   "(run with -c; it prints 4 decimals, so the tolerance is 5e-5)")
    c.set_defaults(func=cmd_crosscheck)


def _add_compare(sub, parents: dict) -> None:
    c = sub.add_parser("compare", help="compare runs with paired significance tests; Markdown/LaTeX tables",
                       parents=[parents["reading"], parents["places"]])
    c.add_argument("qrels", help="TREC qrels file, or an ir-datasets id")
    c.add_argument("runs", nargs="+", help="two or more run files")
    c.add_argument("-m", "--measures", nargs="+", required=True, help="measures, e.g. NDCG_exp@10 MRR_zero@10")
    compare_error = c.error

    def error_with_hint(message: str):
        if "required: qrels" in message or "the following arguments are required" in message:
            message += ("; -m takes every word after it as a measure, so put it after the files: "
                        "ndcg-plugin compare QRELS RUN1 RUN2 -m NDCG_lin@10 MRR_zero@10")
        compare_error(message)

    c.error = error_with_hint
    c.add_argument("--baseline", help="the run the others are tested against (default: the first)")
    c.add_argument("--names", nargs="+", help="names for the runs, in order (default: file names)")
    c.add_argument("--test", choices=["t", "randomization", "bootstrap"], default="t",
                   help="paired test over queries (default t)")
    c.add_argument("--correction", choices=["holm", "bonferroni", "none"], default="holm",
                   help="multiple-comparison correction over (run, measure) pairs (default holm)")
    c.add_argument("--alpha", type=float, default=0.05, help="significance level (default 0.05)")
    c.add_argument("--permutations", type=int, default=10_000,
                   help="randomization flips / bootstrap resamples (default 10000; seeded)")
    c.add_argument("-o", "--output", choices=["markdown", "latex", "csv", "jsonl"], default="markdown")
    c.add_argument("--plot", metavar="FILE.png", help="per-query difference chart (needs the [plot] extra)")
    c.set_defaults(func=cmd_compare)


def _add_explain(sub, parents: dict) -> None:
    x = sub.add_parser("explain", help="show how one query's score is computed",
                       parents=[parents["files"], parents["reading"], parents["places"]])
    x.add_argument("--query", required=True, help="the query id")
    x.add_argument("-m", "--measure", required=True, help="one plugin measure, e.g. NDCG_exp@10")
    x.set_defaults(func=cmd_explain)


def _add_datasets(sub) -> None:
    d = sub.add_parser("datasets", help="ir-datasets collections: seed the cache offline, show what is present")
    dsub = d.add_subparsers(dest="datasets_command", required=True)
    ds = dsub.add_parser("seed", help="place local qrels/queries files where ir-datasets reads them")
    ds.add_argument("dataset", help="ir-datasets id, e.g. msmarco-passage/trec-dl-2019/judged")
    ds.add_argument("--qrels", metavar="FILE", help="the qrels file (plain or gzip)")
    ds.add_argument("--queries", metavar="FILE", help="the queries file, qid<TAB>text (plain or gzip)")
    ds.add_argument("--force", action="store_true", help="place the file even if its md5 or counts differ "
                    "from what ir-datasets records")
    ds.set_defaults(func=cmd_datasets_seed)
    di = dsub.add_parser("info", help="official measures and the local state of a dataset's qrels and queries")
    di.add_argument("dataset", help="ir-datasets id")
    di.set_defaults(func=cmd_datasets_info)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="ndcg-plugin", description="Ranking evaluation with explicit conventions, "
                                "checked against trec_eval.")
    sub = p.add_subparsers(dest="command", required=True)
    parents = _parents()
    _add_eval(sub, parents)
    _add_crosscheck(sub, parents)
    _add_compare(sub, parents)
    _add_explain(sub, parents)
    sub.add_parser("measures", help="list the plugin's measures and their parameters").set_defaults(func=cmd_measures)
    _add_datasets(sub)
    return p


def _parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """The arguments; eval's measures may also come after options (``eval Q R -p 6 NDCG_lin@10``),
    which argparse alone leaves unrecognized once the positionals before the options are taken."""
    parser = build_parser()
    args, rest = parser.parse_known_args(argv)
    if rest and args.command == "eval" and not any(r.startswith("-") for r in rest):
        args.measures = [*args.measures, *rest]
    elif rest:
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = _parse_args(argv)
    original_format = warnings.formatwarning
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("default")
            warnings.formatwarning = lambda msg, cat, *a, **k: f"ndcg-plugin: warning: {msg}\n"
            return args.func(args)
    except InputError as e:
        print(f"ndcg-plugin: error: {e}", file=sys.stderr)
    except (UsageError, DatasetError) as e:
        print(f"ndcg-plugin: error: {e}", file=sys.stderr)
    except BrokenPipeError:
        return 0
    finally:
        warnings.formatwarning = original_format
    return 2


if __name__ == "__main__":
    sys.exit(main())
