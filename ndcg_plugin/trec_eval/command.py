"""``ndcg-plugin trec_eval``: trec_eval 10.0's command line, so that a script calling trec_eval
changes one word.

The flags are read as trec_eval reads them (GNU getopt, short and long forms, by
:mod:`ndcg_plugin.cli.trec_eval`) into :class:`Options`: ``-q`` (per-query lines),
``-c`` (average over every qrels query; a query missing from the run counts with an empty
ranking), ``-n`` (no summary), ``-l N`` (the lowest relevant label for binary measures), ``-M N``
(each query's top N, in trec_eval's order, before anything is computed), ``-J`` (judged documents
only), ``-m MEASURE[.PARAMS]`` (repeatable; ``official`` when none is given, ``all_trec``), ``-v``
and ``-h``. The output is trec_eval's byte for byte: ``%-22s\\t%s\\t%6.4f`` lines (counts as
integers), per query in the qrels' query order then the summary (``all``) in trec_eval's measure
order, ``runid`` from the run's tag, ``num_q``; without ``-c`` a qrels query missing from the run
ends the command with status 4, as trec_eval 10.0 does.

Who computes what (one routing, decided here): the measures the families name
(``Family.trec_eval_names``: ``map``, ``P``, ``recall``, ``Rprec``, ``bpref``, the counts, ``ndcg``,
``ndcg_cut``, ``recip_rank``, ``success``...) with trec_eval's own gains and integer cutoffs are
computed by the plugin's engine (as ``AP``, ``P@k``, ``nDCG@k``, ``RR(rel=l)``...), on the run streamed
when nothing else is asked (:mod:`ndcg_plugin.trec_eval.native`); the plugin's
measures (``-m`` with their names) too, printed after trec_eval's under their own names; every other
trec_eval measure by pytrec_eval, which is trec_eval's C code. Summaries are trec_eval's: a mean
summed in query order, counts (``num_ret``, ``num_rel``, ``num_rel_ret``,
``num_nonrel_judged_ret``) summed, ``gm_map`` and ``gm_bpref`` geometric means. Not computed, and
refused by name (left out of ``all_trec`` with a note on stderr): :data:`NOT_COMPUTED`.
"""
from __future__ import annotations

import math
import sys
from dataclasses import dataclass, field

from ..errors import UsageError
from ..measures.parsing import examples
from .report import GEOMETRIC_OF, MIN_GEO_MEAN, ORDER, MissingQuery, Report, family_of, printed_names, run_tag

VERSION = "10.0"

OFFICIAL = "runid num_q num_ret num_rel num_rel_ret map gm_map Rprec bpref recip_rank iprec_at_recall P".split()
ALL_TREC = [*OFFICIAL, "relstring", "recall", "infAP", "gm_bpref", "Rprec_mult", "utility", "11pt_avg", "binG", "G",
            "ndcg", "ndcg_rel", "Rndcg", "ndcg_cut", "map_cut", "relative_P", "success", "set_P", "set_relative_P",
            "set_recall", "set_map", "set_F", "num_nonrel_judged_ret", "rbp", "rbp_resid", "unj"]
#: trec_eval measures this command does not compute: they are not in all_trec (trec_eval's
#: preference and judgment-group measures need other qrels formats)
NOT_COMPUTED = ("dcg", "ideal_dcg", "ndcg_p", "yaap", "map_avgjg", "P_avgjg", "Rprec_mult_avgjg", "prefs_*")
#: measures computed with their default parameters only (pytrec_eval aborts on a gain map; the
#: engine computes trec_eval's default gains and rbp's p = 0.9 only); utility's coefficients are
#: the engine's alone (pytrec_eval ignores them)
DEFAULT_PARAMS_ONLY = ("ndcg", "ndcg_rel", "Rndcg", "G", "binG", "utility", "rbp", "rbp_resid")
#: trec_eval's default cutoffs of the measures the engine computes that take cutoffs (which
#: measures these are, and their ir-measures twins, the families say: Family.trec_eval_names)
_CUTS = (5, 10, 15, 20, 30, 100, 200, 500, 1000)
ENGINE_CUTOFFS = {"ndcg_cut": _CUTS, "P": _CUTS, "recall": _CUTS, "map_cut": _CUTS, "success": (1, 5, 10),
                  "relative_P": _CUTS, "unj": (5, 10, 20),
                  "Rprec_mult": (0.2, 0.4, 0.6, 0.8, 1.0, 1.2, 1.4, 1.6, 1.8, 2.0)}
#: trec_eval's default real parameters of the engine's measures that take some (utility's coefficients)
DEFAULT_VALUES = {"utility": (1.0, -1.0, 0.0, 0.0)}
#: relstring's default length
RELSTRING_LENGTH = 10
DEFAULT_CUTOFFS = {"P", "recall", "ndcg_cut", "map_cut", "relative_P", "success", "iprec_at_recall", "Rprec_mult"}


class TrecEvalStatus(UsageError):
    """A UsageError that ends the command with trec_eval 10.0's own exit status (``status``): 1 for
    an illegal measure or a usage error, 2 for a measure it cannot initialise (a cutoff <= 0 or
    repeated), so that a script testing trec_eval's status sees the same one."""

    def __init__(self, message: str, status: int):
        super().__init__(message)
        self.status = status


#: trec_eval measures whose parameters are cutoffs read as C longs (meas_init.c's get_long_cutoffs)
LONG_CUTOFFS = ("P", "P_avgjg", "map_cut", "ndcg_cut", "recall", "relative_P", "success", "unj")
LONG_MIN, LONG_MAX = -(2 ** 63), 2 ** 63 - 1


def atol(text: str) -> int:
    """C's atol (glibc's strtol, base 10): leading white space, a sign, the longest run of digits
    after it (0 when none), saturated at LONG_MIN and LONG_MAX."""
    import re
    m = re.match(r"[ \t\n\v\f\r]*([+-]?\d+)", text)
    return max(LONG_MIN, min(LONG_MAX, int(m.group(1)))) if m else 0


def long_cutoffs(measure: str, fam: str, given: str) -> str:
    """The cutoffs of ``fam.given`` as trec_eval reads them (get_long_cutoffs): each comma-separated
    part by atol, sorted; written back as ``5,10`` (trec_eval names the values ``P_5``...). A
    cutoff <= 0 or repeated: :class:`TrecEvalStatus` 2, as trec_eval stops on it."""
    cutoffs = sorted(atol(part) for part in given.split(","))
    why = ("Negative cutoff detected" if cutoffs[0] <= 0 else
           "duplicate cutoffs detected" if len(set(cutoffs)) < len(cutoffs) else None)
    if why is not None:
        raise TrecEvalStatus(f"trec_eval measure {measure!r}: cutoffs {', '.join(map(str, cutoffs))} (read as C's "
                             f"atol reads them): trec_eval {VERSION} stops with status 2 (\"{why}\", \"Cannot "
                             f"initialize measure '{fam}'\"); give distinct cutoffs >= 1", 2)
    return ",".join(map(str, cutoffs))


@dataclass(frozen=True)
class Options:
    """The command's options, as trec_eval's flags give them (parsed by
    :func:`ndcg_plugin.cli.trec_eval.parse`): ``-q``, ``-c``, not ``-n``, ``-l``, ``-M``, ``-J``,
    the ``-m`` measures in order, and the two files."""
    qrels: str
    run: str
    measures: tuple[str, ...] = ("official",)
    per_query: bool = False
    complete: bool = False
    summary: bool = True
    level: int = 1
    max_docs: int | None = None
    judged_only: bool = False


@dataclass
class Plan:
    """Each requested measure routed once: trec_eval measures for pytrec_eval (``name[.params]``),
    for the engine (``(family, cutoffs)``) and for :mod:`ndcg_plugin.trec_eval.interp`
    (``(family, params)``), and the plugin's measures (ir-measures objects)."""
    pytrec: list = field(default_factory=list)
    engine: list = field(default_factory=list)
    interp: list = field(default_factory=list)
    plugin: list = field(default_factory=list)
    left_out: list = field(default_factory=list)


def _engine_twins() -> dict[str, str]:
    """trec_eval measure -> the ir-measures measure the engine computes as it (a template with
    ``{k}`` for a cutoff), from the families (:attr:`~ndcg_plugin.measures.base.Family.trec_eval_names`)."""
    from ..measures.registry import families
    twins = {name: twin for f in families() for name, (twin, _) in f.trec_eval_names.items()}
    return {**twins, **{gm: twins[of] for gm, of in GEOMETRIC_OF.items() if of in twins}}


def _engine_cutoffs(name: str, params: str) -> tuple | None | bool:
    """The cutoffs the engine computes for ``name.params`` (None: the measure has none); False
    when the engine declines (parameters it does not read as trec_eval does). A twin with a real
    parameter (``{p}``: set_F's) takes the parameters as given, a string: the printed name
    carries them, the twin their first number (C's atof)."""
    from .interp import atof
    template = _engine_twins()[name]
    if "{p}" in template:
        return (params if atof(params.split(",")[0]) >= 0 else False) if params else None
    if "{ps}" in template or name == "relstring":  # the whole parameter string: utility's coefficients, a length
        if params and "{ps}" in template and len(params.split(",")) != len(DEFAULT_VALUES[name]):
            raise UsageError(f"trec_eval measure {name}.{params}: {name} takes {len(DEFAULT_VALUES[name])} "
                             f"comma-separated numbers, got {params!r}")
        return params or None
    if "{m}" in template:  # real cutoffs (Rprec_mult's multiples of R): >= 0, distinct, sorted as trec_eval sorts
        multiples = [atof(x) for x in params.split(",")] if params else list(ENGINE_CUTOFFS[name])
        ok = all(x >= 0 for x in multiples) and len(set(multiples)) == len(multiples)
        return tuple(sorted(multiples)) if ok else False
    if "{k}" not in template:
        return False if params else None  # ndcg with a gain map, recip_rank with parameters: pytrec_eval's
    if not params:
        return ENGINE_CUTOFFS.get(name, False)
    parts = params.split(",")
    if not all(p.isdigit() and int(p) > 0 for p in parts) or len(set(map(int, parts))) != len(parts):
        return False
    return tuple(sorted(map(int, parts)))


def plan(measures: list[str], judged_only: bool, use_engine: bool = True) -> Plan:
    """Route each ``-m`` (see the module docstring). A measure named twice is computed once, with
    the parameters of the first ``-m`` that gives some, as trec_eval does. An unknown or not
    computed measure is a UsageError naming it."""
    import pytrec_eval
    p = Plan()
    params: dict[str, str] = {}
    for m in measures:
        if m in ("official", "all_trec"):
            chosen = OFFICIAL if m == "official" else ALL_TREC
            p.left_out += [n for n in chosen if n in NOT_COMPUTED and n not in p.left_out]
            for n in chosen:
                if n not in NOT_COMPUTED:
                    params.setdefault(n, "")
            continue
        fam, _, given = m.partition(".")
        given = long_cutoffs(m, fam, given) if given and fam in LONG_CUTOFFS else given
        if fam not in ORDER and fam not in pytrec_eval.supported_measures and fam not in NOT_COMPUTED:
            p.plugin.append(_plugin_measure(m))
            continue
        if fam in NOT_COMPUTED or (fam not in pytrec_eval.supported_measures and fam not in _engine_twins()):
            raise UsageError(f"trec_eval measure {m!r} is not computed by ndcg-plugin trec_eval "
                             f"(not computed: {', '.join(NOT_COMPUTED)}); run trec_eval itself for it")
        if given and fam in DEFAULT_PARAMS_ONLY and not (use_engine and fam == "utility"):
            raise UsageError(f"trec_eval measure {m!r}: {fam} is computed with its default parameters only "
                             f"(gain maps and rbp's p are not read here; pytrec_eval ignores utility's "
                             f"coefficients); run trec_eval itself for {m}")
        if not params.get(fam):
            params[fam] = given
    for fam, given in params.items():
        if fam in ("iprec_at_recall", "11pt_avg"):
            p.interp.append((fam, given))
            continue
        # -J: the rankings hold judged documents only (evaluate): the engine's measures need no flag
        # rbp, unj, relstring: the engine's alone (pytrec_eval names relstring, but has no string values)
        engine_only = fam not in pytrec_eval.supported_measures or fam == "relstring"
        cutoffs = _engine_cutoffs(fam, given) if (use_engine or engine_only) and fam in _engine_twins() else False
        if cutoffs is False and engine_only:
            raise UsageError(f"trec_eval measure {fam}.{given}: parameters not read as trec_eval reads them here; "
                             f"run trec_eval itself for it")
        if cutoffs is False:
            p.pytrec.append(f"{fam}.{given}" if given else fam)
        else:
            p.engine.append((fam, cutoffs))
    return p


def _plugin_measure(name: str):
    import ir_measures

    from ..measures import PluginMeasure
    try:
        measure = ir_measures.parse_measure(name)
    except (ValueError, NameError, SyntaxError, TypeError):
        measure = None
    if not isinstance(measure, PluginMeasure):  # trec_eval: "illegal measure", status 1
        raise TrecEvalStatus(f"trec_eval: unknown measure {name!r}: expected a trec_eval measure (official, "
                             f"all_trec, P.5, ndcg_cut.10, ...) or one of the plugin's ({examples()[0]}, ...)", 1)
    return measure


def _engine_measures(name: str, cutoffs, level: int, judged_only: bool = False) -> list[tuple[str, object]]:
    """(printed name, ir-measures measure) of an engine-computed trec_eval measure; trec_eval's
    -l is the measure's ``rel`` where it has one, -J its ``judged_only`` (bpref and the counts of
    relevant docs are the same under -J; num_ret counts the judged docs). relstring is several
    measures under one printed name (:func:`relstring_measures`)."""
    from ..measures.trec_only import measure_of
    from .interp import atof
    from .native import JUDGED_TWINS

    def twin(k):
        if judged_only and name in JUDGED_TWINS:
            return measure_of(JUDGED_TWINS[name])
        numbers = [atof(x) for x in cutoffs.split(",")] if isinstance(cutoffs, str) else DEFAULT_VALUES.get(name, [1.0])
        measure = measure_of(_engine_twins()[name].format(k=k, m=repr(k), p=repr(numbers[0]),
                                                          ps=repr(tuple(numbers))))
        return _thresholded(measure, level, judged_only)
    if name == "relstring":
        return relstring_measures(cutoffs, level, judged_only)
    if cutoffs is None:
        return [(name, twin(None))]
    if isinstance(cutoffs, str):  # a real parameter, printed as given (set_F_0.5)
        return [(f"{name}_{cutoffs}", twin(None))]
    # trec_eval prints a real cutoff as %3.2f (Rprec_mult_0.20), an integer one as it is (P_10)
    return [(f"{name}_{k:3.2f}" if isinstance(k, float) else f"{name}_{k}", twin(k)) for k in cutoffs]


def _thresholded(measure, level: int, judged_only: bool):
    """``measure`` with -l as its ``rel`` (where it has a threshold) and -J as its ``judged_only``."""
    from ir_measures.providers.base import NOT_PROVIDED
    info = measure.SUPPORTED_PARAMS.get("rel")
    # -l is the threshold of a measure that has one (NumRet has none unless it is NumRelRet)
    thresholded = info is not None and ("rel" in measure.params or info.default is not NOT_PROVIDED)
    measure = measure(rel=level) if thresholded else measure
    return measure(judged_only=True) if judged_only and "judged_only" in measure.SUPPORTED_PARAMS else measure


def relstring_measures(given: str | None, level: int, judged_only: bool) -> list[tuple[str, object]]:
    """relstring.N (N = 10) as the engine computes it: one measure per chunk of
    :data:`~ndcg_plugin.measures.unjudged.RELSTRING_CHUNK` ranks (each a number that carries their
    characters), all under the printed name (``relstring``, or ``relstring_N`` when given)."""
    from ..measures.unjudged import RELSTRING, RELSTRING_CHUNK
    from .interp import atof
    length = int(atof(given)) if given else RELSTRING_LENGTH
    printed = f"relstring_{given}" if given else "relstring"
    starts = range(0, length, RELSTRING_CHUNK) if length > 0 else [1]  # no rank: one chunk of nothing
    return [(printed, _thresholded(RELSTRING(values=(float(s),)) @ max(min(s + RELSTRING_CHUNK, length), 1),
                                   level, judged_only)) for s in starts]


def _dicts(table, column: str) -> dict:
    out: dict = {}
    for q, d, v in zip(table["query_id"], table["doc_id"], table[column].tolist(), strict=True):
        out.setdefault(q, {})[d] = v
    return out


#: the one document of the ranking trec_eval gives, with -c, a qrels query missing from the run
BOGUS_DOC = "ceci_nest_pas_un_docno"


def evaluate(o: Options, use_engine: bool = True) -> Report:
    """The :class:`Report` of the command. ``use_engine=False``: pytrec_eval computes every trec_eval
    measure it can (the slow path the engine's is tested against). Raises :class:`MissingQuery`
    (with the values of the queries before it) without ``-c``."""
    from .. import reading
    from ..evaluation import qrels_queries, refuse_crashing_queries
    from ..measures.oracle import cut_run
    from .native import bogus
    # -l below 1 (trec_eval's atol reads -l abc as 0): trec_eval's own code (pytrec_eval) and the
    # interpolated measures count labels >= the level among judged documents; the engine's rel is >= 1
    use_engine = use_engine and o.level >= 1
    p = plan(o.measures, o.judged_only, use_engine)
    if p.left_out:
        print(f"ndcg-plugin trec_eval: not computed, left out: {', '.join(p.left_out)} (run trec_eval for them)",
              file=sys.stderr)
    engine = [(n, m) for fam, cutoffs in p.engine for n, m in _engine_measures(fam, cutoffs, o.level, o.judged_only)]
    plugin = [(str(m), _at_level(m, o.level)) for m in p.plugin]
    _check_level(o, p)
    report = _streamed(o, p, engine, plugin) if use_engine else None
    if report is not None:
        return report
    from ..reading.sources import standard_input
    run_data = standard_input().read() if o.run == "-" else o.run
    qrels_table = reading.read(o.qrels, "qrels")
    run_table = reading.read(run_data, "run", source=o.run, run_format="trec", queries=qrels_queries(qrels_table))
    qrels, run = _dicts(qrels_table, "relevance"), _dicts(run_table, "score")
    qids = sorted(qrels)
    real, trec = _rankings(o, qids, qrels, cut_run(run, o.max_docs) if o.max_docs is not None else run)
    values: dict = {q: {} for q in real}
    if p.pytrec:
        import pytrec_eval
        refuse_crashing_queries(qrels_table, p.pytrec, o.qrels)
        # pytrec_eval crashes on an empty ranking (map, bpref: SIGSEGV): it ranks one unjudged document
        # instead, as trec_eval does with -c for a query missing from the run, then num_ret and utility
        # are set back to 0; -J is applied above (the rankings hold judged documents only)
        for judged, chosen, level in _pytrec_passes(qrels, p.pytrec, o.level):
            ev = pytrec_eval.RelevanceEvaluator(judged, set(chosen), relevance_level=level)
            for q, got in ev.evaluate({q: docs or {BOGUS_DOC: 1.0} for q, docs in real.items()}).items():
                values[q].update(got)
        for q in (q for q, docs in real.items() if not docs):
            values[q].update({k: 0.0 for k in values[q] if k == "num_ret" or family_of(k) == "utility"})
    for fam, given in p.interp:
        _interpolated(fam, given, qrels, trec, o, values)
    if engine or plugin:
        _engine_values(engine + plugin, real, qrels_table, values)  # an empty ranking scores as a missing query
    for q in (q for q in real if q not in run):  # -c: the missing query's one unjudged document
        bogus(values[q], o.judged_only, sum(1 for x in qrels[q].values() if x >= o.level))
    names = printed_names(values, plugin)
    if not o.complete:
        missing = next((q for q in qids if q not in run), None)
        if missing is not None:
            raise MissingQuery(missing, Report([q for q in qids if q < missing], names, values))
    tag = run_tag(run_data) if any(n == "runid" for n, _ in names) else ""
    recount = sum(1 for judged in qrels.values() for x in judged.values() if x > 0) if o.complete else None
    return Report([q for q in qids if q in real], names, values, tag, recount)


#: trec_eval measures whose values -l does not change (their gains are the labels themselves)
LEVEL_FREE = ("ndcg", "ndcg_cut", "ndcg_rel", "Rndcg", "G")


def _pytrec_passes(qrels: dict, measures: list, level: int) -> list[tuple[dict, list, int]]:
    """(qrels, measures, relevance level) of each pytrec_eval evaluation: one, at ``-l``. Below 1,
    which pytrec_eval refuses: trec_eval's -l 0 counts every label >= 0 relevant, which is level
    1 on the labels >= 0 raised by one (the others stay: never relevant); the measures whose
    gains are the labels (:data:`LEVEL_FREE`), which no -l changes, on the labels as they are."""
    if level >= 1:
        return [(qrels, measures, level)]
    if level < 0:  # refused by the caller (see _check_level); never guessed here
        raise UsageError(f"trec_eval -l {level}: not computed")
    raised = {q: {d: x + 1 if x >= 0 else x for d, x in docs.items()} for q, docs in qrels.items()}
    free = [m for m in measures if m.partition(".")[0] in LEVEL_FREE]
    rest = [m for m in measures if m not in free]
    return [(judged, chosen, 1) for judged, chosen in ((qrels, free), (raised, rest)) if chosen]


def _rankings(o: Options, qids: list, qrels: dict, run: dict) -> tuple[dict, dict]:
    """(the run's rankings of the evaluated queries, trec_eval's): after -M (``run`` is cut), with
    -J only the judged documents (labels >= 0); a qrels query missing from the run is evaluated
    with -c, with an empty ranking in the first, and in trec_eval's one unjudged document (which
    -J drops again)."""
    evaluated = [q for q in qids if q in run or o.complete]
    if o.judged_only:
        run = {q: {d: s for d, s in docs.items() if qrels.get(q, {}).get(d, -1) >= 0} for q, docs in run.items()}
    real = {q: run.get(q, {}) for q in evaluated}
    trec = {q: run[q] if q in run else ({} if o.judged_only else {BOGUS_DOC: 1.0}) for q in evaluated}
    return real, trec


def _streamed(o: Options, p: Plan, engine: list, plugin: list) -> Report | None:
    """The fast path's Report (:mod:`ndcg_plugin.trec_eval.native`), or None where it declines."""
    from . import native
    return native.evaluate(o, p, engine, plugin)


def _check_level(o: Options, p: Plan) -> None:
    """-l below 1: a UsageError naming the plugin's measures that take a relevance level (trec_eval's
    own measures are then computed by pytrec_eval and :mod:`.interp`, with trec_eval's level)."""
    if o.level < 0:  # trec_eval then counts unjudged documents (label -1 to it) relevant too
        raise UsageError(f"trec_eval -l {o.level}: levels below 0 are not computed (trec_eval {VERSION} then counts "
                         f"retrieved unjudged documents relevant, which pytrec_eval cannot be asked); run trec_eval "
                         f"itself for -l {o.level}")
    thresholded = [str(m) for m in p.plugin if "rel" in m.SUPPORTED_PARAMS and "rel" not in m.params]
    if o.level < 1 and thresholded:
        raise UsageError(f"trec_eval -l {o.level}: {', '.join(thresholded)} take relevance levels of 1 or more "
                         f"(a level of 0 would count judged non-relevant documents as relevant); give them "
                         f"rel=, or -l 1 or more")


def _interpolated(fam: str, given: str, qrels: dict, run: dict, o: Options, values: dict) -> None:
    from . import interp as ti
    try:
        recall_levels = ti.levels(given, ordered=fam == "iprec_at_recall")
    except ValueError as e:
        raise UsageError(f"trec_eval: {e}") from None
    for q, ranking in run.items():
        labels = ti.ranked_labels(qrels[q], ranking, o.max_docs, o.judged_only)
        rel = ti.num_rel(qrels[q], o.level)
        if fam == "11pt_avg":
            values[q][f"11pt_avg_{given}" if given else "11pt_avg"] = ti.eleven_point(labels, rel, o.level,
                                                                                       recall_levels)
        else:
            for level, v in zip(recall_levels, ti.interpolated(labels, rel, o.level, recall_levels), strict=True):
                values[q][f"iprec_at_recall_{ti.level_name(level)}"] = v


def _engine_values(measures: list[tuple], run: dict, qrels_table, values: dict) -> None:
    """Per-query values of the engine's measures into ``values`` (NaN: no line, as eval -q)."""
    import pandas as pd

    from ..evaluation import Evaluation
    chosen = [m for _, m in measures]
    ev = Evaluation(chosen, qrels=qrels_table)
    if ev.other_measures:  # never guess: a measure the engine would not compute is a bug of this plan
        raise UsageError(f"trec_eval: the engine does not compute {', '.join(map(str, ev.other_measures))}")
    rows = [(q, d, s) for q, docs in run.items() for d, s in docs.items()]
    frame = pd.DataFrame(rows, columns=["query_id", "doc_id", "score"])
    res = ev.compute(frame, per_query=True)
    got: dict = {m: {} for m in chosen}
    for metric in res.metrics():
        got[metric.measure][metric.query_id] = metric.value
    from .native import relstring_value
    for name in dict.fromkeys(n for n, _ in measures if family_of(n) == "relstring"):
        chunks = [m for n, m in measures if n == name]
        for q in values:
            values[q][name] = relstring_value([got[m].get(q, 0.0) for m in chunks])
    for name, m in measures:
        geometric = name in GEOMETRIC_OF
        if family_of(name) == "relstring":
            continue
        for q in values:
            v = got[m].get(q, math.nan)
            if not math.isnan(v):
                values[q][name] = math.log(max(v, MIN_GEO_MEAN)) if geometric else v


def _at_level(measure, level: int):
    """A plugin measure with ``rel`` set to ``-l`` unless given (binary measures only)."""
    if "rel" in measure.SUPPORTED_PARAMS and "rel" not in measure.params and level != 1:
        return measure(rel=level)
    return measure
