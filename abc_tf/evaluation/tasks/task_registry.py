"""The evaluation tasks by name, and the task a run's data family declares.

A family names its task in ``DataFamily.evaluation_task``: a key of :data:`TASKS`, or the
``"module:NAME"`` of its own :class:`Task`. The lookups here resolve that name.
"""

from __future__ import annotations

import dataclasses
from typing import Callable

from abc_tf import data, registry
from abc_tf.evaluation.tasks import labelled_samples
from abc_tf.evaluation.tasks.evaluation_settings import Evaluate
from abc_tf.evaluation.tasks.family_tasks import (
    evaluate_digit_style,
    evaluate_factors,
    evaluate_labels,
    evaluate_pose,
)


@dataclasses.dataclass(frozen=True)
class Task:
    """One data family's evaluation.

    evaluate: ``(run, out_dir, settings) -> metrics``, the whole evaluation.
    labelled_sample: ``(config, num_images, seed) -> LabelledSample or None``. The factor-isolation
    callback, the end-of-run summary and ``compare.py`` measure on this sample. None: the task has
    none, and those skip the family.
    """

    evaluate: Evaluate
    labelled_sample: Callable[..., labelled_samples.LabelledSample | None] | None = None


# The task of each kind of labels a family offers (DataFamily.evaluation_task).
TASKS: dict[str, Task] = {
    "factors": Task(evaluate_factors, labelled_samples.known_factor_sample),
    "digit_style": Task(evaluate_digit_style, labelled_samples.known_factor_sample),
    "labels": Task(evaluate_labels, labelled_samples.grouped_label_sample),
    "pose": Task(evaluate_pose, labelled_samples.pose_sample),
}


def declared_task(name: str) -> Task | None:
    """The task a family's ``evaluation_task`` names.

    That is a key of :data:`TASKS` or the ``"module:NAME"`` of a :class:`Task`, loaded now.
    Returns None for "" or a missing key.
    """
    if ":" not in name:
        return TASKS.get(name)
    task = registry.load(name)
    if not isinstance(task, Task):
        raise TypeError(f"evaluation_task {name!r} is not an abc_tf.evaluation.tasks.Task.")
    return task


def task_of(config) -> Task:
    """The task of ``config``'s data family; ValueError when the family declares none."""
    name = data.get_family(config.data.family).evaluation_task
    task = declared_task(name)
    if task is None:
        declared = (
            f"names the evaluation task {name!r}, which is not registered"
            if name
            else "declares no evaluation task"
        )
        raise ValueError(
            f"Data family {config.data.family!r} {declared} (abc_tf.evaluation.tasks.TASKS: "
            f'{", ".join(sorted(TASKS))}, or a "module:NAME" of its own).'
        )
    return task


def offers_labelled_sample(config) -> bool:
    """Whether ``config``'s family's task draws a labelled sample. Does not draw it."""
    task = declared_task(data.get_family(config.data.family).evaluation_task)
    return task is not None and task.labelled_sample is not None


def labelled_sample(config, num_images: int, seed: int) -> labelled_samples.LabelledSample | None:
    """The labelled sample of ``config``'s family's task, or None where it has none."""
    task = declared_task(data.get_family(config.data.family).evaluation_task)
    return (
        None
        if task is None or task.labelled_sample is None
        else task.labelled_sample(config, num_images, seed)
    )
