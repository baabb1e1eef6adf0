"""Qrels and runs stored as Parquet: a file, or a directory of Parquet files read as one table.

Read with ``pyarrow.parquet`` (imported only when a Parquet input is read) in record batches
of the projected columns, each batch checked and converted into the reader's columns
(:class:`~ndcg_plugin.reading.lines.Parsed`), so a Parquet run streams as a text run does.
``pyarrow.dataset`` is not used: importing it imports pandas (pyarrow 26), which the streamed
path never does; a directory is listed as the dataset reader lists one (every file below it, in
path order, but those whose name starts with ``.`` or ``_``, such as Spark's ``_SUCCESS``).

- Columns are found by name: ``query_id``, ``doc_id`` and ``relevance`` (qrels) or ``score``
  (runs), or the names ``columns=`` maps them to; other columns are not read.
- Ids: string columns as they are (no null, no empty string, valid UTF-8); integer columns as
  their decimal strings (``str(int)``, as for DataFrames); other types are refused.
- Values: ``relevance`` an integer column, or a float one holding integers; ``score`` any
  numeric column, finite; no nulls.
- Rows are numbered from 0 in the order of the files and of the rows within them: errors say
  ``FILE: row N: ...`` and the ``line`` of each row is this 0-based position.
"""
from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from ..arrays.columns import to_numpy
from ..errors import VALUE_COLUMN, ColumnsError, InputError
from ..sizes import BLOCK_BYTES
from .formats import Layout, column_names, error_at
from .lines import Parsed

MAGIC = b"PAR1"
#: rows per piece: a text block's bytes over this (8 MiB -> 262,144 rows, a TREC run's block)
BYTES_PER_ROW = 32
LAYOUTS = {"qrels": Layout("parquet", 3, 0, 1, 2, True, "columns query_id, doc_id, relevance", unit="row"),
           "run": Layout("parquet", 3, 0, 1, 2, False, "columns query_id, doc_id, score", unit="row")}
_INT64_MAX = 2**63 - 1


@dataclass(frozen=True)
class ParquetSource:
    """A Parquet path with the column names to read (``columns=``), passed around as one input
    (a streamed run that must be read again whole is read from it)."""
    path: str
    columns: Mapping[str, str] | None = None

    def __fspath__(self) -> str:
        return self.path

    def __str__(self) -> str:
        return self.path


def is_parquet(data: Any) -> bool:
    """A path read as Parquet: named ``*.parquet``, a directory (a Parquet dataset: one that holds
    no Parquet file is refused, :func:`files_of`), or a file that starts and ends with Parquet's
    magic bytes ``PAR1`` (a text file whose first query id is ``PAR1`` does not end with them)."""
    if isinstance(data, ParquetSource):
        return True
    if not (isinstance(data, os.PathLike) or (isinstance(data, str) and "\n" not in data)) or str(data) == "-":
        return False
    path = os.fspath(data)
    if path.lower().endswith(".parquet") or os.path.isdir(path):
        return True
    if not os.path.isfile(path):
        return False  # a pipe (``<(zcat run.gz)``) is not opened here: its first bytes would be lost
    return _has_magic(path)


def _has_magic(path: str) -> bool:
    """Whether the regular file at ``path`` starts and ends with ``PAR1``."""
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size < 12 or f.read(4) != MAGIC:
                return False
            f.seek(size - 4)
            return f.read(4) == MAGIC
    except OSError:
        return False


def files_of(path: str, source: str) -> list[str]:
    """The Parquet files of a path: itself, or a directory's files in path order (:func:`_listed`).
    A directory is read only when it holds Parquet files: its first file must be one (else it is
    refused at once, nothing further walked), and every file must be a regular file (a FIFO, a
    socket or a device is refused by name, never opened: reading one could block for ever)."""
    if not os.path.isdir(path):
        if not os.path.exists(path):
            raise InputError(source, None, "file not found")
        return [path]
    found = []
    for file in _listed(path, source):
        _check_regular(file, source)
        if not found and not _has_magic(file):
            raise InputError(source, None, f"a directory is read as a Parquet dataset, but its first file {file} is "
                             "not Parquet (it does not start and end with PAR1); give a qrels or run file's path, or a "
                             "directory of Parquet files (trec_eval cannot read a directory either)")
        found.append(file)
    if not found:
        raise InputError(source, None, "a directory without Parquet files (files named . or _ first are skipped; "
                         "trec_eval cannot read a directory either)")
    return found


def _listed(top: str, source: str) -> Iterator[str]:
    """What lies below a directory but directories, in path order (each directory's names sorted,
    a subdirectory's files in its place), as the dataset reader lists them: names starting with
    ``.`` or ``_`` (Spark's ``_SUCCESS``) are passed over with all below them, and so are symbolic
    links to directories. Lazily: a directory whose first file is refused is walked no further."""
    try:
        with os.scandir(top) as listing:
            entries = sorted(listing, key=lambda e: e.name)
    except OSError as e:
        raise InputError(source, None, f"{_in(top, source)}cannot be listed: {e.strerror or e}") from None
    for entry in entries:
        if entry.name.startswith((".", "_")):
            continue
        if entry.is_dir(follow_symlinks=False):
            yield from _listed(entry.path, source)
        elif not (entry.is_symlink() and entry.is_dir()):
            yield entry.path


_NOT_REGULAR = ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISSOCK, "a socket"),
                (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"))


def _check_regular(file: str, source: str) -> None:
    """Refuse, without opening it, a file of a directory that is not a regular file."""
    try:
        mode = os.stat(file).st_mode
    except OSError as e:
        raise InputError(source, None, f"{file}: cannot be read: {e.strerror or e}") from None
    if not stat.S_ISREG(mode):
        what = next((name for test, name in _NOT_REGULAR if test(mode)), "not a regular file")
        raise InputError(source, None, f"{file} is {what}, not a Parquet file: a directory is read as a Parquet "
                         "dataset of regular files; remove it, or give the Parquet files' own directory")


class _Plan:
    """What is read from one file: its column names per role and their types, checked."""

    def __init__(self, schema: pa.Schema, kind: str, names: dict[str, str], source: str, file: str):
        self.kind, self.names, self.source, self.file = kind, names, source, file
        found = schema.names
        missing = [r for r, n in names.items() if n not in found]
        if missing:
            mapped = {r: names[r] for r in missing if names[r] != r}
            via = f" (columns= names them {mapped})" if mapped else ""
            where = f" in {file}" if file != source else ""
            raise ColumnsError(kind, source, f"missing columns {[names[r] for r in missing]}{via}{where}; expected "
                               f"{', '.join(names)} (found {found})")
        self.types = {r: _value_type(schema.field(n).type) for r, n in names.items()}
        for role, t in self.types.items():
            _check_type(role, t, self.label(role), source)

    def label(self, role: str) -> str:
        name = self.names[role]
        return role if name == role else f"{role} (column {name!r})"


def _value_type(t: pa.DataType) -> pa.DataType:
    return t.value_type if pa.types.is_dictionary(t) else t


def _is_string(t: pa.DataType) -> bool:
    return pa.types.is_string(t) or pa.types.is_large_string(t) or str(t) == "string_view"


def _check_type(role: str, t: pa.DataType, label: str, source: str) -> None:
    if role in ("query_id", "doc_id"):
        if _is_string(t) or pa.types.is_integer(t):
            return
        what = "floats" if pa.types.is_floating(t) else f"of type {t}"
        raise InputError(source, None, f"{label} values are {what}; ids must be strings or integers (convert "
                         "them explicitly, e.g. df[col].astype('Int64').astype(str) before writing)")
    numeric = pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t)
    if not numeric:
        raise InputError(source, None, f"{label} must be numeric, got type {t}")


def _first(mask: np.ndarray) -> int | None:
    at = np.flatnonzero(mask)
    return int(at[0]) if len(at) else None


def _nulls(arr: pa.Array) -> int | None:
    if not arr.null_count:
        return None
    import pyarrow.compute as pc
    return _first(to_numpy(pc.is_null(arr)))


def _utf8_error(arr: pa.Array) -> int | None:
    """The first row whose string is not valid UTF-8 (bisected with Arrow's validation)."""
    try:
        arr.validate(full=True)
        return None
    except pa.ArrowInvalid:
        pass
    lo, n = 0, len(arr)
    while n > 1:
        half = n // 2
        try:
            arr.slice(lo, half).validate(full=True)
            lo, n = lo + half, n - half
        except pa.ArrowInvalid:
            n = half
    return lo


def _ids(arr: pa.Array, role: str, label: str) -> tuple[pa.Array, tuple[int, str] | None]:
    """(the ids as large strings, (first bad row, why) or None)."""
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    null = _nulls(arr)
    if null is not None:
        return arr, (null, f"missing value in column {label}")
    if pa.types.is_integer(arr.type):
        import pyarrow.compute as pc
        return pc.cast(arr, pa.large_string()), None
    arr = arr.cast(pa.large_string())
    bad = _utf8_error(arr)
    if bad is not None:
        return arr, (bad, f"{label} is not valid UTF-8; ids must be UTF-8 text")
    offsets = np.frombuffer(arr.buffers()[1], dtype=np.int64)[arr.offset: arr.offset + len(arr) + 1]
    empty = _first(offsets[1:] == offsets[:-1])
    return arr, (None if empty is None else (empty, f"empty {role}"))


def _values(arr: pa.Array, kind: str, label: str) -> tuple[np.ndarray, tuple[int, str] | None]:
    """(the values as int64 labels or float64 scores, (first bad row, why) or None)."""
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    null = _nulls(arr)
    if null is not None:
        return np.zeros(0), (null, f"missing value in column {label}")
    if pa.types.is_decimal(arr.type):
        arr = arr.cast(pa.float64(), safe=False)
    raw = to_numpy(arr)
    if kind == "run":
        scores = raw.astype(np.float64)
        bad = _first(~np.isfinite(scores))
        why = None if bad is None else (bad, f"{label} must be a finite number, got {float(scores[bad])!r}; NaN or "
                                        "infinite scores have no defined rank")
        return scores, why
    if raw.dtype.kind == "u":
        bad = _first(raw > _INT64_MAX)
        if bad is not None:
            return raw, (bad, f"{label} out of the 64-bit integer range, got {int(raw[bad])}")
    if raw.dtype.kind == "f":
        raw = raw.astype(np.float64)
        bad = _first(~np.isfinite(raw) | (raw != np.round(raw)) | (np.abs(raw) >= 2.0**63))
        if bad is not None:
            return raw, (bad, f"{label} must be an integer, got {float(raw[bad])!r}")
    return raw.astype(np.int64), None


def _parsed(batch: pa.RecordBatch, plan: _Plan, first_row: int, file_row: int) -> Parsed:
    """One batch checked and converted; the first bad row in file order is the error."""
    roles = list(plan.names)
    qids, q_bad = _ids(batch.column(0), roles[0], plan.label(roles[0]))
    docs, d_bad = _ids(batch.column(1), roles[1], plan.label(roles[1]))
    values, v_bad = _values(batch.column(2), plan.kind, plan.label(roles[2]))
    issues = [i for i in (q_bad, d_bad, v_bad) if i is not None]
    if issues:
        row, why = min(issues, key=lambda i: i[0])  # min keeps the column order on one row
        inside = f" ({plan.file}, its row {file_row + row})" if plan.file != plan.source else ""
        raise error_at(plan.source, "row", first_row + row, why + inside)
    line = np.arange(first_row, first_row + batch.num_rows, dtype=np.int64)
    return Parsed(LAYOUTS[plan.kind], qids, docs, values, line)


def parquet_pieces(data: Any, kind: str, columns: Mapping[str, str] | None = None, source: str | None = None,
                   block_bytes: int = BLOCK_BYTES, progress: Callable[[int, int], None] | None = None
                   ) -> Iterator[Parsed]:
    """The rows of a Parquet file or directory as checked pieces of about ``block_bytes //
    BYTES_PER_ROW`` rows, in order (see the module docstring). ``progress(done, total)``: in
    bytes of the files, counted in proportion to the rows read."""
    if isinstance(data, ParquetSource):
        columns = data.columns if columns is None else columns
    path = os.fspath(data)
    source = source or path
    names = column_names(kind, columns)
    rows = max(1, block_bytes // BYTES_PER_ROW)
    files = files_of(path, source)
    scale = _progress_scale(files) if progress is not None else None
    done, pending = 0, []
    for file in files:
        for batch, plan, file_row in _batches(file, kind, names, source, rows):
            pending.append(_parsed(batch, plan, done, file_row))
            done += batch.num_rows
            if sum(len(p) for p in pending) >= rows:
                yield Parsed.joined(pending)
                pending = []
                if scale is not None:
                    progress(int(done * scale[0]), scale[1])
    if pending:
        yield Parsed.joined(pending)
    if scale is not None:
        progress(scale[1], scale[1])


def _progress_scale(files: list[str]) -> tuple[float, int]:
    """(bytes per row, total bytes) of the files, from their footers."""
    import pyarrow.parquet as pq
    total_bytes = sum(os.path.getsize(f) for f in files)
    try:
        total_rows = sum(pq.read_metadata(f).num_rows for f in files)
    except (pa.ArrowException, OSError):
        return 0.0, total_bytes  # the file is opened again below, which names the problem
    return total_bytes / max(total_rows, 1), total_bytes


def _batches(file: str, kind: str, names: dict[str, str], source: str, rows: int
             ) -> Iterator[tuple[pa.RecordBatch, _Plan, int]]:
    """(batch of the columns in ``names``' order, the file's plan, the batch's first row in the
    file) for each batch of one file."""
    import pyarrow.parquet as pq
    try:
        # pre_buffer (pyarrow's default) reads a row group's column chunks ahead into fresh
        # memory: for a local file, twice the time and 150 MB more on a 10M-row run
        pf = pq.ParquetFile(file, pre_buffer=False)
    except FileNotFoundError:
        raise InputError(source, None, "file not found" + ("" if file == source else f": {file}")) from None
    except PermissionError:
        raise InputError(source, None, "permission denied" + ("" if file == source else f": {file}")) from None
    except (pa.ArrowException, OSError) as e:
        raise InputError(source, None, f"{_in(file, source)}not a Parquet file ({e})") from None
    with pf:
        plan = _Plan(pf.schema_arrow, kind, names, source, file)
        wanted = list(names.values())
        file_row = 0
        batches = pf.iter_batches(batch_size=rows, columns=wanted, use_threads=True)
        while True:
            try:
                batch = next(batches, None)
            except (pa.ArrowException, OSError) as e:
                raise InputError(source, None, f"{_in(file, source)}corrupt Parquet data ({e})") from None
            if batch is None:
                return
            yield batch.select(wanted), plan, file_row
            file_row += batch.num_rows


def _in(file: str, source: str) -> str:
    return "" if file == source else f"{file}: "


def check_run_format(run_format: str, source: str) -> None:
    if run_format != "auto":
        raise ValueError(f"run_format={run_format!r} applies to text runs; {source} is Parquet, read by its "
                         f"columns query_id, doc_id, {VALUE_COLUMN['run']}")
