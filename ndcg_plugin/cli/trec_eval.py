"""``ndcg-plugin trec_eval``'s command line: trec_eval 10.0's flags (GNU getopt, short and long
forms) read into :class:`ndcg_plugin.trec_eval.command.Options`, the help and the version, and
the output and exit status of :func:`ndcg_plugin.trec_eval.command.evaluate`'s report, as
trec_eval 10.0's: 0; 1 (an unknown measure, a usage error); 2 (an input, a measure it cannot
initialise); 4 (a qrels query missing from the run, without -c). ``-l`` and ``-M`` are read by
C's atol (``-M abc`` is 0), ``-v`` prints on stderr."""
from __future__ import annotations

import getopt
import sys
from collections.abc import Sequence
from typing import Any

from ..errors import InputError, UsageError
from ..measures.parsing import examples
from ..trec_eval.command import VERSION, Options, TrecEvalStatus, atol, evaluate
from ..trec_eval.report import MissingQuery
from .terminal import say

SHORT = "hvqm:cl:nD:N:M:JR:T:Z:"
LONG = ["help", "version", "query_eval_wanted", "measure=", "complete_rel_info_wanted", "level_for_rel=",
        "nosummary", "Debug_level=", "Number_docs_in_coll=", "Max_retrieved_per_topic=", "Judged_docs_only",
        "Rel_info_format=", "Results_format=", "Zscore="]

EXAMPLE = examples()[0]
USAGE = f"""usage: ndcg-plugin trec_eval [-q] [-c] [-n] [-l N] [-M N] [-J] [-m MEASURE[.PARAMS]]... QRELS RUN

trec_eval {VERSION}'s command line and output, computed by the plugin's engine and pytrec_eval
(see docs/cli.md for what is and is not computed).

positional arguments:
  QRELS                 qrels file (TREC format)
  RUN                   results file (TREC format)

options:
  -h, --help            show this help and exit
  -v, --version         print the trec_eval version emulated and exit
  -q, --query_eval_wanted
                        per-query lines before the summary
  -m, --measure MEASURE[.PARAMS]
                        a measure, trec_eval's names (official, all_trec, P.5,10, ndcg_cut.10, ...) or
                        the plugin's ({EXAMPLE}); repeatable; default official
  -c, --complete_rel_info_wanted
                        average over every qrels query (a query missing from the run has an empty ranking)
  -l, --level_for_rel N
                        lowest label counted relevant by binary measures (default 1)
  -n, --nosummary       no summary lines
  -M, --Max_retrieved_per_topic N
                        each query's top N only (score descending, then doc id descending)
  -J, --Judged_docs_only
                        evaluate over judged documents only
  -R, --Rel_info_format qrels
                        only qrels (the default) is read
  -T, --Results_format trec_results
                        only trec_results (the default) is read
  -D, --Debug_level N   refused (trec_eval debugging output)
  -N, --Number_docs_in_coll N
                        refused (pytrec_eval takes no collection size)
  -Z, --Zscore FILE     refused (z-scores are not computed)
"""

#: the flags that set an option to a constant: flag -> (Options field, value)
SWITCHES = {"-q": ("per_query", True), "--query_eval_wanted": ("per_query", True),
            "-c": ("complete", True), "--complete_rel_info_wanted": ("complete", True),
            "-n": ("summary", False), "--nosummary": ("summary", False),
            "-J": ("judged_only", True), "--Judged_docs_only": ("judged_only", True)}


def _max_docs(text: str) -> int:
    """-M as trec_eval reads it (atol: ``-M abc`` is 0); below 0 trec_eval crashes (a segmentation
    fault): refused."""
    value = atol(text)
    if value < 0:
        raise UsageError(f"trec_eval -M: expected an integer >= 0, got {text!r} (trec_eval {VERSION} crashes on a "
                         f"negative -M)")
    return value


def _refused(flag: str, value: str) -> None:
    """A UsageError for a flag this command does not take, or a format other than trec_eval's default."""
    if flag in ("-R", "--Rel_info_format") and value != "qrels":
        raise UsageError(f"trec_eval -R: only the qrels format is read, got {value!r}")
    if flag in ("-T", "--Results_format") and value != "trec_results":
        raise UsageError(f"trec_eval -T: only the trec_results format is read, got {value!r}")
    if flag in ("-D", "--Debug_level", "-N", "--Number_docs_in_coll", "-Z", "--Zscore"):
        raise UsageError(f"trec_eval {flag} is not supported by ndcg-plugin trec_eval (run trec_eval itself)")


def parse(argv: Sequence[str]) -> Options:
    """trec_eval's options (SystemExit(0) after printing the help or the version)."""
    try:
        opts, rest = getopt.gnu_getopt(list(argv), SHORT, LONG)
    except getopt.GetoptError as e:  # trec_eval: its usage on stderr, status 1
        raise TrecEvalStatus(f"trec_eval: {e} (see ndcg-plugin trec_eval --help)", 1) from None
    given: dict[str, Any] = {}
    measures: list[str] = []
    for flag, value in opts:
        if flag in ("-h", "--help"):  # as argparse does
            print(USAGE, end="")
            raise SystemExit(0)
        if flag in ("-v", "--version"):
            from ..version import __version__
            if sys.stderr is not None:  # as trec_eval prints it (print to None would write on stdout)
                print(f"trec_eval version {VERSION} (ndcg-plugin {__version__})", file=sys.stderr)
            raise SystemExit(0)
        if flag in SWITCHES:
            name, setting = SWITCHES[flag]
            given[name] = setting
        elif flag in ("-l", "--level_for_rel"):
            given["level"] = atol(value)  # as trec_eval reads it: -l abc is 0
        elif flag in ("-M", "--Max_retrieved_per_topic"):
            given["max_docs"] = _max_docs(value)
        elif flag in ("-m", "--measure"):
            measures.append(value)
        else:
            _refused(flag, value)
    if len(rest) != 2:  # trec_eval: its usage on stderr, status 1
        raise TrecEvalStatus(f"trec_eval takes two files, QRELS and RUN, got {len(rest)}: {' '.join(rest) or 'none'} "
                         f"(see ndcg-plugin trec_eval --help)", 1)
    return Options(*rest, measures=tuple(measures or ["official"]), **given)


def main(argv: Sequence[str]) -> int:
    """The command: 0; 1 (an unknown measure or a usage error), 2 (an input, or a measure trec_eval
    cannot initialise) and 4 (a qrels query missing from the run, without -c), as trec_eval 10.0."""
    try:
        o = parse(argv)
        report = evaluate(o)
    except TrecEvalStatus as e:
        say(f"error: {e}")
        return e.status
    except MissingQuery as e:
        missing, before = e.args
        if o.per_query:
            sys.stdout.write(before.query_lines())
        sys.stdout.flush()
        print(f"ndcg-plugin trec_eval: qrels query {missing!r} has no line in the run {o.run}: trec_eval {VERSION} "
              f"stops here with status 4 (its message: result qid {missing!r} not found in qrels); give -c to "
              f"evaluate it with an empty ranking", file=sys.stderr)
        return 4
    except ValueError as e:
        if isinstance(e, (InputError, UsageError)):
            raise
        raise UsageError(f"trec_eval: {e}") from None
    if o.per_query:
        sys.stdout.write(report.query_lines())
    if o.summary:
        sys.stdout.write(report.summary_lines())
    return 0
