"""Ctrl-C while the command starts: ``import ndcg_plugin`` runs first (ir-measures, numpy: 0.2-0.5 s
on a loaded machine) before any of the command's code, and a KeyboardInterrupt raised inside
those imports came out as a traceback, an ImportError (exit 1), or was swallowed by a library's
own ``try`` (exit 0). When this process is the command (``ndcg-plugin`` or ``python -m
ndcg_plugin``), the package's first import of its own installs :func:`interrupted`: one line and
status 130 at once, whatever is being imported. :func:`ndcg_plugin.cli.commands.run` puts a
KeyboardInterrupt back (:func:`handle_interrupts`) when the command's code begins, where it is
caught, and ends with 130 whenever SIGINT came (:data:`received`). Whatever the command's
cleanups then wait for (a worker thread's join, a lock a KeyboardInterrupt left held inside
Python's own import machinery), the process ends within :data:`GRACE_SECONDS` of Ctrl-C, and at
once on a second Ctrl-C. A program that imports the package is left alone."""
from __future__ import annotations

import _signal as signal  # the C module: signal.py's enums take a few ms to build
import _thread
import os
import sys
import time
from collections.abc import Callable

MESSAGE = b"ndcg-plugin: interrupted\n"

#: how long the command's cleanups may take after Ctrl-C (its ``finally`` blocks, the joins of its
#: worker threads as the interpreter ends, a Spark session's JVM stopped: SIGTERM, then SIGKILL 5 s
#: later) before the process ends regardless, with status 130
GRACE_SECONDS = 15.0

#: whether :data:`MESSAGE` was written (it is written once, whoever ends the process)
announced = False


def said(say: Callable[[str], None] | None = None) -> int:
    """``say("interrupted")`` (the command's own line, on its standard error) when given, and a
    note that :data:`MESSAGE` was written; the status of an interrupted command, 130."""
    global announced
    if say is not None:
        say("interrupted")
    announced = True
    return 130


def announce() -> None:
    """:data:`MESSAGE` on standard error, once (what the command wrote before it comes first)."""
    global announced
    if announced:
        return
    announced = True
    try:
        if sys.stderr is not None:
            sys.stderr.flush()
    except (OSError, ValueError, RuntimeError):  # closed, or being written by the thread interrupted
        pass
    try:
        os.write(2, MESSAGE)
    except OSError:
        pass


def interrupted(signum: int, frame: object) -> None:
    """One line on stderr, then the end of the process at once by SIGINT's default action, as a C
    program (trec_eval) ends on Ctrl-C: a shell's status 130 (128 + SIGINT); nothing half-imported
    runs on, and no library's ``except`` can catch it."""
    announce()
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

#: the SIGINT :func:`unraisable` raises again: the same Ctrl-C, not a second one
_again = False


def keyboard_interrupt(signum: int, frame: object) -> None:
    """Python's own handler (a KeyboardInterrupt), which also notes that it was called and starts
    the clock of :func:`end_after`; a second Ctrl-C ends the process at once (:func:`interrupted`)."""
    global received, _again
    if received and not _again:
        interrupted(signum, frame)
        return
    first, _again, received = not received, False, True
    if first:
        start_clock(GRACE_SECONDS)
    # what the interrupt leaves half done (a file importlib was opening as it came) is no news to
    # the user: its "unclosed file" ResourceWarning would come before the one line
    import warnings
    warnings.filterwarnings("ignore", category=ResourceWarning)
    raise KeyboardInterrupt


def start_clock(seconds: float) -> None:
    """:func:`end_after` on a thread of its own: a bare one, since threading's own locks may be held
    by the code the signal interrupted. Where no thread can start (memory), the cleanups run
    unguarded."""
    try:
        _thread.start_new_thread(end_after, (seconds,))
    except (RuntimeError, MemoryError):
        pass


def end_after(seconds: float) -> None:
    """The end of the process, ``seconds`` from now, with the one line and status 130, unless it
    ended before: a KeyboardInterrupt raised at any instruction can leave a lock held that another
    thread, and then the command waiting for that thread, would wait for forever (the CPython
    3.11 import system's module locks are one such place). Exit handlers do not run; a Spark JVM
    still ends when its pipe from this process closes."""
    time.sleep(seconds)
    announce()
    os._exit(130)


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
    global _again
    kind = getattr(info, "exc_type", None)
    if isinstance(kind, type) and issubclass(kind, KeyboardInterrupt):
        _again = True
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
        return 130 if announced else said(say)
    return code


install()
