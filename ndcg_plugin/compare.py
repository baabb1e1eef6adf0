"""Compare runs: one row per run, one column per measure (mean), paired significance tests
against a baseline with a multiple-comparison correction, tables in Markdown, LaTeX
(booktabs), CSV and JSON lines.

Tests are paired over the qrels queries, with each measure's own conventions: a query missing
from a run scores 0, and MRR_ignore pairs only the queries that have a value in both runs.

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

import json
import math
from typing import Any

import ir_measures
import numpy as np
import pandas as pd

from . import reading
from .formatting import format_value
from .measures import parse_measures


def per_query(qrels_table: pd.DataFrame, run: Any, measures: list) -> dict:
    """{measure: pd.Series of per-query values over the qrels queries} for one run."""
    values: dict = {m: {} for m in measures}
    for metric in ir_measures.iter_calc(measures, qrels_table, run):
        values[metric.measure][metric.query_id] = float(metric.value)
    qids = sorted(set(qrels_table["query_id"]))
    return {m: pd.Series(v, dtype=float).reindex(qids) for m, v in values.items()}


def _may_have_no_value(measure) -> bool:
    """Whether a query may have no value (NaN, the measure's DEFAULT): MRR_ignore."""
    return math.isnan(float(getattr(measure, "DEFAULT", 0.0)))


def _randomization(d: np.ndarray, permutations: int, seed: int) -> float:
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


def _bootstrap(d: np.ndarray, resamples: int, seed: int) -> tuple[float, float, float]:
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


def _t(d_a: np.ndarray, d_b: np.ndarray) -> float:
    from scipy import stats
    if len(d_a) < 2 or np.allclose(d_a, d_b):
        return 1.0
    return float(stats.ttest_rel(d_a, d_b).pvalue)


def _correct(pvalues: list[float], method: str) -> list[float]:
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
            correction: str = "holm", alpha: float = 0.05, permutations: int = 10_000, seed: int = 0) -> pd.DataFrame:
    """A table with one row per run: the mean of each measure, and for each non-baseline run the
    corrected p-value (``p:<measure>``), significance (``sig:<measure>``) and, for bootstrap, the
    95% interval of the mean difference (``ci:<measure>``)."""
    if test not in ("t", "randomization", "bootstrap"):
        raise ValueError(f"test must be 't', 'randomization' or 'bootstrap', got {test!r}")
    if correction not in ("holm", "bonferroni", "none"):
        raise ValueError(f"correction must be 'holm', 'bonferroni' or 'none', got {correction!r}")
    measures = parse_measures(measures)
    names = list(runs)
    if not names:
        raise ValueError("give at least one run")
    baseline = baseline or names[0]
    if baseline not in runs:
        raise ValueError(f"baseline {baseline!r} is not one of the runs {names}")
    qrels_table = reading.read(qrels, "qrels")
    values = {name: per_query(qrels_table, reading.read(run, "run"), measures) for name, run in runs.items()}
    rows = {name: {str(m): float(np.nanmean(values[name][m])) if values[name][m].notna().any() else math.nan
                   for m in measures} for name in names}
    tests = []
    for name in names:
        if name == baseline:
            continue
        for m in measures:
            a, b = values[name][m], values[baseline][m]
            both = a.notna() & b.notna()  # MRR_ignore: queries with a value in both runs
            x, y = a[both].to_numpy(), b[both].to_numpy()
            ci = None
            if test == "t":
                p = _t(x, y)
            elif test == "randomization":
                p = _randomization(x - y, permutations, seed)
            else:
                p, lo, hi = _bootstrap(x - y, permutations, seed)
                ci = (lo, hi)
            tests.append((name, m, p, ci))
    adjusted = _correct([t[2] for t in tests], correction)
    for (name, m, _, ci), p in zip(tests, adjusted, strict=True):
        rows[name][f"p:{m}"] = p
        rows[name][f"sig:{m}"] = bool(p < alpha)
        if ci is not None:
            rows[name][f"ci:{m}"] = ci
    table = pd.DataFrame.from_dict(rows, orient="index")
    table.attrs.update(baseline=baseline, test=test, correction=correction, alpha=alpha,
                       measures=[str(m) for m in measures], ignore=any(_may_have_no_value(m) for m in measures),
                       per_query={name: {str(m): v.to_dict() for m, v in values[name].items()} for name in names})
    return table


def plot(table: pd.DataFrame, path: str) -> None:
    """Per-query differences, each run minus the baseline, sorted, one panel per measure (PNG)."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise ValueError("--plot needs matplotlib: pip install 'ndcg-plugin[plot]'") from None
    a = table.attrs
    others = [n for n in table.index if n != a["baseline"]]
    measures = a["measures"]
    fig, axes = plt.subplots(len(measures), 1, figsize=(8, 2.8 * len(measures)), squeeze=False)
    for ax, m in zip(axes[:, 0], measures, strict=True):
        base = pd.Series(a["per_query"][a["baseline"]][m])
        diffs = {name: pd.Series(a["per_query"][name][m]) - base for name in others}
        # one query order for every run (that of the first run's difference), so one x position is one query
        order = diffs[others[0]].dropna().sort_values(ascending=False).index if others else []
        for name in others:
            diff = diffs[name].reindex(order)
            ax.bar(np.arange(len(diff)), diff.to_numpy(), width=1.0, alpha=0.6, label=f"{name} - {a['baseline']}")
        ax.axhline(0, color="black", linewidth=0.8)
        ax.set_title(f"{m}: per-query difference from {a['baseline']} (queries in one order: "
                     f"{others[0] if others else ''}'s difference, descending)")
        ax.set_xlabel("queries")
        ax.set_ylabel("difference")
        ax.legend(loc="upper right", fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def _cells(table: pd.DataFrame, places: int, bold, mark) -> list[list[str]]:
    measures = table.attrs["measures"]
    best = {m: table[m].max() for m in measures}
    out = []
    for name, row in table.iterrows():
        cells = [str(name)]
        for m in measures:
            text = format_value(row[m], places) if not math.isnan(row[m]) else "-"
            if not math.isnan(row[m]) and row[m] == best[m]:
                text = bold(text)
            if row.get(f"sig:{m}") is True:
                text += mark
            cells.append(text)
        out.append(cells)
    return out


def _footnote(table: pd.DataFrame) -> str:
    a = table.attrs
    note = (f"significantly different from {a['baseline']} (paired {a['test']} test, {a['correction']} "
            f"correction, alpha {a['alpha']})")
    if a["ignore"]:
        note += "; MRR_ignore pairs only the queries with a value in both runs"
    return note


def to_markdown(table: pd.DataFrame, places: int = 4) -> str:
    measures = table.attrs["measures"]
    lines = ["| run | " + " | ".join(measures) + " |", "|---" * (len(measures) + 1) + "|"]
    lines += ["| " + " | ".join(c) + " |" for c in _cells(table, places, lambda t: f"**{t}**", "†")]
    return "\n".join(lines + ["", f"† {_footnote(table)}; best per column in bold."])


_LATEX = str.maketrans({"\\": r"\textbackslash{}", "_": r"\_", "&": r"\&", "%": r"\%", "#": r"\#",
                        "$": r"\$", "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\^{}"})


def _latex_escape(text: str) -> str:
    return text.translate(_LATEX)


def to_latex(table: pd.DataFrame, places: int = 4) -> str:
    measures = table.attrs["measures"]
    rows = _cells(table, places, lambda t: f"\\textbf{{{t}}}", "$^\\dagger$")
    lines = [r"\begin{table}", r"\centering", r"\begin{tabular}{l" + "r" * len(measures) + "}", r"\toprule",
             "Run & " + " & ".join(_latex_escape(m) for m in measures) + r" \\", r"\midrule"]
    lines += [" & ".join([_latex_escape(c[0]), *c[1:]]) + r" \\" for c in rows]
    lines += [r"\bottomrule", r"\end{tabular}", r"\caption{$^\dagger$ " + _latex_escape(_footnote(table)) +
              r"; best per column in bold.}", r"\end{table}"]
    return "\n".join(lines)


def to_csv(table: pd.DataFrame) -> str:
    return table.rename_axis("run").to_csv()


def to_jsonl(table: pd.DataFrame) -> str:
    out = []
    for name, row in table.iterrows():
        rec = {"run": name}
        for k, v in row.items():
            if isinstance(v, float) and math.isnan(v):
                v = None
            rec[k] = list(v) if isinstance(v, tuple) else v
        out.append(json.dumps(rec))
    return "\n".join(out)
