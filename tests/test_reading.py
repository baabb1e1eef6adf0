"""The reader reads files exactly as trec_eval does (issue: no silently wrong number at the
edges): ASCII whitespace runs separate fields, comments and blank lines are skipped, numbers
outside trec_eval's syntax are refused, and the columnar parser returns exactly the line
parser's table or declines."""
from __future__ import annotations

import gzip

import ir_measures
import numpy as np
import pytest
import pytrec_eval
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ndcg_plugin import InputError, NDCG_lin, read
from ndcg_plugin.reading import to_table
from ndcg_plugin.reading.sources import blocks, parse_blocks


def trec_eval_ndcg_cut(qrels: dict, run: dict, k: int) -> dict:
    """pytrec_eval's ndcg_cut.k per query (the oracle)."""
    ev = pytrec_eval.RelevanceEvaluator(qrels, {f"ndcg_cut.{k}"})
    return {q: v[f"ndcg_cut_{k}"] for q, v in ev.evaluate(run).items()}


def write(tmp_path, name, data: bytes):
    p = tmp_path / name
    p.write_bytes(data)
    return p


def test_a_blank_before_a_tab_is_part_of_the_separator_not_of_the_doc_id(tmp_path):
    qrels = write(tmp_path, "q", b"q1 0 d1 1\nq1 0 d2 1\n")
    run = write(tmp_path, "r", b"q1\tQ0\td1\t1\t2.0\tt\nq1\tQ0\td2 \t2\t1.0\tt\n")
    table = read(run, "run")
    assert list(table["doc_id"]) == ["d1", "d2"]
    # both docs relevant, both retrieved: NDCG@2 = 1 (trec_eval ndcg_cut.2 = 1)
    assert ir_measures.calc_aggregate([NDCG_lin @ 2], read(qrels, "qrels"), table)[NDCG_lin @ 2] == 1.0


def test_a_tab_inside_a_space_separated_line_separates_fields(tmp_path):
    run = write(tmp_path, "r", b"q1 Q0 d1 1 1.0 t\nq1 Q0 d2\t7 2 3.0 t\n")
    table = read(run, "run")
    # trec_eval reads 'q1 Q0 d2 7 2 3.0 t': doc d2, rank 7, score 2 (a 7th column is allowed)
    assert list(table["doc_id"]) == ["d1", "d2"] and list(table["score"]) == [1.0, 2.0]


def test_mixed_whitespace_and_leading_blanks_in_qrels(tmp_path):
    qrels = write(tmp_path, "q", b"q1 0 d1 1\n  q1\t0  d2 \t 2\r\n\tq2 0 d3\x0b1\n")
    table = read(qrels, "qrels")
    assert list(zip(table["query_id"], table["doc_id"], table["relevance"], strict=True)) == [
        ("q1", "d1", 1), ("q1", "d2", 2), ("q2", "d3", 1)]


def test_comment_and_blank_lines_in_runs_are_skipped(tmp_path):
    run = write(tmp_path, "r", b"# run by bm25\nq1 Q0 d1 1 2.0 t\n\n   # indented comment\n  \nq1 Q0 d2 2 1.0 t\n")
    table = read(run, "run")
    assert list(table["doc_id"]) == ["d1", "d2"] and list(table["line"]) == [2, 6]


def test_qrels_comment_in_column_0_is_skipped_not_read_as_a_query(tmp_path):
    text = b"q1 0 d1 1\nq1 0 d2 0\n#q3 0 x1 1\nq2 0 d3 1\nq2 0 d4 1\n"
    qrels = read(write(tmp_path, "q", text), "qrels")
    assert sorted(set(qrels["query_id"])) == ["q1", "q2"]
    run_dict = {"q1": {"d2": 2.0, "d1": 1.0}, "q2": {"d3": 1.0}}
    oracle_qrels = {"q1": {"d1": 1, "d2": 0}, "q2": {"d3": 1, "d4": 1}}  # the file without its comment line
    expected = trec_eval_ndcg_cut(oracle_qrels, run_dict, 10)
    got = ir_measures.calc_aggregate([NDCG_lin @ 10], qrels, run_dict)[NDCG_lin @ 10]
    assert got == pytest.approx(sum(expected.values()) / len(expected), abs=1e-12)


def test_hash_inside_ids_is_part_of_the_id(tmp_path):
    qrels = read(write(tmp_path, "q", b"q#1 0 doc#1_2 1\n"), "qrels")
    run = read(write(tmp_path, "r", b"q#1 Q0 doc#1_2 1 1.0 t#1\n"), "run")
    assert list(qrels["doc_id"]) == ["doc#1_2"] and list(run["query_id"]) == ["q#1"]


@pytest.mark.parametrize("text,kind,value", [
    (b"q1 Q0 d1 1 1_0 t\n", "run", "1_0"),
    (b"q1 0 d1 0_3\n", "qrels", "0_3"),
    (b"q1 0 d1 0x10\n", "qrels", "0x10"),
    (b"q1 Q0 d1 1 0x1p-1 t\n", "run", "0x1p-1"),
    (b"q1 Q0 d1 1 1.5abc t\n", "run", "1.5abc"),
    (b"q1 0 d1 1.0\n", "qrels", "1.0"),
    (b"q1 0 d1 \xd9\xa3\n", "qrels", "\u0663"),  # an Arabic-Indic digit: Python's int() reads it
])
def test_numbers_outside_trec_eval_syntax_are_refused_not_read_differently(tmp_path, text, kind, value):
    with pytest.raises(InputError, match="expected an? (integer relevance label|numeric score)") as e:
        read(write(tmp_path, "f", text), kind)
    assert e.value.line == 1 and repr(value) in str(e.value)


@pytest.mark.parametrize("space", ["\u00a0", "\u3000", "\u0085", "\u2028", "\x1c"])
def test_unicode_whitespace_inside_an_id_is_part_of_the_id_on_both_paths(tmp_path, space):
    doc = f"d{space}x"
    clean = f"q1 Q0 {doc} 1 2.0 t\nq1 Q0 d2 2 1.0 t\n".encode()
    odd = f"q1 Q0 {doc} 1 2.0 t\nq1  Q0 d2 2 1.0 t\n".encode()  # the second line sends this file to the line parser
    for data in (clean, odd):
        assert list(read(write(tmp_path, "r", data), "run")["doc_id"]) == [doc, "d2"]


def test_a_bare_carriage_return_separates_fields_it_does_not_end_a_line(tmp_path):
    with pytest.raises(InputError, match="expected 4 columns"):
        read(write(tmp_path, "q", b"q1 0 d1 1\rq2 0 d2 1\n"), "qrels")
    assert len(read(write(tmp_path, "q", b"q1 0 d1 1\r\nq2 0 d2 1\r\n"), "qrels")) == 2


def test_a_byte_order_mark_counts_only_at_the_start_of_the_file(tmp_path):
    body = b"".join(b"q%d Q0 d 1 1.0 t\n" % i for i in range(50))
    data = b"\xef\xbb\xbf" + body + b"\xef\xbb\xbfq9 Q0 d 1 1.0 t\n"
    for block in (64, 1 << 20):
        pieces = list(parse_blocks(blocks(data, "f", block), "f", "run"))
        ids = [q for p in pieces for q in p.query_id.to_pylist()]
        assert ids[0] == "q0" and ids[-1] == "\ufeffq9"


@pytest.mark.parametrize("kind, text", [
    ("run", b"q1 Q0 d1 1 2.5 t\nq1  d2 2 1.5 t\n"),  # Q0 empty: still 6 fields for Arrow, 5 for trec_eval
    ("run", b"q1 Q0 d1 1 2.5 t\nq1 Q0 d2  1.5 t\n"),  # rank empty
    ("run", b"q1 Q0 d1 1 2.5 t\nq1 Q0 d2 2 1.5 \n"),  # run tag empty
    ("run", b"q1 Q0 d1 1 2.5 t\r\nq1 Q0 d2 2 1.5 \r\n"),  # run tag empty, CRLF
    ("run", b"q1 Q0 d1 1 2.5 t\nq1 Q0 d2 2 1.5 "),  # run tag empty at the end of the file
    ("run", b"q1\tQ0\td1\t1\t2.5\tt\nq1\tQ0\td2\t\t1.5\tt\n"),  # rank empty, tab-separated
    ("qrels", b"q1 0 d1 1\nq1  d2 1\n"),  # iteration empty
])
def test_an_empty_field_in_a_column_the_columnar_parser_skips_is_refused_on_both_paths(kind, text):
    # the columnar parser converts only the columns it uses; an empty field in another one would
    # shift the fields under whitespace splitting, so it declines and the line parser names line 2
    fast = parse(text, kind, "auto", 1 << 20, columnar_ok=True)
    assert fast == parse(text, kind, "auto", 1 << 20, columnar_ok=False)
    assert fast[0] == "error" and fast[1].startswith("f:2: expected ")


def test_the_columnar_parser_keeps_its_columns_in_the_system_memory_pool():
    # a measured choice (columnar.POOL): Arrow's default pool cost 10-15% of a streamed run's CPU
    import pyarrow as pa

    from ndcg_plugin.arrays import speedups
    from ndcg_plugin.reading import columnar
    from ndcg_plugin.reading.formats import LAYOUTS
    from ndcg_plugin.reading.sources import Chunk

    data = b"".join(b"q%d Q0 d%d %d %d.5 t\n" % (i // 100, i, i % 100 + 1, 1000 - i) for i in range(20000))
    before = pa.system_memory_pool().bytes_allocated()
    with speedups.disabled():  # Arrow's reader, not the C loop
        parsed = columnar.parse_block(Chunk(data), LAYOUTS["trec"], b" ", True)
    assert parsed is not None and len(parsed) == 20000
    assert pa.system_memory_pool().bytes_allocated() - before >= parsed.doc_id.nbytes


def test_invalid_utf8_is_one_clean_error(tmp_path, capfd):
    with pytest.raises(InputError, match=r":2: not valid UTF-8"):
        read(write(tmp_path, "r", b"q1 Q0 d1 1 1.0 t\nq1 Q0 d\xe92 x 2.0\n"), "run")
    assert "Exception ignored" not in capfd.readouterr().err


# a stray byte, an overlong '/', a UTF-16 surrogate, a code point above U+10FFFF, a cut sequence
NOT_UTF8 = [b"\xff", b"\xe9", b"\xc0\xaf", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xe2\x82"]


@pytest.mark.parametrize("bad", NOT_UTF8)
@pytest.mark.parametrize("column", range(6))
def test_bytes_that_are_not_utf8_are_refused_in_any_column_by_both_parsers(tmp_path, bad, column):
    # the columnar parser converts only columns 0, 2 and 4 of a TREC run; the others are checked too
    fields = [b"q1", b"Q0", b"d2", b"2", b"0.5", b"tag"]
    fields[column] += bad
    data = b"q1 Q0 d1 1 1.0 tag\n" + b" ".join(fields) + b"\nq1 Q0 d3 3 0.25 tag\n"
    for columnar_ok in (True, False):
        with pytest.raises(InputError, match=r"^f:2: not valid UTF-8"):
            list(parse_blocks(blocks(data, "f"), "f", "run", columnar_ok=columnar_ok))


def test_a_block_of_valid_utf8_beyond_ascii_takes_the_columnar_parser():
    from ndcg_plugin.reading import columnar
    from ndcg_plugin.reading.formats import LAYOUTS
    from ndcg_plugin.reading.sources import Chunk

    data = "qé Q0 d中😀 1 1.5 té\nqé Q0 d2 2 0.5 t\n".encode()
    parsed = columnar.parse_block(Chunk(data), LAYOUTS["trec"], b" ", True)
    assert parsed is not None
    assert parsed.doc_id.to_pylist() == ["d中😀", "d2"]
    assert parsed.query_id.to_pylist() == ["qé", "qé"]


# --- the two parsers agree: a property test over generated files -------------------------

ID_CHARS = st.sampled_from(list("abcXYZ019_-.#/:é") + ["\u00a0", "\u3000", "\u0085", "\x01"])
IDS = st.text(ID_CHARS, min_size=1, max_size=6)
GOOD_NUMBERS = ["1", "-2", "0", "01", "3", "1.5", "-0.25", ".5", "3.", "1e-3", "2E+2", "-1.5e2"]
BAD_NUMBERS = ["+1", "1_0", "0x10", "nan", "inf", "-inf", "1e999", "1.5.2", "1e", "", "\u0663", "99999999999999999999"]
SEPARATORS = [" ", "\t", "  ", " \t", "\t ", "\x0b", "\x0c", "\r"]


@st.composite
def files(draw):
    kind = draw(st.sampled_from(["qrels", "run", "run"]))
    fmt = "qrels" if kind == "qrels" else draw(st.sampled_from(["trec", "msmarco"]))
    clean = draw(st.booleans())
    delim = draw(st.sampled_from([" ", "\t"]))
    crlf = draw(st.booleans())
    rows = draw(st.lists(st.tuples(IDS, IDS, st.sampled_from(GOOD_NUMBERS), st.sampled_from(BAD_NUMBERS),
                                   st.integers(0, 30), st.integers(0, 12), st.integers(0, 5)),
                         min_size=1, max_size=12))
    lines = []
    for q, d, good, bad, noise, wrong, hole in rows:
        value = good if fmt != "msmarco" else str(abs(int(float(good))))
        if fmt == "qrels":
            value = str(int(float(good)))
        if wrong == 0:  # a bad number, also in otherwise clean files
            value = bad
        fields = {"qrels": [q, "0", d, value], "trec": [q, "Q0", d, "1", value, "tag"],
                  "msmarco": [q, d, value]}[fmt]
        if wrong == 1 and hole < len(fields):  # an empty field: the column count stays right for Arrow
            fields[hole] = ""
        if clean:
            line = delim.join(fields)
        else:
            seps = [SEPARATORS[(noise + i) % len(SEPARATORS)] if noise < 8 else delim for i in range(len(fields))]
            line = "".join(f + s for f, s in zip(fields, seps, strict=True))[:-1]
            if noise == 1:
                line = "  " + line
            elif noise == 2:
                line = "# " + line
            elif noise == 3:
                lines.append("")
            elif noise == 4:
                line = line + " extra"
        lines.append(line)
    end = "\r\n" if crlf else "\n"
    text = end.join(lines) + (end if draw(st.booleans()) else "")
    data = text.encode("utf-8")
    if draw(st.integers(0, 9)) == 0:  # bytes that are not UTF-8, in any column
        at = draw(st.integers(0, len(data)))
        data = data[:at] + draw(st.sampled_from(NOT_UTF8)) + data[at:]
    if draw(st.integers(0, 9)) == 0:  # a NUL byte anywhere (refused, its line named)
        at = draw(st.integers(0, len(data)))
        data = data[:at] + b"\0" + data[at:]
    if draw(st.booleans()):
        data = b"\xef\xbb\xbf" + data
    if draw(st.integers(0, 9)) == 0:
        data = gzip.compress(data)
    block = draw(st.sampled_from([16, 64, 256, 1 << 20]))
    run_format = "auto" if fmt == "qrels" else draw(st.sampled_from(["auto", fmt]))
    return kind, run_format, data, block


def parse(data: bytes, kind: str, run_format: str, block: int, columnar_ok: bool):
    try:
        pieces = list(parse_blocks(blocks(data, "f", block), "f", kind, run_format, columnar_ok=columnar_ok))
        if not pieces:
            return "empty"
        t = to_table(pieces, kind)
        return (list(t["query_id"]), list(t["doc_id"]), t.iloc[:, 2].tolist(), list(t["line"]))
    except InputError as e:
        return ("error", str(e))


@settings(max_examples=1200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(files())
def test_columnar_and_line_parsers_return_identical_tables(case):
    kind, run_format, data, block = case
    fast = parse(data, kind, run_format, block, columnar_ok=True)
    slow = parse(data, kind, run_format, block, columnar_ok=False)
    whole = parse(data, kind, run_format, 1 << 24, columnar_ok=True)
    assert fast == slow == whole


def files_taken(monkeypatch, owner, name: str, strategy, examples: int) -> list[bool]:
    """For each of ``examples`` files drawn from ``strategy`` (reproducibly) and parsed, whether
    ``owner.name`` (a parser that declines with None) took at least one of its blocks."""
    real, taken = getattr(owner, name), []

    def spy(*a, **k):
        out = real(*a, **k)
        taken[-1] |= out is not None
        return out

    monkeypatch.setattr(owner, name, spy)

    @settings(max_examples=examples, deadline=None, derandomize=True, database=None,
              suppress_health_check=[HealthCheck.too_slow])
    @given(strategy)
    def draw(case):
        kind, run_format, data, block = case
        taken.append(False)
        parse(data, kind, run_format, block, columnar_ok=True)

    draw()
    return taken


def test_the_generated_files_often_take_the_columnar_parser(monkeypatch):
    # the property test above compares the parsers only where the columnar one takes a file: a
    # good share of the files it is given must take it (drawn here on their own, reproducibly)
    from ndcg_plugin.reading import columnar
    taken = files_taken(monkeypatch, columnar, "parse_block", files(), 400)
    assert len(taken) >= 300 and sum(taken) >= len(taken) / 2, (sum(taken), len(taken))


def test_numbers_agree_with_python_and_trec_eval_syntax_on_both_paths():
    values = ["1", "-1", "+1", "1.", ".5", "-.5", "1e5", "1E+5", "1.e3", "01", "-0", "1e-300", "123456789.123456789"]
    text = "".join(f"q Q0 d{i} 1 {v} t\n" for i, v in enumerate(values)).encode()
    fast = parse(text, "run", "auto", 1 << 20, True)
    slow = parse(text, "run", "auto", 1 << 20, False)
    assert fast == slow and fast[2] == [float(v) for v in values]
    assert np.all(np.isfinite(fast[2]))


def test_integer_relevance_labels_agree_on_both_paths():
    # the columnar parser reads integers itself (up to 18 digits) and leaves the rest to the line parser
    values = ["0", "1", "-1", "007", "-0", "-12", "123456789012345678", "-123456789012345678",
              "1234567890123456789", "9223372036854775807", "-9223372036854775808"]
    text = "".join(f"q 0 d{i} {v}\n" for i, v in enumerate(values)).encode()
    fast = parse(text, "qrels", "auto", 1 << 20, True)
    slow = parse(text, "qrels", "auto", 1 << 20, False)
    assert fast == slow and fast[2] == [int(v) for v in values]
    short = "".join(f"q 0 d{i} {v}\n" for i, v in enumerate(values[:8])).encode()
    assert parse(short, "qrels", "auto", 1 << 20, True)[2] == [int(v) for v in values[:8]]
    for bad in ["9223372036854775808", "1e3", "0x10", "--1", "1-"]:
        line = f"q 0 a 1\nq 0 d {bad}\n".encode()
        fast, slow = parse(line, "qrels", "auto", 1 << 20, True), parse(line, "qrels", "auto", 1 << 20, False)
        assert fast == slow and fast[0] == "error", (bad, fast)


# --- no state remembered about a table --------------------------------------------------

def test_a_table_changed_in_place_is_evaluated_as_it_is_now():
    qrels = read("q1 0 a 1\nq2 0 b 1\n", "qrels")
    run = read("q1 Q0 a 1 2.0 t\nq2 Q0 b 1 1.0 t\n", "run")
    measures = [NDCG_lin @ 10]
    assert ir_measures.calc_aggregate(measures, qrels, run)[NDCG_lin @ 10] == 1.0
    run["query_id"] = ["q9", "q9"]  # same length, changed in place: no query in common any more
    with pytest.warns(RuntimeWarning):
        assert ir_measures.calc_aggregate(measures, qrels, run)[NDCG_lin @ 10] == 0.0


def test_a_nan_score_set_in_place_is_refused():
    qrels = read("q1 0 a 1\n", "qrels")
    run = read("q1 Q0 a 1 2.0 t\n", "run")
    run.loc[0, "score"] = float("nan")
    with pytest.raises(InputError, match="missing value in column score"):
        ir_measures.calc_aggregate([NDCG_lin @ 10], qrels, run)
