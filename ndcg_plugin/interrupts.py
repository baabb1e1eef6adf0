"""Ctrl-C while the command starts: ``import ndcg_plugin`` runs first (ir-measures, numpy: 0.2-0.5 s
on a loaded machine) before any of the command's code, and a KeyboardInterrupt raised inside
those imports came out as a traceback, an ImportError (exit 1), or was swallowed by a library's
own ``try`` (exit 0). When this process is the command (``ndcg-plugin`` or ``python -m
ndcg_plugin``), the package's first import of its own installs :func:`interrupted`: one line and
status 130 at once, whatever is being imported. :func:`ndcg_plugin.cli.commands.run` puts a
KeyboardInterrupt back (:func:`handle_interrupts`) when the command's code begins, where it is
caught, and ends with 130 whenever SIGINT came (:data:`received`). A program
that imports the package is left alone."""
from __future__ import annotations

import _signal as signal  # the C module: signal.py's enums take a few ms to build
import os
import sys
from collections.abc import Callable

MESSAGE = b"ndcg-plugin: interrupted\n"


def interrupted(signum: int, frame: object) -> None:
    """One line on stderr, then the end of the process at once by SIGINT's default action, as a C
    program (trec_eval) ends on Ctrl-C: a shell's status 130 (128 + SIGINT); nothing half-imported
    runs on, and no library's ``except`` can catch it."""
    try:
        os.write(2, MESSAGE)
    except OSError:
        pass
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.raise_signal(signal.SIGINT)


def started_as_command() -> bool:
    """This process is the ``ndcg-plugin`` command: its script, or ``python -m ndcg_plugin`` (while
    ``-m``'s package is imported, sys.argv[0] is ``-m``; sys.orig_argv names the module)."""
    argv = sys.argv[:1]
    if argv and os.path.basename(argv[0]) in ("ndcg-plugin", "ndcg-plugin.exe"):
        return True
    if argv != ["-m"]:
        return False
    original = list(getattr(sys, "orig_argv", []))
    named = [original[i + 1] for i, a in enumerate(original[:-1]) if a == "-m"]
    named += [a[2:] for a in original if a.startswith("-m") and len(a) > 2]
    return any(name == "ndcg_plugin" or name.startswith("ndcg_plugin.") for name in named)


def install() -> None:
    """:func:`interrupted` as the SIGINT handler when this process is the command and Ctrl-C is not
    ignored (a command started with SIGINT ignored, as ``nohup`` and shells' background jobs do,
    keeps ignoring it)."""
    if started_as_command() and signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, interrupted)



#: whether SIGINT arrived since :func:`handle_interrupts`: the command then ends with 130 even where
#: a library swallowed the KeyboardInterrupt, or turned it into another error (numpy's import
#: makes an ImportError of one raised while it imports datetime)
received = False


def keyboard_interrupt(signum: int, frame: object) -> None:
    """Python's own handler (a KeyboardInterrupt), which also notes that it was called."""
    global received
    received = True
    # what the interrupt leaves half done (a file importlib was opening as it came) is no news to
    # the user: its "unclosed file" ResourceWarning would come before the one line
    import warnings
    warnings.filterwarnings("ignore", category=ResourceWarning)
    raise KeyboardInterrupt


def handle_interrupts() -> None:
    """Ctrl-C a KeyboardInterrupt again (:func:`keyboard_interrupt`), which the command catches (one
    line, exit 130, its cleanups run), where :func:`install` put :func:`interrupted`."""
    if signal.getsignal(signal.SIGINT) is interrupted:
        signal.signal(signal.SIGINT, keyboard_interrupt)
        sys.unraisablehook = unraisable


def unraisable(info: object) -> None:
    """A KeyboardInterrupt that could not propagate (raised in a weakref callback, such as
    importlib's module locks', or in a ``__del__``: Python only prints "Exception ignored" and goes
    on) is raised again, at the main thread's next instruction, instead of that traceback."""
    kind = getattr(info, "exc_type", None)
    if isinstance(kind, type) and issubclass(kind, KeyboardInterrupt):
        signal.raise_signal(signal.SIGINT)
        return
    sys.__unraisablehook__(info)


def run_command(main: Callable[[], int], say: Callable[[str], None]) -> int:
    """``main()``'s status, with Ctrl-C a KeyboardInterrupt (:func:`handle_interrupts`): 130 after
    one line (``say``) when one escapes ``main``, or when SIGINT came and ``main`` went on (a
    library swallowed it) or ended with another error made of it; main's own 130 as it is."""
    handle_interrupts()
    try:
        code = main()
    except BaseException as e:
        if not (received or isinstance(e, KeyboardInterrupt)):
            raise
        code = None
    if code is None or (received and code != 130):
        say("interrupted")
        return 130
    return code


install()
