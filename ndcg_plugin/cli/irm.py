"""``ndcg-plugin irm``: the ``ir_measures`` command itself (its arguments, output and numbers), in a
process where the plugin's measures are registered (ir-measures has no plugin discovery, so the
``ir_measures`` command alone does not know them), with ``eval``'s failure paths: one line on
stderr and exit status 2 for a usage error, an unknown or invalid measure (``nDCG@0`` made
pytrec_eval abort), a file that is missing, a directory or cannot be read (EIO), and a bad line
(named by file and line, as ``eval`` names it), where the command alone prints a traceback (exit 1),
exits 255 or dies of SIGABRT."""
from __future__ import annotations

import os
import stat
import sys
from collections.abc import Callable, Sequence

import ir_measures

from ..errors import InputError, UsageError
from ..measures import parse_measures
from .parser import Parser, places_option


def _parser() -> Parser:
    """The ``ir_measures`` command's arguments (ir_measures.__main__.main_cli), checked here first
    so that a usage error is one line; the command then parses them again itself."""
    p = Parser(prog="ndcg-plugin irm", add_help=False)
    p.add_argument("qrels")
    p.add_argument("run")
    p.add_argument("measures", nargs="+")
    p.add_argument("--places", "-p", type=places_option, default=4)
    p.add_argument("--by_query", "-q", action="store_true")
    p.add_argument("--no_summary", "-n", action="store_true")
    p.add_argument("--output_format", "-o", choices=["tsv", "jsonl"], default="tsv")
    p.add_argument("--provider", choices=sorted(ir_measures.providers.registry))
    return p


def _check_file(path: str) -> None:
    """A regular file that exists (ir_measures opens RUN, and QRELS when it is a path, as text)."""
    try:
        mode = os.stat(path).st_mode
    except OSError as e:
        raise InputError(path, None, f"cannot be read: {e.strerror or e}") from None
    if stat.S_ISDIR(mode):
        raise InputError(path, None, "is a directory, expected a qrels or run file")
    if not stat.S_ISREG(mode):
        raise InputError(path, None, "is not a regular file (irm reads its files with ir_measures, which needs one)")


def _unreadable(files: list[tuple[str, str]]) -> str:
    """The file of ``files`` whose read fails (an OSError without a file name: EIO)."""
    for path, _ in files:
        try:
            with open(path, "rb") as f:
                while f.read(1 << 20):
                    pass
        except OSError:
            return path
    return "an input file"


def _diagnosed(error: Exception, files: list[tuple[str, str]]) -> Exception:
    """The error ``eval`` would give for a file ir_measures could not parse: the plugin's reader
    names the file and line; or ``error`` as one line when the reader finds nothing wrong."""
    from ..reading import read
    for path, kind in files:
        try:
            read(path, kind, duplicates="first", **({"run_format": "trec"} if kind == "run" else {}))
        except InputError as found:
            return found
        except (OSError, ValueError):
            continue
    return UsageError(f"ir_measures: {error}")


def main(argv: Sequence[str], qrels_source: Callable[[str], str | None]) -> int:
    """Run the ``ir_measures`` command on ``argv``. ``qrels_source(QRELS)``: QRELS as a file path, or
    None for an ir-datasets id; an InputError when it is neither (eval's rule and message)."""
    from ir_measures.__main__ import main_cli  # ir-measures' documented command entry point
    argv, files = list(argv), []
    if not any(a in ("-h", "--help") for a in argv):
        args = _parser().parse_args(argv)
        if args.no_summary and not args.by_query:
            raise UsageError("ir_measures: --no_summary (-n) only supported with --by_query (-q)")
        try:
            parse_measures(args.measures)  # unknown names (with a suggestion), cutoffs < 1
        except ValueError as e:
            raise UsageError(str(e)) from None
        files = [(path, kind) for path, kind in ((qrels_source(args.qrels), "qrels"), (args.run, "run")) if path]
        for path, _ in files:
            _check_file(path)
    saved = sys.argv
    sys.argv = ["ndcg-plugin irm", *argv]
    try:
        main_cli()
    except BrokenPipeError:
        raise
    except OSError as e:  # EIO, a file removed meanwhile
        raise InputError(e.filename or _unreadable(files), None, f"cannot be read: {e.strerror or e}") from None
    except ValueError as e:  # a line ir_measures could not split or convert
        raise _diagnosed(e, files) from None
    finally:
        sys.argv = saved
    return 0
