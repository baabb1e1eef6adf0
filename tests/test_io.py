"""The one reader: the same tiny data in several forms gives the same table; bad input gives
an InputError naming the source, the line and what was expected."""
from __future__ import annotations

import gzip
import io
from pathlib import Path

import ir_measures
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ndcg_plugin import InputError, read

DATA = Path(__file__).parent / "data"
EXPECTED_RUN = {("q1", "d2"): 3.5, ("q1", "d1"): 1.5, ("q2", "d3"): 0.5}


def as_dict(table, col="score"):
    return {(q, d): v for q, d, v in zip(table["query_id"], table["doc_id"], table[col], strict=True)}


@pytest.mark.parametrize("source", [
    DATA / "tiny.run", str(DATA / "tiny.run"), DATA / "tiny.run.gz", DATA / "tiny.wide.run",
    (DATA / "tiny.run").read_text(),
    pd.read_csv(DATA / "tiny.run.csv"),
    {"q1": {"d2": 3.5, "d1": 1.5}, "q2": {"d3": 0.5}},
    list(ir_measures.read_trec_run(str(DATA / "tiny.run"))),
], ids=["path", "str", "gzip", "extra-columns", "text", "dataframe", "dict", "namedtuples"])
def test_every_run_form_reads_the_same(source):
    assert as_dict(read(source, "run")) == EXPECTED_RUN


def test_msmarco_run_ranks_become_scores():
    table = read(DATA / "tiny.msmarco.tsv", "run")
    scores = as_dict(table)
    assert scores[("q1", "d2")] > scores[("q1", "d1")]  # rank 1 above rank 2
    forced = read(DATA / "tiny.msmarco.tsv", "run", run_format="msmarco")
    assert as_dict(forced) == scores


def test_qrels_forms():
    expected = {("q1", "d1"): 2, ("q1", "d2"): 0, ("q2", "d3"): 1}
    assert as_dict(read(DATA / "tiny.qrels", "qrels"), "relevance") == expected
    assert as_dict(read(ir_measures.read_trec_qrels(str(DATA / "tiny.qrels")), "qrels"), "relevance") == expected


def test_stdin(monkeypatch):
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO((DATA / "tiny.run").read_bytes())))
    assert as_dict(read("-", "run")) == EXPECTED_RUN


def test_gzip_detected_by_content_not_name(tmp_path):
    p = tmp_path / "run.txt"
    p.write_bytes(gzip.compress((DATA / "tiny.run").read_bytes()))
    assert as_dict(read(p, "run")) == EXPECTED_RUN


def test_ids_are_strings_never_coerced():
    table = read("001 0 7 1\n1 0 07 1\n", "qrels")
    assert list(table["query_id"]) == ["001", "1"] and list(table["doc_id"]) == ["7", "07"]


@pytest.mark.parametrize("text,kind,line,message", [
    ("q 0 a\n", "qrels", 1, "expected 4 columns"),
    ("q 0 a 1\nq 0 b x\n", "qrels", 2, "expected an integer relevance label, got 'x'"),
    ("q Q0 a 1 1.0\n", "run", 1, "expected 6 columns"),
    ("q Q0 a 1 1.0 t\nq Q0 b 2 high t\n", "run", 2, "expected a numeric score, got 'high'"),
    ("q Q0 a 1 nan t\n", "run", 1, "finite number"),
])
def test_bad_lines_name_the_line_and_what_was_expected(tmp_path, text, kind, line, message):
    p = tmp_path / "input.txt"
    p.write_text(text)
    with pytest.raises(InputError, match=message) as e:
        read(p, kind)
    assert e.value.line == line and e.value.source == str(p)
    assert f"{p}:{line}:" in str(e.value)


def test_empty_missing_and_fake_gzip_files(tmp_path):
    empty = tmp_path / "empty.run"
    empty.write_text("\n")
    with pytest.raises(InputError, match="empty"):
        read(empty, "run")
    with pytest.raises(InputError, match="file not found"):
        read(tmp_path / "nope.run", "run")
    fake = tmp_path / "fake.run.gz"
    fake.write_text("q Q0 a 1 1.0 t\n")
    with pytest.raises(InputError, match="not gzip"):
        read(fake, "run")


def test_dataframe_missing_columns_and_missing_values():
    with pytest.raises(InputError, match=r"missing columns \['score'\]"):
        read(pd.DataFrame({"query_id": ["q"], "doc_id": ["a"]}), "run")
    with pytest.raises(InputError, match="missing value in column doc_id"):
        read(pd.DataFrame({"query_id": ["q"], "doc_id": [None], "score": [1.0]}), "run")
    with pytest.raises(InputError, match="relevance must be an integer"):
        read(pd.DataFrame({"query_id": ["q"], "doc_id": ["a"], "relevance": [1.5]}), "qrels")


def test_unsupported_input_type():
    with pytest.raises(InputError, match="unsupported run input of type int"):
        read(42, "run")
    with pytest.raises(InputError, match="file path"):
        read(iter("abc"), "run")


def test_duplicate_check_confirms_fingerprint_collisions_on_strings(monkeypatch):
    import numpy as np

    import ndcg_plugin.reading.duplicates as dups

    # every doc gets the same fingerprint: distinct pairs must still pass, real twins still fail
    monkeypatch.setattr(dups, "fingerprints", lambda values: np.zeros(len(values), dtype=np.uint64))
    assert len(read("q Q0 a 1 1 t\nq Q0 b 2 1 t\nq Q0 c 3 1 t\n", "run")) == 3
    with pytest.raises(InputError, match="lines 1 and 3"):
        read("q Q0 a 1 1 t\nq Q0 b 2 1 t\nq Q0 a 3 1 t\n", "run")


def test_fingerprints_equal_for_equal_strings_wherever_stored():
    import pandas as pd

    from ndcg_plugin.columns import fingerprints

    values = ["a", "", "ab", "ba", "é", "ab", "x" * 100, "a"]
    f = fingerprints(values)
    assert f[2] == f[5] and f[0] == f[7] and len(set(f.tolist())) == 6
    sliced = fingerprints(pd.Series(values, dtype="str").array[2:])
    assert list(sliced) == list(f[2:])
    # a short string's fingerprint does not depend on whether its array also holds a long one
    short_only = fingerprints(["a", "", "ab", "é"])
    assert list(short_only) == [f[0], f[1], f[2], f[4]]
    eight = ["abcdefgh", "abcdefg", "abcdefghi"]
    assert fingerprints(eight[:2]).tolist() == fingerprints(eight).tolist()[:2]


def _fingerprint_by_hand(text: str) -> int:
    """The fingerprint as columns.py's docstring defines it, one string at a time in Python."""
    b = text.encode()
    k1, k2, k3, mask = 0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9, (1 << 64) - 1
    head = int.from_bytes(b[:8], "little")  # the first (up to) 8 bytes
    out = ((head * k1) & mask) ^ ((len(b) * k2) & mask)
    if len(b) > 8:  # the last 8 bytes
        tail = int.from_bytes(b[-8:], "little")
        out ^= (((tail * k2) & mask) >> 29) ^ ((tail * k3) & mask)
    return out


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(st.sampled_from(list("ab09é\u4e2d")), max_size=30), min_size=1, max_size=40),
       st.integers(0, 10))
def test_fingerprints_match_their_definition_at_every_offset(values, skip):
    import pyarrow as pa

    from ndcg_plugin.columns import fingerprints

    arr = pa.array(values, type=pa.large_string()).slice(min(skip, len(values) - 1))
    assert fingerprints(arr).tolist() == [_fingerprint_by_hand(v) for v in arr.to_pylist()]


def test_fingerprints_on_two_threads_equal_those_on_one(monkeypatch):
    import pyarrow as pa

    from ndcg_plugin import columns

    values = [f"doc-{i * 7919 % 100_003}" + "x" * (i % 13) for i in range(50_000)]
    arr = pa.chunked_array([pa.array(values[:20_000], type=pa.large_string()),
                            pa.array(values[20_000:], type=pa.large_string())])
    one = columns.fingerprints(arr)  # below _PARALLEL_MIN: on the calling thread
    monkeypatch.setattr(columns, "_CHUNK", 7_000)
    monkeypatch.setattr(columns, "_PARALLEL_MIN", 1)
    assert columns.fingerprints(arr).tolist() == one.tolist()
    assert one[:3].tolist() == [_fingerprint_by_hand(v) for v in values[:3]]


def test_progress_is_reported_while_reading_a_large_file(tmp_path):
    path = tmp_path / "big.run"
    path.write_text("".join(f"q{i % 7} Q0 d{i} {i} {1.0 / (i + 1)} t\n" for i in range(500_001)))
    calls = []
    read(path, "run", progress=lambda done, total: calls.append((done, total)))
    size = path.stat().st_size  # the columnar reader reports bytes read
    assert calls and calls[-1] == (size, size)
    assert all(0 < done <= total == size for done, total in calls)
    assert [d for d, _ in calls] == sorted(d for d, _ in calls)


def test_read_trec_run_iterators_are_consumed_as_iterators_never_through_their_frames():
    # ndcg_plugin.read once looked into an unstarted generator's frame for its path and closed
    # it; now any iterator is consumed as one, unstarted or started, and stays the caller's
    gen = ir_measures.read_trec_run(str(DATA / "tiny.run"))
    assert as_dict(read(gen, "run")) == EXPECTED_RUN
    started = ir_measures.read_trec_run(str(DATA / "tiny.run"))
    first = next(started)  # a started iterator is consumed from where it is
    assert len(read(started, "run")) == 2 and first.doc_id == "d2"
