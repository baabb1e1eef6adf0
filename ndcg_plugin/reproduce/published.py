"""Table mode of a reproduction report: a paper's printed table, cell by cell, against the same
measures computed here on the runs and qrels (as ``eval`` computes them).

The paper's table is a CSV file (or a DataFrame) with the columns ``run``, ``measure``,
``value`` and, optionally, ``decimals`` (the number of decimals the paper printed; without it,
the decimals of ``value`` as written: ``0.310`` has 3). A cell matches when our value is within
the paper's rounding: ``|ours - paper| <= 0.5 * 10^-decimals`` (so both rounding half up and
half to even are accepted at the boundary). ``percent``: the paper printed values x 100.
"""
from __future__ import annotations

import math
import os
import re
from typing import Any

import pandas as pd
import pyarrow as pa

from ..errors import InputError
from ..evaluation import Evaluation
from ..measures import parse_measures
from ..reading.sources import source_name
from .scores import check_topics, evaluate, read_qrels, read_run, topics_of

REQUIRED = ("run", "measure", "value")
OPTIONAL = ("decimals",)
COLUMNS = ["run", "measure", "published", "decimals", "ours", "difference", "units", "within_rounding"]
NUMBER = re.compile(r"^[+-]?(\d+(?:\.\d*)?|\.\d+)$")  # no \d+\.?\d*: quadratic on a long cell that fails


def _cells(frame: pd.DataFrame, source: str) -> pd.DataFrame:
    """The paper's cells, validated: (run, measure, published, decimals, line) per row."""
    frame = frame.rename(columns=lambda c: str(c).strip())
    columns = list(frame.columns)
    missing = [c for c in REQUIRED if c not in columns]
    unknown = [c for c in columns if c not in REQUIRED + OPTIONAL]
    if missing or unknown:
        what = f"lacks the column(s) {', '.join(missing)}" if missing else f"has unknown column(s) {', '.join(unknown)}"
        raise InputError(source, None, f"{what}; a paper's table has the columns run, measure, value and, "
                         f"optionally, decimals (found: {', '.join(columns) or 'none'})")
    rows, seen = [], {}
    for i, rec in enumerate(frame.to_dict(orient="records")):
        line = i + 2  # the header is line 1
        run, measure, text = (str(rec[c]).strip() if pd.notna(rec[c]) else "" for c in REQUIRED)
        if not run or not measure:
            raise InputError(source, line, "a cell needs a run and a measure")
        if not NUMBER.match(text):
            raise InputError(source, line, f"value {text!r} is not a decimal number as a paper prints it (e.g. 0.3013)")
        decimals = len(text.partition(".")[2])
        given = rec.get("decimals")
        if given is not None and pd.notna(given) and str(given).strip():
            if not str(given).strip().isdigit():
                raise InputError(source, line, f"decimals {given!r} is not an integer >= 0")
            decimals = int(str(given).strip())
        if (run, measure) in seen:
            raise InputError(source, line, f"run {run!r}, measure {measure!r} is also on line {seen[(run, measure)]}")
        seen[(run, measure)] = line
        rows.append((run, measure, float(text), decimals, line))
    if not rows:
        raise InputError(source, None, "the paper's table has no cells")
    return pd.DataFrame(rows, columns=["run", "measure", "published", "decimals", "line"])


def read_published(published: Any) -> tuple[pd.DataFrame, str]:
    """(the paper's cells, the source's name) from a CSV file or a DataFrame."""
    if isinstance(published, pd.DataFrame):
        return _cells(published.astype(object), "published DataFrame"), "published DataFrame"
    source = source_name(published, "published table")
    try:
        frame = pd.read_csv(published, dtype=str, keep_default_na=False, skipinitialspace=True)
    except FileNotFoundError:
        raise InputError(source, None, "file not found") from None
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as e:
        raise InputError(source, None, f"not a CSV table: {str(e).strip()}") from None
    return _cells(frame, source), source


def _names(runs: Any, names: list[str] | None) -> dict[str, Any]:
    if isinstance(runs, dict):
        return dict(runs)
    runs = list(runs)
    names = names or [os.path.basename(source_name(r, f"run {i + 1}")) for i, r in enumerate(runs)]
    if len(names) != len(runs):
        raise ValueError(f"{len(names)} names for {len(runs)} runs")
    if len(set(names)) != len(names):
        raise ValueError(f"run names must differ, got {names}; give names")
    return dict(zip(names, runs, strict=True))


def _aliases(names: list[str]) -> dict[str, str]:
    """Each name, and each name without its extensions (``bm25.trec.gz``: ``bm25.trec``, ``bm25``)
    when no other run has that stem, to the run's name."""
    out: dict[str, list[str]] = {}
    for name in names:
        stems = {name}
        stem = name
        while "." in stem.strip("."):
            stem = stem.rsplit(".", 1)[0]
            stems.add(stem)
        for s in stems:
            out.setdefault(s, []).append(name)
    aliases = {alias: found[0] for alias, found in out.items() if len(found) == 1}
    return {**aliases, **{name: name for name in names}}  # a run's own name wins


def table(published: Any, qrels: Any, runs: Any, *, names: list[str] | None = None, percent: bool = False,
          run_format: str = "auto", duplicates: str = "error") -> pd.DataFrame:
    """The paper's table (``published``: a CSV file or DataFrame, see the module docstring) against
    ``runs`` on ``qrels``: one row per cell, with the columns :data:`COLUMNS`. ``runs``: a dict
    {name: run} or a list of runs, named by ``names`` or their file names; the table's ``run``
    names a run by its name or its file name without extensions."""
    cells, source = read_published(published)
    by_name = _names(runs, names)
    alias = _aliases(list(by_name))
    for r in cells.itertuples():
        if r.run not in alias:
            raise InputError(source, r.line, f"run {r.run!r} is none of the runs given ({', '.join(by_name)})")
        try:
            parse_measures([r.measure])
        except ValueError as e:
            raise InputError(source, r.line, str(e)) from None
    cells["run"] = [alias[r] for r in cells["run"]]
    unused = [n for n in by_name if n not in set(cells["run"])]
    if unused:
        raise ValueError(f"run {unused[0]} is in no row of {source}: give the runs of the paper's table")
    qrels_table = read_qrels(qrels, duplicates)
    topics = topics_of(qrels_table)
    parsed = {m: parse_measures([m])[0] for m in dict.fromkeys(cells["measure"])}
    every = Evaluation(parsed.values(), qrels=qrels_table)  # routed once, the qrels indexed once
    ours = {}
    for name, run in by_name.items():
        wanted = list(dict.fromkeys(cells.loc[cells["run"] == name, "measure"]))
        run_table = read_run(run, run_format, duplicates)
        check_topics(run_table, pa.array(topics, type=pa.large_string()), source_name(run, name))
        scored = evaluate(every.only(parsed[m] for m in wanted), run_table, topics)
        ours.update({(name, m): scored.aggregates[str(parsed[m])] for m in wanted})
    scale = 100.0 if percent else 1.0
    cells["ours"] = [ours[(r.run, r.measure)] * scale for r in cells.itertuples()]
    cells["difference"] = cells["ours"] - cells["published"]
    cells["units"] = cells["difference"] * 10.0 ** cells["decimals"]
    half = 0.5 * 10.0 ** -cells["decimals"].astype(float)
    cells["within_rounding"] = (cells["difference"].abs() <= half * (1 + 1e-9)) & cells["ours"].map(math.isfinite)
    return cells[COLUMNS]
