"""ir-datasets collections by id: qrels, official measures, and offline seeding of the cache.

ir-datasets is imported lazily (it is slow to import and only needed for dataset ids). Data
is loaded through its own API (``ir_datasets.load(id).qrels_iter()``); this module only adds:

- a check, before loading, that the files ir-datasets will read are in its cache, so that an
  offline machine gets one message naming the missing file and the ``seed`` command instead
  of a page of download attempts;
- :func:`seed`, which places local files where ir-datasets looks for them (under
  ``IR_DATASETS_HOME``), in the form it reads them (plain or gzip), verifying the md5 that
  ir-datasets records when the file is placed byte for byte, and the counts ir-datasets
  records (lines, queries, relevance levels) when the file had to be transformed or no md5
  is recorded;
- :func:`info`, what is present locally.
"""
from __future__ import annotations

import gzip
import hashlib
import json
import logging
import os
import tempfile
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from . import reading
from .errors import DatasetError


def _irds():
    logging.getLogger("ir_datasets").setLevel(logging.WARNING)
    import ir_datasets
    return ir_datasets


def is_dataset_id(text: str) -> bool:
    """True when ``text`` is not an existing path and ir-datasets knows it as a dataset id."""
    if os.path.exists(text) or text == "-":
        return False
    return text in _irds().registry


def closest_ids(text: str, n: int = 3) -> list[str]:
    """The ir-datasets ids closest to ``text`` (difflib over the registry), for a "did you mean"."""
    import difflib
    return difflib.get_close_matches(text, list(_irds().registry), n=n, cutoff=0.6)


def did_you_mean(text: str) -> str:
    close = closest_ids(text)
    return f"; did you mean {' or '.join(close)}?" if close else ""


def _load(dataset_id: str):
    irds = _irds()
    if dataset_id not in irds.registry:
        raise DatasetError(f"unknown ir-datasets id {dataset_id!r}{did_you_mean(dataset_id)}")
    return irds.load(dataset_id)


@dataclass
class Target:
    """Where ir-datasets reads a file, and what it expects there.

    ``path`` and ``gzipped``: the cache file and whether it is read gzipped; ``md5``: the md5
    ir-datasets records for that very file (None if none); ``owner``: the dataset whose own file
    it is (a filtered dataset such as ``.../judged`` reads its parent's files); ``download`` and
    ``download_md5``: the file ir-datasets would download to make it, and its md5."""
    path: Path
    gzipped: bool
    md5: str | None
    owner: str
    download: str | None = None
    download_md5: str | None = None


def _layout(handler: Any) -> tuple[Any, bool] | None:
    """(the stream a qrels or queries handler reads, whether it reads it through another
    dataset's handler). The one place that reads ir-datasets' private attributes (it has no
    public API for where a handler's data comes from); tests/test_datasets.py checks it
    against the pinned ir-datasets."""
    wrapped = False
    while handler is not None:
        for attr in ("_qrels_dlc", "_dlc"):
            stream = getattr(handler, attr, None)
            if stream is not None and not isinstance(stream, (list, tuple)):
                return stream, wrapped
        handler = getattr(handler, "_qrels_handler", None) or getattr(handler, "_queries_handler", None)
        wrapped = True
    return None


def _inner(stream: Any) -> Any:
    return getattr(stream, "_streamer", None)  # ir-datasets private: see _layout


def _target(stream: Any, owner: str) -> Target | None:
    from ir_datasets.util.download import Download
    from ir_datasets.util.fileio import Cache, GzipExtract

    def download_of(s):
        while s is not None and not isinstance(s, Download):
            s = _inner(s)
        if s is None:
            return None, None
        urls = [getattr(m, "url", "") for m in getattr(s, "mirrors", [])]
        name = os.path.basename(urls[0].split("?")[0]) if urls and urls[0] else None
        return name, s.expected_md5

    if isinstance(stream, Cache):
        name, md5 = download_of(_inner(stream))
        return Target(Path(stream.path(force=False)), False, None, owner, name, md5)
    if isinstance(stream, GzipExtract):
        inner = _target(_inner(stream), owner)
        return None if inner is None else Target(inner.path, True, inner.md5, owner, inner.download,
                                                 inner.download_md5)
    if isinstance(stream, Download):
        path = stream.path(force=False)
        if path is None or not os.path.isabs(str(path)):
            return None
        name, md5 = download_of(stream)
        return Target(Path(path), False, stream.expected_md5, owner, name, md5)
    return None


def _handler(dataset_id: str, kind: str) -> Any:
    ds = _load(dataset_id)
    has = ds.has_qrels() if kind == "qrels" else ds.has_queries()
    if not has:
        raise DatasetError(f"ir-datasets id {dataset_id!r} provides no {kind}")
    return ds.qrels_handler() if kind == "qrels" else ds.queries_handler()


def _owner(dataset_id: str, kind: str, path: Path) -> str:
    """The dataset (this one or an ancestor id) that reads the file at ``path`` as its own."""
    registry = _irds().registry
    parts = dataset_id.split("/")
    for i in range(len(parts) - 1, 0, -1):
        parent = "/".join(parts[:i])
        if parent not in registry:
            continue
        try:
            found = _layout(_handler(parent, kind))
        except DatasetError:
            continue
        if found is not None and not found[1]:
            target = _target(found[0], parent)
            if target is not None and target.path == path:
                return parent
    return dataset_id


def locate(dataset_id: str, kind: str) -> Target | None:
    """Where ir-datasets reads the qrels (``kind="qrels"``) or queries of a dataset, and what it
    expects there; None when the dataset is built in a way this module does not know."""
    found = _layout(_handler(dataset_id, kind))
    if found is None:
        return None
    target = _target(found[0], dataset_id)
    if target is not None and found[1]:
        target.owner = _owner(dataset_id, kind, target.path)
    return target


def _metadata(dataset_id: str, kind: str) -> dict:
    irds = _irds()
    meta_path = Path(irds.__file__).parent / "etc" / "metadata.json"
    try:
        meta = json.loads(meta_path.read_text())
    except OSError:
        return {}
    entry = meta.get(dataset_id, {}).get(kind, {})
    while "_ref" in entry:
        entry = meta.get(entry["_ref"], {}).get(kind, {})
    return entry


def _missing_message(dataset_id: str, kind: str, path: Path) -> str:
    flag = "--qrels" if kind == "qrels" else "--queries"
    return (f"the {kind} of {dataset_id} are not in the ir-datasets cache (missing file {path}) and cannot "
            f"be downloaded here; place a local copy with: ndcg-plugin datasets seed {dataset_id} {flag} FILE")


def load_qrels(dataset_id: str) -> pd.DataFrame:
    """The dataset's qrels as a validated table (see :func:`ndcg_plugin.reading.read`)."""
    target = locate(dataset_id, "qrels")
    if target is not None and not target.path.exists():
        raise DatasetError(_missing_message(dataset_id, "qrels", target.path))
    ds = _load(dataset_id)
    try:
        rows = [(q.query_id, q.doc_id, q.relevance) for q in ds.qrels_iter()]
    except Exception as e:  # ir-datasets raises many kinds when offline
        raise DatasetError(f"could not load the qrels of {dataset_id} through ir-datasets ({type(e).__name__}: "
                           f"{e}); offline, seed them with: ndcg-plugin datasets seed {dataset_id} "
                           f"--qrels FILE") from None
    table = pd.DataFrame(rows, columns=["query_id", "doc_id", "relevance"])
    return reading.read(table, "qrels", source=f"ir-datasets {dataset_id} qrels")


def official_measures(dataset_id: str) -> list[str]:
    """The measures ir-datasets documents as official for this dataset (may be empty)."""
    docs = _load(dataset_id).documentation() or {}
    return list(docs.get("official_measures") or [])


# --- seeding ----------------------------------------------------------------------------------

@dataclass
class Seeded:
    kind: str
    path: Path
    check: str  # what was verified


def _md5(path: Path) -> str:
    h = hashlib.md5()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _counts(owner: str, kind: str, text: str, source: str) -> tuple[bool, str]:
    """(whether the content has the counts ir-datasets records for ``owner``, a summary)."""
    from . import reading

    meta = _metadata(owner, kind)
    if kind == "qrels":
        table = reading.read(text, "qrels", source=source)
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


def _write(path: Path, data: bytes) -> None:
    """Through a temporary file in the same folder and a rename: an interrupted seed leaves
    nothing half-written; the file gets the usual permissions (0644 under umask 022)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".part")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _place(dataset_id: str, kind: str, source: Path, force: bool) -> Seeded:
    """Check a local file against what ir-datasets expects for the file it would be placed as,
    and place it. Accepted: the official download (its md5), the file byte for byte (the md5
    recorded for it, also after CRLF line ends are made LF), or a file with the counts the
    owning dataset records. Anything else is refused, naming what is expected; ``force``
    places it anyway, but never over a file another dataset owns."""
    from . import reading

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
    got_md5 = hashlib.md5(raw).hexdigest()
    lf = plain.replace(b"\r\n", b"\n") if b"\r\n" in plain else None

    def in_target_form(content: bytes) -> bytes:
        return gzip.compress(content, mtime=0) if target.gzipped else content

    data, check = None, None
    if target.download_md5 and got_md5 == target.download_md5 and target.gzipped == is_gz:
        data, check = raw, f"md5 {got_md5} is the official {target.download or 'download'}"
    elif target.download_md5 and got_md5 == target.download_md5:
        data = in_target_form(plain)
        check = f"md5 {got_md5} is the official {target.download or 'download'}, " + (
            "gzipped" if target.gzipped else "decompressed") + " as ir-datasets reads it"
    elif target.md5 and hashlib.md5(in_target_form(plain) if not target.gzipped else raw).hexdigest() == target.md5:
        data, check = (raw if target.gzipped else plain), f"md5 {target.md5} matches ir-datasets"
    elif target.md5 and lf is not None and hashlib.md5(in_target_form(lf)).hexdigest() == target.md5:
        data, check = in_target_form(lf), f"CRLF line ends made LF: md5 {target.md5} then matches ir-datasets"
    if data is not None:
        text = plain.decode("utf-8-sig")
        check += "; " + _counts(target.owner, kind, text, str(source))[1]
    else:
        text = plain.decode("utf-8-sig", errors="replace")
        try:
            ok, summary = _counts(target.owner, kind, text, str(source))
        except reading.InputError as e:
            ok, summary = False, str(e)
        recorded_md5 = target.md5 and not target.gzipped
        if ok and not recorded_md5:
            data, check = in_target_form(plain), "checked by content: " + summary
        else:
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
            data, check = in_target_form(plain), f"placed despite: {why} (--force)"
    _write(target.path, data)
    return Seeded(kind, target.path, check)


def seed(dataset_id: str, qrels: str | Path | None = None, queries: str | Path | None = None,
         force: bool = False) -> Iterator[Seeded]:
    """Place local qrels and/or queries files where ir-datasets reads them for ``dataset_id``,
    yielding each file as it is placed (so a caller can say what was placed before an error)."""
    if qrels is None and queries is None:
        raise DatasetError("nothing to seed: give --qrels FILE and/or --queries FILE")
    _load(dataset_id)  # an unknown id fails before anything is placed
    if qrels is not None:
        yield _place(dataset_id, "qrels", Path(qrels), force)
    if queries is not None:
        yield _place(dataset_id, "queries", Path(queries), force)


def info(dataset_id: str) -> dict:
    """What is known and present locally for a dataset id."""
    out: dict = {"dataset": dataset_id, "official_measures": official_measures(dataset_id)}
    ds = _load(dataset_id)
    for kind in ("qrels", "queries"):
        if not (ds.has_qrels() if kind == "qrels" else ds.has_queries()):
            out[kind] = None
            continue
        target = locate(dataset_id, kind)
        entry: dict = {"path": str(target.path) if target else None,
                       "present": bool(target and target.path.exists())}
        if entry["present"] and kind == "qrels":
            table = load_qrels(dataset_id)
            entry.update(judgments=len(table), queries=int(table["query_id"].nunique()),
                         relevance_levels={int(k): int(v) for k, v in
                                           sorted(Counter(table["relevance"].tolist()).items())})
        elif entry["present"]:
            entry["count"] = sum(1 for _ in ds.queries_iter())
        out[kind] = entry
    return out
