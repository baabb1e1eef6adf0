"""The unjudged family: how much of a ranking the qrels judge, and what that leaves uncertain:
trec_eval 10.0's ``unj.k``, ``rbp`` and ``rbp_resid`` (drop-in only: they have no ir-measures
name, :mod:`ndcg_plugin.measures.trec_only`), and ir-measures' built-in ``Judged@k``, served by
the engine when asked (``register(serve_builtins=True)``). A document is unjudged when the qrels
do not list it, or list it with a negative label ("in the pool, not judged")."""
from __future__ import annotations

from .base import ServedFamily, Spec, builtin_common, mark_relevant, pick, refuse
from .trec_only import trec_eval_measure


def _np():
    import numpy as np  # on use: `import ndcg_plugin` imports no numpy

    return np


def _unjudged(ranked):
    """Rows the qrels do not judge (not listed, or a negative label)."""
    return ranked.memo(("unjudged",), lambda: ~ranked.judged | (ranked.rel < 0))


def unj(index, ranked, spec: Spec):
    """``unj.k``: ``(unjudged docs ranked <= k) / k``: k also when the run returns fewer."""
    np = _np()
    from .aggregate import Values
    from .judgments import top_mask
    hit = top_mask(ranked, _unjudged(ranked), spec.cutoff)
    return Values(np.bincount(ranked.q[hit], minlength=ranked.nq) / float(spec.cutoff))


def judged(index, ranked, spec: Spec):
    """``Judged@k``: ``(judged docs ranked <= k) / min(k, num_ret)`` (the qrels list them, whatever
    their label), 0 for a query without a returned doc (ir-measures' judged provider divides by the
    docs returned within k)."""
    np = _np()
    from .aggregate import Values
    from .judgments import ratio, top_mask
    hit = top_mask(ranked, ranked.judged, spec.cutoff)
    returned = ranked.returned if spec.cutoff is None else np.minimum(ranked.returned, spec.cutoff)
    return Values(ratio(np.bincount(ranked.q[hit], minlength=ranked.nq).astype(np.float64), returned))


def _powers(p: float, n: int):
    """``[1, p, p*p, ...]`` (n + 1 of them), each the previous times p, as trec_eval multiplies."""
    np = _np()
    return np.multiply.accumulate(np.r_[1.0, np.full(n, p)])


def rbp(index, ranked, spec: Spec):
    """``rbp`` (p = 0.9): ``(1 - p) * sum over ranks i (0-based) of gain_i * p^i``, with the gain
    the label, divided by the query's largest label when that is above 1 (trec_eval scales gains
    into 0..1; see docs/cli.md on the variable it reads uninitialised), 0 for unjudged docs."""
    np = _np()
    from .aggregate import Values
    (p,) = spec.params
    some = ranked.relevant(1)  # the rows with a gain (a label > 0); trec_eval adds nothing for the others
    q, rank = ranked.q[some], ranked.rank[some]
    top = index.memo(("largest label",), lambda: _largest(index))[ranked.codes[q]]
    gain = ranked.rel[some].astype(np.float64)
    gain = np.where(top > 1, gain / np.where(top > 1, top, 1.0), gain)
    powers = _powers(p, ranked.ranks_held())
    sums = np.bincount(q, weights=gain * powers[rank], minlength=ranked.nq)
    return Values((1.0 - p) * sums)


def _largest(index):
    np = _np()
    out = np.zeros(index.nq)
    judged = index.rel >= 0
    np.maximum.at(out, index.key_q[judged], index.rel[judged].astype(np.float64))
    return out


def rbp_resid(index, ranked, spec: Spec):
    """``rbp_resid`` (p = 0.9): with n docs returned, ``p^n + (1 - p) * sum over the unjudged
    ranks i of p^i`` (RBP's most it could rise), 0 when every doc returned is judged."""
    np = _np()
    from .aggregate import Values
    (p,) = spec.params
    powers = _powers(p, int(ranked.returned.max()) if ranked.nq else 0)
    unjudged = _unjudged(ranked)
    sums = np.bincount(ranked.q[unjudged], weights=powers[ranked.rank[unjudged]], minlength=ranked.nq)
    some = np.bincount(ranked.q[unjudged], minlength=ranked.nq) > 0
    return Values(np.where(some, powers[ranked.returned] + (1.0 - p) * sums, 0.0))


#: how many characters of relstring one float carries (4 bits each: exact in a double's 53)
RELSTRING_CHUNK = 13
#: relstring's characters by code (0: no document), as trec_eval prints them
RELSTRING_CHARS = " 0123456789>-."


def relstring(index, ranked, spec: Spec):
    """``relstring.N`` (N = 10), a string: one character per doc ranked <= N, its label 0..9,
    ``>`` above 9, ``-`` not in the qrels, ``.`` a negative label (in the pool, not judged). As
    numbers: the characters of ranks ``start`` (``spec.params``) up to ``spec.cutoff`` (at most
    :data:`RELSTRING_CHUNK` of them), each one's code (:data:`RELSTRING_CHARS`) times 16^(rank - start),
    added (exactly); :func:`relstring_text` reads them back."""
    np = _np()
    from .aggregate import Values
    (start,) = spec.params
    chunk = (ranked.rank >= int(start)) & (ranked.rank < spec.cutoff)
    rel = ranked.rel[chunk]
    code = np.where(~ranked.judged[chunk], 12, np.where(rel < 0, 13, np.where(rel > 9, 11, rel + 1)))
    weights = code * np.float64(16.0) ** (ranked.rank[chunk] - int(start))
    return Values(np.bincount(ranked.q[chunk], weights=weights, minlength=ranked.nq))


def relstring_text(chunks: list) -> str:
    """relstring's characters from the values of its chunks (:func:`relstring`), in order."""
    out = []
    for value in chunks:
        number = int(value)
        while number:
            out.append(RELSTRING_CHARS[number % 16])
            number //= 16
    return "".join(out)


_LOCAL = {"unj": unj, "judged": judged, "rbp": rbp, "rbp_resid": rbp_resid, "relstring": relstring}
UNJ = trec_eval_measure("unj", "unjudged", "unj", "trec_eval's unj.k", thresholded=False)
RBP = trec_eval_measure("rbp", "unjudged", "rbp", "trec_eval's rbp", thresholded=False)
RBP_RESID = trec_eval_measure("rbp_resid", "unjudged", "rbp_resid", "trec_eval's rbp_resid", thresholded=False)
RELSTRING = trec_eval_measure("relstring", "unjudged", "relstring", "trec_eval's relstring.N (a string)",
                              thresholded=False)


class UnjudgedFamily(ServedFamily):
    """unj.k, rbp, rbp_resid, relstring (trec_eval's) and Judged@k (ir-measures')."""
    name = "unjudged"
    variants = tuple(_LOCAL)
    builtins = ("Judged",)
    trec_eval_names = {"unj": ("unj@{k}", None), "rbp": ("rbp(values=(0.9,))", None),
                       "rbp_resid": ("rbp_resid(values=(0.9,))", None), "relstring": ("relstring", None)}
    conventions = (
        "| `Judged@k` | judged docs (listed in the qrels, any label) in the top k over min(k, docs returned), ranked "
        "by trec_eval's order (ir-measures' judged provider breaks ties by doc id ascending); a query absent "
        "from the run scores 0 | `test_judged_at_k_served_natively` |",
    )
    formula = "\n".join(f.__doc__ for f in _LOCAL.values())

    def builtin_spec(self, measure) -> Spec:
        """``Judged@k`` (``Judged``: the whole ranking)."""
        cutoff, _ = builtin_common(measure)
        if measure.NAME != "Judged":
            refuse(measure, "the unjudged family serves Judged only")
        return Spec(self.name, "judged", cutoff)

    def depth(self, spec: Spec) -> int | None:
        return pick({"unj": spec.cutoff, "judged": spec.cutoff, "rbp": None, "rbp_resid": None,
                     "relstring": spec.cutoff}, spec,
                    "the local engine")

    def values(self, index, ranked, spec: Spec):
        return pick(_LOCAL, spec, "the local engine")(index, ranked, spec)

    def explain(self, trace, shown, measure, num) -> tuple:
        return mark_relevant(trace, shown), None, [f"{measure.NAME} = {num(trace.value)}"]

    def counterpart(self, measure, qrels: dict, run: dict, oracle) -> tuple:
        return None, ("no counterpart: trec_eval has no Judged (its unj.k counts negative labels as unjudged and "
                      "divides by k); tests/test_builtins.py compares it with ir-measures' judged provider")


FAMILY = UnjudgedFamily()
