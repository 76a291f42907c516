"""Mutual information between embeddings and generative factors (SPEC.md section 4, supplement S1).

Two estimators, both in nats:

- :func:`histogram_mutual_information`: for low-dimensional (d = 2 in the ICLR text) embeddings,
  ``I(U; G) = H(U) - sum_g p(g) H(U | G = g)`` from one histogram of about sqrt(N) bins in all,
  the same bins for every conditional.
- :func:`mine_mutual_information`: MINE (Belghazi et al. 2018) with the statistics network
  ``models.build("mine")``: one network per factor, trained on the Donsker-Varadhan bound
  ``I >= E_joint[T] - log E_marginal[exp T]``; the reported value is that bound averaged over
  many fresh samples after training.

Embeddings of a deterministic network carry all information about their input, so both take a
noise scale ``sigma``: Gaussian noise N(0, sigma^2) is added to every embedding coordinate, which
removes the information held on scales below sigma. :func:`mine_sigma_sweep` and
:func:`histogram_sigma_sweep` repeat the measurement over a log-spaced grid of sigmas.

Efficiency: MINE trains the networks of all factors together inside one compiled
``tf.function`` whose loop runs many steps (``tf.range``), so Python is entered once per
estimate, not once per step; the networks share no weights, so the summed loss gives each
network exactly its own gradient, and Adam's updates are per parameter.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
from typing import Iterator, Sequence

import keras
import numpy as np
import tensorflow as tf

import models

# The paper's settings (supplement S1).
PAPER_LEARNING_RATE = 3e-4
PAPER_BATCH_SIZE = 256
PAPER_STEPS = 20_000
PAPER_EVAL_SAMPLES = 256_000
PAPER_NUM_SIGMAS = 40


@dataclasses.dataclass(frozen=True)
class MineSettings:
    """How MINE is trained and evaluated. Defaults are the paper's (supplement S1).

    Attributes:
      learning_rate: Adam learning rate.
      batch_size: joint samples per step (the same number of marginal samples is drawn).
      steps: optimizer steps per network.
      eval_samples: samples over which the final Donsker-Varadhan value is averaged.
      moving_average: None for the plain DV gradient; a rate alpha in (0, 1] to use MINE's
        bias-corrected gradient, whose denominator is a moving average of E_marginal[exp T]
        (debiased like Adam's moments).
      chunk_steps: steps per compiled call; a call runs this many steps in a graph loop.
    """

    learning_rate: float = PAPER_LEARNING_RATE
    batch_size: int = PAPER_BATCH_SIZE
    steps: int = PAPER_STEPS
    eval_samples: int = PAPER_EVAL_SAMPLES
    moving_average: float | None = None
    chunk_steps: int = 5000

    def validate(self) -> None:
        for name in ("batch_size", "steps", "eval_samples", "chunk_steps"):
            if getattr(self, name) <= 0:
                raise ValueError(f"MINE {name} must be a positive integer, got {getattr(self, name)}.")
        if not (self.learning_rate > 0 and math.isfinite(self.learning_rate)):
            raise ValueError(f"MINE learning_rate must be positive, got {self.learning_rate}.")
        if self.moving_average is not None and not 0 < self.moving_average <= 1:
            raise ValueError(f"MINE moving_average must lie in (0, 1] or be None, got {self.moving_average}.")


@contextlib.contextmanager
def float32_policy() -> Iterator[None]:
    """Builds layers in float32 whatever the global Keras policy: training an encoder under
    mixed precision sets a process-wide bfloat16/float16 policy, and the estimators must not
    inherit it (exp and logsumexp of T need float32)."""
    previous = keras.mixed_precision.global_policy()
    keras.mixed_precision.set_global_policy("float32")
    try:
        yield
    finally:
        keras.mixed_precision.set_global_policy(previous)


def _as_embeddings(embeddings: np.ndarray) -> np.ndarray:
    array = np.asarray(embeddings, dtype=np.float64)
    if array.ndim == 1:
        array = array[:, None]
    if array.ndim != 2 or array.shape[0] < 2:
        raise ValueError(f"Embeddings must have shape [N, D] with N >= 2, got {np.shape(embeddings)}.")
    if not np.all(np.isfinite(array)):
        raise ValueError("Embeddings contain NaN or infinite values.")
    return array


def _as_factors(factors: np.ndarray, num_points: int) -> tuple[np.ndarray, bool]:
    """Returns factors as [N, F] and whether the input was a single factor [N]."""
    array = np.asarray(factors)
    single = array.ndim == 1
    if single:
        array = array[:, None]
    if array.ndim != 2 or array.shape[0] != num_points:
        raise ValueError(
            f"Factors must have shape [N] or [N, F] with N = {num_points} (the number of embeddings), "
            f"got {np.shape(factors)}."
        )
    if array.shape[1] == 0:
        raise ValueError("Factors must have at least one column.")
    return array, single


def add_noise(embeddings: np.ndarray, sigma: float, rng: np.random.Generator) -> np.ndarray:
    """embeddings [N, D] + N(0, sigma^2) noise per coordinate; sigma = 0 returns a copy."""
    if sigma < 0:
        raise ValueError(f"Noise sigma must be >= 0, got {sigma}.")
    embeddings = np.asarray(embeddings, dtype=np.float64)
    if sigma == 0:
        return embeddings.copy()
    return embeddings + rng.normal(scale=sigma, size=embeddings.shape)


# ---------------------------------------------------------------------------------------------
# Histogram estimator.


def entropy_from_counts(counts: np.ndarray, miller_madow: bool = False) -> float:
    """Plug-in entropy (nats) of a histogram given its counts (any shape).

    miller_madow adds (occupied bins - 1) / (2 n), the first-order correction of the plug-in
    estimator's downward bias.
    """
    counts = np.asarray(counts, dtype=np.float64).ravel()
    total = counts.sum()
    if total <= 0:
        raise ValueError("Cannot take the entropy of an empty histogram.")
    occupied = counts[counts > 0]
    p = occupied / total
    entropy = float(-np.sum(p * np.log(p)))
    if miller_madow:
        entropy += (occupied.size - 1) / (2.0 * total)
    return entropy


def histogram_edges(embeddings: np.ndarray, total_bins: int | None = None) -> list[np.ndarray]:
    """Equal-width bin edges per dimension, about ``total_bins`` (default sqrt(N)) bins in all.

    embeddings: [N, D]. Each dimension gets round(total_bins ** (1/D)) bins (at least 2) spanning
    its observed range, so the D-dimensional grid holds about total_bins cells.
    """
    embeddings = _as_embeddings(embeddings)
    num_points, dims = embeddings.shape
    if total_bins is None:
        total_bins = int(round(math.sqrt(num_points)))
    if total_bins < 2:
        raise ValueError(f"total_bins must be >= 2, got {total_bins}.")
    per_axis = max(2, int(round(total_bins ** (1.0 / dims))))
    edges = []
    for column in embeddings.T:
        low, high = float(column.min()), float(column.max())
        if high - low < 1e-12:  # a constant coordinate: one wide bin pair around it
            low, high = low - 0.5, high + 0.5
        edges.append(np.linspace(low, high, per_axis + 1))
    return edges


def _bin_index(embeddings: np.ndarray, edges: Sequence[np.ndarray]) -> np.ndarray:
    """Flat cell index [N] of every point in the grid given by ``edges``."""
    flat = np.zeros(embeddings.shape[0], dtype=np.int64)
    for column, edge in zip(embeddings.T, edges):
        bins = len(edge) - 1
        # Interior edges only: values at or beyond the ends fall in the first/last bin.
        index = np.clip(np.searchsorted(edge[1:-1], column, side="right"), 0, bins - 1)
        flat = flat * bins + index
    return flat


def histogram_mutual_information(
    embeddings: np.ndarray,
    factors: np.ndarray,
    total_bins: int | None = None,
    miller_madow: bool = False,
) -> np.ndarray | float:
    """I(U; G) in nats from a histogram of the embeddings (ICLR text, appendix B).

    Args:
      embeddings: [N, D] (meant for D = 2; D up to 3 is practical).
      factors: [N] or [N, F] discrete factor values (any hashable numbers; each distinct value
        is one class). Continuous variables must be discretised first (:func:`quantile_bins`).
      total_bins: cells of the histogram in all; default sqrt(N).
      miller_madow: apply the Miller-Madow bias correction to every entropy.

    Returns:
      a float for a single factor [N], else an array [F]:
      ``H(U) - sum_g p(g) H(U | G = g)``, every conditional histogrammed on the same bins.
    """
    embeddings = _as_embeddings(embeddings)
    factors, single = _as_factors(factors, embeddings.shape[0])
    if embeddings.shape[1] > 3:
        raise ValueError(
            f"Histogram MI needs low-dimensional embeddings (D <= 3), got D = {embeddings.shape[1]}; use MINE."
        )
    edges = histogram_edges(embeddings, total_bins)
    cells = _bin_index(embeddings, edges)
    num_cells = int(np.prod([len(edge) - 1 for edge in edges]))
    marginal_entropy = entropy_from_counts(np.bincount(cells, minlength=num_cells), miller_madow)
    result = np.empty(factors.shape[1])
    for column in range(factors.shape[1]):
        _, classes = np.unique(factors[:, column], return_inverse=True)
        classes = classes.ravel()
        # Joint counts [classes, cells] by one bincount over the combined index.
        joint = np.bincount(classes * num_cells + cells, minlength=(classes.max() + 1) * num_cells)
        joint = joint.reshape(-1, num_cells)
        class_counts = joint.sum(axis=1)
        conditional = sum(
            (count / len(cells)) * entropy_from_counts(row, miller_madow)
            for row, count in zip(joint, class_counts)
            if count > 0
        )
        result[column] = marginal_entropy - conditional
    return float(result[0]) if single else result


def quantile_bins(values: np.ndarray, num_bins: int) -> np.ndarray:
    """Discretises a continuous variable [N] into ``num_bins`` equally populated classes [N]."""
    values = np.asarray(values, dtype=np.float64).ravel()
    if num_bins < 2:
        raise ValueError(f"num_bins must be >= 2, got {num_bins}.")
    inner = np.quantile(values, np.linspace(0, 1, num_bins + 1)[1:-1])
    return np.searchsorted(inner, values, side="right")


def histogram_sigma_sweep(
    embeddings: np.ndarray,
    factors: np.ndarray,
    sigmas: Sequence[float],
    seed: int = 0,
    total_bins: int | None = None,
    repeats: int = 1,
) -> np.ndarray:
    """Histogram MI [S, F] of embeddings plus N(0, sigma^2) noise, for each of S sigmas.

    ``repeats`` noisy copies of the embeddings are stacked before histogramming, which samples
    the noise more densely (the factors are repeated with them).
    """
    embeddings = _as_embeddings(embeddings)
    factors, _ = _as_factors(factors, embeddings.shape[0])
    if repeats < 1:
        raise ValueError(f"repeats must be >= 1, got {repeats}.")
    rng = np.random.default_rng(seed)
    stacked_embeddings = np.concatenate([embeddings] * repeats)
    stacked_factors = np.concatenate([factors] * repeats)
    return np.stack(
        [
            histogram_mutual_information(add_noise(stacked_embeddings, float(s), rng), stacked_factors, total_bins)
            for s in sigmas
        ]
    )


# ---------------------------------------------------------------------------------------------
# MINE.


def sigma_grid(
    embeddings: np.ndarray, length_scale: float, num: int = PAPER_NUM_SIGMAS, below: float = 100.0, above: float = 10.0
) -> np.ndarray:
    """Log-spaced noise scales [num] for a sweep: from min(length scale, spread) / ``below`` to
    max(length scale, spread) * ``above``, where spread is the embeddings' RMS distance from
    their mean per coordinate. Both the length scale and the embeddings' own extent are inside.
    """
    embeddings = _as_embeddings(embeddings)
    if num < 2:
        raise ValueError(f"A sigma sweep needs num >= 2 values, got {num}.")
    if not length_scale > 0:
        raise ValueError(f"length_scale must be positive, got {length_scale}.")
    spread = float(np.sqrt(np.mean(np.var(embeddings, axis=0))))
    spread = max(spread, 1e-6)
    low = min(length_scale, spread) / below
    high = max(length_scale, spread) * above
    return np.logspace(math.log10(low), math.log10(high), num)


def debiased_log_average(
    log_average: tf.Tensor, log_value: tf.Tensor, alpha: float, step: tf.Tensor
) -> tuple[tf.Tensor, tf.Tensor]:
    """One step of an exponential moving average kept in log space, and its de-biased value.

    The average m_t = (1 - alpha) m_{t-1} + alpha x_t starts at m_0 = 0 (log_average = -inf);
    m_t / (1 - (1 - alpha)^t) is then a weighted mean of x_1..x_t (weights summing to 1), as in
    Adam's moment estimates. log_average, log_value: [F] (log m_{t-1}, log x_t); step: t >= 1.
    Returns (log m_t, log of the de-biased average), both [F].
    """
    log_value = tf.convert_to_tensor(log_value, tf.float32)
    log_decay = math.log1p(-alpha) if alpha < 1 else -np.inf  # log(1 - alpha)
    # logaddexp(log(1 - alpha) + log m_{t-1}, log(alpha) + log x_t); -inf terms drop out.
    log_average = tf.reduce_logsumexp(tf.stack([log_decay + log_average, math.log(alpha) + log_value]), axis=0)
    step = tf.cast(step, tf.float32)
    return log_average, log_average - tf.math.log(1.0 - (1.0 - alpha) ** step)


class MineEstimator:
    """F statistics networks, one per factor, trained together in one compiled loop.

    Reusable: the embeddings [N, D] and factors [N, F] live in variables of fixed shape, so
    estimating again (another sigma, or new embeddings of the same size, as the training
    callback does) reuses the traced graph instead of building and tracing anew. Every step
    draws a joint batch (the same indices for u and g) and a marginal batch (g from
    independently drawn indices, i.e. a sample of P(U) P(G)), with fresh noise.

    Args:
      num_points, embedding_dim, num_factors: N, D and F of the data to be estimated.
      settings: training and evaluation settings; seed: the networks' initial weights.
    """

    def __init__(self, num_points: int, embedding_dim: int, num_factors: int, settings: MineSettings = MineSettings(), seed: int = 0):
        settings.validate()
        if num_points < 2 or embedding_dim < 1 or num_factors < 1:
            raise ValueError(f"MINE needs N >= 2 points, D >= 1 and F >= 1 factors, got {num_points}, {embedding_dim}, {num_factors}.")
        self.settings = settings
        self.num_factors = num_factors
        self.shape = (num_points, embedding_dim, num_factors)
        self.embeddings = tf.Variable(tf.zeros([num_points, embedding_dim]), trainable=False)
        self.factors = tf.Variable(tf.zeros([num_points, num_factors]), trainable=False)
        self.num_points = num_points
        keras.utils.set_random_seed(seed)
        with float32_policy():
            self.networks = [models.build("mine", embedding_dim=embedding_dim, factor_dim=1) for _ in range(num_factors)]
            self.variables = [v for network in self.networks for v in network.trainable_variables]
            self.initial_values = [v.numpy() for v in self.variables]
            self.optimizer = keras.optimizers.Adam(learning_rate=settings.learning_rate)
            self.optimizer.build(self.variables)
        self.sigma = tf.Variable(0.0, dtype=tf.float32, trainable=False)
        self.seed = tf.Variable(seed, dtype=tf.int64, trainable=False)
        self.step = tf.Variable(0, dtype=tf.int64, trainable=False)
        # Moving average of E_marginal[exp T] per network, kept as a log for range safety. It
        # starts at 0 (log: -inf), the start that the 1 - (1 - alpha)^t de-biasing assumes.
        self.log_average = tf.Variable(tf.fill([self.num_factors], -np.inf), trainable=False)
        self._train = tf.function(self._train_steps)
        self._evaluate = tf.function(self._evaluate_chunk)

    def set_data(self, embeddings: np.ndarray, factors: np.ndarray) -> None:
        """Loads embeddings [N, D] and factor values [N] or [N, F] (standardised here)."""
        embeddings = _as_embeddings(embeddings)
        factors, _ = _as_factors(factors, embeddings.shape[0])
        if (embeddings.shape[0], embeddings.shape[1], factors.shape[1]) != self.shape:
            raise ValueError(
                f"This MINE estimator was built for N, D, F = {self.shape}; got "
                f"{(embeddings.shape[0], embeddings.shape[1], factors.shape[1])}."
            )
        self.embeddings.assign(embeddings.astype(np.float32))
        self.factors.assign(_standardise(factors).astype(np.float32))

    def reset(self, sigma: float, seed: int) -> None:
        """Fresh start for a new estimate: the initial weights, zero optimizer state."""
        for variable, value in zip(self.variables, self.initial_values):
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
        marginal_index = tf.random.stateless_uniform([batch_size], keys[1], 0, self.num_points, dtype=tf.int64)
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

    def estimate(self, sigma: float, seed: int) -> np.ndarray:
        """Trains all networks from their initial weights at noise ``sigma`` on the loaded data;
        returns the DV estimate [F] in nats."""
        if not (sigma >= 0 and math.isfinite(sigma)):
            raise ValueError(f"Noise sigma must be finite and >= 0, got {sigma}.")
        self.reset(sigma, seed)
        settings = self.settings
        remaining = settings.steps
        while remaining > 0:
            steps = min(remaining, settings.chunk_steps)
            self._train(tf.constant(steps, tf.int64))
            remaining -= steps
        chunk = min(settings.eval_samples, 8192)
        num_chunks = max(1, int(math.ceil(settings.eval_samples / chunk)))
        joint_sum, marginal_lse = self._evaluate(tf.constant(chunk, tf.int32), tf.constant(num_chunks, tf.int64))
        total = float(chunk * num_chunks)
        return joint_sum.numpy() / total - (marginal_lse.numpy() - math.log(total))


def _standardise(factors: np.ndarray) -> np.ndarray:
    """Factor columns to zero mean, unit variance (the network sees comparable input ranges)."""
    factors = np.asarray(factors, dtype=np.float64)
    std = factors.std(axis=0)
    return (factors - factors.mean(axis=0)) / np.where(std > 0, std, 1.0)


def mine_sigma_sweep(
    embeddings: np.ndarray,
    factors: np.ndarray,
    sigmas: Sequence[float],
    settings: MineSettings = MineSettings(),
    seed: int = 0,
) -> np.ndarray:
    """MINE estimates [S, F] in nats: for every sigma, F freshly initialised networks (one per
    factor) trained on embeddings + N(0, sigma^2) noise.

    Args:
      embeddings: [N, D] float. factors: [N] or [N, F], the factor *values* (classes or
        continuous); each column is standardised before it enters its network.
      sigmas: noise scales (embedding units), each >= 0.
      settings: training and evaluation settings (paper defaults).
      seed: seeds the initial weights, the batches and the noise.

    Every sigma restarts from the same initial weights, so differences along the sweep come
    from the noise, not from the initialisation.
    """
    settings.validate()
    embeddings = _as_embeddings(embeddings)
    factors, _ = _as_factors(factors, embeddings.shape[0])
    sigmas = [float(s) for s in sigmas]
    if any(s < 0 or not math.isfinite(s) for s in sigmas):
        raise ValueError(f"Noise sigmas must be finite and >= 0, got {sigmas}.")
    estimator = MineEstimator(embeddings.shape[0], embeddings.shape[1], factors.shape[1], settings, seed)
    estimator.set_data(embeddings, factors)
    return np.stack([estimator.estimate(sigma, seed * 1000 + index) for index, sigma in enumerate(sigmas)])


def mine_mutual_information(
    embeddings: np.ndarray,
    factors: np.ndarray,
    sigma: float = 0.0,
    settings: MineSettings = MineSettings(),
    seed: int = 0,
) -> np.ndarray | float:
    """MINE estimate of I(U + noise; G) in nats: a float for factors [N], else an array [F].

    See :func:`mine_sigma_sweep` for the arguments; this is the sweep at one sigma.
    """
    single = np.asarray(factors).ndim == 1
    values = mine_sigma_sweep(embeddings, factors, [sigma], settings, seed)[0]
    return float(values[0]) if single else values
