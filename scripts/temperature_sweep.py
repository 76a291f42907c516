"""Temperature sets the length scale of factor isolation (supplement S2, Fig. S3).

  python -m scripts.temperature_sweep [--temperatures=0.1,0.3,1,3] [--steps=300]

Trains the Shapes3D encoder with wall hue inactive at several temperatures tau (squared
Euclidean similarity, so the loss's length scale is sqrt(tau)), then measures the mutual
information between every factor and the embeddings plus Gaussian noise, over 40 log-spaced
noise scales sigma. To keep this cheap the embedding has d = 2 (the ICLR text's setting), where
the histogram estimator (sqrt(N) bins, the same bins for all conditionals) costs milliseconds
per sigma. The expectation: information about the inactive wall hue is gone for sigma around
and above sqrt(tau), and every curve's decay moves right as tau grows.

Writes ``docs/figures/temperature_sweep.png`` (one panel per tau, dotted line at sqrt(tau)),
``docs/figures/temperature_decay.png`` (the noise scale at which each factor's information
falls to half, against sqrt(tau)) and the numbers as JSON beside them.
"""

from __future__ import annotations

import json
import math
import os
import time

from absl import app, flags

FLAGS = flags.FLAGS
flags.DEFINE_list("temperatures", ["0.1", "0.3", "1", "3"], "Training temperatures tau.")
flags.DEFINE_string("inactive_factors", "wall_hue", "Inactive factors of every run.")
flags.DEFINE_integer("steps", 300, "Training steps per run.")
flags.DEFINE_float("learning_rate", 3e-4, "Adam learning rate.")
flags.DEFINE_integer("embedding_dim", 2, "Embedding size (2 lets the histogram estimator work).")
flags.DEFINE_integer("seed", 0, "Seed of every run.")
flags.DEFINE_integer("num_images", 8192, "Labelled images for the histogram estimates.")
flags.DEFINE_integer("num_sigmas", 40, "Noise scales per sweep (the paper's 40).")
flags.DEFINE_integer("noise_repeats", 4, "Noisy copies of the sample per sigma (denser noise sampling).")
flags.DEFINE_float(
    "min_information",
    0.075,
    "Decay figure: only factors with at least this MI (nats) at the lowest noise in every run.",
)
flags.DEFINE_string("output_dir", "runs/temperature_sweep", "Run directories.")
flags.DEFINE_string("figures_dir", "docs/figures", "Figure folder.")


def half_decay_sigma(sigmas, values, min_information: float = 0.0) -> float | None:
    """Smallest sigma at which a curve falls below half its low-noise value (log-interpolated);
    None if it carried less than ``min_information`` nats or never falls that far."""
    import numpy as np

    sigmas, values = np.asarray(sigmas), np.asarray(values)
    top = values[0]
    if top <= 0 or top < min_information:
        return None
    below = np.flatnonzero(values < 0.5 * top)
    if below.size == 0:
        return None
    k = below[0]
    if k == 0:
        return float(sigmas[0])
    # Linear interpolation in log sigma between the last point above and the first below.
    x0, x1 = math.log(sigmas[k - 1]), math.log(sigmas[k])
    y0, y1 = values[k - 1], values[k]
    return float(math.exp(x0 + (0.5 * top - y0) * (x1 - x0) / (y1 - y0)))


def main(argv) -> None:
    del argv
    import numpy as np

    from abc_tf.runs.experiments import get_preset
    from abc_tf.runs import training
    from abc_tf.runs.run_dir import embed, load_run
    from abc_tf.data.shapes3d.family import FACTOR_NAMES
    from abc_tf.evaluation.tasks import factor_isolation
    from abc_tf.evaluation.estimators import histogram_mi, noise, plots, sweep_plots

    names = list(FACTOR_NAMES)
    temperatures = [float(t) for t in FLAGS.temperatures]
    if min(temperatures) <= 0:
        raise app.UsageError("Temperatures must be positive.")
    base = get_preset("shapes3d").replace(
        steps=FLAGS.steps,
        log_every=FLAGS.steps,
        learning_rate=FLAGS.learning_rate,
        embedding_dim=FLAGS.embedding_dim,
        inactive_factors=FLAGS.inactive_factors,
        seed=FLAGS.seed,
        mixed_precision=True,
    )
    images, factors = factor_isolation.labelled_sample(base, FLAGS.num_images, seed=1234)
    panels, records = [], []
    for tau in temperatures:
        config = base.replace(name=f"shapes3d_tau{tau:g}", temperature=tau)
        run_dir = os.path.join(FLAGS.output_dir, f"tau_{tau:g}")
        start = time.time()
        if os.path.exists(os.path.join(run_dir, "encoder.keras")):
            encoder = load_run(run_dir).encoder
        else:
            encoder = training.train(config, run_dir, verbose=0).encoder
        embeddings = embed(encoder, images).astype(np.float64)
        length_scale = config.method.length_scale()
        sigmas = noise.sigma_grid(embeddings, length_scale, FLAGS.num_sigmas, below=30.0, above=5.0)
        values = histogram_mi.histogram_sigma_sweep(
            embeddings, factors, sigmas, seed=FLAGS.seed, repeats=FLAGS.noise_repeats
        )
        decay = {n: half_decay_sigma(sigmas, values[:, i]) for i, n in enumerate(names)}
        inactive = factor_isolation.inactive_names(config)
        record = {
            "temperature": tau,
            "length_scale": length_scale,
            "spread": noise.spread(embeddings),
            "sigmas": sigmas.tolist(),
            "values": values.tolist(),
            "half_decay_sigma": decay,
            "mi_at_length_scale": dict(
                zip(
                    names,
                    histogram_mi.histogram_sigma_sweep(
                        embeddings, factors, [length_scale], seed=FLAGS.seed, repeats=FLAGS.noise_repeats
                    )[0].tolist(),
                )
            ),
            "seconds": time.time() - start,
        }
        records.append(record)
        panels.append(
            {
                "sigmas": sigmas,
                "values": values,
                "inactive": inactive,
                "length_scale": length_scale,
                "label": f"tau = {tau:g} (sqrt(tau) = {length_scale:.2g}), {FLAGS.inactive_factors} inactive",
            }
        )
        print(
            f"tau={tau:g}: spread {record['spread']:.3g}, MI at sqrt(tau): "
            + ", ".join(f"{n} {v:.2f}" for n, v in record["mi_at_length_scale"].items())
            + "; half-decay sigma: "
            + ", ".join(f"{n} {v:.3g}" if v else f"{n} -" for n, v in decay.items()),
            flush=True,
        )

    os.makedirs(FLAGS.figures_dir, exist_ok=True)
    sweep_plots.plot_sweep_grid(
        panels,
        names,
        os.path.join(FLAGS.figures_dir, "temperature_sweep.png"),
        columns=2,
        title=f"Histogram MI against noise, d = {FLAGS.embedding_dim}",
        ylabel="I(U+noise; G) [nats]",
    )
    figure = plots.new_figure(4.6, 3.4)
    axes = figure.add_subplot(1, 1, 1)
    scales = np.array([r["length_scale"] for r in records])
    for i, name in enumerate(names):
        # Only curves that carry information in every run: a decay of noise-level MI means nothing.
        if any(
            r["values"][0][i] < FLAGS.min_information or r["half_decay_sigma"][name] is None for r in records
        ):
            continue
        points = [(s, r["half_decay_sigma"][name]) for s, r in zip(scales, records)]
        if points:
            xs, ys = zip(*points)
            axes.plot(
                xs, ys, "o--" if name in FLAGS.inactive_factors.split(",") else "o-", label=name, markersize=4
            )
    axes.plot(scales, scales, "k:", label="sigma = sqrt(tau)")
    axes.set_xscale("log")
    axes.set_yscale("log")
    from matplotlib.ticker import NullFormatter

    axes.xaxis.set_minor_formatter(NullFormatter())
    axes.set_xticks(scales)
    axes.set_xticklabels([f"{s:.2g}" for s in scales])
    axes.set_xlabel("length scale sqrt(tau)", fontsize=9)
    axes.set_ylabel("noise sigma at half information", fontsize=9)
    axes.legend(fontsize=7, frameon=False)
    figure.tight_layout()
    plots.save_figure(figure, os.path.join(FLAGS.figures_dir, "temperature_decay.png"))
    with open(os.path.join(FLAGS.figures_dir, "temperature_sweep.json"), "w") as handle:
        json.dump(
            {"inactive_factors": FLAGS.inactive_factors, "steps": FLAGS.steps, "runs": records},
            handle,
            indent=1,
        )
    print("Wrote", os.path.join(FLAGS.figures_dir, "temperature_sweep.png"))


if __name__ == "__main__":
    app.run(main)
