"""Docs generated from the code must be current."""
from __future__ import annotations

from ndcg_plugin.docs import measures_markdown

from .conftest import ROOT


def test_measures_page_is_generated_from_the_measures():
    page = (ROOT / "docs" / "measures.md").read_text()
    assert page == measures_markdown(), "docs/measures.md is stale: run python -m ndcg_plugin.docs > docs/measures.md"


def test_every_convention_in_the_docs_names_an_existing_test():
    import re

    names = set(re.findall(r"`(test_[a-z0-9_]+)`", measures_markdown()))
    sources = "".join(p.read_text() for p in (ROOT / "tests").glob("test_*.py"))
    assert names and all(f"def {n}(" in sources for n in names), names
