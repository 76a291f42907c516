"""A data path is read or refused (abc_tf.data.family.DataSources): ``auto`` takes the source the
path's contents fit and the built-in data without a path, a source that reads no file refuses a
path, and a path that fits no source is refused naming what was expected. Also a preset switched
to another family starts from that family's defaults, and a folder that is not a run directory
is never taken for one. The messages are those of docs/errors.md."""

from __future__ import annotations

import gzip
import json
import os

import numpy as np
import pytest

from abc_tf import data
from abc_tf.runs import checks
from abc_tf.runs import experiments
from abc_tf.runs import config_files
from abc_tf.runs.experiments import get_preset
from process_helpers import assert_one_clear_error


def source(config) -> tuple[str, str]:
    return data.get_family(config.data.family).source(config)


def write_idx(folder) -> None:
    """The four MNIST IDX files, gzipped, of a few images."""
    folder.mkdir()
    for name, shape in (
        ("train-images-idx3-ubyte", (3, 28, 28)),
        ("train-labels-idx1-ubyte", (3,)),
        ("t10k-images-idx3-ubyte", (2, 28, 28)),
        ("t10k-labels-idx1-ubyte", (2,)),
    ):
        header = bytes([0, 0, 8, len(shape)]) + b"".join(int(size).to_bytes(4, "big") for size in shape)
        with gzip.open(folder / f"{name}.gz", "wb") as handle:
            handle.write(header + np.zeros(shape, np.uint8).tobytes())


def test_auto_takes_the_source_the_path_fits_and_the_built_in_data_without_one(tmp_path):
    import h5py

    with h5py.File(tmp_path / "3dshapes.h5", "w") as handle:
        handle.create_dataset("images", data=np.zeros((1, 64, 64, 3), np.uint8))
    demo = get_preset("shapes3d_demo")
    assert demo.data.source == "auto" and source(demo) == ("procedural", "")
    assert source(demo.replace(path=str(tmp_path / "3dshapes.h5"))) == ("h5", str(tmp_path / "3dshapes.h5"))
    (tmp_path / "tfds" / "shapes3d").mkdir(parents=True)
    assert source(demo.replace(path=str(tmp_path / "tfds"))) == ("tfds", str(tmp_path / "tfds"))
    write_idx(tmp_path / "idx")
    mnist = get_preset("mnist").replace(path=str(tmp_path / "idx"))
    assert source(mnist) == ("idx", str(tmp_path / "idx"))
    assert checks.data_description(mnist) == f"idx data from {tmp_path / 'idx'}"
    (tmp_path / "records").mkdir()
    (tmp_path / "records" / "a.tfrecord").write_bytes(b"")
    pose = get_preset("pose_quick")
    assert source(pose) == ("procedural", "")
    assert source(pose.replace(path=str(tmp_path / "records"))) == ("keypointnet", str(tmp_path / "records"))
    assert checks.data_description(pose) == "built-in procedural data; image_size=32, titration_interval=100"


@pytest.mark.parametrize(
    "preset, fields, message",
    [
        (
            "shapes3d_demo",
            {"path": "{tmp}/notes.txt"},
            "--data.path={tmp}/notes.txt holds nothing data family 'shapes3d' reads; "
            "expected the file 3dshapes.h5 (source h5); or a tfds data folder with a prepared shapes3d "
            "(source tfds).",
        ),
        (
            "pose_quick",
            {"path": "{tmp}"},
            "--data.path={tmp} holds nothing data family 'pose' reads; "
            "expected a folder of KeypointNet .tfrecord files, or one such file (source keypointnet).",
        ),
        ("mnist", {"path": "{tmp}"}, "--data.path={tmp} is a folder without the MNIST IDX files (missing: "),
        (
            "mnist",
            {"path": "{tmp}/notes.txt"},
            "MNIST .npz file '{tmp}/notes.txt' (--data.path) is not an .npz archive",
        ),
        (
            "shapes3d_demo",
            {"source": "procedural", "path": "{tmp}"},
            "--data.source=procedural reads no file, so --data.path={tmp} would be ignored; "
            "leave --data.source at auto to read the path, or drop --data.path.",
        ),
        ("mnist", {"source": "procedural", "path": "{tmp}"}, "--data.source=procedural reads no file"),
        (
            "shapes3d_demo",
            {"source": "zip"},
            "--data.source='zip' is not a source of data family 'shapes3d'; "
            "choose one of auto, procedural, h5, tfds.",
        ),
        ("shapes3d_demo", {"path": "{tmp}/missing.h5"}, "--data.path={tmp}/missing.h5 does not exist."),
        (
            "yaleb_illumination",
            {},
            "--data.source=files needs --data.path: a folder of images, the yaleb data set as distributed",
        ),
        (
            "pose_quick",
            {"real_data_path": "{tmp}"},
            "--data.real_data_path is read with KeypointNet renders only (--data.path=<tfrecords>); "
            "the built-in procedural data has its own real images, so it would be ignored.",
        ),
        (
            "pose_quick",
            {"pose_test_list": "{tmp}/notes.txt"},
            "--data.pose_test_list is read with KeypointNet renders only",
        ),
    ],
)
def test_a_path_no_source_reads_is_refused_before_any_work(preset, fields, message, tmp_path):
    (tmp_path / "notes.txt").write_text("my notes")
    config = get_preset(preset).replace(
        **{name: value.format(tmp=tmp_path) for name, value in fields.items()}
    )
    with pytest.raises(ValueError) as refused:
        config.validate()
        checks.check_config(config)
    assert message.format(tmp=tmp_path) in str(refused.value)


def test_a_family_that_declares_no_sources_refuses_a_path(toy_family, tmp_path):
    from toy_family import CONFIG

    assert checks.data_description(CONFIG) == "built-in generated data"
    with pytest.raises(
        ValueError,
        match=f"data family 'toy' reads no file, so --data.path={tmp_path} would be "
        "ignored; drop --data.path.",
    ):
        checks.check_config(CONFIG.replace(path=str(tmp_path)))


def test_mnist_through_tfds_offline_says_what_to_do(tmp_path, monkeypatch):
    from abc_tf.data.mnist import formats

    class Offline:
        data_dir = str(tmp_path / "mnist" / "3.0.1")

        def is_prepared(self):
            return False

        def download_and_prepare(self):
            raise OSError("Failed to establish a new connection: [Errno 101] Network is unreachable")

    monkeypatch.setattr(formats, "_tfds_builder", lambda data_dir: Offline())
    with pytest.raises(ValueError) as refused:
        formats.load_tfds(str(tmp_path), download=True)
    assert str(refused.value) == (
        f"--data.source=tfds: tfds 'mnist' is not prepared under {Offline.data_dir} "
        "and downloading it failed (Failed to establish a new connection: "
        "[Errno 101] Network is unreachable). Offline, pass --data.path=<a folder with "
        "the four MNIST IDX files> instead."
    )


def test_another_family_starts_from_its_own_defaults_and_names_the_run(tmp_path):
    mnist = get_preset("mnist").replace(source="idx", path=str(tmp_path), holdout_digit="3")
    switched = experiments.choose(mnist, data="shapes3d")
    assert switched.name == "mnist_on_shapes3d"
    assert switched.data == experiments.data_config_class("shapes3d")(family="shapes3d")
    back = experiments.choose(get_preset("shapes3d").replace(inactive_factors="scale"), data="mnist")
    assert (back.name, back.data.source, back.data.path, back.data.holdout_digit) == (
        "shapes3d_on_mnist",
        "auto",
        "",
        "9",
    )


@pytest.fixture
def run_train(train_in_process):
    return train_in_process


def test_check_only_names_the_data_and_the_fields_that_differ_from_the_family_s(run_train, tmp_path):
    code, _, out = run_train(
        "--experiment=shapes3d", "--data=mnist", "--data.holdout_digit=4", "--check_only"
    )
    assert code == 0
    assert out.strip() == (
        "train.py: checked: shapes3d_on_mnist (abc on mnist, built-in procedural data; "
        "holdout_digit=4) can train into runs/shapes3d_on_mnist."
    )


def users_folder(folder, config_json: str | None) -> dict[str, str]:
    (folder / "checkpoints").mkdir(parents=True)
    files = {"notes.txt": "my notes", os.path.join("checkpoints", "important.txt"): "keep me"}
    if config_json is not None:
        files["config.json"] = config_json
    for name, text in files.items():
        (folder / name).write_text(text)
    return files


@pytest.mark.parametrize(
    "config_json, message",
    [
        (
            '{"my": "own config of another tool"}',
            "--output_dir={folder} is not a run directory: its config.json was not written by train.py "
            "(no run format mark). Nothing was read or written; choose a new or empty folder.",
        ),
        (
            None,
            "--output_dir={folder} is not a run directory: it holds checkpoints, notes.txt "
            "but no config.json. Nothing was written; choose a new or empty folder.",
        ),
    ],
)
@pytest.mark.parametrize("check_only", [False, True])
def test_a_user_s_folder_is_refused_and_left_as_it_was(config_json, message, check_only, run_train, tmp_path):
    folder = tmp_path / "mine"
    files = users_folder(folder, config_json)
    flags = [
        "--experiment=shapes3d_demo",
        f"--output_dir={folder}",
        *(["--check_only"] if check_only else []),
    ]
    code, err, _ = run_train(*flags)
    assert_one_clear_error(code, err, message.format(folder=folder))
    assert {name: (folder / name).read_text() for name in files} == files
    assert sorted(os.listdir(folder)) == sorted({name.split(os.sep)[0] for name in files})


def test_run_directories_carry_the_mark_and_old_ones_are_still_runs(tmp_path):
    from abc_tf.runs import config_history

    config = get_preset("shapes3d_demo")
    config_history.write_config(config, str(tmp_path), {}, 0)
    written = json.loads((tmp_path / "config.json").read_text())
    assert written["format"] == config_files.RUN_FORMAT and config_files.from_dict(written) == config
    config_history.check_is_run_dir(str(tmp_path))
    written.pop("format")  # a run directory written before the mark, with parts
    assert config_files.is_run_config(written)
    flat = os.path.join(os.path.dirname(__file__), "fixtures", "flat_configs", "shapes3d_demo.json")
    assert config_files.is_run_config(json.load(open(flat)))  # and before parts
    assert not config_files.is_run_config({"my": "own config of another tool"})


def test_a_run_written_with_the_procedural_source_resumes_under_auto(tmp_path):
    from abc_tf.runs import config_history

    old = get_preset("shapes3d_demo").replace(source="procedural")
    config_history.write_config(old, str(tmp_path), {}, 0)
    (tmp_path / "checkpoints").mkdir()
    assert config_history.config_changes(str(tmp_path), get_preset("shapes3d_demo")) == {}
