"""trec_eval as an oracle: per-query values of trec_eval measures on (qrels, run) dicts, through
pytrec_eval or a trec_eval binary, and the pieces the families' counterparts are built from
(:meth:`ndcg_plugin.measures.Family.counterpart`; :mod:`ndcg_plugin.trec_eval.check` compares).

The cut to k (trec_eval's ``-M k``) is done here, independently of the engine, with Python's
``sorted`` on (score descending, doc id descending), trec_eval's order. trec_eval is always run
as with ``-c``: a qrels query missing from the run scores 0.
"""
from __future__ import annotations

import os
import subprocess
import tempfile

from .aggregate import Values

PADDING_DOC = "\x00ndcg-plugin-padding"


class Oracle:
    """Per-query trec_eval values for measure strings, on given (qrels, run) dicts: pytrec_eval,
    or the trec_eval binary at ``trec_eval``."""

    def __init__(self, trec_eval: str | None):
        self.binary = trec_eval

    def __call__(self, qrels: dict, run: dict, measure: str, rel: int = 1) -> dict:
        if self.binary is None:
            import pytrec_eval
            ev = pytrec_eval.RelevanceEvaluator(pytrec_safe(qrels), {measure}, relevance_level=rel)
            res = ev.evaluate(run)
            key = measure.replace(".", "_")
            return {q: v[key] for q, v in res.items()}
        return _run_binary(self.binary, pytrec_safe(qrels, "ndcg-plugin-padding-doc"), run, measure, rel)


def pytrec_safe(qrels: dict, padding: str = PADDING_DOC) -> dict:
    """trec_eval 10.0 and pytrec_eval (0.5.x) allocate a negative size, and crash, for a query
    whose labels are all -2 or lower. A query with only negative labels gets one extra judged
    non-relevant (label 0) doc ``padding`` that no run retrieves: it changes none of the measures
    crosscheck asks for (label 0 has gain 0 and is not relevant) but avoids the crash."""
    return {q: (docs if any(r >= 0 for r in docs.values()) else {**docs, padding: 0}) for q, docs in qrels.items()}


def _run_binary(binary: str, qrels: dict, run: dict, measure: str, rel: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        qpath, rpath = os.path.join(tmp, "qrels"), os.path.join(tmp, "run")
        with open(qpath, "w") as f:
            for q, docs in qrels.items():
                for d, r in docs.items():
                    f.write(f"{q} 0 {d} {r}\n")
        with open(rpath, "w") as f:
            for q, docs in run.items():
                for i, (d, s) in enumerate(docs.items()):
                    f.write(f"{q} Q0 {d} {i + 1} {s!r} crosscheck\n")
        if not any(run.values()):
            return {}
        cmd = [binary, "-c", "-q", "-l", str(rel), "-m", measure, qpath, rpath]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} failed with status {proc.returncode}: {proc.stderr.strip()}")
    out = {}
    key = measure.replace(".", "_")
    for line in proc.stdout.splitlines():
        name, qid, value = line.split()
        if name == key and qid != "all":
            out[qid] = float(value)
    return out


def cut_run(run: dict, k: int) -> dict:
    """Each query's top k by (score descending, doc id descending): trec_eval's -M k."""
    return {q: dict(sorted(docs.items(), key=lambda x: (x[1], x[0]), reverse=True)[:k]) for q, docs in run.items()}


def per_query(values: list, hits: list | None = None, returned: list | None = None) -> Values:
    """Lists over the qrels queries as :class:`ndcg_plugin.measures.aggregate.Values`."""
    import numpy as np  # imported on use: `import ndcg_plugin` stays light

    def array(x):
        return None if x is None else np.asarray(x, dtype=np.float64)

    return Values(array(values), array(hits), array(returned))


def judged_run(qrels: dict, run: dict) -> dict:
    """The run without the docs a query's qrels do not judge with a label >= 0: trec_eval ``-J``,
    written out (pytrec_eval's flag can crash on a ranking it empties)."""
    return {q: {d: s for d, s in docs.items() if qrels.get(q, {}).get(d, -1) >= 0} for q, docs in run.items()}
