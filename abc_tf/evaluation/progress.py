"""What a long evaluation tells its user while it runs, and which files it wrote.

- :func:`stage`: a line when an evaluation stage starts, and one with its time when it ends.
- :class:`Progress`: within a stage, the units done of a long computation, with time taken and
  time left. Units are e.g. MINE steps, probe epochs, embedded codes or DCI's factors.
  It prints at most one line every ``every`` seconds. Estimators update it between compiled calls.
  It prints only inside :func:`reporting`, which ``evaluate.py`` and ``train.py``'s end-of-run
  measurement turn on. So library callers and tests stay quiet, at no cost.
- :func:`wrote` and :func:`recording`: every writer of the evaluation layer records its files.
  ``evaluate.py`` lists them all at the end (:func:`reported`), and the TensorBoard logs find the figures.

The switches are context variables. They hold in the thread that set them and end with their
``with`` block, whoever called.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import os
import sys
import time
from typing import Callable, Iterator, TextIO


@contextlib.contextmanager
def stage(label: str) -> Iterator[None]:
    """Prints ``[evaluate] label ...`` now and ``[evaluate] label: 12.3 s`` when the block ends."""
    print(f"[evaluate] {label} ...", flush=True)
    started = time.monotonic()
    yield
    print(f"[evaluate] {label}: {time.monotonic() - started:.1f} s", flush=True)


@dataclasses.dataclass(frozen=True)
class _Reporting:
    every: float
    prefix: str
    clock: Callable[[], float]
    stream: TextIO | None  # None: sys.stdout when a line is written (pytest and tests swap it)


_REPORTING: contextvars.ContextVar[_Reporting | None] = contextvars.ContextVar(
    "progress_reporting", default=None
)
_WRITTEN: contextvars.ContextVar[tuple[list[str], ...]] = contextvars.ContextVar("files_written", default=())
# The Progress whose line a terminal shows unended (rewritten in place); reporters nest (the
# disentanglement codes, DCI's trees inside), so the last to write ends it.
_open_line: "Progress | None" = None


@contextlib.contextmanager
def reporting(
    every: float = 10.0,
    prefix: str = "[evaluate]",
    clock: Callable[[], float] = time.monotonic,
    stream: TextIO | None = None,
) -> Iterator[None]:
    """Within the block, every :class:`Progress` made prints a line at most every ``every``
    seconds (the first after ``every`` seconds, so a computation shorter than that says
    nothing), starting with ``prefix``, to ``stream`` (default stdout). On a terminal the line
    is rewritten in place (``\\r``); otherwise each is a line of its own, as a log file wants."""
    token = _REPORTING.set(_Reporting(float(every), prefix, clock, stream))
    try:
        yield
    finally:
        _REPORTING.reset(token)


class Progress:
    """``done`` of ``total`` units of one computation, reported by :meth:`update` under
    :func:`reporting`: ``[evaluate]   MINE (6 factors): 2250/20000 steps, 51 s, about 6 min 44 s left``.

    A context manager: on leaving, a line rewritten in place on a terminal is ended, so what
    prints next starts on a line of its own. ``done`` holds the last count given, so a caller
    spanning several estimates (a noise sweep) may pass one reporter on and count on from it.
    """

    def __init__(self, label: str, total: int, unit: str = "steps"):
        self.label, self.total, self.unit = label, int(total), unit
        self.done = 0
        self._reporting = _REPORTING.get()
        self._started = self._last = self._reporting.clock() if self._reporting else 0.0

    def update(self, done: int, doing: str = "") -> None:
        """``done`` units finished (``doing``: what comes next, e.g. a score's name); prints when
        ``every`` seconds have passed since the last line (or the start)."""
        self.done = int(done)
        reporting = self._reporting
        if reporting is None:
            return
        now = reporting.clock()
        if now - self._last < reporting.every:
            return
        self._last = now
        elapsed = now - self._started
        line = f"{reporting.prefix}   {self.label}: {self.done}/{self.total} {self.unit}"
        if doing:
            line += f" ({doing})"
        line += f", {_duration(elapsed)}"
        if 0 < self.done < self.total:
            line += f", about {_duration(elapsed / self.done * (self.total - self.done))} left"
        global _open_line
        stream = reporting.stream or sys.stdout
        if stream.isatty():
            # Spaces clear what a longer line before left on the terminal.
            stream.write("\r" + line.ljust(100))
            _open_line = self
        else:
            stream.write(line + "\n")
        stream.flush()

    def close(self) -> None:
        """Ends the terminal's line if this reporter wrote it last."""
        global _open_line
        if _open_line is self:
            (self._reporting.stream or sys.stdout).write("\n")
            _open_line = None

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()


def _duration(seconds: float) -> str:
    """12 s, 3 min 05 s, 1 h 02 min."""
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60:02d} s"
    return f"{seconds // 3600} h {seconds % 3600 // 60:02d} min"


def wrote(path: str | os.PathLike) -> None:
    """Records that the evaluation wrote the file (or SavedModel folder) ``path``, for every
    :func:`recording` block around the call (none: nothing to do)."""
    for files in _WRITTEN.get():
        files.append(os.fspath(path))


@contextlib.contextmanager
def reported(every: float = 10.0) -> Iterator[None]:
    """:func:`reporting` and :func:`recording` for a command line: when the block ends without
    an error, ``Wrote N files:`` and each path, one a line (evaluate.py's closing lines)."""
    with reporting(every), recording() as files:
        yield
    print(f"Wrote {len(files)} file{'s' if len(files) != 1 else ''}:" if files else "Wrote no file.")
    for path in files:
        print(f"  {path}")


@contextlib.contextmanager
def recording() -> Iterator[list[str]]:
    """The paths :func:`wrote` records within the block, in order, each once. Blocks nest: an
    inner one (a run's TensorBoard logs) sees its own files, the outer one (evaluate.py's
    listing) all of them."""
    files: list[str] = []
    token = _WRITTEN.set(_WRITTEN.get() + (files,))
    try:
        yield files
    finally:
        _WRITTEN.reset(token)
        files[:] = list(dict.fromkeys(files))
