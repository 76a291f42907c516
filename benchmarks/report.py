"""Writes one benchmark's section of BENCHMARKS.md, leaving the other sections as they are."""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import os
import platform
import re
import subprocess
import sys
import time
from typing import Any, Callable

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the repository: children run from here
FIGURES = os.path.join(ROOT, "docs", "figures", "benchmarks")
BENCHMARKS_FILE = os.path.join(ROOT, "BENCHMARKS.md")
HEADER = (
    "# Benchmarks\n\n"
    "Each section is written by the script it names, from one run on the machine it names.\n"
    "Figures are ratios measured within one run, since the build machines are shared and noisy.\n"
)


def cpu_model(cpuinfo: str | None = None) -> str:
    """The CPU's model name with its architecture, e.g. "AMD EPYC (x86_64)"; the architecture alone
    where /proc/cpuinfo has no model name. The build hosts change between runs, and the same step
    can rank XLA and the plain graph differently on two CPUs of one architecture."""
    from abc_tf.runs import precision  # with TensorFlow, as in machine_line

    names = [name for name in precision.cpuinfo_values("model name", cpuinfo or precision.CPUINFO) if name]
    return f"{names[0]} ({platform.machine()})" if names else platform.machine()


def machine_line() -> str:
    # Imported here, not above: write_section also runs where TensorFlow is not installed
    # (benchmarks/gpu.py on a GPU machine that has only JAX).
    import tensorflow as tf

    devices = ", ".join(device.device_type for device in tf.config.list_physical_devices())
    return (
        f"Measured {datetime.date.today().isoformat()} on {cpu_model()}, {os.cpu_count()} CPU cores, "
        f"devices: {devices}; TensorFlow {tf.__version__}."
    )


def precision_line() -> str:
    """What ``--trainer.mixed_precision`` computes in on this host, and why, by abc_tf.runs.precision."""
    from abc_tf.runs import precision  # with TensorFlow, as in machine_line

    chosen = precision.choose(True)
    fallback = ": float32 instead of emulated bfloat16" if chosen.warning else ""
    return f"`--trainer.mixed_precision` on this host: {chosen.policy} ({chosen.reason}{fallback})."


def write_section(title: str, body: str, path: str = BENCHMARKS_FILE) -> None:
    """Replaces the ``## title`` section with ``body``, or appends it."""
    text = open(path).read() if os.path.exists(path) else HEADER
    section = f"## {title}\n\n{body.strip()}\n\n"
    pattern = re.compile(rf"^## {re.escape(title)}\n.*?(?=^## |\Z)", re.S | re.M)
    text = (
        pattern.sub(lambda _: section, text) if pattern.search(text) else text.rstrip("\n") + "\n\n" + section
    )
    with open(path, "w") as handle:
        handle.write(text)


SHARED = " shared with other jobs, so absolute rates vary"


def load_line(load_start: float, cores: str = SHARED) -> str:
    """The 1-minute load average at the start, ``load_start``, and now.
    It shows what else ran on the shared machine."""
    return load_text({"load": [load_start, os.getloadavg()[0]], "cpu_count": os.cpu_count()}, cores)


def measured(load_start: float) -> dict:
    """What a section states about its run besides the figures, as a results file keeps it.
    It holds the machine line, the cores, and the 1-minute load average at the start and now.
    ``load_start`` is the one at the start."""
    return {"machine": machine_line(), "load": [load_start, os.getloadavg()[0]], "cpu_count": os.cpu_count()}


def load_text(results: dict, cores: str = SHARED) -> str:
    """:func:`load_line` from what :func:`measured` put in ``results``."""
    start, end = results["load"][:2]
    return (
        f"1-minute load average of the machine: {start:.1f} at the start, {end:.1f} at the end "
        f"({results['cpu_count']} cores{cores})."
    )


MACHINE = re.compile(
    r"Measured (?P<date>\S+) on (?P<cpu>.+?), (?P<cores>\d+) CPU cores, devices: (?P<devices>[^;]+); "
    r"TensorFlow (?P<tf>\S+?)\.(?:\s|$)"
)


LOAD = re.compile(r"load average of the machine: (?P<start>[\d.]+) at the start, (?P<end>[\d.]+) at the end")


def host(results: dict, load_note: str | None = None) -> str:
    """The end of a section's command line: the run's date, CPU, cores, TensorFlow from
    ``results["machine"]`` (:func:`machine_line`), then ``load_note``, or by default the 1-minute load
    average at the run's start and end where ``results`` keeps it."""
    match = MACHINE.match(results.get("machine", ""))
    if match is None:
        line = results.get("machine", "").rstrip(".")
    else:
        devices = "" if match["devices"] == "CPU" else f", {match['devices']}"
        line = f"run {match['date']} on {match['cpu']}, {match['cores']} cores{devices}, TF {match['tf']}"
    load = results.get("load")
    written = LOAD.search(results.get("machine", ""))  # a machine line that holds its load_line
    if not load and written:
        load = [float(written["start"]), float(written["end"])]
    if load_note is not None:
        line += f", {load_note}"
    elif load:
        line += f", load {load[0]:.1f}" + (f"-{load[1]:.1f}" if len(load) > 1 else "")
    return f"{line}."


def read_results(file: str, root: str = ROOT) -> dict:
    """The results file ``file``, relative to ``root``, as :func:`save_results` wrote it."""
    with open(os.path.join(root, file)) as handle:
        return json.load(handle)


def publish(title: str, body: str, write: bool, draw=None) -> None:
    """Prints ``body``.
    With ``write``, it draws the figures by ``draw()`` into FIGURES and writes the ``## title`` section."""
    print(body)
    if write:
        if draw is not None:
            os.makedirs(FIGURES, exist_ok=True)
            draw()
        write_section(title, body)


def save_results(name: str, results: Any) -> str:
    """Writes ``results`` to ``docs/figures/benchmarks/<name>.json`` and returns its path.
    The documents' figures point into that file, through scripts/doc_figures.py."""
    os.makedirs(FIGURES, exist_ok=True)
    path = os.path.join(FIGURES, f"{name}.json")
    with open(path, "w") as handle:
        json.dump(results, handle, indent=1, default=_plain)
    return path


def _plain(value: Any) -> Any:
    """A NumPy scalar or array as the Python number or list JSON can hold."""
    if hasattr(value, "tolist"):
        return value.tolist()
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def argument_parser(doc: str, leaves: str = "BENCHMARKS.md and the figures") -> argparse.ArgumentParser:
    """A script's parser: its docstring ``doc`` as help, and ``--no_write``.
    ``--no_write`` prints only and leaves ``leaves`` alone."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--no_write", action="store_true", help=f"Print only; leave {leaves} alone.")
    return parser


@contextlib.contextmanager
def log_log_axes(path: str, xlabel: str, ylabel: str, title: str, legend_size: int | None = None):
    """Axes to draw on.
    On leaving, it sets log-log scales, labels, grid and legend, and saves to ``path`` at 100 dpi."""
    import matplotlib

    matplotlib.use("Agg")  # no display on the build machines
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    try:
        yield ax
        ax.set(xscale="log", yscale="log", xlabel=xlabel, ylabel=ylabel, title=title)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=legend_size)
        fig.tight_layout()
        fig.savefig(path, dpi=100)
    finally:
        plt.close(fig)


def rounds_arguments(doc: str, steps: int, steps_help: str) -> argparse.Namespace:
    """The command line of a benchmark that times settings in interleaved rounds.
    It measures in child processes, by :func:`run_child`. The arguments are ``--steps``, ``--rounds``,
    ``--no_write`` and the hidden ``--child``, which names what a child measures."""
    parser = argument_parser(doc, leaves="BENCHMARKS.md")
    parser.add_argument("--steps", type=int, default=steps, help=steps_help)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    return parser.parse_args()


def answer_child(
    name: str | None, named: dict[str, Callable[[], Any]], setting: Callable[[str], Any]
) -> bool:
    """In a child process, prints ``RESULT`` and a JSON result, and returns True.
    ``name`` is the child's ``--child``. The result is ``named[name]()``, or ``setting(name)`` for any
    other name: one setting measured alone, e.g. its peak memory. In the parent ``name`` is None, and it
    returns False."""
    if not name:
        return False
    print("RESULT" + json.dumps(named[name]() if name in named else setting(name)))
    return True


def run_children(module: str, children: dict[str, str], args: list[str]) -> dict[str, dict]:
    """``{label: result}``, one :func:`run_child` of ``module`` per label and CHILD of ``children``.
    Each child gets ``--child CHILD`` and ``args``. They run one after another, each alone on the machine.
    Each result and its seconds are printed as they come."""
    results = {}
    for label, child in children.items():
        began = time.perf_counter()
        results[label] = run_child(module, ["--child", child, *args])
        print(label, results[label], f"({time.perf_counter() - began:.0f} s)", flush=True)
    return results


def run_child(module: str, args: list[str]) -> dict:
    """Runs ``python -m module args`` from the repository root.
    It returns the JSON that the child prints after ``RESULT``. The child is a benchmark measuring
    alone in a fresh process, e.g. for its peak memory. If it fails, RuntimeError carries its stderr."""
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    completed = subprocess.run(
        [sys.executable, "-m", module, *args], capture_output=True, text=True, env=env, cwd=ROOT
    )
    lines = [line for line in completed.stdout.splitlines() if line.startswith("RESULT")]
    if completed.returncode or not lines:
        raise RuntimeError(f"{args} failed: {completed.stderr.strip()[-2000:]}")
    return json.loads(lines[-1][len("RESULT") :])
