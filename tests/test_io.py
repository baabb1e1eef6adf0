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
    empty.write_bytes(b"")
    with pytest.raises(InputError, match="empty"):
        read(empty, "run")
    blank = tmp_path / "blank.run"  # trec_eval -c reads it as a run without results (exit 0, all zeros)
    blank.write_text("\n")
    with pytest.warns(RuntimeWarning, match="holds no result line"):
        assert len(read(blank, "run")) == 0
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

    from ndcg_plugin.arrays.columns import fingerprints

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

    from ndcg_plugin.arrays.columns import fingerprints

    arr = pa.array(values, type=pa.large_string()).slice(min(skip, len(values) - 1))
    assert fingerprints(arr).tolist() == [_fingerprint_by_hand(v) for v in arr.to_pylist()]


def test_fingerprints_on_two_threads_equal_those_on_one(monkeypatch):
    import pyarrow as pa

    from ndcg_plugin.arrays import columns

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


# --- DataFrames: every id column kind against a plain-Python oracle ---------------------------

def _id_column(values: list, kind: str):
    """A DataFrame column of ids stored as users store them."""
    import numpy as np
    import pandas as pd
    import pyarrow as pa

    if kind == "object":
        return pd.Series(np.array(values, dtype=object), dtype=object)
    if kind == "int64":
        return pd.Series(np.array(values, dtype=np.int64))
    if kind == "arrow":  # pandas' default for strings (Arrow-backed), several chunks as Parquet or CSV give
        half = len(values) // 2
        chunks = pa.chunked_array([pa.array(values[:half], type=pa.large_string()),
                                   pa.array(values[half:], type=pa.large_string())])
        return pd.Series(pd.arrays.ArrowStringArray(chunks))
    if kind == "arrow-dtype":
        return pd.Series(pd.array(values, dtype=pd.ArrowDtype(pa.string())))
    return pd.Series(pd.array(values, dtype="string[python]"))


def _oracle(qids: list, docs: list, values: list) -> tuple:
    """The table the rules give (a repeated pair: its first row kept), or (row, the error's
    words), one row at a time in Python: missing values first (query_id, doc_id, then the value
    column), then empty ids."""
    for column in (qids, docs, values):
        for i, v in enumerate(column):
            if v is None:
                return "error", i, "missing value"
    for name, column in (("query_id", qids), ("doc_id", docs)):
        for i, v in enumerate(column):
            if v == "":
                return "error", i, f"empty {name}"
    rows: dict = {}
    for i, (q, d) in enumerate(zip(qids, docs, strict=True)):
        rows.setdefault((q if isinstance(q, str) else str(q), d if isinstance(d, str) else str(d)), i)
    kept = sorted(rows.values())
    return ([k[0] for k in rows], [k[1] for k in rows], [float(values[i]) for i in kept], kept)


@st.composite
def frames(draw):
    """Columns of string ids (leading zeros, unicode, sometimes empty or missing), integer ids,
    or integers mixed with strings in an object column, in every storage pandas offers."""
    n = draw(st.integers(1, 12))
    text = st.one_of(st.from_regex(r"\A0[0-9]{0,3}\Z"), st.text(st.characters(blacklist_categories=("Cs",)),
                                                                 min_size=1, max_size=5))
    columns = []
    for _ in range(2):
        kind = draw(st.sampled_from(["object", "int64", "arrow", "arrow-dtype", "python", "mixed"]))
        if kind == "int64":
            values = draw(st.lists(st.integers(-(2**63), 2**63 - 1), min_size=n, max_size=n))
        elif kind == "mixed":
            values = draw(st.lists(st.one_of(text, st.integers(-(10**12), 10**12)), min_size=n, max_size=n))
            kind = "object"
        else:
            odd = st.sampled_from([None, ""]) if draw(st.integers(0, 4)) == 0 else st.nothing()
            values = draw(st.lists(st.one_of(text, odd), min_size=n, max_size=n))
        columns.append((values, kind))
    scores = draw(st.lists(st.one_of(st.floats(-1e9, 1e9), st.just(None) if draw(st.integers(0, 9)) == 0
                                     else st.nothing()), min_size=n, max_size=n))
    return columns, scores


@settings(max_examples=400, deadline=None)
@given(frames())
def test_dataframe_ids_of_every_storage_read_as_the_rules_say(case):
    import numpy as np
    import pandas as pd

    ((qids, q_kind), (docs, d_kind)), scores = case
    frame = pd.DataFrame({"query_id": _id_column(qids, q_kind), "doc_id": _id_column(docs, d_kind),
                          "score": np.array([np.nan if s is None else s for s in scores])})
    before = frame.copy(deep=True)
    expected = _oracle(qids, docs, scores)
    try:
        table = read(frame, "run", duplicates="first")
        got = (list(table["query_id"]), list(table["doc_id"]), table["score"].tolist(), table["line"].tolist())
    except InputError as e:
        got = ("error", e.line, e.reason)
    if expected[0] == "error":
        assert got[:2] == expected[:2] and expected[2] in got[2], (got, expected)
    else:
        assert got == expected
        table.loc[0, "query_id"] = "changed"  # the table is the caller's own: the frame stays as given
    assert frame.equals(before) and list(frame.dtypes) == list(before.dtypes)


def test_dataframe_string_ids_stay_arrow_strings_without_a_copy():
    import pandas as pd
    import pyarrow as pa

    ids = pa.chunked_array([pa.array(["q1", "q1"], type=pa.large_string()), pa.array(["q2"], type=pa.large_string())])
    frame = pd.DataFrame({"query_id": pd.arrays.ArrowStringArray(ids), "doc_id": ["a", "b", "c"],
                          "score": [1.0, 2.0, 3.0]})
    table = read(frame, "run")
    got = table["query_id"].array.__arrow_array__()
    assert got.num_chunks == 2 and got.chunk(0).buffers()[2].address == ids.chunk(0).buffers()[2].address
    assert table["doc_id"].array.__arrow_array__().to_pylist() == ["a", "b", "c"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(st.sampled_from(["a", "b", "c", "d", "e1", "é"]), min_size=1, max_size=7), min_size=1,
                max_size=8))
def test_duplicates_in_grouped_queries_of_several_small_sizes_are_found_exactly(queries):
    # the small-queries check (each size's queries sorted row by row) against counting the pairs
    from collections import Counter

    import numpy as np
    import pyarrow as pa

    from ndcg_plugin.arrays.columns import fingerprints, group_codes
    from ndcg_plugin.reading import duplicates
    from ndcg_plugin.reading.formats import LAYOUTS
    from ndcg_plugin.reading.lines import Parsed

    qids = [f"q{i}" for i, docs in enumerate(queries) for _ in docs]
    docs = [d for ds in queries for d in ds]
    pairs = list(zip(qids, docs, strict=True))
    counts = Counter(pairs)
    columns = Parsed(LAYOUTS["trec"], pa.chunked_array([pa.array(qids, type=pa.large_string())]),
                     pa.chunked_array([pa.array(docs, type=pa.large_string())]), np.zeros(len(qids)), None)
    mask = duplicates.duplicate_mask(columns)
    assert ([False] * len(qids) if mask is None else mask.tolist()) == [counts[p] > 1 for p in pairs]
    # the fast check itself: it shows distinct docs exactly when there are (ids this short are
    # their own fingerprints), for grouped queries of any sizes
    shown = duplicates.distinct_within_small_queries(fingerprints(docs), group_codes(qids).codes)
    assert shown == (len(qids) >= 2 and max(counts.values()) == 1)
