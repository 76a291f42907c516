"""One line when an evaluation stage starts and one with its time when it ends, so a long
evaluation (MINE's 20,000 steps, the disentanglement scores) says what it is doing."""

from __future__ import annotations

import contextlib
import time
from typing import Iterator


@contextlib.contextmanager
def stage(label: str) -> Iterator[None]:
    """Prints ``[evaluate] label ...`` now and ``[evaluate] label: 12.3 s`` when the block ends."""
    print(f"[evaluate] {label} ...", flush=True)
    started = time.monotonic()
    yield
    print(f"[evaluate] {label}: {time.monotonic() - started:.1f} s", flush=True)
