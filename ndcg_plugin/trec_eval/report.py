"""What ``ndcg-plugin trec_eval`` prints (:class:`Report`): trec_eval 10.0's per-query and summary
lines, byte for byte (its measure order, its number formats, its summary rules: counts summed,
geometric means, ``num_q`` and ``runid``)."""
from __future__ import annotations

import math
from dataclasses import dataclass

#: trec_eval's measures in the order it prints them (its measure table)
ORDER = ("runid num_q num_ret num_rel num_rel_ret map gm_map Rprec bpref recip_rank iprec_at_recall P relstring "
         "recall infAP gm_bpref Rprec_mult utility 11pt_avg binG G dcg ideal_dcg ndcg ndcg_rel Rndcg ndcg_cut "
         "map_cut relative_P success set_P set_relative_P set_recall set_map set_F num_nonrel_judged_ret "
         "rbp rbp_resid unj").split()
COUNTS = {"num_ret", "num_rel", "num_rel_ret", "num_nonrel_judged_ret"}   # summed, printed as integers
GEOMETRIC = {"gm_map", "gm_bpref"}                                        # exp of the mean log, summary only
SUMMARY_ONLY = {"runid", "num_q", *GEOMETRIC}
QUERY_ONLY = {"relstring"}                                                # no summary line
#: trec_eval's geometric-mean measures: the per-query value of another, whose log (of at least
#: trec_eval's MIN_GEO_MEAN) the summary averages
GEOMETRIC_OF = {"gm_map": "map", "gm_bpref": "bpref"}
MIN_GEO_MEAN = 0.00001


def family_of(name: str) -> str:
    """The trec_eval measure a printed name (``P_5``, ``ndcg_cut_10``) belongs to."""
    return max((f for f in ORDER if name == f or name.startswith(f + "_")), key=len, default=name)


@dataclass
class Report:
    """What the command prints: the evaluated queries in trec_eval's order, [(printed name, "trec"
    or the plugin's measure)], {qid: {name: value}}, the run tag, and with -c the summary's
    num_rel as trec_eval 10.0 recounts it (every qrels label above 0, whatever -l says)."""
    qids: list
    names: list
    values: dict
    tag: str = ""
    num_rel_complete: int | None = None
    totals: dict | None = None  # {name: its values summed in query order}, where the maker has them

    def query_lines(self, qids: list | None = None) -> str:
        return "".join(query_lines(q, self.names, self.values) for q in (self.qids if qids is None else qids))

    def summary_lines(self) -> str:
        return summary_lines(self.qids, self.names, self.values, self.tag, self.num_rel_complete, self.totals)


def _line(name: str, qid: str, value) -> str:
    if isinstance(value, str):
        return f"{name:<22}\t{qid}\t{value}\n"
    if family_of(name) in COUNTS or name == "num_q":
        return f"{name:<22}\t{qid}\t{int(value)}\n"
    if value != value:  # glibc prints the NaN of 0.0 / 0.0 (sign bit set) as -nan
        return f"{name:<22}\t{qid}\t{'-nan':>6}\n"
    return f"{name:<22}\t{qid}\t{value:6.4f}\n"


def query_lines(qid: str, names: list, values: dict) -> str:
    return "".join(_line(n, qid, values[qid][n]) for n, _ in names
                   if n not in SUMMARY_ONLY and n in values[qid])


def summary_lines(qids: list, names: list, values: dict, tag: str, num_rel_complete: int | None = None,
                  totals: dict | None = None) -> str:
    out = []
    totals = {**_totals(qids, [(n, k) for n, k in names if n not in totals], values), **totals} if totals is not None \
        else _totals(qids, names, values)
    for n, kind in names:
        if n == "runid":
            out.append(_line("runid", "all", tag))
            continue
        if n == "num_q":
            out.append(_line("num_q", "all", len(qids)))
            continue
        if family_of(n) in QUERY_ONLY:
            continue
        if n == "num_rel" and num_rel_complete is not None:
            out.append(_line("num_rel", "all", num_rel_complete))
            continue
        if kind != "trec":  # a plugin measure: its own aggregator over the values printed
            agg = kind.aggregator()
            for v in (values[q][n] for q in qids if n in values[q]):
                agg.add(v)
            out.append(_line(n, "all", agg.result()))
            continue
        total = totals.get(n, 0.0)
        if family_of(n) in COUNTS:
            value = total
        elif n in GEOMETRIC:
            value = math.exp(total / len(qids)) if qids else 0.0
        else:
            value = total / len(qids) if qids else 0.0
        out.append(_line(n, "all", value))
    return "".join(out)


def _totals(qids: list, names: list, values: dict) -> dict:
    """{name: the sum of its values} of trec_eval's numeric measures, each summed in query order
    (as trec_eval accumulates), in one pass over the queries."""
    numeric = {n for n, kind in names
               if kind == "trec" and n not in ("runid", "num_q") and family_of(n) not in QUERY_ONLY}
    totals: dict = dict.fromkeys(numeric, 0.0)
    for q in qids if numeric else ():
        for n, v in values[q].items():
            if n in totals:
                totals[n] += v
    return totals


def printed_names(values: dict, plugin: list, reported: tuple = ()) -> list:
    """[(printed name, "trec" or the plugin's measure)] of a Report: the trec_eval measures in
    ``values`` ({qid: {name: value}}) and ``reported`` (made by the report itself: runid, num_q) in
    trec_eval's order (:data:`ORDER`; a measure's names, such as P_5 and P_10, in the order they
    first appear), then the plugin's measures (``plugin``: [(name, measure)]) as given."""
    import itertools
    first = list(dict.fromkeys(itertools.chain(reported, itertools.chain.from_iterable(values.values()))))
    theirs = {n for n, _ in plugin}
    trec = [n for n in first if n not in theirs]
    position = {n: i for i, n in enumerate(trec)}
    return [(n, "trec") for n in sorted(trec, key=lambda n: (ORDER.index(family_of(n)), position[n]))] + list(plugin)


class MissingQuery(Exception):
    """A qrels query with no results, without ``-c``: trec_eval 10.0 exits with status 4."""


def run_tag(run) -> str:
    """The run tag (sixth field) of the run's first data line: trec_eval's runid."""
    import gzip

    from ..reading.formats import first_data_line
    if isinstance(run, bytes):
        start = run[:1 << 20]
    else:
        with open(run, "rb") as f:
            start = f.read(1 << 20)
        if start[:2] == b"\x1f\x8b":
            with gzip.open(run, "rb") as f:
                start = f.read(1 << 20)
    first = first_data_line(start, "run")
    return first[1][5].decode("utf-8", "replace") if first and len(first[1]) >= 6 else ""
