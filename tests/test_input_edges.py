"""The edges of the reader (issue 42): NUL bytes, a file of a byte order mark alone, directories,
lines too long; each case with trec_eval 10.0's behaviour beside it (from runs of the binary,
and checked against one when NDCG_PLUGIN_TREC_EVAL names it). Where the case is about the
command line, an end-to-end CLI process: one line on stderr, exit status 2, no traceback."""
from __future__ import annotations

import gzip
import io
import os
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import warnings

import pytest

import ndcg_plugin
from ndcg_plugin import InputError, sizes
from ndcg_plugin.reading import file_pieces, read_columns
from ndcg_plugin.reading.ahead import RunFile
from ndcg_plugin.reading.parquet import files_of
from ndcg_plugin.reading.sources import blocks, parse_blocks
from tests.conftest import msmarco_file
from tests.helpers import both_ways

TREC_EVAL = os.environ.get("NDCG_PLUGIN_TREC_EVAL") or shutil.which("trec_eval")
QRELS = b"q1 0 d1 1\nq1 0 d2 0\nq2 0 d3 2\n"
RUN = b"q1 Q0 d1 1 2.0 r\nq1 Q0 d2 2 1.0 r\nq2 Q0 d3 1 1.0 r\n"
BOM = b"\xef\xbb\xbf"


def write(tmp_path, name: str, data: bytes) -> str:
    path = tmp_path / name
    path.write_bytes(data)
    return str(path)


def cli(*args: str, stdin: bytes | None = None, env: dict | None = None) -> subprocess.CompletedProcess:
    """The command in a process of its own, bytes in (a timeout: a case that would block fails)."""
    return subprocess.run([sys.executable, "-m", "ndcg_plugin", *args], capture_output=True, input=stdin,
                          env={**os.environ, **(env or {})}, timeout=120)


def one_line(proc: subprocess.CompletedProcess, *fragments: str) -> str:
    err = proc.stderr.decode() if isinstance(proc.stderr, bytes) else proc.stderr
    assert proc.returncode == 2, (proc.returncode, err)
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    for fragment in fragments:
        assert fragment in err, err
    return err


def trec_eval(qrels: str, run: str) -> subprocess.CompletedProcess:
    return subprocess.run([TREC_EVAL, "-c", qrels, run], capture_output=True)


def outcome(data: bytes, kind: str, block: int, columnar_ok: bool = True):
    """The rows read from ``data`` in blocks of ``block`` bytes, or the error's message."""
    try:
        pieces = list(parse_blocks(blocks(data, "f", block), "f", kind, columnar_ok=columnar_ok))
        return [(p.query_id.to_pylist(), p.doc_id.to_pylist(), p.value.tolist(), p.line.tolist()) for p in pieces]
    except InputError as e:
        return str(e)


# --- NUL bytes ----------------------------------------------------------------------------------

def test_a_run_with_a_block_of_nul_bytes_is_refused_naming_its_line(tmp_path):
    # what a crash or a bad copy leaves: 4 KiB of NUL bytes in the middle of DL19's BM25 run.
    # trec_eval 10.0: killed by SIGSEGV (exit 139); its files "may contain no NULL characters"
    # (get_trec_results.c), it stops reading at the first. Before: the NULs were read as id bytes,
    # 103 lines vanished, R@1000 and NumRet changed, exit 0, no warning.
    data = bytearray(msmarco_file("run.dl19-passage.bm25.trec").read_bytes())
    data[81_920:86_016] = bytes(4096)
    run = write(tmp_path, "nul.run", bytes(data))
    line = data[:81_920].count(b"\n") + 1
    qrels = str(msmarco_file("qrels.dl19-passage.txt"))
    errors = {one_line(cli("eval", qrels, run, "R@1000", "NumRet", env=env), f"{run}:{line}: a NUL byte")
              for env in ({}, {"NDCG_PLUGIN_SPEEDUPS": "0"})}  # the C parser, and the numpy/Arrow twin
    assert len(errors) == 1
    # gzip on standard input, streamed: the same line
    one_line(cli("eval", qrels, "-", "R@1000", stdin=gzip.compress(bytes(data))), f"<stdin>:{line}: a NUL byte")
    if TREC_EVAL:
        assert trec_eval(qrels, run).returncode not in (0, 1)  # a crash (a signal) or a refusal


@pytest.mark.parametrize("kind, text, line", [
    ("run", RUN.replace(b"d2 2", b"d\x002 2"), 2),                  # in an id
    ("run", b"\x00" + RUN, 1),                                      # at the file's start
    ("run", RUN + b"# a comment\x00\n" + RUN.replace(b"q", b"x"), 4),  # in a comment line
    ("run", RUN.replace(b"2.0", b"2.0\x00"), 1),                    # in a score
    ("qrels", QRELS.replace(b"q2", b"q\x002"), 3),
    ("qrels", b"# c\x00\n" + QRELS, 1),
    ("qrels", QRELS + b"q3 0 d4 1\x00", 4),                         # the last line, without newline
])
def test_a_nul_byte_is_refused_on_every_reading_path_with_its_line(kind, text, line):
    # trec_eval 10.0 misreads what follows a NUL: `q1 Q0 d\0x 1 2.0 t` then a good line gives
    # "result qid 'd1' not found in qrels" (exit 4); a block of NULs in qrels, "Malformed line"
    want = None
    for name, context in both_ways():  # the C parser, and the Arrow and line parsers alone
        with context:
            for block in (16, 64, 1 << 20):
                for columnar_ok in (True, False):
                    for data in (text, gzip.compress(text)):
                        got = outcome(data, kind, block, columnar_ok)
                        assert isinstance(got, str) and f"f:{line}: a NUL byte" in got, (name, block, got)
                        assert want is None or got == want
                        want = got
            for form in (io.BytesIO(text), text, text.decode()):  # a stream (as stdin), bytes, text
                with pytest.raises(InputError, match=f":{line}: a NUL byte"):
                    read_columns(form, kind)


def test_a_line_before_the_nul_byte_that_is_bad_is_the_one_reported():
    text = RUN.replace(b"1.0 r\nq2", b"high r\nq2").replace(b"d3", b"d\x003")  # line 2 bad, NUL on line 3
    for _, context in both_ways():
        with context:
            for block in (16, 1 << 20):
                assert "f:2: expected a numeric score, got 'high'" in outcome(text, "run", block)


@pytest.mark.parametrize("byte", [b"\x01", b"\x08", b"\x1c", b"\x1f", b"\x7f"])
def test_control_bytes_other_than_nul_are_bytes_of_an_id_as_trec_eval_reads_them(byte):
    # trec_eval 10.0 splits fields on C isspace only: `q1 Q0 d\x01x 1 2.0 t` is doc 'd\x01x'
    # (num_ret 2, recip_rank 0.5 beside `q1 Q0 d1 2 1.0 t` with d1 relevant); it cannot have
    # meant otherwise, so such bytes are kept, on every parser
    text = RUN.replace(b"d2", b"d" + byte + b"2")
    for _, context in both_ways():
        with context:
            for block in (16, 1 << 20):
                for columnar_ok in (True, False):
                    got = outcome(text, "run", block, columnar_ok)
                    assert [d for piece in got for d in piece[1]] == ["d1", "d" + byte.decode() + "2", "d3"]


# --- a byte order mark alone --------------------------------------------------------------------

@pytest.mark.parametrize("content", [BOM, BOM + b"\n", BOM + b"\r\n", BOM + b"\n \n\t\n"])
def test_a_file_of_a_byte_order_mark_and_blanks_is_refused_as_an_empty_file(tmp_path, content):
    # trec_eval 10.0 refuses it: "Malformed line 1" (exit 2), the mark being a field of its own;
    # a 0-byte file is refused here ("the input is empty"), and so is this, streamed or read whole,
    # qrels or run, whatever the block size (a blank line alone is a run that returned nothing:
    # trec_eval -c reads it so)
    for kind in ("qrels", "run"):
        for block in (1, 2, 16, 1 << 20):
            got = outcome(content, kind, block)
            assert got == f"f: no {kind} lines found: the input is empty (a UTF-8 byte order mark and blanks " \
                          "only, which trec_eval refuses too: 'Malformed line 1')", (block, got)
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # no warning that the mark is dropped, nothing but the error
            with pytest.raises(InputError, match="the input is empty"):
                ndcg_plugin.read(content, kind)
    streamed = RunFile(io.BytesIO(content))
    with pytest.raises(InputError, match="the input is empty"):
        list(streamed.take_blocks())
    if TREC_EVAL:
        assert trec_eval(write(tmp_path, "q", QRELS), write(tmp_path, "r", content)).returncode == 2


def test_a_byte_order_mark_alone_is_one_line_and_exit_2_on_the_command_line(tmp_path):
    qrels, run = write(tmp_path, "q", QRELS), write(tmp_path, "r", RUN)
    one_line(cli("eval", qrels, write(tmp_path, "bom.run", BOM), "NDCG_lin@10"), "bom.run: no run lines found")
    one_line(cli("eval", write(tmp_path, "bom.qrels", BOM + b"\n"), run, "NDCG_lin@10"),
             "bom.qrels: no qrels lines found")
    one_line(cli("eval", qrels, "-", "NDCG_lin@10", stdin=BOM + b"\n"), "<stdin>: no run lines found")
    # a blank line after the mark, then a judgment: the blank line is refused, as trec_eval refuses it
    with pytest.raises(InputError, match="f:1: a blank line"):
        outcome_or_raise(BOM + b"\n" + QRELS, "qrels")


def outcome_or_raise(data: bytes, kind: str) -> None:
    for block in (1, 16, 1 << 20):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            list(parse_blocks(blocks(data, "f", block), "f", kind))


# --- directories --------------------------------------------------------------------------------

def parquet_run(path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq
    pq.write_table(pa.table({"query_id": ["q1"], "doc_id": ["d1"], "score": [1.0]}), path)


def test_a_directory_of_text_files_is_refused_at_once_naming_its_first_file(tmp_path):
    # trec_eval 10.0: "Cannot read results file" (and "Cannot read qrels file"), exit 2
    folder = tmp_path / "runs"
    folder.mkdir()
    write(folder, "a.run", RUN)
    write(folder, "b.run", RUN)
    one_line(cli("eval", write(tmp_path, "q", QRELS), str(folder), "NDCG_lin@10"),
             f"its first file {folder / 'a.run'} is not Parquet")
    if TREC_EVAL:
        assert trec_eval(write(tmp_path, "q", QRELS), str(folder)).returncode == 2


@pytest.mark.parametrize("first", [True, False])
def test_a_fifo_inside_a_directory_is_refused_by_name_without_opening_it(tmp_path, first):
    # before: the directory was read as a Parquet dataset and the FIFO opened: blocked for ever
    folder = tmp_path / "data"
    folder.mkdir()
    parquet_run(folder / "b.parquet")
    fifo = folder / ("a" if first else "c")
    os.mkfifo(fifo)
    one_line(cli("eval", write(tmp_path, "q", QRELS), str(folder), "NDCG_lin@10"),
             f"{fifo} is a FIFO (named pipe), not a Parquet file")


def test_a_socket_inside_a_directory_is_refused_by_name(tmp_path):
    folder = tempfile.mkdtemp(prefix="ndcg-")  # short: a socket's path has at most 107 bytes
    try:
        parquet_run(os.path.join(folder, "a.parquet"))
        with socket.socket(socket.AF_UNIX) as s:
            s.bind(os.path.join(folder, "b"))
            assert stat.S_ISSOCK(os.stat(os.path.join(folder, "b")).st_mode)
            with pytest.raises(InputError, match="b is a socket, not a Parquet file"):
                files_of(folder, folder)
    finally:
        shutil.rmtree(folder)


def test_a_directory_is_walked_no_further_than_its_first_file(tmp_path, monkeypatch):
    # "/" was walked whole (11 s) before its first file was found not to be Parquet
    write(tmp_path, "a.txt", b"not parquet")
    deep = tmp_path / "b"
    for i in range(5):
        deep = deep / f"d{i}"
    deep.mkdir(parents=True)
    os.mkfifo(deep / "fifo")
    listed = []
    real = os.scandir
    monkeypatch.setattr(os, "scandir", lambda p: listed.append(p) or real(p))
    with pytest.raises(InputError, match="its first file .*a.txt is not Parquet"):
        files_of(str(tmp_path), "dir")
    assert listed == [str(tmp_path)]
    # the rule of the dataset reader kept: names starting with . or _ are passed over, files in path order
    (tmp_path / "a.txt").unlink()
    shutil.rmtree(tmp_path / "b")
    for name in ("_SUCCESS", ".a.crc", "z.parquet", "m/x.parquet", "m.parquet", "_tmp/y.parquet"):
        (tmp_path / name).parent.mkdir(exist_ok=True)
        parquet_run(tmp_path / name)
    assert [os.path.relpath(f, tmp_path) for f in files_of(str(tmp_path), "dir")] == \
        ["m/x.parquet", "m.parquet", "z.parquet"]


# --- lines too long -----------------------------------------------------------------------------

def test_a_line_longer_than_1_mib_is_refused_naming_its_line(tmp_path):
    # trec_eval 10.0 reads a file whole (mmap) and a line whatever its length: 3 MiB without a
    # newline after two good lines is "Malformed line 3" (exit 2); a 3 MiB doc id on a good line is
    # read. Its reader is written for lines of 10,000 bytes (MAXLINE, get_trec_results.c); here a
    # line of more than 1 MiB is refused (a single 1 GiB line took 58 s and 7.4 GB before)
    run = write(tmp_path, "long.run", RUN[:34] + b"x" * (3 << 20))
    for size in ("0", "65536"):
        one_line(cli("eval", "--block-size", size, write(tmp_path, "q", QRELS), run, "NDCG_lin@10"),
                 f"{run}:3: a line longer than 1,048,576 bytes")


class Endless:
    """A stream of ``total`` bytes of ``x`` without a newline, made as it is read, counting what was read."""

    def __init__(self, total: int, head: bytes = b""):
        self.left, self.head, self.done = total, head, 0

    def read(self, n: int = -1) -> bytes:
        out, self.head = self.head[:n], self.head[n:]
        more = min(n - len(out), self.left)
        self.left -= more
        self.done += len(out) + more
        return out + b"x" * more


@pytest.mark.parametrize("block", [1 << 16, sizes.BLOCK_BYTES])
@pytest.mark.parametrize("kind, head", [("run", RUN), ("qrels", QRELS), ("run", b"")])
def test_a_long_line_is_refused_before_the_stream_is_read_whole(block, kind, head):
    stream, line = Endless(64 << 20, head), head.count(b"\n") + 1
    with pytest.raises(InputError, match=f":{line}: a line longer than 1,048,576 bytes"):
        file_pieces(stream, kind, block_bytes=block)
    assert stream.done <= sizes.LINE_BYTES + 2 * block + len(head)  # bounded: 64 MiB were never read
    assert stream.left > 0


def test_every_line_longer_than_the_bound_is_refused_wherever_the_blocks_cut(monkeypatch):
    monkeypatch.setattr(sizes, "LINE_BYTES", 40)
    ok = b"q1 Q0 d1 1 2.0 r" + b" " * 24 + b"\n"  # 40 bytes and its newline
    assert len(ok) == 41
    for at in range(4):
        lines = [b"q1 Q0 d%d 1 1.0 r\n" % i for i in range(4)]
        fine = b"".join(lines[:at] + [ok] + lines[at:])
        long = b"".join(lines[:at] + [ok[:-1] + b" \n"] + lines[at:])
        for block in (7, 16, 41, 64, 1 << 20):
            assert isinstance(outcome(fine, "run", block), list)
            assert outcome(long, "run", block) == f"f:{at + 1}: a line longer than 40 bytes, refused before it " \
                "is read whole: trec_eval's reader is written for lines of 10,000 bytes (MAXLINE in " \
                "get_trec_results.c) and no id or score comes near this; a file without line ends, or not a qrels " \
                "or run file?", (at, block)


def test_a_long_line_in_a_gzip_file_is_refused_too():
    data = gzip.compress(RUN + b"y" * (5 << 20))
    with pytest.raises(InputError, match=":4: a line longer than"):
        read_columns(data, "run")
