"""Generate docs/measures.md from the measures' own names, docstrings and parameter
descriptions, and the families' own convention rows, so the page cannot drift from the code:

    python -m ndcg_plugin.docs > docs/measures.md
"""
from __future__ import annotations

import inspect

from ir_measures.providers.base import NOT_PROVIDED

from .measures import registry

CONVENTIONS = """\
## Conventions (all measures; trec_eval's behaviour is the default)

| question | answer | test |
|---|---|---|
| order within a query | score descending, ties by doc id descending (string order); the rank column is ignored | `test_ties_broken_by_doc_id_descending`, `test_rank_column_is_ignored` |
| query in the qrels, absent from the run | scores 0 (trec_eval `-c`); no value for a measure that leaves misses out | `test_query_missing_from_run_scores_zero` |
| query in the run, absent from the qrels | ignored | `test_run_query_not_in_qrels_is_ignored` |
| negative relevance labels | gain 0, never relevant, left out of the ideal ranking | `test_negative_relevance_has_gain_zero_and_is_not_relevant` |
| query whose qrels have no relevant doc | 0 (for NDCG: IDCG = 0); no value for a measure that leaves misses out | `test_query_without_relevant_docs_scores_zero_and_has_no_mrr_ignore_value` |
| relevance threshold (`rel`) | label >= rel is relevant (TREC DL binary measures use rel=2); NDCG grades are not thresholded | `test_rel_threshold_counts_labels_at_or_above` |
| `judged_only` | unjudged docs (and negative labels) are dropped before ranking and cutting, as trec_eval `-J` | `test_judged_only_drops_unjudged_docs_before_cutting` |
| cutoff | required where the measure's parameters say so (above); NDCG without one uses the whole list | `test_cutoff_required_for_hitrate_and_mrr`, `test_ndcg_without_cutoff_uses_the_whole_list` |
| fields in a file | separated by any run of ASCII whitespace (space, tab, `\\v`, `\\f`, `\\r`), blanks at either end ignored; non-ASCII spaces and `#` inside ids are part of the id | `test_a_blank_before_a_tab_is_part_of_the_separator_not_of_the_doc_id`, `test_unicode_whitespace_inside_an_id_is_part_of_the_id_on_both_paths` |
| comment and blank lines | skipped: in runs a line whose first non-blank character is `#`, in qrels `#` in column 0 | `test_comment_and_blank_lines_in_runs_are_skipped`, `test_qrels_comment_in_column_0_is_skipped_not_read_as_a_query` |
| number syntax | labels and ranks `[+-]digits`, scores decimal with optional exponent; anything trec_eval's `atof`/`atol` would read differently (`1_0`, `0x10`, `1.5abc`) is an error naming the line | `test_numbers_outside_trec_eval_syntax_are_refused_not_read_differently` |
| duplicate (query, doc) pairs | an error naming both lines (trec_eval refuses them); `duplicates='first'` or `'max'` keeps one | `test_duplicate_run_pairs_are_an_error_naming_both_lines`, `test_duplicate_qrels_pairs_are_an_error_naming_both_lines`, `test_duplicates_keep_first_or_max_when_asked` |
| qrels query with no judgments (`{"q2": {}}`, dict input) | a qrels query without a relevant doc: it counts, and scores 0 (no value for a measure that leaves misses out), as pytrec_eval counts it | `test_qrels_query_without_judgments_counts_as_a_query_without_relevant_docs` |
| accepted `rel` | an integer >= 1: 0 would count judged non-relevant docs as relevant, a negative value negative labels, which are never relevant | `test_bad_parameters_are_clear_errors`, `test_accepted_rel_and_gains_values` |
| accepted `gains` | keys: labels >= 0 (negative labels always have gain 0); values: any finite number; a negative gain lowers DCG, and only positive gains enter the ideal ranking | `test_accepted_rel_and_gains_values` |
| query ids | matched as strings (`str(id)` for integers); yielded as given in the qrels, so an integer id stays the integer the other providers of the same call see; an integer and a string id of one query are refused | `test_one_id_type_when_mixed_with_builtins`, `test_integer_ids_in_a_dict_or_namedtuples_are_yielded_as_given`, `test_integer_and_string_ids_of_one_query_are_refused` |
| warnings | run queries absent from the qrels: one RuntimeWarning per evaluation (`warnings.warn`, filterable as usual) | `test_warns_at_most_once_per_evaluation` |
| built-in measures | computed by the provider that computes them without the plugin (same numbers, errors, warnings, order); the plugin's engine serves them only when asked (below) | `test_builtins_identical_with_and_without_the_plugin`, `test_builtins_are_not_served_by_default` |
{family_rows}

Known differences from trec_eval, on purpose: trec_eval's `ndcg` gain map sorts gains with an
integer comparison, so gains less than 1 apart can be ordered wrongly in its ideal ranking; the
plugin sorts them exactly. trec_eval accepts a gain for negative labels (`-m ndcg.-1=5`) and then
scores NDCG above 1; the plugin refuses negative keys in `gains`.
"""

BUILTINS = """\
## Built-in measures

`import ndcg_plugin` adds the six measures above and the `ndcg_plugin` provider (last in
`ir_measures.DefaultPipeline`, serving the six only) and changes nothing about built-in
measures: each is computed by the provider that computes it without the plugin. ir-measures'
own test suite (tag v0.4.3, `python benchmarks_data/irm_suite.py TESTS --object-strings`, with
pytrec_eval 0.5.11, ranx 0.3.21, cwl-eval, pyndeval, trectools and pandas 3.1 installed):
34 passed, 180 subtests passed without the plugin; 34 passed, 227 subtests passed with
`import ndcg_plugin` (the 47 more are ir-measures' pairwise comparisons of the `ndcg_plugin`
provider with the others); the same outcome for every test. Without `--object-strings` (pandas'
`str` dtype, which ranx refuses): 2 failed, 32 passed, 87 subtests passed, in both runs.

The plugin's engine computes the built-ins its families serve (`nDCG` with `dcg='log2'` or
`'exp-log2'`, `RR`, `Success`, and trec_eval's measures below: `AP`, `P`, `R`, `Rprec`, `Bpref`,
`NumQ`, `NumRet`, `NumRel`, and `Judged`) only when asked: `ndcg_plugin.register(serve_builtins=True)` (the provider moves first
in the pipeline; `ndcg_plugin.register()` undoes it), the provider by name
(`ir_measures.providers.registry["ndcg_plugin"]`), or `ndcg-plugin eval`, which computes every
measure the engine can (trec_eval's tie rule) and names on stderr the printed measures another
provider computed. Parameters the engine would compute differently from pytrec_eval are not
served (the pipeline leaves them to pytrec_eval; the provider by name raises a ValueError saying
why): `rel` other than an integer >= 1, a cutoff below 1, `gains`
with negative or non-integer keys or values, `gains` with `dcg='exp-log2'`. Then, on the
inputs below, its numbers or errors differ from ir-measures' providers:

| input | ir-measures without the plugin | the plugin's engine | why | test |
|---|---|---|---|---|
| scores equal at single precision, different at double (`0.3`, `0.30000000000000004`) | pytrec_eval 0.5.11 ranks them as tied, ordered by doc id | ordered by their 64-bit values, as the trec_eval 10.0 binary | the plugin's numbers are trec_eval's | `test_serving_builtins_is_opt_in_and_undone_by_register` |
| tied scores, `RR@k` | the msmarco provider orders ties by doc id ascending | doc id descending (trec_eval; `-M k recip_rank` agrees) | one tie rule for every measure | `test_served_rr_at_k_orders_ties_as_trec_eval_not_as_msmarco` |
| tied scores, `Judged@k` | the judged provider orders ties by doc id ascending | doc id descending (trec_eval) | one tie rule for every measure | `test_judged_at_k_served_natively` |
| `nDCG(dcg='exp-log2')` | the gdeval provider: gdeval.pl reads numeric query ids only (any other id ends in a perl format error, CalledProcessError), labels <= 4, and prints 5 decimals | every id and label, full precision; the same order (score descending, doc id descending) and gain 2^rel - 1 | | `test_served_builtins_equal_pytrec_eval_where_docs_say_they_do` |
| duplicate (query, doc) pairs in a DataFrame or namedtuples | pytrec_eval keeps the last | `InputError` naming both rows (`NdcgPluginProvider(duplicates='first')` or `'max'` keeps one) | trec_eval refuses duplicates | `test_served_builtins_refuse_duplicates_non_finite_scores_and_empty_ids` |
| NaN or infinite scores, empty doc ids | a number | `InputError` naming the row | no defined rank; an empty id is not a TREC id | `test_served_builtins_refuse_duplicates_non_finite_scores_and_empty_ids` |
| integer query ids | pytrec_eval raises TypeError | matched as `str(id)`, yielded as given | see "query ids" above | `test_one_id_type_when_mixed_with_builtins` |
| run queries absent from the qrels | silent | one RuntimeWarning per evaluation | a likely mismatch of files | `test_warns_at_most_once_per_evaluation` |
| `iter_calc` order | per provider invocation, in its order | by query (string order), then measure | one pass over the ranked arrays | `test_served_builtins_iter_calc_order_is_by_query_then_measure` |

Everywhere else they agree: `tests/test_builtins.py` compares the served `nDCG`, `nDCG@k`,
`nDCG(gains=...)@k`, `nDCG(judged_only=True)`, `RR`, `RR(rel=2)`, `RR(judged_only=True)`,
`Success@k`, `Success(rel=2)@k` and `Success(judged_only=True)@k` with pytrec_eval per query on
300 random cases (ties, labels -2..3, unjudged docs, qrels queries without judgments) within
1e-12, and the served `nDCG(dcg='exp-log2')@5` with gdeval within its 5 printed decimals on the
cases with numeric ids (`test_served_builtins_equal_pytrec_eval_where_docs_say_they_do`). A qrels query without
judgments counts in both (0; pytrec_eval's provider fills it in). Queries whose labels are all
negative are left out of these comparisons (pytrec_eval has been reported to crash on some).
"""


def _param_rows(measure) -> list[str]:
    rows = ["| parameter | type | default | description |", "|---|---|---|---|"]
    for key, info in measure.SUPPORTED_PARAMS.items():
        dtype = info.dtype.__name__ if info.dtype else "any"
        if key == "cutoff":
            default = "required" if measure.CUTOFF_REQUIRED else "none (whole list)"
        else:
            default = "none" if info.default is NOT_PROVIDED else f"`{info.default!r}`"
        choices = "" if info.choices is NOT_PROVIDED else f" One of {', '.join(repr(c) for c in info.choices)}."
        rows.append(f"| `{key}` | {dtype} | {default} | {info.desc}.{choices} |")
    return rows


def _trec_eval_section() -> list[str]:
    """The built-ins computed natively as trec_eval 10.0 computes them, family by family: their
    names here and in trec_eval, and the family's own formula."""
    out = ["## trec_eval's measures, computed by the engine", "",
           "ir-measures' built-ins that the engine computes as trec_eval 10.0 computes them (the same doubles: "
           "sums in rank order, trec_eval's tie rule and reading of labels). `ndcg-plugin eval`, `compare`, "
           "`reproduce`, `crosscheck` and `ndcg-plugin trec_eval` compute them natively; the ir-measures "
           "pipeline only with `ndcg_plugin.register(serve_builtins=True)`. trec_eval's measures marked "
           "\"drop-in only\" have no ir-measures name: `ndcg-plugin trec_eval` alone computes them.", "",
           "| family | ir-measures | trec_eval |", "|---|---|---|"]
    for f in registry.families():
        if f.formula:
            names = ", ".join(f"`{n}`" for n in f.builtins)
            from .measures.trec_only import CLASSES  # trec_eval's measures without an ir-measures name
            trec = ", ".join(f"`{n}` (drop-in only)" if twin.split("(")[0].split("@")[0] in CLASSES
                             else f"`{n}` (`{twin}`)" for n, (twin, _) in f.trec_eval_names.items())
            out.append(f"| {f.name} | {names} | {trec} |")
    out.append("")
    for f in registry.families():
        if f.formula:
            out += [f"### {f.name}", "", "```", inspect.cleandoc(f.formula), "```", ""]
    return out


def measures_markdown() -> str:
    ours = registry.measures()
    out = ["# Measures", "",
           "Generated by `python -m ndcg_plugin.docs` from the measures' own definitions; do not edit by hand.",
           "", "| measure | what | trec_eval counterpart |", "|---|---|---|"]
    for m in ours:
        out.append(f"| `{m.NAME}` | {m.SHORT_DESC} | {m.TREC_EVAL} |")
    out.append("")
    seen_docs: set[str] = set()
    for m in ours:
        out += [f"## {m.NAME}: {m.PRETTY_NAME}", "", m.SHORT_DESC, ""]
        doc = inspect.getdoc(type(m)) or ""  # the family's formula, on the measures' common class
        if doc in seen_docs:
            out += [f"Same family as above (variant `{m.VARIANT}`); formula above.", ""]
        else:
            seen_docs.add(doc)
            out += ["```", doc, "```", ""]
        out += _param_rows(m)
        out += ["", f"trec_eval counterpart: {m.TREC_EVAL}. Example: `{m @ 10}`", ""]
    family_rows = "".join(row + "\n" for f in registry.families() for row in f.conventions)
    out += _trec_eval_section()
    out.append(CONVENTIONS.replace("{family_rows}\n", family_rows))
    out.append(BUILTINS)
    return "\n".join(out)


if __name__ == "__main__":
    print(measures_markdown(), end="")
