"""Runs the README's main job and keeps what it printed, for the README's sample of it.

It trains ``--experiment=shapes3d_demo`` as the README's first command does, in a scratch folder,
and writes ``docs/figures/demo/run.json``: the command, its standard output, the wall time, the
machine and the load before and after. ``python -m scripts.doc_tables`` writes the README's
sample from that file (between ``<!-- log: docs/figures/demo/run.json -->`` and
``<!-- end log -->``), so the sample is a real run's, with the host it ran on.

  python -m scripts.demo_log     # about 10 minutes on 2 cores
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time

from benchmarks import report

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FILE = "docs/figures/demo/run.json"
ARGS = ["train.py", "--experiment=shapes3d_demo", "--output_dir=runs/demo"]


def render(run: dict) -> str:
    """The README's sample: the output as printed, then where and how long it ran."""
    minutes = run["wall_seconds"] / 60
    return (
        f"```\n{run['stdout'].rstrip()}\n```\n\n"
        f"{run['machine']} {report.load_text(run)} It took {minutes:.0f} minutes. The losses, the "
        "measures and the times differ from host to host and run to run.\n"
    )


def main() -> int:
    start = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as scratch:
        began = time.perf_counter()
        done = subprocess.run(
            [sys.executable, os.path.join(ROOT, ARGS[0]), *ARGS[1:]],
            cwd=scratch,
            capture_output=True,
            text=True,
        )
        seconds = time.perf_counter() - began
    if done.returncode:
        print(done.stderr[-4000:], file=sys.stderr)
        return done.returncode
    run = {"command": "python " + " ".join(ARGS), "stdout": done.stdout, "wall_seconds": seconds}
    run.update(report.measured(start))
    os.makedirs(os.path.dirname(os.path.join(ROOT, FILE)), exist_ok=True)
    with open(os.path.join(ROOT, FILE), "w", encoding="utf-8") as handle:
        json.dump(run, handle, indent=1)
    print(render(run))
    return 0


if __name__ == "__main__":
    sys.exit(main())
