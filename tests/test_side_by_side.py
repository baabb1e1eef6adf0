"""The qrels streamed beside the run (ndcg_plugin.engine.side_by_side) against the run read whole
(--block-size 0): the same output byte for byte, -q included, the same warnings and the same
error, on random interaction logs sorted by user in string order, in numeric order, or not at
all (then the other way is taken); and the qrels index's fast lookups against its exact ones."""
from __future__ import annotations

import contextlib
import io
import random
import warnings

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ndcg_plugin import read
from ndcg_plugin.arrays import columns
from ndcg_plugin.cli.commands import main
from ndcg_plugin.ranking.qrels_index import QrelsIndex
from tests.helpers import qrels_df

MEASURES = ["NDCG_lin@3", "NDCG_exp@10", "HitRate@2", "HitRate_item@3", "MRR_zero@2", "MRR_ignore@5",
            "NDCG_lin(ideal='run')@4", "nDCG@3"]


def run_cli(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), warnings.catch_warnings():
        code = main(list(args))
    return code, out.getvalue(), err.getvalue()


@st.composite
def logs(draw):
    """(qrels text, run text): users with recommendation lists and held-out interactions."""
    rnd = random.Random(draw(st.integers(0, 2**32)))
    kind = draw(st.sampled_from(["padded", "int", "odd"]))
    n = draw(st.integers(1, 40))
    numbers = sorted(rnd.sample(range(1, 10 * n + 20), n))

    def uid(i: int) -> str:
        return {"padded": f"u{i:05d}", "int": str(i), "odd": rnd.choice([f"{i:03d}", f"é{i}", f"u{i}"])}[kind]

    users = [uid(i) for i in numbers]
    order = draw(st.sampled_from(["bytes", "numeric", "shuffled"]))
    if order == "bytes":
        users.sort()
    elif order == "shuffled":
        rnd.shuffle(users)
    items = [str(rnd.randint(0, 30)) for _ in range(60)]
    run, qrels = [], []
    for u in users:
        if rnd.random() < 0.85:  # some users have no recommendations
            recs = rnd.sample(items, rnd.randint(1, 8))
            if rnd.random() < 0.05 and draw(st.booleans()):
                recs.append(recs[0])  # an item recommended twice
            score = 10.0
            for r, d in enumerate(recs):
                score -= rnd.choice([0, 0.5, 1])  # ties
                run.append(f"{u} Q0 {d} {r + 1} {score} t")
        if rnd.random() < 0.9:  # some users have nothing held out
            for d in rnd.sample(items, rnd.randint(1, 5)):
                qrels.append(f"{u} 0 {d} {rnd.choice([0, 0, 1, 2, 3, 5])}")
    if not qrels:
        qrels.append(f"{users[0]} 0 x 1")
    if not run:
        run.append(f"{users[-1]} Q0 x 1 1.0 t")
    for lines in (qrels, run):
        if len(lines) > 2 and draw(st.integers(0, 5)) == 0:
            # one line moved further down: its user's lines in two places, while the users' first
            # appearances stay sorted (side by side must decline such a file, not misread it)
            i = rnd.randrange(len(lines) - 1)
            lines.insert(rnd.randrange(i + 1, len(lines)), lines.pop(i))
    return "\n".join(qrels) + "\n", "\n".join(run) + "\n"


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(logs(), st.sampled_from([64, 200, 4096]), st.sampled_from([[], ["-q"], ["--duplicates", "max"]]))
def test_side_by_side_equals_the_run_read_whole(tmp_path, case, block, options):
    qrels, run = case
    (tmp_path / "q").write_text(qrels)
    (tmp_path / "r").write_text(run)
    args = [str(tmp_path / "q"), str(tmp_path / "r"), "-p", "-1", *options, *MEASURES]
    whole = run_cli("eval", "--block-size", "0", *args)
    streamed = run_cli("eval", "--block-size", str(block), *args)
    assert streamed == whole


def test_both_ways_are_taken(tmp_path, monkeypatch):
    # the property test above covers both ways only if sorted files go side by side and others not
    from ndcg_plugin.engine import side_by_side
    taken = []
    real = side_by_side.evaluate

    def spy(*a, **k):
        try:
            real(*a, **k)
        except side_by_side.Unsorted:
            taken.append("unsorted")
            raise
        taken.append("side by side")

    monkeypatch.setattr(side_by_side, "evaluate", spy)
    (tmp_path / "q").write_text("1 0 a 1\n2 0 b 1\n10 0 c 1\n")
    (tmp_path / "r").write_text("1 Q0 a 1 1 t\n2 Q0 x 1 1 t\n10 Q0 c 1 1 t\n")  # numeric order
    (tmp_path / "s").write_text("10 Q0 c 1 1 t\n1 Q0 a 1 1 t\n2 Q0 x 1 1 t\n")  # not sorted
    for run in ("r", "s"):
        code, out, _ = run_cli("eval", "--block-size", "16", str(tmp_path / "q"), str(tmp_path / run), "HitRate@1")
        assert (code, out) == (0, "HitRate@1\t0.6667\n")
    assert taken == ["side by side", "unsorted"]


@pytest.mark.parametrize("qrels, run, message", [
    ("1 0 a 1\n2 0 b x\n", "1 Q0 a 1 1 t\n1 Q0 a 1 2 t\n", "q:2: expected an integer relevance label"),
    ("1 0 a 1\n1 0 a 2\n2 0 b 1\n", "1 Q0 a 1 1 t\n2 Q0 b 1 zz t\n", "q:2: duplicate (query_id, doc_id)"),
    ("1 0 a 1\n2 0 b 1\n", "1 Q0 a 1 1 t\n1 Q0 a 1 2 t\n2 Q0 b 1 zz t\n", "r:3: expected a numeric score"),
    ("1 0 a 1\n2 0 b 1\n", "1 Q0 a 1 1 t\n1 Q0 a 1 2 t\n2 Q0 b 1 1 t\n", "r:2: duplicate (query_id, doc_id)"),
    # repeated pairs in several blocks, evaluated at once on worker threads: the first in the run's order
    ("".join(f"{i} 0 a 1\n" for i in range(1, 9)),
     "".join(f"{i} Q0 a 1 1 t\n{i} Q0 {'a' if i in (2, 3, 5) else 'b'} 1 2 t\n" for i in range(1, 9)),
     "r:4: duplicate (query_id, doc_id) = ('2', 'a')"),
])
def test_errors_are_those_of_the_whole_reading_qrels_first(tmp_path, qrels, run, message):
    (tmp_path / "q").write_text(qrels)
    (tmp_path / "r").write_text(run)
    outcomes = [run_cli("eval", "--block-size", size, str(tmp_path / "q"), str(tmp_path / "r"), "HitRate@1")
                for size in ("0", "12")]
    assert outcomes[0] == outcomes[1]
    assert outcomes[0][0] == 2 and message in outcomes[0][2]


# --- the qrels index: fast lookups against exact ones -------------------------------------------

IDS = st.builds(lambda short, long: ("a-prefix-longer-than-16-bytes-" if long else "") + short,
                st.text(st.sampled_from(list("ab0é#")), min_size=1, max_size=4), st.booleans())


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(IDS, IDS, st.integers(-2, 4)), min_size=1, max_size=40, unique_by=lambda r: r[:2]),
       st.lists(st.tuples(IDS, IDS), max_size=40))
def test_fast_lookups_equal_exact_ones(judgments, probes):
    qrels = read(qrels_df(judgments), "qrels")
    fast, exact = QrelsIndex(qrels), QrelsIndex(qrels, exact=True)
    assert not fast.exact and exact.exact
    qids = pa.chunked_array([pa.array([q for q, _ in probes] + list(qrels["query_id"]), type=pa.large_string())])
    assert fast.code_of(qids).tolist() == exact.code_of(qids).tolist()
    assert fast.code_of(qids, "search").tolist() == fast.code_of(qids, "hash").tolist() == exact.code_of(qids).tolist()
    assert fast.code_of(qids, "heads").tolist() == exact.code_of(qids, "hash").tolist()
    codes = fast.code_of(qids)
    docs = pa.chunked_array([pa.array([d for _, d in probes] + list(qrels["doc_id"]), type=pa.large_string())])
    known = np.flatnonzero(codes >= 0)
    for a, b in zip(fast.labels(codes[known], docs.take(pa.array(known))),
                    exact.labels(codes[known], docs.take(pa.array(known))), strict=True):
        assert a.tolist() == b.tolist()


SHORT_IDS = st.text(st.sampled_from(["a", "b", "0", "9", "\x00", "é", "u"]), min_size=1, max_size=9)


def _near(ids: list, data) -> list:
    """Ids that differ from the given ones only at their end: a zero byte or a letter appended, the
    last character dropped (ids that share a head with one of them)."""
    if not ids:
        return []
    picked = data.draw(st.lists(st.sampled_from(ids), max_size=10))
    how = data.draw(st.lists(st.sampled_from(["\x00", "b", "drop"]), min_size=len(picked), max_size=len(picked)))
    return [i[:-1] or "z" if h == "drop" else i + h for i, h in zip(picked, how, strict=True)]


@settings(max_examples=300, deadline=None)
@given(st.lists(SHORT_IDS, min_size=1, max_size=30, unique=True), st.lists(SHORT_IDS, max_size=30), st.data())
def test_query_codes_by_heads_equal_those_by_hashing(qids, probes, data):
    """Ids of at most 8 bytes are looked up by their heads; ids of 9, an id and itself followed by
    a zero byte (one head for two ids: then hashed), non-ASCII: the codes Arrow's hashing gives."""
    qids = list(dict.fromkeys(qids + _near(qids, data) if data.draw(st.booleans()) else qids))
    probes = probes + _near(qids, data)
    index = QrelsIndex(qrels_df([(q, "d", 1) for q in qids]))
    values = pa.chunked_array([pa.array(probes + qids, type=pa.large_string())])
    assert index.code_of(values, "heads").tolist() == index.code_of(values, "hash").tolist()
    assert index.code_of(values).tolist() == index.code_of(values, "hash").tolist()
    assert sorted(index.code_of(pa.chunked_array([pa.array(qids, type=pa.large_string())]), "heads").tolist()) == \
        list(range(len(qids)))


def test_colliding_fingerprints_take_the_exact_lookups(monkeypatch):
    # fingerprints that collide (every id the same key) make the fast lookups ambiguous: the index
    # sees it and answers through the exact ones, with the same results
    qrels = read("q1 0 a 1\nq2 0 b 2\nq2 0 c 3\n", "qrels")
    monkeypatch.setattr("ndcg_plugin.ranking.qrels_index.fingerprints", lambda v: np.zeros(len(v), dtype=np.uint64))
    index = QrelsIndex(qrels)
    assert index.exact
    ids = pa.chunked_array([pa.array(["q2", "q3", "q1"], type=pa.large_string())])
    assert index.code_of(ids).tolist() == [1, -1, 0]
    assert index.code_of(ids, "search").tolist() == [1, -1, 0]  # colliding query fingerprints: hashed
    with pytest.raises(ValueError, match="method must be 'hash', 'search', 'heads' or None, got 'sorted'"):
        index.code_of(ids, "sorted")
    judged, rel = index.labels(np.array([1, 1, 0]), pa.chunked_array([pa.array(["c", "a", "a"])]))
    assert judged.tolist() == [True, False, True] and rel.tolist() == [3, 0, 1]
    assert columns.fingerprints is not None


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(logs(), st.sampled_from(["40", "400"]))
def test_blocks_evaluated_one_at_a_time_or_at_once_print_the_same(monkeypatch, tmp_path, data, block):
    # the worker threads (sizes.WORKERS blocks at once) against one block at a time, and
    # blocks evaluated in pieces (sizes.PIECE_ROWS)
    from ndcg_plugin import sizes
    qrels, run = data
    (tmp_path / "q").write_text(qrels)
    (tmp_path / "r").write_text(run)
    args = ("eval", "-q", "-p", "-1", "--block-size", block, str(tmp_path / "q"), str(tmp_path / "r"), *MEASURES)
    outcomes = []
    for workers, piece_rows in ((1, 10**9), (2, 10**9), (3, 10**9), (2, 3)):  # (2, 3): blocks cut in pieces
        monkeypatch.setattr(sizes, "WORKERS", workers)
        monkeypatch.setattr(sizes, "PIECE_ROWS", piece_rows)
        outcomes.append(run_cli(*args))
    assert outcomes[0] == outcomes[1] == outcomes[2] == outcomes[3]


@pytest.mark.parametrize("piece_rows", [3, 7, 12])
def test_blocks_cut_in_pieces_print_what_whole_blocks_print(monkeypatch, tmp_path, piece_rows):
    # users sorted, 5 recommendations and 3 judgments each: with PIECE_ROWS of a few rows every
    # block of several users is evaluated in pieces of one user or a few (the case above draws
    # it only now and then)
    from ndcg_plugin import sizes
    from ndcg_plugin.engine import side_by_side
    (tmp_path / "q").write_text("".join(f"u{i:03d} 0 d{j} {(i + j) % 4}\n" for i in range(40) for j in range(3)))
    (tmp_path / "r").write_text("".join(f"u{i:03d} Q0 d{(j * 7 + i) % 6} {j + 1} {10 - j // 2} t\n"
                                        for i in range(40) for j in range(5)))
    pieces = []
    real = side_by_side.cut_in_pieces
    monkeypatch.setattr(side_by_side, "cut_in_pieces", lambda *a: pieces.append(real(*a)) or pieces[-1])
    args = ["eval", "-q", "-p", "-1", str(tmp_path / "q"), str(tmp_path / "r"), *MEASURES]
    whole = run_cli(*args[:1], "--block-size", "0", *args[1:])
    monkeypatch.setattr(sizes, "PIECE_ROWS", piece_rows)
    cut = run_cli(*args[:1], "--block-size", "500", *args[1:])
    assert whole[0] == 0 and cut == whole
    assert max(len(p) for p in pieces) >= 3  # blocks were cut in several pieces
    for cut_block in pieces:  # of whole users, about piece_rows rows each (a user holds 5)
        assert all(len(part) % 5 == 0 and len(part) <= max(piece_rows, 5) * 2 for part in cut_block)
