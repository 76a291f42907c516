"""The one writer of the project's JSON files (run summaries, metrics, priors, config history)."""

from __future__ import annotations

import json
import os
from typing import Any


def write_json(path: str, value: Any, **dump_options: Any) -> None:
    """``value`` as JSON at ``path``, atomically: written to a temporary file beside it and
    renamed, so a reader (or a run killed mid-write) never sees half a file. ``dump_options``
    go to :func:`json.dump` (default: indent=2)."""
    temporary = f"{path}.{os.getpid()}.tmp"  # its own name: two processes may write one file (a shared cache)
    with open(temporary, "w", encoding="utf-8") as handle:
        json.dump(value, handle, **({"indent": 2} | dump_options))
    os.replace(temporary, path)
