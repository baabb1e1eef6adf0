"""The C loops (ndcg_plugin.arrays.speedups) against the numpy definitions they replace: each function
on random inputs (strings with zero bytes, non-ASCII, empty and long; sliced and chunked
arrays; codes that are and are not grouped; text with empty fields), and the command's
output with and without them, byte for byte, on random interaction logs (tests/test_side_by_side.py's) and with the
environment variable that turns them off. The numpy twin of a call runs in-process under
``speedups.disabled()`` (tests.helpers.numpy_twin). Where the extension is not built, the
comparisons are skipped (numpy runs alone) except in CI, where its absence fails."""
from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from ndcg_plugin import read
from ndcg_plugin.arrays import speedups
from ndcg_plugin.arrays.columns import fingerprints, group_codes, heads
from ndcg_plugin.arrays.exact import split_sums
from ndcg_plugin.ranking.qrels_index import QrelsIndex
from ndcg_plugin.ranking.ranked import trec_eval_order
from ndcg_plugin.reading.columnar import empty_field
from ndcg_plugin.reading.duplicates import distinct_within_queries, distinct_within_small_queries
from ndcg_plugin.reading.sources import Chunk
from tests.helpers import both_ways, numpy_twin, qrels_df
from tests.helpers import run_cli as run_process
from tests.test_reading import files, files_taken, parse
from tests.test_side_by_side import MEASURES, logs, run_cli

built = pytest.mark.skipif(not speedups.available(), reason="the C loops are not built here (no compiler at "
                           "install, or NDCG_PLUGIN_SPEEDUPS=0): numpy runs alone")
STRINGS = st.lists(st.binary(max_size=20).map(lambda b: b.decode("latin-1")) | st.text(max_size=12)
                   | st.sampled_from(["", "a", "ab", "a\x00", "user0000a", "user0000b"]), max_size=40)


def test_the_c_loops_are_built_in_ci():
    if not os.environ.get("CI"):
        pytest.skip("outside CI a machine without a C compiler runs numpy alone")
    assert speedups.available(), "CI installs with a C compiler at hand: the extension should be built"


@st.composite
def string_arrays(draw):
    """Chunked string arrays: large or not, chunks sliced at any offset."""
    typ = draw(st.sampled_from([pa.string(), pa.large_string()]))
    chunks = []
    for values in draw(st.lists(STRINGS, min_size=1, max_size=3)):
        arr = pa.array(values, type=typ)
        lo = draw(st.integers(0, len(arr)))
        chunks.append(arr.slice(lo, draw(st.integers(0, len(arr) - lo))))
    return pa.chunked_array(chunks, type=typ)


@built
@settings(max_examples=300, deadline=None)
@given(string_arrays(), st.data())
def test_fingerprints_and_heads_in_c_equal_numpys(arr, data):
    assert fingerprints(arr).tolist() == numpy_twin(fingerprints, arr).tolist()
    n = len(arr)
    rows = np.array(sorted(data.draw(st.lists(st.integers(0, n - 1), max_size=20))) if n else [], dtype=np.int64)
    for at in (None, rows):
        mine, theirs = heads(arr, at), numpy_twin(heads, arr, at)
        assert mine[0].tolist() == theirs[0].tolist() and mine[1].tolist() == theirs[1].tolist()


@built
@settings(max_examples=300, deadline=None)
@given(st.lists(STRINGS, min_size=1, max_size=3), st.booleans(), st.sampled_from([pa.string(), pa.large_string()]))
def test_group_codes_of_strings_in_order_in_c_equal_numpys(parts, in_order, typ):
    """Strings sorted across the chunks (coded in C) or not (C declines), chunks cut anywhere."""
    flat = sorted(v for p in parts for v in p) if in_order else [v for p in parts for v in p]
    cuts = np.cumsum([0] + [len(p) for p in parts])
    arr = pa.chunked_array([pa.array(flat[a:b], type=typ) for a, b in zip(cuts[:-1], cuts[1:], strict=True)], type=typ)
    mine, theirs = group_codes(arr), numpy_twin(group_codes, arr)
    assert mine.codes.dtype == theirs.codes.dtype and mine.codes.tolist() == theirs.codes.tolist()
    assert mine.uniques.equals(theirs.uniques) and mine.sizes.tolist() == theirs.sizes.tolist()


@built
@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["q2", "q10", "q1", "", "q1\x00", "user0000ab", "user0000a"]),
                          st.integers(1, 4)), min_size=1, max_size=12), st.data())
def test_run_codes_of_grouped_unsorted_strings_in_c_equal_the_runs_by_hand(runs, data):
    """Runs of equal strings in any order (a run file grouped by query, not sorted), chunks cut
    anywhere (a run across two chunks is one run): each string's run counted by hand, and the
    groups those runs give equal numpy's (Arrow's run_end_encode, then hashing)."""
    flat = [v for v, n in runs for _ in range(n)]
    expected, code = [], -1
    for i, v in enumerate(flat):
        code += i == 0 or v != flat[i - 1]
        expected.append(code)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(flat)), max_size=3)))
    bounds = [0, *cuts, len(flat)]
    arr = pa.chunked_array([pa.array(flat[a:b], type=pa.string()) for a, b in zip(bounds[:-1], bounds[1:],
                                                                                  strict=True)], type=pa.string())
    assert speedups.run_codes(arr).tolist() == expected
    mine, theirs = group_codes(arr), numpy_twin(group_codes, arr)
    assert mine.codes.dtype == theirs.codes.dtype and mine.codes.tolist() == theirs.codes.tolist()
    assert mine.uniques.equals(theirs.uniques) and mine.sizes.tolist() == theirs.sizes.tolist()


@built
@settings(max_examples=200, deadline=None)
@given(st.integers(1, 6), st.sampled_from([1, 2, 63, 64, 65, 200, 1000]), st.data())
def test_distinct_within_queries_of_one_size_in_c_equal_numpys(nq, size, data):
    """Queries of one size, below and above the C loop's 64-row table (a hash table per query
    beyond), with a repeated fingerprint or not, and codes that are not one query per row: the
    C loop's answer is numpy's (each query's fingerprints sorted), and True exactly when no
    query repeats a fingerprint."""
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    fp = rng.integers(0, 2**64, size=nq * size, dtype=np.uint64, endpoint=False)
    if data.draw(st.booleans()) and size > 1:
        q, i, j = (data.draw(st.integers(0, m)) for m in (nq - 1, size - 1, size - 1))
        fp[q * size + i] = fp[q * size + j]
    codes = np.repeat(np.arange(nq, dtype=np.int32), size)
    if data.draw(st.booleans()):
        codes[data.draw(st.integers(0, len(codes) - 1))] = data.draw(st.integers(0, nq))
    mine, theirs = distinct_within_queries(fp, codes), numpy_twin(distinct_within_queries, fp, codes)
    assert mine == theirs
    # by hand: the runs of equal codes are queries 0, 1, 2, ... of one size, none repeating a fingerprint
    starts = [i for i in range(len(codes)) if i == 0 or codes[i] != codes[i - 1]]
    spans = list(zip(starts, [*starts[1:], len(codes)], strict=True))
    grouped = len(codes) >= 2 and [int(codes[a]) for a, _ in spans] == list(range(len(spans))) \
        and len({b - a for a, b in spans}) == 1
    assert mine == (grouped and all(len(set(fp[a:b].tolist())) == b - a for a, b in spans))


@built
def test_group_codes_of_ids_that_share_their_first_8_bytes():
    """Ids compared beyond their first 8 bytes (by hand: sorted as Python sorts str, which for
    these ASCII ids is byte order), and a prefix of 8 bytes or fewer before its extensions."""
    ids = sorted(["user0000", "user0000a", "user0000b", "user0000b", "user00001x", "user0000\x00", "u", "u\x00",
                  "user0000ab", "user0000ab"])
    for typ in (pa.string(), pa.large_string()):
        arr = pa.chunked_array([pa.array(ids[:3], type=typ), pa.array(ids[3:], type=typ)], type=typ)
        codes, uniques, sizes = group_codes(arr)
        assert speedups.increasing_codes(arr).tolist() == codes.tolist()  # coded in C, not declined
        distinct = sorted(set(ids))
        assert codes.tolist() == [distinct.index(i) for i in ids] and uniques.to_pylist() == distinct
        assert sizes.tolist() == [ids.count(i) for i in distinct]
        shuffled = pa.chunked_array([pa.array(ids[::-1], type=typ)])
        assert group_codes(shuffled).codes.tolist() == numpy_twin(group_codes, shuffled).codes.tolist()


@built
@settings(max_examples=300, deadline=None)
@given(string_arrays(), string_arrays(), st.data())
def test_strings_compared_in_c_as_python_compares_them(a, b, data):
    """Pairs of rows of two chunked arrays (often equal strings: both drawn from one small set)."""
    if len(a) == 0 or len(b) == 0:
        return
    n = data.draw(st.integers(0, 30))
    rows_a = np.array(sorted(data.draw(st.lists(st.integers(0, len(a) - 1), min_size=n, max_size=n))), dtype=np.int64)
    rows_b = np.array(data.draw(st.lists(st.integers(0, len(b) - 1), min_size=n, max_size=n)), dtype=np.int64)
    same = speedups.equal_at(a, rows_a, b, rows_b)
    assert same.tolist() == [a[int(i)].as_py() == b[int(j)].as_py() for i, j in zip(rows_a, rows_b, strict=True)]


@built
@settings(max_examples=300, deadline=None)
@given(st.lists(st.floats(allow_nan=False, allow_infinity=False) | st.sampled_from([0.0, -0.0, 5e-324, -5e-324, 1.0]),
                max_size=60), st.sampled_from([None, math.nan, math.inf, -math.inf]))
def test_exact_split_sums_in_c_equal_numpys(values, bad):
    """Every kind of double (zeros, subnormals, the largest); a value that is not finite refused."""
    arr = np.array(values, dtype=np.float64)
    assert split_sums(arr) == numpy_twin(split_sums, arr)
    if bad is not None:
        arr = np.append(arr, bad)
        assert speedups.split_sums(arr) is None  # the C loop declines; numpy refuses it by name
        for _, way in both_ways():
            with way, pytest.raises(ValueError, match="finite"):
                split_sums(arr)


@built
@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(st.tuples(st.sampled_from([0.5, 1.0, 2.0]),
                                   st.sampled_from(["", "a", "ab", "a\x00", "b", "b1", "zz", "é", "user0000"])),
                         min_size=1, max_size=12), min_size=1, max_size=6), st.booleans())
def test_ties_of_a_ranked_run_ordered_in_c_as_by_numpy(queries, with_doc_at):
    """Ranked rows (each query's scores descending) with ties, repeated doc ids among them (the
    order stays stable), doc ids read directly or through ``doc_at``."""
    group, score, docs = [], [], []
    for q, rows in enumerate(queries):
        for s, d in sorted(rows, key=lambda r: -r[0]):
            group.append(q)
            score.append(s)
            docs.append(d)
    group, score = np.array(group, dtype=np.int32), np.array(score)
    doc_at = None
    if with_doc_at:  # the ids among others, as a cut run holds them
        doc_at = np.arange(len(docs), dtype=np.int64) * 2
        docs = [x for d in docs for x in (d, "zzz")]
    arr = pa.chunked_array([pa.array(docs[:3], type=pa.string()), pa.array(docs[3:], type=pa.string())])
    mine, theirs = trec_eval_order(group, score, arr, doc_at), numpy_twin(trec_eval_order, group, score, arr, doc_at)
    assert mine.tolist() == theirs.tolist()


@built
@settings(max_examples=400, deadline=None)
@given(st.lists(st.integers(1, 70), min_size=1, max_size=30), st.data(), st.sampled_from([np.int32, np.int64]))
def test_distinct_within_small_queries_in_c_equals_numpys(sizes, data, dtype):
    codes = np.repeat(np.arange(len(sizes)), sizes).astype(dtype)
    change = data.draw(st.sampled_from(["none", "one", "gap"]))
    at = data.draw(st.integers(0, len(codes) - 1))
    if change == "one":  # codes not counted from 0, a query seen again, a step of two
        codes[at] += data.draw(st.sampled_from([-1, 1, 2]))
    elif change == "gap":  # the codes from a query on one more: a code skipped
        codes[codes >= codes[at]] += 1
    span = data.draw(st.sampled_from([4, 50, 2**64]))  # few values: repeats within a query
    fp = np.array(data.draw(st.lists(st.integers(0, span - 1), min_size=len(codes), max_size=len(codes))),
                  dtype=np.uint64)
    assert distinct_within_small_queries(fp, codes) == numpy_twin(distinct_within_small_queries, fp, codes)


@built
@settings(max_examples=500, deadline=None)
@given(st.binary(max_size=60).map(lambda b: bytes(b" a\t\n\r"[x % 5] for x in b)), st.data(),
       st.sampled_from([b" ", b"\t"]), st.booleans(), st.booleans())
def test_empty_fields_found_in_c_as_by_numpy(text, data, delimiter, first_column, has_cr):
    start = data.draw(st.integers(0, len(text)))
    chunk = Chunk(text, start, data.draw(st.integers(start, len(text))))
    assert empty_field(chunk, delimiter, first_column, has_cr) == \
        numpy_twin(empty_field, chunk, delimiter, first_column, has_cr)


@built
def test_empty_fields_by_hand():
    """Each way a field is empty, alone in its block (by hand: empty, or not, as the docstring of
    ``empty_field`` says), in C and in numpy."""
    cases = [(b"a b\n", False, False, False), (b"a  b\n", False, False, True), (b"a b \n", False, False, True),
             (b"a b \r\n", False, True, True), (b"a b \r\n", False, False, False), (b" a b\n", False, False, False),
             (b" a b\n", True, False, True), (b"a b\n c\n", True, False, True), (b"a b\n c\n", False, False, False),
             (b"a b ", False, False, True), (b"", True, True, False)]
    for text, first_column, has_cr, empty in cases:
        for name, way in both_ways():
            with way:
                assert empty_field(Chunk(text), b" ", first_column, has_cr) == empty, (text, name)


PLAIN_NUMBERS = ["1", "-2", "0", "-0", "007", "1.5", "-0.25", "0.976", "12345.678901", "9007199254740993",
                 "0.1234567890123456789", "3.14159265358979"]
ODD = ["1e-3", "+1", "3.", ".5", "nan", "0x10", "1_0", "", "é", "#q", "a\tb", "a\rb", "a b", "\u00a0", "a\x00b"]


@st.composite
def plain_files(draw):
    """Mostly the simple form the C loop reads (ASCII ids, plain decimals, one delimiter), with a
    deviation in a share of them: an odd field (a number in another syntax, an empty or
    non-ASCII field, a comment, other whitespace, a NUL byte), a blank line, a field too many or
    too few."""
    kind = draw(st.sampled_from(["qrels", "run", "run"]))
    fmt = "qrels" if kind == "qrels" else draw(st.sampled_from(["trec", "msmarco"]))
    delim = draw(st.sampled_from([" ", "\t"]))
    # ids of 1 to 20 bytes, some with a control byte that is no whitespace (part of the id)
    ids = st.text(st.sampled_from(list("abc019_-.#/:") + ["\x01"]), min_size=1, max_size=draw(st.sampled_from([6, 20])))
    lines = []
    for _ in range(draw(st.integers(1, 12))):
        q, d, number = draw(ids), draw(ids), draw(st.sampled_from(PLAIN_NUMBERS))
        value = number if fmt == "trec" else str(abs(int(float(number))) % 1000)
        fields = {"qrels": [q, "0", d, value], "trec": [q, "Q0", d, "1", value, "tag"], "msmarco": [q, d, value]}[fmt]
        change = draw(st.integers(0, 40))
        if change < len(fields):
            fields[change] = draw(st.sampled_from(ODD))
        elif change == 10:
            fields.append("extra")
        elif change == 11:
            fields.pop()
        elif change == 12:
            lines.append("")
        lines.append(delim.join(fields))
    data = ("\n".join(lines) + ("\n" if draw(st.booleans()) else "")).encode()
    return kind, "auto" if fmt == "qrels" else fmt, data, draw(st.sampled_from([16, 64, 1 << 20]))


@built
@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(plain_files() | files())
def test_files_read_with_the_c_parser_equal_those_read_without(case):
    """Files mostly in the C loop's simple form (:func:`plain_files`), and tests/test_reading.py's
    random files (every kind of separator, blank and comment lines, bad and good numbers, empty
    fields, CRLF, a BOM, bytes that are not UTF-8, gzip; blocks of 16 bytes to 1 MiB): the same
    table, line numbers and errors with the C loops as without."""
    kind, run_format, data, block = case
    fast = parse(data, kind, run_format, block, columnar_ok=True)
    slow = numpy_twin(parse, data, kind, run_format, block, columnar_ok=True)
    assert fast == slow


@built
def test_the_generated_files_often_take_the_c_parser(monkeypatch):
    """The comparison above means something only where the C loop reads a block: a good share of
    the plain files (drawn on their own, reproducibly) must have a block it reads."""
    taken = files_taken(monkeypatch, speedups, "parse_columns", plain_files(), 300)
    assert len(taken) >= 200 and sum(taken) >= len(taken) / 4, (sum(taken), len(taken))


@built
def test_the_c_parser_takes_plain_blocks_and_declines_the_others():
    """By hand: what it takes (ASCII, one delimiter, plain decimals) it reads as Python does; a
    block with anything else is declined whole (None) and read as before."""
    taken = speedups.parse_columns(b"q1 Q0 d1 1 0.976 t\nq1 Q0 d2 2 -0.0 t\nq10 Q0 x 3 007.50 t", 0, 56, b" ", 6,
                                   (0, 2, 4), False)
    assert taken[0].to_pylist() == ["q1", "q1", "q10"] and taken[1].to_pylist() == ["d1", "d2", "x"]
    assert taken[2].tolist() == [0.976, -0.0, 7.5] and math.copysign(1, taken[2][1]) == -1
    labels = speedups.parse_columns(b"u1\t0\ti1\t-3\n", 0, 11, b"\t", 4, (0, 2, 3), True)
    assert labels[2].dtype == np.int64 and labels[2].tolist() == [-3]
    for line in [b"q Q0 d 1 1e5 t", b"q Q0 d 1 +1 t", b"q Q0 d 1 5. t", b"q Q0 d 1 .5x t", b"#q Q0 d 1 1 t",
                 b"q  Q0 d 1 1 t", b"q  d 1 1 t", b" Q0 d 1 1 t", b"q Q0 d\x00 1 1 t", b"q\x00 Q0 d 1 1 t",
                 b"q Q0 d 1 1 t extra", b"q Q0 d 1 1", b"q Q0 d\t1 1 t", b"q Q0 d 1 1 t\r",
                 b"q Q0 d\xc3\xa9 1 1 t", b"q Q0 d 1 1 t\n\nq Q0 e 1 1 t", b"q Q0 d 1 1 t ",
                 b"q Q0 d 1 12345678901234567 t", b"q Q0 d 1 0.0000000000000000000001 t"]:
        assert speedups.parse_columns(line, 0, len(line), b" ", 6, (0, 2, 4), False) is None, line
    assert speedups.parse_columns(b"q 0 d 1.5\n", 0, 10, b" ", 4, (0, 2, 3), True) is None  # a label must be an integer


IDS = st.text(st.sampled_from(["a", "b", "0", "é", "\x00"]), min_size=1, max_size=4)
QIDS = st.sampled_from(["a", "b"]) | IDS  # often two queries of many judgments (the search in C bisects)


@built
@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(QIDS, IDS, st.integers(-2, 4)), min_size=1, max_size=80, unique_by=lambda r: r[:2]),
       st.lists(st.tuples(QIDS, IDS), max_size=60))
def test_labels_looked_up_in_c_equal_numpys(judgments, probes):
    index = QrelsIndex(read(qrels_df(judgments), "qrels"))
    qids = pa.chunked_array([pa.array([q for q, _ in probes] + [q for q, _, _ in judgments], type=pa.large_string())])
    docs = pa.chunked_array([pa.array([d for _, d in probes] + [d for _, d, _ in judgments], type=pa.large_string())])
    codes = index.code_of(qids)
    known = np.flatnonzero(codes >= 0)
    docs = docs.take(pa.array(known))
    mine, theirs = index.labels(codes[known], docs), numpy_twin(index.labels, codes[known], docs)
    assert mine[0].tolist() == theirs[0].tolist() and mine[1].tolist() == theirs[1].tolist()
    # by local query codes (a block's queries: group codes and each one's qrels code), the pair
    # keys made and looked up in one C loop, also through doc_at (the rows of a cut run)
    local, group = np.unique(codes[known], return_inverse=True)
    local, group = local[::-1].copy(), len(local) - 1 - group  # local codes that are not the qrels codes
    for dtype in (np.int32, np.int64):
        g = group.astype(dtype)
        by_group = index.labels_by_group(g, local.astype(np.int64), docs, fingerprints(docs))
        assert by_group[0].tolist() == theirs[0].tolist() and by_group[1].tolist() == theirs[1].tolist()
    spread = pa.chunked_array([pa.array([x for d in docs.to_pylist() for x in ("zz", d)], type=pa.large_string())])
    at = np.arange(len(docs), dtype=np.int64) * 2 + 1
    by_group = index.labels_by_group(group, local.astype(np.int64), spread, fingerprints(docs), at)
    assert by_group[0].tolist() == theirs[0].tolist() and by_group[1].tolist() == theirs[1].tolist()


@built
def test_labels_looked_up_in_c_in_queries_of_every_size_up_to_40():
    """One query per size, each doc id a judgment (label by hand: its position mod 3) or not
    (an odd number): the search in C bisects ranges of more than 8 keys."""
    judgments = [(f"q{size}", f"d{2 * i}", i % 3) for size in range(1, 41) for i in range(size)]
    index = QrelsIndex(read(qrels_df(judgments), "qrels"))
    probes = [(q, d) for q, d, _ in judgments] + [(f"q{size}", f"d{2 * i + 1}") for size in range(1, 41)
                                                    for i in range(size)]
    codes = index.code_of(pa.chunked_array([pa.array([q for q, _ in probes], type=pa.large_string())]))
    docs = pa.chunked_array([pa.array([d for _, d in probes], type=pa.large_string())])
    judged, label = index.labels(codes, docs)
    n = len(judgments)
    assert judged.tolist() == [True] * n + [False] * (len(probes) - n)
    assert label.tolist() == [r for _, _, r in judgments] + [0] * (len(probes) - n)


@built
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(logs(), st.sampled_from([[], ["--block-size", "64"], ["--duplicates", "max"], ["-q"]]))
def test_the_command_prints_the_same_with_and_without_the_c_loops(tmp_path, case, options):
    qrels, run = case
    (tmp_path / "q").write_text(qrels)
    (tmp_path / "r").write_text(run)
    args = ["eval", str(tmp_path / "q"), str(tmp_path / "r"), "-p", "-1", *options, *MEASURES]
    fast = run_cli(*args)
    slow = numpy_twin(run_cli, *args)
    assert fast == slow


@built
def test_the_environment_variable_turns_them_off():
    code = "from ndcg_plugin.arrays import speedups; print(speedups.available())"
    for value, expected in (("0", "False"), ("1", "True"), ("", "True")):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             env={**os.environ, speedups.ENV: value}, check=True).stdout.strip()
        assert out == expected


def test_another_value_of_the_environment_variable_is_refused_by_name():
    code = "from ndcg_plugin.arrays import speedups; print(speedups.available())"
    refused = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             env={**os.environ, speedups.ENV: "off"})
    assert refused.returncode != 0 and "NDCG_PLUGIN_SPEEDUPS must be 0" in refused.stderr and "'off'" in refused.stderr
    cli = run_process("eval", "benchmarks_data/example.qrels", "benchmarks_data/example.run", "NDCG_lin@5",
                      env={speedups.ENV: "off"}, cwd=Path(__file__).resolve().parent.parent)
    assert cli.returncode == 2 and cli.stderr.startswith("ndcg-plugin: error: the environment variable " + speedups.ENV)


@built
def test_the_command_prints_the_same_with_the_environment_variable_off(tmp_path):
    (tmp_path / "q").write_text("u1 0 a 2\nu1 0 b 1\nu2 0 c 1\n")
    (tmp_path / "r").write_text("u1 Q0 b 1 2.0 t\nu1 Q0 a 2 2.0 t\nu2 Q0 c 1 1.0 t\nu2 Q0 d 2 0.5 t\n")
    outs = [run_process("eval", str(tmp_path / "q"), str(tmp_path / "r"), "-p", "-1", "-q", *MEASURES,
                        env={speedups.ENV: value}) for value in ("0", "1")]
    assert outs[0].returncode == 0 and outs[0].stdout == outs[1].stdout


@built
@settings(max_examples=1000, deadline=None)
@given(st.text(st.sampled_from("0123456789.-+e"), min_size=1, max_size=26)
       | st.tuples(st.sampled_from(["", "-"]), st.text(st.sampled_from("0123456789"), max_size=24),
                   st.sampled_from(["", "."]), st.text(st.sampled_from("0123456789"), max_size=24)).map("".join)
       .filter(bool), st.booleans())
@example("90071992547409.93", False)  # M above 2^53: (double)M rounds, then the division rounds again
def test_a_number_the_c_parser_takes_is_the_one_python_reads(text, integer):
    """Any string of digits, points, signs and exponents: declined, or read as Python's int() or
    float() reads it (the oracle), bit for bit."""
    line = f"q 0 d {text}".encode()
    found = speedups.parse_columns(line, 0, len(line), b" ", 4, (0, 2, 3), integer)
    if found is not None:
        expected = int(text) if integer else float(text)
        assert found[2].tolist() == [expected]
        assert integer or math.copysign(1, found[2][0]) == math.copysign(1, expected)
