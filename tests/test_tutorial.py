"""docs/tutorial.md runs as written: every `$ ` command, from the repository root, with the
outputs shown."""
from __future__ import annotations

import os
import re
import subprocess
import sys

from tests.conftest import ROOT, shared_file


def blocks() -> list[tuple[str, str]]:
    text = (ROOT / "docs" / "tutorial.md").read_text()
    out = []
    for body in re.findall(r"```console\n(.*?)```", text, flags=re.S):
        lines = body.rstrip("\n").split("\n")
        assert lines[0].startswith("$ "), lines[0]
        out.append((lines[0][2:], "\n".join(lines[1:])))
    return out


def test_tutorial_commands_run_as_written():
    data = shared_file("msmarco-passage")
    env = {**os.environ, "DATA": str(data), "PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"]}
    found = blocks()
    assert len(found) == 6
    for command, expected in found:
        if command.startswith("DATA="):
            continue  # the test sets DATA itself, wherever shared/ is
        proc = subprocess.run(["bash", "-c", command], cwd=ROOT, env=env, capture_output=True, text=True)
        assert proc.returncode == 0, (command, proc.stderr)
        if expected:
            assert proc.stdout.rstrip("\n") == expected, command
    png = ROOT / "benchmarks_data" / "cache" / "tutorial" / "diff.png"
    assert png.read_bytes()[:4] == b"\x89PNG"
