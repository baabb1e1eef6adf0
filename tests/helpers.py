"""Small builders for tests."""
from __future__ import annotations

import pandas as pd


def qrels_df(rows):
    return pd.DataFrame(rows, columns=["query_id", "doc_id", "relevance"])


def run_df(rows):
    return pd.DataFrame(rows, columns=["query_id", "doc_id", "score"])


def ranked(qid: str, rels: list[int], prefix: str = "d"):
    """A query whose run lists docs with these relevances at ranks 1..n (scores n..1), and
    qrels judging exactly those docs."""
    qrels = [(qid, f"{prefix}{i}", r) for i, r in enumerate(rels)]
    run = [(qid, f"{prefix}{i}", float(len(rels) - i)) for i in range(len(rels))]
    return qrels, run
