"""What train.py and evaluate.py print besides their results: absl's flag-parsing errors in the
words of the project's other ``error:`` lines (the flag, its value and what the value must be,
without Python's parser jargon), and the package's warnings as one line each."""

from __future__ import annotations

import os
import re
import warnings

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
        return f"--{name}={value} is not true or false; pass --{name}, --no{name}, --{name}=true or --{name}=false."
    if kind == "float":
        return f"--{name}={value} is not a number."
    try:
        number = float(value)
    except ValueError:
        number = None
    if number is not None and number.is_integer():
        return f"--{name}={value} is not an integer; write it in digits: --{name}={int(number)}."
    return f"--{name}={value} is not an integer."


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
