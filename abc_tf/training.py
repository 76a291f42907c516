"""One training run: config -> data -> encoder -> ABCModel.fit -> checkpoints, logs, exports.

Run directory layout:
  config.json        the resolved config (a rerun must match it)
  logs/              TensorBoard (train scalars every ``log_every`` steps, learning rate)
  checkpoints/       model and optimizer state every ``log_every`` steps, written atomically,
                     the newest ``keep_checkpoints`` kept (abc_tf.checkpoints): the same command
                     resumes a killed run from the newest
  encoder.keras      the trained encoder (Keras format)
  head.keras         the spherical-regression head, when regression_weight > 0
  saved_model/       SavedModel with the ``embed`` signatures (abc_tf.export); pose runs add
                     ``lookup_pose`` (and ``regress_pose`` with a head)
"""

from __future__ import annotations

import dataclasses
import inspect
import math
import os
from typing import Sequence

import keras
import numpy as np
import tensorflow as tf

import models
from abc_tf import checkpoints, data, export, schedules
from abc_tf.config import ExperimentConfig
from abc_tf.model import ABCModel, is_multi_worker

CONFIG_FILE = "config.json"
ENCODER_FILE = "encoder.keras"
HEAD_FILE = "head.keras"
SAVED_MODEL_DIR = "saved_model"


@dataclasses.dataclass
class TrainResult:
    encoder: keras.Model
    history: dict[str, list[float]]  # per logging interval of the steps trained by this call
    run_dir: str
    final_step: int  # optimizer steps in total, including those of resumed runs
    head: keras.Model | None = None  # the spherical-regression head, when trained


def loss_type(config: ExperimentConfig) -> str:
    """The hue-augmentation baseline always trains the two-view contrastive loss."""
    return "contrastive" if config.augmentation_baseline else config.loss


def precision_policy(config: ExperimentConfig) -> str:
    """bfloat16 runs fast on CPUs (and TPUs) with bf16 units; GPUs prefer float16 with loss scaling."""
    if not config.mixed_precision:
        return "float32"
    return "mixed_float16" if tf.config.list_physical_devices("GPU") else "mixed_bfloat16"


def build_encoder(config: ExperimentConfig, seed: int | None = None) -> keras.Model:
    """The untrained encoder of ``config``; the same seed gives the same initial weights."""
    # The policy is global Keras state read when layers are created, so it is set here.
    keras.mixed_precision.set_global_policy(precision_policy(config))
    keras.utils.set_random_seed(config.seed if seed is None else seed)
    image_shape = data.family_module(config.data).image_shape(config)
    kwargs = {"weights": config.backbone_weights} if config.backbone_weights else {}
    try:
        return models.build(config.model, embedding_dim=config.embedding_dim, input_shape=tuple(image_shape), **kwargs)
    except TypeError:
        if kwargs:
            raise ValueError(f"--backbone_weights: model {config.model!r} has no pretrained backbone (s5 has).") from None
        raise


def build_model(config: ExperimentConfig, encoder: keras.Model) -> ABCModel:
    """ABCModel around ``encoder`` (plus the pose head if asked), compiled with Adam and the config's schedule."""
    head, head_loss = None, None
    if config.regression_weight > 0:
        from models import pose_head

        # Built right after the encoder, so its initial weights follow the seed as well.
        head = models.build("spherical_regression", embedding_dim=config.embedding_dim)
        head_loss = pose_head.spherical_regression_loss
    model = ABCModel(
        encoder, similarity=config.similarity, temperature=config.temperature, loss_type=loss_type(config),
        abc_weight=config.abc_weight, head=head, head_loss=head_loss, head_weight=config.regression_weight,
    )
    optimizer = keras.optimizers.Adam(
        schedules.learning_rate(config.learning_rate, config.lr_halving_steps), beta_1=0.9, beta_2=0.999
    )
    model.compile(optimizer=optimizer, jit_compile=config.jit_compile, steps_per_execution=config.steps_per_execution)
    return model


def make_strategy(name: str) -> tf.distribute.Strategy:
    """The tf.distribute strategy named by ``config.strategy``.

    Global-batch semantics: ``pairs_per_step`` P is the global number of set pairs per step;
    each of the R replicas trains on P / R pairs and the update is the mean over all P, so the
    learning rate means the same thing on any number of devices.
    """
    if name == "default":
        return tf.distribute.get_strategy()
    if name == "mirrored":
        return tf.distribute.MirroredStrategy()
    if name == "multi_worker":
        if "TF_CONFIG" not in os.environ:
            raise ValueError("--strategy=multi_worker needs the TF_CONFIG environment variable describing the cluster.")
        return tf.distribute.MultiWorkerMirroredStrategy()
    if name == "tpu":
        try:
            resolver = tf.distribute.cluster_resolver.TPUClusterResolver()
            tf.config.experimental_connect_to_cluster(resolver)
            tf.tpu.experimental.initialize_tpu_system(resolver)
        except (ValueError, tf.errors.OpError) as error:
            raise ValueError(f"--strategy=tpu found no TPU to connect to: {error}") from error
        return tf.distribute.TPUStrategy(resolver)
    raise ValueError(f"Unknown strategy {name!r}; choose one of default, mirrored, multi_worker, tpu.")


def steps_per_log(config: ExperimentConfig) -> int:
    """Steps per Keras epoch: a divisor of ``steps`` near ``log_every``, so runs end exactly at ``steps``."""
    return math.gcd(config.steps, config.log_every)


def _write_config(config: ExperimentConfig, run_dir: str) -> None:
    path = os.path.join(run_dir, CONFIG_FILE)
    if os.path.exists(path):
        with open(path) as handle:
            previous = ExperimentConfig.from_json(handle.read())
        if previous != config:
            changed = [
                f"{f.name}: {getattr(previous, f.name)!r} -> {getattr(config, f.name)!r}"
                for f in dataclasses.fields(config)
                if getattr(previous, f.name) != getattr(config, f.name)
            ]
            raise ValueError(
                f"{run_dir} holds a run with a different config ({'; '.join(changed)}); "
                "resume with the same settings or choose another --output_dir."
            )
        return
    with open(path + ".tmp", "w") as handle:
        handle.write(config.to_json())
    os.replace(path + ".tmp", path)


def load_run(run_dir: str) -> tuple[ExperimentConfig, keras.Model]:
    """(config, trained encoder) of a finished run directory; a clear error when it is not one."""
    config_path = os.path.join(run_dir, CONFIG_FILE)
    encoder_path = os.path.join(run_dir, ENCODER_FILE)
    for path in (config_path, encoder_path):
        if not os.path.isfile(path):
            raise ValueError(f"{run_dir} is not a finished training run: {path} is missing.")
    with open(config_path) as handle:
        config = ExperimentConfig.from_json(handle.read())
    return config, keras.saving.load_model(encoder_path, compile=False)


class NonFiniteLossError(RuntimeError):
    """Training produced a NaN or infinite loss; the last good checkpoint is kept."""


class StopOnNonFiniteLoss(keras.callbacks.Callback):
    """Aborts fit at the first non-finite loss, before an epoch end could checkpoint bad weights."""

    def on_train_batch_end(self, batch, logs=None):
        loss = (logs or {}).get("loss")
        if loss is not None and not np.isfinite(float(loss)):
            step = int(self.model.optimizer.iterations.numpy())
            raise NonFiniteLossError(
                f"The loss became {float(loss)} at step {step}. The last good checkpoint is kept; "
                "lower --learning_rate or raise --temperature and run the same command again."
            )


def _task_name(strategy: tf.distribute.Strategy) -> str:
    resolver = strategy.cluster_resolver
    return f"{resolver.task_type}_{resolver.task_id}"


def data_seed(config: ExperimentConfig, start_step: int) -> int:
    """A resumed run draws fresh batches instead of replaying the first ones."""
    if start_step == 0:
        return config.seed
    return int(np.random.SeedSequence([config.seed, start_step]).generate_state(1)[0])


class LearningRateLogger(keras.callbacks.Callback):
    """Adds the current learning rate to the epoch logs, so TensorBoard plots it."""

    def on_epoch_end(self, epoch, logs=None):
        if logs is not None:
            optimizer = self.model.optimizer
            logs["learning_rate"] = float(keras.ops.convert_to_numpy(optimizer.learning_rate))


def make_family_dataset(family, config: ExperimentConfig, start_step: int) -> tf.data.Dataset:
    """The family's batches, as training consumes them. Families whose batches depend on the
    training step (pose: the real-image titration) take ``start_step``, so a resumed run
    continues their schedule."""
    seed = data_seed(config, start_step)
    if "start_step" in inspect.signature(family.make_dataset).parameters:
        dataset = family.make_dataset(config, seed=seed, start_step=start_step)
    else:
        dataset = family.make_dataset(config, seed=seed)
    if tf.config.list_physical_devices("GPU") or tf.config.list_physical_devices("TPU"):
        return dataset
    # Training on the CPU: the pipeline and the training step share the cores, and a pipeline
    # free to use all of them oversubscribes them (pose_quick on 2 cores: 1.9 steps/s with
    # tf.data's default pool, 2.7 with one thread, 3.8 from memory; BENCHMARKS.md).
    options = tf.data.Options()
    options.threading.private_threadpool_size = max(1, (os.cpu_count() or 2) // 2)
    return dataset.with_options(options)


def train(
    config: ExperimentConfig,
    run_dir: str,
    callbacks: Sequence[keras.callbacks.Callback] = (),
    verbose: int = 2,
    strategy: tf.distribute.Strategy | None = None,
) -> TrainResult:
    """Trains ``config`` into ``run_dir``; resumes from its checkpoint when one is there.

    ``strategy`` overrides ``config.strategy`` (e.g. a MirroredStrategy over chosen devices).
    Everything that can fail on user input (config values, data files, set sizes) is checked
    before the first step.
    """
    config.validate()
    strategy = strategy or make_strategy(config.strategy)
    replicas = strategy.num_replicas_in_sync
    if config.pairs_per_step % replicas:
        raise ValueError(
            f"pairs_per_step ({config.pairs_per_step}) must be a multiple of the {replicas} replicas "
            "of the distribution strategy: set pairs are what the replicas split."
        )
    family = data.family_module(config.data)
    saved = checkpoints.list_checkpoints(run_dir)
    start_step = saved[-1][0] if saved else 0
    dataset = make_family_dataset(family, config, start_step)
    with strategy.scope():
        encoder = build_encoder(config)
        model = build_model(config, encoder)
    # Only the chief of a multi-worker run writes run_dir; the other workers compute the same
    # values and keep their logs and exports apart. Written once the data and the model are
    # known to work, so a bad flag leaves no config.json to contradict its correction.
    chief = checkpoints.is_chief(strategy)
    output_dir = run_dir if chief else os.path.join(run_dir, "workers", _task_name(strategy))
    os.makedirs(output_dir, exist_ok=True)
    if chief:
        _write_config(config, run_dir)
    with strategy.scope():
        restored_step = checkpoints.restore(model, run_dir)
    if restored_step != start_step:  # the newest checkpoint was unreadable; an older one was loaded
        start_step = restored_step
        dataset = make_family_dataset(family, config, start_step)
    if start_step:
        print(f"Resuming {run_dir} from its checkpoint at step {start_step} of {config.steps}.")
    if is_multi_worker(strategy):
        # The pipelines draw their sets from seeds, not files: every worker builds the same
        # batches and keeps its own share of each.
        options = tf.data.Options()
        options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.DATA
        dataset = dataset.with_options(options)
    interval = steps_per_log(config)
    all_callbacks = [
        StopOnNonFiniteLoss(),
        checkpoints.SaveCheckpoint(run_dir, config.keep_checkpoints, write=chief),
        LearningRateLogger(),
        # Family callbacks (pose: the titration logger) add to the logs before TensorBoard writes them.
        *getattr(family, "training_callbacks", lambda _config: [])(config),
        keras.callbacks.TensorBoard(os.path.join(output_dir, "logs"), update_freq="epoch"),
        *callbacks,
    ]
    history = model.fit(
        dataset, epochs=config.steps // interval, steps_per_epoch=interval, initial_epoch=start_step // interval,
        callbacks=all_callbacks, verbose=verbose,
        shuffle=False,  # the pipelines draw random sets themselves
    )
    encoder.save(os.path.join(output_dir, ENCODER_FILE))
    if model.head is not None:
        # ABCModel with a head saves weights only; the head gets its own file for evaluation.
        model.head.save(os.path.join(output_dir, HEAD_FILE))
    if config.data == "pose":
        from abc_tf.evaluation import pose as pose_evaluation

        pose_evaluation.export_pose_run(config, encoder, os.path.join(output_dir, SAVED_MODEL_DIR), head=model.head)
    else:
        export.export_encoder(encoder, os.path.join(output_dir, SAVED_MODEL_DIR))
    return TrainResult(
        encoder=encoder,
        history=dict(history.history),
        run_dir=run_dir,
        final_step=int(model.optimizer.iterations.numpy()),
        head=model.head,
    )
