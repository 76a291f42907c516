"""The measures a method declares for its own networks (``Method.measures``, ``"module:function"``).

Here are the built-in ones: a VAE's test likelihood and Elastic-InfoGAN's code clusters. Each is
``(run, out_dir, settings) -> dict``; :func:`measures_of` loads the one a method names.
"""

from __future__ import annotations

from abc_tf import registry
from abc_tf.evaluation.progress import stage
from abc_tf.evaluation.tasks import digit_clusters, likelihood
from abc_tf.evaluation.tasks.evaluation_settings import Evaluate, EvaluationSettings
from abc_tf.runs.run_dir import TrainedRun


def likelihood_measures(run: TrainedRun, out_dir: str, settings: EvaluationSettings) -> dict:
    """VAE and VITAE: test ELBO, importance-weighted log p(x) and kNN digit accuracy."""
    del out_dir
    with stage("test ELBO and importance-weighted log p(x)"):
        metrics = likelihood.evaluate_run(run, seed=settings.sample_seed, max_images=settings.measure_images)
    print(likelihood.summary(metrics))
    return metrics


def digit_cluster_measures(run: TrainedRun, out_dir: str, settings: EvaluationSettings) -> dict:
    """Elastic-InfoGAN: NMI and ENT of generated digits' code; 1-NN and k-means NMI of the encoder."""
    with stage("the code's digit clusters (NMI, ENT, 1-NN)"):
        metrics = digit_clusters.evaluate_run(
            run, out_dir, seed=settings.sample_seed, max_images=settings.measure_images
        )
    print(digit_clusters.summary(metrics))
    return metrics


def measures_of(reference: str) -> Evaluate:
    """Loads the method's own measures function that ``Method.measures`` names (``"module:function"``)."""
    function = registry.load(reference)
    if not callable(function):
        raise TypeError(f"Method.measures {reference!r} is not a function (run, out_dir, settings) -> dict.")
    return function
