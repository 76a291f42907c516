"""Checks a method against the contract every built-in method passes (abc_tf.evaluation.contract): its
smallest run trains, resumes from a checkpoint, trains on two replicas as on one device, and is evaluated.

  abc_tf check --method=my_method [--work_dir=DIR]
  abc_tf check --data=my_family
  abc_tf check                       # every family checked, every method's declaration loaded

``--data`` checks a family on its own: each stream's batch keys, dtypes and shapes, and that its
labelled sample holds ``--trainer.eval_images`` (4,096) distinct images with the labels its
evaluation task reads; the first failure is one line, exit 2.

The method is any ``--method`` value, built-in or an installed plug-in's (entry points ``abc_tf.methods``).
Its declared ``smallest_run``, a few steps on built-in data, runs in the real trainer. One line per check:

  PASS trains (12.3 s)
  FAIL resumes: run again, it started at step 0, not at its checkpoint's step 2. (log: DIR/resumes.log)

Exit status 0 when every check passed, 1 when one failed, 2 for a bad flag, an unknown method or
a mistake ``train --check_only`` finds (one line).
Each check's output goes to ``DIR/<check>.log`` and its runs under ``DIR/<check>``. Without
``--work_dir`` they go to a temporary folder, removed when every check passed.
"""

from __future__ import annotations

import contextlib
import gc
import os
import shutil
import sys
import tempfile
import time
import traceback
from typing import Iterator

from absl import flags

from abc_tf import command_line, registry

FLAGS = flags.FlagValues()
flags.DEFINE_string("method", None, "The method to check (a --method value).", flag_values=FLAGS)
flags.DEFINE_string(
    "data",
    None,
    "Or the data family to check on its own (a --data value): its streams and labels.",
    flag_values=FLAGS,
)
flags.DEFINE_string(
    "work_dir",
    None,
    "An empty or new folder for the checks' runs and logs (default: a temporary folder, removed when "
    "every check passed).",
    flag_values=FLAGS,
)
CHECKS = ("trains", "resumes", "two_replicas", "evaluated")


def split_the_cpu() -> None:
    """Two logical CPU devices for the two-replica check. TensorFlow takes the split only before
    it starts, so this runs before anything else touches it; in a process where it has started
    (a test's, split already by tests/conftest.py) nothing changes."""
    import tensorflow as tf

    cpu = tf.config.list_physical_devices("CPU")[0]
    if len(tf.config.get_logical_device_configuration(cpu) or ()) >= 2:
        return
    try:
        tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
    except RuntimeError:  # started already: the two-replica check says what it lacks
        pass


def one_line(error: BaseException, log: str) -> str:
    """What a check's failure prints: the message's first line; an unexpected exception (a bug
    in the method's code) is named by its type, its traceback left in ``log``."""
    lines = str(error).strip().splitlines()
    message = lines[0] if lines else ""
    if not isinstance(error, (AssertionError, ValueError)) or not message:
        message = f"{type(error).__name__}: {message}".rstrip(": ")
    return f"{message} (log: {log})" if log else message


@contextlib.contextmanager
def output_to(handle) -> Iterator[None]:
    """Everything written meanwhile, TensorFlow's C++ lines (file descriptors 1 and 2) too, goes
    to the file ``handle``: the command's own lines are the only ones on the screen."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    try:
        os.dup2(handle.fileno(), 1)
        os.dup2(handle.fileno(), 2)
        with contextlib.redirect_stdout(handle), contextlib.redirect_stderr(handle):
            yield
    finally:
        handle.flush()
        for descriptor, copy in zip((1, 2), saved):
            os.dup2(copy, descriptor)
            os.close(copy)


def run_checks(name: str, work_dir: str) -> bool:
    """Runs each check of :data:`CHECKS` on method ``name``, printing its line; whether all passed."""
    from abc_tf.evaluation import contract

    passed, trained = True, None
    for check in CHECKS:
        log = os.path.join(work_dir, f"{check}.log")
        started = time.monotonic()
        with open(log, "w", encoding="utf-8") as handle, output_to(handle):
            try:
                if check == "evaluated":  # the trains check's run, when it has one
                    contract.evaluated(name, work_dir, run_dir=trained)
                else:
                    result = getattr(contract, check)(name, work_dir)
                    trained = result.run_dir if check == "trains" else trained
                failure = None
            except Exception as error:  # noqa: BLE001 - a method's failure, reported as one line
                traceback.print_exc()
                failure = one_line(error, log)
            # A failed run's data stream is finalised here, its warnings into the log, not at exit.
            gc.collect()
        if failure is None:
            print(f"PASS {check} ({time.monotonic() - started:.1f} s)", flush=True)
        else:
            print(f"FAIL {check}: {failure}", flush=True)
            passed = False
    return passed


def check_all() -> int:
    """Without a name: every family found, checked on its own, and every method's declaration and
    smallest run loaded; one line each, a package that fails to import among them. 0 or 1."""
    command_line.quiet_tensorflow_start()
    from abc_tf import data, methods
    from abc_tf.evaluation import contract

    failed = 0
    for kind, names, check in (
        ("data", data.DATA_FAMILIES, lambda name: contract.family_checks(name)[-1].removeprefix("PASS ")),
        ("method", methods.METHODS, lambda name: f"smallest run {contract.smallest_run(name).name}"),
    ):
        for name in sorted(names):
            if kind == "data" and data.get_family(name).sources.default is None:
                print(f"SKIP --{kind}={name}: no built-in data (a run names its files: --data.path)")
                continue
            try:
                print(f"PASS --{kind}={name}: {check(name)}", flush=True)
            except Exception as error:  # noqa: BLE001 - one line a package, and the listing goes on
                print(f"FAIL --{kind}={name}: {registry.where(error)}{one_line(error, '')}", flush=True)
                failed += 1
    print(f"abc_tf check --method=NAME trains a method's smallest run; {failed} failed.")
    return 1 if failed else 0


def main(rest: list[str]) -> int:
    """Checks the method of the parsed flags: 0 when every check passed, 1 when one failed, 2 for
    a bad setting or a method that fails before its first step."""
    program = command_line.program("check")
    try:
        if len(rest) > 1:
            raise ValueError(f"unexpected arguments: {' '.join(rest[1:])} (flags are written --name=value).")
        if FLAGS.data:
            command_line.quiet_tensorflow_start()
            from abc_tf.evaluation import contract

            try:
                print("\n".join(contract.family_checks(FLAGS.data)))
            except (ValueError, KeyboardInterrupt):
                raise
            except Exception as error:  # noqa: BLE001 - the family's code failed: where, in one line
                raise ValueError(f"{registry.where(error)}{type(error).__name__}: {error}") from None
            return 0
        if not FLAGS.method:
            return check_all()
        from abc_tf import methods

        if FLAGS.method not in methods.METHODS:
            methods.get_method(FLAGS.method)  # unknown: ValueError naming the known ones, nothing loaded
        if FLAGS.work_dir and os.path.isdir(FLAGS.work_dir) and os.listdir(FLAGS.work_dir):
            raise ValueError(f"--work_dir={FLAGS.work_dir} is not empty; name a new or empty folder.")
        command_line.quiet_tensorflow_start()
        split_the_cpu()
        from abc_tf.evaluation import contract

        from abc_tf.runs import training

        with tempfile.TemporaryDirectory() as unused:  # its classes and its first step's trace, as train's
            training.check_step(training.prepare(contract.smallest_run(FLAGS.method), unused, verbose=0))
        work_dir = FLAGS.work_dir or tempfile.mkdtemp(prefix=f"abc_tf_check_{FLAGS.method}_")
        os.makedirs(work_dir, exist_ok=True)
    except ValueError as error:
        print(f"{program}: error: {error}", file=sys.stderr)
        return 2
    passed = run_checks(FLAGS.method, work_dir)
    if passed and not FLAGS.work_dir:
        shutil.rmtree(work_dir, ignore_errors=True)
    return 0 if passed else 1


def command(argv: list[str]) -> int:
    """The command line ``argv``: :func:`main`'s exit status, or 2 for a flag absl refuses.
    The flags are reset afterwards."""
    return command_line.run_program(command_line.program("check"), __doc__, FLAGS, argv, main)
