"""Tolerances from the arithmetic. Two evaluations of one formula along different paths (NumPy
against TensorFlow, eager against graph or XLA, a reloaded model against the live one) round
differently: NumPy, Eigen, oneDNN and XLA pick their summation order by the CPU's vector width,
the threads at hand and the fusions they make. One rounding costs at most eps of the magnitude
it rounds, so a result with n roundings on its longest chain lies within n eps of the exact one,
relative to the magnitudes involved: a sum of n terms, in any order, within (n - 1) eps sum |x_i|
(Higham, Accuracy and Stability of Numerical Algorithms, 2nd ed., eq. 4.4). Two evaluations lie
within twice that of each other. Comparisons of values computed the same way (a copy, an
identity, integers, float64 against float64) need none of this and say so where they stand."""

from __future__ import annotations

import numpy as np

EPS32 = float(np.finfo(np.float32).eps)  # 2**-23 = 1.19e-7
EPS64 = float(np.finfo(np.float64).eps)  # 2**-52 = 2.2e-16


def rounding_rtol(roundings: float, condition: float = 1.0, eps: float = EPS32) -> float:
    """How far apart, relatively, two evaluations of one result may land: 2 roundings condition eps.

    ``roundings``: the roundings on the result's longest chain (n for a sum or dot product of n
    terms; the fan-ins of every layer a network's output passes through, added up).
    ``condition``: what the formula multiplies a relative error by on its way to the result: 1
    for sums of terms of one sign and for products; sum |x_i| / |sum x_i| where terms cancel;
    |x| for exp(x); |z| / temperature for a softmax of z / temperature."""
    return 2.0 * roundings * condition * eps


def assert_same_adam_step(before, ours, theirs) -> None:
    """Two models took one Adam step from the same weights ``before`` along two paths (eager and
    compiled): the same step, as far as rounding lets two Adam steps agree.

    Adam divides each gradient component by its own size, so each weight steps by up to the full
    step s (the largest step of all) however small its gradient is, and a component whose gradient
    lies within its rounding error of zero may step the other way in the other path: the two agree
    within 2 s everywhere, no closer. Elsewhere the step moves by the gradient's relative rounding
    error, times at most 1, and the weights round by eps |w|: within 1e-2 s wherever the gradient
    is 100 times its rounding error from zero, which leaves at most a few in a thousand out (the
    mass of a gradient's spread within 1e-6 of zero); a step of another gradient moves most of them."""
    steps = [
        (np.asarray(one) - start, np.asarray(two) - start) for start, one, two in zip(before, ours, theirs)
    ]
    full = max(np.abs(one).max() for one, _ in steps)
    assert full > 0, "no weight moved"
    gaps = np.concatenate([np.abs(one - two).ravel() for one, two in steps])
    assert gaps.max() <= 2.0 * full * (1 + 1e-3), (gaps.max(), full)
    assert np.mean(gaps > 1e-2 * full) < 1e-2, (np.mean(gaps > 1e-2 * full), full)


def assert_same_sgd_step(before, ours, theirs, roundings: float, condition: float = 1.0) -> None:
    """Two models took one plain gradient step (SGD, w - lr g) from the same weights ``before``
    along two paths: the same step wherever rounding lets it be. A step is the gradient times lr,
    so two paths' steps differ by the gradients' rounding, ``rounding_rtol(roundings, condition)``
    of the largest step s (a bound over the sums' magnitudes, which the largest gradient bounds up
    to ``condition``), plus the rounding of w - lr g itself, eps |w| in each path. Unlike Adam's
    first step (which moves every weight by about lr, whatever its gradient), SGD passes a
    rounding-sized gradient gap on as a rounding-sized step: a chained update (a GAN's G step
    after its D step) stays within rounding of the other path."""
    steps = [
        (np.asarray(one) - start, np.asarray(two) - start, start)
        for start, one, two in zip(before, ours, theirs)
    ]
    full = max(np.abs(one).max() for one, _, _ in steps)
    assert full > 0, "no weight moved"
    allowed = rounding_rtol(roundings, condition) * full
    for one, two, start in steps:
        np.testing.assert_array_less(np.abs(one - two), allowed + 2 * EPS32 * np.abs(start) + 1e-30)
