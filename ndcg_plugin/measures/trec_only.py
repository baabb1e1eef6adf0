"""trec_eval measures that have no ir-measures name (``relative_P``, ``Rprec_mult``, ``utility``,
``binG``, ``G``, ``ndcg_rel``, ``Rndcg``, ``num_nonrel_judged_ret``, ``rbp``, ``rbp_resid``, ``unj``):
the trec_eval drop-in has the engine compute them as measures of :class:`TrecEvalMeasure`, which
are never added to ir-measures' registry (:func:`ndcg_plugin.measures.registry.register` adds a
family's ``measures`` only, and these families list none), so a user sees no new name. A family
names its trec_eval-only measures in ``trec_eval_names`` with a template such as
``relative_P@{k}``; :func:`measure_of` makes the measure of a filled-in template, looking the name
up among :data:`CLASSES` before ir-measures' own registry."""
from __future__ import annotations

import ast
from typing import Any, ClassVar

from ir_measures.measures.base import ParamInfo

from .base import REL_DESC, PluginMeasure, Spec, param


class TrecEvalMeasure(PluginMeasure):
    """A trec_eval measure without an ir-measures name: its family and variant, a cutoff where it
    takes one, trec_eval's ``-l`` (``rel``) and ``-J`` (``judged_only``), and its real parameters
    (``values``: Rprec_mult's multiple, utility's four coefficients, rbp's p)."""

    SUPPORTED_PARAMS: ClassVar[dict] = {
        "cutoff": ParamInfo(dtype=int, required=False, desc="ranking cutoff (a positive integer)"),
        "rel": ParamInfo(dtype=int, default=1, desc=REL_DESC),
        "judged_only": ParamInfo(dtype=bool, default=False, desc="trec_eval -J: judged documents only"),
        "values": ParamInfo(dtype=tuple, default=(), desc="the measure's real parameters"),
    }

    def spec(self) -> Spec:
        self.validate_params()
        values = tuple(float(x) for x in param(self, "values", ()) or ())
        return Spec(self.FAMILY, self.VARIANT, param(self, "cutoff"), rel=param(self, "rel", 1),
                    judged_only=bool(param(self, "judged_only", False)), params=values)


#: the trec_eval-only measures by name, as ir-measures' registry holds its own: one measure without
#: parameters each (filled by :func:`trec_eval_measure`)
CLASSES: dict[str, Any] = {}


def trec_eval_measure(name: str, family: str, variant: str, desc: str, thresholded: bool = True) -> Any:
    """The :class:`TrecEvalMeasure` of trec_eval's ``name`` (the family's ``variant``), without
    parameters (call it with some, as an ir-measures measure). ``thresholded=False``: a measure
    trec_eval's ``-l`` does not change (it reads labels, or judgments, never the level): it takes no
    ``rel``, so the drop-in gives it none (also under ``-l 0``)."""
    params = TrecEvalMeasure.SUPPORTED_PARAMS if thresholded else {
        k: v for k, v in TrecEvalMeasure.SUPPORTED_PARAMS.items() if k != "rel"}
    cls = type(name, (TrecEvalMeasure,), {"__name__": name, "NAME": name, "FAMILY": family, "VARIANT": variant,
                                          "SHORT_DESC": desc, "TREC_EVAL": name, "__doc__": desc,
                                          "SUPPORTED_PARAMS": params})
    CLASSES[name] = cls()
    return CLASSES[name]


def measure_of(text: str) -> Any:
    """The measure of ``text`` (``Name``, ``Name(p=v, ...)``, ``Name@k``): a trec_eval-only one
    of :data:`CLASSES`, else ir-measures' own (:func:`ir_measures.parse_measure`)."""
    import ir_measures
    node = ast.parse(text, mode="eval").body
    at = None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
        at, node = ast.literal_eval(node.right), node.left
    call = node if isinstance(node, ast.Call) else None
    name = (call.func if call else node).id if isinstance(call.func if call else node, ast.Name) else None
    if name not in CLASSES:
        return ir_measures.parse_measure(text)
    args = {k.arg: ast.literal_eval(k.value) for k in call.keywords} if call else {}
    measure = CLASSES[name](**args)
    return measure @ at if at is not None else measure
