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


def test_cli_page_documents_every_subcommand_and_option():
    import argparse

    from ndcg_plugin.cli import build_parser

    page = (ROOT / "docs" / "cli.md").read_text()

    def walk(parser: argparse.ArgumentParser, path: str):
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    assert f"`{path}{name}" in page or f"## `{name}" in page or f"{path}{name}" in page, name
                    walk(sub, f"{path}{name} ")
            elif action.option_strings and "--help" not in action.option_strings:
                for opt in action.option_strings:
                    assert f"`{opt}" in page or f"{opt} " in page or f"{opt}`" in page, (path, opt)
            elif not action.option_strings:
                assert action.dest.upper() in page or action.metavar in page, (path, action.dest)

    walk(build_parser(), "")


def test_input_handling_table_names_existing_tests():
    import re

    page = (ROOT / "docs" / "input-handling.md").read_text()
    names = set(re.findall(r"`(test_[a-z0-9_]+)(?:\[[^\]]*\])?`", page))
    sources = "".join(p.read_text() for p in (ROOT / "tests").glob("test_*.py"))
    missing = sorted(n for n in names if f"def {n}(" not in sources)
    assert len(names) > 20 and not missing, missing
