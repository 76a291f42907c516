"""Running the project's commands in a fresh Python process, as a user would: the command line,
its exit code and its one-line errors. Tests run in-process where they can; these are for what
only a real process shows (exit codes, signals, a fresh interpreter, absl's global flags).
A child that a test will signal says when it is ready by writing a marker file (``hold``), which
the test awaits with a deadline (``wait_for_marker``): no polling of the child's progress."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time

TESTS_DIR = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(TESTS_DIR)
# The tests' folder on the path too, so a child can register the toy family and method.
ENV = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "PYTHONPATH": os.pathsep.join([TESTS_DIR, ROOT])}


def run_script(script: str, *args: str, cwd, **kwargs) -> subprocess.CompletedProcess:
    """``python <ROOT>/<script> args...`` in ``cwd``, output captured as text."""
    kwargs.setdefault("env", ENV)
    return subprocess.run(
        [sys.executable, os.path.join(ROOT, script), *args], capture_output=True, text=True, cwd=cwd, **kwargs
    )


def run_code(code: str, *args: str, cwd=ROOT, **kwargs) -> subprocess.CompletedProcess:
    """``python -c code args...``, output captured as text."""
    kwargs.setdefault("env", ENV)
    return subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, cwd=cwd, **kwargs
    )


def start_code(code: str, *args: str, cwd=ROOT, **kwargs) -> subprocess.Popen:
    """``python -c code args...`` started in the background."""
    kwargs.setdefault("env", ENV)
    return subprocess.Popen([sys.executable, "-c", code, *args], cwd=cwd, **kwargs)


# A script run as ``python script args`` runs it (as ``__main__``) until it exits; then the child
# prints its exit code and the modules it had loaded, one JSON line after the script's output.
_MODULES_LOADED = textwrap.dedent(
    """
    import json, runpy, sys
    script = sys.argv.pop(1)
    sys.argv[0] = script
    try:
        runpy.run_path(script, run_name="__main__")
        code = 0
    except SystemExit as stop:
        code = stop.code
    print("MODULES" + json.dumps({"code": code, "modules": sorted(sys.modules)}))
    """
)


def modules_loaded_by(script: str, *args: str) -> tuple[int, str, set[str]]:
    """``python <ROOT>/<script> args...`` run in a child process until it exits: its exit code,
    its output (stdout, then stderr) and the modules it had loaded by then."""
    completed = run_code(_MODULES_LOADED, os.path.join(ROOT, script), *args)
    *output, line = completed.stdout.splitlines()
    assert line.startswith("MODULES"), completed.stdout[-3000:] + completed.stderr[-3000:]
    result = json.loads(line[len("MODULES") :])
    return result["code"], "\n".join(output) + "\n" + completed.stderr, set(result["modules"])


# How long a child may take to get ready, and how long a ready child waits to be stopped: a
# deadline against hangs only (a toy run is ready within seconds on an idle machine).
MARKER_SECONDS = 600


def hold(marker, until=lambda: False, seconds: float = MARKER_SECONDS) -> None:
    """In a child process: creates the file ``marker`` to tell the parent (:func:`wait_for_marker`)
    that it is ready, then waits until it is stopped: killed, interrupted by a signal whose
    handler raises, or ``until()`` true (e.g. a signal handler has recorded a stop request). It
    naps in short intervals, so that Python runs signal handlers, and raises after ``seconds``,
    so that a child whose parent is gone does not wait forever. Called from a Keras callback
    (``keras.callbacks.LambdaCallback(on_epoch_end=lambda epoch, logs: epoch == 1 and hold(path))``:
    after the second checkpoint), the run cannot finish before the parent stops it, so the
    parent needs no race against the child's progress."""
    open(marker, "w").close()
    deadline = time.monotonic() + seconds
    while not until():
        if time.monotonic() > deadline:
            raise RuntimeError(f"not stopped within {seconds} s of writing {marker}")
        time.sleep(0.01)


def wait_for_marker(process: subprocess.Popen, marker, seconds: float = MARKER_SECONDS) -> None:
    """Waits until the child ``process`` has created the file ``marker`` (see :func:`hold`). If the
    child ends first, or ``seconds`` pass, it kills the child and fails with its exit code and the
    end of its output (when ``process`` was started with ``stdout``/``stderr=subprocess.PIPE``)."""
    deadline = time.monotonic() + seconds
    while not os.path.exists(marker):
        ended = process.poll() is not None
        if ended or time.monotonic() > deadline:
            process.kill()
            output = "".join(
                part if isinstance(part, str) else part.decode(errors="replace")
                for part in process.communicate(timeout=60)
                if part
            )
            what = (
                f"ended with exit code {process.returncode}"
                if ended
                else f"did not get there within {seconds} s"
            )
            raise AssertionError(f"the child process {what} before writing {marker}:\n{output[-3000:]}")
        time.sleep(0.01)


def assert_one_clear_error(code: int, stderr: str, message: str, expected_code: int = 2) -> None:
    """The README's promise: exit ``expected_code``, no traceback, one ``<command>: error:`` line
    holding ``message``."""
    assert code == expected_code, stderr[-3000:]
    assert "Traceback" not in stderr, stderr[-3000:]
    errors = [line for line in stderr.splitlines() if ": error: " in line]
    assert len(errors) == 1 and message in errors[0], stderr[-3000:]
