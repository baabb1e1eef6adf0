"""The command line's arguments: one parser per subcommand, with the options they share
defined once (parent parsers). Each subcommand sets ``handler``, the name of its function in
:mod:`ndcg_plugin.cli.commands`."""
from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

import ir_measures

from ..formatting import ALL_DIGITS, OUTPUTS
from ..measures import examples
from ..sizes import BLOCK_BYTES
from ..trec_eval.check import default_measures

BLOCK_MIB = BLOCK_BYTES >> 20  # the reader's block size, in MiB


class Parser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line on standard error, exit status 2 (not
    argparse's usage block before the message): ``ndcg-plugin eval: error: MESSAGE (ndcg-plugin
    eval --help)``. Subcommand parsers are of this class too (argparse makes them of the parent's)."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {' '.join(message.split())} (see {self.prog} --help)\n")


def _parents() -> dict[str, argparse.ArgumentParser]:
    """Options shared by subcommands, defined once: the two input files, how files are read, and
    the number of decimal places."""
    files = Parser(add_help=False)
    _add_files(files)
    reading = Parser(add_help=False)
    reading.add_argument("--run-format", choices=["auto", "trec", "msmarco"], default="auto",
                         help="run file format (default: detected from the first line)")
    reading.add_argument("--duplicates", choices=["error", "first", "max"], default="error",
                         help="repeated (query, doc) pairs: refuse (default, as trec_eval), keep the first, "
                              "or keep the highest score/label")
    places = Parser(add_help=False)
    places.add_argument("-p", "--places", type=places_option, default=4, help="decimal places (default 4; -1: all)")
    return {"files": files, "reading": reading, "places": places}


#: the most decimal places ``-p`` prints (a double holds about 17 significant digits; -1 prints
#: every one of them); Python's format refuses a precision above 2^31 - 1, and one just below
#: builds a string of that many bytes per value
MAX_PLACES = 100


def _add_files(parser: argparse.ArgumentParser, optional: bool = False) -> None:
    """QRELS and RUN; ``optional``: each may be left out of the positionals (eval, where
    :func:`parse_args` finds them at the end of a ``-m`` list: trec_eval's order)."""
    more = {"nargs": "?", "default": None} if optional else {}
    parser.add_argument("qrels", help="TREC qrels file (plain or .gz), or an ir-datasets id such as "
                        "msmarco-passage/dev/small", **more)
    parser.add_argument("run", help="TREC run file (plain or .gz), MS MARCO run (qid pid rank), or - for stdin",
                        **more)


def places_option(text: str) -> int:
    """The ``-p/--places`` option: an integer from 0 to :data:`MAX_PLACES`, or -1
    (:data:`~ndcg_plugin.formatting.ALL_DIGITS`) for every digit."""
    expected = f"an integer from 0 to {MAX_PLACES}, or -1 (every digit)"
    try:
        places = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}") from None
    if not ALL_DIGITS <= places <= MAX_PLACES:
        raise argparse.ArgumentTypeError(f"expected {expected}, got {text.strip()}")
    return places


def _checked(convert, ok, kind: str, bound: str):
    """An argparse type: ``convert(text)``, refused when it fails ("expected KIND, got 'TEXT'") or
    when ``ok`` says no ("expected BOUND, got VALUE")."""
    def parse(text: str):
        try:
            value = convert(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {kind}, got {text!r}") from None
        if not ok(value):
            raise argparse.ArgumentTypeError(f"expected {bound}, got {value}")
        return value
    return parse


_UNITS = {"": 1, "k": 1 << 10, "kib": 1 << 10, "m": 1 << 20, "mib": 1 << 20, "g": 1 << 30, "gib": 1 << 30}


def _size(text: str) -> int:
    """``8M`` (8 MiB), ``512k``, ``1GiB`` or a plain number of bytes; the units are binary."""
    digits = text.strip()
    number = digits.rstrip("kKmMgGiIbB")
    unit = digits[len(number):].lower()
    if unit not in _UNITS:
        raise ValueError(text)
    return int(number) * _UNITS[unit]


#: the largest ``--block-size``: 1024G (a block is read into memory whole)
MAX_BLOCK = 1 << 40
_bytes_option = _checked(_size, lambda v: 0 <= v <= MAX_BLOCK, "a size: bytes, or with a unit K, M or G (e.g. 8M)",
                         "a size from 0 to 1024G (0: read the run whole)")
_alpha = _checked(float, lambda v: 0 < v < 1, "a number between 0 and 1",
                  "a significance level between 0 and 1 (e.g. 0.05)")
_level = _checked(float, lambda v: 0 < v < 1, "a number between 0 and 1",
                  "a confidence level between 0 and 1 (e.g. 0.95)")
_depth = _checked(int, lambda v: v >= 0, "a whole number >= 0", "a whole number >= 0 (0: every document)")
_positive = _checked(int, lambda v: v >= 1, "a whole number >= 1", "a whole number >= 1 (e.g. 10000)")


def _column_map(text: str) -> dict[str, str]:
    """``query_id=user_id,doc_id=item_id``: ir-measures' column names to a Parquet file's."""
    out = {}
    for part in text.split(","):
        key, eq, value = part.partition("=")
        if not eq or not key.strip() or not value.strip():
            raise argparse.ArgumentTypeError(f"expected NAME=COLUMN[,NAME=COLUMN...] with NAME among query_id, "
                                             f"doc_id, relevance, score (e.g. query_id=user_id,doc_id=item_id), "
                                             f"got {text!r}")
        out[key.strip()] = value.strip()
    return out


def _add_eval(sub, parents: dict) -> None:
    e = sub.add_parser("eval", help="evaluate a run", parents=[parents["reading"], parents["places"]],
                       usage="%(prog)s QRELS RUN [MEASURE ...] [options]")
    _add_files(e, optional=True)
    e.add_argument("measures", nargs="*", help=f"measures, e.g. {examples()[0]} '{examples()[1]}' nDCG@10 AP "
                   "(default with a dataset id: its official measures)")
    e.add_argument("-m", "--measure", dest="more_measures", action="extend", nargs="+", default=[], metavar="MEASURE",
                   help="measures given as options (the form of compare and crosscheck), added to the others")
    # the ir-measures CLI's spellings (--by_query, --no_summary, --output_format) work too
    e.add_argument("-q", "--by-query", "--by_query", action="store_true", help="per-query values, then the aggregate")
    e.add_argument("-n", "--no-summary", "--no_summary", action="store_true", help="with -q: omit the aggregate")
    e.add_argument("-o", "--output", "--output_format", choices=list(OUTPUTS), default="tsv",
                   help="tsv (default), jsonl, trec_eval (trec_eval's own layout) or csv")
    e.add_argument("--provider", choices=sorted(ir_measures.providers.registry),
                   help="compute every measure with this ir-measures provider")
    e.add_argument("--block-size", type=_bytes_option, default=BLOCK_MIB << 20, metavar="SIZE",
                   help="read a run file in blocks of this size (bytes, or 512K, 8M, 1G), keeping only per-query "
                        f"values, when the plugin computes every measure (default {BLOCK_MIB}M; 0: read it "
                        "whole into memory)")
    e.add_argument("--qrels-columns", type=_column_map, metavar="NAME=COLUMN,...",
                   help="a Parquet qrels file's column names, e.g. query_id=user_id,doc_id=item_id,relevance=rating "
                        "(default: query_id, doc_id, relevance)")
    e.add_argument("--run-columns", type=_column_map, metavar="NAME=COLUMN,...",
                   help="a Parquet run's column names, e.g. query_id=user_id,doc_id=item_id,score=prediction "
                        "(default: query_id, doc_id, score)")
    e.add_argument("--engine", choices=["local", "spark"], default="local",
                   help="local (default) or spark: the same measures and output computed on Spark from text "
                        "or Parquet files (needs the [spark] extra and Java 17)")
    e.add_argument("--spark-plan", choices=["engine"], default=None,
                   help="with --engine spark: engine (the default and only plan: the local engine on each "
                        "partition, in the executors' Python, which must import ndcg_plugin; the Spark SQL plans "
                        "top_k and full were retired)")
    e.add_argument("--spark-ship", choices=["auto", "best", "all"], default=None,
                   help="with --engine spark and the engine plan: best (cut each query's rows to its best before "
                        "the shuffle: long lists), all (shuffle every row: lists of about k items), or auto "
                        "(default: decided from the run's first rows); the numbers are the same")
    e.add_argument("--spark-master", default=None, metavar="URL",
                   help="with --engine spark: the Spark master: local[N], local[*] (default), spark://HOST:PORT, "
                        "yarn or k8s://HOST:PORT")

    def spark_conf(text: str) -> tuple[str, str]:
        key, eq, value = text.partition("=")
        if not eq or not key.strip():
            raise argparse.ArgumentTypeError(f"expected KEY=VALUE (e.g. spark.driver.memory=8g), got {text!r}")
        return key.strip(), value

    e.add_argument("--spark-conf", action="append", type=spark_conf, default=None, metavar="KEY=VALUE",
                   help="with --engine spark: a Spark setting, repeatable (e.g. spark.driver.memory=8g, "
                        "spark.sql.shuffle.partitions=400); on a local master the default is 2 partitions per core "
                        "and half the memory for the driver")
    e.set_defaults(handler="eval")


def _add_crosscheck(sub, parents: dict) -> None:
    c = sub.add_parser("crosscheck", help="compare the plugin's measures with trec_eval",
                       parents=[parents["files"], parents["reading"], parents["places"]])
    c.add_argument("-m", "--measures", nargs="+",
                   help=f"measures the engine computes: the plugin's, and the built-ins its families serve (AP, "
                        f"P@10, Bpref, ...) (default: {' '.join(default_measures())})")
    c.add_argument("--trec-eval", metavar="PATH", help="a trec_eval binary to use instead of pytrec_eval "
                   "(run with -c; it prints 4 decimals, so the tolerance is 5e-5)")
    c.set_defaults(handler="crosscheck")


def _add_compare(sub, parents: dict) -> None:
    c = sub.add_parser("compare", help="compare runs with paired significance tests; Markdown/LaTeX tables",
                       parents=[parents["reading"], parents["places"]])
    c.add_argument("qrels", help="TREC qrels file, or an ir-datasets id")
    c.add_argument("runs", nargs="+", help="two or more run files")
    c.add_argument("-m", "--measures", nargs="+", required=True, help=f"measures, e.g. {' '.join(examples())}")
    compare_error = c.error

    def error_with_hint(message: str):
        if "required: qrels" in message or "the following arguments are required" in message:
            message += ("; -m takes every word after it as a measure, so put it after the files: "
                        f"ndcg-plugin compare QRELS RUN1 RUN2 -m {' '.join(examples())}")
        compare_error(message)

    c.error = error_with_hint
    c.add_argument("--baseline", action="append", metavar="RUN",
                   help="a run the others are tested against (its name, file name, or file name without "
                        "extensions); repeat for more baselines, each marked with its own symbol (default: the "
                        "first run)")
    c.add_argument("--all-pairs", action="store_true",
                   help="test every run against every other; a cell's superscript letters name the runs it is "
                        "significantly better than")
    c.add_argument("--names", nargs="+", help="names for the runs, in order (default: file names)")
    c.add_argument("--test", choices=["t", "randomization", "bootstrap", "tukey", "randomized-tukey"], default="t",
                   help="paired test over queries (default t); tukey (Tukey's HSD, queries as blocks) and "
                        "randomized-tukey (Carterette 2012) with --all-pairs")
    c.add_argument("--correction", choices=["holm", "bonferroni", "none"], default=None,
                   help="multiple-comparison correction over every comparison in the table (default holm; the "
                        "Tukey tests correct themselves)")
    c.add_argument("--alpha", type=_alpha, default=0.05, help="significance level, between 0 and 1 (default 0.05)")
    c.add_argument("--ci", choices=["t", "bootstrap"], default=None,
                   help="confidence intervals of the means and mean differences: t (default) or bootstrap "
                        "(percentile, seeded; the default with --test bootstrap)")
    c.add_argument("--ci-level", type=_level, default=0.95, metavar="LEVEL",
                   help="the intervals' confidence level, between 0 and 1 (default 0.95)")
    c.add_argument("--show", nargs="+", choices=["ci", "tests"], default=[], metavar="WHAT",
                   help="in Markdown and LaTeX (CSV and JSON lines always have both): ci, each mean's interval; "
                        "tests, a second table of every comparison (difference, its interval, p before and after "
                        "the correction, d_z, wins/ties/losses)")
    c.add_argument("--permutations", type=_positive, default=10_000,
                   help="randomization flips / bootstrap resamples / randomized Tukey trials (default 10000; seeded)")
    c.add_argument("-o", "--output", choices=["markdown", "latex", "csv", "jsonl"], default="markdown")
    c.add_argument("--plot", metavar="FILE.png", help="per-query difference chart (needs the [plot] extra)")
    c.set_defaults(handler="compare")


def _add_reproduce(sub, parents: dict) -> None:
    r = sub.add_parser("reproduce", help="how close a reproduction is: runs against the original runs (Breuer "
                       "et al., SIGIR 2020), or a table against the paper's (docs/reproduce.md)")
    rsub = r.add_subparsers(dest="reproduce_command", required=True)
    common = [parents["reading"], parents["places"]]
    ru = rsub.add_parser("runs", parents=common, help="KTU, RBO, ARP, RMSE, ER, DeltaRI and t-tests of reproduced "
                         "runs against the original baseline and advanced runs")
    ru.add_argument("qrels", help="the original runs' qrels (file or ir-datasets id); the reproduced runs' too, "
                    "unless --rep-qrels")
    for name, what in (("orig_baseline", "original baseline"), ("orig_advanced", "original advanced"),
                       ("rep_baseline", "reproduced baseline"), ("rep_advanced", "reproduced advanced")):
        ru.add_argument(name, metavar=name.upper(), help=f"the {what} run")
    ru.add_argument("--rep-qrels", metavar="QRELS", help="the reproduced runs' qrels on another collection: "
                    "unpaired t-tests, and no KTU, RBO or RMSE (default: the same qrels, paired t-tests)")
    ru.add_argument("-m", "--measures", nargs="+", required=True, metavar="MEASURE",
                    help=f"measures (put -m after the files), e.g. nDCG@10 AP {' '.join(examples())}")
    ru.add_argument("--cutoffs", nargs="+", type=int, metavar="K", help="KTU and RBO cutoffs (default: the "
                    "paper's 5 10 20 50 100 1000)")
    ru.add_argument("--rbo", choices=["truncated", "ext"], default="truncated", help="truncated: repro_eval's "
                    "normalised truncated RBO, p 0.95 (default); ext: the paper's extrapolated RBO, p 0.8")
    ru.add_argument("--rbo-p", type=float, metavar="P", help="RBO's persistence (default: the variant's)")
    ru.add_argument("--depth", type=_depth, default=1000, metavar="N",
                    help="evaluate each topic's top N documents (trec_eval's order), as repro_eval keeps its top "
                         "1000 (default 1000; 0: every document)")
    ru.add_argument("--per-topic", action="store_true", help="with -o csv or jsonl: also each topic's KTU, RBO "
                    "and measure values")
    ru.add_argument("-o", "--output", choices=["markdown", "latex", "csv", "jsonl"], default="markdown")
    ru.add_argument("--plot", metavar="FILE.png", help="per-topic differences, reproduced - original (needs "
                    "the [plot] extra)")
    ru.set_defaults(handler="reproduce")
    ta = rsub.add_parser("table", parents=common, help="a paper's printed table, cell by cell, against ours")
    ta.add_argument("published", metavar="PUBLISHED.csv", help="the paper's table: columns run, measure, value "
                    "and optionally decimals")
    ta.add_argument("qrels", help="TREC qrels file, or an ir-datasets id")
    ta.add_argument("runs", nargs="+", metavar="RUN", help="the runs; the table's run column names each by its "
                    "name (--names) or its file name, with or without extensions")
    ta.add_argument("--names", nargs="+", help="names for the runs, in order (default: file names)")
    ta.add_argument("--percent", action="store_true", help="the paper printed values x 100")
    ta.add_argument("-o", "--output", choices=["markdown", "latex", "csv", "jsonl"], default="markdown")
    ta.set_defaults(handler="reproduce")


def _add_explain(sub, parents: dict) -> None:
    x = sub.add_parser("explain", help="show how one query's score is computed",
                       parents=[parents["files"], parents["reading"], parents["places"]])
    x.add_argument("--query", required=True, help="the query id")
    x.add_argument("-m", "--measure", required=True, nargs="+", help=f"one plugin measure, e.g. {examples()[0]}")
    x.set_defaults(handler="explain")


def _add_datasets(sub) -> None:
    d = sub.add_parser("datasets", help="ir-datasets collections: seed the cache offline, show what is present")
    dsub = d.add_subparsers(dest="datasets_command", required=True, metavar="{seed,info}",
                            title="subcommands")
    ds = dsub.add_parser("seed", help="place local qrels/queries files where ir-datasets reads them")
    ds.add_argument("dataset", help="ir-datasets id, e.g. msmarco-passage/trec-dl-2019/judged")
    ds.add_argument("--qrels", metavar="FILE", help="the qrels file (plain or gzip)")
    ds.add_argument("--queries", metavar="FILE", help="the queries file, qid<TAB>text (plain or gzip)")
    ds.add_argument("--force", action="store_true", help="place the file even if its md5 or counts differ "
                    "from what ir-datasets records")
    ds.set_defaults(handler="datasets_seed")
    di = dsub.add_parser("info", help="official measures and the local state of a dataset's qrels and queries")
    di.add_argument("dataset", help="ir-datasets id")
    di.set_defaults(handler="datasets_info")


def _version_of(package: str) -> str:
    from importlib.metadata import PackageNotFoundError, version
    try:
        return version(package)
    except PackageNotFoundError:
        return "not installed"


class _Version(argparse.Action):
    """``--version``: the versions, looked up only when asked (importlib.metadata costs ~25 ms)."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS, help=None):  # noqa: A002
        super().__init__(option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        from ..version import __version__
        print(f"ndcg-plugin {__version__} (ir-measures {_version_of('ir-measures')}, "
              f"pytrec-eval-terrier {_version_of('pytrec-eval-terrier')})")
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    p = Parser(prog="ndcg-plugin", description="Ranking evaluation with explicit conventions, "
                                "checked against trec_eval.")
    p.add_argument("--version", action=_Version, help="show the versions of ndcg-plugin, ir-measures and "
                                                      "pytrec-eval-terrier and exit")
    sub = p.add_subparsers(dest="command", required=True)
    parents = _parents()
    _add_eval(sub, parents)
    _add_crosscheck(sub, parents)
    _add_compare(sub, parents)
    _add_explain(sub, parents)
    _add_reproduce(sub, parents)
    sub.add_parser("trec_eval", add_help=False,
                   help="trec_eval 10.0's command line: its flags (-q -c -n -l -M -J -m), measure names and "
                        "output, byte for byte (ndcg-plugin trec_eval --help)")
    sub.add_parser("irm", add_help=False,
                   help="the ir_measures command (QRELS RUN MEASURES, -q, -n, -o, -p, --provider) with the "
                        "plugin's measures registered (ndcg-plugin irm --help)")
    sub.add_parser("measures", help="list the plugin's measures and their parameters").set_defaults(handler="measures")
    _add_datasets(sub)
    p.commands = sub.choices  # the subcommands' parsers, by name
    return p


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """The arguments; eval's measures may also come after options (``eval Q R -p 6 nDCG@10``),
    which argparse alone leaves unrecognized once the positionals before the options are taken."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["trec_eval"]:  # trec_eval's own flags (GNU getopt), parsed by ndcg_plugin.cli.trec_eval
        return argparse.Namespace(command="trec_eval", handler="trec_eval", argv=argv[1:])
    if argv[:1] == ["irm"]:  # the ir_measures command's own arguments, parsed by it
        return argparse.Namespace(command="irm", handler="irm", argv=argv[1:])
    parser = build_parser()
    commands = ", ".join(parser.commands)
    if not argv:
        parser.error(f"give a command ({commands}), or --help or --version")
    if argv[0].startswith("-") and argv[0] not in ("-h", "--help", "--version"):
        parser.error(f"unrecognized option {argv[0]}: give a command first ({commands}), or --help or --version")
    args, rest = parser.parse_known_args(argv)
    if rest and args.command == "eval" and not any(r.startswith("-") for r in rest):
        args.measures = [*args.measures, *rest]
    elif rest:
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    if args.command == "eval":
        _files_from_measures(args, parser.commands["eval"])
    return args


def _files_from_measures(args: argparse.Namespace, parser: argparse.ArgumentParser) -> None:
    """eval in trec_eval's order, options first (``eval -m MEASURE QRELS RUN``): ``-m`` took every
    word after it, the files too; the words at the end of its list that are no measure (an
    existing path, or text that does not parse as one) are QRELS and RUN. Refused in one line when
    that does not give both."""
    from ..measures import parse_measures
    missing = [name for name in ("qrels", "run") if getattr(args, name) is None]
    if not missing:
        return
    def is_file(word: str) -> bool:
        if word == "-" or os.path.exists(word):
            return True
        try:
            parse_measures([word])
        except ValueError:
            return True
        return False

    words = list(args.more_measures)
    found: list[str] = []
    while words and len(found) < len(missing) and is_file(words[-1]):
        found.insert(0, words.pop())
    if len(found) < len(missing):
        parser.error(f"eval needs QRELS and RUN, missing {' and '.join(m.upper() for m in missing)}: put them first "
                     f"(ndcg-plugin eval QRELS RUN MEASURE ...), or after the measures of -m, as trec_eval "
                     f"takes them (ndcg-plugin eval -m MEASURE ... QRELS RUN)")
    for name, word in zip(missing, found, strict=True):
        setattr(args, name, word)
    args.more_measures = words


