"""The method interface: what a training method gives the trainer and the evaluators.

A method is declared once as a :class:`Method` and registered in ``abc_tf.methods.METHODS``. Its
``build(config, image_shape)`` returns a compiled :class:`MethodModel`: Keras networks and
optimizers whose loss terms feed this base class's one ``train_step``. ``networks()`` names the
networks a finished run keeps.
``networks()["encoder"]`` is the representation: float32 images ``[B, H, W, C]`` in [0, 1] ->
``[B, D]``. Every evaluator embeds with it, so ``evaluate.py`` can evaluate any run.

The trainer (``abc_tf.runs.training``) needs nothing else. It calls ``build`` in the strategy's
scope and streams the method's ``batch_format`` into ``fit``. It checkpoints every network and
optimizer (``abc_tf.runs.checkpoints``) and saves ``networks()`` as ``<name>.keras``. The tracked
terms must include ``"loss"``; a NaN there stops the run at its last good checkpoint.
"""

from __future__ import annotations

import dataclasses
import inspect
from typing import Callable, NamedTuple

import keras
import tensorflow as tf

import models
from abc_tf.config import ExperimentConfig, MethodConfig, TrainerConfig
from abc_tf.registry import GUIDE as _GUIDES
from abc_tf.registry import ContractError, untraced

GUIDE = "see " + _GUIDES["method"]


def _defined_at(code) -> str:
    """ "FILE:LINE" of a class's or function's source."""
    return f"{inspect.getsourcefile(code)}:{inspect.getsourcelines(code)[1]}"


def to_float_images(images: tf.Tensor) -> tf.Tensor:
    """uint8 images become float32 in [0, 1]; float images are only cast to float32."""
    if images.dtype == tf.uint8:
        return tf.cast(images, tf.float32) / 255.0
    return tf.cast(images, tf.float32)


def is_multi_worker(strategy: tf.distribute.Strategy) -> bool:
    """Whether ``strategy`` spans several processes: MultiWorkerMirroredStrategy with a TF_CONFIG
    cluster.
    """
    resolver = strategy.cluster_resolver
    return resolver is not None and bool(resolver.task_type)


def replica_rows(rows: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
    """This replica's first row in the global batch, and the global batch's rows.

    ``rows`` is this replica's share. tf.distribute cuts a global batch into equal shares in
    replica order; the trainer checks that they are equal. On one device: ``(0, rows)``.
    """
    replicas = tf.distribute.get_strategy().num_replicas_in_sync
    if replicas == 1:
        return tf.constant(0, tf.int32), rows
    replica = tf.cast(tf.distribute.get_replica_context().replica_id_in_sync_group, tf.int32)
    return replica * rows, rows * replicas


def draw_rows(draw: Callable[[tf.Tensor], tf.Tensor], rows: tf.Tensor) -> tf.Tensor:
    """Per-image random draws for this replica's ``rows`` images.

    ``draw(n)`` makes [n, ...] stateless draws for the global batch, and this replica's rows are
    kept. So each image gets the draw one device would give it.
    """
    if tf.distribute.get_strategy().num_replicas_in_sync == 1:
        return draw(rows)
    first, total = replica_rows(rows)
    return draw(total)[first : first + rows]


def gather_replicas(values: tf.Tensor) -> tf.Tensor:
    """``values`` [rows, ...] of every replica in replica order: the global batch's rows, e.g.
    NT-Xent's negatives.

    ``all_gather`` sums the replicas' gradients before cutting them, so the update is one
    device's.
    """
    if tf.distribute.get_strategy().num_replicas_in_sync == 1:
        return values
    return tf.distribute.get_replica_context().all_gather(values, axis=0)


def loss_scaled(optimizer: keras.optimizers.Optimizer) -> keras.optimizers.Optimizer:
    """``optimizer`` in a ``LossScaleOptimizer`` under the ``mixed_float16`` policy, as ``compile``
    does with its own.

    A method's second optimizer needs this too. Its ``train_step`` scales that loss with
    ``optimizer.scale_loss``, a no-op without the policy.
    """
    if keras.mixed_precision.global_policy().name == "mixed_float16":
        return keras.optimizers.LossScaleOptimizer(optimizer)
    return optimizer


def _nothing_to_check(config: ExperimentConfig) -> None:
    del config


def _no_callbacks(config: ExperimentConfig, log_dir: str) -> list:
    del config, log_dir
    return []


def _no_variant(config: ExperimentConfig) -> str:
    del config
    return ""


class ImageNeed(NamedTuple):
    """The images a method's networks take; the trainer checks the family's against them."""

    shape: tuple[int | None, int | None, int | None]  # (height, width, channels), None: any
    networks: str  # what takes them, by its flags: "--method.networks=conv64"
    advice: str = ""  # what to change, for the error


def _any_images(config: ExperimentConfig) -> ImageNeed | None:
    del config
    return None


@dataclasses.dataclass(frozen=True)
class Method:
    """One training method: everything the trainer, the evaluators and the flags read of it.

    name: the value of ``--method`` (its package's folder or entry point name).
    config: its :class:`MethodConfig` subclass: the ``--method.*`` flags, the batch format it
      trains on (``batch_format``) and whether it has an ``encoder`` part.
    build: ``(config, image_shape) -> MethodModel``, compiled (optimizers, jit_compile,
      steps_per_execution from the config). Builds every network in a fixed order, so one
      seed gives the same initial weights.
    presets: ``{name: ExperimentConfig}``, the ``--experiment`` values it declares.
    smallest_run: the smallest run it trains on built-in data, a few steps: the contract checks
      train, resume, replicate and evaluate it (``abc_tf check``).
    quick_run: the run a user tries first (one of the presets, maybe another method's);
      benchmarks measure each method's step on it.
    supervision: what the method is told about the data, in words; a ``config -> str`` where
      that depends on the settings (read it with :meth:`supervision_for`).
    variant: ``config -> str``, the name of the configured variant where settings make the
      method another one ("InfoGAN: uniform prior, no NT-Xent"), else "".
    check_config: ``config -> None``, its own checks (ValueError naming the flag), run before
      any data is read or network built.
    training_callbacks: ``(config, log_dir) -> [keras.callbacks.Callback]``, its own training
      logs (histograms, image grids) under the run's ``logs`` folder.
    images: ``config -> ImageNeed or None``, the image shape its networks take; the trainer
      refuses a family whose images differ, before any data is read. None: any shape.
    measures: ``"module:function"`` of the evaluation package's measures that only its networks
      allow (a VAE's likelihood): ``(run, out_dir, settings) -> dict``; "" for none.
    measures_need: the family capabilities (``abc_tf.data.family.CAPABILITIES``) those measures
      read. Without one, train.py warns before training and evaluate.py skips them, saying why.
    accepts_two_view_sets: it trains on "sets" of two augmented views and no set B
      (``--batch.augmentation_baseline``); the trainer refuses the baseline otherwise.
    needs_training_bank: it learns a code per training image (LORD), so it needs a family that
      declares ``training_bank``.
    """

    name: str
    config: type[MethodConfig]
    build: Callable[[ExperimentConfig, tuple[int, int, int]], "MethodModel"]
    smallest_run: ExperimentConfig | None = None
    quick_run: ExperimentConfig | None = None
    presets: dict[str, ExperimentConfig] = dataclasses.field(default_factory=dict)
    supervision: str | Callable[[ExperimentConfig], str] = ""
    check_config: Callable[[ExperimentConfig], None] = _nothing_to_check
    training_callbacks: Callable[[ExperimentConfig, str], list["keras.callbacks.Callback"]] = _no_callbacks
    variant: Callable[[ExperimentConfig], str] = _no_variant
    images: Callable[[ExperimentConfig], ImageNeed | None] = _any_images
    measures: str = ""
    measures_need: tuple[str, ...] = ()
    accepts_two_view_sets: bool = False
    needs_training_bank: bool = False

    def __post_init__(self):
        where = f"The method {self.name!r}"
        if not (isinstance(self.config, type) and issubclass(self.config, MethodConfig)):
            raise ContractError(f"{where}: config={self.config!r} is not a MethodConfig subclass; {GUIDE}.")
        for key, preset in self.presets.items():
            if not isinstance(preset, ExperimentConfig) or preset.name != key:
                raise ContractError(
                    f"{where}: preset {key!r} is not an ExperimentConfig named {key!r}; {GUIDE}."
                )
        for role in ("smallest_run", "quick_run"):
            run = getattr(self, role)
            if run is not None and not isinstance(run, ExperimentConfig):
                raise ContractError(
                    f"{where}: {role} is a {type(run).__name__}, not an ExperimentConfig; {GUIDE}."
                )
        if self.smallest_run is not None and self.smallest_run.method.name != self.name:
            raise ContractError(
                f"{where}: smallest_run trains {self.smallest_run.method.name!r}, not {self.name!r}; {GUIDE}."
            )

    def supervision_for(self, config: ExperimentConfig) -> str:
        """What a run of ``config`` was told about the data."""
        return self.supervision(config) if callable(self.supervision) else self.supervision

    def label_for(self, config: ExperimentConfig) -> str:
        """The method's name, with its variant under ``config`` where it has one."""
        variant = self.variant(config)
        return f"{self.name} ({variant})" if variant else self.name


@dataclasses.dataclass(frozen=True)
class Update:
    """One optimizer's update within a training step (:meth:`MethodModel.updates`).

    terms: ``(batch, step, training, earlier) -> {name: tensor}``, the loss terms, computed under
    the tape. ``earlier`` holds the step's earlier updates' terms, e.g. a GAN's discriminator
    draws.
    optimizer: the optimizer that applies the gradients.
    variables: ``() -> [variables]`` the update trains. Called after ``terms``, so lazily built
    networks are complete.
    loss: the minimised entry of ``terms``. "loss" unless the objective adds an unlogged term,
    e.g. PMP's weight decay.
    """

    terms: Callable[[dict, tf.Tensor, bool, dict], dict]
    optimizer: keras.optimizers.Optimizer
    variables: Callable[[], list]
    loss: str = "loss"


class MethodModel(keras.Model):
    """Base of every method's model: one training step, ``networks()`` and what ``fit`` needs to
    distribute.

    A method supplies :meth:`compute_terms`, its loss terms with a ``"loss"`` entry, and calls
    :meth:`track` with the terms to log. A method with several optimizers overrides
    :meth:`updates` instead. :meth:`train_step` handles the rest for every method: the tape, the
    replicas' share, loss scaling and the metrics.
    """

    trackers: dict[str, keras.metrics.Metric] = {}
    values_at_step: tuple[str, ...] = ()

    def __init__(self, seed: int = 0, **kwargs):
        """``seed``: the run's seed for the model's random draws, combined with the step by
        :meth:`step_seed`.

        It is folded into the range of a stateless op's seed.
        """
        super().__init__(**kwargs)
        self.seed = int(seed) % (1 << 31)
        # A method's networks are built before its model (by its declaration's ``build``), so
        # the model is built too: saying so lets a checkpoint restore the optimizer state
        # before the first step and skips Keras's symbolic build (_maybe_symbolic_build).
        self.built = True

    def step_seed(self, step: tf.Tensor) -> tf.Tensor:
        """The stateless seed of optimizer step ``step``: the run's seed and the step.

        A resumed run draws what an unbroken one would.
        """
        return tf.stack([tf.constant(self.seed, tf.int64), tf.cast(step, tf.int64)])

    def compile_for(self, trainer: TrainerConfig, optimizer: keras.optimizers.Optimizer) -> None:
        """``compile`` with the run's ``optimizer`` and the trainer's XLA and steps-per-execution
        settings.

        That optimizer's ``iterations`` count the steps. ``auto`` compiles the plain graph; the
        trainer's :class:`abc_tf.runs.compile_choice.ChooseCompile` may switch it to XLA.
        """
        self.compile(
            optimizer=optimizer,
            jit_compile=trainer.jit_compile == "true",
            steps_per_execution=max(1, trainer.steps_per_execution),
        )

    def call(self, images: tf.Tensor, training: bool = False) -> tf.Tensor:
        """The representation of images [B, H, W, C], uint8 or floats in [0, 1]: the ``"encoder"``
        of :meth:`networks`, [B, D].
        """
        return self.networks()["encoder"](to_float_images(images), training=training)

    def track(self, names: tuple[str, ...], values_at_step: tuple[str, ...] = ()) -> None:
        """Log ``names`` and ``values_at_step``.

        ``names`` are terms averaged over each logging interval, "loss" first. ``values_at_step``
        are logged at their value at the step, e.g. schedule weights.
        """
        self.trackers = {name: keras.metrics.Mean(name=name) for name in names}
        self.values_at_step = tuple(values_at_step)

    @property
    def metrics(self) -> list[keras.metrics.Metric]:
        return list(self.trackers.values())

    def fit(self, *args, **kwargs):
        with untraced():  # the step's contract errors (check_terms) in their one line
            return super().fit(*args, **kwargs)

    def networks(self) -> dict[str, keras.Model]:
        """{name: network} kept by a finished run as ``<name>.keras``; "encoder" is required."""
        raise ContractError(self.missing("networks() -> {name: keras.Model} with an 'encoder'"))

    def compute_terms(
        self, batch: dict[str, tf.Tensor], step: tf.Tensor, training: bool
    ) -> dict[str, tf.Tensor]:
        """The loss terms of ``batch`` at optimizer step ``step``; "loss" is the one minimised.

        They are float32 scalars. The logs ignore entries that are not tracked.
        """
        raise ContractError(self.missing("compute_terms(batch, step, training) -> {'loss': scalar, ...}"))

    def check_defined(self) -> None:
        """ContractError, before any data is read, for a class without networks() or compute_terms."""
        cls = type(self)
        if cls.networks is MethodModel.networks:
            self.networks()
        if cls.compute_terms is MethodModel.compute_terms and cls.updates is MethodModel.updates:
            self.compute_terms({}, 0, True)

    def missing(self, what: str) -> str:
        """The line for a method model class that does not define ``what``: its file and line."""
        return f"{_defined_at(type(self))}: {type(self).__name__} defines no {what}; {GUIDE}."

    def check_terms(self, terms: dict[str, tf.Tensor], loss: str) -> None:
        """ContractError, at the step's trace, for a loss that is not a float32 scalar."""
        value = terms.get(loss)
        if value is None or value.shape.rank != 0 or value.dtype != tf.float32:
            got = "missing" if value is None else f"{value.dtype.name} of shape {value.shape}"
            raise ContractError(
                f"{_defined_at(type(self).compute_terms)}: {type(self).__name__}'s term {loss!r} is {got}; "
                f"the loss is a float32 scalar (tf.reduce_mean over the batch); {GUIDE}."
            )

    def updates(self) -> list[Update]:
        """The updates of one training step, in order.

        By default one: ``compile``'s optimizer minimising :meth:`compute_terms`' "loss" over
        every trainable variable.
        """
        return [
            Update(
                lambda batch, step, training, earlier: self.compute_terms(batch, step, training),
                self.optimizer,
                lambda: self.trainable_variables,
            )
        ]

    def train_step(self, batch):
        step, terms = self.optimizer.iterations, {}
        for update in self.updates():
            with tf.GradientTape() as tape:
                computed = update.terms(batch, step, True, terms)
                self.check_terms(computed, update.loss)
                # Each replica holds a share of the batch (replica_mean); loss scaling under
                # mixed float16 (a no-op for other optimizers).
                scaled = update.optimizer.scale_loss(self.replica_mean(computed[update.loss]))
            variables = update.variables()
            update.optimizer.apply(tape.gradient(scaled, variables), variables)
            terms.update(computed)
        return self.log_terms(terms)

    def test_step(self, batch):
        step, terms = self.optimizer.iterations, {}
        for update in self.updates():
            terms.update(update.terms(batch, step, False, terms))
        return self.log_terms(terms)

    def log_terms(self, terms: dict[str, tf.Tensor]) -> dict[str, tf.Tensor]:
        """The step's logs: the tracked terms' running means and the values at the step."""
        for name, tracker in self.trackers.items():
            tracker.update_state(terms[name])
        results = {name: tracker.result() for name, tracker in self.trackers.items()}
        results.update({name: terms[name] for name in self.values_at_step})
        return self.logs(results)

    def _maybe_symbolic_build(self, iterator=None, data_batch=None):
        # Pinned by tests/test_methods.py (Keras 3.10 - 3.15): under a tf.distribute strategy
        # Keras reduces the first batch across replicas only to learn its shapes, and
        # MultiWorkerMirroredStrategy cannot reduce a dict batch (keras-team/keras#20329).
        # Keras offers no public hook to skip it. A method model is built when constructed
        # (its networks are), so only the optimizers' slots remain to be made.
        unbuilt = [name for name, network in self.networks().items() if not network.built]
        if unbuilt:
            raise ValueError(
                f"{type(self).__name__}: the networks {', '.join(unbuilt)} are not built; a method's "
                "build function builds its networks (with their input shapes) before its model."
            )
        for optimizer in self.optimizers():
            if not optimizer.built:
                with self.distribute_strategy.scope():
                    optimizer.build(self.optimizer_variables(optimizer))

    def optimizers(self) -> list[keras.optimizers.Optimizer]:
        """Every optimizer of :meth:`updates`, in the order of its first update."""
        found = []
        for update in self.updates():
            if update.optimizer is not None and all(update.optimizer is not seen for seen in found):
                found.append(update.optimizer)
        return found

    def optimizer_variables(self, optimizer: keras.optimizers.Optimizer) -> list:
        """The variables ``optimizer`` updates: those of its updates in :meth:`updates`."""
        variables, seen = [], set()
        for update in self.updates():
            if update.optimizer is optimizer:
                for variable in update.variables():
                    if id(variable) not in seen:
                        seen.add(id(variable))
                        variables.append(variable)
        return variables

    @staticmethod
    def replica_mean(loss: tf.Tensor) -> tf.Tensor:
        """``loss`` divided by the replicas in sync.

        Each replica sees a share of the batch and the optimizer sums replica gradients. So the
        update is the mean over the whole batch.
        """
        return loss / tf.distribute.get_strategy().num_replicas_in_sync

    @staticmethod
    def logs(results: dict[str, tf.Tensor]) -> dict[str, tf.Tensor]:
        """``train_step``'s return value, with scalars given one axis.

        Keras averages the replicas' logs along axis 0, which scalars lack under
        MultiWorkerMirroredStrategy (tensorflow/tensorflow#72388).
        """
        if is_multi_worker(tf.distribute.get_strategy()):
            return {name: tf.reshape(value, [1]) for name, value in results.items()}
        return results


def build_encoder(config: ExperimentConfig, image_shape: tuple[int, int, int]) -> keras.Model:
    """The encoder architecture ``config.encoder.architecture`` from the models registry, for images
    of ``image_shape``.

    Where the architecture has one, it loads the pretrained backbone of
    ``config.encoder.backbone_weights``.
    """
    kwargs = {}
    if config.encoder.backbone_weights:
        if not models.takes_pretrained_weights(config.encoder.architecture):
            with_backbone = ", ".join(
                name for name in models.names() if models.takes_pretrained_weights(name)
            )
            raise ValueError(
                f"--encoder.backbone_weights: model {config.encoder.architecture!r} has no pretrained "
                f"backbone ({with_backbone} has)."
            )
        kwargs["weights"] = config.encoder.backbone_weights
    return models.build(
        config.encoder.architecture,
        embedding_dim=config.encoder.embedding_dim,
        input_shape=tuple(image_shape),
        **kwargs,
    )
