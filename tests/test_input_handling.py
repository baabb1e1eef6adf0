"""Bad input and odd data (docs/input-handling.md): clear errors, nothing silently wrong."""
from __future__ import annotations

import gzip
import math
import warnings
from math import log2
from pathlib import Path

import ir_measures
import pytest

import ndcg_plugin
from ndcg_plugin import HitRate, InputError, MRR_ignore, MRR_zero, NDCG_exp, NDCG_lin
from tests.conftest import shared_file
from tests.helpers import qrels_df, run_cli, run_df, run_main

DATA = Path(__file__).parent / "data"
GOOD_RUN = "q1 Q0 d1 1 2.0 t\nq1 Q0 d2 2 1.0 t\n"
GOOD_QRELS = "q1 0 d1 1\nq1 0 d2 0\n"


cli = run_cli


# (id, which file is bad, content as bytes, line named, fragment of the message)
BAD = [
    ("wrong-column-count", "run", b"q1 Q0 d1 1 2.0 t\nq1 Q0 d2 2 1.0\n", 2, "expected 6 columns"),
    ("non-numeric-score", "run", b"q1 Q0 d1 1 2.0 t\nq1 Q0 d2 2 high t\n", 2, "expected a numeric score, got 'high'"),
    ("nan-score", "run", b"q1 Q0 d1 1 2.0 t\nq1 Q0 d2 2 nan t\n", 2, "finite number"),
    ("inf-score", "run", b"q1 Q0 d1 1 inf t\n", 1, "finite number"),
    ("duplicate-run-pair", "run", b"q1 Q0 d1 1 2.0 t\nq1 Q0 d2 2 1.0 t\nq1 Q0 d1 3 0.5 t\n", 3, "lines 1 and 3"),
    ("truncated-last-line", "run", b"q1 Q0 d1 1 2.0 t\nq1 Q0 d2", 2, "expected 6 columns"),
    ("non-integer-label", "qrels", b"q1 0 d1 1\nq1 0 d2 0.5\n", 2, "expected an integer relevance label"),
    ("qrels-5-columns", "qrels", b"q1 0 d1 1 extra\n", 1, "expected 4 columns"),
    ("qrels-3-columns", "qrels", b"q1 d1 1\n", 1, "expected 4 columns"),
    ("duplicate-qrels-same-label", "qrels", b"q1 0 d1 1\nq1 0 d1 1\n", 2, "lines 1 and 2"),
    ("duplicate-qrels-conflicting", "qrels", b"q1 0 d1 1\nq1 0 d1 0\n", 2, "lines 1 and 2"),
    ("empty-file", "run", b"", None, "the input is empty"),
    ("blank-qrels-line", "qrels", b"q1 0 d1 1\n\nq1 0 d2 1\n", 2, "a blank line, which trec_eval refuses"),
    ("invalid-utf8", "run", b"q1 Q0 d\xff 1 2.0 t\n", None, "not valid UTF-8"),
    ("corrupt-gzip", "run", gzip.compress(GOOD_RUN.encode())[:-8], None, "gzip"),
]


@pytest.mark.parametrize("case,which,content,line,fragment", BAD, ids=[b[0] for b in BAD])
def test_cli_input_errors(tmp_path, case, which, content, line, fragment):
    bad = tmp_path / ("bad.run.gz" if case == "corrupt-gzip" else f"bad.{which}")
    bad.write_bytes(content)
    good_q, good_r = tmp_path / "good.qrels", tmp_path / "good.run"
    good_q.write_text(GOOD_QRELS)
    good_r.write_text(GOOD_RUN)
    qrels, run = (bad, good_r) if which == "qrels" else (good_q, bad)
    proc = run_main("eval", str(qrels), str(run), "NDCG_lin@10")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    where = f"{bad}:{line}:" if line is not None else f"{bad}:"
    assert where in proc.stderr and fragment in proc.stderr, proc.stderr


def test_scientific_notation_and_missing_final_newline():
    table = ndcg_plugin.read("q1 Q0 d1 1 1e-3 t\nq1 Q0 d2 2 -2.5E+2 t", "run")
    assert table.set_index("doc_id")["score"].to_dict() == {"d1": 0.001, "d2": -250.0}


def test_empty_run_scores_zero():
    qrels = qrels_df([("q1", "d1", 1)])
    agg = ir_measures.calc_aggregate([NDCG_lin @ 10, HitRate @ 10, MRR_zero @ 10], qrels, run_df([]))
    assert agg == {NDCG_lin @ 10: 0.0, HitRate @ 10: 0.0, MRR_zero @ 10: 0.0}


def test_empty_ids_in_a_dataframe_are_refused():
    with pytest.raises(InputError, match="row 0|:0: empty query_id"):
        ndcg_plugin.read(run_df([("", "d1", 1.0)]), "run")
    with pytest.raises(InputError, match="empty doc_id"):
        ndcg_plugin.read({"q1": {"": 1.0}}, "run")


def test_duplicate_qrels_same_or_conflicting_labels():
    for text in ("q 0 a 1\nq 0 a 1\n", "q 0 a 1\nq 0 a 3\n"):
        with pytest.raises(InputError, match="lines 1 and 2"):
            ndcg_plugin.read(text, "qrels")
    assert ndcg_plugin.read("q 0 a 1\nq 0 a 3\n", "qrels", duplicates="max")["relevance"].tolist() == [3]


def test_large_labels_exact_gain_or_clear_error():
    qrels = qrels_df([("q", "a", 30), ("q", "b", 1)])
    run = run_df([("q", "b", 2.0), ("q", "a", 1.0)])
    # DCG = 1/1 + (2^30 - 1)/log2(3); IDCG = (2^30 - 1) + 1/log2(3)
    expected = (1 + (2**30 - 1) / log2(3)) / ((2**30 - 1) + 1 / log2(3))
    assert ir_measures.calc_aggregate([NDCG_exp @ 2], qrels, run)[NDCG_exp @ 2] == pytest.approx(expected, rel=1e-15)
    huge = qrels_df([("q", "a", 2000)])
    with pytest.raises(ValueError, match="label 2000"):
        ir_measures.calc_aggregate([NDCG_exp @ 2], huge, run)
    assert ir_measures.calc_aggregate([NDCG_lin @ 2], huge, run)[NDCG_lin @ 2] == pytest.approx(1 / log2(3))


def test_crlf_tabs_bom_read_like_plain(tmp_path):
    plain = ndcg_plugin.read(GOOD_RUN, "run")[["query_id", "doc_id", "score"]]
    variants = {
        "crlf": GOOD_RUN.replace("\n", "\r\n").encode(),
        "tabs": GOOD_RUN.replace(" ", "\t").encode(),
        "mixed": b"q1\tQ0 d1  1\t2.0 t\nq1 Q0\td2 2 1.0\tt\n",
        "bom": b"\xef\xbb\xbf" + GOOD_RUN.encode(),
        "bom-crlf-tabs": b"\xef\xbb\xbf" + GOOD_RUN.replace(" ", "\t").replace("\n", "\r\n").encode(),
    }
    for name, content in variants.items():
        path = tmp_path / f"{name}.run"
        path.write_bytes(content)
        got = ndcg_plugin.read(path, "run")[["query_id", "doc_id", "score"]]
        assert got.astype(object).equals(plain.astype(object)), name


def test_hash_and_non_ascii_doc_ids():
    # tied scores: trec_eval orders by strcmp descending; UTF-8 byte order = code point order
    qrels = qrels_df([("q", "z#1", 1)])
    run = run_df([("q", "é#2", 1.0), ("q", "z#1", 1.0), ("q", "a#3", 1.0)])  # order: é#2, z#1, a#3
    assert ir_measures.calc_aggregate([MRR_zero @ 3], qrels, run)[MRR_zero @ 3] == 0.5
    table = ndcg_plugin.read("q Q0 msmarco_v2.1_doc_00_1#3_2 1 1.0 t\n", "run")
    assert table["doc_id"].tolist() == ["msmarco_v2.1_doc_00_1#3_2"]


def test_run_queries_not_in_the_qrels_are_reported_once():
    qrels = shared_file("trec_eval", "qrels.comment.test")
    run = shared_file("trec_eval", "results.comment.test")
    proc = cli("crosscheck", str(qrels), str(run))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.count("match") == 6
    notes = [line for line in proc.stderr.splitlines() if "not in the qrels" in line]
    assert len(notes) == 1 and "270 of 301 run queries are not in the qrels" in notes[0], proc.stderr


def test_no_query_in_common_warns_and_scores_zero():
    qrels = qrels_df([("q1", "a", 1), ("q2", "b", 1)])
    run = run_df([("x1", "a", 1.0), ("x2", "b", 1.0)])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        agg = ir_measures.calc_aggregate([NDCG_lin @ 10, MRR_ignore @ 10, HitRate @ 10], qrels, run)
    messages = [str(w.message) for w in caught]
    assert any("0 of 2 run queries are in the qrels" in m for m in messages), messages
    assert agg[NDCG_lin @ 10] == 0.0 and agg[HitRate @ 10] == 0.0 and math.isnan(agg[MRR_ignore @ 10])



def test_no_query_in_common_is_said_on_stderr_by_the_cli(tmp_path):
    run = tmp_path / "other.run"
    run.write_text("x1 Q0 d1 1 2.0 t\n")
    proc = cli("eval", str(DATA / "tiny.qrels"), str(run), "NDCG_lin@10")
    assert proc.returncode == 0 and proc.stdout == "NDCG_lin@10\t0.0000\n"
    assert "0 of 1 run queries are in the qrels" in proc.stderr and "Traceback" not in proc.stderr
