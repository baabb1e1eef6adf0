"""Measure strings to measures: ir-measures' parser, with the plugin's validation and messages
that point from a trec_eval name (``ndcg_cut.10``, ``recip_rank``) to its equivalent here."""
from __future__ import annotations

from collections.abc import Iterable

import ir_measures

from .base import MAX_CUTOFF
from .registry import families, measures


def trec_eval_names() -> dict[str, tuple[str, str | None]]:
    """trec_eval measure names -> (ir-measures name, the plugin's counterpart or None), as each
    family names the ones it computes (Family.trec_eval_names)."""
    out: dict = {}
    for f in families():
        out.update(f.trec_eval_names)
    return out


def trec_eval_hint(text: str) -> str:
    """'; that is trec_eval's name: here it is nDCG@10 (the plugin's ...)' for a trec_eval measure
    name such as ndcg_cut.10, P_10 or recip_rank, else ''."""
    name, k = text, None
    for sep in (".", "_"):
        head, _, tail = text.rpartition(sep)
        if head and tail.isdigit():
            name, k = head, tail
            break
    known = trec_eval_names()
    if name not in known:
        return ""
    ours, plugin = (x.replace("{k}", k or "k").replace("{p}", "b") if x else x for x in known[name])
    extra = f" (the plugin's {plugin})" if plugin else ""
    return f"; that is trec_eval's name: here it is {ours}{extra}"


def did_you_mean(text: str) -> str:
    """' (did you mean NDCG_exp@10?)' for a mistyped measure name (``NDCG_Exp@10``, ``nDGC@10``):
    the registered names closest to the name part (difflib, case ignored), with the rest of
    ``text`` (parameters, cutoff) kept; '' when none is close."""
    import difflib
    import re
    name = re.match(r"[^(@]*", text).group(0)
    rest = text[len(name):]
    known = {n.lower(): n for n in reversed(list(ir_measures.measures.registry))}  # the first spelling wins
    close = difflib.get_close_matches(name.lower(), list(known), n=3, cutoff=0.6)
    return f" (did you mean {' or '.join(known[c] + rest for c in close)}?)" if close else ""


def split_measures(text: str) -> list[str]:
    """Measure strings in one argument: separated by spaces outside parentheses, so that
    ``"Name(rel=2, ties='average')@10 nDCG@10"`` is two measures."""
    parts, depth, current = [], 0, []
    for ch in text:
        depth += (ch == "(") - (ch == ")")
        if ch.isspace() and depth == 0:
            if current:
                parts.append("".join(current))
                current = []
        else:
            current.append(ch)
    if current:
        parts.append("".join(current))
    return parts


def examples() -> list[str]:
    """Two of the plugin's measures as a user would type them, for messages: the second measure at
    cutoff 10, and the last one that takes ``rel`` with rel=2 (as TREC DL asks)."""
    ours = measures()
    with_rel = [m for m in ours if "rel" in m.SUPPORTED_PARAMS]
    return [f"{ours[1].NAME}@10", str(with_rel[-2 if len(with_rel) > 1 else -1](rel=2) @ 10)]


def _parse_one(part: str):
    try:
        m = ir_measures.parse_measure(part)
    except (NameError, ValueError, SyntaxError) as e:
        hint = trec_eval_hint(part)
        if hint:
            raise ValueError(f"unknown measure {part!r}{hint}") from None
        if isinstance(e, NameError):
            names = ", ".join(m.NAME for m in measures())
            raise ValueError(f"unknown measure {part!r}{did_you_mean(part)}; the plugin's measures are {names}, plus "
                             f"any ir-measures measure (nDCG@10, AP, RR@10, ...)") from None
        raise ValueError(f"cannot read measure {part!r}: expected Name, Name@k or Name(param=value, ...)@k, "
                         f"e.g. {examples()[0]} or \"{examples()[1]}\"") from None
    try:
        m.validate_params()
    except (ValueError, AssertionError) as e:
        raise ValueError(f"invalid measure {part!r}: {e}") from None
    cutoff = m.params.get("cutoff")
    if isinstance(cutoff, int) and not isinstance(cutoff, bool) and cutoff < 1:
        # pytrec_eval aborts on P@0 and nDCG@0 (an assertion), and RR@0 would silently be 0
        raise ValueError(f"invalid measure {part!r}: the cutoff must be a positive integer (k >= 1), got {cutoff}")
    if isinstance(cutoff, int) and cutoff > MAX_CUTOFF:
        raise ValueError(f"invalid measure {part!r}: the cutoff must be at most 2^63 - 1 = {MAX_CUTOFF} "
                         f"(a 64-bit integer), got {cutoff}")
    return m


def parse_measures(strings: Iterable[str]) -> list:
    """Parse measure strings (one argument may hold several, separated by spaces outside
    parentheses) with ``ir_measures.parse_measure``, validate them and drop repeats, keeping
    the order. Raises ValueError naming the string at fault: unknown names list the plugin's
    measures, and trec_eval names (``ndcg_cut.10``, ``recip_rank``) get their equivalent."""
    out: list = []
    for s in strings:
        for part in split_measures(str(s)):
            m = _parse_one(part)
            if m not in out:
                out.append(m)
    return out
