"""Streaming evaluation equals the in-memory engine exactly: on the differential tests' random
collections, with the run file cut into blocks at random points (tiny blocks included),
grouped or not, with bad lines and duplicates."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ndcg_plugin import HitRate, HitRate_item, InputError, MRR_ignore, MRR_zero, NDCG_exp, NDCG_lin, read
from ndcg_plugin.engine import block as engine
from ndcg_plugin.engine.stream import compute_file
from ndcg_plugin.measures import spec_of
from tests.test_differential import collections

MEASURES = [NDCG_lin @ 3, NDCG_exp, NDCG_lin(ideal="run") @ 5, NDCG_lin(judged_only=True) @ 4, HitRate @ 2,
            HitRate_item @ 3, MRR_zero @ 5, MRR_ignore @ 2, MRR_zero(rel=2) @ 10, NDCG_exp(ties="average") @ 3,
            HitRate_item(ties="average") @ 2, MRR_ignore(ties="average") @ 4]
SPECS = [spec_of(m) for m in MEASURES]


def run_text(run: dict, order: list, fmt: str) -> str:
    lines = []
    for q, d in order:
        s = run[q][d]
        lines.append(f"{q}\t{d}\t{int(s)}" if fmt == "msmarco" else f"{q} Q0 {d} 0 {s!r} tag")
    return "\n".join(lines) + "\n"


def outcome(fn):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result = fn()
        except InputError as e:
            return ("error", str(e)), []
    return result, [str(w.message) for w in caught]


def same_outcome(got_fn, expected_fn) -> None:
    """The two give the same values (or the same InputError) and the same warnings."""
    expected, expected_warnings = outcome(expected_fn)
    got, got_warnings = outcome(got_fn)
    assert got_warnings == expected_warnings
    if isinstance(expected, tuple):
        assert got == expected
    else:
        same_values(got, expected)


def same_values(a: dict, b: dict) -> None:
    assert a.keys() == b.keys()
    for spec in a:
        for field in ("values", "hits", "returned"):
            x, y = getattr(a[spec], field), getattr(b[spec], field)
            assert (x is None) == (y is None)
            if x is not None:
                np.testing.assert_array_equal(x, y, err_msg=f"{spec} {field}")  # NaN equals NaN here


@settings(max_examples=300, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(case=collections(), data=st.data())
def test_streaming_equals_in_memory_on_random_cases_cut_anywhere(tmp_path, case, data):
    qrels, run = case
    pairs = [(q, d) for q in run for d in run[q]]
    if data.draw(st.integers(0, 4)) == 0:
        pairs = data.draw(st.permutations(pairs))  # not grouped by query: read again, whole
    fmt = data.draw(st.sampled_from(["trec", "trec", "msmarco"]))
    text = run_text(run, pairs, fmt)
    if data.draw(st.integers(0, 5)) == 0 and pairs:
        lines = text.splitlines(keepends=True)
        i = data.draw(st.integers(0, len(lines) - 1))
        lines.insert(i, data.draw(st.sampled_from(["# comment\n", "\n", "q1 Q0 bad\n", lines[i]])))
        text = "".join(lines)
    path = tmp_path / "run.txt"
    path.write_text(text)
    block = data.draw(st.sampled_from([1, 7, 40, 333, 1 << 20]))
    policy = data.draw(st.sampled_from(["error", "error", "first", "max"]))
    index = engine.QrelsIndex(read(qrels, "qrels"))

    def whole():
        # a repeated pair counts only in a qrels query (as trec_eval), on both paths
        return engine.compute(index, read(path, "run", duplicates=policy, queries=index.qid_values), SPECS)

    def streamed():
        return compute_file(index, path, SPECS, duplicates=policy, block_bytes=block)

    same_outcome(streamed, whole)


def test_a_query_longer_than_many_blocks_is_carried_whole(tmp_path):
    lines = [f"q1 Q0 d{i} 0 {1000 - i} t" for i in range(500)] + [f"q2 Q0 d{i} 0 {i} t" for i in range(3)]
    path = tmp_path / "run"
    path.write_text("\n".join(lines) + "\n")
    index = engine.QrelsIndex(read("q1 0 d499 1\nq2 0 d0 1\n", "qrels"))
    got = compute_file(index, path, [spec_of(MRR_zero @ 1000)], block_bytes=64)
    # hand computation: q1's relevant doc d499 has the lowest score (rank 500); q2's d0 ranks 3rd
    assert list(got[spec_of(MRR_zero @ 1000)].values) == [1 / 500, 1 / 3]


def test_a_duplicate_is_reported_after_a_later_bad_line_as_in_memory(tmp_path):
    path = tmp_path / "run"
    path.write_text("q1 Q0 a 0 1 t\nq1 Q0 a 0 2 t\n" + "".join(f"q2 Q0 d{i} 0 1 t\n" for i in range(50)) + "q3 Q0 x\n")
    index = engine.QrelsIndex(read("q1 0 a 1\n", "qrels"))
    with pytest.raises(InputError, match=":53: expected 6 columns"):
        compute_file(index, path, [spec_of(NDCG_lin @ 10)], block_bytes=32)


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(case=collections(), data=st.data())
def test_cli_output_streamed_and_in_memory_is_identical_byte_for_byte(tmp_path, capsys, case, data):
    from ndcg_plugin.cli.commands import main
    from ndcg_plugin.formatting import OUTPUTS  # the -o choices (cli_parser uses the same tuple)

    qrels, run = case
    qrels_path, run_path = tmp_path / "qrels", tmp_path / "run"
    qrels_path.write_text("".join(f"{q} 0 {d} {r}\n" for q in qrels for d, r in qrels[q].items()))
    run_path.write_text(run_text(run, [(q, d) for q in run for d in run[q]], "trec") if run else "")
    measures = [str(m) for m in MEASURES] + ["RR@5", "nDCG@3"]
    formats = OUTPUTS
    extra = data.draw(st.sampled_from([[], ["-q"], ["-q", "-n"], ["-p", "-1"]]))
    fmt = data.draw(st.sampled_from(sorted(formats)))
    outs = []
    for block in (data.draw(st.sampled_from(["1", "9", "100"])), "0"):
        code = main(["eval", str(qrels_path), str(run_path), *measures, "-o", fmt, *extra, "--block-size", block])
        captured = capsys.readouterr()
        outs.append((code, captured.out, captured.err))
    assert outs[0] == outs[1]


def test_the_cli_default_block_size_is_the_readers():
    from ndcg_plugin.cli.parser import BLOCK_MIB
    from ndcg_plugin.sizes import BLOCK_BYTES

    assert BLOCK_MIB << 20 == BLOCK_BYTES


def test_help_and_measures_import_nothing_heavy():
    import subprocess
    import sys

    code = ("import sys; from ndcg_plugin.cli.commands import main; main(['measures']); "
            "heavy = ('numpy', 'pandas', 'pyarrow', 'scipy', 'pytrec_eval', 'ir_datasets'); "
            "print(sorted(m for m in heavy if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip().splitlines()[-1] == "[]"


@pytest.mark.parametrize("preset, expected", [(None, "1"), ("3", "3")])
def test_the_cli_keeps_openblas_to_one_thread_unless_the_user_set_it(preset, expected):
    # set in main() before numpy is first imported (the test above: `import ndcg_plugin.cli.commands`
    # imports no numpy), so OpenBLAS reads it; a value the user set is kept
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    if preset is not None:
        env["OPENBLAS_NUM_THREADS"] = preset
    code = ("import os, sys; from ndcg_plugin.cli.commands import main; before = 'numpy' in sys.modules; "
            "main(['measures']); print(before, os.environ['OPENBLAS_NUM_THREADS'])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env).stdout
    assert out.strip().splitlines()[-1] == f"False {expected}"


def test_the_run_is_opened_for_parsing_before_the_engine_is_imported():
    # the CLI routes the measures (specs, no numpy) and opens the run (reading.ahead: what
    # parsing needs) before it imports the engine, so the first blocks parse meanwhile
    import subprocess
    import sys

    code = ("import sys; import ir_measures; from ndcg_plugin.evaluation import route; "
            "names = [route(ir_measures.parse_measure(m)) for m in ('NDCG_lin@10', 'MRR_ignore@10', 'nDCG@10')]; "
            "routed = sorted(m for m in ('numpy', 'pyarrow') if m in sys.modules); "
            "import ndcg_plugin.reading.ahead; "
            "opened = sorted(m for m in ('pyarrow.compute', 'ndcg_plugin.engine.block', 'pandas') "
            "if m in sys.modules); "
            "print(names, routed, opened)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip().splitlines()[-1] == "['ndcg_plugin', 'ndcg_plugin', 'ndcg_plugin'] [] []"


@pytest.mark.parametrize("extra", [[], ["--duplicates", "max"], ["--block-size", "64"]])
def test_a_streamed_eval_never_imports_pandas(tmp_path, extra):
    # pandas costs 0.2 s of startup: the streaming path reads and computes without it (a run
    # with tied scores and a repeated pair, so tie ordering and the duplicate policy run too)
    import subprocess
    import sys

    qrels = tmp_path / "q.qrels"
    qrels.write_text("q1 0 a 1\nq1 0 b 2\nq2 0 c 1\n")
    run = tmp_path / "r.run"
    lines = ["q1 Q0 a 1 1.5 t", "q1 Q0 b 2 1.5 t", "q1 Q0 z 3 1.0 t", "q2 Q0 c 1 2.0 t", "q3 Q0 c 1 2.0 t"]
    if extra[:1] == ["--duplicates"]:
        lines.append("q3 Q0 c 2 1.0 t")
    run.write_text("\n".join(lines) + "\n")
    argv = ["eval", str(qrels), str(run), *extra, "NDCG_exp@10", "HitRate_item@2", "MRR_ignore@1", "nDCG@10"]
    code = (f"import sys; from ndcg_plugin.cli.commands import main; rc = main({argv!r}); "
            "print(rc, 'pandas' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip().splitlines()[-1] == "0 False"


# --- read_ahead: the next block is parsed on a worker thread ---------------------------------

def test_read_ahead_keeps_order_and_raises_where_the_source_raised():
    from ndcg_plugin.reading.ahead import read_ahead

    assert list(read_ahead(iter(range(50)), depth=2)) == list(range(50))

    def failing():
        yield 1
        yield 2
        raise InputError("f", 3, "bad line")

    got = []
    with pytest.raises(InputError, match="f:3"):
        for x in read_ahead(failing()):
            got.append(x)
    assert got == [1, 2]


def test_read_ahead_stops_and_closes_its_source_when_the_consumer_stops():
    import threading

    from ndcg_plugin.reading.ahead import read_ahead
    closed = threading.Event()

    def endless():
        try:
            i = 0
            while True:
                yield i
                i += 1
        finally:
            closed.set()

    items = read_ahead(endless(), depth=2)
    assert [next(items) for _ in range(5)] == [0, 1, 2, 3, 4]
    items.close()  # as a for loop left by an exception (a query seen again, a bad line) does
    assert closed.is_set()
    assert not any(t.name == "ndcg-plugin-read-ahead" for t in threading.enumerate())


def test_a_run_file_opened_before_the_qrels_streams_as_a_path_does(tmp_path):
    import threading

    from ndcg_plugin.reading.ahead import RunFile
    qrels = read("q1 0 a 1\nq2 0 b 2\n", "qrels")
    path = tmp_path / "r.run"
    path.write_text("q1 Q0 a 1 2 t\nq1 Q0 b 2 1 t\nq2 Q0 b 1 3 t\nq1 Q0 c 1 0 t\n")  # q1 again: read again whole
    specs = [spec_of(m) for m in (NDCG_lin @ 10, MRR_zero @ 10)]
    index = engine.QrelsIndex(qrels)
    expected = compute_file(index, path, specs, block_bytes=16)
    opened = RunFile(path, block_bytes=16)
    got = compute_file(index, opened, specs)
    assert {s: v.values.tolist() for s, v in got.items()} == {s: v.values.tolist() for s, v in expected.items()}
    assert got[specs[1]].values.tolist() == [1.0, 1.0]  # hand: q1's relevant 'a' ranks first, q2's 'b' too
    never_used = RunFile(path)
    never_used.close()  # as the CLI does when the qrels are bad
    assert not any(t.name == "ndcg-plugin-read-ahead" for t in threading.enumerate())


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=collections(), data=st.data())
def test_group_codes_handed_over_by_read_grouped_give_the_engines_own_values(case, data):
    # the provider's fast path: the reader's group codes reused by the engine, never stale
    import pandas as pd

    from ndcg_plugin.arrays.columns import group_codes
    from ndcg_plugin.reading import read_grouped
    qrels, run = case
    rows = [(q, d, s) for q in run for d, s in run[q].items()]
    rows = data.draw(st.permutations(rows))  # grouped by query or not
    if rows and data.draw(st.booleans()):
        rows = [*rows, data.draw(st.sampled_from(rows))]  # a repeated pair: dropped under first/max
    frame = pd.DataFrame(rows, columns=["query_id", "doc_id", "score"])
    policy = data.draw(st.sampled_from(["error", "first", "max"]))
    index = engine.QrelsIndex(read(qrels, "qrels"))

    def given_groups():
        block = read_grouped(frame, "run", duplicates=policy)
        # never stale: where rows were dropped, the block is made anew from the rows kept
        fresh = group_codes(block.rows["query_id"])
        assert block.groups.codes.tolist() == fresh.codes.tolist() and block.groups.uniques.equals(fresh.uniques)
        assert block.groups.sizes.tolist() == fresh.sizes.tolist() and block.doc_fp is None and block.q_map is None
        return engine.compute(index, block, SPECS)

    same_outcome(given_groups, lambda: engine.compute(index, read(frame, "run", duplicates=policy), SPECS))
