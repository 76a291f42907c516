"""What the commands print besides their results: their names as the user typed them (``train.py``
in a checkout, ``abc_tf train`` once installed), absl's flag-parsing errors in the words of the
project's other ``error:`` lines, the package's warnings as one line each, and a quiet start."""

from __future__ import annotations

import os
import re
import sys
import tempfile
import warnings

# How this process was started: "script" (python train.py, in a checkout) or "abc_tf" (the
# installed command, or python -m abc_tf). Set by abc_tf.cli.main; it words names and advice.
INVOCATION = "script"


def program(name: str) -> str:
    """The name of command ``name`` (train, evaluate, grid) in the user's words: ``train.py`` or
    ``abc_tf train``; it starts every ``error:`` line."""
    return f"abc_tf {name}" if INVOCATION == "abc_tf" else f"{name}.py"


def command(name: str) -> str:
    """The command line that runs command ``name``, for advice the user copies."""
    return f"abc_tf {name}" if INVOCATION == "abc_tf" else f"python {name}.py"


# absl words a value its flag's parser refuses as "flag --NAME=VALUE: REASON".
_ILLEGAL_VALUE = re.compile(r"^flag --(?P<name>[^=\s]+)=(?P<value>.*?): (?P<reason>.*)$", re.DOTALL)


def _kind(reason: str) -> str | None:
    if reason.startswith("invalid literal for int()"):
        return "int"
    if reason.startswith("could not convert string to float"):
        return "float"
    if "Non-boolean argument to boolean flag" in reason:
        return "bool"
    return None


def describe_flag_error(message: str) -> str:
    """One line for absl's ``flags.Error`` text ``message``: a value of the wrong type names the
    flag and the type it takes; any other (an unknown flag, a missing value) keeps absl's words
    and points to ``--help``."""
    match = _ILLEGAL_VALUE.match(message.strip())
    kind = _kind(match.group("reason")) if match else None
    if kind is None:
        return f"{message.strip().removeprefix('flag ')} (--help lists the flags)."
    name, value = match.group("name"), match.group("value")
    if kind == "bool":
        return (
            f"--{name}={value} is not true or false; "
            f"pass --{name}, --no{name}, --{name}=true or --{name}=false."
        )
    if kind == "float":
        return f"--{name}={value} is not a number."
    try:
        number = float(value)
    except ValueError:
        number = None
    if number is not None and number.is_integer():
        return f"--{name}={value} is not an integer; write it in digits: --{name}={int(number)}."
    return f"--{name}={value} is not an integer."


# Flags renamed since a release: {old name: new name}, the dotted ones too (``--model.embedding_dim``
# is ``--encoder.embedding_dim``). An old name on a command line is refused with one line naming the
# new one, before anything runs, by every command.
RENAMED_FLAGS = {"model": "encoder"}
_RENAMED = re.compile(
    r"^--(?P<old>" + "|".join(RENAMED_FLAGS) + r")(?P<field>\.[^=\s]*)?(?P<value>=.*)?$", re.DOTALL
)


def renamed_flag_error(argv: list[str], other_program: str | None = None) -> str | None:
    """The error line for the first flag of ``argv`` (``argv[0]`` the program) written with a
    renamed name (:data:`RENAMED_FLAGS`), or None: "--model.embedding_dim was renamed
    --encoder.embedding_dim; write --encoder.embedding_dim=8." ``other_program``: the program the
    line is for when it is not train, whose flags they are (evaluate.py takes neither name)."""
    for argument in argv[1:]:
        if argument == "--":  # absl reads no flags after it
            break
        match = _RENAMED.match(argument)
        if match is None:
            continue
        field, value = match.group("field") or "", match.group("value") or ""
        old, new = f"--{match.group('old')}{field}", f"--{RENAMED_FLAGS[match.group('old')]}{field}"
        if other_program is not None:
            return f"{old} was renamed {new}, a flag of {program('train')}, not of {other_program}."
        return f"{old} was renamed {new}; write {new}{value}." if value else f"{old} was renamed {new}."
    return None


_PACKAGE = os.path.dirname(os.path.abspath(__file__))


def plain_warnings(program: str) -> None:
    """Shows the package's warnings as ``<program>: warning: <message>``: they are sentences for
    the user (a checkpoint skipped, a lock taken over), not code locations. Other libraries'
    warnings keep Python's format, which says where they come from."""
    python_format = warnings.formatwarning

    def one_line(message, category, filename, lineno, line=None):
        if os.path.abspath(filename).startswith(_PACKAGE + os.sep):
            return f"{program}: warning: {message}\n"
        return python_format(message, category, filename, lineno, line)

    warnings.formatwarning = one_line


# What TensorFlow's C++ side prints at every start on a machine without a GPU or without the
# instructions its binary could use: true, and nothing a user of this project acts on.
_START_UP_NOISE = re.compile(
    r"All log messages before absl::InitializeLog\(\) is called are written to STDERR"
    r"|cudart_stub\.cc:\d+\] Could not find cuda drivers"
    r"|cuda_platform\.cc:\d+\] failed call to cuInit"
    r"|cpu_feature_guard\.cc:\d+\] This TensorFlow binary is optimized"
    r"|^To enable the following instructions: .*rebuild TensorFlow with the appropriate compiler flags\.$"
    r"|port\.cc:\d+\] oneDNN custom operations are on"
)
FULL_LOG_HINT = "TF_CPP_MIN_LOG_LEVEL=0 shows TensorFlow's start-up and information lines"


def quiet_tensorflow_start() -> None:
    """Loads TensorFlow and lists its devices with the start-up lines above held back, so that a
    run's first screen is the project's own; any other line TensorFlow writes meanwhile (an error
    that matters) is written as it came. Also keeps TensorFlow's C++ information lines (level 0)
    out for the rest of the run, warnings and errors kept. A user who sets TF_CPP_MIN_LOG_LEVEL
    gets TensorFlow's own behaviour (:data:`FULL_LOG_HINT`); a process that loaded TensorFlow
    already (a test) is left alone."""
    if "TF_CPP_MIN_LOG_LEVEL" in os.environ or "tensorflow" in sys.modules:
        return
    os.environ["TF_CPP_MIN_LOG_LEVEL"] = "1"
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as captured:
        os.dup2(captured.fileno(), 2)  # the C++ side writes to file descriptor 2, not sys.stderr
        try:
            # Loaded here, under the capture, and only by the commands.
            import tensorflow as tf  # noqa: PLC0415

            tf.config.list_physical_devices()  # the device search (cuInit) logs here
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
        captured.seek(0)
        kept = without_start_up_noise(captured.read().decode(errors="replace"))
    for line in kept:
        print(line, file=sys.stderr)


def without_start_up_noise(text: str) -> list[str]:
    """The lines of TensorFlow's start-up output ``text`` that are not its usual start-up noise."""
    return [line for line in text.splitlines() if not _START_UP_NOISE.search(line)]


def quiet_python_start() -> None:
    """Holds back the Python libraries' start-up lines: matplotlib's "generated new fontManager",
    logged the first time it is imported on a machine, at INFO, which absl's handler would show."""
    import logging  # noqa: PLC0415 - absl's logging is the module-level name elsewhere

    logging.getLogger("matplotlib").setLevel(logging.WARNING)


def exit_status(stop: SystemExit) -> int:
    """The exit status a ``SystemExit`` stands for (None: 0; a message: 1, as Python exits)."""
    if stop.code is None or isinstance(stop.code, int):
        return stop.code or 0
    return 1


HELP_FLAGS = ("--help", "-h", "--helpshort", "--helpfull", "-?")


def run_program(program: str, doc: str, flag_values, argv: list[str], main) -> int:
    """A command line of ``program`` (evaluate.py, grid.py) run in this process: ``--help``
    prints ``doc`` and the flags; otherwise ``argv`` is parsed into ``flag_values`` and
    ``main(rest)`` runs. Returns the exit status: ``main``'s (None: 0), 2 with one ``program:
    error:`` line for a renamed flag, a flag absl refuses or an ``app.UsageError``, or a
    ``SystemExit``'s code.
    The flags are reset afterwards, so one process may run it again."""
    from absl import app, flags

    plain_warnings(program)
    quiet_python_start()
    renamed = renamed_flag_error(argv, program)
    if renamed is not None:
        print(f"{program}: error: {renamed}", file=sys.stderr)
        return 2
    if any(argument in HELP_FLAGS for argument in argv[1:]):
        print(doc + "\nFlags:\n" + flag_values.get_help())
        return 0
    try:
        rest = flag_values(argv)
    except flags.Error as error:
        print(f"{program}: error: {describe_flag_error(str(error))}", file=sys.stderr)
        return 2
    try:
        return main(rest) or 0
    except app.UsageError as error:
        print(f"{program}: error: {error}", file=sys.stderr)
        return 2
    except SystemExit as stop:
        return exit_status(stop)
    finally:
        flag_values.unparse_flags()
