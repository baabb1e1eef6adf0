"""The trec_eval drop-in's fast path: every requested measure computed by the engine, on the run
file streamed (memory flat in its size), never as Python dicts. It returns exactly the
:class:`~ndcg_plugin.trec_eval.report.Report` the dict path (:func:`ndcg_plugin.trec_eval.command.evaluate`
with ``use_engine=False`` is trec_eval's own code through pytrec_eval) would, or declines with None:
for a measure only pytrec_eval computes, ``-M 0`` (every ranking empty), a run read from
standard input, and ``11pt_avg`` levels not in increasing order (trec_eval's loop then depends on
their order). ``-M N`` is the engine's depth (:class:`~ndcg_plugin.evaluation.ReadOptions`):
each query's first N rows in trec_eval's order, cut after the duplicate check, before -J."""
from __future__ import annotations

import math
from typing import Any

#: trec_eval measures the report makes itself (the run tag, the number of queries)
REPORTED = ("runid", "num_q")
#: -J's twin of a trec_eval measure whose ir-measures twin takes no judged_only: num_ret counts the
#: judged documents returned (labels >= 0)
JUDGED_TWINS = {"num_ret": "NumRet(rel=0)"}
#: trec_eval measures whose values -J does not change (unjudged docs count neither way in them)
JUDGED_SAME = ("bpref", "gm_bpref", "num_rel", "num_rel_ret", "set_recall")


def declines(o: Any, p: Any) -> str | None:
    """Why the fast path does not compute this command (None: it does)."""
    from . import interp as ti
    if any(m not in REPORTED for m in p.pytrec):
        return f"pytrec_eval computes {', '.join(m for m in p.pytrec if m not in REPORTED)}"
    if o.max_docs is not None and o.max_docs < 1:
        return "-M 0: every ranking empty, which the dict path evaluates as trec_eval does"
    if o.judged_only and p.plugin:
        return "-J with the plugin's measures: the dict path applies -J to their rankings"
    if o.run == "-":
        return "a run on standard input is read whole"
    for fam, given in p.interp:
        try:
            levels = ti.levels(given, ordered=fam == "iprec_at_recall")
        except ValueError:
            return "the dict path names the bad levels"
        if list(levels) != sorted(levels) or not all(0.0 <= x <= 1.0 for x in levels):
            return f"{fam} levels out of order or outside 0..1"
    return None


def evaluate(o: Any, p: Any, engine: list, plugin: list) -> Any:
    """The Report of the command (see the module docstring), or None when :func:`declines`.
    ``engine``/``plugin``: (printed name, measure) of the engine's trec_eval measures and of the
    plugin's own measures, as the dict path computes them."""
    import ir_measures

    from ..evaluation import Evaluation, ReadOptions, refuse_crashing_queries
    from . import interp as ti
    from .report import MissingQuery, Report, family_of, printed_names, run_tag
    if declines(o, p) is not None:
        return None
    interp = []  # (printed name, IPrec measure, the 11pt_avg name it enters or None)
    for fam, given in p.interp:
        for level in ti.levels(given, ordered=fam == "iprec_at_recall"):
            params = {**({"rel": o.level} if o.level != 1 else {}), **({"judged_only": True} if o.judged_only else {})}
            measure = (ir_measures.IPrec(**params) if params else ir_measures.IPrec) @ level
            name = f"iprec_at_recall_{ti.level_name(level)}" if fam == "iprec_at_recall" else None
            interp.append((name, measure, None if name else (f"11pt_avg_{given}" if given else "11pt_avg")))
    present = ir_measures.NumRet  # which qrels queries the run has: a run query returns a row
    chosen = [m for _, m in engine] + [m for _, m, _ in interp] + [m for _, m in plugin] + [present]
    if o.judged_only and any("judged_only" not in m.params and family_of(n) not in (*JUDGED_SAME, *JUDGED_TWINS)
                             for n, m in engine):
        return None  # a measure -J changes whose twin has no judged_only (infAP): the dict path cuts the run
    ev = Evaluation(chosen, qrels=o.qrels, options=ReadOptions(run_format="trec", depth=o.max_docs))
    if ev.other_measures:
        return None
    if engine or interp:
        refuse_crashing_queries(ev.qrels, [n for n, _ in engine] + [n or avg for n, _, avg in interp], o.qrels)
    res = ev.compute(o.run, per_query=True)
    qids = [str(q) for q in res.query_ids]
    returned = res.values[present].values
    evaluated = [i for i, q in enumerate(qids) if o.complete or returned[i] > 0]
    lacking: dict = {}  # -c: position among the evaluated -> its relevant docs, of the queries the run lacks
    if o.complete and len(evaluated) > int((returned > 0).sum()):
        import numpy as np
        n_rel = np.bincount(ev.index.key_q[ev.index.rel >= o.level], minlength=ev.index.nq).tolist()
        lacking = {k: n_rel[i] for k, i in enumerate(evaluated) if returned[i] == 0}
    totals: dict = {}
    stops = not o.complete and len(evaluated) < len(qids)  # a qrels query the run lacks: MissingQuery
    columns = _values(res, evaluated, engine, interp, plugin, totals, (lacking, o.judged_only),
                      texts_wanted=o.per_query or stops)  # a MissingQuery report may print them
    values = _rows([qids[i] for i in evaluated], columns) if o.per_query or plugin else None
    # p.pytrec: runid, num_q, the report's own; without rows, the names each query's row would hold
    names = printed_names(values if values is not None else {"": _present(columns)}, plugin, tuple(p.pytrec))
    shown = [qids[i] for i in evaluated]
    if stops:
        missing = next(q for i, q in enumerate(qids) if returned[i] == 0)
        rows = values if values is not None else _rows(shown, columns)
        raise MissingQuery(missing, Report([q for q in shown if q < missing], names, rows))
    tag = run_tag(o.run) if "runid" in p.pytrec else ""
    recount = int((ev.index.rel > 0).sum()) if o.complete else None
    return Report(shown, names, values if values is not None else {}, tag, recount, totals)


def _values(res: Any, evaluated: list, engine: list, interp: list, plugin: list, totals: dict,
            bogus_of: tuple, texts_wanted: bool = True) -> list:
    """[(printed name, its values over the evaluated queries, which are printed or None for all)],
    as the dict path fills its rows: NaN left out (no value) but interpolated precision's and
    11pt_avg's, gm_map and gm_bpref as the log their summary averages, 11pt_avg summed from its last
    level down, a -c query the run lacks as trec_eval leaves it (``bogus_of``: ({position: its
    relevant docs}, -J); :func:`bogus_value`). ``totals`` gets each trec_eval measure's printed
    values summed in query order from 0.0 (``np.cumsum`` adds them one by one, as trec_eval).
    ``texts_wanted``: False leaves relstring's texts out (None: it is printed per query only)."""
    import numpy as np

    from .report import GEOMETRIC_OF, MIN_GEO_MEAN, family_of
    at = np.asarray(evaluated, dtype=np.int64)
    missing, judged_only = bogus_of
    columns: list = []

    def put(name: str, col: Any, nan_printed: bool = False, trec: bool = True) -> None:
        values = [math.log(max(v, MIN_GEO_MEAN)) for v in col.tolist()] if name in GEOMETRIC_OF else col.tolist()
        for k, n_rel in missing.items():
            v = bogus_value(name, judged_only, n_rel)
            values[k] = values[k] if v is None else v
        kept = None if nan_printed or not np.isnan(col).any() else ~np.isnan(col)
        columns.append((name, values, kept))
        if trec:
            printed = values if kept is None else [v for v, keep in zip(values, kept.tolist(), strict=True) if keep]
            totals[name] = float(np.cumsum([0.0, *printed])[-1])  # from 0.0, as trec_eval: never -0.0
    strings: dict = {}  # relstring: its chunks' values, in order
    for n, m in engine:
        if family_of(n) == "relstring":
            strings.setdefault(n, []).append(res.values[m].values[at].tolist())
        else:
            put(n, res.values[m].values[at])
    averages: dict = {}
    for name, m, avg in interp:
        if avg is None:  # iprec_at_recall's NaN is trec_eval's 0 / 0 (-J), printed
            put(name, res.values[m].values[at], nan_printed=True)
        else:
            averages.setdefault(avg, []).append(res.values[m].values[at])
    for avg, cols in averages.items():
        total = np.zeros(len(at))
        for col in reversed(cols):  # summed from the last level down, as trec_eval sums
            total = total + col
        put(avg, total / len(cols), nan_printed=True)  # printed whatever it is, as before
    for name, cols in strings.items():
        if not texts_wanted:
            columns.append((name, [None] * len(at), None))
            continue
        texts = [relstring_value(list(chunks)) for chunks in zip(*cols, strict=True)]
        for k in missing:
            texts[k] = bogus_value(name, judged_only, 0) or texts[k]
        columns.append((name, texts, None))
    for name, m in plugin:
        put(name, res.values[m].values[at], trec=False)
    return columns


def _rows(qids: list, columns: list) -> dict:
    """{qid: {printed name: value}} from :func:`_values`' columns, each row's dict made at once (its
    names in the columns' order, as filled one by one), the values not printed left out."""
    names = [name for name, _, _ in columns]
    rows = [dict(zip(names, row, strict=True)) for row in zip(*(v for _, v, _ in columns), strict=True)] \
        if columns else [{} for _ in qids]
    for name, _, kept in columns:
        if kept is not None:
            for row, keep in zip(rows, kept.tolist(), strict=True):
                if not keep:
                    del row[name]
    return dict(zip(qids, rows, strict=True))


def _present(columns: list) -> dict:
    """The names :func:`_rows` would give, in the order they first appear in its rows (by the first
    row that prints them, then column order)."""
    import numpy as np
    first = [(0 if kept is None else int(np.argmax(kept)), k, name) for k, (name, _, kept) in enumerate(columns)
             if kept is None or kept.any()]
    return dict.fromkeys(name for _, _, name in sorted(first))


def relstring_value(chunks: list) -> str:
    """relstring as trec_eval prints it (quoted), from its chunks' values."""
    from ..measures.unjudged import relstring_text
    return f"'{relstring_text(chunks)}'"


def bogus(row: dict, judged_only: bool, n_rel: int) -> None:
    """A qrels query missing from the run (-c), which the engine evaluates with an empty ranking,
    as trec_eval 10.0 leaves it (:func:`bogus_value`), in place."""
    for name in row:
        v = bogus_value(name, judged_only, n_rel)
        if v is not None:
            row[name] = v


def bogus_value(name: str, judged_only: bool, n_rel: int) -> float | str | None:
    """What trec_eval 10.0 prints as ``name`` for a qrels query missing from the run (-c) where the
    engine's empty ranking gives something else (None: the same): it evaluates the query on one
    unjudged document (none with -J), then sets num_ret, utility, unj*, rbp_resid back to 0 and
    relstring to empty, by their exact printed names (utility and relstring with parameters keep
    the value of that document; ``n_rel``: the query's relevant docs)."""
    from .interp import atof
    from .report import family_of
    if name in ("num_ret", "utility", "rbp_resid") or name.startswith("unj"):
        return 0.0
    if name == "relstring":
        return "''"
    if family_of(name) == "relstring" and not judged_only:
        return "'-'" if int(atof(name[len("relstring_"):])) >= 1 else "''"
    if family_of(name) == "utility" and not judged_only:
        p1, p2, p3, p4 = (atof(x) for x in name[len("utility_"):].split(","))
        return p1 * 0.0 + p2 * 1.0 + p3 * float(n_rel) + p4 * float(-1 - n_rel)
    return None
