"""abc_tf.data.pose.render_cache: procedural renders kept on disk between processes, keyed by
what was asked and by the renderer's source."""

from __future__ import annotations

import logging
import os

import numpy as np
import pytest

from abc_tf.data.pose import procedural as pose_procedural
from abc_tf.data.pose import render_cache
from tests.pose_data_helpers import SMALL


class CountingRender:
    """A render that counts its calls."""

    def __init__(self, value: float = 1.0):
        self.calls, self.value = 0, value

    def __call__(self) -> tuple[np.ndarray, ...]:
        self.calls += 1
        return np.full((2, 3), self.value, np.float32), np.arange(4, dtype=np.uint8)


@pytest.fixture
def cache(tmp_path, monkeypatch):
    directory = str(tmp_path / "renders")
    monkeypatch.setenv(render_cache.CACHE_ENV, directory)
    return directory


def test_a_second_process_reads_the_renders_the_first_wrote(cache):
    render = CountingRender()
    first = render_cache.cached("toy", ("car", 32), render)
    again = render_cache.cached("toy", ("car", 32), render)
    assert render.calls == 1
    for written, read in zip(first, again, strict=True):
        np.testing.assert_array_equal(written, read)
        assert written.dtype == read.dtype
    render_cache.cached("toy", ("car", 64), render)  # another key renders
    assert render.calls == 2
    assert not [name for name in os.listdir(cache) if name.endswith(".partial")]


def test_an_edited_renderer_never_reads_old_renders(cache, monkeypatch):
    render = CountingRender()
    render_cache.cached("toy", ("car",), render)
    monkeypatch.setattr(render_cache, "renderer_version", lambda: "edited")
    render_cache.cached("toy", ("car",), render)
    assert render.calls == 2


def test_off_keeps_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv(render_cache.CACHE_ENV, "off")
    monkeypatch.chdir(tmp_path)
    render = CountingRender()
    render_cache.cached("toy", (), render)
    render_cache.cached("toy", (), render)
    assert render.calls == 2 and render_cache.cache_dir() is None and not os.listdir(tmp_path)


def test_a_damaged_file_is_rendered_again_and_replaced(cache, caplog):
    render = CountingRender()
    render_cache.cached("toy", (), render)
    (path,) = [os.path.join(cache, name) for name in os.listdir(cache)]
    with open(path, "wb") as handle:
        handle.write(b"not a zip")
    with caplog.at_level(logging.WARNING):
        arrays = render_cache.cached("toy", (), render)
    assert render.calls == 2 and "could not be read" in caplog.text
    np.testing.assert_array_equal(arrays[0], np.ones((2, 3)))
    render_cache.cached("toy", (), render)
    assert render.calls == 2  # the file was written anew


def test_a_directory_that_cannot_be_written_costs_only_the_time(tmp_path, monkeypatch, caplog):
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    monkeypatch.setenv(render_cache.CACHE_ENV, str(blocker / "renders"))
    render = CountingRender(2.0)
    with caplog.at_level(logging.WARNING):
        arrays = render_cache.cached("toy", (), render)
        render_cache.cached("toy", (), render)
    np.testing.assert_array_equal(arrays[0], np.full((2, 3), 2.0))
    assert render.calls == 2 and caplog.text.count("cannot be written") == 1


def test_the_training_bank_and_backgrounds_read_back_equal_to_a_fresh_render(cache):
    # Bypassing the in-process cache (__wrapped__), as a new process would.
    fresh = pose_procedural._render_training_images("car", 16, 0.5, SMALL)
    for _ in range(2):
        synthetic, euler, instances, names, real = pose_procedural._training_images.__wrapped__(
            "car", 16, 0.5, SMALL
        )
        for kept, rendered in zip((synthetic, euler, instances, real), fresh, strict=True):
            np.testing.assert_array_equal(kept, rendered)
        assert names == ["car_0000", "car_0001", "car_0002"]
    backgrounds = pose_procedural._backgrounds.__wrapped__(16, SMALL)
    np.testing.assert_array_equal(backgrounds, pose_procedural._render_backgrounds(16, SMALL))
    assert len(os.listdir(cache)) == 2
