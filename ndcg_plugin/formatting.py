"""How numbers are printed by every command: a fixed number of decimal places, or (``-1``) every
digit of the float (its shortest round-tripping form); and ``eval``'s output lines in each of
its formats (:class:`EvalWriter`)."""
from __future__ import annotations

import csv
import io
import json
import math

ALL_DIGITS = -1


def format_value(value: float, places: int) -> str:
    """``value`` with ``places`` decimals, or its full precision when ``places`` is -1."""
    return repr(float(value)) if places == ALL_DIGITS else f"{value:.{places}f}"


SUMMARY_QID = "all"  # the query id of an aggregate line (trec_eval's)
OUTPUTS = ("tsv", "jsonl", "trec_eval", "csv")


class EvalWriter:
    """``eval``'s result lines on standard output, in one of :data:`OUTPUTS`."""

    def __init__(self, output: str, places: int):
        if output not in OUTPUTS:
            raise ValueError(f"output must be one of {', '.join(OUTPUTS)}, got {output!r}")
        self.output, self.places = output, places
        self.header_written = False

    def line(self, qid: str | None, measure, value: float) -> None:
        """One result line. ``qid`` None: the aggregate (``all`` in trec_eval and csv)."""
        print(self.text(qid, measure, value))

    def text(self, qid: str | None, measure, value: float) -> str:
        name, shown = display_name(measure), SUMMARY_QID if qid is None else qid
        if is_count(measure) and float(value).is_integer():  # a count is printed as one (trec_eval's num_q)
            if self.output == "jsonl":
                rec = {"query_id": qid, "measure": name, "value": int(value)}
                return json.dumps({k: v for k, v in rec.items() if v is not None or k != "query_id"})
            number = str(int(value))
            if self.output == "trec_eval":
                return f"{name:<22}\t{shown}\t{number}"
            if self.output == "csv":
                return self._csv(shown, name, number)
            return f"{name}\t{number}" if qid is None else f"{qid}\t{name}\t{number}"
        if self.output == "trec_eval":  # trec_eval's own layout: printf("%-22s\t%s\t%6.4f\n", ...)
            number = f"{value:6.{self.places}f}" if self.places >= 0 else format_value(value, self.places)
            return f"{name:<22}\t{shown}\t{number}"
        if self.output == "csv":
            return self._csv(shown, name, format_value(value, self.places))
        if self.output == "jsonl":
            rec = {"query_id": qid, "measure": name, "value": None if math.isnan(value) else float(value)}
            if qid is None:
                del rec["query_id"]
            return json.dumps(rec)
        if qid is None:
            return f"{name}\t{format_value(value, self.places)}"
        return f"{qid}\t{name}\t{format_value(value, self.places)}"


    def _csv(self, shown: str, name: str, number: str) -> str:
        out = _csv_line(shown, name, number)
        if not self.header_written:  # written with the first value, not before an error
            self.header_written = True
            out = _csv_line("query_id", "measure", "value") + "\n" + out
        return out


#: ir-measures' counting measures: printed as integers
COUNTS = ("NumQ", "NumRet", "NumRel", "NumRelRet")


def is_count(measure) -> bool:
    return getattr(measure, "NAME", None) in COUNTS


def display_name(measure) -> str:
    """A measure's printed name: ir-measures' own, except ``NumRelRet``, which ir-measures makes
    ``NumRet(rel=1)`` (a name its users never typed): printed as NumRelRet."""
    name = str(measure)
    return "NumRelRet" if name == "NumRet(rel=1)" else name


def _csv_line(*fields: str) -> str:
    buf = io.StringIO()
    csv.writer(buf, lineterminator="").writerow(fields)
    return buf.getvalue()
