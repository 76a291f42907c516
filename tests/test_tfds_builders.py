"""tfds builders without the empty temporary folder tfds makes for each unprepared data set."""

from __future__ import annotations

import os
import tempfile

import pytest

from abc_tf.data import mnist_formats, tfds_builders


@pytest.fixture
def watched_temp(monkeypatch, tmp_path):
    """The temporary directory, made an empty folder of the test's own, to see what is left in it."""
    temp = tmp_path / "temp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    return temp


@pytest.mark.parametrize("name", ["mnist", "shapes3d"])
def test_a_builder_of_an_unprepared_data_set_leaves_no_temporary_folder(watched_temp, tmp_path, name):
    builder = tfds_builders.builder(name, str(tmp_path / "tfds"))
    assert builder.name == name and not builder.is_prepared()
    assert os.listdir(watched_temp) == [] and tempfile.tempdir == str(watched_temp)


def test_asking_whether_mnist_is_prepared_leaves_no_temporary_folder(watched_temp, tmp_path):
    # "auto" MNIST asks on every run.
    assert not mnist_formats.tfds_prepared(str(tmp_path / "tfds"))
    with pytest.raises(ValueError, match="not prepared"):
        mnist_formats.load_tfds(str(tmp_path / "tfds"))
    assert os.listdir(watched_temp) == []
