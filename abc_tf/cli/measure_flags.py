"""The measurement flags that evaluate, curves and compare share, and the settings built from them.

Each command keeps its own ``flags.FlagValues``; :func:`define` adds these flags to it.
A comparison takes the sample, MINE, probe and disentanglement flags. One run's evaluation
(evaluate, curves) also takes the noise and sweep, pose and method-measure flags.
The settings builders check every value before any run is evaluated.
"""

from __future__ import annotations

import dataclasses

from absl import flags

# The flags a comparison does not take: it sets the noise per row and measures no pose.
PER_RUN = (
    "sigma",
    "num_sigmas",
    "sweep_estimator",
    "pose_dictionary_size",
    "pose_repeats",
    "pose_pool_size",
    "pose_queries",
    "pose_query_domains",
    "pose_query_split",
    "pose_pretrained_backbone",
    "measure_images",
)


def check_folders_named(flag_values: flags.FlagValues, names: tuple[str, ...]) -> None:
    """ValueError for a folder flag given an empty value, most often an unset shell variable."""
    for name in names:
        if flag_values[name].present and not flag_values[name].value.strip():
            raise ValueError(
                f"--{name} is empty (an unset shell variable?); name a folder, or leave the flag out."
            )


def define(flag_values: flags.FlagValues, per_run: bool = True) -> None:
    """Defines the measurement flags on ``flag_values``; those of :data:`PER_RUN` if ``per_run``."""
    fv = {"flag_values": flag_values}
    flags.DEFINE_integer("num_images", 4096, "Labelled images sampled for the measures.", **fv)
    flags.DEFINE_integer(
        "sample_seed", 1234, "Seed of the labelled sample (the same for all runs compared).", **fv
    )
    flags.DEFINE_integer("mine_steps", 20_000, "MINE optimizer steps per network (0: skip MINE).", **fv)
    flags.DEFINE_integer("mine_batch_size", 256, "MINE batch size.", **fv)
    flags.DEFINE_float("mine_learning_rate", 3e-4, "MINE Adam learning rate.", **fv)
    flags.DEFINE_integer(
        "mine_eval_samples", 256_000, "Samples averaged for the final Donsker-Varadhan value.", **fv
    )
    flags.DEFINE_float(
        "mine_moving_average",
        0.0,
        "Rate of MINE's bias-corrected moving average (0: plain DV gradient).",
        **fv,
    )
    flags.DEFINE_integer("probe_epochs", 30, "Epochs of each factor probe (0: skip probes).", **fv)
    flags.DEFINE_boolean(
        "probe_noisy_test",
        False,
        "Add the noise to the probes' test inputs too (default: training only, as in the ICLR text).",
        **fv,
    )
    flags.DEFINE_enum(
        "disentanglement",
        "fast",
        ["none", "fast", "full", "library"],
        "Point counts of the disentanglement scores: none (skip), fast (23,100 codes, DCI's trees on binned "
        "codes; for a CPU), full (disentanglement_lib's counts, 2,895,000 codes, DCI on 5,000), library "
        "(also DCI on 10,000, no standardising); abc_tf.evaluation.estimators.disentanglement.ScoreSettings.",
        **fv,
    )
    flags.DEFINE_list(
        "disentanglement_scores",
        ["beta_vae", "factor_vae", "mig", "dci", "sap"],
        "Which disentanglement scores to compute (beta_vae, factor_vae, mig, dci, sap).",
        **fv,
    )
    if per_run:
        define_per_run(flag_values)


def define_per_run(flag_values: flags.FlagValues) -> None:
    """Defines the flags of :data:`PER_RUN` on ``flag_values``."""
    fv = {"flag_values": flag_values}
    flags.DEFINE_float(
        "sigma",
        None,
        "Noise scale of the measures (default: the loss's length scale, sqrt(tau) for l2sq).",
        **fv,
    )
    flags.DEFINE_integer(
        "num_sigmas", 0, "Points of the MI-against-noise sweep (0: none; the paper used 40).", **fv
    )
    flags.DEFINE_enum(
        "sweep_estimator",
        "auto",
        ["auto", "mine", "histogram"],
        "Estimator of the sweep (auto: histogram for d <= 2).",
        **fv,
    )
    flags.DEFINE_integer(
        "pose_dictionary_size", 1800, "Pose: images of known pose per lookup dictionary.", **fv
    )
    flags.DEFINE_integer(
        "pose_repeats", 50, "Pose: random dictionaries the lookup metrics are averaged over.", **fv
    )
    flags.DEFINE_integer(
        "pose_pool_size",
        0,
        "Pose: synthetic images of known pose the dictionaries are drawn from (0: 4 x dictionary size).",
        **fv,
    )
    flags.DEFINE_integer(
        "pose_queries", 0, "Pose: test images per query domain (0: the data family's default).", **fv
    )
    flags.DEFINE_list(
        "pose_query_domains",
        ["real"],
        "Pose: query domains, real and/or synthetic (held-out instances).",
        **fv,
    )
    flags.DEFINE_enum(
        "pose_query_split",
        "test",
        ["test", "validation"],
        "Pose: the instances queried: test (held out of training) or validation (the training instances the "
        "run's --data.validation_instances held out; synthetic queries only), for tuning without the test "
        "instances.",
        **fv,
    )
    flags.DEFINE_string(
        "pose_pretrained_backbone",
        "",
        "Pose: 'imagenet' or a ResNet50V2 notop weights file: adds the paper's ImageNet-pretrained "
        "ResNet row (no training, cosine).",
        **fv,
    )
    flags.DEFINE_integer(
        "measure_images",
        0,
        "At most this many images in each set a method's own measures read or generate (the VAEs' test ELBO "
        "and kNN, Elastic-InfoGAN's classifier, codes and 1-NN); 0: the whole sets. For checking that a run "
        "evaluates; its figures are not the paper's.",
        **fv,
    )


def _isolation(flag_values: flags.FlagValues):
    """The factor-isolation settings of the sample, MINE and probe flags (no noise, no sweep)."""
    from abc_tf.evaluation.estimators import probes
    from abc_tf.evaluation.estimators.mine import MineSettings
    from abc_tf.evaluation.tasks import factor_isolation

    for flag in ("mine_steps", "probe_epochs"):  # 0 skips the measure; a negative count is a slip, not a skip
        if flag_values[flag].value < 0:
            raise ValueError(f"--{flag} must be >= 0 (0: skip), got {flag_values[flag].value}.")
    mine = None
    if flag_values.mine_steps > 0:
        mine = MineSettings(
            learning_rate=flag_values.mine_learning_rate,
            batch_size=flag_values.mine_batch_size,
            steps=flag_values.mine_steps,
            eval_samples=flag_values.mine_eval_samples,
            moving_average=flag_values.mine_moving_average or None,
        )
    probe = None
    if flag_values.probe_epochs > 0:
        probe = probes.ProbeSettings(epochs=flag_values.probe_epochs, noisy_test=flag_values.probe_noisy_test)
    return factor_isolation.IsolationSettings(
        num_images=flag_values.num_images, sample_seed=flag_values.sample_seed, mine=mine, probe=probe
    )


def evaluation_settings(flag_values: flags.FlagValues, **fields):
    """The :class:`EvaluationSettings` of the flags :func:`define` defined (``per_run`` too), validated.

    fields: the settings a command's own flags give (``untrained``, ``pose_export_dir``).
    """
    from abc_tf.evaluation.tasks import pose_accuracy
    from abc_tf.evaluation.tasks.evaluation_settings import EvaluationSettings

    isolation = dataclasses.replace(
        _isolation(flag_values),
        num_sigmas=flag_values.num_sigmas,
        sweep_estimator=flag_values.sweep_estimator,
        sigma=flag_values.sigma,
    )
    pose = pose_accuracy.PoseEvalSettings(
        dictionary_size=flag_values.pose_dictionary_size,
        repeats=flag_values.pose_repeats,
        pool_size=flag_values.pose_pool_size,
        num_queries=flag_values.pose_queries,
        query_domains=tuple(flag_values.pose_query_domains),
        query_split=flag_values.pose_query_split,
        seed=flag_values.sample_seed,
        pretrained_backbone=flag_values.pose_pretrained_backbone,
    )
    settings = EvaluationSettings(
        isolation=isolation,
        pose=pose,
        disentanglement=flag_values.disentanglement,
        disentanglement_scores=tuple(flag_values.disentanglement_scores),
        measure_images=flag_values.measure_images,
        **fields,
    )
    settings.validate()
    return settings


def comparison_settings(flag_values: flags.FlagValues):
    """The :class:`ComparisonSettings` of the flags ``define(flag_values, per_run=False)`` defined,
    validated as one run's settings are (the same one-line errors)."""
    from abc_tf.evaluation.comparison import ComparisonSettings
    from abc_tf.evaluation.tasks.evaluation_settings import EvaluationSettings

    settings = EvaluationSettings(
        isolation=_isolation(flag_values),
        disentanglement=flag_values.disentanglement,
        disentanglement_scores=tuple(flag_values.disentanglement_scores),
    )
    settings.validate()
    return ComparisonSettings(
        settings.isolation, settings.scores, settings.disentanglement, settings.disentanglement_scores
    )
