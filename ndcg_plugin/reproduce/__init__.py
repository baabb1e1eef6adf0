"""Reproduction reports: how close reproduced runs are to the original runs (:func:`runs`), and
how close a reproduced table is to a paper's printed table (:func:`table`, in
:mod:`ndcg_plugin.reproduce.published`). docs/reproduce.md defines every statistic, with its
reference and where it differs from repro_eval 0.5.0.

Runs mode follows Breuer et al., "How to Measure the Reproducibility of System-Oriented IR
Experiments" (SIGIR 2020). The original baseline and advanced runs are compared with their
reproductions, each pair as ``run`` ``baseline`` or ``advanced``:

- ranked lists (same collection only): KTU and RBO per topic and their means, at each cutoff
  (:mod:`ndcg_plugin.reproduce.lists`; documents in trec_eval's order);
- effectiveness, per measure: ARP, the number ``eval`` prints, of each of the four runs; RMSE of
  the per-topic values (same collection only);
- overall effects, per measure: ER and DeltaRI from the four ARPs;
- p-values of t-tests, original against reproduced: paired over topics on the same collection
  (the paper's replicability), unpaired Student's t-test (pooled variance) on another
  collection (``rep_qrels``; the paper's reproducibility). repro_eval names the two the other
  way round (its RpdEvaluator is the paired one).

A topic without a value for a measure (a measure that leaves misses out) is left out of that
measure's RMSE and tests, in both runs of a pair; ``topics`` counts the topics each number is
over.
"""
from __future__ import annotations

import math
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from ..engine.depth import top_documents
from ..evaluation import Evaluation
from ..measures import parse_measures
from ..reading.sources import source_name
from . import lists
from .scores import Scored, check_topics, evaluate, read_qrels, read_run, topics_of

#: the paper's cutoffs for KTU and RBO
DEFAULT_CUTOFFS = (5, 10, 20, 50, 100, 1000)
#: repro_eval's depth: its command line keeps each topic's top 1,000 documents before it evaluates
DEFAULT_DEPTH = 1000
#: each RBO variant's default persistence: repro_eval 0.5.0's, and the paper's
DEFAULT_P = {"truncated": 0.95, "ext": 0.8}
COLUMNS = ["statistic", "run", "version", "measure", "cutoff", "topic", "value", "topics", "test", "rbo", "p"]
RUNS = ("baseline", "advanced")
VERSIONS = ("original", "reproduced")


@dataclass
class Reproduction:
    """A runs-mode report: the settings, each run's :class:`Scored` (by (version, run)), the
    per-topic KTU and RBO (by (statistic, run, cutoff)), and :attr:`summary`, one row per number."""
    measures: list[str]
    cutoffs: list[int]
    rbo: str
    p: float
    paired: bool
    topics: dict[str, list[str]]
    depth: int | None = DEFAULT_DEPTH   # each topic's documents evaluated (None: all)
    scores: dict[tuple[str, str], Scored] = field(default_factory=dict)
    per_topic_lists: dict[tuple[str, str, int], np.ndarray] = field(default_factory=dict)
    present: dict[str, np.ndarray] = field(default_factory=dict)  # run -> topics in either run of the pair
    summary: pd.DataFrame | None = None

    @property
    def runs(self) -> list[str]:
        return [r for r in RUNS if ("original", r) in self.scores]

    def frame(self, per_topic: bool = False) -> pd.DataFrame:
        """The summary rows, then with ``per_topic`` each topic's KTU and RBO (topics in either run)
        and each run's per-topic value of each measure (``statistic`` ``score``)."""
        if not per_topic:
            return self.summary
        parts = [self.summary]
        for (stat, run, k), values in self.per_topic_lists.items():
            keep = self.present[run]
            topics = np.array(self.topics["original"], dtype=object)[keep]
            extra = {"rbo": self.rbo, "p": self.p} if stat == "RBO" else {}
            parts.append(pd.DataFrame({"statistic": stat, "run": run, "cutoff": k, "topic": topics,
                                       "value": values[keep], **extra}))
        for (version, run), scored in self.scores.items():
            for j, m in enumerate(scored.measures):
                parts.append(pd.DataFrame({"statistic": "score", "run": run, "version": version, "measure": m,
                                           "topic": scored.topics, "value": scored.values[:, j]}))
        return _typed(pd.concat(parts, ignore_index=True)[COLUMNS])


def _typed(frame: pd.DataFrame) -> pd.DataFrame:
    """Counts as integers (with gaps), not floats."""
    return frame.astype({"cutoff": "Int64", "topics": "Int64"})


def _mean(values: np.ndarray) -> tuple[float, int]:
    valued = values[~np.isnan(values)]
    return (float(valued.mean()) if len(valued) else math.nan), len(valued)


def _ratio(num: float, den: float) -> float:
    with np.errstate(divide="ignore", invalid="ignore"):
        return float(np.float64(num) / np.float64(den))


def _two_sided(t: float, df: int) -> float:
    """P(|T| >= |t|) for Student's t distribution with ``df`` degrees of freedom."""
    from scipy.special import stdtr  # not scipy.stats: a third of its import time
    return float(2 * stdtr(df, -abs(t)))


def paired_pvalue(orig: np.ndarray, rep: np.ndarray) -> float:
    """Two-sided paired t-test (as scipy's ``ttest_rel``, Matlab's ``ttest``): t = mean(d) /
    (sd(d) / sqrt(n)) of the differences d, n - 1 degrees of freedom; 1.0 when every difference is
    0 (scipy: NaN), NaN with fewer than 2 pairs."""
    n = len(orig)
    if n < 2:
        return math.nan
    d = np.asarray(rep, dtype=np.float64) - np.asarray(orig, dtype=np.float64)
    if not np.any(d):
        return 1.0
    var = d.var(ddof=1)
    return _two_sided(d.mean() / math.sqrt(var / n) if var > 0 else math.inf, n - 1)


def unpaired_pvalue(orig: np.ndarray, rep: np.ndarray) -> float:
    """Two-sided Student's t-test with pooled variance (as scipy's ``ttest_ind``, Matlab's ``ttest2``):
    n1 + n2 - 2 degrees of freedom; 1.0 when both samples are constant and equal, NaN without a
    degree of freedom."""
    a, b = np.asarray(orig, dtype=np.float64), np.asarray(rep, dtype=np.float64)
    n1, n2 = len(a), len(b)
    if n1 < 1 or n2 < 1 or n1 + n2 < 3:
        return math.nan
    df = n1 + n2 - 2
    pooled = ((n1 - 1) * (a.var(ddof=1) if n1 > 1 else 0.0) + (n2 - 1) * (b.var(ddof=1) if n2 > 1 else 0.0)) / df
    diff = a.mean() - b.mean()
    if pooled == 0:
        return 1.0 if diff == 0 else 0.0
    return _two_sided(diff / math.sqrt(pooled * (1 / n1 + 1 / n2)), df)


def _effectiveness(report: Reproduction, run: str) -> list[dict]:
    orig, rep = report.scores[("original", run)], report.scores[("reproduced", run)]
    rows = []
    for m in report.measures:
        for version, scored in (("original", orig), ("reproduced", rep)):
            rows.append({"statistic": "ARP", "run": run, "version": version, "measure": m,
                         "value": scored.aggregates[m], "topics": int((~np.isnan(scored.column(m))).sum())})
        o, r = orig.column(m), rep.column(m)
        if report.paired:
            both = ~np.isnan(o) & ~np.isnan(r)
            d = r[both] - o[both]
            rmse = math.sqrt(float(np.mean(d * d))) if len(d) else math.nan
            rows.append({"statistic": "RMSE", "run": run, "measure": m, "value": rmse, "topics": int(both.sum())})
            p, n, test = paired_pvalue(o[both], r[both]), int(both.sum()), "paired t"
        else:
            o, r = o[~np.isnan(o)], r[~np.isnan(r)]
            p, n, test = unpaired_pvalue(o, r), len(o) + len(r), "unpaired t"
        rows.append({"statistic": "p_value", "run": run, "measure": m, "value": p, "topics": n, "test": test})
    return rows


def _effects(report: Reproduction) -> list[dict]:
    rows = []
    for m in report.measures:
        arp = {(v, r): report.scores[(v, r)].aggregates[m] for v in VERSIONS for r in RUNS}
        er = _ratio(arp[("reproduced", "advanced")] - arp[("reproduced", "baseline")],
                    arp[("original", "advanced")] - arp[("original", "baseline")])
        ri = {v: _ratio(arp[(v, "advanced")] - arp[(v, "baseline")], arp[(v, "baseline")]) for v in VERSIONS}
        rows.append({"statistic": "ER", "measure": m, "value": er})
        rows.append({"statistic": "DeltaRI", "measure": m, "value": ri["original"] - ri["reproduced"]})
    return rows


def _list_rows(report: Reproduction, run: str) -> list[dict]:
    rows = []
    present = report.present[run]
    for stat in ("KTU", "RBO"):
        for k in report.cutoffs:
            values = report.per_topic_lists[(stat, run, k)]
            value, n = _mean(values[present])
            extra = {"rbo": report.rbo, "p": report.p} if stat == "RBO" else {}
            rows.append({"statistic": stat, "run": run, "cutoff": k, "value": value, "topics": n, **extra})
    return rows


def _compare_lists(report: Reproduction, run: str, orig: lists.Ranked, rep: lists.Ranked, n_topics: int) -> None:
    depth = max(report.cutoffs)
    k_orig, k_rep = lists.doc_keys([orig, rep])
    both = lists.pair(lists.lists_of(orig, k_orig, n_topics, depth), lists.lists_of(rep, k_rep, n_topics, depth))
    present = (both.orig_len > 0) | (both.rep_len > 0)
    report.present[run] = present
    for k in report.cutoffs:
        report.per_topic_lists[("KTU", run, k)] = lists.ktu(both, k)
    if report.rbo == "truncated":
        rbo = lists.rbo_truncated(both.overlap, present, report.cutoffs, report.p)
    else:
        rbo = lists.rbo_ext(both.overlap, both.orig_len, both.rep_len, report.cutoffs, report.p)
    for k in report.cutoffs:
        report.per_topic_lists[("RBO", run, k)] = rbo[k]


def _read_ahead(jobs: list, work) -> Iterator:
    """``work(job)`` for each job, in order, the next one on a worker thread while the caller uses
    this one's result (Arrow's parser and numpy's sorts leave the GIL): at most two runs held."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        pending = pool.submit(work, jobs[0]) if jobs else None
        for i in range(len(jobs)):
            result = pending.result()
            pending = pool.submit(work, jobs[i + 1]) if i + 1 < len(jobs) else None
            yield result
            del result


def _settings(cutoffs, rbo: str, p: float | None) -> tuple[list[int], float]:
    cutoffs = sorted({int(k) for k in cutoffs})
    if not cutoffs or cutoffs[0] < 1:
        raise ValueError(f"cutoffs must be integers >= 1, got {cutoffs}")
    if rbo not in lists.RBO_VARIANTS:
        raise ValueError(f"rbo must be 'truncated' (repro_eval's) or 'ext' (the paper's), got {rbo!r}")
    p = DEFAULT_P[rbo] if p is None else float(p)
    if not 0 < p < 1:
        raise ValueError(f"the RBO persistence p must be between 0 and 1 (exclusive), got {p}")
    return cutoffs, p


def compute_runs(qrels: Any, orig_baseline: Any, orig_advanced: Any, rep_baseline: Any, rep_advanced: Any,
                 measures: list, *, rep_qrels: Any = None, cutoffs=DEFAULT_CUTOFFS, rbo: str = "truncated",
                 p: float | None = None, run_format: str = "auto", duplicates: str = "error",
                 depth: int | None = DEFAULT_DEPTH) -> Reproduction:
    """The report of :func:`runs`, as a :class:`Reproduction` (for the writers and the plot)."""
    cutoffs, p = _settings(cutoffs, rbo, p)
    if depth is not None and (isinstance(depth, bool) or not isinstance(depth, int) or depth < 1):
        raise ValueError(f"depth must be a whole number >= 1 (or None: every document), got {depth!r}")
    if (orig_advanced is None) != (rep_advanced is None):
        raise ValueError("give both advanced runs (original and reproduced) or neither")
    measures = parse_measures(measures)
    if not measures:
        raise ValueError("give at least one measure")
    tables = {"original": read_qrels(qrels, duplicates)}
    tables["reproduced"] = tables["original"] if rep_qrels is None else read_qrels(rep_qrels, duplicates)
    topics = {v: topics_of(t) for v, t in tables.items()}
    # the measures routed once per qrels, each qrels indexed once (for every run and block)
    evaluations = {"original": Evaluation(measures, qrels=tables["original"])}
    evaluations["reproduced"] = (evaluations["original"] if rep_qrels is None
                                 else Evaluation(measures, qrels=tables["reproduced"]))
    report = Reproduction([str(m) for m in measures], cutoffs, rbo, p, rep_qrels is None, topics, depth)
    given = {("original", "baseline"): orig_baseline, ("reproduced", "baseline"): rep_baseline,
             ("original", "advanced"): orig_advanced, ("reproduced", "advanced"): rep_advanced}
    order = [(v, r) for r in RUNS for v in VERSIONS if given[(v, r)] is not None]
    list_depth = max(cutoffs) if report.paired else None

    def read(key: tuple[str, str]):  # on the worker thread: read, check, rank
        arrow_topics = pa.array(topics[key[0]], type=pa.large_string())
        table = read_run(given[key], run_format, duplicates)
        check_topics(table, arrow_topics, source_name(given[key], f"{key[0]} {key[1]} run"))
        table = top_documents(table, depth)  # repro_eval's trim: each topic's top `depth` documents
        return table, list_depth and lists.rank_run(table, arrow_topics, list_depth)

    ranked = {}
    for (version, run), (table, ranked[version]) in zip(order, _read_ahead(order, read), strict=True):
        report.scores[(version, run)] = evaluate(evaluations[version], table, topics[version])
        del table
        if report.paired and version == "reproduced":
            _compare_lists(report, run, ranked.pop("original"), ranked.pop("reproduced"), len(topics["original"]))
    rows = []
    for run in report.runs:
        rows += (_list_rows(report, run) if report.paired else []) + _effectiveness(report, run)
    if len(report.runs) == 2:
        rows += _effects(report)
    report.summary = _typed(pd.DataFrame(rows, columns=COLUMNS))
    return report


def runs(qrels: Any, orig_baseline: Any, orig_advanced: Any, rep_baseline: Any, rep_advanced: Any, measures: list,
         *, rep_qrels: Any = None, cutoffs=DEFAULT_CUTOFFS, rbo: str = "truncated", p: float | None = None,
         per_topic: bool = False, run_format: str = "auto", duplicates: str = "error",
         depth: int | None = DEFAULT_DEPTH) -> pd.DataFrame:
    """How close reproduced runs are to the original runs (see the module docstring): one row per
    number, with the columns :data:`COLUMNS` (``statistic``: ARP, RMSE, p_value, ER, DeltaRI, KTU,
    RBO, and with ``per_topic`` also ``score``). Runs and qrels in any form :func:`ndcg_plugin.read`
    takes; ``orig_advanced`` and ``rep_advanced`` may both be None (no ER, DeltaRI). ``rep_qrels``:
    the reproduction's qrels on another collection (unpaired tests; no KTU, RBO, RMSE).
    ``cutoffs``: KTU and RBO's; ``rbo``: ``"truncated"`` (repro_eval's, p 0.95) or ``"ext"`` (the
    paper's, p 0.8); ``p`` overrides the persistence; ``depth``: each topic's top documents
    evaluated (trec_eval's order), repro_eval's 1,000 by default, None for every document."""
    return compute_runs(qrels, orig_baseline, orig_advanced, rep_baseline, rep_advanced, measures,
                        rep_qrels=rep_qrels, cutoffs=cutoffs, rbo=rbo, p=p, run_format=run_format,
                        duplicates=duplicates, depth=depth).frame(per_topic)


def table(published: Any, qrels: Any, runs: Any, **options) -> pd.DataFrame:
    """A reproduced table against the paper's: see :func:`ndcg_plugin.reproduce.published.table`."""
    from .published import table as published_table
    return published_table(published, qrels, runs, **options)
