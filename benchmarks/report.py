"""Writes one benchmark's section of BENCHMARKS.md, leaving the other sections as they are."""

from __future__ import annotations

import datetime
import os
import platform
import re

BENCHMARKS_FILE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "BENCHMARKS.md")
HEADER = (
    "# Benchmarks\n\n"
    "Each section is written by the script it names, from one run on the machine it names.\n"
    "Figures are ratios measured within one run, since the build machines are shared and noisy.\n"
)


def machine_line() -> str:
    # Imported here, not above: write_section also runs where TensorFlow is not installed
    # (benchmarks/gpu.py on a GPU machine that has only JAX).
    import tensorflow as tf

    devices = ", ".join(device.device_type for device in tf.config.list_physical_devices())
    return (
        f"Measured {datetime.date.today().isoformat()} on {platform.machine()}, {os.cpu_count()} CPU cores, "
        f"devices: {devices}; TensorFlow {tf.__version__}."
    )


def write_section(title: str, body: str, path: str = BENCHMARKS_FILE) -> None:
    """Replaces the ``## title`` section (or appends it) with ``body``."""
    text = open(path).read() if os.path.exists(path) else HEADER
    section = f"## {title}\n\n{body.strip()}\n\n"
    pattern = re.compile(rf"^## {re.escape(title)}\n.*?(?=^## |\Z)", re.S | re.M)
    text = pattern.sub(lambda _: section, text) if pattern.search(text) else text.rstrip("\n") + "\n\n" + section
    with open(path, "w") as handle:
        handle.write(text)
