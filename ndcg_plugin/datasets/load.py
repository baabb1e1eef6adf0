"""ir-datasets collections by id: qrels, official measures, and where ir-datasets keeps them.

ir-datasets is imported lazily (it is slow to import and only needed for dataset ids). Data
is loaded through its own API (``ir_datasets.load(id).qrels_iter()``); this module only adds:

- :func:`locate`, where ir-datasets reads a dataset's qrels or queries and what it expects
  there (used to name a missing file, by :func:`info`, and by :mod:`ndcg_plugin.datasets.seed`,
  which places local files there for offline use);
- when ir-datasets has to download a missing file and cannot (offline, or a download that is
  not the file it expects), one line naming the file, why, and the ``seed`` command, instead of
  its warnings and a traceback; its progress while it downloads is shown as it draws it;
- :func:`info`, what is present locally (it never downloads).
"""
from __future__ import annotations

import contextlib
import logging
import os
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from .. import reading
from ..errors import DatasetError


def import_ir_datasets():
    """ir_datasets, imported on first use (slow to import), with its info logging quieted; a
    DatasetError naming IR_DATASETS_HOME when it cannot start (it creates its cache folder on
    import: a read-only place or a regular file there stops it)."""
    logging.getLogger("ir_datasets").setLevel(logging.WARNING)
    for name, default in (("IR_DATASETS_HOME", "~/.ir_datasets"), ("IR_DATASETS_TMP", "the system's temporary folder")):
        if name in os.environ and not os.environ[name].strip():  # ir-datasets would use the current directory
            raise DatasetError(f"{name} is set to the empty string, which ir-datasets would read as the current "
                               f"directory, and create its folders there: unset it (the default is "
                               f"{default}) or set it to a folder")
    try:
        import ir_datasets
    except OSError as e:
        home = os.environ.get("IR_DATASETS_HOME", "~/.ir_datasets (the default)")
        raise DatasetError(f"ir-datasets cannot start: its cache IR_DATASETS_HOME={home} is not a folder it can "
                           f"write ({e.strerror or e}{': ' + e.filename if getattr(e, 'filename', None) else ''}); "
                           f"set IR_DATASETS_HOME to one") from None
    return ir_datasets


def is_dataset_id(text: str) -> bool:
    """True when ``text`` is not an existing path and ir-datasets knows it as a dataset id."""
    if os.path.exists(text) or text == "-":
        return False
    return text in import_ir_datasets().registry


def closest_ids(text: str, n: int = 3) -> list[str]:
    """The ir-datasets ids closest to ``text`` (difflib over the registry), for a "did you mean"."""
    import difflib
    return difflib.get_close_matches(text, list(import_ir_datasets().registry), n=n, cutoff=0.6)


def did_you_mean(text: str) -> str:
    close = closest_ids(text)
    return f"; did you mean {' or '.join(close)}?" if close else ""


def load_dataset(dataset_id: str):
    irds = import_ir_datasets()
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


def stream_layout(handler: Any) -> tuple[Any, bool] | None:
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
    return getattr(stream, "_streamer", None)  # ir-datasets private: see stream_layout


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


def dataset_handler(dataset_id: str, kind: str) -> Any:
    ds = load_dataset(dataset_id)
    has = ds.has_qrels() if kind == "qrels" else ds.has_queries()
    if not has:
        raise DatasetError(f"ir-datasets id {dataset_id!r} provides no {kind}")
    return ds.qrels_handler() if kind == "qrels" else ds.queries_handler()


def _owner(dataset_id: str, kind: str, path: Path) -> str:
    """The dataset (this one or an ancestor id) that reads the file at ``path`` as its own."""
    registry = import_ir_datasets().registry
    parts = dataset_id.split("/")
    for i in range(len(parts) - 1, 0, -1):
        parent = "/".join(parts[:i])
        if parent not in registry:
            continue
        try:
            found = stream_layout(dataset_handler(parent, kind))
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
    found = stream_layout(dataset_handler(dataset_id, kind))
    if found is None:
        return None
    target = _target(found[0], dataset_id)
    if target is not None:  # a parent may read the same file: through this handler, or with its own
        target.owner = _owner(dataset_id, kind, target.path)
    return target


class _HoldBack(logging.Filter):
    """ir-datasets' log records while it may download, sorted so that a failed download ends in
    one line of ours: records about failed attempts (warnings such as "Download failed: ...",
    retries "download error: ... Retrying", a progress bar's "[error]") are held back; notices
    (a data usage agreement, where a local copy could go) are held until a download really
    starts ("[starting] URL"), then shown before its progress, which passes as it comes."""

    def __init__(self, logger: logging.Logger) -> None:
        super().__init__()
        self.logger = logger
        self.started = False
        self.notices: list[logging.LogRecord] = []
        self.failures: list[logging.LogRecord] = []

    def filter(self, record: logging.LogRecord) -> bool:
        text = record.getMessage()
        if record.levelno >= logging.WARNING or text.startswith(("download error", "[error]")):
            self.failures.append(record)
            return False
        if not self.started and text.startswith("[starting]"):
            self.release_notices()
        if not self.started:
            self.notices.append(record)
            return False
        return True

    def release_notices(self) -> None:
        self.started = True
        for record in self.notices:
            self.logger.handle(record)
        self.notices = []


@contextlib.contextmanager
def _failures_held_back() -> Iterator[None]:
    """Within: ir-datasets' records sorted by :class:`_HoldBack`. When the block succeeds, what
    was held back is shown after it (nothing is lost when a download works); when it raises,
    it is dropped, for the caller's one line."""
    logger = logging.getLogger("ir_datasets")
    hold = _HoldBack(logger)
    logger.addFilter(hold)
    try:
        yield
        hold.release_notices()
    finally:
        logger.removeFilter(hold)
    for record in hold.failures:
        logger.handle(record)


def _source_errors(error: BaseException) -> list[BaseException]:
    """The error of each source a failed ir-datasets download tried: ir-datasets raises the one
    source's own error, or ``RuntimeError('All download sources failed', [(source, error), ...])``
    when there were several (checked against the pinned version by tests/test_datasets.py)."""
    if isinstance(error, RuntimeError) and len(error.args) == 2 and isinstance(error.args[1], list):
        found = [item[1] for item in error.args[1]
                 if isinstance(item, tuple) and len(item) == 2 and isinstance(item[1], BaseException)]
        # a local copy ir-datasets looks for first (IR_DATASETS_HOME/downloads/MD5) is no news
        return [e for e in found if not isinstance(e, FileNotFoundError)] or found or [error]
    return [error]


def _reason(error: BaseException) -> str:
    """One short line for one source's error."""
    import requests  # what ir-datasets downloads with

    url = getattr(getattr(error, "request", None), "url", None)
    if isinstance(error, requests.RequestException) and not isinstance(error, requests.HTTPError) and url:
        return f"{type(error).__name__} for {url}"
    text = " ".join(str(error).split())
    text = text if len(text) <= 200 else text[:197] + "..."
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def _failure(dataset_id: str, target: Target | None, error: Exception) -> str:
    """The one line for a failure to load a dataset's qrels through ir-datasets."""
    from ir_datasets.util import HashVerificationError

    seed = f"ndcg-plugin datasets seed {dataset_id} --qrels FILE"
    errors = _source_errors(error)
    reasons = "; ".join(dict.fromkeys(_reason(e) for e in errors))
    if target is not None and not target.path.exists():
        if any(isinstance(e, HashVerificationError) for e in errors):
            return (f"ir-datasets downloaded the qrels of {dataset_id}, but not the file it expects ({reasons}); "
                    f"nothing was placed at {target.path}; try again later, or place a local copy with: {seed}")
        return (f"the qrels of {dataset_id} are not in the ir-datasets cache (missing file {target.path}) and "
                f"ir-datasets could not download them ({reasons}); place a local copy with: {seed}")
    return f"could not load the qrels of {dataset_id} through ir-datasets ({reasons}); offline, seed them with: {seed}"


def load_qrels(dataset_id: str) -> pd.DataFrame:
    """The dataset's qrels as a validated table (see :func:`ndcg_plugin.reading.read`). When they
    are not in its cache, ir-datasets downloads them (showing its progress on stderr); when that
    fails, one :class:`DatasetError` line names the missing file, why, and the ``seed`` command."""
    target = locate(dataset_id, "qrels")
    ds = load_dataset(dataset_id)
    try:
        with _failures_held_back():
            rows = [(q.query_id, q.doc_id, q.relevance) for q in ds.qrels_iter()]
    except Exception as e:  # ir-datasets raises many kinds when a download fails
        raise DatasetError(_failure(dataset_id, target, e)) from None
    table = pd.DataFrame(rows, columns=["query_id", "doc_id", "relevance"])
    return reading.read(table, "qrels", source=f"ir-datasets {dataset_id} qrels")


def official_measures(dataset_id: str) -> list[str]:
    """The measures ir-datasets documents as official for this dataset (may be empty)."""
    docs = load_dataset(dataset_id).documentation() or {}
    return list(docs.get("official_measures") or [])


def info(dataset_id: str) -> dict:
    """What is known and present locally for a dataset id."""
    out: dict = {"dataset": dataset_id, "official_measures": official_measures(dataset_id)}
    ds = load_dataset(dataset_id)
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
