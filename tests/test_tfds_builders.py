"""tfds builders without the empty temporary folder tfds makes for each unprepared data set."""

from __future__ import annotations

import os
import tempfile

import pytest

from abc_tf.data import tfds_builders
from abc_tf.data.mnist import formats as mnist_formats


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


def test_asking_about_a_folder_without_the_data_set_logs_no_tfds_warning(tmp_path, caplog):
    # tfds would warn "Variant folder ... has no dataset_info.json" before the project's own error.
    from absl import logging

    verbosity = logging.get_verbosity()
    logging.set_verbosity(logging.WARNING)  # as train.py sets it
    try:
        (tmp_path / "mnist" / "3.0.1").mkdir(parents=True)
        with caplog.at_level("WARNING"):
            assert not mnist_formats.tfds_prepared(str(tmp_path))
    finally:
        logging.set_verbosity(verbosity)
    assert logging.get_verbosity() == verbosity
    assert not [record for record in caplog.records if "dataset_info.json" in record.getMessage()]
