"""Parquet qrels and runs (issue 22): the same tables and numbers as their text twins (the text
reader is the oracle), one clear InputError naming the file and the row for every refusal, and
a Parquet run streamed in small pieces equal to the run read whole."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import ir_measures
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import pytrec_eval
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ndcg_plugin import HitRate_item, InputError, MRR_zero, NDCG_exp, NDCG_lin, read
from ndcg_plugin.reading import read_columns
from ndcg_plugin.reading.ahead import RunFile
from ndcg_plugin.reading.parquet import is_parquet
from tests.helpers import run_cli, run_main

MEASURES = [NDCG_exp @ 10, NDCG_lin @ 3, HitRate_item @ 5, MRR_zero @ 10]


def write_qrels(tmp_path: Path, rows: list, name: str = "q", id_type: pa.DataType | None = None) -> tuple[Path, Path]:
    """(text qrels, Parquet twin) of rows (query_id, doc_id, relevance)."""
    text = tmp_path / f"{name}.txt"
    text.write_text("".join(f"{q} 0 {d} {r}\n" for q, d, r in rows), encoding="utf-8")
    table = pa.table({"query_id": pa.array([q for q, _, _ in rows], type=id_type),
                      "doc_id": pa.array([d for _, d, _ in rows], type=id_type),
                      "relevance": pa.array([r for _, _, r in rows], type=pa.int64())})
    pq.write_table(table, tmp_path / f"{name}.parquet")
    return text, tmp_path / f"{name}.parquet"


def write_run(tmp_path: Path, rows: list, name: str = "r", id_type: pa.DataType | None = None,
              row_group_size: int | None = None) -> tuple[Path, Path]:
    """(text TREC run, Parquet twin) of rows (query_id, doc_id, score); scores as repr(float),
    which reads back as the same double."""
    text = tmp_path / f"{name}.txt"
    text.write_text("".join(f"{q} Q0 {d} {i} {s!r} t\n" for i, (q, d, s) in enumerate(rows)), encoding="utf-8")
    table = pa.table({"query_id": pa.array([q for q, _, _ in rows], type=id_type),
                      "doc_id": pa.array([d for _, d, _ in rows], type=id_type),
                      "score": pa.array([s for _, _, s in rows], type=pa.float64())})
    pq.write_table(table, tmp_path / f"{name}.parquet", row_group_size=row_group_size)
    return text, tmp_path / f"{name}.parquet"


def columns(table, kind: str) -> tuple[list, list, list, list]:
    value = "relevance" if kind == "qrels" else "score"
    return list(table["query_id"]), list(table["doc_id"]), table[value].tolist(), table["line"].tolist()


def outcome(data, kind: str, **options):
    """The table's columns, or the error's reason without its place (the two files' places differ)."""
    try:
        return columns(read(data, kind, **options), kind)
    except InputError as e:
        return ("error", e.reason.split(": ", 1)[-1] if e.reason.startswith("row ") else e.reason)


def as_rows(reason: str) -> str:
    """A text file's duplicate message as a Parquet file's: ``lines 1 and 3`` -> ``rows 0 and 2``."""
    return re.sub(r"lines (\d+) and (\d+)", lambda m: f"rows {int(m[1]) - 1} and {int(m[2]) - 1}", reason)


# --- the same tables and numbers as the text twin ------------------------------------------

# no ASCII whitespace (it separates a text file's fields), no byte order mark (dropped at a text
# file's start) and no NUL (refused in a text file, which trec_eval cannot read past it)
NO_WS = st.characters(blacklist_categories=("Cs",), blacklist_characters=list(" \t\n\v\f\r\ufeff\x00"))
STRING_ID = st.one_of(st.from_regex(r"\A0[0-9]{1,5}\Z"), st.from_regex(r"\A[a-z][0-9]{0,3}\Z"),
                      st.text(NO_WS, min_size=1, max_size=6))
INT_ID = st.integers(-(10**6), 10**15)


@st.composite
def tables(draw):
    """Qrels and run rows over shared ids: integer ids (an int64 column vs their digits) or
    string ids (leading zeros, odd unicode, never starting with #, which starts a comment line
    in text); labels from -2 (0 and negative: not relevant); scores with ties; repeated pairs
    sometimes."""
    ints = draw(st.booleans())
    ident = INT_ID if ints else STRING_ID.filter(lambda s: not s.startswith("#"))
    queries = draw(st.lists(ident, min_size=1, max_size=4, unique=True))
    docs = draw(st.lists(ident, min_size=1, max_size=8, unique=True))
    pairs = draw(st.lists(st.tuples(st.sampled_from(queries), st.sampled_from(docs)), min_size=1, max_size=25,
                          unique=not draw(st.integers(0, 5)) == 0))
    score = st.one_of(st.sampled_from([0.0, 1.0, 2.5, -1.0]), st.floats(-1e6, 1e6, allow_nan=False))
    run = [(q, d, draw(score)) for q, d in pairs]
    judged = draw(st.lists(st.tuples(st.sampled_from(queries), st.sampled_from(docs)), min_size=1, max_size=15,
                           unique=True))
    qrels = [(q, d, draw(st.integers(-2, 4))) for q, d in judged]
    return ints, qrels, run


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(tables())
def test_parquet_reads_as_its_text_twin_tables_errors_and_numbers(tmp_path_factory, case):
    ints, qrels_rows, run_rows = case
    tmp = tmp_path_factory.mktemp("twin")
    id_type = pa.int64() if ints else pa.string()
    qrels_text, qrels_pq = write_qrels(tmp, qrels_rows, id_type=id_type)
    run_text, run_pq = write_run(tmp, run_rows, id_type=id_type)
    for kind, text, parquet in (("qrels", qrels_text, qrels_pq), ("run", run_text, run_pq)):
        for duplicates in ("error", "first", "max"):
            want = outcome(text, kind, duplicates=duplicates)
            got = outcome(parquet, kind, duplicates=duplicates)
            if want[0] == "error":  # a repeated pair: the same message, with 0-based rows for lines
                assert got == ("error", as_rows(want[1]))
                continue
            assert got[:3] == want[:3]
            assert [n + 1 for n in got[3]] == want[3]  # 0-based rows, 1-based lines
    try:
        expected = ir_measures.calc_aggregate(MEASURES, read(qrels_text, "qrels"), read(run_text, "run"))
    except InputError:
        return
    assert ir_measures.calc_aggregate(MEASURES, read(qrels_pq, "qrels"), read(run_pq, "run")) == expected


def test_a_repeated_pair_is_named_by_both_rows_as_text_names_both_lines(tmp_path):
    text, parquet = write_run(tmp_path, [("q1", "a", 2.0), ("q1", "b", 1.0), ("q1", "a", 0.5)])
    with pytest.raises(InputError, match="lines 1 and 3") as in_text:
        read(text, "run")
    with pytest.raises(InputError) as in_parquet:
        read(parquet, "run")
    assert str(in_parquet.value) == (f"{parquet}: row 2: duplicate (query_id, doc_id) = ('q1', 'a'): rows 0 and 2 "
                                     "(score 2.0 and 0.5); trec_eval refuses duplicates; pass duplicates='first' or "
                                     "'max' to keep one")
    assert in_parquet.value.line == 2 and as_rows(in_text.value.reason) == in_parquet.value.reason.split(": ", 1)[1]
    assert columns(read(parquet, "run", duplicates="max"), "run") == (["q1", "q1"], ["a", "b"], [2.0, 1.0], [0, 1])


def test_numbers_match_pytrec_eval(tmp_path):
    # an oracle of its own for one case: trec_eval's ndcg_cut.10 (through pytrec_eval)
    qrels = [("1", "007", 2), ("1", "7", 1), ("1", "x", 0), ("2", "a", 1), ("2", "b", -1)]
    run = [("1", "7", 3.0), ("1", "007", 3.0), ("1", "y", 2.0), ("2", "b", 1.0), ("2", "a", 0.5)]
    _, qrels_pq = write_qrels(tmp_path, qrels)
    _, run_pq = write_run(tmp_path, run)
    ev = pytrec_eval.RelevanceEvaluator({q: {d: r for qq, d, r in qrels if qq == q} for q in ("1", "2")},
                                        {"ndcg_cut.10"})
    per_query = ev.evaluate({q: {d: s for qq, d, s in run if qq == q} for q in ("1", "2")})
    expected = sum(v["ndcg_cut_10"] for v in per_query.values()) / 2
    got = ir_measures.calc_aggregate([NDCG_lin @ 10], read(qrels_pq, "qrels"), read(run_pq, "run"))
    assert got[NDCG_lin @ 10] == pytest.approx(expected, abs=1e-12)


def test_types_other_than_the_defaults_read_as_their_values(tmp_path):
    # int32 / uint8 ids, float32 scores, integral float labels, dictionary-encoded strings
    path = tmp_path / "odd.parquet"
    pq.write_table(pa.table({"query_id": pa.array(["q1", "q1", "q2"]).dictionary_encode(),
                             "doc_id": pa.array([7, 8, 255], type=pa.uint8()),
                             "relevance": pa.array([1.0, 0.0, -2.0], type=pa.float32())}), path)
    assert columns(read(path, "qrels"), "qrels") == (["q1", "q1", "q2"], ["7", "8", "255"], [1, 0, -2], [0, 1, 2])
    run = tmp_path / "run.parquet"
    pq.write_table(pa.table({"query_id": pa.array([1, 2], type=pa.int32()), "doc_id": ["a", "b"],
                             "score": pa.array([0.5, 3], type=pa.float32())}), run)
    assert columns(read(run, "run"), "run") == (["1", "2"], ["a", "b"], [0.5, 3.0], [0, 1])


def test_columns_maps_other_names_for_parquet_dataframes_and_streams(tmp_path):
    path = tmp_path / "logs.parquet"
    pq.write_table(pa.table({"user_id": ["u1", "u1"], "item_id": [10, 11], "score": [0.5, 0.7], "extra": [1, 2]}),
                   path)
    mapping = {"query_id": "user_id", "doc_id": "item_id"}
    expected = (["u1", "u1"], ["10", "11"], [0.5, 0.7], [0, 1])
    assert columns(read(path, "run", columns=mapping), "run") == expected
    parsed = read_columns(path, "run", columns=mapping)
    assert parsed.query_id.to_pylist() == ["u1", "u1"] and parsed.line.tolist() == [0, 1]
    frame = pq.read_table(path).to_pandas()
    assert columns(read(frame, "run", columns=mapping), "run") == expected
    with pytest.raises(InputError, match=r"missing columns \['query_id', 'doc_id'\]") as e:
        read(path, "run")
    assert str(path) in str(e.value) and "found ['user_id', 'item_id', 'score', 'extra']" in str(e.value)
    with pytest.raises(InputError, match=r"missing columns \['uid'\] \(columns= names them \{'query_id': 'uid'\}\)"):
        read(path, "run", columns={"query_id": "uid", "doc_id": "item_id"})
    with pytest.raises(ValueError, match="columns maps the run columns"):
        read(path, "run", columns={"user": "user_id"})
    with pytest.raises(ValueError, match="columns= names the columns of a Parquet"):
        read("q1 Q0 a 1 1.0 t\n", "run", columns=mapping)


# --- refusals: one InputError naming the file and the row ----------------------------------

def _file(tmp_path, **cols) -> Path:
    path = tmp_path / "bad.parquet"
    pq.write_table(pa.table(cols), path)
    return path


BAD = [
    ("null query id", "run", dict(query_id=["q", None], doc_id=["a", "b"], score=[1.0, 2.0]), 1,
     "missing value in column query_id"),
    ("empty doc id", "run", dict(query_id=["q", "q"], doc_id=["a", ""], score=[1.0, 2.0]), 1, "empty doc_id"),
    ("null score", "run", dict(query_id=["q", "q"], doc_id=["a", "b"], score=[1.0, None]), 1,
     "missing value in column score"),
    ("nan score", "run", dict(query_id=["q", "q", "q"], doc_id=["a", "b", "c"], score=[1.0, 2.0, float("nan")]), 2,
     "score must be a finite number, got nan"),
    ("inf score", "run", dict(query_id=["q"], doc_id=["a"], score=[float("-inf")]), 0,
     "score must be a finite number, got -inf"),
    ("fractional label", "qrels", dict(query_id=["q", "q"], doc_id=["a", "b"], relevance=[1.0, 0.5]), 1,
     "relevance must be an integer, got 0.5"),
    ("huge label", "qrels", dict(query_id=["q"], doc_id=["a"], relevance=pa.array([2**63], type=pa.uint64())), 0,
     "relevance out of the 64-bit integer range"),
    ("null label", "qrels", dict(query_id=["q", "q"], doc_id=["a", "b"], relevance=pa.array([1, None])), 1,
     "missing value in column relevance"),
    ("first bad row wins", "run", dict(query_id=["q", "q", None], doc_id=["a", "", "c"], score=[1.0, 2.0, None]), 1,
     "empty doc_id"),
    ("float ids", "run", dict(query_id=[1.0], doc_id=["a"], score=[1.0]), None,
     "query_id values are floats; ids must be strings or integers (convert them explicitly"),
    ("bool ids", "qrels", dict(query_id=["q"], doc_id=[True], relevance=[1]), None,
     "doc_id values are of type bool; ids must be strings or integers"),
    ("binary ids", "qrels", dict(query_id=[b"q"], doc_id=["a"], relevance=[1]), None,
     "query_id values are of type binary"),
    ("bool label", "qrels", dict(query_id=["q"], doc_id=["a"], relevance=[True]), None,
     "relevance must be numeric, got type bool"),
    ("string score", "run", dict(query_id=["q"], doc_id=["a"], score=["1.0"]), None,
     "score must be numeric, got type string"),
    ("missing column", "qrels", dict(query_id=["q"], doc_id=["a"], score=[1.0]), None,
     "missing columns ['relevance']; expected query_id, doc_id, relevance (found ['query_id', 'doc_id', 'score'])"),
]


@pytest.mark.parametrize("name,kind,cols,row,message", BAD, ids=[b[0] for b in BAD])
def test_bad_parquet_is_one_error_naming_the_file_and_row(tmp_path, name, kind, cols, row, message):
    path = _file(tmp_path, **cols)
    for reader in (read, read_columns):
        with pytest.raises(InputError) as e:
            reader(path, kind)
        assert e.value.source == str(path) and e.value.line == row, str(e.value)
        assert message in str(e.value)
        where = f"{path}: row {row}: " if row is not None else f"{path}: "
        assert str(e.value).startswith(where), str(e.value)


def test_invalid_utf8_in_a_string_column_names_the_row(tmp_path):
    bad = pa.Array.from_buffers(pa.string(), 3, [None, pa.py_buffer(np.array([0, 1, 2, 4], dtype=np.int32)),
                                                 pa.py_buffer(b"abc\xff")])
    path = _file(tmp_path, query_id=["q", "q", "q"], doc_id=bad, score=[1.0, 2.0, 3.0])
    with pytest.raises(InputError, match=r": row 2: doc_id is not valid UTF-8") as e:
        read(path, "run")
    assert e.value.line == 2


def test_files_that_are_not_parquet_and_missing_ones(tmp_path):
    fake = tmp_path / "fake.parquet"
    fake.write_text("q1 Q0 a 1 1.0 t\n")
    with pytest.raises(InputError, match="not a Parquet file"):
        read(fake, "run")
    with pytest.raises(InputError, match="file not found"):
        read(tmp_path / "nope.parquet", "run")
    empty_dir = tmp_path / "empty"
    empty_dir.mkdir()
    with pytest.raises(InputError, match="a directory without Parquet files"):
        read(empty_dir, "run")
    no_rows = _file(tmp_path, query_id=pa.array([], pa.string()), doc_id=pa.array([], pa.string()),
                    score=pa.array([], pa.float64()))
    with pytest.raises(InputError, match="no run rows found: the input is empty"):
        read(no_rows, "run")
    with pytest.raises(ValueError, match="applies to text runs"):
        read(no_rows, "run", run_format="msmarco")


def test_parquet_is_told_by_name_directory_or_magic_bytes_at_both_ends(tmp_path):
    _, parquet = write_run(tmp_path, [("q1", "a", 1.0)])
    renamed = tmp_path / "run.bin"
    renamed.write_bytes(parquet.read_bytes())
    assert is_parquet(parquet) and is_parquet(renamed) and is_parquet(tmp_path)
    assert columns(read(renamed, "run"), "run") == (["q1"], ["a"], [1.0], [0])
    # a text file whose first query id is PAR1 is text (it does not end with the magic bytes)
    text = tmp_path / "par1.qrels"
    text.write_text("PAR1 0 d 1\n")
    assert not is_parquet(text) and columns(read(text, "qrels"), "qrels") == (["PAR1"], ["d"], [1], [1])
    # Parquet bytes on a stream or as bytes cannot be read as Parquet: said so, not parsed as text
    with pytest.raises(InputError, match=r"Parquet data \(it starts with PAR1\), which is read from a file"):
        read(parquet.read_bytes(), "run")


def test_a_pipe_is_not_opened_to_look_for_parquet_bytes(tmp_path):
    # `ndcg-plugin eval QRELS <(zcat run.gz)`: looking for PAR1 in a pipe would eat its first bytes
    import os
    import threading
    fifo = tmp_path / "run.pipe"
    os.mkfifo(fifo)
    writer = threading.Thread(target=fifo.write_text, args=("q1 Q0 a 1 1.0 t\n",), daemon=True)
    writer.start()
    out: list = []
    reader = threading.Thread(target=lambda: out.append(columns(read(fifo, "run"), "run")), daemon=True)
    reader.start()
    reader.join(timeout=20)
    assert out == [(["q1"], ["a"], [1.0], [1])]


def test_progress_counts_the_files_bytes_up_to_their_size(tmp_path):
    _, parquet = write_run(tmp_path, [(f"q{i // 10}", f"d{i}", float(i)) for i in range(1000)], row_group_size=100)
    calls: list = []
    read(parquet, "run", progress=lambda done, total: calls.append((done, total)))
    size = parquet.stat().st_size
    assert calls and calls[-1] == (size, size) and all(0 <= d <= t == size for d, t in calls)
    assert [d for d, _ in calls] == sorted(d for d, _ in calls)
    calls.clear()
    list(RunFile(parquet, block_bytes=32 * 300, progress=lambda d, t: calls.append((d, t))).take_blocks())
    assert len(calls) >= 4 and calls[-1] == (size, size) and 0 < calls[0][0] < size


def test_a_directory_is_its_files_in_path_order_rows_numbered_across_them(tmp_path):
    folder = tmp_path / "run"
    (folder / "b").mkdir(parents=True)
    rows = [("q1", f"d{i}", float(10 - i)) for i in range(6)]
    pq.write_table(pa.table({"query_id": ["q1"] * 2, "doc_id": ["d0", "d1"], "score": [10.0, 9.0]}),
                   folder / "a.parquet")
    pq.write_table(pa.table({"query_id": ["q1"] * 2, "doc_id": ["d2", "d3"], "score": [8.0, 7.0]}),
                   folder / "b" / "part-0.parquet")
    pq.write_table(pa.table({"query_id": ["q1", None], "doc_id": ["d4", "d5"], "score": [6.0, 5.0]}),
                   folder / "c.parquet")
    (folder / "_SUCCESS").write_text("")
    (folder / ".part-0.crc").write_text("x")
    with pytest.raises(InputError) as e:  # the null in c.parquet: row 5 of the dataset, its row 1
        read(folder, "run")
    assert e.value.line == 5 and f"row 5: missing value in column query_id ({folder / 'c.parquet'}, its row 1)" \
        in str(e.value)
    pq.write_table(pa.table({"query_id": ["q1"] * 2, "doc_id": ["d4", "d5"], "score": [6.0, 5.0]}),
                   folder / "c.parquet")
    assert columns(read(folder, "run"), "run") == ([q for q, _, _ in rows], [d for _, d, _ in rows],
                                                   [s for _, _, s in rows], list(range(6)))


# --- streaming ------------------------------------------------------------------------------

@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.integers(1, 40), st.integers(1, 7), st.sampled_from([None, 3, 16]))
def test_a_streamed_parquet_run_in_small_pieces_equals_it_read_whole(tmp_path_factory, n, piece_rows, groups):
    from ndcg_plugin.evaluation import Evaluation, ReadOptions
    tmp = tmp_path_factory.mktemp("stream")
    rng = np.random.default_rng(n * 100 + piece_rows)
    rows = [(f"q{i // 4}", f"d{rng.integers(0, 3)}{i}", float(rng.integers(0, 3))) for i in range(n)]
    run_text, parquet = write_run(tmp, rows, row_group_size=groups)
    qrels_text, _ = write_qrels(tmp, [(q, d, int(rng.integers(-1, 3))) for q, d, _ in rows[::2]])
    pieces = list(RunFile(parquet, block_bytes=32 * piece_rows).take_blocks())
    assert all(len(p) >= piece_rows for p in pieces[:-1]) and sum(len(p) for p in pieces) == n
    whole = read_columns(parquet, "run")
    assert [x for p in pieces for x in p.query_id.to_pylist()] == whole.query_id.to_pylist()
    assert [x for p in pieces for x in p.doc_id.to_pylist()] == whole.doc_id.to_pylist()
    assert np.concatenate([p.value for p in pieces]).tolist() == whole.value.tolist()
    assert np.concatenate([p.line for p in pieces]).tolist() == list(range(n))
    results = []
    for run, block_bytes in ((parquet, 32 * piece_rows), (parquet, 0), (run_text, 0)):  # streamed, whole, text
        ev = Evaluation(MEASURES, qrels=str(qrels_text), options=ReadOptions(block_bytes=block_bytes))
        assert ev.streams(str(run)) == (block_bytes > 0)
        results.append(ev.compute(str(run)).aggregates)
    assert results[0] == results[1] == results[2]


def test_a_streamed_parquet_run_with_a_mapping_is_read_again_whole_with_it(tmp_path):
    # queries that come back after others make the stream read the run again whole: with the
    # same column names
    from ndcg_plugin.engine import stream
    from ndcg_plugin.measures import spec_of
    from ndcg_plugin.ranking.qrels_index import QrelsIndex  # the engine's index, as evaluation.py builds it
    path = tmp_path / "r.parquet"
    pq.write_table(pa.table({"u": ["q1", "q2", "q1"], "i": ["a", "b", "c"], "s": [1.0, 2.0, 3.0]}), path)
    index = QrelsIndex(read_columns("q1 0 c 1\nq2 0 b 1\n", "qrels"))
    run_file = RunFile(path, block_bytes=32, columns={"query_id": "u", "doc_id": "i", "score": "s"})
    values = stream.compute_file(index, run_file, [spec_of(MRR_zero @ 10)])
    assert values[spec_of(MRR_zero @ 10)].values.tolist() == [1.0, 1.0]


# --- the command, and what it imports --------------------------------------------------------

def _logs(tmp_path) -> tuple[Path, Path, Path, Path]:
    rng = np.random.default_rng(7)
    run = [(f"u{u:03d}", f"{rng.integers(0, 50)}", float(rng.integers(0, 20))) for u in range(60) for _ in range(8)]
    run = list({(q, d): (q, d, s) for q, d, s in run}.values())
    qrels = [(q, d, int(rng.integers(0, 3))) for q, d, _ in run[::3]]
    return (*write_qrels(tmp_path, qrels), *write_run(tmp_path, run))


def test_cli_text_qrels_with_a_parquet_run_prints_what_the_text_run_gives(tmp_path):
    qrels_text, _, run_text, run_pq = _logs(tmp_path)
    want = run_cli("eval", str(qrels_text), str(run_text), "NDCG_exp@10", "HitRate_item@5")
    got = run_cli("eval", str(qrels_text), str(run_pq), "NDCG_exp@10", "HitRate_item@5")
    assert want.returncode == got.returncode == 0 and got.stdout == want.stdout, got.stderr


def test_cli_parquet_qrels_and_run_print_what_the_text_files_give(tmp_path):
    qrels_text, qrels_pq, run_text, run_pq = _logs(tmp_path)
    want = run_main("eval", str(qrels_text), str(run_text), "NDCG_exp@10")
    got = run_main("eval", str(qrels_pq), str(run_pq), "NDCG_exp@10")
    assert want.returncode == got.returncode == 0 and got.stdout == want.stdout, got.stderr


def test_parquet_qrels_read_whole_by_the_cli(tmp_path):
    # with a measure of another provider the run is read whole, and so are the qrels
    qrels_text, qrels_pq, run_text, run_pq = _logs(tmp_path)
    want = run_main("eval", str(qrels_text), str(run_text), "NDCG_exp@10", "AP")
    got = run_main("eval", str(qrels_pq), str(run_pq), "NDCG_exp@10", "AP")
    assert want.returncode == got.returncode == 0 and got.stdout == want.stdout, got.stderr


def test_cli_parquet_errors_are_one_line_naming_file_and_row(tmp_path):
    qrels_text, _, _, _ = _logs(tmp_path)
    bad = _file(tmp_path, query_id=["u1", "u1"], doc_id=["a", "b"], score=[1.0, float("nan")])
    proc = run_main("eval", str(qrels_text), str(bad), "NDCG_exp@10")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip() == f"ndcg-plugin: error: {bad}: row 1: score must be a finite number, got nan; NaN or " \
                                  "infinite scores have no defined rank"


def test_a_streamed_parquet_eval_imports_neither_pandas_nor_pyarrow_dataset(tmp_path):
    qrels_text, _, _, run_pq = _logs(tmp_path)
    argv = ["eval", str(qrels_text), str(run_pq), "NDCG_exp@10", "--block-size", "1"]
    code = (f"import sys; from ndcg_plugin.cli.commands import main; rc = main({argv!r}); "
            "print(rc, 'pandas' in sys.modules, 'pyarrow.dataset' in sys.modules, 'pyarrow.parquet' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip().splitlines()[-1] == "0 False False True"


def test_reading_text_never_imports_the_parquet_reader(tmp_path):
    code = ("import sys, ndcg_plugin; light = 'pyarrow' in sys.modules; "
            "ndcg_plugin.read('q 0 d 1\\n', 'qrels'); print(light, 'pyarrow.parquet' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip().splitlines()[-1] == "False False"


def _renamed(path: Path, names: dict) -> Path:
    """A copy of a Parquet file with its columns renamed (``{old: new}``)."""
    table = pq.read_table(path)
    out = path.with_name("renamed-" + path.name)
    pq.write_table(table.rename_columns([names.get(c, c) for c in table.column_names]), out)
    return out


QRELS_NAMES = {"query_id": "user_id", "doc_id": "item_id", "relevance": "rating"}
RUN_NAMES = {"query_id": "user_id", "doc_id": "item_id", "score": "prediction"}


@pytest.mark.parametrize("extra", [[], ["--block-size", "0"], ["AP"], ["-q", "--block-size", "256"]],
                         ids=["streamed", "whole", "other-provider", "small-blocks"])
def test_cli_column_options_read_parquet_files_with_other_names(tmp_path, extra):
    qrels_text, qrels_pq, run_text, run_pq = _logs(tmp_path)
    want = run_main("eval", str(qrels_text), str(run_text), "NDCG_exp@10", "MRR_ignore@5", *extra)
    got = run_main("eval", str(_renamed(qrels_pq, QRELS_NAMES)), str(_renamed(run_pq, RUN_NAMES)),
                  "NDCG_exp@10", "MRR_ignore@5", *extra, "--qrels-columns",
                  "query_id=user_id,doc_id=item_id,relevance=rating",
                  "--run-columns", "query_id=user_id,doc_id=item_id,score=prediction")
    assert want.returncode == got.returncode == 0 and got.stdout == want.stdout, got.stderr


def test_cli_column_options_refused_in_one_line(tmp_path):
    qrels_text, qrels_pq, run_text, run_pq = _logs(tmp_path)
    missing = run_main("eval", str(qrels_pq), str(_renamed(run_pq, RUN_NAMES)), "NDCG_exp@10")
    assert missing.returncode == 2 and "missing columns" in missing.stderr and "Traceback" not in missing.stderr
    bad = run_main("eval", str(qrels_pq), str(run_pq), "NDCG_exp@10", "--run-columns", "user_id")
    assert bad.returncode == 2 and "expected NAME=COLUMN" in bad.stderr
    unknown = run_main("eval", str(qrels_pq), str(run_pq), "NDCG_exp@10", "--run-columns", "rating=x")
    assert unknown.returncode == 2 and "columns maps the run columns" in unknown.stderr
    text = run_main("eval", str(qrels_text), str(run_text), "NDCG_exp@10", "--run-columns", "query_id=u")
    assert text.returncode == 2 and "Parquet file" in text.stderr and len(text.stderr.strip().splitlines()) == 1
