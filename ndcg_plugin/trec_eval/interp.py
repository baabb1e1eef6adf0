"""trec_eval 10.0's interpolated precision (``iprec_at_recall``, ``11pt_avg``), for
``ndcg-plugin trec_eval``.

pytrec_eval bundles trec_eval 9's version of these two measures, which turns a recall level into
a number of relevant documents as ``(long) (level * num_rel + 0.9)``; trec_eval 10.0 uses
``lround(level * num_rel)``, and the two differ (on the trec_eval suite, ``iprec_at_recall_0.60``
of topic 302: 0.1420 against 10.0's 0.1528). They are computed here as trec_eval 10.0 computes
them (m_iprec_at_recall.c, m_11pt_avg.c), on trec_eval's ranking of each query
(:func:`ranked_labels`), NaN included where trec_eval divides 0 by 0.
"""
from __future__ import annotations

import math
import re

NONPOOL = -1     # a retrieved document the qrels do not judge
UNJUDGED = -2    # judged with a negative label: in the pool, not judged
DEFAULT_LEVELS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)

_FLOAT = re.compile(r"\s*[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")


def atof(text: str) -> float:
    """C's atof: the longest leading number, 0.0 when there is none."""
    m = _FLOAT.match(text)
    return float(m.group()) if m else 0.0


def levels(params: str, ordered: bool) -> tuple[float, ...]:
    """The recall levels of ``iprec_at_recall.PARAMS`` (sorted, ``ordered``) or ``11pt_avg.PARAMS``
    (as given); a repeated level is a ValueError, as trec_eval refuses it."""
    if not params:
        return DEFAULT_LEVELS
    values = [atof(p) for p in params.split(",")]
    if ordered:
        values.sort()
        if len(set(values)) != len(values):
            raise ValueError(f"duplicate cutoffs in iprec_at_recall.{params}")
    return tuple(values)


def ranked_labels(judged: dict, ranking: dict, max_docs: int | None, judged_only: bool) -> list[int]:
    """The labels of a query's ranking in trec_eval's order (score descending, then doc id
    descending), cut at ``max_docs`` (-M), then without unjudged documents (-J)."""
    order = sorted(ranking.items(), key=lambda item: (item[1], item[0]), reverse=True)
    if max_docs is not None:
        order = order[:max_docs]
    labels = []
    for doc, _ in order:
        label = judged.get(doc)
        labels.append(NONPOOL if label is None else UNJUDGED if label < 0 else label)
    return [x for x in labels if x >= 0] if judged_only else labels


def _lround(x: float) -> int:
    """C's lround: halves away from zero."""
    return int(math.floor(abs(x) + 0.5)) * (1 if x >= 0 else -1)


def interpolated(labels: list[int], num_rel: int, level: int, recall_levels: tuple) -> list[float]:
    """Interpolated precision at each recall level (trec_eval 10.0): the highest precision at any
    rank at or after the one where that many relevant documents are reached."""
    cutoffs = [_lround(f * num_rel) for f in recall_levels]
    num_ret = len(labels)
    num_rel_ret = sum(1 for x in labels if x >= level)
    values = [0.0] * len(cutoffs)
    current = len(cutoffs) - 1
    while current >= 0 and cutoffs[current] > num_rel_ret:
        current -= 1
    int_precis = num_rel_ret / num_ret if num_ret else math.nan
    rel_so_far = num_rel_ret
    i = num_ret
    while i > 0 and rel_so_far > 0:
        precis = rel_so_far / i
        if int_precis < precis:
            int_precis = precis
        if labels[i - 1] >= level:
            while current >= 0 and rel_so_far == cutoffs[current]:
                values[current] = int_precis
                current -= 1
            rel_so_far -= 1
        i -= 1
    while current >= 0:
        values[current] = int_precis
        current -= 1
    return values


def eleven_point(labels: list[int], num_rel: int, level: int, recall_levels: tuple) -> float:
    """``11pt_avg``: the mean of :func:`interpolated`, summed from the last level down as
    trec_eval sums it."""
    total = 0.0
    for v in reversed(interpolated(labels, num_rel, level, recall_levels)):
        total += v
    return total / len(recall_levels)


def num_rel(judged: dict, level: int) -> int:
    """Relevant documents of a query, as trec_eval counts them (labels >= max(level, 0))."""
    return sum(1 for x in judged.values() if x >= 0 and x >= level)


def level_name(value: float) -> str:
    """trec_eval's name of a recall level (``%3.2f``)."""
    return f"{value:3.2f}"
