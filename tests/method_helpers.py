"""Every method on the smallest run its data allows, for the tests that train each one the same
way (tests/test_methods.py: XLA, mixed_float16 with loss scaling, two replicas): the toy family
for the methods on sets, built-in Shapes3D pairs for PMP, the small coded MNIST (an .npz the
caller writes) for the methods on single images."""

from __future__ import annotations

import contextlib

import keras
import numpy as np

from abc_tf import data, experiments
from abc_tf.config import ExperimentConfig
from abc_tf.experiments import get_preset
from abc_tf.runs import training
from mnist_helpers import small_arrays
from toy_family import CONFIG as TOY
from toy_method import TwoNetworkConfig

# Two of everything a replica splits: the global batch of each is a multiple of 2.
SMALL = dict(steps=4, log_every=2)


def write_small_mnist(path: str) -> str:
    """The small coded MNIST (tests/mnist_helpers.py) as an .npz at ``path``."""
    np.savez(path, **small_arrays())
    return path


def tiny_configs(mnist_npz: str) -> dict[str, ExperimentConfig]:
    """{method: its config}: every registered method of the library and the toy two-network
    method, built from their parts (register ``two_network`` and the toy family before training
    them)."""
    images = dict(path=mnist_npz, batch_size=8, **SMALL)
    return {
        "abc": TOY.replace(**SMALL),
        "contrastive": experiments.choose(TOY, method="contrastive", double_augmentation=True, **SMALL),
        "two_network": TOY.replace(method=TwoNetworkConfig(name="two_network", temperature=TOY.method.temperature),
                                   **SMALL),
        "pmp": get_preset("shapes3d_pmp_quick").replace(pairs_per_step=2, mixed_precision=False, eval_every=0, **SMALL),
        "vae": get_preset("mnist_vae_quick").replace(jit_compile=False, **images),
        "u_vitae": get_preset("mnist_u_vitae_quick").replace(jit_compile=False, **images),
        "c_vitae": get_preset("mnist_c_vitae_quick").replace(jit_compile=False, **images),
        "elastic_infogan": get_preset("mnist_elastic_infogan_quick").replace(
            jit_compile=False, class_split=3, ntxent_temperature=1.0, **images),
        "ml_vae": get_preset("mnist_ml_vae_quick").replace(jit_compile=False, path=mnist_npz, set_size=8, pairs_per_step=2,
                                                           **SMALL),
        "cc_vae": get_preset("mnist_cc_vae_quick").replace(jit_compile=False, path=mnist_npz, set_size=8, pairs_per_step=2,
                                                           **SMALL),
        # The procedural pose bank at 16 x 16 (its smallest), stage 2 from step 2.
        "lord": get_preset("pose_lord_quick").replace(image_size=16, set_size=4, pairs_per_step=2, stage1_steps=2,
                                                      n_adain_layers=2, adain_dim=8, base_channels=4, content_dim=4,
                                                      class_dim=4, **SMALL),
    }


def fit_losses(config: ExperimentConfig, steps: int, strategy=None, eagerly: bool = False
               ) -> tuple[keras.Model, list[float]]:
    """(the model, the loss of each of ``steps`` steps) of ``config``'s method, built as the
    trainer builds it (its precision policy, its seed; under ``strategy`` if given) and trained
    by ``fit`` on its family's stream, one Keras epoch a step; ``eagerly``: its step run op by
    op, not traced (the same arithmetic, without the seconds a trace costs)."""
    family = data.get_family(config.data.family)
    try:
        with strategy.scope() if strategy is not None else contextlib.nullcontext():
            model = training.build_model(config)
        model.run_eagerly = eagerly
        dataset = training.make_family_dataset(family, config, start_step=0)
        history = model.fit(dataset, epochs=steps, steps_per_epoch=1, verbose=0, shuffle=False)
    finally:
        keras.mixed_precision.set_global_policy("float32")  # build_model set the config's
    return model, history.history["loss"]
