"""Shapes3D backends (abc_tf.data.shapes3d.sources): the real 3dshapes.h5 layout written here,
tfds' mock data, and bad files."""

from __future__ import annotations

import h5py
import numpy as np
import pytest

from abc_tf.runs.experiments import get_preset
from abc_tf.data import factor_grid, tfds_builders
from abc_tf.data.shapes3d import family as s3d
from abc_tf.data.shapes3d import sources
from shapes3d_helpers import REAL_VALUES, decode_image, real_layout_labels, write_h5

SIZES = np.array(sources.FACTOR_SIZES)


def config(**overrides):
    return get_preset("shapes3d").replace(**overrides)


# ---------------------------------------------------------------- h5 backend


@pytest.fixture(scope="module")
def h5_file(tmp_path_factory):
    rows = np.random.default_rng(3).choice(480000, size=40, replace=False)
    return str(write_h5(tmp_path_factory.mktemp("h5") / "3dshapes.h5", coded_rows=np.sort(rows))), np.sort(
        rows
    )


def test_index_arithmetic_matches_the_label_order_of_the_file(h5_file):
    path, rows = h5_file
    with h5py.File(path, "r") as handle:
        labels = handle["labels"][()]
    rng = np.random.default_rng(4)
    for factors in rng.integers(0, SIZES, size=(25, 6)):
        values = [REAL_VALUES[f][v] for f, v in enumerate(factors)]
        row = np.flatnonzero(np.all(np.isclose(labels, values), axis=1))
        assert row.tolist() == [sources.GRID.ravel(factors)]
    # Reading unsorted, repeated ids returns each row's own image (h5py needs sorted reads).
    source = sources.H5Source(path)
    ids = np.array([[rows[5], rows[1], rows[5]], [rows[30], rows[0], rows[12]]])
    np.testing.assert_array_equal(decode_image(source.images(ids)), sources.GRID.unravel(ids))


def test_h5_in_memory_reads_the_same_images(tmp_path, monkeypatch):
    # The real file would need 5.9 GB here, so the grid shrinks to its last three factors
    # (480 images, all hues 0); the file keeps the real layout and label values.
    monkeypatch.setattr(sources, "GRID", factor_grid.FactorGrid(sources.FACTOR_NAMES, (1, 1, 1, 8, 4, 15)))
    monkeypatch.setattr(sources, "NUM_IMAGES", 480)
    labels = real_layout_labels()[:480]
    path = write_h5(tmp_path / "small.h5", labels=labels, num=480, coded_rows=np.arange(480))
    ids = np.random.default_rng(5).integers(0, 480, size=(3, 7))
    lazy, in_memory = sources.H5Source(str(path)), sources.H5Source(str(path), in_memory=True)
    np.testing.assert_array_equal(in_memory.images(ids), lazy.images(ids))
    np.testing.assert_array_equal(
        decode_image(in_memory.images(ids)),
        sources.labels_to_indices(labels[ids.ravel()], "t").reshape(3, 7, 6),
    )


def test_h5_pipeline_returns_the_curated_images(tmp_path):
    cfg = config(source="h5", inactive_factors="0,shape", set_size=8, pairs_per_step=2)
    curator = factor_grid.SetCurator(sources.GRID, s3d.inactive_factors(cfg), cfg.batch.set_size)
    steps = [s3d.step_item_ids(curator, cfg, seed=9, step=step) for step in range(2)]
    rows = np.unique(np.concatenate([ids.ravel() for step in steps for ids in step]))
    path = write_h5(tmp_path / "3dshapes.h5", coded_rows=rows)
    dataset = s3d.make_dataset(cfg.replace(path=str(path)), seed=9)
    for batch, (ids_a, ids_b) in zip(dataset.take(2), steps):
        for key, ids in (("set_a", ids_a), ("set_b", ids_b)):
            factors = decode_image(batch[key].numpy())  # what the images themselves say
            np.testing.assert_array_equal(factors, sources.GRID.unravel(ids))
            for f in s3d.inactive_factors(cfg):
                assert np.all(factors[..., f] == factors[:, :1, f])


def test_h5_bad_files_are_clear_errors(tmp_path, h5_file):
    def open_h5(path):
        return sources.H5Source(str(path))

    with pytest.raises(ValueError, match="no such file"):
        open_h5(tmp_path / "missing.h5")
    truncated = tmp_path / "truncated.h5"
    data = open(h5_file[0], "rb").read()
    truncated.write_bytes(data[: len(data) // 2])
    with pytest.raises(ValueError, match="truncated"):
        open_h5(truncated)
    (tmp_path / "text.h5").write_text("not hdf5")
    with pytest.raises(ValueError, match="cannot be opened as HDF5"):
        open_h5(tmp_path / "text.h5")
    small = write_h5(tmp_path / "small.h5", labels=real_layout_labels()[:100], num=100)
    with pytest.raises(ValueError, match=r"'images' is uint8 \(100, 64, 64, 3\), expected uint8 \(480000"):
        open_h5(small)
    with h5py.File(tmp_path / "nolabels.h5", "w") as handle:
        handle.create_dataset("images", shape=(480000, 64, 64, 3), dtype=np.uint8, chunks=(1, 64, 64, 3))
    with pytest.raises(ValueError, match="no dataset 'labels'"):
        open_h5(tmp_path / "nolabels.h5")
    with pytest.raises(ValueError, match="not in the 3dshapes order"):
        open_h5(write_h5(tmp_path / "reversed.h5", labels=real_layout_labels()[::-1]))
    odd = real_layout_labels()
    odd[7, 3] = 2.0
    with pytest.raises(ValueError, match="scale.*not 3dshapes values"):
        open_h5(write_h5(tmp_path / "odd.h5", labels=odd))


# ---------------------------------------------------------------- tfds backend


def test_tfds_not_prepared_says_what_is_missing(tmp_path):
    with pytest.raises(
        ValueError, match=r"'shapes3d' is not prepared under .*shapes3d/2\.0\.0.*tfds build shapes3d"
    ):
        s3d.make_dataset(config(source="tfds", path=str(tmp_path)), seed=0)


@pytest.mark.slow
def test_tfds_backend_on_mock_data():
    tfds = pytest.importorskip("tensorflow_datasets")
    with tfds.testing.mock_data(num_examples=300):
        source = sources.TfdsSource()
        # The mock holds 300 random records (a subset of the grid, maybe with repeats).
        records = list(
            tfds.as_numpy(tfds_builders.builder("shapes3d").as_dataset(split="train", shuffle_files=False))
        )
        expected_factors = np.array([[r[f"label_{n}"] for n in sources.FACTOR_NAMES] for r in records])
        np.testing.assert_array_equal(source.items, expected_factors)
        ids = np.array([[7, 3], [299, 7]])
        np.testing.assert_array_equal(
            source.images(ids), np.stack([records[i]["image"] for i in ids.ravel()]).reshape(2, 2, 64, 64, 3)
        )
        cfg = config(source="tfds", set_size=4, pairs_per_step=3)
        curator = factor_grid.SetCurator(
            sources.GRID, s3d.inactive_factors(cfg), cfg.batch.set_size, items=source.items
        )
        ids_a, ids_b = s3d.step_item_ids(curator, cfg, seed=1, step=0)
        batch = next(iter(s3d.make_dataset(cfg, seed=1)))
        for key, ids in (("set_a", ids_a), ("set_b", ids_b)):
            np.testing.assert_array_equal(batch[key].numpy(), source.images(ids))
            walls = source.items[ids][..., sources.FACTOR_NAMES.index("wall_hue")]
            assert np.all(walls == walls[:, :1])
        images, factors = s3d.labelled_sample(cfg, 50, seed=0)
        assert images.shape == (50, 64, 64, 3) and factors.shape == (50, 6)
