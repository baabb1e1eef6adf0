"""Compare runs: per run, each measure's aggregate (as ``ndcg-plugin eval`` prints it) and
paired significance tests against a baseline, with a multiple-comparison correction. The
result is a :class:`Comparison`; :mod:`ndcg_plugin.compare.writers` lays it out (Markdown,
LaTeX booktabs, CSV, JSON lines, a per-query difference plot).

Each measure is computed as ``eval`` computes it (:class:`ndcg_plugin.evaluation.Evaluation`:
the plugin's engine for the measures it computes, with trec_eval's conventions, ir-measures
for the others), so a table's numbers are ``eval``'s numbers: an item-level measure's is the
micro average, a measure that leaves misses out gives the mean over the queries with a value.

Tests are paired over the qrels queries, with each measure's own conventions: a query missing
from a run scores 0 (for the measures the engine computes; another provider's measure pairs
the queries it yields a value for in both runs), and a measure that leaves misses out pairs
only the queries that have a value in both runs.

- ``t``: paired t-test (``scipy.stats.ttest_rel``);
- ``randomization``: Fisher's paired randomization test, two-sided, on the mean difference;
  exact (all 2^n sign flips) when 2^n <= ``permutations``, otherwise ``permutations`` random
  flips from a seeded generator, vectorized;
- ``bootstrap``: paired bootstrap of the mean difference (``permutations`` resamples of the
  queries, seeded); the p-value of the shifted null and a 95% percentile interval.

Corrections over the (run, measure) comparisons: ``holm`` (Holm-Bonferroni, default),
``bonferroni`` or ``none``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from .. import reading
from ..evaluation import Evaluation
from ..measures import parse_measures

TESTS = ("t", "randomization", "bootstrap")
CORRECTIONS = ("holm", "bonferroni", "none")


@dataclass
class Test:
    """One run against the baseline on one measure."""
    pvalue: float                  # corrected
    significant: bool              # pvalue < alpha
    interval: tuple[float, float] | None = None  # bootstrap: 95% interval of the mean difference


@dataclass
class Comparison:
    """What :func:`compare` found (cf. ranx's ``Report``): per run, each measure's aggregate and
    per-query values, and each non-baseline run's :class:`Test` against the baseline."""
    runs: list[str]
    measures: list                 # the measure objects, in the order asked
    baseline: str
    test: str
    correction: str
    alpha: float
    means: dict[str, dict[str, float]] = field(default_factory=dict)   # run -> measure -> aggregate
    per_query: dict[str, dict[str, pd.Series]] = field(default_factory=dict)  # run -> measure -> values
    tests: dict[tuple[str, str], Test] = field(default_factory=dict)   # (run, measure) -> test
    #: (run, measure) -> why it has no test (no query with a value in both runs: no p-value from nothing)
    untested: dict[tuple[str, str], str] = field(default_factory=dict)

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

    def table(self) -> pd.DataFrame:
        """One row per run: the aggregates, then for each non-baseline run the corrected p-value
        (``p:<measure>``), significance (``sig:<measure>``) and, for bootstrap, the interval
        (``ci:<measure>``)."""
        rows = {}
        for name in self.runs:
            row: dict[str, Any] = dict(self.means[name])
            for m in self.measure_names:
                t = self.tests.get((name, m))
                if t is not None:
                    row[f"p:{m}"] = t.pvalue
                    row[f"sig:{m}"] = t.significant
                    if t.interval is not None:
                        row[f"ci:{m}"] = t.interval
            rows[name] = row
        return pd.DataFrame.from_dict(rows, orient="index")


def per_query(ev: Evaluation, run: Any) -> tuple[dict, dict]:
    """({measure: aggregate}, {measure: pd.Series of per-query values over the qrels queries})
    for one run (a table), both as ``eval`` computes them (``ev``: the measures on a qrels table)."""
    results = ev.compute(run, per_query=True)
    values: dict = {m: {} for m in ev.measures}
    for metric in results.metrics():
        values[metric.measure][metric.query_id] = float(metric.value)
    qids = sorted(set(ev.qrels["query_id"]))
    aggregates = {str(m): float(v) for m, v in results.aggregates.items()}
    return aggregates, {str(m): pd.Series(v, dtype=float).reindex(qids) for m, v in values.items()}


def _may_have_no_value(measure) -> bool:
    """Whether a query may have no value (NaN, the measure's DEFAULT): a measure that leaves misses out."""
    return math.isnan(float(getattr(measure, "DEFAULT", 0.0)))


def randomization_test(d: np.ndarray, permutations: int, seed: int) -> float:
    n = len(d)
    observed = abs(d.mean())
    if n == 0:
        return 1.0
    if 2 ** n <= permutations:  # exact: every sign flip
        signs = ((np.arange(2 ** n)[:, None] >> np.arange(n)) & 1) * 2 - 1
        means = np.abs(signs @ d) / n
        return float(np.mean(means >= observed - 1e-12))
    rng = np.random.default_rng(seed)
    count = 0
    done = 0
    while done < permutations:
        b = min(1000, permutations - done)
        signs = rng.integers(0, 2, size=(b, n)) * 2 - 1
        count += int(np.sum(np.abs(signs @ d) / n >= observed - 1e-12))
        done += b
    return (count + 1) / (permutations + 1)


def bootstrap_test(d: np.ndarray, resamples: int, seed: int) -> tuple[float, float, float]:
    n = len(d)
    if n == 0:
        return 1.0, math.nan, math.nan
    rng = np.random.default_rng(seed)
    means = []
    for lo in range(0, resamples, 1000):
        idx = rng.integers(0, n, size=(min(1000, resamples - lo), n))
        means.append(d[idx].mean(axis=1))
    boot = np.concatenate(means)
    shifted = boot - d.mean()  # the null: no mean difference
    p = float((np.sum(np.abs(shifted) >= abs(d.mean()) - 1e-12) + 1) / (resamples + 1))
    lo, hi = np.percentile(boot, [2.5, 97.5])
    return p, float(lo), float(hi)


def t_test(d_a: np.ndarray, d_b: np.ndarray) -> float:
    from scipy import stats
    if len(d_a) < 2 or np.allclose(d_a, d_b):
        return 1.0
    return float(stats.ttest_rel(d_a, d_b).pvalue)


def correct_pvalues(pvalues: list[float], method: str) -> list[float]:
    m = len(pvalues)
    if method == "none" or m == 0:
        return list(pvalues)
    if method == "bonferroni":
        return [min(1.0, p * m) for p in pvalues]
    order = np.argsort(pvalues)
    adjusted = np.empty(m)
    running = 0.0
    for rank, i in enumerate(order):  # Holm: step down, monotone
        running = max(running, min(1.0, (m - rank) * pvalues[i]))
        adjusted[i] = running
    return adjusted.tolist()


def compare(qrels: Any, runs: dict, measures: list, *, baseline: str | None = None, test: str = "t",
            correction: str = "holm", alpha: float = 0.05, permutations: int = 10_000, seed: int = 0) -> Comparison:
    """Compare ``runs`` ({name: run in any form :func:`ndcg_plugin.read` takes}) on ``measures``
    against ``baseline`` (default: the first run); see the module docstring."""
    if test not in TESTS:
        raise ValueError(f"test must be 't', 'randomization' or 'bootstrap', got {test!r}")
    if correction not in CORRECTIONS:
        raise ValueError(f"correction must be 'holm', 'bonferroni' or 'none', got {correction!r}")
    measures = parse_measures(measures)
    names = list(runs)
    if not names:
        raise ValueError("give at least one run")
    baseline = baseline or names[0]
    if baseline not in runs:
        raise ValueError(f"baseline {baseline!r} is not one of the runs {names}")
    ev = Evaluation(measures, qrels=reading.read(qrels, "qrels"))  # routed once, the qrels indexed once
    result = Comparison(names, measures, baseline, test, correction, alpha)
    for name, run in runs.items():
        result.means[name], result.per_query[name] = per_query(ev, reading.read(run, "run", queries=ev.queries))
    found = []
    for name in names:
        if name == baseline:
            continue
        for m in result.measure_names:
            a, b = result.per_query[name][m], result.per_query[baseline][m]
            both = a.notna() & b.notna()  # queries with a value in both runs
            if not both.any():
                result.untested[(name, m)] = f"no query has a value for {m} in both {name} and {baseline}"
                continue
            found.append((name, m, *_paired(a[both].to_numpy(), b[both].to_numpy(), test, permutations, seed)))
    adjusted = correct_pvalues([f[2] for f in found], correction)
    for (name, m, _, interval), p in zip(found, adjusted, strict=True):
        result.tests[(name, m)] = Test(p, bool(p < alpha), interval)
    return result


def _paired(x: np.ndarray, y: np.ndarray, test: str, permutations: int, seed: int) -> tuple[float, tuple | None]:
    """(p-value, bootstrap interval or None) of x against y, paired."""
    if test == "t":
        return t_test(x, y), None
    if test == "randomization":
        return randomization_test(x - y, permutations, seed), None
    p, lo, hi = bootstrap_test(x - y, permutations, seed)
    return p, (lo, hi)
