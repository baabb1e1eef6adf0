"""The statistics of :func:`ndcg_plugin.compare.compare`: paired tests, confidence intervals,
effect sizes, wins/ties/losses, multiple-comparison corrections and Tukey's HSD.

Each function takes plain numpy arrays (per-query values, or their paired differences) and is
checked against scipy.stats in tests/test_compare*.py. Random draws come from
``numpy.random.default_rng(seed)`` in batches of :data:`BATCH` rows, as scipy's ``bootstrap``
draws them with ``batch=BATCH``: the same seed gives scipy's resamples.
"""
from __future__ import annotations

import math

import numpy as np

#: rows of random draws made at once (sign flips, bootstrap resamples, permutations)
BATCH = 1000
INTERVALS = ("t", "bootstrap")


def sign_flips(n: int, permutations: int, seed: int) -> list[np.ndarray]:
    """The randomization test's sign matrices (batches of rows of +1/-1, int8): every sign
    vector when 2^n <= ``permutations`` (exact), else ``permutations`` seeded random rows."""
    if n < 63 and 2 ** n <= permutations:
        rows = np.arange(2 ** n)[:, None]
        return [(((rows >> np.arange(n)) & 1) * 2 - 1).astype(np.int8)]
    rng = np.random.default_rng(seed)
    return [(rng.integers(0, 2, size=(min(BATCH, permutations - lo), n)) * 2 - 1).astype(np.int8)
            for lo in range(0, permutations, BATCH)]


def randomization_test(d: np.ndarray, permutations: int, seed: int, flips: list | None = None) -> float:
    """Fisher's paired randomization test, two-sided, on the mean difference of ``d``: the share of
    sign flips whose |mean| reaches the observed one (exact), or (count + 1) / (permutations + 1)
    over seeded random flips. ``flips``: :func:`sign_flips` of ``len(d)`` made once for many tests."""
    if len(d) == 0:
        return 1.0
    return float(randomization_tests(d[:, None], permutations, seed, flips)[0])


def randomization_tests(d: np.ndarray, permutations: int, seed: int, flips: list | None = None) -> np.ndarray:
    """:func:`randomization_test` of each column of ``d`` (n pairs x tests), with one set of sign
    flips (the same flips each test would draw alone: one seed), as one matrix product per batch."""
    n = d.shape[0]
    observed = np.abs(d.mean(axis=0))
    flips = sign_flips(n, permutations, seed) if flips is None else flips
    count = np.zeros(d.shape[1], dtype=np.int64)
    for s in flips:
        count += np.sum(np.abs(s.astype(np.float64) @ d) / n >= observed - 1e-12, axis=0)
    total = sum(len(s) for s in flips)
    if n < 63 and 2 ** n <= permutations:
        return count / total
    return (count + 1) / (total + 1)


def bootstrap_means(d: np.ndarray, resamples: int, seed: int) -> np.ndarray:
    """The means of ``resamples`` bootstrap resamples of ``d`` (seeded, scipy's draws)."""
    n = len(d)
    rng = np.random.default_rng(seed)
    return np.concatenate([d[rng.integers(0, n, size=(min(BATCH, resamples - lo), n))].mean(axis=1)
                           for lo in range(0, resamples, BATCH)])


def bootstrap_test(d: np.ndarray, resamples: int, seed: int, level: float = 0.95) -> tuple[float, float, float]:
    """(p-value of the shifted null, the percentile interval at ``level``) of the mean of ``d``."""
    if len(d) == 0:
        return 1.0, math.nan, math.nan
    boot = bootstrap_means(d, resamples, seed)
    shifted = boot - d.mean()  # the null: no mean difference
    p = float((np.sum(np.abs(shifted) >= abs(d.mean()) - 1e-12) + 1) / (resamples + 1))
    lo, hi = _percentile_interval(boot, level)
    return p, lo, hi


def bootstrap_tests(d: np.ndarray, resamples: int, seed: int, level: float = 0.95) -> np.ndarray:
    """:func:`bootstrap_test` of each column of ``d`` (n pairs x tests), with the same resamples (one
    seed), in batches: a (tests x 3) array of (p-value, low, high), each equal to the test alone."""
    n, tests = d.shape
    rows = np.ascontiguousarray(d.T)  # each test's differences contiguous, summed as alone
    out = np.empty((tests, 3))
    chunk = max(1, 8_000_000 // (BATCH * max(n, 1)))  # tests at once: at most 64 MB of resampled values
    for lo in range(0, tests, chunk):
        part = rows[lo:lo + chunk]
        rng = np.random.default_rng(seed)
        # (tests x draws) rows of n summed as 2-D rows: numpy sums a 3-D array's last axis in another
        # order, which changed the last bits
        boot = np.concatenate([part[:, rng.integers(0, n, size=(min(BATCH, resamples - r), n))].reshape(-1, n)
                               .mean(axis=1).reshape(len(part), -1) for r in range(0, resamples, BATCH)], axis=1)
        mean = part.mean(axis=1)
        count = np.sum(np.abs(boot - mean[:, None]) >= np.abs(mean)[:, None] - 1e-12, axis=1)
        tail = (1 - level) / 2
        out[lo:lo + chunk, 0] = (count + 1) / (resamples + 1)
        out[lo:lo + chunk, 1:] = np.quantile(boot, [tail, 1 - tail], axis=1).T
    return out


def _percentile_interval(boot: np.ndarray, level: float) -> tuple[float, float]:
    tail = (1 - level) / 2
    lo, hi = np.quantile(boot, [tail, 1 - tail])
    return float(lo), float(hi)


def t_test(x: np.ndarray, y: np.ndarray) -> float:
    """Two-sided paired t-test (scipy's ``ttest_rel``: t = mean(d) / (sd(d) / sqrt(n)), n - 1 degrees
    of freedom, computed here without scipy.stats' per-call overhead); 1.0 with fewer than 2 pairs
    or no difference (every |x - y| within numpy's ``allclose``); 0.0 for a constant nonzero difference."""
    if len(x) < 2 or np.allclose(x, y):
        return 1.0
    d = x - y
    n = len(d)
    if np.all(d == d[0]):
        return 0.0  # t = +-inf (scipy: the same)
    from scipy.special import stdtr  # not scipy.stats: a third of its import time
    t = float(d.mean()) / (float(d.std(ddof=1)) / math.sqrt(n))
    return float(2 * stdtr(n - 1, -abs(t)))


def mean_interval(values: np.ndarray, method: str, level: float, resamples: int, seed: int) -> tuple[float, float]:
    """The ``level`` confidence interval of the mean of ``values``: ``t`` (Student's t, n - 1 degrees
    of freedom, as scipy's ``t.interval``) or ``bootstrap`` (percentile, seeded); NaN without 2 values."""
    if method not in INTERVALS:
        raise ValueError(f"ci must be 't' or 'bootstrap', got {method!r}")
    n = len(values)
    if n < 2:
        return math.nan, math.nan
    mean = float(values.mean())
    if method == "bootstrap":
        return _percentile_interval(bootstrap_means(values, resamples, seed), level)
    if np.all(values == values[0]):  # no spread (std would be a rounding residue, not 0)
        return mean, mean
    sd = float(values.std(ddof=1))
    from scipy.special import stdtrit  # not scipy.stats: a third of its import time
    half = float(stdtrit(n - 1, 0.5 + level / 2)) * sd / math.sqrt(n)
    return mean - half, mean + half


def effect_sizes(d: np.ndarray) -> tuple[float, float]:
    """(d_z, g_z) of paired differences ``d``: Cohen's d_z = mean(d) / sd(d) (sd with n - 1), and
    Hedges' g_z = d_z x J(n - 1), J(df) = Gamma(df/2) / (sqrt(df/2) Gamma((df-1)/2)) (the exact
    small-sample correction; 1 - 3/(4 df - 1) is its approximation). NaN when undefined: d_z with
    fewer than 2 pairs or every difference equal; g_z also with fewer than 3 pairs."""
    n = len(d)
    if n < 2:
        return math.nan, math.nan
    if np.all(d == d[0]):  # no spread (std would be a rounding residue, not 0)
        return math.nan, math.nan
    sd = float(d.std(ddof=1))
    dz = float(d.mean()) / sd
    if n < 3:
        return dz, math.nan
    df = n - 1
    j = math.exp(math.lgamma(df / 2) - math.lgamma((df - 1) / 2)) / math.sqrt(df / 2)
    return dz, dz * j


def wins_ties_losses(x: np.ndarray, y: np.ndarray) -> tuple[int, int, int]:
    """How many pairs x beats, equals, loses to y on."""
    return int(np.sum(x > y)), int(np.sum(x == y)), int(np.sum(x < y))


def correct_pvalues(pvalues: list[float], method: str) -> list[float]:
    """Holm (step-down, monotone), Bonferroni, or none; NaN p-values (no test) stay NaN and are not
    counted in the family."""
    p = np.asarray(pvalues, dtype=float)
    out = p.copy()
    tested = np.flatnonzero(~np.isnan(p))
    m = len(tested)
    if method == "none" or m == 0:
        return out.tolist()
    if method == "bonferroni":
        out[tested] = np.minimum(1.0, p[tested] * m)
        return out.tolist()
    running = 0.0
    for rank, i in enumerate(tested[np.argsort(p[tested], kind="stable")]):  # Holm: step down, monotone
        running = max(running, min(1.0, (m - rank) * p[i]))
        out[i] = running
    return out.tolist()


def tukey_hsd(matrix: np.ndarray) -> np.ndarray:
    """Tukey's HSD over the runs (columns) of ``matrix`` (queries x runs), with the queries as a
    block (two-way ANOVA without replication, as Carterette 2012 and Sakai 2014 use it in IR):
    q = |mean_i - mean_j| / sqrt(MSE / n), MSE the residual mean square on (k-1)(n-1) degrees of
    freedom, p from the studentized range distribution with k runs. A k x k matrix of p-values
    (1 on the diagonal); NaN without a residual degree of freedom."""
    n, k = matrix.shape
    out = np.full((k, k), math.nan)
    df = (k - 1) * (n - 1)
    if k < 2 or df < 1:
        return out
    resid = matrix - matrix.mean(axis=0) - matrix.mean(axis=1, keepdims=True) + matrix.mean()
    mse = float(np.sum(resid * resid)) / df
    means = matrix.mean(axis=0)
    diff = np.abs(means[:, None] - means[None, :])
    upper = np.triu_indices(k, 1)
    if mse == 0:
        p = np.where(diff[upper] > 0, 0.0, 1.0)
    else:
        p = studentized_range_sf(diff[upper] / math.sqrt(mse / n), k, df)
    out[upper] = p
    out.T[upper] = p
    np.fill_diagonal(out, 1.0)
    return np.minimum(out, 1.0)


#: the quadrature nodes of :func:`studentized_range_sf`: z (the normal's range) and u = log(s)
Z_NODES, U_NODES = 800, 400
RANGE_ZERO = 60.0


def range_sf(w: np.ndarray, k: int) -> np.ndarray:
    """P(the range of k independent standard normals > w), for each w >= 0:
    k * integral of phi(z) (Phi(z)^(k-1) - (Phi(z) - Phi(z - w))^(k-1)) dz, the difference written
    a^m (-expm1(m log1p(-b/a))) so that a tiny probability keeps its digits; trapezoid rule on
    [-9, 9] (the integrand is smooth and vanishes at both ends: exponential convergence)."""
    z = np.linspace(-9.0, 9.0, Z_NODES)
    phi = np.exp(-z * z / 2) / math.sqrt(2 * math.pi)
    from scipy.special import log_ndtr
    log_a = log_ndtr(z)
    ratio = np.minimum(np.exp(log_ndtr(z[None, :] - w.reshape(-1, 1)) - log_a[None, :]), 1.0)
    with np.errstate(divide="ignore"):
        inner = np.exp((k - 1) * log_a)[None, :] * -np.expm1((k - 1) * np.log1p(-ratio))
    return k * (z[1] - z[0]) * (inner @ phi)


def studentized_range_sf(q: np.ndarray, k: int, df: float) -> np.ndarray:
    """P(Q > q) for the studentized range of k means with df degrees of freedom, for each q:
    the integral over s = S / sigma (density of sqrt(chi2_df / df), substituted s = e^u) of
    :func:`range_sf` (q s), by the trapezoid rule, vectorized over q. scipy's ``studentized_range.sf``
    computes the same integral adaptively, one q at a time (80 ms each for 50 runs, 10 minutes for
    a 50-run table of 6 measures); this agrees with it to 1e-9 relative for p >= 1e-4 and 1e-5 down
    to p = 1e-8 (tests/test_compare_stats.py)."""
    from scipy.special import gammaln
    q = np.asarray(q, dtype=np.float64)
    sd = 1 / math.sqrt(2 * df)
    u = np.linspace(-(36.0 / df) - 10 * sd, 0.5 * math.log(1 + 80.0 / df) + 10 * sd, U_NODES)
    log_c = (df / 2) * math.log(df) - gammaln(df / 2) - (df / 2 - 1) * math.log(2)
    weights = np.exp(log_c + df * u - df * np.exp(2 * u) / 2) * (u[1] - u[0])
    w = q.ravel()[:, None] * np.exp(u)[None, :]
    # range_sf on a grid of w (step 0.005), its log interpolated by a cubic spline: smooth, and a
    # grid shared by every q (the direct evaluation costs 800 normal cdfs per (q, u) node)
    from scipy.interpolate import CubicSpline
    top = min(max(float(w.max()), 1.0), RANGE_ZERO)  # beyond it, range_sf < 1e-300 for any k <= 10^6
    grid = np.linspace(0.0, top, int(top / 0.005) + 2)
    log_r = np.log(np.maximum(np.concatenate([range_sf(grid[i:i + 256], k) for i in range(0, len(grid), 256)]),
                              1e-300))
    out = np.where(w < RANGE_ZERO, np.exp(CubicSpline(grid, log_r)(np.minimum(w, top))), 0.0) @ weights
    return np.clip(out, 0.0, 1.0).reshape(q.shape)


def randomized_tukey_hsd(matrix: np.ndarray, permutations: int, seed: int) -> np.ndarray:
    """Carterette's (2012) randomized Tukey HSD over the runs (columns) of ``matrix`` (queries x runs):
    each trial permutes every query's values across the runs; p(i, j) = (count + 1) /
    (permutations + 1), count the trials whose largest minus smallest run mean reaches
    |mean_i - mean_j|. A k x k matrix of p-values (1 on the diagonal)."""
    n, k = matrix.shape
    if n == 0 or k < 2:
        return np.full((k, k), math.nan)
    means = matrix.mean(axis=0)
    observed = np.abs(means[:, None] - means[None, :])
    rng = np.random.default_rng(seed)
    ranges = []
    rows = max(1, min(BATCH, 4_000_000 // (n * k)))  # trials at once: at most 32 MB of shuffled values
    for lo in range(0, permutations, rows):
        b = min(rows, permutations - lo)
        shuffled = rng.permuted(np.broadcast_to(matrix, (b, n, k)), axis=2)
        trial = shuffled.mean(axis=1)
        ranges.append(trial.max(axis=1) - trial.min(axis=1))
    spread = np.sort(np.concatenate(ranges)) if ranges else np.empty(0)
    count = len(spread) - np.searchsorted(spread, observed.ravel() - 1e-12, side="left")
    out = ((count + 1) / (permutations + 1)).reshape(k, k)
    np.fill_diagonal(out, 1.0)
    return out
