"""A learning curve: a run's checkpoints evaluated one by one, their measures against the step.

The curve goes to curve.json and curve.png (abc_tf.evaluation.learning_curves).
"""

from __future__ import annotations

import os

from abc_tf.evaluation import learning_curves
from abc_tf.evaluation.progress import stage
from abc_tf.evaluation.tasks.evaluation_settings import EvaluationSettings
from abc_tf.evaluation.tasks.run_evaluation import evaluate_run
from abc_tf.runs import checkpoint_run


def evaluate_checkpoints(
    run_dir: str,
    out_dir: str,
    settings: EvaluationSettings,
    steps: str,
    references: dict[str, float],
    network: str = "encoder",
    config_path: str | None = None,
) -> dict:
    """Evaluates each checkpoint that ``steps`` chooses and writes their learning curve.

    steps: "all", "last" or "S,S,...". Each checkpoint goes to ``out_dir/checkpoints/step_<S>``.
    The curve is curve.json and curve.png, with ``references`` as dashed lines.
    No TensorBoard logs: each checkpoint would be a separate session, and the curve already shows them.
    """
    chosen = checkpoint_run.select_steps(run_dir, steps)
    points = []
    for index, step in enumerate(chosen, 1):
        with stage(f"checkpoint {index}/{len(chosen)}: step {step}"):
            run = checkpoint_run.load_checkpoint_run(run_dir, step, config_path).embedding_with(network)
            metrics = evaluate_run(
                run, os.path.join(out_dir, "checkpoints", f"step_{step}"), settings, tensorboard=False
            )
            points.append((step, learning_curves.curve_measures(metrics)))
        print(
            f"  step {step}: "
            + ", ".join(f"{name} {value:.4g}" for name, value in sorted(points[-1][1].items()))
        )
    title = (
        f"{os.path.basename(os.path.normpath(run_dir))}: {run.config.method.name} on {run.config.data.family}"
    )
    return learning_curves.write_curve(points, out_dir, title, references)
