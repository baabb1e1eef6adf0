"""Writers for a :class:`ndcg_plugin.compare.Comparison`: Markdown, LaTeX (booktabs), CSV,
JSON lines, and a PNG of the per-query differences from the baseline."""
from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..formatting import format_value
from . import FAMILY_TESTS, Comparison

PLOT_SUFFIXES = (".png", ".pdf", ".svg")


def plot_target(path: str) -> str:
    """The file ``--plot PATH`` writes, checked before any work: PATH, with ``.png`` added when it
    has no image suffix; a ValueError for a directory, a folder that does not exist or cannot be
    written, or a missing matplotlib."""
    import os
    if os.path.isdir(path):
        raise ValueError(f"is a directory; give a file name, e.g. {os.path.join(path, 'diff.png')}")
    target = path if path.lower().endswith(PLOT_SUFFIXES) else path + ".png"
    folder = os.path.dirname(os.path.abspath(target))
    if not os.path.isdir(folder):
        raise ValueError(f"the folder {folder} does not exist")
    if not os.access(folder, os.W_OK):
        raise ValueError(f"the folder {folder} cannot be written")
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise ValueError("--plot needs matplotlib: pip install 'ndcg-plugin[plot]'") from None
    return target


def plot(result: Comparison, path: str) -> None:
    """Per-query differences, each run minus the baseline, one panel per measure (PNG), every
    run's bars in one query order (the first other run's difference, descending), so one x
    position is one query."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise ValueError("--plot needs matplotlib: pip install 'ndcg-plugin[plot]'") from None
    base_name = result.baseline
    others = [n for n in result.runs if n != base_name]
    measures = result.measure_names
    fig, axes = plt.subplots(len(measures), 1, figsize=(8, 2.8 * len(measures)), squeeze=False)
    for ax, m in zip(axes[:, 0], measures, strict=True):
        base = result.per_query[base_name][m]
        diffs = {name: result.per_query[name][m] - base for name in others}
        order = diffs[others[0]].dropna().sort_values(ascending=False).index if others else []
        for name in others:
            diff = diffs[name].reindex(order)
            ax.bar(np.arange(len(diff)), diff.to_numpy(), width=1.0, alpha=0.6, label=f"{name} - {base_name}")
        ax.axhline(0, color="black", linewidth=0.8)
        ax.set_title(f"{m}: run - {base_name}, per query", fontsize="medium")
        ax.set_xlabel(f"queries, by {others[0] if others else ''} - {base_name} (descending)", fontsize="small")
        ax.set_ylabel("difference")
        if ax.get_legend_handles_labels()[0]:  # nothing to name when no query has a difference
            ax.legend(loc="upper right", fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


#: each baseline's mark, in the order the baselines were given (Markdown, LaTeX math)
SYMBOLS = ("†", "‡", "§", "¶", "♯", "*")
LATEX_SYMBOLS = (r"\dagger", r"\ddagger", r"\S", r"\P", r"\sharp", r"\ast")
MAX_BASELINES = len(SYMBOLS)
#: what ``show`` adds to the Markdown and LaTeX tables: each mean's interval (``ci``), a second
#: table of every comparison (``tests``)
SHOW = ("ci", "tests")


@dataclass(frozen=True)
class Style:
    """How a format marks a cell: bold, a baseline's symbols, all-pairs letters."""
    bold: Callable[[str], str]
    symbols: Callable[[list[int]], str]
    letters: Callable[[str], str]
    pm: str


MARKDOWN = Style(lambda t: f"**{t}**", lambda ix: "".join(SYMBOLS[i] for i in ix),
                 lambda s: f"<sup>{s}</sup>", "±")
LATEX = Style(lambda t: f"\\textbf{{{t}}}", lambda ix: f"$^{{{''.join(LATEX_SYMBOLS[i] for i in ix)}}}$",
              lambda s: f"$^{{{s}}}$", r"$\pm$")


def _interval_text(result: Comparison, name: str, m: str, places: int, style: Style) -> str:
    lo, hi = result.intervals.get((name, m), (math.nan, math.nan))
    if math.isnan(lo) or math.isnan(hi):
        return ""
    if result.ci == "t":  # symmetric: the half-width
        return f" {style.pm} {format_value((hi - lo) / 2, places)}"
    return f" [{format_value(lo, places)}, {format_value(hi, places)}]"


def _superscript(result: Comparison, name: str, m: str) -> str:
    letters = result.letters
    better = [letters[o] for o in result.better_than(name, m)]
    return ("," if any(len(x) > 1 for x in letters.values()) else "").join(better)


def _cells(result: Comparison, places: int, style: Style, show: tuple = ()) -> list[list[str]]:
    measures = result.measure_names
    best = {m: max((result.means[n][m] for n in result.runs if not math.isnan(result.means[n][m])),
                   default=math.nan) for m in measures}
    out = []
    for name in result.runs:
        cells = [str(name)]
        for m in measures:
            value = result.means[name][m]
            text = _number(value, places)
            if not math.isnan(value) and value == best[m]:
                text = style.bold(text)
            if "ci" in show:
                text += _interval_text(result, name, m, places, style)
            marks = [i for i, b in enumerate(result.baselines)
                     if (t := result.tests.get((name, b, m))) is not None and t.significant]
            if marks:
                text += style.symbols(marks)
            if result.all_pairs and (sup := _superscript(result, name, m)):
                text += style.letters(sup)
            cells.append(text)
        out.append([result.letters[name], *cells] if result.all_pairs else cells)
    return out


def _marked(result: Comparison) -> bool:
    return any(t.significant for t in result.tests.values())


def _how(result: Comparison) -> str:
    family = sum(1 for t in result.tests.values() if not math.isnan(t.raw_pvalue)) // 2
    if result.test in FAMILY_TESTS:
        name = "Tukey's HSD" if result.test == "tukey" else "randomized Tukey HSD"
        return f"{name} over the pairs of each measure, alpha {result.alpha}"
    return f"paired {result.test} test, {result.correction} correction over {family} comparisons, alpha {result.alpha}"


def _footnote(result: Comparison, symbols: tuple, show: tuple) -> str:
    how = _how(result)
    if result.all_pairs:
        note = (f"superscripts: the runs a run is significantly better than ({how})" if _marked(result)
                else f"no two runs differ significantly ({how})")
    elif _marked(result):
        note = ", ".join(f"{symbols[i]} significantly different from {b}" for i, b in enumerate(result.baselines))
        note += f" ({how})"
    else:
        note = f"no run differs significantly from {' or '.join(result.baselines)} ({how})"
    if result.pairs_valued_only:
        note += f"; {' and '.join(result.valued_only)} pairs only the queries with a value in both runs"
    untested = [f"{r} and {o} on {m}" for (r, o, m), t in result.tests.items() if t.pairs == 0 and
                result.runs.index(r) < result.runs.index(o)]
    if untested:
        note += f"; not tested (no query has a value in both runs): {', '.join(untested)}"
    if "ci" in show:
        kind = _ci_kind(result)
        shape = "± the half-width of" if result.ci == "t" else "[low, high]:"
        note += f"; {shape} the {result.ci_level:g} {kind} confidence interval of the mean"
    return note


def to_markdown(result: Comparison, places: int = 4, show: tuple = ()) -> str:
    measures = result.measure_names
    head = ["#", "run"] if result.all_pairs else ["run"]
    lines = ["| " + " | ".join(head + measures) + " |", "|---" * (len(measures) + len(head)) + "|"]
    lines += ["| " + " | ".join(c) + " |" for c in _cells(result, places, MARKDOWN, show)]
    lines += ["", f"{_footnote(result, SYMBOLS, show)}; best per column in bold."]
    if "tests" in show:
        head = _test_head(result)
        lines += ["", "| " + " | ".join(head) + " |", "|---" * len(head) + "|",
                  *("| " + " | ".join(r) + " |" for r in comparison_rows(result, places)), "", _tests_note(result)]
    return "\n".join(lines)


#: the columns of the comparisons' table (:func:`comparison_rows`)
TEST_COLUMNS = ("run", "against", "measure", "difference", "{ci} CI of the difference", "p", "p ({correction})",
                "d_z", "wins/ties/losses", "queries")


def _test_head(result: Comparison) -> list[str]:
    correction = "Tukey" if result.test in FAMILY_TESTS else result.correction
    return [c.format(ci=f"{result.ci_level:g} {result.ci}", correction=correction) for c in TEST_COLUMNS]


def _p_text(p: float, places: int) -> str:
    """A p-value with ``places`` decimals, below the smallest it can show as ``< 0.0001``."""
    if math.isnan(p):
        return "-"
    if places >= 0 and 0 < p < 10 ** -places:
        return f"< {10 ** -places:.{places}f}"
    return format_value(p, places)


def comparison_rows(result: Comparison, places: int = 4) -> list[list[str]]:
    """Each comparison once (a run against its baseline; all-pairs: each earlier run against each
    later one), per measure: the mean difference (run minus the other), its confidence interval,
    the p-value before and after the correction, Cohen's d_z, wins/ties/losses and the paired
    queries; "-" where a number does not exist (no pair to test, no interval)."""
    from .pairs import pairs_of
    out = []
    for run, other in pairs_of(result):
        for m in result.measure_names:
            t = result.tests.get((run, other, m))
            if t is None:
                continue
            lo, hi = t.interval if t.interval is not None else (math.nan, math.nan)
            interval = "-" if math.isnan(lo) or math.isnan(hi) else f"[{_number(lo, places)}, {_number(hi, places)}]"
            raw = t.raw_pvalue if result.test not in FAMILY_TESTS else math.nan  # a family's p has no raw twin
            out.append([str(run), str(other), m, _number(t.diff, places), interval, _p_text(raw, places),
                        _p_text(t.pvalue, places), _number(t.d_z, places), f"{t.wins}/{t.ties}/{t.losses}",
                        str(t.pairs)])
    return out


def _number(value: float, places: int) -> str:
    """A number of a table with ``places`` decimals; "-" where there is none (NaN)."""
    return "-" if math.isnan(value) else format_value(value, places)


def _ci_kind(result: Comparison) -> str:
    """The name of the intervals' method (``--ci``)."""
    return "Student's t" if result.ci == "t" else "percentile bootstrap"


def _tests_note(result: Comparison) -> str:
    p = ("the p-value of the whole family (no uncorrected one)" if result.test in FAMILY_TESTS
         else "the p-value before and after the correction")
    return (f"Each comparison: the mean of the per-query differences (run minus the other), its {result.ci_level:g} "
            f"{_ci_kind(result)} confidence interval, {p} ({_how(result)}), Cohen's "
            f"d_z (the mean over the standard deviation of the differences), and the queries where the run scores "
            f"higher, the same, lower.")


_LATEX = str.maketrans({"\\": r"\textbackslash{}", "_": r"\_", "&": r"\&", "%": r"\%", "#": r"\#",
                        "$": r"\$", "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\^{}"})


def _latex_escape(text: str) -> str:
    return text.translate(_LATEX)


def to_latex(result: Comparison, places: int = 4, show: tuple = ()) -> str:
    measures = result.measure_names
    rows = _cells(result, places, LATEX, show)
    lead = 2 if result.all_pairs else 1
    head = ["", "Run"] if result.all_pairs else ["Run"]
    lines = [r"\begin{table}", r"\centering", r"\begin{tabular}{" + "l" * lead + "r" * len(measures) + "}",
             r"\toprule", " & ".join(head + [_latex_escape(m) for m in measures]) + r" \\", r"\midrule"]
    lines += [" & ".join([*(_latex_escape(x) for x in c[:lead]), *c[lead:]]) + r" \\" for c in rows]
    symbols = tuple(f"$^{{{s}}}$" for s in LATEX_SYMBOLS)
    note = _footnote(result, symbols, show)
    lines += [r"\bottomrule", r"\end{tabular}", r"\caption{" + _latex_caption(note, symbols) +
              r"; best per column in bold.}", r"\end{table}"]
    if "tests" in show:
        lines += ["", *_latex_tests(result, places)]
    return "\n".join(lines)


def _latex_tests(result: Comparison, places: int) -> list[str]:
    """The comparisons' table (:func:`comparison_rows`) as a second booktabs table."""
    rows = comparison_rows(result, places)
    lines = [r"\begin{table}", r"\centering", r"\begin{tabular}{lll" + "r" * (len(TEST_COLUMNS) - 3) + "}",
             r"\toprule", " & ".join(_latex_escape(c) for c in _test_head(result)) + r" \\", r"\midrule"]
    lines += [" & ".join(_latex_escape(c).replace("< ", "$<$ ") for c in row) + r" \\" for row in rows]
    lines += [r"\bottomrule", r"\end{tabular}", r"\caption{" + _latex_escape(_tests_note(result)) + "}",
              r"\end{table}"]
    return lines


def _latex_caption(note: str, symbols: tuple) -> str:
    """The footnote escaped, its symbols (LaTeX math) and ± kept."""
    parts = [note]
    for s in symbols:
        parts = [x for p in parts for x in _split_keep(p, s)]
    return "".join(p if p in symbols else _latex_escape(p).replace("±", r"$\pm$") for p in parts)


def _split_keep(text: str, sep: str) -> list[str]:
    pieces = text.split(sep)
    out = []
    for i, p in enumerate(pieces):
        if i:
            out.append(sep)
        out.append(p)
    return out


def to_csv(result: Comparison) -> str:
    """The table (:meth:`Comparison.table`), one row per run, without a blank line at the end."""
    return result.table().rename_axis("run").to_csv().rstrip("\n")


def _plain(value):
    if value is None or value is pd.NA:
        return None
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return None if math.isnan(value) else float(value)
    return value


def to_jsonl(result: Comparison) -> str:
    """The table, one JSON object per run (NaN, no value: null)."""
    out = []
    for name, row in result.table().iterrows():
        out.append(json.dumps({"run": name, **{k: _plain(v) for k, v in row.items()}}))
    return "\n".join(out)
