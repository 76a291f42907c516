"""evaluate.py's command line run in the test process (``evaluate.run``: its own flags, reset
after each call), with its output captured: what a user sees, without a process per case."""

from __future__ import annotations

import contextlib
import io
import os
import traceback

from abc_tf.cli import evaluate


def evaluate_each(cases) -> list[dict]:
    """``evaluate.py arguments...`` for each ``(folder, arguments)`` of ``cases``, run in that
    folder: ``{"code", "stdout", "stderr"}`` per case, the code ``None`` for an uncaught
    exception (its traceback in stderr)."""
    results = []
    for folder, arguments in cases:
        stdout, stderr = io.StringIO(), io.StringIO()
        previous = os.getcwd()
        os.chdir(folder)
        try:
            with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
                try:
                    code = evaluate.command(["evaluate.py", *[str(argument) for argument in arguments]])
                except Exception:  # noqa: BLE001 - reported to the test as a traceback
                    code = None
                    traceback.print_exc()
        finally:
            os.chdir(previous)
        results.append({"code": code, "stdout": stdout.getvalue(), "stderr": stderr.getvalue()})
    return results
