"""Docs generated from the code must be current."""
from __future__ import annotations

import pytest

from ndcg_plugin.docs import measures_markdown
from tests.conftest import ROOT
from tests.helpers import run_cli


def test_measures_page_is_generated_from_the_measures():
    page = (ROOT / "docs" / "measures.md").read_text()
    assert page == measures_markdown(), "docs/measures.md is stale: run python -m ndcg_plugin.docs > docs/measures.md"


def test_every_convention_in_the_docs_names_an_existing_test():
    import re

    names = set(re.findall(r"`(test_[a-z0-9_]+)`", measures_markdown()))
    sources = "".join(p.read_text() for p in (ROOT / "tests").glob("test_*.py"))
    assert names and all(f"def {n}(" in sources for n in names), names


def _help(argv: list[str]) -> str:
    """The --help text the CLI prints for ``argv`` (public output, no argparse internals)."""
    import contextlib
    import io

    from ndcg_plugin.cli.commands import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit):
        main([*argv, "--help"])
    return out.getvalue()


def _sections(text: str) -> dict[str, list[str]]:
    """The help text's sections ("positional arguments", "options") as their entry lines."""
    out: dict[str, list[str]] = {}
    current = None
    for line in text.splitlines():
        if line and not line.startswith(" ") and line.endswith(":"):
            current = line[:-1]
            out[current] = []
        elif current and line.startswith("  ") and not line.startswith("    "):
            out[current].append(line.strip())
    return out


def test_cli_page_documents_every_subcommand_and_option():
    import re

    page = (ROOT / "docs" / "cli.md").read_text()
    commands = [["eval"], ["crosscheck"], ["compare"], ["explain"], ["measures"], ["datasets"],
                ["datasets", "seed"], ["datasets", "info"], ["reproduce"], ["reproduce", "runs"],
                ["reproduce", "table"], ["trec_eval"], ["irm"]]
    top = _sections(_help([]))["positional arguments"]
    listed = set(re.findall(r"[a-z_]+", top[0]))  # {eval,crosscheck,...}
    assert listed == {c[0] for c in commands}, listed  # a new subcommand must be added here and in the page
    for argv in commands:
        name = " ".join(argv)
        assert f"`{name}" in page or f"## `{argv[-1]}" in page or name in page, name
        sections = _sections(_help(argv))
        for entry in sections.get("options", []):
            for opt in re.findall(r"(?<![\w-])(--?[a-zA-Z][\w-]*)", entry.split("  ")[0]):
                if opt not in ("-h", "--help"):
                    assert f"`{opt}" in page or f"{opt} " in page or f"{opt}`" in page, (name, opt)
        for entry in sections.get("positional arguments", []):
            word = entry.split()[0]
            if not word.startswith("{"):
                assert word.upper() in page or word in page, (name, word)


def test_input_handling_table_names_existing_tests():
    import re

    page = (ROOT / "docs" / "input-handling.md").read_text()
    names = set(re.findall(r"`(test_[a-z0-9_]+)(?:\[[^\]]*\])?`", page))
    sources = "".join(p.read_text() for p in (ROOT / "tests").glob("test_*.py"))
    missing = sorted(n for n in names if f"def {n}(" not in sources)
    assert len(names) > 20 and not missing, missing


def test_readme_quick_start_shows_real_output():
    # the README's commands on the bundled example, run as written, print what it shows
    import re
    import shlex

    text = (ROOT / "README.md").read_text()
    shown = []
    for body in re.findall(r"```\n(\$ ndcg-plugin .*?)```", text, flags=re.S):
        command, _, output = body.replace("\\\n", " ").partition("\n")
        if "benchmarks_data/example" in command:
            shown.append((shlex.split(command[2:])[1:], output.rstrip("\n")))
    assert len(shown) >= 2, "the README's quick start lost its example commands"
    for args, expected in shown:
        proc = run_cli(*args, cwd=ROOT)
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.rstrip("\n") == expected, f"README output of ndcg-plugin {' '.join(args)} is stale"
