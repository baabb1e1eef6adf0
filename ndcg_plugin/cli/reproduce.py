"""Reproduction reports laid out as ``compare`` lays out its tables: Markdown, LaTeX (booktabs),
CSV and JSON lines, and a PNG of the per-topic differences (reproduced minus original).

Runs mode (:class:`ndcg_plugin.reproduce.Reproduction`) prints two tables, as the paper does:
the ranked lists (KTU and RBO at each cutoff) and the effectiveness (each measure's four ARPs,
RMSE, p-values, ER and DeltaRI). Table mode prints one row per cell of the paper's table. CSV
and JSON lines give every row of the report's DataFrame; a JSON line leaves out the fields that
do not apply to its statistic (a ``value`` that is not a number is ``null``).
"""
from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd

from ..formatting import ALL_DIGITS, format_value
from ..reproduce import DEFAULT_CUTOFFS, RUNS, Reproduction, compute_runs, table

OUTPUTS = ("markdown", "latex", "csv", "jsonl")
_LATEX = str.maketrans({"\\": r"\textbackslash{}", "_": r"\_", "&": r"\&", "%": r"\%", "#": r"\#",
                        "$": r"\$", "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\^{}"})


def latex_escape(text: str) -> str:
    return text.translate(_LATEX)


def number(value, places: int, pvalue: bool = False) -> str:
    """A number as the tables print it: ``-`` for NaN, ``< 0.0001`` for a p-value that rounds to 0."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if pvalue and places != ALL_DIGITS and 0 <= value < 0.5 * 10.0 ** -places:
        return f"< {10.0 ** -places:.{places}f}"
    return format_value(value, places)


def to_csv(frame: pd.DataFrame) -> str:
    return frame.to_csv(index=False).rstrip("\n")


#: how JSON lines write the numbers JSON has no literal for (docs/reproduce.md)
NOT_FINITE = {math.inf: "inf", -math.inf: "-inf"}


def _plain(value):
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (np.floating, float)):
        if math.isnan(value):
            return None
        return NOT_FINITE.get(float(value), float(value))
    if isinstance(value, (np.bool_,)):
        return bool(value)
    return value


def to_jsonl(frame: pd.DataFrame) -> str:
    """One JSON object per row; fields that are empty (NaN, None) are left out, except ``value``,
    which is a number, or the string ``"inf"``, ``"-inf"`` or ``"nan"`` (JSON has no literal for them:
    an ER over an original effect of exactly 0 is ``"inf"``; a mean over no topic is ``"nan"``)."""
    out = []
    for rec in frame.to_dict(orient="records"):
        line = {}
        for key, value in rec.items():
            nan = isinstance(value, (float, np.floating)) and math.isnan(value)
            value = _plain(value)
            missing = value is None or value is pd.NA
            if key == "value":
                line[key] = "nan" if nan else None if missing else value
            elif not missing:
                line[key] = value
        out.append(json.dumps(line))
    return "\n".join(out)


def _select(summary: pd.DataFrame, **where) -> float:
    rows = summary
    for key, value in where.items():
        rows = rows[rows[key] == value]
    return rows["value"].iloc[0] if len(rows) else math.nan


def _list_table(report: Reproduction, places: int) -> tuple[list[str], list[list[str]]]:
    s, runs = report.summary, report.runs
    header = ["cutoff", *[f"KTU {r}" for r in runs], *[f"RBO {r}" for r in runs]]
    rows = [[str(k), *[number(_select(s, statistic=stat, run=r, cutoff=k), places)
                       for stat in ("KTU", "RBO") for r in runs]] for k in report.cutoffs]
    return header, rows


def _measure_table(report: Reproduction, places: int) -> tuple[list[str], list[list[str]]]:
    s, runs = report.summary, report.runs
    short = {"original": "orig.", "reproduced": "rep."}
    header = ["measure", *[f"ARP {short[v]} {r}" for v in ("original", "reproduced") for r in runs]]
    header += [f"RMSE {r}" for r in runs] if report.paired else []
    header += [f"p {r}" for r in runs] + (["ER", "DeltaRI"] if len(runs) == len(RUNS) else [])
    rows = []
    for m in report.measures:
        row = [m, *[number(_select(s, statistic="ARP", measure=m, version=v, run=r), places)
                    for v in ("original", "reproduced") for r in runs]]
        row += [number(_select(s, statistic="RMSE", measure=m, run=r), places) for r in runs] if report.paired else []
        row += [number(_select(s, statistic="p_value", measure=m, run=r), places, pvalue=True) for r in runs]
        if len(runs) == len(RUNS):
            row += [number(_select(s, statistic=st, measure=m), places) for st in ("ER", "DeltaRI")]
        rows.append(row)
    return header, rows


def _notes(report: Reproduction) -> tuple[str, str]:
    n = len(report.topics["original"])
    depth = (f"each topic's top {report.depth:,} documents in trec_eval's order (repro_eval's depth: --depth)"
             if report.depth is not None else "every document of each topic (--depth 0)")
    lists = (f"Ranked lists: KTU and RBO ({report.rbo} RBO, p = {report.p:g}) of each original run and its "
             f"reproduction, means over the topics in either run, documents in trec_eval's order; runs cut to "
             f"{depth}")
    if report.paired:
        measures = (f"Effectiveness over the {n} qrels topics, {depth}; paired two-sided t-tests, original "
                    f"against reproduced")
    else:
        measures = (f"Effectiveness on two collections ({n} and {len(report.topics['reproduced'])} topics), "
                    f"{depth}; unpaired two-sided Student's t-tests, original against reproduced")
    if len(report.runs) == len(RUNS):
        er = report.summary[report.summary["statistic"] == "ER"]
        undefined = [str(m) for m, v in zip(er["measure"], er["value"], strict=True) if not math.isfinite(v)]
        if undefined:
            measures += (f"; ER of {', '.join(undefined)}: the original runs' ARPs are equal (no original effect to "
                         f"reproduce), so ER is inf (or nan when the reproduction has none either)")
    return lists, measures


def _markdown(header: list[str], rows: list[list[str]]) -> list[str]:
    return ["| " + " | ".join(header) + " |", "|---" * len(header) + "|", *("| " + " | ".join(r) + " |" for r in rows)]


def runs_markdown(report: Reproduction, places: int = 4) -> str:
    lists, measures = _notes(report)
    out = []
    if report.paired:
        out += [lists + ".", "", *_markdown(*_list_table(report, places)), ""]
    return "\n".join(out + [measures + ".", "", *_markdown(*_measure_table(report, places))])


def _latex(header: list[str], rows: list[list[str]], caption: str) -> list[str]:
    return [r"\begin{table}", r"\centering", r"\begin{tabular}{l" + "r" * (len(header) - 1) + "}", r"\toprule",
            " & ".join(latex_escape(h) for h in header) + r" \\", r"\midrule",
            *(" & ".join(latex_escape(c).replace("< ", "$<$ ") for c in r) + r" \\" for r in rows),
            r"\bottomrule", r"\end{tabular}", r"\caption{" + latex_escape(caption) + ".}", r"\end{table}"]


def runs_latex(report: Reproduction, places: int = 4) -> str:
    lists, measures = _notes(report)
    out = _latex(*_list_table(report, places), lists) + [""] if report.paired else []
    return "\n".join(out + _latex(*_measure_table(report, places), measures))


def runs_output(report: Reproduction, output: str, places: int, per_topic: bool = False) -> str:
    if output == "markdown":
        return runs_markdown(report, places)
    if output == "latex":
        return runs_latex(report, places)
    frame = report.frame(per_topic)
    return to_csv(frame) if output == "csv" else to_jsonl(frame)


def summary(frame: pd.DataFrame) -> str:
    """How many of the paper's cells the reproduced table matches within the paper's rounding."""
    matched = int(frame["within_rounding"].sum())
    return (f"{matched} of {len(frame)} cells match the paper within its rounding "
            f"(|ours - paper| <= half a unit of the last digit printed)")


def _table_rows(frame: pd.DataFrame, places: int) -> tuple[list[str], list[list[str]]]:
    header = ["run", "measure", "paper", "ours", "ours - paper", "match"]
    rows = [[str(r.run), str(r.measure), format_value(r.published, int(r.decimals)),
             number(r.ours, int(r.decimals)), number(r.difference, places), "yes" if r.within_rounding else "no"]
            for r in frame.itertuples()]
    return header, rows


def table_output(frame: pd.DataFrame, output: str, places: int) -> str:
    """Table mode's report: a row per cell of the paper's table, and (Markdown, LaTeX) the summary."""
    if output == "csv":
        return to_csv(frame)
    if output == "jsonl":
        return to_jsonl(frame)
    if output == "markdown":
        return "\n".join([*_markdown(*_table_rows(frame, places)), "", summary(frame) + "."])
    return "\n".join(_latex(*_table_rows(frame, places), summary(frame)))


def plot(report: Reproduction, path: str) -> None:
    """Per-topic differences, reproduced minus original, one panel per measure, with the baseline's
    and the advanced run's bars in one topic order (the baseline's difference, descending), saved
    as a PNG at ``path`` (:func:`figure`)."""
    fig = figure(report)  # matplotlib is imported there (or its absence said)
    import matplotlib.pyplot as plt
    fig.savefig(path, dpi=100, bbox_inches="tight")  # the legends beside the panels included
    plt.close(fig)


def figure(report: Reproduction):
    """:func:`plot`'s matplotlib figure. Each panel's legend stands beside it, outside the axes, so
    that it covers no bar (inside, any corner could hold the bars of the topics sorted there)."""
    if not report.paired:
        raise ValueError("--plot draws per-topic differences, which need the same topics: it is not drawn "
                         "for a reproduction on another collection (--rep-qrels)")
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise ValueError("--plot needs matplotlib: pip install 'ndcg-plugin[plot]'") from None
    fig, axes = plt.subplots(len(report.measures), 1, figsize=(8, 2.8 * len(report.measures)), squeeze=False)
    for ax, m in zip(axes[:, 0], report.measures, strict=True):
        diffs = {r: report.scores[("reproduced", r)].column(m) - report.scores[("original", r)].column(m)
                 for r in report.runs}
        first = diffs[report.runs[0]]
        order = np.argsort(-np.where(np.isnan(first), -np.inf, first), kind="stable")
        for r in report.runs:
            ax.bar(np.arange(len(order)), diffs[r][order], width=1.0, alpha=0.6, label=f"{r}: reproduced - original")
        ax.axhline(0, color="black", linewidth=0.8)
        ax.set_title(f"{m}: per-topic difference, reproduced - original (topics by the {report.runs[0]}'s difference)")
        ax.set_xlabel("topics")
        ax.set_ylabel("difference")
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0, fontsize="small")
    fig.tight_layout()
    return fig


def command(args, resolve) -> tuple[str, str | None, int]:
    """``ndcg-plugin reproduce runs|table`` (``args`` from the parser; ``resolve``: a QRELS argument
    to a file or a table, as every subcommand finds it): (the report's text, a line for standard
    error or None, the exit status: table mode's is 1 when a cell does not match the paper)."""
    read = {"run_format": args.run_format, "duplicates": args.duplicates}
    target = None
    if getattr(args, "plot", None):  # checked before the work
        from ..compare.writers import plot_target
        try:
            target = plot_target(args.plot)
        except ValueError as e:
            raise ValueError(f"--plot {args.plot}: {e}") from None
    qrels = resolve(args.qrels)
    if args.reproduce_command == "table":
        frame = table(args.published, qrels, args.runs, names=args.names, percent=args.percent, **read)
        note = summary(frame) if args.output in ("csv", "jsonl") else None
        return table_output(frame, args.output, args.places), note, 0 if frame["within_rounding"].all() else 1
    report = compute_runs(qrels, args.orig_baseline, args.orig_advanced, args.rep_baseline, args.rep_advanced,
                          args.measures, rep_qrels=args.rep_qrels and resolve(args.rep_qrels), rbo=args.rbo,
                          cutoffs=args.cutoffs or DEFAULT_CUTOFFS, p=args.rbo_p, depth=args.depth or None, **read)
    text = runs_output(report, args.output, args.places, args.per_topic)
    if not target:
        return text, None, 0
    try:
        plot(report, target)
    except (ValueError, OSError) as e:
        raise ValueError(f"--plot {target}: {getattr(e, 'strerror', None) or e}") from None
    import os
    return text, f"wrote {os.path.abspath(target)}", 0
