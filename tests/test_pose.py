"""The pose family (abc_tf.data.pose.family): its banks, set sampling,
titration of real images, augmented batches, training hooks."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import tensorflow as tf

import models
from abc_tf.runs import experiments
from abc_tf import schedules
from abc_tf.config import ExperimentConfig
from abc_tf.runs.experiments import get_preset
from abc_tf.data.pose import config_checks, labelled_views
from abc_tf.data.pose import family as pose
from abc_tf.data.pose import procedural as pose_procedural
from abc_tf.evaluation.tasks import pose_accuracy
from pose_data_helpers import SMALL


def config(encoder: str | None = None, **overrides) -> ExperimentConfig:
    """A small procedural pose config; ``encoder``: another encoder architecture."""
    base = experiments.config_for(
        data="pose",
        source="procedural",
        image_size=16,
        set_size=4,
        pairs_per_step=2,
        steps=100,
        double_augmentation=True,
        real_fraction=0.5,
        titration_interval=10,
        similarity="cosine",
        temperature=0.1,
    )
    return experiments.choose(base, encoder=encoder, **overrides)


def test_a_validation_split_holds_the_last_training_instances_out_of_training_and_dictionaries(monkeypatch):
    monkeypatch.setattr(pose_procedural, "PROCEDURAL", SMALL)  # 3 training instances of 6 views
    rendered = []
    render = pose_procedural.pose_domains.render_synthetic

    def recorded(category, split, instance_ids, *args, **kwargs):
        rendered.append((split, np.asarray(instance_ids).copy()))
        return render(category, split, instance_ids, *args, **kwargs)

    monkeypatch.setattr(pose_procedural.pose_domains, "render_synthetic", recorded)
    cfg = config(validation_instances=1)
    banks = pose.load_banks(cfg)
    assert set(banks.instances.tolist()) == {0, 1} and banks.instance_names == ["car_0000", "car_0001"]
    assert len(banks.synthetic) == 2 * SMALL.views_per_instance == len(banks.euler)
    # A method that learns a code per image or instance (LORD) sizes its tables by what trains.
    assert pose.training_bank(cfg) == (2 * SMALL.views_per_instance, 2)
    rendered.clear()
    images, _, _ = labelled_views.labelled_images(cfg, "validation", "synthetic", 8, seed=5)
    assert images.shape == (8, 16, 16, 3)
    # The validation queries are the held-out training instance's renders (the training
    # instances' shapes: split "train"), the dictionaries' the others'.
    [(split, ids)] = rendered
    assert split == "train" and set(ids.tolist()) == {2}
    rendered.clear()
    labelled_views.labelled_images(cfg, "train", "synthetic", 16, seed=5)
    [(split, ids)] = rendered
    assert split == "train" and set(ids.tolist()) <= {0, 1}
    # Without a held-out instance the dictionaries draw from all three, as before.
    rendered.clear()
    labelled_views.labelled_images(config(), "train", "synthetic", 64, seed=5)
    assert set(rendered[0][1].tolist()) == {0, 1, 2}
    with pytest.raises(
        ValueError, match="needs training instances held out: set --data.validation_instances"
    ):
        labelled_views.labelled_images(config(), "validation", "synthetic", 4)
    with pytest.raises(ValueError, match="validation split has synthetic renders only"):
        labelled_views.labelled_images(cfg, "validation", "real", 4)
    with pytest.raises(ValueError, match="--data.validation_instances=3 leaves no training instance"):
        pose.load_banks(config(validation_instances=3))
    with pytest.raises(ValueError, match="--data.validation_instances must be >= 0"):
        config(validation_instances=-1).validate()
    with pytest.raises(ValueError, match="validation split has synthetic renders only"):
        pose_accuracy.PoseEvalSettings(query_split="validation", query_domains=("real",)).validate()


# ----------------------------------------------------------------------------- batches and titration


def toy_banks(instances: int = 5, views: int = 6, real: int = 7, size: int = 16) -> pose.PoseBanks:
    """Renders whose pixels encode (instance, view); euler = (view, instance, 0); real images
    a constant 250, backgrounds a constant 40."""
    rows = instances * views
    synthetic = np.zeros((rows, size, size, 4), np.uint8)
    synthetic[..., 0] = np.repeat(np.arange(instances), views)[:, None, None] * 10
    synthetic[..., 3] = 255
    euler = np.stack(
        [np.tile(np.arange(views), instances), np.repeat(np.arange(instances), views), np.zeros(rows)], 1
    )
    return pose.PoseBanks(
        synthetic,
        euler.astype(np.float32),
        np.repeat(np.arange(instances), views).astype(np.int32),
        [f"i{k}" for k in range(instances)],
        np.full((real, size, size, 3), 250, np.uint8),
        np.full((3, size, size, 3), 40, np.uint8),
    )


def test_backgrounds_are_painted_from_their_own_pool_not_from_the_real_images():
    banks = toy_banks()
    banks.synthetic[..., :] = 0  # fully transparent renders: every pixel is background
    cfg = config(
        set_size=6, real_fraction=0.5, titration_interval=0, crop_amplitude=0.0, augmentation_amplitude=0.0
    )
    batch = next(iter(pose.dataset_from_banks(banks, cfg, seed=0, start_step=50)))
    # Set A holds renders only: painted from the background pool (40), never from the real
    # images (250) that set B draws.
    assert np.all(batch["set_a"].numpy() == 40) and np.all(batch["set_a_view2"].numpy() == 40)
    set_b, real_b = batch["set_b"].numpy(), batch["real_b"].numpy()
    assert real_b.any() and not real_b.all()
    assert np.all(set_b[real_b] == 250) and np.all(set_b[~real_b] == 40)


def test_background_source_flag_and_builtin_default(tmp_path, monkeypatch):
    monkeypatch.setattr(pose_procedural, "PROCEDURAL", SMALL)
    builtin = pose.load_backgrounds(config())
    assert builtin.shape == (SMALL.background_images, 16, 16, 3) and builtin.dtype == np.uint8
    assert builtin.std() > 10  # cluttered scenes, not a flat colour
    banks = pose.load_banks(config())
    np.testing.assert_array_equal(banks.backgrounds, builtin)
    (tmp_path / "scenes" / "a").mkdir(parents=True)
    tf.io.write_file(
        str(tmp_path / "scenes" / "a" / "forest.png"), tf.io.encode_png(np.full((20, 30, 3), 90, np.uint8))
    )
    banks = pose.load_banks(config(background_data_path=str(tmp_path / "scenes")))
    assert banks.backgrounds.shape == (1, 16, 16, 3) and np.all(banks.backgrounds == 90)
    assert len(banks.real) == SMALL.real_train_images  # the real images of set B are unchanged
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="--data.background_data_path .*empty holds no images"):
        pose.load_banks(config(background_data_path=str(tmp_path / "empty")))


def test_set_a_holds_one_instance_and_distinct_views():
    banks = toy_banks()
    cfg = config(set_size=6, pairs_per_step=3)
    indices_of = pose.step_indices(banks, cfg, seed=0)
    seen = set()
    for step in range(20):
        chosen = indices_of(step)
        index_a = chosen["index_a"]
        instance = banks.instances[index_a]
        assert np.all(instance == instance[:, :1])  # one instance per set A
        assert all(len(set(row)) == 6 for row in index_a)  # distinct views
        seen.update(instance[:, 0].tolist())
        assert chosen["index_b"].shape == (3, 6)
        assert all(len(set(row)) == 6 for row in chosen["index_b"])
    assert seen == set(range(5))
    # A pure function of (seed, step).
    again = pose.step_indices(banks, cfg, seed=0)(3)
    for key, value in indices_of(3).items():
        np.testing.assert_array_equal(value, again[key])
    assert not np.array_equal(indices_of(3)["index_a"], pose.step_indices(banks, cfg, seed=1)(3)["index_a"])
    # No instance has 7 views: an error naming both flags, unless repeats are allowed.
    with pytest.raises(ValueError, match=r"--batch.set_size=7: .*views.*--data.sample_with_replacement"):
        pose.step_indices(banks, config(set_size=7), seed=0)
    repeated = pose.step_indices(banks, config(set_size=7, sample_with_replacement=True), seed=0)(0)[
        "index_a"
    ]
    assert np.all(banks.instances[repeated] == banks.instances[repeated[:, :1]])
    assert all(len(set(row)) < 7 for row in repeated)


@pytest.mark.slow
def test_batches_have_the_documented_keys_and_labels():
    banks = toy_banks()
    cfg = config(set_size=6, pairs_per_step=2)
    batch = next(iter(pose.dataset_from_banks(banks, cfg, seed=3, start_step=5)))
    assert set(batch) == {
        "set_a",
        "set_a_view2",
        "set_b",
        "set_b_view2",
        "labels_a",
        "real_b",
        "index_a",
        "group_a",
    }
    for key in ("set_a", "set_a_view2", "set_b", "set_b_view2"):
        assert batch[key].shape == (2, 6, 16, 16, 3) and batch[key].dtype == tf.uint8
    assert not np.array_equal(batch["set_a"].numpy(), batch["set_a_view2"].numpy())  # two augmentations
    chosen = pose.step_indices(banks, cfg, seed=3)(5)
    np.testing.assert_array_equal(batch["labels_a"].numpy(), banks.euler[chosen["index_a"]])
    np.testing.assert_array_equal(batch["real_b"].numpy(), chosen["real_b"])
    np.testing.assert_array_equal(batch["index_a"].numpy(), chosen["index_a"])
    np.testing.assert_array_equal(batch["group_a"].numpy(), banks.instances[chosen["index_a"][:, 0]])
    single = next(iter(pose.dataset_from_banks(banks, cfg.replace(double_augmentation=False), seed=3)))
    assert "set_a_view2" not in single


def test_clean_renders_are_the_bank_rows_that_index_a_names(monkeypatch):
    """Without augmentation or backgrounds, set A's images are exactly the renders (on black)
    that ``index_a`` names, and ``training_bank`` counts the rows and instances they index."""
    monkeypatch.setattr(pose_procedural, "PROCEDURAL", SMALL)
    cfg = config(
        set_size=3,
        double_augmentation=False,
        real_fraction=0.0,
        crop_amplitude=0.0,
        augmentation_amplitude=0.0,
        paint_backgrounds=False,
    )
    banks = pose.load_banks(cfg)
    assert len(banks.backgrounds) == 0
    assert pose.FAMILY.training_bank(cfg) == (
        SMALL.train_instances * SMALL.views_per_instance,
        SMALL.train_instances,
    )
    batch = next(iter(pose.dataset_from_banks(banks, cfg, seed=1)))
    rows = batch["index_a"].numpy()
    np.testing.assert_array_equal(batch["set_a"].numpy(), banks.synthetic[rows][..., :3])
    np.testing.assert_array_equal(batch["group_a"].numpy(), banks.instances[rows[:, 0]])


def test_real_fraction_in_set_b_follows_the_schedule():
    banks = toy_banks(instances=4, views=8)
    cfg = config(set_size=8, pairs_per_step=256, real_fraction=0.6, titration_interval=10, steps=40)
    indices_of = pose.step_indices(banks, cfg, seed=1)
    for step in (0, 9, 10, 25, 39):
        real_b = indices_of(step)["real_b"]
        expected = schedules.real_fraction(step, 0.6, 10, 40)
        assert real_b.mean() == pytest.approx(expected, abs=0.03)
        counts = real_b.sum(axis=1)
        assert set(counts.tolist()) <= {int(np.floor(expected * 8)), int(np.ceil(expected * 8))}
    # The batch shows it: real images (constant 250) are the first slots of set B.
    cfg = config(
        set_size=8,
        pairs_per_step=4,
        real_fraction=1.0,
        titration_interval=0,
        crop_amplitude=0.0,
        augmentation_amplitude=0.0,
        double_augmentation=False,
    )
    batch = next(iter(pose.dataset_from_banks(banks, cfg, seed=1)))
    assert np.all(batch["real_b"].numpy()) and np.all(batch["set_b"].numpy() == 250)


def test_resumed_dataset_continues_the_schedule():
    banks = toy_banks()
    cfg = config(
        set_size=4,
        pairs_per_step=64,
        real_fraction=1.0,
        titration_interval=10,
        steps=40,
        crop_amplitude=0.0,
        augmentation_amplitude=0.0,
        double_augmentation=False,
    )
    first = next(iter(pose.dataset_from_banks(banks, cfg, seed=0, start_step=0)))
    resumed = next(iter(pose.dataset_from_banks(banks, cfg, seed=0, start_step=35)))
    assert first["real_b"].numpy().mean() == 0.0
    assert resumed["real_b"].numpy().mean() == 1.0


def test_presets():
    car, chair = get_preset("pose_lookup_car"), get_preset("pose_lookup_chair")
    for preset in (car, chair):
        preset.validate()
        config_checks.check_config(preset)
        assert (preset.method.similarity, preset.method.temperature, preset.trainer.learning_rate) == (
            "cosine",
            0.1,
            1e-4,
        )
        assert (
            preset.trainer.lr_halving_steps,
            preset.trainer.steps,
            preset.batch.pairs_per_step,
            preset.batch.set_size,
        ) == (10000, 40000, 4, 32)
        assert (
            preset.batch.double_augmentation
            and preset.encoder.architecture == "s5"
            and preset.data.image_size == 128
        )
        assert (preset.data.real_fraction, preset.data.titration_interval, preset.data.crop_amplitude) == (
            0.1,
            4000,
            0.1,
        )
    assert config_checks.max_elevation(car) == 0.5 and config_checks.max_elevation(chair) == 1.3
    quick = get_preset("pose_quick")
    config_checks.check_config(quick)
    assert quick.encoder.architecture in models.names()


@pytest.mark.slow
def test_training_passes_the_start_step_and_logs_the_titration(tmp_path, monkeypatch):
    from abc_tf.runs import training

    monkeypatch.setattr(pose_procedural, "PROCEDURAL", SMALL)
    cfg = config(
        encoder="s5_small",
        image_size=32,
        set_size=4,
        pairs_per_step=1,
        steps=4,
        log_every=2,
        titration_interval=2,
        real_fraction=0.5,
        embedding_dim=8,
        double_augmentation=False,
        crop_amplitude=0.0,
        augmentation_amplitude=0.0,
    )  # light graphs: a fast test
    seen_starts = []
    original = pose.make_dataset

    def spy(config, seed, start_step=0):
        seen_starts.append(start_step)
        return original(config, seed, start_step)

    monkeypatch.setattr(pose, "FAMILY", dataclasses.replace(pose.FAMILY, streams={"sets": spy}))
    result = training.train(cfg, str(tmp_path / "run"), verbose=0)
    assert result.history["real_fraction"] == [0.0, 0.5]  # last steps 1 and 3: stairs 0 and 1 of 1
    assert seen_starts == [0]
