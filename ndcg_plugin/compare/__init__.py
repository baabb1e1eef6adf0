"""Compare runs: per run, each measure's aggregate (as ``ndcg-plugin eval`` prints it) with a
confidence interval, and paired comparisons, against one or more baselines or every run against
every other (``all_pairs``): the mean difference with its interval, an effect size, wins/ties/
losses over queries, and a significance test with a multiple-comparison correction. The result
is a :class:`Comparison`; :mod:`ndcg_plugin.compare.writers` lays it out (Markdown, LaTeX
booktabs, CSV, JSON lines, a per-query difference plot). docs/compare.md defines every number.

Each measure is computed as ``eval`` computes it (:class:`ndcg_plugin.evaluation.Evaluation`:
the plugin's engine for the measures it computes, with trec_eval's conventions, ir-measures
for the others), so a table's numbers are ``eval``'s numbers: an item-level measure's is the
micro average, a measure that leaves misses out gives the mean over the queries with a value.
A run file is streamed once (when the engine computes every measure), keeping only its
per-query values: memory grows with queries x runs x measures, not with run lines.

Tests are paired over the qrels queries, with each measure's own conventions: a query missing
from a run scores 0 (for the measures the engine computes; another provider's measure pairs
the queries it yields a value for in both runs), and a measure that leaves misses out pairs
only the queries that have a value in both runs.

- ``t``: paired t-test (``scipy.stats.ttest_rel``);
- ``randomization``: Fisher's paired randomization test, two-sided, on the mean difference;
  exact (all 2^n sign flips) when 2^n <= ``permutations``, otherwise ``permutations`` random
  flips from a seeded generator, vectorized;
- ``bootstrap``: paired bootstrap of the mean difference (``permutations`` resamples of the
  queries, seeded); the p-value of the shifted null;
- ``tukey`` (with ``all_pairs``): Tukey's HSD with queries as blocks, per measure;
- ``randomized-tukey`` (with ``all_pairs``): Carterette's (2012) randomized Tukey HSD, per measure.

Corrections over every comparison of the table (each pair of runs on each measure): ``holm``
(Holm-Bonferroni, default), ``bonferroni`` or ``none``; the Tukey tests correct over the pairs
of each measure themselves.
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from .. import reading
from ..evaluation import Evaluation, ReadOptions
from ..measures import parse_measures
from ..measures.aggregate import ExactSumAgg, per_query_values
from .pairs import Test, run_tests
from .stats import (
    bootstrap_test,
    correct_pvalues,
    effect_sizes,
    mean_interval,
    randomization_test,
    randomization_tests,
    randomized_tukey_hsd,
    t_test,
    tukey_hsd,
    wins_ties_losses,
)

__all__ = ["Comparison", "Test", "bootstrap_test", "compare", "correct_pvalues", "effect_sizes",
           "mean_interval", "randomization_test", "randomization_tests", "t_test", "tukey_hsd",
           "randomized_tukey_hsd", "wins_ties_losses"]

PAIRWISE_TESTS = ("t", "randomization", "bootstrap")
FAMILY_TESTS = ("tukey", "randomized-tukey")
TESTS = PAIRWISE_TESTS + FAMILY_TESTS
CORRECTIONS = ("holm", "bonferroni", "none")
CIS = ("t", "bootstrap")


@dataclass
class Comparison:
    """What :func:`compare` found (cf. ranx's ``Report``): per run, each measure's aggregate, its
    confidence interval and per-query values; :attr:`tests` each comparison made, by (run, other,
    measure), in both directions."""
    runs: list[str]
    measures: list                 # the measure objects, in the order asked
    baselines: list[str]           # empty in all-pairs mode
    test: str
    correction: str
    alpha: float
    ci: str = "t"
    ci_level: float = 0.95
    all_pairs: bool = False
    means: dict[str, dict[str, float]] = field(default_factory=dict)   # run -> measure -> aggregate
    intervals: dict[tuple[str, str], tuple[float, float]] = field(default_factory=dict)  # (run, measure)
    per_query: dict[str, dict[str, pd.Series]] = field(default_factory=dict)  # run -> measure -> values
    tests: dict[tuple[str, str, str], Test] = field(default_factory=dict)     # (run, other, measure)

    @property
    def baseline(self) -> str:
        """The first baseline (all-pairs: the first run)."""
        return self.baselines[0] if self.baselines else self.runs[0]

    @property
    def untested(self) -> dict[tuple[str, str, str], str]:
        """(run, other, measure) -> why the pair has no test: no query has a value in both runs (a
        measure that leaves misses out, against a run without a hit), so no p-value is made from
        nothing. Each pair once, in the direction of its test (a run against its baseline;
        all-pairs: the earlier run against the later)."""
        from .pairs import pairs_of
        return {(r, o, m): f"no query has a value for {m} in both {r} and {o}"
                for r, o in pairs_of(self) for m in self.measure_names
                if (r, o, m) in self.tests and self.tests[(r, o, m)].pairs == 0}

    @property
    def measure_names(self) -> list[str]:
        return [str(m) for m in self.measures]

    @property
    def valued_only(self) -> list[str]:
        """The names of the measures that pair only the queries with a value in both runs (those
        that leave misses out)."""
        return list(dict.fromkeys(m.NAME for m in self.measures if _may_have_no_value(m)))

    @property
    def pairs_valued_only(self) -> bool:
        """Whether some measure pairs only the queries with a value in both runs."""
        return bool(self.valued_only)

    @property
    def letters(self) -> dict[str, str]:
        """All-pairs mode: each run's letter (a-z, then A-Z, then two letters), in run order."""
        alphabet = [chr(c) for c in range(ord("a"), ord("z") + 1)] + [chr(c) for c in range(ord("A"), ord("Z") + 1)]
        if len(self.runs) > len(alphabet):
            alphabet = [a + b for a in alphabet for b in alphabet]
        return dict(zip(self.runs, alphabet, strict=False))

    def better_than(self, run: str, measure: str) -> list[str]:
        """The runs that ``run`` is significantly better than on ``measure`` (a higher mean, corrected
        p < alpha), in run order."""
        return [o for o in self.runs if o != run and (t := self.tests.get((run, o, measure))) is not None
                and t.significant and t.diff > 0]

    def table(self) -> pd.DataFrame:
        """One row per run: each measure's aggregate and interval (``ci_low:<m>``, ``ci_high:<m>``);
        all-pairs mode: the run's ``letter`` and the letters of the runs it is significantly better
        than (``better:<m>``); baseline mode: the comparison with each baseline (columns of
        :data:`PAIR_COLUMNS` named ``<column>:<m>``, with ``:<baseline>`` after them when there are
        several baselines)."""
        rows = {}
        letters = self.letters
        for name in self.runs:
            row: dict[str, Any] = {"letter": letters[name]} if self.all_pairs else {}
            for m in self.measure_names:
                lo, hi = self.intervals.get((name, m), (math.nan, math.nan))
                row.update({m: self.means[name][m], f"ci_low:{m}": lo, f"ci_high:{m}": hi})
            for m in self.measure_names:
                if self.all_pairs:
                    row[f"better:{m}"] = "".join(letters[o] for o in self.better_than(name, m))
                for b in self.baselines:
                    t = self.tests.get((name, b, m))
                    if t is not None:
                        suffix = f":{b}" if len(self.baselines) > 1 else ""
                        row.update({f"{c}:{m}{suffix}": v for c, v in _pair_values(t).items()})
            rows[name] = row
        return _counts_as_int(pd.DataFrame.from_dict(rows, orient="index"))

    def pairs(self) -> pd.DataFrame:
        """Every comparison made, one row per (run, against, measure) in the direction tested (all-pairs:
        each earlier run against each later one; baseline mode: each run against each baseline)."""
        rows = [{"run": r, "against": o, "measure": m, **_pair_values(t)} for (r, o, m), t in self.tests.items()
                if _listed(self, r, o)]
        return _counts_as_int(pd.DataFrame(rows, columns=["run", "against", "measure", *PAIR_COLUMNS]))


def _counts_as_int(frame: pd.DataFrame) -> pd.DataFrame:
    """The counts (wins, ties, losses, pairs) as integers, with gaps (a run against itself)."""
    counts = [c for c in frame.columns if c.split(":")[0] in ("wins", "ties", "losses", "pairs")]
    return frame.astype({c: "Int64" for c in counts})


#: the columns of each comparison (:meth:`Comparison.pairs`, and the table's baseline columns)
PAIR_COLUMNS = ["diff", "diff_low", "diff_high", "p", "raw_p", "sig", "d_z", "g_z", "wins", "ties", "losses", "pairs"]


def _pair_values(t: Test) -> dict:
    lo, hi = t.interval if t.interval is not None else (math.nan, math.nan)
    return dict(zip(PAIR_COLUMNS, [t.diff, lo, hi, t.pvalue, t.raw_pvalue, t.significant, t.d_z, t.g_z, t.wins,
                                   t.ties, t.losses, t.pairs], strict=True))


def _listed(result: Comparison, run: str, other: str) -> bool:
    if result.all_pairs:
        return result.runs.index(run) < result.runs.index(other)
    return other in result.baselines and (run not in result.baselines or
                                          result.baselines.index(run) > result.baselines.index(other))


def _may_have_no_value(measure) -> bool:
    """Whether a query may have no value (NaN, the measure's DEFAULT): a measure that leaves misses out."""
    return math.isnan(float(getattr(measure, "DEFAULT", 0.0)))


def _is_mean(measure) -> bool:
    """Whether the measure's aggregate is the mean of its per-query values (not a sum, not a micro average)."""
    from ir_measures.measures.base import MeanAgg

    from ..measures.aggregate import ExactMeanAgg
    agg = measure.aggregator()
    return isinstance(agg, (MeanAgg, ExactMeanAgg)) and not isinstance(agg, ExactSumAgg)


def per_query(ev: Evaluation, run: Any) -> tuple[dict, dict]:
    """({measure: aggregate}, {measure: pd.Series of per-query values over the qrels queries, sorted})
    for one run (a file, which streams when the engine computes every measure, or a table), both as
    ``eval`` computes them (``ev``: the measures on a qrels)."""
    results = ev.compute(run, per_query=True)
    columns: dict = {}
    for m, vals in results.values.items():
        columns[m] = pd.Series(np.asarray(per_query_values(vals.values, vals.hits, vals.returned), dtype=float),
                               index=list(results.query_ids))
    others: dict = {m: {} for m in ev.measures if m not in columns}
    for metric in results.others:
        others[metric.measure][metric.query_id] = float(metric.value)
    qids = sorted(results.query_ids) if results.query_ids else sorted(map(str, ev.queries.to_pylist()))
    aggregates = {str(m): float(v) for m, v in results.aggregates.items()}
    series = {**columns, **{m: pd.Series(v, dtype=float) for m, v in others.items()}}
    return aggregates, {str(m): series[m].reindex(qids) for m in ev.measures}


def _named(runs: Any) -> dict:
    """{name: run}: a dict as given, a list or tuple named by position ("0", "1", ...)."""
    if isinstance(runs, dict):
        return {str(k): v for k, v in runs.items()}
    if isinstance(runs, (list, tuple)):
        return {str(i): r for i, r in enumerate(runs)}
    raise TypeError(f"runs must be a dict {{name: run}} or a list of runs (files, DataFrames or dicts, named "
                    f"by position: '0', '1', ...), got {type(runs).__name__}")


def _stems(name: str) -> list[str]:
    """A name and the name without each of its extensions: bm25.trec.gz, bm25.trec, bm25."""
    out = [name]
    while "." in out[-1].strip("."):
        out.append(out[-1].rsplit(".", 1)[0])
    return out


def resolve_run(name: Any, names: list[str]) -> str:
    """A run named by its name, its position (an int), its file name, or its file name without
    extensions when no other run has that stem (as ``reproduce table`` names runs); a ValueError
    naming the runs otherwise."""
    if isinstance(name, int) and not isinstance(name, bool) and 0 <= name < len(names):
        return names[name]
    text = str(name)
    for candidate in (text, os.path.basename(text)):
        if candidate in names:
            return candidate
        for stem in _stems(candidate):
            found = [n for n in names if stem in _stems(n)]
            if len(found) == 1:
                return found[0]
            if found:
                raise ValueError(f"baseline {text!r} names several runs ({', '.join(found)}): give its full name")
    raise ValueError(f"baseline {text!r} is not one of the runs {names} (give a run's name, file name or file "
                     "name without extensions)")


def _check(test: str, correction: str | None, ci: str | None, ci_level: float, all_pairs: bool,
           baselines: list) -> tuple[str, str]:
    if test not in TESTS:
        raise ValueError(f"test must be one of {', '.join(TESTS)}, got {test!r}")
    if test in FAMILY_TESTS:
        if not all_pairs:
            raise ValueError(f"test {test!r} compares every pair of runs: use it with all_pairs (--all-pairs)")
        if correction not in (None, "none"):
            raise ValueError(f"test {test!r} corrects over the pairs itself: leave the correction out")
        correction = "none"
    correction = correction or "holm"
    if correction not in CORRECTIONS:
        raise ValueError(f"correction must be one of {', '.join(CORRECTIONS)}, got {correction!r}")
    ci = ci or ("bootstrap" if test == "bootstrap" else "t")
    if ci not in CIS:
        raise ValueError(f"ci must be 't' or 'bootstrap', got {ci!r}")
    if not (isinstance(ci_level, (int, float)) and 0 < ci_level < 1):
        raise ValueError(f"ci_level must be between 0 and 1 (exclusive), got {ci_level!r}")
    if all_pairs and baselines:
        raise ValueError("all_pairs compares every run with every other: give no baseline with it")
    return correction, ci


def compare(qrels: Any, runs: Any, measures: list, *, baseline: Any = None, test: str = "t",
            correction: str | None = None, alpha: float = 0.05, permutations: int = 10_000, seed: int = 0,
            ci: str | None = None, ci_level: float = 0.95, all_pairs: bool = False, run_format: str = "auto",
            duplicates: str = "error") -> Comparison:
    """Compare ``runs`` ({name: run}, or a list of runs named by position, each in any form
    :func:`ndcg_plugin.read` takes) on ``measures``, against ``baseline`` (a run's name or position,
    or a list of them; default: the first run), or every run against every other (``all_pairs``).
    ``ci``: the intervals' method, ``t`` (default) or ``bootstrap`` (default with the bootstrap
    test), at ``ci_level``; ``correction``: holm (default), bonferroni or none. See the module docstring."""
    named = _named(runs)
    names = list(named)
    if not names:
        raise ValueError("give at least one run")
    given = [] if baseline is None else list(baseline) if isinstance(baseline, (list, tuple)) else [baseline]
    correction, ci = _check(test, correction, ci, ci_level, all_pairs, given)
    baselines = list(dict.fromkeys(resolve_run(b, names) for b in given)) or ([] if all_pairs else names[:1])
    measures = parse_measures(measures)
    options = ReadOptions(run_format, duplicates)
    if not reading.is_file_like(qrels):
        qrels = reading.read(qrels, "qrels")
    ev = Evaluation(measures, qrels=qrels, options=options)  # routed once, the qrels indexed once
    result = Comparison(names, measures, baselines, test, correction, alpha, ci, ci_level, all_pairs)
    for name, run in named.items():
        if not reading.is_file_like(run):
            run = reading.read(run, "run", queries=ev.queries, duplicates=duplicates)
        result.means[name], result.per_query[name] = per_query(ev, run)
        for m in measures:
            values = result.per_query[name][str(m)].dropna().to_numpy()
            result.intervals[(name, str(m))] = (mean_interval(values, ci, ci_level, permutations, seed)
                                                if _is_mean(m) else (math.nan, math.nan))
    run_tests(result, permutations, seed)
    return result
