"""Writers for a :class:`ndcg_plugin.compare.Comparison`: Markdown, LaTeX (booktabs), CSV,
JSON lines, and a PNG of the per-query differences from the baseline."""
from __future__ import annotations

import json
import math

import numpy as np

from ..formatting import format_value
from . import Comparison

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


def _cells(result: Comparison, places: int, bold, mark) -> list[list[str]]:
    measures = result.measure_names
    best = {m: max((result.means[n][m] for n in result.runs if not math.isnan(result.means[n][m])),
                   default=math.nan) for m in measures}
    out = []
    for name in result.runs:
        cells = [str(name)]
        for m in measures:
            value = result.means[name][m]
            text = format_value(value, places) if not math.isnan(value) else "-"
            if not math.isnan(value) and value == best[m]:
                text = bold(text)
            test = result.tests.get((name, m))
            if test is not None and test.significant:
                text += mark
            cells.append(text)
        out.append(cells)
    return out


def _marked(result: Comparison) -> bool:
    return any(t.significant for t in result.tests.values())


def _footnote(result: Comparison) -> str:
    how = f"paired {result.test} test, {result.correction} correction, alpha {result.alpha}"
    note = f"significantly different from {result.baseline} ({how})" if _marked(result) else \
        f"no run differs significantly from {result.baseline} ({how})"
    if result.pairs_valued_only:
        note += f"; {' and '.join(result.valued_only)} pairs only the queries with a value in both runs"
    return note


def to_markdown(result: Comparison, places: int = 4) -> str:
    measures = result.measure_names
    lines = ["| run | " + " | ".join(measures) + " |", "|---" * (len(measures) + 1) + "|"]
    lines += ["| " + " | ".join(c) + " |" for c in _cells(result, places, lambda t: f"**{t}**", "†")]
    mark = "† " if _marked(result) else ""
    return "\n".join(lines + ["", f"{mark}{_footnote(result)}; best per column in bold."])


_LATEX = str.maketrans({"\\": r"\textbackslash{}", "_": r"\_", "&": r"\&", "%": r"\%", "#": r"\#",
                        "$": r"\$", "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\^{}"})


def _latex_escape(text: str) -> str:
    return text.translate(_LATEX)


def to_latex(result: Comparison, places: int = 4) -> str:
    measures = result.measure_names
    rows = _cells(result, places, lambda t: f"\\textbf{{{t}}}", "$^\\dagger$")
    lines = [r"\begin{table}", r"\centering", r"\begin{tabular}{l" + "r" * len(measures) + "}", r"\toprule",
             "Run & " + " & ".join(_latex_escape(m) for m in measures) + r" \\", r"\midrule"]
    lines += [" & ".join([_latex_escape(c[0]), *c[1:]]) + r" \\" for c in rows]
    mark = r"$^\dagger$ " if _marked(result) else ""
    lines += [r"\bottomrule", r"\end{tabular}", r"\caption{" + mark + _latex_escape(_footnote(result)) +
              r"; best per column in bold.}", r"\end{table}"]
    return "\n".join(lines)


def to_csv(result: Comparison) -> str:
    return result.table().rename_axis("run").to_csv()


def to_jsonl(result: Comparison) -> str:
    out = []
    for name, row in result.table().iterrows():
        rec = {"run": name}
        for k, v in row.items():
            if isinstance(v, float) and math.isnan(v):
                v = None
            rec[k] = list(v) if isinstance(v, tuple) else v
        out.append(json.dumps(rec))
    return "\n".join(out)
