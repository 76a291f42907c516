"""Elastic-InfoGAN (abc_tf/methods/elastic_infogan/model.py): the Gumbel-softmax code and NT-Xent
against NumPy, the augmentation it uses, the failure checks, bad settings refused, and a tiny run on the
coded MNIST through the trainer: its logs and files, its networks loaded and embedding, its
checkpoint restored (both optimizers and the learned prior) into a fresh model."""

from __future__ import annotations

import glob
import json
import os

import numpy as np
import pytest
import tensorflow as tf
from tensorboard.backend.event_processing import event_accumulator

from abc_tf import methods
from abc_tf.runs import checks
from abc_tf.runs.experiments import get_preset
from abc_tf.data.mnist import digit_augment
from abc_tf.methods.elastic_infogan import model as einfogan
from abc_tf.methods.elastic_infogan import monitor as infogan_monitor
from abc_tf.runs import checkpoints, training
from abc_tf.runs.run_dir import embed, load_run
from tolerance_helpers import rounding_rtol

QUICK = get_preset("mnist_elastic_infogan_quick")


# ---------------------------------------------------------------- the code and the losses


def test_gumbel_softmax_codes_follow_the_prior_and_are_nearly_one_hot():
    prior = np.array([0.3, 0.2, 0.15, 0.1, 0.08, 0.07, 0.05, 0.03, 0.015, 0.005])
    logits = tf.constant(np.log(prior) + 1.7, tf.float32)  # any shift: p = softmax(pi)
    gumbel = einfogan.sample_gumbel([40_000, 10], tf.constant([3, 4], tf.int64))
    codes = einfogan.gumbel_softmax(logits, gumbel).numpy()
    np.testing.assert_allclose(
        codes.sum(axis=1), 1.0, atol=1e-5
    )  # a softmax over 10, summed: rounding_rtol(12) = 3e-6
    shares = np.bincount(codes.argmax(axis=1), minlength=10) / len(codes)
    np.testing.assert_allclose(shares, prior, atol=0.008)  # ~3.5 standard errors at p = 0.3
    assert np.mean(codes.max(axis=1)) > 0.9  # temperature 0.1: close to one-hot
    # The argmax of softmax((log p + g) / t) is the Gumbel-max sample whatever t.
    np.testing.assert_array_equal(codes.argmax(axis=1), (np.log(prior) + gumbel.numpy()).argmax(axis=1))


def np_nt_xent(h1: np.ndarray, h2: np.ndarray, temperature: float) -> float:
    views = np.concatenate([h1, h2])
    views = views / np.linalg.norm(views, axis=1, keepdims=True)
    n, b = len(views), len(h1)
    total = 0.0
    for i in range(n):
        partner = (i + b) % n
        denominator = sum(np.exp(views[i] @ views[k] / temperature) for k in range(n) if k != i)
        total += -np.log(np.exp(views[i] @ views[partner] / temperature) / denominator)
    return total / n


def test_nt_xent_matches_a_numpy_restatement():
    rng = np.random.default_rng(0)
    h1, h2 = rng.normal(size=(6, 5)).astype(np.float32), rng.normal(size=(6, 5)).astype(np.float32)
    for temperature in (0.5, 1.0):
        # Two float32 evaluations: the norms and dot products of 5-d unit vectors round about 20
        # times, which dividing by tau multiplies into the logits; the softmax's 11-term sums and
        # the mean over 12 add about 30, against a loss of about 2.5.
        np.testing.assert_allclose(
            einfogan.nt_xent(h1, h2, temperature).numpy(),
            np_nt_xent(h1, h2, temperature),
            rtol=rounding_rtol(50, condition=1 / temperature),
        )
    # Identical views of orthogonal features: the loss is at its floor, -log(e^2 / (e^2 + 2(n-1)... )).
    assert einfogan.nt_xent(np.eye(4, dtype=np.float32), np.eye(4, dtype=np.float32)).numpy() < np_nt_xent(
        h1, h2, 0.5
    )


def test_info_loss_and_bce_are_the_cross_entropies():
    logits = np.array([[2.0, 0.0, -1.0], [0.0, 0.0, 0.0]], np.float32)
    code = np.array([[0.9, 0.05, 0.05], [0.0, 0.2, 0.8]], np.float32)
    expected = np.mean([-np.log(np.exp(2) / (np.exp(2) + 1 + np.exp(-1))), np.log(3.0)])
    # float32 against float64 on exact inputs: log-sum-exps of 3 terms and BCE's log(1 + e^-x) (exp
    # multiplies by |x| <= 2) and a mean, about 5 roundings: rounding_rtol(5, condition=2) = 2.4e-6.
    np.testing.assert_allclose(einfogan.info_loss(logits, code).numpy(), expected, rtol=1e-5)
    np.testing.assert_allclose(
        einfogan.bce(np.array([[0.0], [2.0]], np.float32), 1.0).numpy(),
        np.mean([np.log(2.0), np.log(1 + np.exp(-2.0))]),
        rtol=1e-5,
    )


def test_the_augmentation_is_the_data_layers():
    # T lives in abc_tf/data/mnist/digit_augment.py (tested there), shared with MNIST's augmentation baseline.
    assert einfogan.augment is digit_augment.augment


def test_the_defaults_are_the_authors_and_the_elastic_field_opt_in():
    assert QUICK.method.ntxent_temperature == einfogan.NTXENT_TEMPERATURE == 1.0  # their run.sh's --mytemp 1
    assert QUICK.data.class_split == 1 and QUICK.data.class_split_pool == "all"
    model = einfogan.build(QUICK, (28, 28, 1))
    assert model.ntxent_temperature == 1.0 and model.elastic_pixels == 0.0
    elastic = einfogan.build(QUICK.replace(elastic_field=True), (28, 28, 1))
    assert elastic.elastic_pixels == digit_augment.ELASTIC_PIXELS


@pytest.mark.slow
def test_nt_xent_is_q_s_head_on_the_d_step_s_own_trunk_passes():
    """As the authors' training loop: the trunk takes x and T(x) in a pass each (each with its
    own batch statistics) before the D update, and NT-Xent compares Q's head on those features;
    one pass of both together would normalise them over 2B images and give another loss."""
    model = einfogan.build(QUICK.replace(batch_size=8), (28, 28, 1))
    real = np.random.default_rng(0).integers(0, 256, size=(8, 28, 28, 1)).astype(np.uint8)
    images = real.astype(np.float32) / 255.0
    seeds = tf.random.experimental.stateless_split(tf.constant([model.seed, 0], tf.int64), 3)  # step 0's
    augmented = digit_augment.augment(images, seeds[2])

    def head(features):
        return model.q_features(features, training=True)

    expected = einfogan.nt_xent(
        head(model.trunk(images, training=True)), head(model.trunk(augmented, training=True))
    )
    joint = head(model.trunk(tf.concat([images, augmented], axis=0), training=True))
    one_pass = einfogan.nt_xent(joint[:8], joint[8:])
    logs = model.train_step({"images": tf.constant(real)})
    assert float(logs["ntxent_loss"]) == float(expected)  # the same ops on the same tensors, eagerly
    assert abs(float(one_pass) - float(expected)) > 0.01 * float(expected)  # measured: 2.8% apart


@pytest.mark.parametrize(
    "overrides, flag",
    [
        ({"prior": "skewed"}, "--method.prior"),
        ({"contrastive_weight": -1.0}, "--method.contrastive_weight"),
        ({"ntxent_temperature": 0.0}, "--method.ntxent_temperature"),
        ({"noise_dim": 0}, "--method.noise_dim"),
    ],
)
def test_bad_settings_are_refused_before_training(overrides, flag):
    with pytest.raises(ValueError, match=flag):
        checks.check_config(QUICK.replace(source="procedural", **overrides))


def test_the_ablations_are_named_with_what_they_are_told():
    """Comparison tables name the paper's baselines and state what each variant is told."""
    method = einfogan.METHOD
    assert method.label_for(QUICK) == "elastic_infogan"
    assert (
        method.label_for(get_preset("mnist_gumbel_infogan_quick"))
        == "elastic_infogan (Gumbel-softmax: learned prior, no NT-Xent)"
    )
    assert (
        method.label_for(get_preset("mnist_infogan_quick"))
        == "elastic_infogan (InfoGAN: uniform prior, no NT-Xent)"
    )
    assert "augmentations" in method.supervision_for(QUICK)
    assert (
        method.supervision_for(get_preset("mnist_infogan_quick"))
        == "none: unlabelled images; class imbalance unknown"
    )


def test_other_families_images_are_refused():
    method = methods.get_method("elastic_infogan")
    with pytest.raises(
        ValueError,
        match=r"^--method=elastic_infogan \(InfoGAN's MNIST networks\) takes 28 x 28 x 1 images; "
        r"data 'mnist' gives \(64, 64, 3\).$",
    ):
        checks.check_image_shape(QUICK, method, (64, 64, 3))
    checks.check_image_shape(QUICK, method, (28, 28, 1))


# ---------------------------------------------------------------- a tiny run


def scalars(log_dir: str) -> tuple[set[str], set[str]]:
    tags, images = set(), set()
    for path in glob.glob(os.path.join(log_dir, "events.out.tfevents.*")):
        accumulator = event_accumulator.EventAccumulator(path, size_guidance={"tensors": 0, "images": 0})
        accumulator.Reload()
        tags |= set(accumulator.Tags()["tensors"])
        images |= set(accumulator.Tags()["images"])
    return tags, images


@pytest.mark.slow
def test_a_tiny_run_trains_logs_saves_and_restores(tmp_path, small_mnist):
    path = str(tmp_path / "mnist.npz")
    np.savez(path, **small_mnist)
    # A plain graph: the preset's XLA compile takes seconds per model on a CPU, and every
    # method's step is compiled with XLA once in tests/test_methods.py.
    config = QUICK.replace(
        path=path,
        steps=6,
        log_every=3,
        batch_size=16,
        class_split=3,
        ntxent_temperature=1.0,
        jit_compile=False,
    )
    run_dir = str(tmp_path / "run")
    result = training.train(config, run_dir, verbose=0)
    assert result.final_step == 6
    assert {
        "loss",
        "d_loss",
        "g_loss",
        "info_loss",
        "ntxent_loss",
        "prior_max",
        "generated_diversity",
        "prior_sorted_l1",
    } <= set(result.history)
    assert all(np.isfinite(result.history["loss"]))
    for name in ("encoder", "generator", "discriminator", "q"):
        assert os.path.isfile(os.path.join(run_dir, f"{name}.keras"))
    split = json.load(open(os.path.join(run_dir, infogan_monitor.CLASS_SPLIT_FILE)))
    assert split["class_split"] == 3 and len(split["proportions"]) == 10
    prior = json.load(open(os.path.join(run_dir, infogan_monitor.PRIOR_FILE)))
    assert prior["step"] == 6 and abs(sum(prior["prior"]) - 1) < 1e-5
    assert [entry["step"] for entry in prior["history"]] == [3, 6] and prior["history"][-1]["prior"] == prior[
        "prior"
    ]
    np.testing.assert_allclose(prior["true_proportions"], np.array(split["counts"]) / sum(split["counts"]))
    tags, images = scalars(os.path.join(run_dir, "logs", einfogan.LOG_SUBDIR))
    assert {"prior/0", "prior_sorted/learned_0", "prior_sorted/true_9", "samples_per_code"} <= tags | images

    # The run directory is what evaluators read: the encoder embeds into Q's 128 features.
    run = load_run(run_dir)
    assert embed(run.encoder, small_mnist["x_test"][:7, ..., None]).shape == (7, 128)
    assert run.network("generator").input_shape == (None, 72)

    # The checkpoint holds both optimizers and the learned prior.
    trained = result.networks  # noqa: F841 - the trained networks stay alive beside the fresh model
    model = training.build_model(config)
    np.testing.assert_array_equal(model.prior_logits.numpy(), 0.0)
    assert model.ntxent_temperature == 1.0  # the authors' run script's setting, from the config
    assert checkpoints.restore(model, run_dir) == 6
    assert int(model.d_optimizer.iterations.numpy()) == 6 and int(model.optimizer.iterations.numpy()) == 6
    np.testing.assert_allclose(
        model.prior(), prior["prior"], rtol=1e-6
    )  # the same logits, the same softmax: equal
    assert not np.allclose(model.prior_logits.numpy(), 0.0), "the learned prior did not move"
    # Resuming with more steps continues from the checkpoint.
    more = training.train(config.replace(steps=9), run_dir, verbose=0)
    assert more.final_step == 9 and len(more.history["loss"]) == 1
    history = json.load(open(os.path.join(run_dir, infogan_monitor.PRIOR_FILE)))["history"]
    assert [entry["step"] for entry in history] == [3, 6, 9]  # the resumed run keeps the history


@pytest.mark.slow
def test_the_infogan_ablation_keeps_its_prior_uniform(tmp_path, small_mnist):
    path = str(tmp_path / "mnist.npz")
    np.savez(path, **small_mnist)
    config = get_preset("mnist_infogan_quick").replace(
        path=path, steps=3, log_every=3, batch_size=16, jit_compile=False
    )
    result = training.train(config, str(tmp_path / "run"), verbose=0)
    assert result.history["ntxent_loss"] == [0.0]
    prior = json.load(open(tmp_path / "run" / infogan_monitor.PRIOR_FILE))["prior"]
    np.testing.assert_allclose(prior, 0.1, atol=1e-7)  # softmax(0): float32's 0.1, 1.5e-9 from it
