"""The terminal side of the command line: standard output whose write errors are told apart
(:class:`CheckedOutput`), one-line messages on standard error (:func:`say`), and, when standard
error is a terminal, the progress bar and the notes of long phases (:func:`note`)."""
from __future__ import annotations

import os
import sys


class ProgressBar:
    """A tqdm bar of the bytes of a file read so far, on ``file`` (stderr); the CLI makes one
    only when stderr is a terminal, so logs and pipes stay quiet. Called as the reader's
    ``progress(done, total)`` (total 0 when unknown, as for standard input)."""

    def __init__(self, label: str, file=None):
        from tqdm import tqdm  # imported only for a terminal

        self.bar = tqdm(total=None, unit="B", unit_scale=True, unit_divisor=1024, desc=f"reading {label}",
                        file=file or sys.stderr, leave=False, dynamic_ncols=True)
        self.done = 0

    def __call__(self, done: int, total: int) -> None:
        if total and self.bar.total != total:
            self.bar.total = total
        if done > self.done:
            self.bar.update(done - self.done)
            self.done = done
        if total and done >= total:
            self.bar.close()


class OutputError(Exception):
    """Standard output could not be written (a full disk, a closed descriptor, an I/O error)."""


class CheckedOutput:
    """Standard output with its write errors told apart from every other OSError (a closed pipe
    stays a BrokenPipeError: the reader left, which is not an error)."""

    def __init__(self, stream):
        self.stream = stream

    def write(self, text: str) -> int:
        try:
            return self.stream.write(text)
        except BrokenPipeError:
            raise
        except OSError as e:
            raise OutputError(e.strerror or str(e)) from None

    def flush(self) -> None:
        try:
            self.stream.flush()
        except BrokenPipeError:
            raise
        except OSError as e:
            raise OutputError(e.strerror or str(e)) from None

    def __getattr__(self, name: str):
        return getattr(self.stream, name)


#: what Python and the dynamic loader say when memory (or address space: ``ulimit -v``) runs out
#: elsewhere than in an allocation Python makes (a MemoryError): a thread's stack, a library's pages
OUT_OF_MEMORY = ("can't start new thread", "failed to map segment from shared object", "cannot allocate memory")


def out_of_memory(error: BaseException) -> bool:
    """Whether ``error`` (a RuntimeError, an ImportError) says that memory ran out."""
    text = str(error).lower()
    return any(words in text for words in OUT_OF_MEMORY)


class ClosedOutput:
    """Standard output when it is closed (``>&-``: Python has no ``sys.stdout`` then): a write is an
    OutputError, not a text lost in silence."""

    def write(self, text: str) -> int:
        raise OutputError("standard output is closed")

    def flush(self) -> None:
        pass


def on_terminal() -> bool:
    """Whether standard error is a terminal: progress bars and notes of long phases go there only."""
    try:
        return sys.stderr is not None and sys.stderr.isatty()
    except (ValueError, OSError):  # closed, or replaced by an object without a descriptor
        return False


def progress_bar(label: str) -> ProgressBar | None:
    """A :class:`ProgressBar` reading ``label``, when standard error is a terminal."""
    return ProgressBar(label) if on_terminal() else None


def note(message: str) -> None:
    """``note: message`` before a phase expected to take more than about 2 s (a JVM's start, a
    comparison of long runs), when standard error is a terminal: a log or a pipe gets none."""
    if on_terminal():
        say(f"note: {message}")


def say(message: str) -> None:
    """One line on standard error, if there is a standard error."""
    if sys.stderr is not None:
        try:
            print(f"ndcg-plugin: {message}", file=sys.stderr, flush=True)
        except OSError:
            pass


def leave_stdout() -> None:
    """Point standard output at /dev/null, so that the interpreter's last flush of what could not be
    written raises nothing more (Python's recipe for a closed pipe)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.__stdout__.fileno())
    except (OSError, AttributeError, ValueError):
        pass
