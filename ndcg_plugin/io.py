"""Former home of the reader, kept as an alias: the reader is :mod:`ndcg_plugin.reading`."""
from __future__ import annotations

from .reading import InputError, duplicate_mask, read, resolve_duplicates

__all__ = ["InputError", "read", "duplicate_mask", "resolve_duplicates"]
