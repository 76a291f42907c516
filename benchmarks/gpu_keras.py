"""ABC training steps on Keras 3's JAX backend: the GPU measurement where TensorFlow is absent.

Some GPU machines carry JAX but not TensorFlow. TensorFlow's GPU build, about 600 MB plus CUDA 12
libraries, cannot be carried to them. This module times what the hardware gives the same
architectures and loss. The encoders are those of ``models``: pure Keras, the layers of the paper's
tables. The ABC loss is restated in ``keras.ops`` below, and the tests check it against
``abc_tf.losses``. Adam trains them by one jitted stateless step, so every figure is XLA-compiled.
It leaves out TensorFlow's own path: ``AbcModel.fit`` and tf.data. On a GPU machine with TensorFlow,
``python -m benchmarks.gpu --backend=tensorflow`` measures that path.

It runs one experiment per process, so the peak device memory belongs to that experiment. It prints
one ``RESULT{json}`` line: the measurements, with the date, GPU, versions and preset facts that the
sections state. ``benchmarks/gpu.py`` starts it, keeps its result in docs/figures/benchmarks/gpu.json
and writes the sections from that file.

  KERAS_BACKEND=jax python -m benchmarks.gpu_keras --experiment=mnist [--batches=FILE.npz]
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
import time

import keras
import numpy as np

try:  # the step is JAX's; the loss restatement alone is also imported (and tested) under TensorFlow
    import jax
except ImportError:
    jax = None
from keras import ops

import models
from abc_tf.runs.experiments import get_preset
from benchmarks.gpu import gpu_name

# Image shape of each experiment's data family (the families themselves need TensorFlow).
IMAGE_SHAPES = {"mnist": (28, 28, 1), "shapes3d": (64, 64, 3)}
PRECISIONS = ("float32", "mixed_float16", "mixed_bfloat16")


def similarity_ops(x, y, similarity: str):
    """[P, N, D], [P, M, D] -> [P, N, M]; the l2sq, l2 and cosine forms of abc_tf.losses."""
    if similarity == "cosine":
        x = ops.normalize(x, axis=-1, order=2)
        y = ops.normalize(y, axis=-1, order=2)
        return ops.matmul(x, ops.swapaxes(y, -1, -2))
    squared = (
        ops.sum(ops.square(x), axis=-1)[..., :, None]
        + ops.sum(ops.square(y), axis=-1)[..., None, :]
        - 2.0 * ops.matmul(x, ops.swapaxes(y, -1, -2))
    )
    squared = ops.maximum(squared, 0.0)
    if similarity == "l2sq":
        return -squared
    if similarity == "l2":
        return -ops.sqrt(squared + 1e-9)
    raise ValueError(f"The keras.ops restatement has no similarity {similarity!r} (l2sq, l2, cosine).")


def abc_loss_ops(set_a, set_b, similarity: str, temperature: float, set_a_view2=None, set_b_view2=None):
    """The symmetric ABC loss, as ``abc_tf.losses.abc_loss`` computes it, in backend-neutral ops."""

    def cycle(start, through, target):
        alpha = ops.softmax(similarity_ops(start, through, similarity) / temperature, axis=-1)
        logits = similarity_ops(ops.matmul(alpha, through), target, similarity) / temperature
        return -ops.mean(ops.diagonal(ops.log_softmax(logits, axis=-1), axis1=-2, axis2=-1))

    target_a = set_a if set_a_view2 is None else set_a_view2
    target_b = set_b if set_b_view2 is None else set_b_view2
    return cycle(set_a, set_b, target_a) + cycle(set_b, set_a, target_b)


def experiment_settings(experiment: str, pairs: int | None = None, set_size: int | None = None) -> dict:
    """Model, image shape, batch layout and loss of a preset, without its TensorFlow data family.
    ``pairs`` and ``set_size`` override the preset's."""
    config = get_preset(experiment)
    config = config.replace(
        pairs_per_step=pairs or config.batch.pairs_per_step, set_size=set_size or config.batch.set_size
    )
    shape = IMAGE_SHAPES.get(config.data.family) or (config.data.image_size, config.data.image_size, 3)
    views = 2 if config.batch.double_augmentation else 1
    return {
        "config": config,
        "image_shape": shape,
        # set_a, set_b, then their second views: [P, N, H, W, C] each.
        "set_shapes": [(config.batch.pairs_per_step, config.batch.set_size) + shape] * (2 * views),
    }


def preset_facts(experiment: str) -> dict:
    """What the sections say of an experiment's preset: encoder, embedding size, similarity, image
    shape and training steps. The result keeps them, so that gpu.py's sections need only the results."""
    settings = experiment_settings(experiment)
    config = settings["config"]
    return {
        "model": config.encoder.architecture,
        "embedding_dim": config.encoder.embedding_dim,
        "similarity": config.method.similarity,
        "image_shape": list(settings["image_shape"]),
        "preset_steps": config.trainer.steps,
    }


def make_step(encoder: keras.Model, optimizer: keras.optimizers.Optimizer, settings: dict):
    """A jitted training step (state, images) -> (state, loss); images is the tuple of sets."""
    config = settings["config"]
    sizes = [shape[0] * shape[1] for shape in settings["set_shapes"]]

    def loss_fn(trainable, non_trainable, images):
        flat = ops.concatenate(
            [ops.reshape(ops.cast(x, "float32") / 255.0, (-1,) + settings["image_shape"]) for x in images],
            axis=0,
        )
        embeddings, non_trainable = encoder.stateless_call(trainable, non_trainable, flat, training=True)
        embeddings = ops.cast(embeddings, "float32")
        pieces, start = [], 0
        for shape, size in zip(settings["set_shapes"], sizes):
            pieces.append(ops.reshape(embeddings[start : start + size], (shape[0], shape[1], -1)))
            start += size
        loss = abc_loss_ops(*pieces[:2], config.method.similarity, config.method.temperature, *pieces[2:])
        return loss, non_trainable

    gradient_fn = jax.value_and_grad(loss_fn, has_aux=True)

    @jax.jit
    def step(state, images):
        trainable, non_trainable, optimizer_variables = state
        (loss, non_trainable), gradients = gradient_fn(trainable, non_trainable, images)
        trainable, optimizer_variables = optimizer.stateless_apply(optimizer_variables, gradients, trainable)
        return (trainable, non_trainable, optimizer_variables), loss

    return step


def build(experiment: str, precision: str, pairs: int | None = None, set_size: int | None = None):
    settings = experiment_settings(experiment, pairs, set_size)
    config = settings["config"]
    keras.config.set_dtype_policy(precision)
    keras.utils.set_random_seed(0)
    encoder = models.build(
        config.encoder.architecture,
        embedding_dim=config.encoder.embedding_dim,
        input_shape=settings["image_shape"],
    )
    keras.config.set_dtype_policy("float32")
    optimizer = keras.optimizers.Adam(config.trainer.learning_rate)
    optimizer.build(encoder.trainable_variables)
    state = (
        [v.value for v in encoder.trainable_variables],
        [v.value for v in encoder.non_trainable_variables],
        [v.value for v in optimizer.variables],
    )
    return settings, make_step(encoder, optimizer, settings), state


def time_steps(
    experiment: str,
    precision: str,
    seconds: float,
    max_steps: int,
    pairs: int | None = None,
    set_size: int | None = None,
) -> dict:
    """Compile time, then steps/s over up to ``max_steps`` steps or ``seconds``, on random uint8 sets."""
    settings, step, state = build(experiment, precision, pairs, set_size)
    rng = np.random.default_rng(0)
    images = tuple(
        jax.device_put(rng.integers(0, 256, size=shape, dtype=np.uint8)) for shape in settings["set_shapes"]
    )
    start = time.perf_counter()
    state, loss = step(state, images)
    loss.block_until_ready()
    compile_s = time.perf_counter() - start
    steps, start = 0, time.perf_counter()
    while steps < max_steps and time.perf_counter() - start < seconds:
        for _ in range(10):  # dispatch ahead; the device runs the queue
            state, loss = step(state, images)
        steps += 10
        loss.block_until_ready()
    rate = steps / (time.perf_counter() - start)
    images_per_step = sum(int(np.prod(shape[:2])) for shape in settings["set_shapes"])
    stats = jax.devices()[0].memory_stats() or {}
    return {
        "precision": precision,
        "compile_s": compile_s,
        "steps_per_s": rate,
        "pairs": settings["config"].batch.pairs_per_step,
        "set_size": settings["config"].batch.set_size,
        "peak_memory_mb": stats.get("peak_bytes_in_use", 0) / 2**20,
        "images_per_s": rate * images_per_step,
        "images_per_step": images_per_step,
        "loss_finite": bool(np.isfinite(float(loss))),
    }


def time_loss(similarity: str, pairs: int, size: int, dim: int, seconds: float = 2.0) -> dict:
    """Forward and backward of the loss alone on [P, N, d] float32 embeddings: seconds per call."""
    rng = np.random.default_rng(0)
    set_a, set_b = (jax.device_put(rng.normal(size=(pairs, size, dim)).astype(np.float32)) for _ in range(2))
    gradient = jax.jit(jax.grad(lambda a, b: abc_loss_ops(a, b, similarity, 1.0)))
    gradient(set_a, set_b).block_until_ready()
    calls, start = 0, time.perf_counter()
    while calls < 10 or time.perf_counter() - start < seconds:
        result = gradient(set_a, set_b)
        calls += 1
    result.block_until_ready()
    return {
        "similarity": similarity,
        "pairs": pairs,
        "set_size": size,
        "dim": dim,
        "seconds": (time.perf_counter() - start) / calls,
    }


def scaling(experiment: str, precisions: list[str], seconds: float, budget_s: float) -> dict:
    """The loss alone, then steps/s over set sizes and pairs per step, smallest batch first.
    JAX's peak memory only grows. So each row's peak is that of the largest batch so far, its own.
    Rows left when ``budget_s`` has passed are skipped.
    Compiling a step of 32k images takes a minute or more."""
    grid = sorted(
        [(1, n) for n in (32, 64, 128, 256, 512, 1024)] + [(p, n) for p in (4, 16) for n in (32, 128, 1024)],
        key=lambda pn: pn[0] * pn[1],
    )
    config = get_preset(experiment)
    start = time.perf_counter()
    loss_rows = [
        time_loss(config.method.similarity, pairs, size, config.encoder.embedding_dim, seconds=0.5)
        for pairs, size in grid
    ]
    rows = []
    for precision in precisions:
        for pairs, size in grid:
            if time.perf_counter() - start > budget_s:
                rows.append(
                    {
                        "precision": precision,
                        "pairs": pairs,
                        "set_size": size,
                        "failed": "skipped: time budget",
                    }
                )
                continue
            try:
                rows.append(time_steps(experiment, precision, seconds, 1000, pairs, size))
            except Exception as error:  # out of device memory at the largest sizes: recorded, not fatal
                rows.append(
                    {"precision": precision, "pairs": pairs, "set_size": size, "failed": str(error)[:300]}
                )
            print(rows[-1], file=sys.stderr, flush=True)
    return {"steps": rows, "loss": loss_rows, "budget_s": budget_s}


def train_real_batches(path: str, precision: str) -> dict:
    """Trains the mnist preset from scratch on the batches of ``path``, one batch a step.
    TensorFlow's own MNIST pipeline made those batches: see gpu.py --make_batches. The wall time runs
    from the model's construction to the last step's result, compile included. That is how the paper's
    "500 steps in under 30 s on a V100" counts it."""
    with np.load(path) as stored:
        set_a, set_b = stored["set_a"], stored["set_b"]  # [steps, P, N, 28, 28, 1] uint8
    start = time.perf_counter()
    settings, step, state = build("mnist", precision)
    set_a, set_b = jax.device_put(set_a), jax.device_put(set_b)
    losses = []
    for index in range(len(set_a)):
        state, loss = step(state, (set_a[index], set_b[index]))
        losses.append(loss)
    losses = [float(value) for value in losses]  # waits for the last step
    return {
        "precision": precision,
        "steps": len(losses),
        "wall_s": time.perf_counter() - start,
        "loss_first_50": float(np.mean(losses[:50])),
        "loss_last_50": float(np.mean(losses[-50:])),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--experiment", required=True)
    parser.add_argument("--precisions", default=",".join(PRECISIONS))
    parser.add_argument(
        "--seconds", type=float, default=8.0, help="Timed seconds per precision, after compiling."
    )
    parser.add_argument("--max_steps", type=int, default=2000)
    parser.add_argument(
        "--batches", default="", help="npz of real MNIST batches for the 500-step run (mnist only)."
    )
    parser.add_argument(
        "--scaling", action="store_true", help="Steps/s over set sizes and pairs per step instead."
    )
    parser.add_argument(
        "--budget_s", type=float, default=150.0, help="--scaling: seconds after which rows are skipped."
    )
    args = parser.parse_args()
    if jax is None or keras.backend.backend() != "jax":
        sys.exit("gpu_keras.py needs JAX: run it with KERAS_BACKEND=jax (benchmarks/gpu.py does).")
    device = jax.devices()[0]
    result = {
        "experiment": args.experiment,
        "command": "python -m benchmarks.gpu_keras " + " ".join(sys.argv[1:]),
        "date": datetime.date.today().isoformat(),
        "device": device.device_kind,
        "platform": device.platform,
        "gpu": gpu_name() if device.platform == "gpu" else device.device_kind,
        "jax": jax.__version__,
        "keras": keras.__version__,
        **preset_facts(args.experiment),
        "rates": [],
    }
    if args.scaling:
        result["scaling"] = scaling(args.experiment, args.precisions.split(","), args.seconds, args.budget_s)
        print("RESULT" + json.dumps(result), flush=True)
        return
    for precision in args.precisions.split(","):
        result["rates"].append(time_steps(args.experiment, precision, args.seconds, args.max_steps))
        print(result["rates"][-1], file=sys.stderr, flush=True)
    if args.batches:
        result["real"] = [
            train_real_batches(args.batches, precision) for precision in ("float32", "mixed_bfloat16")
        ]
    stats = device.memory_stats() or {}
    result["peak_memory_mb"] = stats.get("peak_bytes_in_use", 0) / 2**20
    print("RESULT" + json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
