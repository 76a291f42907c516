"""Steps/s of ABCModel.fit against a plain eager GradientTape loop of the same step.

The step: S4 (MNIST) encoder, two sets of 64 28x28x1 images, l2sq ABC loss, Adam.
Both measured in one run on the same in-memory batch, so the figure is the ratio.
``benchmarks/run_all.py`` uses the same two functions for every experiment.

  python benchmarks/train_step.py [--steps 200] [--no_write]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Callable

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

import models  # noqa: E402
from abc_tf import losses  # noqa: E402
from abc_tf.model import SET_KEYS, ABCModel, to_float_images  # noqa: E402
from benchmarks.report import machine_line, write_section  # noqa: E402

SET_SIZE = 64


def mnist_batch(seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {key: rng.integers(0, 256, size=(1, SET_SIZE, 28, 28, 1), dtype=np.uint8) for key in ("set_a", "set_b")}


def fit_steps_per_second(
    build_encoder: Callable[[], keras.Model],
    batch: dict,
    steps: int,
    jit_compile: bool = False,
    steps_per_execution: int = 1,
    policy: str = "float32",
    model_kwargs: dict | None = None,
) -> float:
    """ABCModel.fit on ``batch`` repeated from memory, after a warm-up that traces the step."""
    steps = max(steps_per_execution, steps - steps % steps_per_execution)  # whole compiled calls only
    keras.mixed_precision.set_global_policy(policy)
    keras.utils.set_random_seed(0)
    model = ABCModel(build_encoder(), **(model_kwargs or {}))
    model.compile(optimizer=keras.optimizers.Adam(1e-4), jit_compile=jit_compile, steps_per_execution=steps_per_execution)
    dataset = tf.data.Dataset.from_tensors(batch).repeat()
    model.fit(dataset, epochs=1, steps_per_epoch=2 * steps_per_execution, verbose=0)
    start = time.perf_counter()
    model.fit(dataset, epochs=1, steps_per_epoch=steps, verbose=0)
    rate = steps / (time.perf_counter() - start)
    keras.mixed_precision.set_global_policy("float32")
    return rate


def eager_steps_per_second(
    build_encoder: Callable[[], keras.Model], batch: dict, steps: int, similarity: str = "l2sq", temperature: float = 1.0
) -> float:
    """The authors' style: a Python loop run eagerly op by op, each set embedded by its own call."""
    keras.utils.set_random_seed(0)
    encoder = build_encoder()
    optimizer = keras.optimizers.Adam(1e-4)
    sets = {key: tf.constant(batch[key]) for key in SET_KEYS if key in batch}

    def step():
        with tf.GradientTape() as tape:
            embedded = {
                key: tf.stack([encoder(to_float_images(images[p]), training=True) for p in range(images.shape[0])])
                for key, images in sets.items()
            }
            if "set_b" in embedded:
                loss, _ = losses.abc_loss(
                    embedded["set_a"], embedded["set_b"], similarity, temperature,
                    embedded.get("set_a_view2"), embedded.get("set_b_view2"),
                )
            else:
                loss, _ = losses.contrastive_loss(embedded["set_a"], embedded["set_a_view2"], similarity, temperature)
        gradients = tape.gradient(loss, encoder.trainable_variables)
        optimizer.apply(gradients, encoder.trainable_variables)

    for _ in range(2):
        step()
    start = time.perf_counter()
    for _ in range(steps):
        step()
    return steps / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--no_write", action="store_true", help="Print only; leave BENCHMARKS.md alone.")
    args = parser.parse_args()
    batch = mnist_batch()
    s4 = lambda: models.build("s4")  # noqa: E731
    eager = eager_steps_per_second(s4, batch, args.steps)
    rows = [("plain eager GradientTape loop", eager)]
    # bfloat16 is what --mixed_precision picks on a CPU; float16 would be emulated there.
    policy = "mixed_float16" if tf.config.list_physical_devices("GPU") else "mixed_bfloat16"
    settings = [(False, 1, "float32"), (False, 10, "float32"), (True, 1, "float32"), (True, 10, "float32"),
                (False, 1, policy), (False, 10, policy)]
    for jit_compile, steps_per_execution, dtype_policy in settings:
        rate = fit_steps_per_second(s4, batch, args.steps, jit_compile, steps_per_execution, dtype_policy)
        name = f"ABCModel.fit, jit_compile={jit_compile}, steps_per_execution={steps_per_execution}, {dtype_policy}"
        rows.append((name, rate))
    lines = [
        machine_line(),
        "",
        f"Step: S4 encoder, two sets of {SET_SIZE} 28x28x1 images, l2sq ABC loss, Adam; {args.steps} timed steps each.",
        "Goal: fit at least 3x the eager loop.",
        "",
        "| training loop | steps/s | images/s | vs eager |",
        "|---|---|---|---|",
    ]
    for name, rate in rows:
        lines.append(f"| {name} | {rate:.1f} | {rate * 2 * SET_SIZE:.0f} | {rate / eager:.2f}x |")
    lines += ["", "Command: `python benchmarks/train_step.py`"]
    body = "\n".join(lines)
    print(body)
    if not args.no_write:
        write_section("Training step: ABCModel.fit against an eager loop (S4, MNIST sets)", body)


if __name__ == "__main__":
    main()
