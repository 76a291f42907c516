"""Running the project's commands in a fresh Python process, as a user would: the command line,
its exit code and its one-line errors. Tests run in-process where they can; these are for what
only a real process shows (exit codes, signals, a fresh interpreter, absl's global flags)."""

from __future__ import annotations

import os
import subprocess
import sys

TESTS_DIR = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(TESTS_DIR)
# The tests' folder on the path too, so a child can register the toy family and method.
ENV = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "PYTHONPATH": os.pathsep.join([TESTS_DIR, ROOT])}


def run_script(script: str, *args: str, cwd, **kwargs) -> subprocess.CompletedProcess:
    """``python <ROOT>/<script> args...`` in ``cwd``, output captured as text."""
    kwargs.setdefault("env", ENV)
    return subprocess.run([sys.executable, os.path.join(ROOT, script), *args], capture_output=True, text=True,
                          cwd=cwd, **kwargs)


def run_code(code: str, *args: str, cwd=ROOT, **kwargs) -> subprocess.CompletedProcess:
    """``python -c code args...``, output captured as text."""
    kwargs.setdefault("env", ENV)
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, cwd=cwd, **kwargs)


def start_code(code: str, *args: str, cwd=ROOT, **kwargs) -> subprocess.Popen:
    """``python -c code args...`` started in the background."""
    kwargs.setdefault("env", ENV)
    return subprocess.Popen([sys.executable, "-c", code, *args], cwd=cwd, **kwargs)


def assert_one_clear_error(code: int, stderr: str, message: str, expected_code: int = 2) -> None:
    """The README's promise: exit ``expected_code``, no traceback, one ``<command>: error:`` line
    holding ``message``."""
    assert code == expected_code, stderr[-3000:]
    assert "Traceback" not in stderr, stderr[-3000:]
    errors = [line for line in stderr.splitlines() if ": error: " in line]
    assert len(errors) == 1 and message in errors[0], stderr[-3000:]
