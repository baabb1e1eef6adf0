"""Error types and the names every module shares, with no heavy imports (the CLI imports them
at startup)."""
from __future__ import annotations

from typing import Literal

Kind = Literal["qrels", "run"]
VALUE_COLUMN = {"qrels": "relevance", "run": "score"}


class InputError(ValueError):
    """Bad qrels or run input.  Carries ``source`` (file name or input description), ``line``
    (1-based for files, row position for in-memory inputs, or None) and ``reason``."""

    def __init__(self, source: str, line: int | None, reason: str, text: str | None = None):
        self.source, self.line, self.reason, self.text = source, line, reason, text
        where = source if line is None else f"{source}:{line}"
        msg = f"{where}: {reason}"
        if text is not None:
            shown = text if len(text) <= 120 else text[:117] + "..."
            msg += f" (line: {shown!r})"
        super().__init__(msg)


#: the end of a message about a repeated (query, doc) pair: how a Python caller keeps one copy (the
#: command line says its option instead: :func:`ndcg_plugin.cli.messages.for_cli`)
DUPLICATES_HINT = "pass duplicates='first' or 'max' to keep one"


class ColumnsError(InputError):
    """A Parquet file (or a Spark one) without the columns asked for. ``kind``: 'qrels' or 'run';
    ``found``: what is missing and what is there. The message ends with how a Python caller names
    the columns (``columns=``); the command line names its option instead (``--run-columns``)."""

    def __init__(self, kind: str, source: str, found: str):
        self.kind, self.found = kind, found
        super().__init__(source, None, f"{found}; name them with columns={{'query_id': COLUMN, ...}}")


class DatasetError(ValueError):
    """A dataset id that cannot be used: unknown, without qrels, or not in the local cache."""


class Unsupported(ValueError):
    """A measure family, or a variant of one, that a backend does not implement: refused by name,
    never computed as something else."""


class UsageError(Exception):
    """A problem with what the user asked for, reported in one line with exit status 2."""
