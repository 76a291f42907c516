"""Runs every train.py, evaluate.py, curves.py and compare.py command of the docs, shortened.

Every command that README.md, RESULTS.md and BENCHMARKS.md show must run on a fresh
clone. This finds them in the docs' code blocks (fenced, and indented by four spaces), and runs
each in document order from the repository root, in a scratch folder, with tiny settings:

  python -m scripts.doc_commands                      # run them all; exit 1 if any failed
  python -m scripts.doc_commands --list               # only print the commands and their rewrites
  python -m scripts.doc_commands --only=pose_quick --out_dir=/tmp/doc_runs --timeout=300
  python -m scripts.doc_commands --define MNIST_DIR=/path/to/mnist --define K=1 --define RUN=runs/split

A train.py command trains 2 steps (``--trainer.steps=2 --trainer.log_every=1
--trainer.eval_images=64``) into ``<out_dir>/<its --output_dir>``; an evaluate.py, curves.py or
compare.py command reads and writes its directories under ``<out_dir>`` too, with tiny
estimators. A command whose input is missing (a data path that does not exist here, a run
directory no earlier command writes, a ``<placeholder>``) is reported as skipped, not run.
``--only=TEXT`` picks the commands whose ``file:line command`` contains TEXT; ``--docs`` reads
other markdown files.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time

from abc_tf.cli import measure_flags
from abc_tf.runs import experiments

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOCS = ("README.md", "docs/EXPERIMENTS.md", "RESULTS.md", "BENCHMARKS.md")
DEFAULT_EXPERIMENT = "shapes3d_demo"  # train.py's default --experiment; its run dir is runs/<experiment>
# A command: python (or .venv/bin/python, python3.11) train.py|evaluate.py|curves.py|compare.py, up
# to && or ; or the end.
COMMAND = re.compile(
    r"(?:^|&&|;)\s*(?:\S*/)?python[0-9.]*\s+((?:train|evaluate|curves|compare)\.py\b.*?)\s*(?=&&|;|$)"
)
ASSIGNMENT = re.compile(r"\s*([A-Za-z_]\w*)=(.*)")  # NAME="..." lines whose $NAME later commands use
PLACEHOLDER = re.compile(r"<[^<>\s]*>|\$\{?\w+\}?")
TRAIN_FAST = {"trainer.steps": "2", "trainer.log_every": "1", "trainer.eval_images": "64"}
# Step counts a command may give that must stay below two steps to mean what they do: replaced
# where the command gives them.
TRAIN_SCALED = {
    "data.titration_interval": "1",
    "trainer.lr_halving_steps": "1",
    "trainer.eval_every": "1",
    "method.stage1_steps": "1",
}
# Of those, the ones a preset's own value would make a two-step run refuse (pose_quick titrates
# every 100 steps and LORD's first stage ends at 1,250, both of which must lie below
# --trainer.steps): scaled also where only the preset sets them.
PRESET_SCALED = ("data.titration_interval", "method.stage1_steps")
EVAL_FAST = {
    "mine_steps": "10",
    "mine_eval_samples": "2048",
    "num_images": "64",
    "probe_epochs": "1",
    "num_sigmas": "2",
    "pose_queries": "16",
    "pose_dictionary_size": "64",
    "pose_repeats": "1",
    "pose_pool_size": "0",
    "disentanglement": "none",
}  # the scores take a minute a run; the suite tests them
# compare.py takes no flag of one run's evaluation (noise, sweep, pose).
COMPARE_FAST = {name: value for name, value in EVAL_FAST.items() if name not in measure_flags.PER_RUN}
FAST = {"train.py": TRAIN_FAST, "evaluate.py": EVAL_FAST, "curves.py": EVAL_FAST, "compare.py": COMPARE_FAST}
DATA_PATHS = ("data.path", "data.real_data_path", "data.background_data_path", "data.pose_test_list")
EVAL_INPUTS = ("run_dir", "saved_model", "config")  # and each run of compare.py's --runs
EVAL_OUTPUTS = ("output_dir", "pose_export_dir")


@dataclasses.dataclass
class Command:
    where: str  # file:line of its first line
    text: str  # as the doc writes it, continuation lines joined
    args: list[str]  # the script and its arguments: as written, then rewritten by plan()
    skip: str = ""  # why it cannot run: "needs ..."
    inputs: list[str] = dataclasses.field(default_factory=list)  # run dirs it reads (doc paths)
    outputs: list[str] = dataclasses.field(default_factory=list)  # directories it writes (doc paths)


def code_lines(text: str):
    """(line number, line) of each line in the fenced and the indented code blocks of markdown
    ``text``, without the block's indentation."""
    fence, indent, indented, blank = "", 0, False, True
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.lstrip()
        if fence:
            if stripped.startswith(fence):
                fence = ""
            else:
                yield number, line[min(indent, len(line) - len(stripped)) :]
        elif stripped.startswith(("```", "~~~")):
            fence, indent = stripped[:3], len(line) - len(stripped)
        elif line.startswith(("    ", "\t")) and (indented or blank):
            indented = True
            yield number, line[4:] if line.startswith("    ") else line[1:]
        elif stripped:
            indented = False
        blank = not stripped


def extract(path: str, name: str, defined: dict[str, str] | None = None) -> list[Command]:
    """The commands (train.py, evaluate.py, curves.py, compare.py) in the code blocks of the
    markdown file ``path``: backslash continuations joined, trailing ``# comments`` and
    ``[optional ...]`` parts dropped, ``$NAME`` of the file's earlier ``NAME=...`` lines expanded,
    and the placeholder words of ``defined`` (e.g. ``MNIST_DIR``) replaced by their values."""
    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    found, variables, pending, start = [], {}, "", 0
    for number, line in code_lines(text):
        start = start if pending else number
        line = line.rstrip()
        if line.endswith("\\"):
            pending += line[:-1]
            continue
        logical, pending = pending + line, ""
        assignment = ASSIGNMENT.fullmatch(logical)
        if assignment and not COMMAND.search(logical):
            variables[assignment[1]] = " ".join(shlex.split(assignment[2], comments=True))
            continue
        for match in COMMAND.finditer(logical):
            written = re.sub(r"\s+#.*$", "", match[1])
            expanded = re.sub(r"\$\{?(\w+)\}?", lambda m: variables.get(m[1], m[0]), written)
            expanded = re.sub(r"\s\[[^\]]*\]", "", expanded)
            for word, value in (defined or {}).items():
                expanded = re.sub(rf"\b{re.escape(word)}\b", value, expanded)
            try:
                args, skip = shlex.split(expanded, comments=True), ""
            except ValueError as error:
                args, skip = expanded.split(), f"needs shell quoting that parses ({error})"
            found.append(Command(f"{name}:{start}", "python " + " ".join(written.split()), args, skip))
    return found


def scratch(path: str, out_dir: str) -> str:
    """A doc's relative path inside ``out_dir``; an absolute path stays."""
    return path if os.path.isabs(path) else os.path.join(out_dir, path)


def within(path: str, dirs) -> bool:
    path = os.path.normpath(path)
    return any(path == d or path.startswith(d.rstrip(os.sep) + os.sep) for d in dirs)


def preset_step_counts(args: list[str]) -> list[str]:
    """The fields of :data:`PRESET_SCALED` that the train.py command ``args`` leaves to its preset
    and the preset sets to a step count (not 0); none when the preset cannot be read."""
    given = dict(arg[2:].partition("=")[::2] for arg in args if arg.startswith("--"))
    chosen = {name: given[name] for name in ("data", "method", "encoder") if name in given}
    try:
        flat = experiments.choose(
            experiments.get_preset(given.get("experiment", DEFAULT_EXPERIMENT)), **chosen
        ).flat()
    except ValueError:  # an unknown experiment or choice: train.py says so when the command runs
        return []
    return [name for name in PRESET_SCALED if name not in given and flat.get(name) not in (None, 0)]


def rewrite(command: Command, out_dir: str, root: str = ROOT) -> None:
    """Sets ``command.args`` to the fast form that works in ``out_dir`` and notes its inputs and
    outputs; ``command.skip`` for a data path or placeholder that cannot be run."""
    script, args = command.args[0], command.args[1:]
    fast = FAST[script]
    needs, rewritten = [], []
    for arg in args:
        name, equals, value = arg[2:].partition("=") if arg.startswith("--") else ("", "", "")
        if name in fast:
            continue
        if script == "train.py" and name in TRAIN_SCALED and equals and value != "0":
            arg = f"--{name}={TRAIN_SCALED[name]}"
        if not equals:
            rewritten.append(arg)
            continue
        if (
            script == "train.py"
            and name in DATA_PATHS
            and value
            and not os.path.exists(os.path.join(root, value))
        ):
            needs.append(arg)
        if script == "train.py" and name == "output_dir":
            command.outputs.append(value)
            arg = f"--output_dir={scratch(value, out_dir)}"
        elif script != "train.py" and name in EVAL_INPUTS + EVAL_OUTPUTS:
            (command.inputs if name in EVAL_INPUTS else command.outputs).append(value)
            arg = f"--{name}={scratch(value, out_dir)}"
        elif script == "compare.py" and name == "runs":
            rows = []
            for row in value.split(","):
                runs = [run.partition("@") for run in row.split("+") if run]
                command.inputs += [path for path, _, _ in runs]
                rows.append("+".join(scratch(path, out_dir) + at + network for path, at, network in runs))
            arg = f"--runs={','.join(row for row in rows if row)}"
        elif script == "curves.py" and name == "checkpoints" and value not in ("all", "last"):
            arg = "--checkpoints=all"  # a two-step run has none of the doc's steps
        rewritten.append(arg)
    if script == "train.py" and not command.outputs:
        experiment = next(
            (a.split("=", 1)[1] for a in args if a.startswith("--experiment=")), DEFAULT_EXPERIMENT
        )
        command.outputs.append(os.path.join("runs", experiment))
        rewritten.append(f"--output_dir={scratch(command.outputs[0], out_dir)}")
    if script == "train.py":
        rewritten += [f"--{name}={TRAIN_SCALED[name]}" for name in preset_step_counts(args)]
    command.args = [script, *rewritten, *(f"--{name}={value}" for name, value in fast.items())]
    needs += sorted(set(PLACEHOLDER.findall(" ".join(command.args))))  # not --trainer.steps=<more>: replaced
    if needs and not command.skip:
        command.skip = "needs " + ", ".join(needs)


def plan(commands: list[Command], out_dir: str, root: str = ROOT) -> list[Command]:
    """Rewrites ``commands`` in order; an evaluating command whose run dir no earlier runnable
    command writes (and that does not exist as an absolute path) is skipped."""
    written: list[str] = []
    for command in commands:
        rewrite(command, out_dir, root)
        missing = [
            path
            for path in command.inputs
            if not within(path, written) and not (os.path.isabs(path) and os.path.exists(path))
        ]
        if missing and not command.skip:
            command.skip = "needs " + ", ".join(f"{path} (no earlier command writes it)" for path in missing)
        if not command.skip:
            written += [os.path.normpath(path) for path in command.outputs]
    return commands


def shown(command: Command) -> str:
    return "python " + shlex.join(command.args)


def run(command: Command, out_dir: str, timeout: float) -> tuple[str, str]:
    """(status, detail): ok, FAILED with the end of its stderr, or skipped with what it needs."""
    if command.skip:
        return "skipped", command.skip
    absent = [path for path in command.inputs if not os.path.exists(scratch(path, out_dir))]
    if absent:  # its train command failed, or was left out by --only
        return "skipped", "needs " + ", ".join(f"{path} (not written)" for path in absent)
    try:
        done = subprocess.run(
            [sys.executable, *command.args], cwd=ROOT, capture_output=True, text=True, timeout=timeout
        )
    except subprocess.TimeoutExpired as error:
        stderr = (
            error.stderr.decode(errors="replace") if isinstance(error.stderr, bytes) else error.stderr or ""
        )
        return "FAILED", f"{stderr}\ntimed out after {timeout:g} s"
    return ("ok", "") if done.returncode == 0 else ("FAILED", done.stderr or done.stdout)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--docs", nargs="+", default=list(DOCS), help="Markdown files, relative to the repository root."
    )
    parser.add_argument(
        "--out_dir", default=None, help="Scratch folder of the runs (default: a fresh temporary one)."
    )
    parser.add_argument("--timeout", type=float, default=600, help="Seconds each command may run.")
    parser.add_argument(
        "--list", action="store_true", help="Print the commands and their rewrites; run nothing."
    )
    parser.add_argument(
        "--only", default="", help="Run only the commands whose 'file:line command' contains this."
    )
    parser.add_argument(
        "--define",
        action="append",
        default=[],
        metavar="WORD=VALUE",
        help="Replace a placeholder word of the docs, e.g. MNIST_DIR=/path/to/mnist (repeatable).",
    )
    flags = parser.parse_args(argv)
    listed = os.path.join(tempfile.gettempdir(), "doc_commands_XXXX")  # --list creates no folder
    out_dir = os.path.abspath(
        flags.out_dir or (listed if flags.list else tempfile.mkdtemp(prefix="doc_commands_"))
    )
    defined = dict(item.split("=", 1) for item in flags.define)
    commands = plan(
        [c for doc in flags.docs for c in extract(os.path.join(ROOT, doc), doc, defined)], out_dir
    )
    commands = [c for c in commands if flags.only in f"{c.where} {c.text}"]
    print(f"{len(commands)} commands; scratch folder {out_dir}")
    failed = 0
    for command in commands:
        if flags.list:
            print(
                f"{command.where}  {command.text}\n    -> {shown(command)}"
                + (f"\n    skipped: {command.skip}" if command.skip else "")
            )
            continue
        began = time.monotonic()
        status, detail = run(command, out_dir, flags.timeout)
        print(f"{status:7s} {time.monotonic() - began:7.1f}  {command.where}  {shown(command)}", flush=True)
        if status == "skipped":
            print(f"    skipped: {detail}")
        elif status == "FAILED":
            failed += 1
            print("\n".join("    " + line for line in detail.rstrip().splitlines()[-20:]))
    for doc in flags.docs:
        mine = [c for c in commands if c.where.startswith(doc + ":")]
        print(f"{doc}: {len(mine)} commands, {sum(bool(c.skip) for c in mine)} skipped before running")
    if not flags.list:
        print(f"{failed} failed" if failed else "none failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
