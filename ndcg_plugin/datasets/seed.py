"""Offline seeding of the ir-datasets cache: :func:`seed` places local files where ir-datasets
reads them for a dataset (under ``IR_DATASETS_HOME``), in the form it reads them (plain or
gzip), verifying the md5 that ir-datasets records when the file is placed byte for byte, and the
counts ir-datasets records (lines, queries, relevance levels) when the file had to be transformed
or no md5 is recorded. Where a file goes is :func:`ndcg_plugin.datasets.load.locate`'s answer."""
from __future__ import annotations

import gzip
import hashlib
import json
import os
import tempfile
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from ..errors import DatasetError, InputError
from .load import Target, import_ir_datasets, load_dataset, locate


def _metadata(dataset_id: str, kind: str) -> dict:
    irds = import_ir_datasets()
    meta_path = Path(irds.__file__).parent / "etc" / "metadata.json"
    try:
        meta = json.loads(meta_path.read_text())
    except OSError:
        return {}
    entry = meta.get(dataset_id, {}).get(kind, {})
    while "_ref" in entry:
        entry = meta.get(entry["_ref"], {}).get(kind, {})
    return entry


@dataclass
class Seeded:
    kind: str
    path: Path
    check: str  # what was verified


def _counts(owner: str, kind: str, text: str, source: str) -> tuple[bool, str]:
    """(whether the content has the counts ir-datasets records for ``owner``, a summary)."""
    from .. import reading

    meta = _metadata(owner, kind)
    if kind == "qrels":
        table = reading.read(text.encode("utf-8"), "qrels", source=source)  # bytes: the content, never a path
        counts = Counter(table["relevance"].tolist())
        summary = f"{len(table)} judgments, {table['query_id'].nunique()} queries"
        expected = meta.get("count")
        by_value = meta.get("fields", {}).get("relevance", {}).get("counts_by_value")
        if expected is not None and expected != len(table):
            return False, f"{summary}, but ir-datasets records {expected} judgments for {owner}"
        if by_value and {int(k): v for k, v in by_value.items()} != dict(counts):
            return False, (f"relevance levels {dict(sorted(counts.items()))} differ from the "
                           f"{dict(sorted((int(k), v) for k, v in by_value.items()))} ir-datasets records for {owner}")
        return expected is not None, summary + (", counts match ir-datasets' metadata" if expected else "")
    lines = [line for line in text.splitlines() if line.strip()]
    bad = next((i for i, line in enumerate(lines, 1) if "\t" not in line), None)
    if bad is not None:
        raise DatasetError(f"{source}:{bad}: expected 'query_id<TAB>text' in a queries file")
    expected = meta.get("count")
    if expected is not None and expected != len(lines):
        return False, f"{len(lines)} queries, but ir-datasets records {expected} for {owner}"
    return expected is not None, f"{len(lines)} queries" + (", count matches ir-datasets' metadata" if expected else "")


def _expected(target: Target, dataset_id: str, kind: str) -> str:
    """What ir-datasets expects at the target, in words, for error messages."""
    parts = []
    if target.download:
        md5 = f" (md5 {target.download_md5})" if target.download_md5 else ""
        parts.append(f"the official {target.download}{md5}")
    if target.md5:
        parts.append(f"a file with md5 {target.md5}")
    count = _metadata(target.owner, kind).get("count")
    if count is not None:
        parts.append(f"{count} {'judgments' if kind == 'qrels' else 'queries'}")
    whose = target.owner if target.owner == dataset_id else f"{target.owner} (whose file {dataset_id} reads)"
    return f"ir-datasets expects {' or '.join(parts) or 'another file'} at {target.path} for {whose}"


def write_atomically(path: Path, data: bytes) -> None:
    """Through a temporary file in the same folder and a rename: an interrupted seed leaves
    nothing half-written (and what a killed seed left is removed by the next one); the file gets
    the usual permissions (0644 under umask 022); a failure is one DatasetError."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        _remove_stale_parts(path)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.{os.getpid()}.", suffix=".part")
    except OSError as e:
        raise DatasetError(f"{path}: cannot write there ({e.strerror or e}); nothing was placed") from None
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except BaseException as e:
        if os.path.exists(tmp):
            os.unlink(tmp)
        if isinstance(e, OSError):
            raise DatasetError(f"{path}: cannot write it ({e.strerror or e}); nothing was placed") from None
        raise


def _remove_stale_parts(path: Path) -> None:
    """Remove the temporary files of seeds of ``path`` that ended without cleaning up (killed):
    those of a process that no longer runs, and those of an earlier version, which named none."""
    for part in path.parent.glob(f".{path.name}.*.part"):
        pid = part.name[len(path.name) + 2:].split(".", 1)[0]
        if pid.isdigit():
            try:
                os.kill(int(pid), 0)
                continue  # that seed is still running
            except ProcessLookupError:
                pass
            except PermissionError:
                continue  # a process of another user
        try:
            part.unlink()
        except OSError:
            pass


def _place(dataset_id: str, kind: str, source: Path, force: bool) -> Seeded:
    """Check a local file against what ir-datasets expects for the file it would be placed as,
    and place it. Accepted: the official download (its md5), the file byte for byte (the md5
    recorded for it, also after CRLF line ends are made LF), or a file with the counts the
    owning dataset records. Anything else is refused, naming what is expected; ``force``
    places it anyway, but never over a file another dataset owns."""
    target = locate(dataset_id, kind)
    if target is None:
        raise DatasetError(f"cannot tell where ir-datasets keeps the {kind} of {dataset_id}; seeding it is not "
                           f"supported (place the file under IR_DATASETS_HOME by hand)")
    try:
        raw = source.read_bytes()
    except OSError as e:
        raise DatasetError(f"{source}: {e.strerror or e}") from None
    is_gz = raw[:2] == b"\x1f\x8b"
    try:
        plain = gzip.decompress(raw) if is_gz else raw
    except (OSError, EOFError) as e:
        raise DatasetError(f"{source}: corrupt gzip data ({e})") from None
    data, check = _by_checksum(target, raw, plain, is_gz)
    if data is not None:
        check += "; " + _counts(target.owner, kind, plain.decode("utf-8-sig"), str(source))[1]
    else:
        data, check = _by_content(target, dataset_id, kind, source, plain, hashlib.md5(raw).hexdigest(), force)
    write_atomically(target.path, data)
    return Seeded(kind, target.path, check)


def _in_target_form(target: Target, content: bytes) -> bytes:
    return gzip.compress(content, mtime=0) if target.gzipped else content


def _by_checksum(target: Target, raw: bytes, plain: bytes, is_gz: bool) -> tuple[bytes | None, str | None]:
    """(the bytes to place, why they are right) when an md5 ir-datasets records shows the file is
    the one it expects; (None, None) otherwise."""
    got_md5 = hashlib.md5(raw).hexdigest()
    lf = plain.replace(b"\r\n", b"\n") if b"\r\n" in plain else None
    if target.download_md5 and got_md5 == target.download_md5 and target.gzipped == is_gz:
        return raw, f"md5 {got_md5} is the official {target.download or 'download'}"
    if target.download_md5 and got_md5 == target.download_md5:
        return _in_target_form(target, plain), (f"md5 {got_md5} is the official {target.download or 'download'}, "
                                                + ("gzipped" if target.gzipped else "decompressed")
                                                + " as ir-datasets reads it")
    if target.md5 and hashlib.md5(_in_target_form(target, plain) if not target.gzipped else raw).hexdigest() \
            == target.md5:
        return (raw if target.gzipped else plain), f"md5 {target.md5} matches ir-datasets"
    if target.md5 and lf is not None and hashlib.md5(_in_target_form(target, lf)).hexdigest() == target.md5:
        return _in_target_form(target, lf), f"CRLF line ends made LF: md5 {target.md5} then matches ir-datasets"
    return None, None


def _by_content(target: Target, dataset_id: str, kind: str, source: Path, plain: bytes, got_md5: str,
                force: bool) -> tuple[bytes, str]:
    """(the bytes to place, why) for a file no recorded md5 vouches for: its counts match what
    the owning dataset records (when no md5 is recorded), or ``force``; else a DatasetError."""
    try:
        ok, summary = _counts(target.owner, kind, plain.decode("utf-8-sig", errors="replace"), str(source))
    except InputError as e:
        ok, summary = False, (f"line {e.line}: {e.reason}" if e.line is not None else e.reason)
    recorded_md5 = target.md5 and not target.gzipped
    if ok and not recorded_md5:
        return _in_target_form(target, plain), "checked by content: " + summary
    reasons = [] if ok else [summary]
    if recorded_md5:
        reasons.append(f"md5 {got_md5} is not what ir-datasets records")
    why = "; ".join(reasons) or summary
    optional = "; queries are optional for evaluation: leave out --queries" if kind == "queries" else ""
    if target.owner != dataset_id:
        raise DatasetError(f"{source}: {why}. {_expected(target, dataset_id, kind)}; a different file "
                           f"there would change {target.owner} too, so it is not placed, not even with "
                           f"--force{optional}")
    if not force:
        raise DatasetError(f"{source}: {why}. {_expected(target, dataset_id, kind)} (--force places it "
                           f"anyway){optional}")
    return _in_target_form(target, plain), f"placed despite: {why} (--force)"


def seed(dataset_id: str, qrels: str | Path | None = None, queries: str | Path | None = None,
         force: bool = False) -> Iterator[Seeded]:
    """Place local qrels and/or queries files where ir-datasets reads them for ``dataset_id``,
    yielding each file as it is placed (so a caller can say what was placed before an error)."""
    if qrels is None and queries is None:
        raise DatasetError("nothing to seed: give --qrels FILE and/or --queries FILE")
    load_dataset(dataset_id)  # an unknown id fails before anything is placed
    if qrels is not None:
        yield _place(dataset_id, "qrels", Path(qrels), force)
    if queries is not None:
        yield _place(dataset_id, "queries", Path(queries), force)
