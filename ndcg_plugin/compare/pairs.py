"""The comparisons of a :class:`ndcg_plugin.compare.Comparison`: which pairs of runs are compared
(each run against each baseline, or every pair), each pair's statistics on each measure, the
p-values of the test asked for, and their correction over the whole family."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from .stats import (
    bootstrap_test,
    bootstrap_tests,
    correct_pvalues,
    effect_sizes,
    mean_interval,
    randomization_test,
    randomization_tests,
    randomized_tukey_hsd,
    sign_flips,
    t_test,
    tukey_hsd,
    wins_ties_losses,
)


@dataclass
class Test:
    """One run against another on one measure: differences are the run's minus the other's."""
    pvalue: float                  # corrected (NaN: no pair to test)
    significant: bool              # pvalue < alpha
    interval: tuple[float, float] | None = None  # the confidence interval of the mean difference
    diff: float = math.nan         # the mean of the paired differences
    raw_pvalue: float = math.nan   # before the correction
    d_z: float = math.nan          # Cohen's d_z: mean / sd of the differences
    g_z: float = math.nan          # Hedges' correction of d_z
    wins: int = 0                  # queries where the run scores higher
    ties: int = 0
    losses: int = 0
    pairs: int = 0                 # the paired queries

    def reversed(self) -> Test:
        """The other run against this one."""
        lo, hi = self.interval if self.interval is not None else (math.nan, math.nan)
        return Test(self.pvalue, self.significant, (-hi, -lo), -self.diff, self.raw_pvalue, -self.d_z, -self.g_z,
                    self.losses, self.ties, self.wins, self.pairs)


def pairs_of(result: Any) -> list[tuple[str, str]]:
    """(run, other) pairs, each unordered pair once: all-pairs, each earlier run against each later
    one (differences: the earlier minus the later); else each run against each baseline."""
    if result.all_pairs:
        return [(a, b) for i, a in enumerate(result.runs) for b in result.runs[i + 1:]]
    out, seen = [], set()
    for b in result.baselines:
        for r in result.runs:
            if r != b and frozenset((r, b)) not in seen:
                seen.add(frozenset((r, b)))
                out.append((r, b))
    return out


def paired(values: dict, run: str, other: str, measure: str) -> tuple[np.ndarray, np.ndarray]:
    """The two runs' values on the queries with a value in both (``values``: {(run, measure): array})."""
    a, b = values[(run, measure)], values[(other, measure)]
    both = ~(np.isnan(a) | np.isnan(b))
    return a[both], b[both]


def describe(x: np.ndarray, y: np.ndarray, result: Any, permutations: int, seed: int) -> Test:
    """The statistics of x against y (paired), without a p-value."""
    d = x - y
    n = len(d)
    dz, gz = effect_sizes(d)
    wins, ties, losses = wins_ties_losses(x, y)
    interval = mean_interval(d, "t", result.ci_level, 0, 0) if result.ci == "t" else (math.nan, math.nan)
    return Test(math.nan, False, interval, float(d.mean()) if n else math.nan, math.nan, dz, gz, wins, ties, losses, n)


def pvalue(x: np.ndarray, y: np.ndarray, test: str, permutations: int, seed: int) -> float:
    """The raw p-value of a pairwise test; NaN with no pair (nothing tested)."""
    if len(x) == 0:
        return math.nan
    if test == "t":
        return t_test(x, y)
    if test == "randomization":
        return randomization_test(x - y, permutations, seed)
    if test == "bootstrap":
        return bootstrap_test(x - y, permutations, seed)[0]
    raise ValueError(f"not a pairwise test: {test!r}")


def _randomization(diffs: list[np.ndarray], permutations: int, seed: int, flips: dict) -> list[float]:
    """The randomization test's p-value of each difference vector, those with the same number of
    pairs together (one set of sign flips per number of pairs, as each test alone would draw it)."""
    out = [math.nan] * len(diffs)
    by_n: dict[int, list[int]] = {}
    for i, d in enumerate(diffs):
        if len(d):
            by_n.setdefault(len(d), []).append(i)
    for n, idx in by_n.items():
        if n not in flips:
            flips[n] = sign_flips(n, permutations, seed)
        for lo in range(0, len(idx), 256):  # a few hundred tests per product: memory stays small
            chunk = idx[lo:lo + 256]
            p = randomization_tests(np.column_stack([diffs[i] for i in chunk]), permutations, seed, flips[n])
            for i, v in zip(chunk, p.tolist(), strict=True):
                out[i] = v
    return out


def _bootstrap(found: list, diffs: list[np.ndarray], result: Any, permutations: int, seed: int) -> None:
    """The bootstrap's p-values and intervals, the tests with the same number of pairs together
    (the same resamples, as each test alone would draw them: :func:`bootstrap_tests`)."""
    by_n: dict[int, list[int]] = {}
    for i, d in enumerate(diffs):
        by_n.setdefault(len(d), []).append(i)
    for n, idx in by_n.items():
        if n == 0:
            continue
        values = bootstrap_tests(np.column_stack([diffs[i] for i in idx]), permutations, seed, result.ci_level)
        for i, (p, lo, hi) in zip(idx, values.tolist(), strict=True):
            t = found[i][1]
            if result.test == "bootstrap":
                t.raw_pvalue = p
            if result.ci == "bootstrap" and n >= 2:
                t.interval = (lo, hi)


def run_tests(result: Any, permutations: int, seed: int) -> None:
    """Fill ``result.tests``: every pair's statistics and corrected p-value, in both directions."""
    pairs = pairs_of(result)
    values = {(r, m): result.per_query[r][m].to_numpy(dtype=float) for r in result.runs for m in result.measure_names}
    found: list[tuple[tuple[str, str, str], Test]] = []
    diffs: list[np.ndarray] = []
    flips: dict = {}
    for m in result.measure_names:
        family = _family_pvalues(result, m, permutations, seed) if result.test not in _PAIRWISE else None
        for run, other in pairs:
            x, y = paired(values, run, other, m)
            t = describe(x, y, result, permutations, seed)
            if family is not None:
                t.raw_pvalue = family[result.runs.index(run), result.runs.index(other)]
            elif result.test == "t":
                t.raw_pvalue = pvalue(x, y, result.test, permutations, seed)
            diffs.append(x - y)
            found.append(((run, other, m), t))
    if result.test == "randomization":
        for (_, t), p in zip(found, _randomization(diffs, permutations, seed, flips), strict=True):
            t.raw_pvalue = p
    if result.ci == "bootstrap" or result.test == "bootstrap":
        _bootstrap(found, diffs, result, permutations, seed)
    adjusted = correct_pvalues([t.raw_pvalue for _, t in found], result.correction)
    for (key, t), p in zip(found, adjusted, strict=True):
        t.pvalue = p
        t.significant = bool(p < result.alpha)  # NaN: False
        result.tests[key] = t
        result.tests[(key[1], key[0], key[2])] = t.reversed()


_PAIRWISE = ("t", "randomization", "bootstrap")


def _family_pvalues(result: Any, measure: str, permutations: int, seed: int) -> np.ndarray:
    """The Tukey tests' k x k p-values on one measure, over the queries with a value in every run."""
    frame = np.column_stack([result.per_query[r][measure].to_numpy() for r in result.runs])
    frame = frame[~np.isnan(frame).any(axis=1)]
    if result.test == "tukey":
        return tukey_hsd(frame)
    if result.test == "randomized-tukey":
        return randomized_tukey_hsd(frame, permutations, seed)
    raise ValueError(f"not a family test: {result.test!r}")
