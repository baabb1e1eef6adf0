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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from . import io


class DatasetError(ValueError):
    """A dataset id that cannot be used: unknown, without qrels, or not in the local cache."""


def _irds():
    logging.getLogger("ir_datasets").setLevel(logging.WARNING)
    import ir_datasets
    return ir_datasets


def is_dataset_id(text: str) -> bool:
    """True when ``text`` is not an existing path and ir-datasets knows it as a dataset id."""
    if os.path.exists(text) or text == "-":
        return False
    return text in _irds().registry


def _load(dataset_id: str):
    irds = _irds()
    if dataset_id not in irds.registry:
        close = [d for d in irds.registry._registered if d.startswith(dataset_id.split("/")[0])][:5]
        hint = f"; did you mean one of {close}?" if close else ""
        raise DatasetError(f"unknown ir-datasets id {dataset_id!r}{hint}")
    return irds.load(dataset_id)


@dataclass
class Target:
    """Where ir-datasets reads a file: its cache path, whether it reads it gzipped, the md5 it
    records for the file at that path (None if none), and the dataset whose metadata counts it."""
    path: Path
    gzipped: bool
    md5: str | None


def _target(stream: Any) -> Target | None:
    from ir_datasets.util.download import Download
    from ir_datasets.util.fileio import Cache, GzipExtract
    if isinstance(stream, Cache):
        return Target(Path(stream._path), False, None)
    if isinstance(stream, GzipExtract):
        inner = _target(stream._streamer)
        return None if inner is None else Target(inner.path, True, inner.md5)
    if isinstance(stream, Download) and stream._cache_path:
        return Target(Path(stream._cache_path), False, stream.expected_md5)
    return None


def _stream_of(handler: Any) -> Any:
    for attr in ("_qrels_dlc", "_dlc"):
        if hasattr(handler, attr) and not isinstance(getattr(handler, attr), (list, tuple)):
            return getattr(handler, attr)
    for attr in ("_qrels_handler", "_queries_handler"):
        if hasattr(handler, attr):
            return _stream_of(getattr(handler, attr))
    return None


def locate(dataset_id: str, kind: str) -> Target | None:
    """Where ir-datasets reads the qrels (``kind="qrels"``) or queries of a dataset, or None
    when the dataset is built in a way this module does not know."""
    ds = _load(dataset_id)
    has = ds.has_qrels() if kind == "qrels" else ds.has_queries()
    if not has:
        raise DatasetError(f"ir-datasets id {dataset_id!r} provides no {kind}")
    handler = ds.qrels_handler() if kind == "qrels" else ds.queries_handler()
    stream = _stream_of(handler)
    return None if stream is None else _target(stream)


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
    """The dataset's qrels as a validated table (see :func:`ndcg_plugin.io.read`)."""
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
    return io.read(table, "qrels", source=f"ir-datasets {dataset_id} qrels")


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


def _content_check(dataset_id: str, kind: str, text: str, source: str) -> str:
    """Compare a file's content with the counts ir-datasets records; return a summary or raise."""
    meta = _metadata(dataset_id, kind)
    if kind == "qrels":
        table = io.read(text, "qrels", source=source)
        counts = Counter(table["relevance"].tolist())
        summary = f"{len(table)} judgments, {table['query_id'].nunique()} queries"
        expected = meta.get("count")
        if expected is not None and expected != len(table):
            raise DatasetError(f"{source}: {len(table)} judgments, but ir-datasets records {expected} for "
                               f"{dataset_id}; is this the right file? (--force places it anyway)")
        by_value = meta.get("fields", {}).get("relevance", {}).get("counts_by_value")
        if by_value and {int(k): v for k, v in by_value.items()} != dict(counts):
            raise DatasetError(f"{source}: relevance levels {dict(sorted(counts.items()))} differ from the "
                               f"{dict(sorted((int(k), v) for k, v in by_value.items()))} ir-datasets records for "
                               f"{dataset_id} (--force places it anyway)")
        return summary + ", counts match ir-datasets' metadata" if expected else summary
    lines = [line for line in text.splitlines() if line.strip()]
    bad = next((i for i, line in enumerate(lines, 1) if "\t" not in line), None)
    if bad is not None:
        raise DatasetError(f"{source}:{bad}: expected 'query_id<TAB>text' in a queries file")
    expected = meta.get("count")
    if expected is not None and expected != len(lines):
        raise DatasetError(f"{source}: {len(lines)} queries, but ir-datasets records {expected} for {dataset_id} "
                           f"(--force places it anyway)")
    return f"{len(lines)} queries" + (", count matches ir-datasets' metadata" if expected else "")


def _place(dataset_id: str, kind: str, source: Path, force: bool) -> Seeded:
    target = locate(dataset_id, kind)
    if target is None:
        raise DatasetError(f"cannot tell where ir-datasets keeps the {kind} of {dataset_id}; seeding it is not "
                           f"supported (place the file under IR_DATASETS_HOME by hand)")
    try:
        raw = source.read_bytes()
    except OSError as e:
        raise DatasetError(f"{source}: {e.strerror or e}") from None
    is_gz = raw[:2] == b"\x1f\x8b"
    byte_for_byte = is_gz == target.gzipped
    if byte_for_byte:
        data = raw
    elif is_gz:
        data = gzip.decompress(raw)
    else:
        data = gzip.compress(raw, mtime=0)
    text = (gzip.decompress(data) if target.gzipped else data).decode("utf-8-sig")
    if byte_for_byte and target.md5:
        got = hashlib.md5(data).hexdigest()
        if got != target.md5:
            if not force:
                raise DatasetError(f"{source}: md5 {got} differs from the {target.md5} ir-datasets records for "
                                   f"{target.path.name} of {dataset_id}; this is not the file it expects "
                                   f"(--force places it anyway)")
            check = f"md5 {got} differs from {target.md5}: placed anyway (--force)"
        else:
            check = f"md5 {got} matches ir-datasets"
        try:
            check += "; " + _content_check(dataset_id, kind, text, str(source))
        except (DatasetError, io.InputError) as e:
            if not force:
                raise
            check += f"; {e}"
    else:
        try:
            check = ("transformed (" + ("gzipped" if target.gzipped else "decompressed") + "), so checked by content: "
                     if not byte_for_byte else "no md5 recorded, checked by content: ")
            check += _content_check(dataset_id, kind, text, str(source))
        except (DatasetError, io.InputError) as e:
            if not force:
                raise
            check = f"placed despite: {e} (--force)"
    target.path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(dir=target.path.parent, delete=False) as tmp:
        tmp.write(data)
    os.replace(tmp.name, target.path)
    return Seeded(kind, target.path, check)


def seed(dataset_id: str, qrels: str | Path | None = None, queries: str | Path | None = None,
         force: bool = False) -> list[Seeded]:
    """Place local qrels and/or queries files where ir-datasets reads them for ``dataset_id``."""
    if qrels is None and queries is None:
        raise DatasetError("nothing to seed: give --qrels FILE and/or --queries FILE")
    done = []
    if qrels is not None:
        done.append(_place(dataset_id, "qrels", Path(qrels), force))
    if queries is not None:
        done.append(_place(dataset_id, "queries", Path(queries), force))
    return done


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
