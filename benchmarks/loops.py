"""The training loops the benchmarks time, and the yardsticks they are read against.

- :func:`eager_runner`: the authors' style. A Python loop runs eagerly op by op, and each set is
  embedded by its own encoder call.
- :func:`fit_runner`: our training step, ``AbcModel.fit`` fed from memory, with a chosen precision,
  XLA and ``steps_per_execution``. :func:`pipeline_fit_rate` is the same fed by the experiment's own
  data pipeline.
- :func:`interleaved_rates`: every runner timed in turn, round after round, with the median per
  runner. So a burst of load from other jobs on a shared machine hits all of them alike.
- :func:`training_gflop`, or :func:`graph_gflop` counted on the traced step, gives the work of one
  step. :func:`matmul_gflops_per_s` gives the machine's dense matrix-product rate. Together they tell
  a loop that wastes time from one that is bound by arithmetic.
"""

from __future__ import annotations

import statistics
import time
from typing import Callable

import keras
import numpy as np
import tensorflow as tf

from abc_tf import losses
from abc_tf.methods.abc.model import SET_KEYS, AbcModel
from abc_tf.methods.base import to_float_images

Runner = Callable[[int], float]  # trains about n steps, returns steps per second


def eager_runner(
    build_encoder: Callable[[], keras.Model], batch: dict, similarity: str, temperature: float
) -> Runner:
    keras.utils.set_random_seed(0)
    encoder = build_encoder()
    optimizer = keras.optimizers.Adam(1e-4)
    sets = {key: tf.constant(batch[key]) for key in SET_KEYS if key in batch}

    def step():
        with tf.GradientTape() as tape:
            embedded = {
                key: tf.stack(
                    [encoder(to_float_images(images[p]), training=True) for p in range(images.shape[0])]
                )
                for key, images in sets.items()
            }
            if "set_b" in embedded:
                loss, _ = losses.abc_loss(
                    embedded["set_a"],
                    embedded["set_b"],
                    similarity,
                    temperature,
                    embedded.get("set_a_view2"),
                    embedded.get("set_b_view2"),
                )
            else:
                loss, _ = losses.contrastive_loss(
                    embedded["set_a"], embedded["set_a_view2"], similarity, temperature
                )
        gradients = tape.gradient(loss, encoder.trainable_variables)
        optimizer.apply(gradients, encoder.trainable_variables)

    def run(steps: int) -> float:
        start = time.perf_counter()
        for _ in range(steps):
            step()
        return steps / (time.perf_counter() - start)

    run(2)  # warm-up: creates the optimizer's slots
    return run


def compiled_model(
    build_encoder: Callable[[], keras.Model],
    jit_compile: bool = False,
    steps_per_execution: int = 1,
    policy: str = "float32",
    model_kwargs: dict | None = None,
) -> AbcModel:
    keras.mixed_precision.set_global_policy(policy)  # read by the layers as they are created
    keras.utils.set_random_seed(0)
    model = AbcModel(build_encoder(), **(model_kwargs or {}))
    keras.mixed_precision.set_global_policy("float32")
    model.compile(
        optimizer=keras.optimizers.Adam(1e-4),
        jit_compile=jit_compile,
        steps_per_execution=steps_per_execution,
    )
    return model


class EpochTimer(keras.callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.seconds: list[float] = []

    def on_epoch_begin(self, epoch, logs=None):
        self._start = time.perf_counter()

    def on_epoch_end(self, epoch, logs=None):
        self.seconds.append(time.perf_counter() - self._start)


def fit_runner(
    build_encoder: Callable[[], keras.Model],
    batch: dict,
    jit_compile: bool = False,
    steps_per_execution: int = 1,
    policy: str = "float32",
    model_kwargs: dict | None = None,
) -> Runner:
    """``AbcModel.fit`` on one batch repeated from memory: the training step alone."""
    model = compiled_model(build_encoder, jit_compile, steps_per_execution, policy, model_kwargs)
    dataset = tf.data.Dataset.from_tensors(batch).repeat()
    timer = EpochTimer()

    def run(steps: int) -> float:
        steps = max(steps_per_execution, steps - steps % steps_per_execution)  # whole compiled calls only
        # Timed from the epoch's start to its end, as in a long training run: fit's own set-up
        # (callbacks, the iterator) is left out.
        model.fit(dataset, epochs=1, steps_per_epoch=steps, verbose=0, shuffle=False, callbacks=[timer])
        return steps / timer.seconds[-1]

    run(2 * steps_per_execution)  # warm-up: traces the step
    return run


def bare_runner(
    build_encoder: Callable[[], keras.Model],
    batch: dict,
    policy: str = "float32",
    model_kwargs: dict | None = None,
) -> Runner:
    """The floor for ``fit``: the same AbcModel, optimizer and batch, trained by a plain compiled step.
    The step is a ``tf.function`` of GradientTape, loss and ``optimizer.apply``, called in a Python loop.
    It has no metrics, callbacks or data iterator."""
    model = compiled_model(build_encoder, policy=policy, model_kwargs=model_kwargs)
    sets = {key: tf.constant(value) for key, value in batch.items()}
    kwargs = model_kwargs or {}
    similarity, temperature = kwargs.get("similarity", "l2sq"), kwargs.get("temperature", 1.0)

    @tf.function
    def step(sets):
        with tf.GradientTape() as tape:
            embedded = model.embed_sets(sets, training=True)
            if kwargs.get("loss_type") == "contrastive":
                loss, _ = losses.contrastive_loss(
                    embedded["set_a"], embedded["set_a_view2"], similarity, temperature
                )
            else:
                loss, _ = losses.abc_loss(
                    embedded["set_a"],
                    embedded["set_b"],
                    similarity,
                    temperature,
                    embedded.get("set_a_view2"),
                    embedded.get("set_b_view2"),
                )
        model.optimizer.apply(tape.gradient(loss, model.trainable_variables), model.trainable_variables)
        return loss

    def run(steps: int) -> float:
        start = time.perf_counter()
        for _ in range(steps):
            loss = step(sets)
        loss.numpy()  # waits for the last step
        return steps / (time.perf_counter() - start)

    run(2)  # warm-up: traces the step, creates the optimizer's slots
    return run


def pipeline_fit_rate(model: AbcModel, dataset: tf.data.Dataset, steps: int, rounds: int) -> float:
    """Median steps/s of ``model.fit`` fed by ``dataset``, as training runs it.
    It makes one ``fit`` call with one iterator, in epochs of ``steps`` steps. The first epoch traces
    the step and fills the pipeline, so it is not counted. Run it after the other measurements of the
    process. Tearing down an iterator of a Python-fed pipeline slows the ``fit`` calls that follow it
    for seconds. So runners fed by pipelines are not interleaved with the others."""
    timer = EpochTimer()
    model.fit(dataset, epochs=rounds + 1, steps_per_epoch=steps, verbose=0, shuffle=False, callbacks=[timer])
    return statistics.median(steps / seconds for seconds in timer.seconds[1:])


def interleaved_rates(runners: dict[str, Runner], steps: int, rounds: int) -> dict[str, float]:
    """Median steps/s of each runner over ``rounds`` rounds, each round timing every runner once."""
    rates: dict[str, list[float]] = {name: [] for name in runners}
    for _ in range(rounds):
        for name, run in runners.items():
            rates[name].append(run(steps))
    return {name: statistics.median(values) for name, values in rates.items()}


def forward_macs(model: keras.Model) -> int:
    """Multiply-adds of one image through the convolutions and dense layers, which do the bulk of the work."""
    total = 0
    for layer in model.layers:
        if isinstance(layer, keras.Model):
            total += forward_macs(layer)
        elif isinstance(layer, keras.layers.Conv2D):
            kernel_h, kernel_w, channels_in, channels_out = layer.kernel.shape
            out_h, out_w = layer.output.shape[1:3]
            total += out_h * out_w * channels_out * kernel_h * kernel_w * channels_in
        elif isinstance(layer, keras.layers.Dense):
            total += int(np.prod(layer.kernel.shape))
    return int(total)


def training_gflop(encoder: keras.Model, images_per_step: int) -> float:
    """About 3x the forward work, at 2 flop per MAC.
    The three parts are the forward pass, the gradient of the activations and the gradient of the weights."""
    return 3 * 2 * forward_macs(encoder) * images_per_step / 1e9


def graph_gflop(function: Callable, *specs) -> float | None:
    """Floating-point work of one call of ``function`` traced at ``specs``, of tf.TensorSpec.
    TensorFlow's graph profiler counts it: convolutions and their gradients, matrix products and
    element-wise ops. So it works for any method's step, without a per-layer formula. None when the
    graph holds a conditional: the count would add the work of both branches."""
    from tensorflow.python.profiler import model_analyzer, option_builder

    graph = tf.function(function).get_concrete_function(*specs).graph
    if any(op.type in ("If", "StatelessIf") for op in graph.get_operations()):
        return None
    options = option_builder.ProfileOptionBuilder.float_operation()
    options["output"] = "none"
    return model_analyzer.profile(graph, options=options).total_float_ops / 1e9


def matmul_gflops_per_s(dtype: tf.DType = tf.float32, size: int = 2048, repeats: int = 20) -> float:
    """The machine's rate on a large dense matrix product: what arithmetic-bound code can hope for."""
    matrix = tf.cast(tf.random.stateless_normal([size, size], seed=[0, 0]), dtype)
    product = tf.function(lambda: tf.reduce_sum(tf.cast(tf.linalg.matmul(matrix, matrix)[0, :1], tf.float32)))
    product().numpy()
    start = time.perf_counter()
    for _ in range(repeats):
        product().numpy()
    return 2 * size**3 * repeats / (time.perf_counter() - start) / 1e9


# ---------------------------------------------------------------- any method's own train_step


def eager_step(model: keras.Model, batch: dict) -> dict:
    """One ``model.train_step`` outside any tf.function: eager, op by op, PyTorch's way."""
    return model.train_step({key: tf.constant(value) for key, value in batch.items()})


def train_step_eager_runner(model: keras.Model, batch: dict) -> Runner:
    """``model.train_step`` of any method, run eagerly in a Python loop.
    It serves PMP, VITAE and Elastic-InfoGAN."""
    batch = {key: tf.constant(value) for key, value in batch.items()}

    def run(steps: int) -> float:
        start = time.perf_counter()
        for _ in range(steps):
            logs = model.train_step(batch)
        float(logs["loss"])
        return steps / (time.perf_counter() - start)

    run(1)  # creates the optimizers' slots
    return run


def train_step_fit_runner(model: keras.Model, batch: dict) -> Runner:
    """``model.fit`` on ``batch`` repeated from memory: its compiled train_step, XLA if compiled so.
    It is timed from the start to the end of a Keras epoch, in whole compiled calls."""
    dataset = tf.data.Dataset.from_tensors(batch).repeat()
    timer = EpochTimer()
    per_call = model.steps_per_execution

    def run(steps: int) -> float:
        steps = max(per_call, steps - steps % per_call)
        model.fit(dataset, epochs=1, steps_per_epoch=steps, verbose=0, shuffle=False, callbacks=[timer])
        return steps / timer.seconds[-1]

    run(2 * per_call)  # traces (and with XLA compiles) the step
    return run
