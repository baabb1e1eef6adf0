"""Error messages as the command line prints them: one line (a library's message may hold a
newline: a Parquet thrift error does), and in the command line's words where a message tells a
Python caller which keyword to pass (``duplicates=``, ``columns=``)."""
from __future__ import annotations

from ..errors import DUPLICATES_HINT, ColumnsError

#: the command line's words for the hint the readers write for Python callers
CLI_DUPLICATES_HINT = "pass --duplicates first|max to keep one"


def one_line(text: str) -> str:
    """``text`` with its lines joined by a space (blank lines and the spaces around them dropped)."""
    return " ".join(part.strip() for part in str(text).splitlines() if part.strip())


def for_cli(error: BaseException) -> str:
    """The message of ``error`` for the command line's one stderr line."""
    if isinstance(error, ColumnsError):
        text = (f"{error.source}: {error.found}; name them with --{error.kind}-columns "
                f"query_id=COLUMN,doc_id=COLUMN,...")
    else:
        text = str(error).replace(DUPLICATES_HINT, CLI_DUPLICATES_HINT)
    return one_line(text)
