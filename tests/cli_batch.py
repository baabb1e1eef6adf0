"""Many ``ndcg-plugin`` command lines run one after the other in one process, each through the
command's own entry point (:func:`ndcg_plugin.cli.commands.run`, what ``python -m ndcg_plugin``
runs) with its own argv, stdin, stdout and stderr: the child of :func:`tests.helpers.run_batch`.

Standard output and error are text streams over bytes with the encoding and error handler of this
process's own (what a separate process would write: a lone surrogate on stderr is written
backslash-escaped, as Python's stderr does). An exception escaping ``run`` is printed as the
interpreter prints it, with status 1. Each command's outcome is written as one JSON line to a copy
of file descriptor 1 as soon as it ends: a death by a signal is seen by the parent, after the
outcomes of the commands before it.

Input, on stdin: a JSON list of [argv, stdin text or null]."""
from __future__ import annotations

import io
import json
import os
import sys
import traceback


def _stream(like) -> io.TextIOWrapper:
    return io.TextIOWrapper(io.BytesIO(), encoding=like.encoding, errors=like.errors, newline=None)


def _value(stream: io.TextIOWrapper) -> str:
    stream.flush()
    return stream.buffer.getvalue().decode(stream.encoding, "surrogateescape")


def one(argv: list[str], stdin: str | None, setup=None) -> tuple[int, str, str]:
    """``ndcg-plugin ARGV`` through run(): (exit status, stdout, stderr). ``setup``, if given, is
    called with the command's standard output stream before it runs (a fault injected there)."""
    from ndcg_plugin.cli import commands
    out, err = _stream(sys.__stdout__), _stream(sys.__stderr__)
    if setup is not None:
        setup(out)
    data = io.TextIOWrapper(io.BytesIO((stdin or "").encode()), encoding="utf-8")
    saved = sys.argv, sys.stdin, sys.stdout, sys.stderr
    sys.argv, sys.stdin, sys.stdout, sys.stderr = ["ndcg-plugin", *argv], data, out, err
    try:
        commands.run()
        code = 0  # run() always exits; kept for a run() that would return
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    except BaseException:  # noqa: BLE001 - what the interpreter does with it: a traceback, status 1
        traceback.print_exc(file=sys.stderr)
        code = 1
    finally:
        # run() ended with gc.freeze(): what the command left stays frozen, never collected, as in
        # a process whose last collections skip it (an unclosed file in a reference cycle then never
        # warns; collected here, its warning would land in a later command's stderr)
        sys.argv, sys.stdin, sys.stdout, sys.stderr = saved
    return code, _value(out), _value(err)


def serve() -> None:
    with os.fdopen(os.dup(1), "w", encoding="utf-8") as results:
        for argv, stdin in json.loads(sys.stdin.read()):
            code, out, err = one(argv, stdin)
            results.write(json.dumps([code, out, err]) + "\n")
            results.flush()


if __name__ == "__main__":
    serve()
