"""The settings every evaluation task reads, in one frozen value, and what reads them.

The commands build an :class:`EvaluationSettings` from their flags and check it before any run
is evaluated. Tasks and method measures read it, never flags: each is an :data:`Evaluate`.
"""

from __future__ import annotations

import dataclasses
from typing import Callable

from abc_tf.evaluation.estimators.disentanglement import SCORES, ScoreSettings
from abc_tf.evaluation.tasks import factor_isolation, pose_accuracy
from abc_tf.runs.run_dir import TrainedRun


@dataclasses.dataclass(frozen=True)
class EvaluationSettings:
    """Everything a task may read.

    isolation: the labelled sample's size and seed, MINE, probes, noise scale and sweep.
    pose: the pose lookup's dictionaries and queries.
    disentanglement: the point-count preset of the disentanglement scores; "none" skips them.
    disentanglement_scores: which scores to compute.
    untrained: the factor task also measures the untrained encoder. The other tasks always do.
    pose_export_dir: the pose task also writes the SavedModel with ``lookup_pose`` here.
    measure_images: at most this many images per set that a method's own measures read; 0 means all.
      The sets are test, reference and training images, and generated images per code.
      Use it to check that every method's run evaluates, not for figures.
    """

    isolation: factor_isolation.IsolationSettings = factor_isolation.IsolationSettings()
    pose: pose_accuracy.PoseEvalSettings = pose_accuracy.PoseEvalSettings()
    disentanglement: str = "fast"
    disentanglement_scores: tuple[str, ...] = SCORES
    untrained: bool = False
    pose_export_dir: str | None = None
    measure_images: int = 0

    @property
    def sample_seed(self) -> int:
        return self.isolation.sample_seed

    @property
    def scores(self) -> ScoreSettings | None:
        """The point counts of :attr:`disentanglement`; None means no scores."""
        return ScoreSettings.preset(self.disentanglement)

    def validate(self) -> None:
        """Raises ValueError naming a setting that cannot work, before any run is evaluated."""
        self.isolation.validate()
        self.pose.validate()
        self.scores  # noqa: B018 - an unknown preset raises
        if self.measure_images < 0:
            raise ValueError(f"measure_images must be >= 0 (0: the whole sets), got {self.measure_images}.")
        unknown = [name for name in self.disentanglement_scores if name not in SCORES]
        if unknown or not self.disentanglement_scores:
            raise ValueError(
                "disentanglement_scores: unknown or no scores "
                f"{unknown or list(self.disentanglement_scores)}; choose from {', '.join(SCORES)}."
            )


# A task's or a method's measures: ``(run, out_dir, settings) -> metrics``.
Evaluate = Callable[[TrainedRun, str, EvaluationSettings], dict]
