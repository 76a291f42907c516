"""One writer per run directory: ``<run_dir>/.lock``, an ``fcntl.flock`` held while a run trains.

The lock file holds JSON naming its holder: ``{"host", "pid", "since", "command"}``. It is never
deleted, since deleting a flock'd file lets two processes lock two files of one name. A clean
release empties it. The kernel drops a flock when its process dies, however it dies. So a lock file
that names a holder but can be locked was left by a dead process, e.g. after SIGKILL, a crash or a
lost machine. The next run takes it over with a warning.

File systems without ``flock``, such as some network mounts, give a warning and no lock.
A multi-worker run locks from its chief only; the other workers write under ``workers/``.
"""

from __future__ import annotations

import datetime
import errno
import fcntl
import json
import os
import socket
import sys
import warnings

LOCK_FILE = ".lock"


class RunDirInUse(ValueError):
    """Another live process holds the run directory's lock; the message names it."""


def lock_path(run_dir: str) -> str:
    return os.path.join(run_dir, LOCK_FILE)


def _holder_text(descriptor: int) -> str:
    os.lseek(descriptor, 0, os.SEEK_SET)
    return os.read(descriptor, 1 << 16).decode("utf-8", "replace")


def describe(holder_text: str) -> str:
    """ "train.py (pid P on host H, since T)" from a lock file's JSON, or a plain phrase when it does not say.

    The JSON is written a moment after the lock is taken, so a reader may find it empty.
    """
    try:
        holder = json.loads(holder_text)
        return f"{holder['command']} (pid {holder['pid']} on host {holder['host']}, since {holder['since']})"
    except (ValueError, TypeError, KeyError):
        return "another process (its lock file does not say which)"


def _command() -> str:
    """This process as a user would name it: the script, e.g. train.py, or python for ``python -c``."""
    script = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    return script if script and script != "-c" else "python"


def _try_lock(descriptor: int) -> bool:
    """Takes the exclusive lock without waiting; False when another open file holds it."""
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


TRAIN_ADVICE = "wait for it to finish or use another --output_dir"


def _in_use(run_dir: str, holder_text: str, advice: str) -> RunDirInUse:
    return RunDirInUse(f"run directory {run_dir} is in use by {describe(holder_text)}; {advice}.")


def check_free(run_dir: str, advice: str = TRAIN_ADVICE) -> None:
    """Raises :class:`RunDirInUse`, ending in ``advice``, when a live process holds ``run_dir``'s lock.

    Writes nothing: train.py probes before building any data.
    :class:`RunLock` takes the lock itself at the run's first write.
    """
    path = lock_path(run_dir)
    if not os.path.isfile(path):
        return
    try:
        descriptor = os.open(path, os.O_RDONLY)
    except OSError:
        return  # unreadable: RunLock says so when it takes the lock
    try:
        if _try_lock(descriptor):
            fcntl.flock(descriptor, fcntl.LOCK_UN)
            return
        raise _in_use(run_dir, _holder_text(descriptor), advice)
    except OSError as error:
        if error.errno in (errno.ENOLCK, errno.EOPNOTSUPP, errno.EINVAL):
            return  # no flock here: RunLock warns
        raise
    finally:
        os.close(descriptor)


class RunLock:
    """Holds ``run_dir``'s lock from construction to :meth:`release`; also a context manager.

    Creates ``run_dir`` if needed. Raises :class:`RunDirInUse` when a live process holds it.
    Warns and takes over a lock file left by a dead one.
    """

    def __init__(self, run_dir: str, command: str | None = None):
        self.run_dir = run_dir
        self._descriptor: int | None = None
        os.makedirs(run_dir, exist_ok=True)
        path = lock_path(run_dir)
        descriptor = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            locked = _try_lock(descriptor)
        except OSError as error:
            os.close(descriptor)
            warnings.warn(
                f"Cannot lock {path} ({error.strerror}); nothing stops a second train.py from writing "
                f"into {run_dir} at the same time."
            )
            return
        previous = _holder_text(descriptor)
        if not locked:
            os.close(descriptor)
            raise _in_use(run_dir, previous, TRAIN_ADVICE)
        if previous.strip():  # a clean release empties the file: this holder died holding it
            warnings.warn(
                f"{path} was left by {describe(previous)}, which no longer runs; "
                "taking the run directory over."
            )
        holder = {
            "command": command or _command(),
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "since": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        }
        os.ftruncate(descriptor, 0)
        os.pwrite(descriptor, json.dumps(holder).encode(), 0)
        self._descriptor = descriptor

    def release(self) -> None:
        """Empties the lock file, marking a clean end rather than a dead holder, and unlocks it."""
        if self._descriptor is None:
            return
        descriptor, self._descriptor = self._descriptor, None
        try:
            os.ftruncate(descriptor, 0)
        finally:
            os.close(descriptor)  # closing the only descriptor of the open file releases the flock

    def __enter__(self) -> "RunLock":
        return self

    def __exit__(self, *exc_info) -> None:
        self.release()
