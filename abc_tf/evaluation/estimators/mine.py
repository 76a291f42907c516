"""MINE estimate of the mutual information between embeddings and factors, in nats.

MINE (Belghazi et al. 2018) uses the statistics network ``models.build("mine")``, one per factor
(docs/PAPERS.md section 4, supplement S1). Each trains on the Donsker-Varadhan bound
``I >= E_joint[T] - log E_marginal[exp T]``. The reported value is that bound averaged over many
fresh samples after training. Embeddings get the noise N(0, sigma^2) of every measure, drawn afresh
per batch. :func:`mine_sigma_sweep` repeats the estimate over a grid of sigmas.
``MineSettings.moving_average`` switches to MINE's bias-corrected gradient.

For speed, all factors' networks train together in one compiled loop over many steps. They share no
weights, so the summed loss gives each exactly its own gradient; Adam's updates are per parameter.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import math
from typing import Sequence

import keras
import numpy as np
import tensorflow as tf

import models
from abc_tf import optimizers
from abc_tf.evaluation.estimators.noise import as_embeddings, as_factors, float32_policy
from abc_tf.evaluation.progress import Progress

# The paper's settings (supplement S1).
PAPER_LEARNING_RATE = 3e-4
PAPER_BATCH_SIZE = 256
PAPER_STEPS = 20_000
PAPER_EVAL_SAMPLES = 256_000


@dataclasses.dataclass(frozen=True)
class MineSettings:
    """How MINE is trained and evaluated. Defaults are the paper's (supplement S1).

    Attributes:
      learning_rate: Adam learning rate.
      batch_size: joint samples per step. The same number of marginal samples is drawn.
      steps: optimizer steps per network.
      eval_samples: samples over which the final Donsker-Varadhan value is averaged.
      moving_average: None for the plain DV gradient. A rate alpha in (0, 1] selects MINE's
        bias-corrected gradient. Its denominator is a moving average of E_marginal[exp T],
        debiased like Adam's moments.
      chunk_steps: steps per compiled call, run in a graph loop; progress is reported between calls.
        The estimate does not depend on it, since batches and noise derive from the step count.
    """

    learning_rate: float = PAPER_LEARNING_RATE
    batch_size: int = PAPER_BATCH_SIZE
    steps: int = PAPER_STEPS
    eval_samples: int = PAPER_EVAL_SAMPLES
    moving_average: float | None = None
    chunk_steps: int = 250

    def validate(self) -> None:
        for name in ("batch_size", "steps", "eval_samples", "chunk_steps"):
            if getattr(self, name) <= 0:
                raise ValueError(f"MINE {name} must be a positive integer, got {getattr(self, name)}.")
        if not (self.learning_rate > 0 and math.isfinite(self.learning_rate)):
            raise ValueError(f"MINE learning_rate must be positive, got {self.learning_rate}.")
        if self.moving_average is not None and not 0 < self.moving_average <= 1:
            raise ValueError(f"MINE moving_average must lie in (0, 1] or be None, got {self.moving_average}.")


def debiased_log_average(
    log_average: tf.Tensor, log_value: tf.Tensor, alpha: float, step: tf.Tensor
) -> tuple[tf.Tensor, tf.Tensor]:
    """(log m_t, log m_t / (1 - (1 - alpha)^t)), both [F]: a step t >= 1 of the moving average
    m_t = (1 - alpha) m_{t-1} + alpha x_t in log space from m_0 = 0, and its value de-biased as Adam's."""
    log_value = tf.convert_to_tensor(log_value, tf.float32)
    log_decay = math.log1p(-alpha) if alpha < 1 else -np.inf  # log(1 - alpha)
    # logaddexp(log(1 - alpha) + log m_{t-1}, log(alpha) + log x_t); -inf terms drop out.
    log_average = tf.reduce_logsumexp(
        tf.stack([log_decay + log_average, math.log(alpha) + log_value]), axis=0
    )
    step = tf.cast(step, tf.float32)
    return log_average, log_average - tf.math.log(1.0 - (1.0 - alpha) ** step)


class MineEstimator:
    """F statistics networks, one per factor, trained together in one compiled loop.

    The embeddings [N, D] and factors [N, F] live in variables of fixed shape, so a new estimate (another
    sigma, new embeddings of that size) reuses the traced graph. Every step draws a joint batch and a
    marginal one, whose g has independent indices: a sample of P(U) P(G). ``seed``: the initial weights.
    """

    def __init__(
        self,
        num_points: int,
        embedding_dim: int,
        num_factors: int,
        settings: MineSettings = MineSettings(),
        seed: int = 0,
    ):
        settings.validate()
        if num_points < 2 or embedding_dim < 1 or num_factors < 1:
            raise ValueError(
                "MINE needs N >= 2 points, D >= 1 and F >= 1 factors, "
                f"got {num_points}, {embedding_dim}, {num_factors}."
            )
        self.settings = settings
        self.num_factors = num_factors
        self.shape = (num_points, embedding_dim, num_factors)
        self.embeddings = tf.Variable(tf.zeros([num_points, embedding_dim]), trainable=False)
        self.factors = tf.Variable(tf.zeros([num_points, num_factors]), trainable=False)
        self.num_points = num_points
        self.networks = self._networks(seed)
        self.variables = [v for network in self.networks for v in network.trainable_variables]
        self.initial_values = [v.numpy() for v in self.variables]
        self._initial_values = {seed: self.initial_values}  # per weights seed, drawn once
        with float32_policy():
            self.optimizer = optimizers.adam(settings.learning_rate)
            self.optimizer.build(self.variables)
        self.sigma = tf.Variable(0.0, dtype=tf.float32, trainable=False)
        self.seed = tf.Variable(seed, dtype=tf.int64, trainable=False)
        self.step = tf.Variable(0, dtype=tf.int64, trainable=False)
        # Moving average of E_marginal[exp T] per network, kept as a log for range safety. It
        # starts at 0 (log: -inf), the start that the 1 - (1 - alpha)^t de-biasing assumes.
        self.log_average = tf.Variable(tf.fill([self.num_factors], -np.inf), trainable=False)
        self._train = tf.function(self._train_steps)
        self._evaluate = tf.function(self._evaluate_chunk)

    def _networks(self, seed: int) -> list[keras.Model]:
        """The F statistics networks with the initial weights that ``seed`` draws."""
        keras.utils.set_random_seed(seed)
        with float32_policy():
            return [
                models.build("mine", embedding_dim=self.shape[1], factor_dim=1)
                for _ in range(self.num_factors)
            ]

    def initial_values_for(self, seed: int) -> list[np.ndarray]:
        """The initial weights of an estimator built with ``seed`` (the traced graph is not rebuilt)."""
        if seed not in self._initial_values:
            self._initial_values[seed] = [
                v.numpy() for network in self._networks(seed) for v in network.trainable_variables
            ]
        return self._initial_values[seed]

    def set_data(self, embeddings: np.ndarray, factors: np.ndarray) -> None:
        """Loads embeddings [N, D] and factor values [N] or [N, F]; factors are standardised here."""
        embeddings = as_embeddings(embeddings)
        factors, _ = as_factors(factors, embeddings.shape[0])
        if (embeddings.shape[0], embeddings.shape[1], factors.shape[1]) != self.shape:
            raise ValueError(
                f"This MINE estimator was built for N, D, F = {self.shape}; got "
                f"{(embeddings.shape[0], embeddings.shape[1], factors.shape[1])}."
            )
        self.embeddings.assign(embeddings.astype(np.float32))
        self.factors.assign(_standardise(factors).astype(np.float32))

    def reset(self, sigma: float, seed: int, weights_seed: int | None = None) -> None:
        """Initial weights (of ``weights_seed``, by default the estimator's) and zero optimizer state."""
        initial = self.initial_values if weights_seed is None else self.initial_values_for(weights_seed)
        for variable, value in zip(self.variables, initial):
            variable.assign(value)
        for variable in self.optimizer.variables:
            variable.assign(tf.zeros_like(variable))
        # The learning rate is one of the optimizer's variables too; zeroing took it away.
        self.optimizer.learning_rate = self.settings.learning_rate
        self.sigma.assign(sigma)
        self.seed.assign(seed)
        self.step.assign(0)
        self.log_average.assign(tf.fill([self.num_factors], -np.inf))

    def _sample(self, batch_size: int, salt: int) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
        """(noisy u [B, D], joint g [B, F], marginal g [B, F]) for the current step."""
        seed = tf.stack([self.seed, self.step * 4 + salt])
        keys = tf.random.experimental.stateless_split(seed, 3)
        joint_index = tf.random.stateless_uniform([batch_size], keys[0], 0, self.num_points, dtype=tf.int64)
        marginal_index = tf.random.stateless_uniform(
            [batch_size], keys[1], 0, self.num_points, dtype=tf.int64
        )
        u = tf.gather(self.embeddings, joint_index)
        u = u + self.sigma * tf.random.stateless_normal(tf.shape(u), keys[2])
        return u, tf.gather(self.factors, joint_index), tf.gather(self.factors, marginal_index)

    def _scores(self, u: tf.Tensor, g_joint: tf.Tensor, g_marginal: tf.Tensor) -> tuple[list, list]:
        """Per network: T on the joint batch [B] and on the marginal batch [B]."""
        batch = tf.shape(u)[0]
        both_u = tf.concat([u, u], axis=0)
        joint, marginal = [], []
        for index, network in enumerate(self.networks):
            g = tf.concat([g_joint[:, index : index + 1], g_marginal[:, index : index + 1]], axis=0)
            scores = tf.squeeze(network([both_u, g], training=True), axis=-1)
            joint.append(scores[:batch])
            marginal.append(scores[batch:])
        return joint, marginal

    def _train_steps(self, num_steps: tf.Tensor) -> tf.Tensor:
        """Runs ``num_steps`` optimizer steps in a graph loop; returns the last batch's DV values [F]."""
        settings = self.settings
        log_batch = tf.math.log(tf.cast(settings.batch_size, tf.float32))
        alpha = settings.moving_average
        last = tf.zeros([self.num_factors])
        for _ in tf.range(num_steps):
            u, g_joint, g_marginal = self._sample(settings.batch_size, salt=0)
            with tf.GradientTape() as tape:
                joint, marginal = self._scores(u, g_joint, g_marginal)
                # log E_marginal[exp T] through logsumexp, which is safe for large T.
                log_means = tf.stack([tf.reduce_logsumexp(m) - log_batch for m in marginal])
                joint_means = tf.stack([tf.reduce_mean(j) for j in joint])
                bounds = joint_means - log_means  # DV lower bound of each network [F]
                if alpha is None:
                    loss = -tf.reduce_sum(bounds)
                else:
                    # MINE's bias-corrected gradient: d log E[e^T] ~ E[e^T dT] / moving average.
                    # exp(log_mean - debiased) * log_mean has exactly that gradient.
                    t = tf.cast(self.step + 1, tf.float32)
                    log_average, debiased = debiased_log_average(
                        self.log_average, tf.stop_gradient(log_means), alpha, t
                    )
                    self.log_average.assign(log_average)
                    weights = tf.stop_gradient(tf.exp(log_means - debiased))
                    loss = tf.reduce_sum(weights * log_means - joint_means)
            gradients = tape.gradient(loss, self.variables)
            self.optimizer.apply(gradients, self.variables)
            self.step.assign_add(1)
            last = bounds
        return last

    def _evaluate_chunk(self, chunk: tf.Tensor, num_chunks: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        """Sums of T over the joint samples [F] and running logsumexp of T over the marginal ones [F]."""
        joint_sum = tf.zeros([self.num_factors])
        marginal_lse = tf.fill([self.num_factors], -np.inf)
        for index in tf.range(num_chunks):
            self.step.assign(-1 - tf.cast(index, tf.int64))  # disjoint from the training stream
            u, g_joint, g_marginal = self._sample(chunk, salt=1)
            joint, marginal = self._scores(u, g_joint, g_marginal)
            joint_sum += tf.stack([tf.reduce_sum(j) for j in joint])
            marginal_lse = tf.reduce_logsumexp(
                tf.stack([marginal_lse, tf.stack([tf.reduce_logsumexp(m) for m in marginal])]), axis=0
            )
        return joint_sum, marginal_lse

    def estimate(
        self, sigma: float, seed: int, weights_seed: int | None = None, progress: Progress | None = None
    ) -> np.ndarray:
        """Trains all networks at noise ``sigma`` on the loaded data and returns the DV estimate [F] in nats.

        It starts from the initial weights of ``weights_seed`` (by default this estimator's) and draws
        batches and noise from ``seed``; ``progress`` counts the steps from its ``done``.
        """
        if not (sigma >= 0 and math.isfinite(sigma)):
            raise ValueError(f"Noise sigma must be finite and >= 0, got {sigma}.")
        self.reset(sigma, seed, weights_seed)
        settings = self.settings
        label = f"MINE ({self.num_factors} factors)"
        with (
            Progress(label, settings.steps)
            if progress is None
            else contextlib.nullcontext(progress) as progress
        ):
            start, trained = progress.done, 0
            while trained < settings.steps:
                steps = min(settings.steps - trained, settings.chunk_steps)
                self._train(tf.constant(steps, tf.int64))
                trained += steps
                progress.update(start + trained)
        chunk = min(settings.eval_samples, 8192)
        num_chunks = max(1, int(math.ceil(settings.eval_samples / chunk)))
        joint_sum, marginal_lse = self._evaluate(
            tf.constant(chunk, tf.int32), tf.constant(num_chunks, tf.int64)
        )
        total = float(chunk * num_chunks)
        return joint_sum.numpy() / total - (marginal_lse.numpy() - math.log(total))


def _standardise(factors: np.ndarray) -> np.ndarray:
    """Factor columns to zero mean and unit variance, so the network sees comparable input ranges."""
    factors = np.asarray(factors, dtype=np.float64)
    std = factors.std(axis=0)
    return (factors - factors.mean(axis=0)) / np.where(std > 0, std, 1.0)


@functools.lru_cache(maxsize=16)
def estimator_for(
    num_points: int, embedding_dim: int, num_factors: int, settings: MineSettings
) -> MineEstimator:
    """The process's :class:`MineEstimator` for N, D, F and ``settings``, built and traced on first use.

    Every estimate restarts it, so a reused estimator returns what a new one of that seed would.
    """
    return MineEstimator(num_points, embedding_dim, num_factors, settings)


def mine_sigma_sweep(
    embeddings: np.ndarray,
    factors: np.ndarray,
    sigmas: Sequence[float],
    settings: MineSettings = MineSettings(),
    seed: int = 0,
) -> np.ndarray:
    """MINE estimates [S, F] in nats: for every sigma, F fresh networks trained on embeddings + N(0, sigma^2).

    ``factors`` [N] or [N, F] are the factor *values*, each column standardised; ``sigmas`` >= 0 are in
    embedding units; ``seed`` seeds the weights, the batches and the noise. Every sigma restarts from the
    same initial weights, so differences along the sweep come from the noise.
    """
    settings.validate()
    embeddings = as_embeddings(embeddings)
    factors, _ = as_factors(factors, embeddings.shape[0])
    sigmas = [float(s) for s in sigmas]
    if any(s < 0 or not math.isfinite(s) for s in sigmas):
        raise ValueError(f"Noise sigmas must be finite and >= 0, got {sigmas}.")
    estimator = estimator_for(
        int(embeddings.shape[0]), int(embeddings.shape[1]), int(factors.shape[1]), settings
    )
    estimator.set_data(embeddings, factors)
    label = f"MINE ({factors.shape[1]} factors" + (
        f", {len(sigmas)} noise scales)" if len(sigmas) > 1 else ")"
    )
    with Progress(label, len(sigmas) * settings.steps) as progress:
        return np.stack(
            [
                estimator.estimate(sigma, seed * 1000 + index, weights_seed=seed, progress=progress)
                for index, sigma in enumerate(sigmas)
            ]
        )


def mine_mutual_information(
    embeddings: np.ndarray,
    factors: np.ndarray,
    sigma: float = 0.0,
    settings: MineSettings = MineSettings(),
    seed: int = 0,
) -> np.ndarray | float:
    """MINE estimate of I(U + noise; G) in nats, :func:`mine_sigma_sweep` at one sigma: a float for
    factors [N], else an array [F]."""
    single = np.asarray(factors).ndim == 1
    values = mine_sigma_sweep(embeddings, factors, [sigma], settings, seed)[0]
    return float(values[0]) if single else values
