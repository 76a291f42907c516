"""The package as a user outside the repository meets it: a wheel built from the checkout,
installed into a fresh virtual environment, its ``abc_tf`` command run from an empty folder, and
a plug-in data family with a preset of its own found by its entry point.

The new environment reads this one's packages (TensorFlow and the rest) through a ``.pth`` line
and installs the wheel without dependencies, so the test takes seconds, needs no network, and
sees nothing of the checkout: the folder it runs in is empty, and this environment's editable
install of abc_tf is not on that path (a ``.pth`` line adds a folder without running its hooks).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import textwrap

import pytest

from process_helpers import ROOT

pytestmark = pytest.mark.slow

# A user's plug-in: a data family of plain squares, with an ABC preset of its own, registered by
# the entry point group abc_tf.data (pip writes entry_points.txt from the plug-in's pyproject).
PLUGIN = {
    "abc_plugin_squares/__init__.py": """
        import dataclasses

        from abc_tf.config import DataConfig, EncoderConfig, ExperimentConfig, SetBatch, TrainerConfig
        from abc_tf.methods.abc import AbcConfig


        @dataclasses.dataclass(frozen=True)
        class SquaresConfig(DataConfig):
            pass


        PRESETS = {"squares_abc": ExperimentConfig(
            name="squares_abc", trainer=TrainerConfig(steps=2, log_every=1, eval_images=16),
            data=SquaresConfig(family="blocks"), batch=SetBatch(set_size=4, pairs_per_step=1),
            method=AbcConfig(name="abc"), encoder=EncoderConfig(architecture="s4", embedding_dim=2))}
        """,
    "abc_plugin_squares/family.py": """
        import numpy as np
        import tensorflow as tf

        from abc_tf.data.family import DataFamily
        from abc_plugin_squares import PRESETS, SquaresConfig


        def make_dataset(config, seed, start_step=0):
            size = config.batch.set_size

            def sets():
                rng = np.random.default_rng(seed)
                while True:
                    images = np.zeros((2, 1, size, 28, 28, 1), np.uint8)
                    for k, corner in enumerate(rng.integers(0, 20, size=(2 * size, 2))):
                        images[k // size, 0, k % size, corner[0]:corner[0] + 8, corner[1]:corner[1] + 8] = 255
                    yield {"set_a": images[0], "set_b": images[1]}

            spec = tf.TensorSpec((1, size, 28, 28, 1), tf.uint8)
            return tf.data.Dataset.from_generator(sets, output_signature={"set_a": spec, "set_b": spec})


        FAMILY = DataFamily(
            name="blocks",
            config=SquaresConfig,
            image_shape=lambda config: (28, 28, 1),
            streams={"sets": make_dataset},
            presets=PRESETS,
        )
        """,
    "pyproject.toml": """
        [build-system]
        requires = ["setuptools>=61"]
        build-backend = "setuptools.build_meta"

        [project]
        name = "abc-plugin-squares"
        version = "0.1"

        [project.entry-points."abc_tf.data"]
        blocks = "abc_plugin_squares"

        [tool.setuptools]
        packages = ["abc_plugin_squares"]
        """,
}


def run(command: list[str], cwd, **kwargs) -> subprocess.CompletedProcess:
    environment = {
        key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "VIRTUAL_ENV")
    }
    environment["TF_CPP_MIN_LOG_LEVEL"] = environment.get("TF_CPP_MIN_LOG_LEVEL", "2")
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, env=environment, **kwargs)
    assert done.returncode == 0, f"{command}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> str:
    """The bin folder of a fresh virtual environment with the wheels of abc_tf and the plug-in."""
    base = tmp_path_factory.mktemp("install")
    project = base / "abc_tf_source"
    project.mkdir()
    for name in ("pyproject.toml", "abc_tf", "models"):
        source = os.path.join(ROOT, name)
        (shutil.copytree if os.path.isdir(source) else shutil.copy)(source, project / name)
    wheels = base / "wheels"
    run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(wheels),
            ".",
        ],
        cwd=project,
    )
    plugin = base / "plugin"
    for name, text in PLUGIN.items():
        (plugin / name).parent.mkdir(parents=True, exist_ok=True)
        (plugin / name).write_text(textwrap.dedent(text).lstrip())
    run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(wheels),
            ".",
        ],
        cwd=plugin,
    )
    venv = base / "venv"
    run([sys.executable, "-m", "venv", str(venv)], cwd=base)
    python = venv / "bin" / "python"
    site = run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], cwd=base
    ).stdout.strip()
    with open(os.path.join(site, "test_environment.pth"), "w") as handle:
        handle.write(sysconfig.get_paths()["purelib"] + "\n")  # TensorFlow and the rest, read from here
    run(
        [
            str(python),
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--no-index",
            *map(str, wheels.glob("*.whl")),
        ],
        cwd=base,
    )
    return str(venv / "bin")


def test_the_installed_command_trains_evaluates_and_finds_a_plug_in_from_an_empty_folder(installed, tmp_path):
    abc_tf = os.path.join(installed, "abc_tf")
    folder = tmp_path / "work"
    folder.mkdir()
    where = run(
        [os.path.join(installed, "python"), "-c", "import abc_tf; print(abc_tf.__file__)"], cwd=folder
    ).stdout
    assert where.startswith(os.path.dirname(installed)) and not where.startswith(ROOT), where
    assert "Commands:" in run([abc_tf, "--help"], cwd=folder).stdout
    assert "--trainer.steps" in run([abc_tf, "train", "--help"], cwd=folder).stdout
    trained = run(
        [
            abc_tf,
            "train",
            "--experiment=shapes3d_demo",
            "--trainer.steps=2",
            "--trainer.log_every=1",
            "--trainer.eval_every=0",
            "--trainer.eval_images=32",
            "--batch.set_size=8",
        ],
        cwd=folder,
    )
    assert trained.stdout.startswith(
        "Training shapes3d_demo (--method=abc on --data=shapes3d, built-in procedural data"
    )
    assert "abc_tf evaluate --run_dir=runs/shapes3d_demo" in trained.stdout
    assert (folder / "runs" / "shapes3d_demo" / "encoder.keras").is_file()  # relative to the current folder
    run(
        [
            abc_tf,
            "evaluate",
            "--run_dir=runs/shapes3d_demo",
            "--mine_steps=0",
            "--probe_epochs=1",
            "--num_images=64",
            "--disentanglement=none",
        ],
        cwd=folder,
    )
    assert (folder / "runs" / "shapes3d_demo" / "metrics.json").is_file()
    plugin = run([abc_tf, "train", "--experiment=squares_abc"], cwd=folder)
    assert "squares_abc (--method=abc on --data=blocks, built-in generated data)" in plugin.stdout
    assert (folder / "runs" / "squares_abc" / "encoder.keras").is_file()
    module = run([os.path.join(installed, "python"), "-m", "abc_tf", "grid", "--help"], cwd=folder)
    assert "--vary" in module.stdout
    assert sorted(os.listdir(folder)) == ["runs"]
