"""Table S1 of the ABC supplement (pose in the synthetic domain, cars) and the synthetic-to-"real"
transfer of Table 1, for ABC and the paper's baselines, on the built-in procedural cars.

  python -m scripts.pose_table_s1 --rows=ABC=runs/table_s1/abc32,ML-VAE=runs/table_s1/ml_vae,\
CC-VAE=runs/table_s1/cc_vae,LORD=runs/table_s1/lord --output_dir=docs/figures/table_s1

Each row is a folder of ``train.py --seeds N`` runs (``seed_<k>``) or one run. Every run is
evaluated by ``abc_tf.evaluation.tasks.pose_accuracy.evaluate_pose_run`` with the same settings:
nearest-neighbour lookup of held-out instances' images in random dictionaries of renders of the
training instances with known pose (dictionary 1800, 50 dictionaries, as Table 1), queries from
the synthetic domain (Table S1) and from the procedural "real" domain (Table 1's transfer), with
each run's own similarity. Per row: the mean and standard deviation over seeds of each seed's
mean over dictionaries. ``--pretrained_backbone=PATH`` adds the ImageNet-ResNet row of Table 1
(a ResNet50V2 notop weights file; not available offline here).

Writes ``summary.json`` (every seed's metrics) and ``table_s1.md`` (both tables, the paper's
numbers beside ours) into ``--output_dir``, and prints the tables.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os

import numpy as np

# The paper's numbers: median error (deg) / Acc@30. Table S1 (supplement L66-70), synthetic
# cars; Table 1 (ICLR text L405-411), Pascal3D+ cars (LORD is not in it).
PAPER = {
    "synthetic": {"CC-VAE": (12.7, 0.67), "ML-VAE": (9.3, 0.84), "LORD": (9.9, 0.69), "ABC": (5.8, 0.83)},
    "real": {
        "ImageNet ResNet": (16.0, 0.65),
        "CC-VAE": (54.8, 0.26),
        "ML-VAE": (75.6, 0.27),
        "ABC": (14.1, 0.65),
    },
}
METRICS = ("median_error_deg", "acc_at_30", "flip_median_error_deg", "flip_acc_at_30")
DOMAINS = ("synthetic", "real")


def parse_rows(values: list[str]) -> list[tuple[str, str]]:
    """``["NAME=DIR", ...]`` -> [(name, dir)]; ValueError naming a malformed entry."""
    rows = []
    for value in values:
        name, sep, path = value.partition("=")
        if not sep or not name or not path:
            raise ValueError(f"--rows entries are NAME=DIR, got {value!r}.")
        rows.append((name, path))
    return rows


def aggregate(per_seed: list[dict]) -> dict[str, dict[str, float]]:
    """{metric: {"mean", "std", "seeds"}} over the seeds' values (std 0 for one seed)."""
    out = {}
    for metric in METRICS:
        values = np.array([seed[metric] for seed in per_seed], np.float64)
        out[metric] = {
            "mean": float(values.mean()),
            "std": float(values.std(ddof=1)) if len(values) > 1 else 0.0,
            "seeds": len(values),
        }
    return out


def markdown(summary: dict, domain: str) -> str:
    """One domain's table: ours (mean ± std over seeds) beside the paper's."""
    lines = [
        "| row | seeds | median error (deg) | Acc@30 | flip-inv. median (deg) | flip-inv. Acc@30 "
        "| paper median / Acc@30 |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, row in summary["rows"].items():
        values = row["domains"][domain]
        cells = [f"{values[m]['mean']:.3g} ± {values[m]['std']:.2g}" for m in METRICS]
        paper = PAPER[domain].get(name.split(" (")[0])  # "ABC (64 px)" is the paper's ABC row
        lines.append(
            f"| {name} | {values[METRICS[0]]['seeds']} | "
            + " | ".join(cells)
            + f" | {f'{paper[0]} / {paper[1]}' if paper else '—'} |"
        )
    return "\n".join(lines)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--rows",
        required=True,
        help="NAME=DIR pairs, comma-separated: a row's name and its folder of seed_<k> runs (or one run).",
    )
    parser.add_argument(
        "--output_dir", default="docs/figures/table_s1", help="Where summary.json and table_s1.md go."
    )
    parser.add_argument("--repeats", type=int, default=50, help="Random lookup dictionaries (paper: 50).")
    parser.add_argument(
        "--dictionary_size", type=int, default=1800, help="Images per dictionary (paper: 1800)."
    )
    parser.add_argument("--queries", type=int, default=500, help="Test images per query domain.")
    parser.add_argument(
        "--pretrained_backbone",
        default="",
        help="ResNet50V2 notop weights file: adds the ImageNet-ResNet row (Table 1).",
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    from abc_tf.evaluation.tasks import pose_accuracy
    from abc_tf.runs.run_dir import seed_run_dirs

    args = parse_args(argv)
    rows = parse_rows(args.rows.split(","))
    settings = pose_accuracy.PoseEvalSettings(
        dictionary_size=args.dictionary_size,
        repeats=args.repeats,
        num_queries=args.queries,
        query_domains=DOMAINS,
        baselines=False,
    )
    summary: dict = {
        "settings": {
            "dictionary_size": args.dictionary_size,
            "repeats": args.repeats,
            "queries": args.queries,
        },
        "rows": {},
    }
    for index, (name, path) in enumerate(rows):
        runs = seed_run_dirs(path) or [path]
        # The pretrained row is measured once, with the first row's images.
        extra = (
            {"pretrained_backbone": args.pretrained_backbone}
            if args.pretrained_backbone and index == 0
            else {}
        )
        per_seed = {domain: [] for domain in DOMAINS}
        pretrained = {domain: [] for domain in DOMAINS}
        for run_dir in runs:
            print(f"{name}: {run_dir}", flush=True)
            result = pose_accuracy.evaluate_pose_run(
                run_dir, dataclasses.replace(settings, **extra), write=False
            )
            extra = {}
            for domain in DOMAINS:
                found = result["domains"][domain]["rows"]
                per_seed[domain].append({m: found[pose_accuracy.ROW_LOOKUP][m]["mean"] for m in METRICS})
                if pose_accuracy.ROW_PRETRAINED in found:
                    pretrained[domain].append(
                        {m: found[pose_accuracy.ROW_PRETRAINED][m]["mean"] for m in METRICS}
                    )
        summary["rows"][name] = {
            "runs": runs,
            "per_seed": per_seed,
            "domains": {domain: aggregate(per_seed[domain]) for domain in DOMAINS},
        }
        if pretrained["synthetic"]:
            summary["rows"]["ImageNet ResNet"] = {
                "runs": runs[:1],
                "per_seed": pretrained,
                "domains": {domain: aggregate(pretrained[domain]) for domain in DOMAINS},
            }
    os.makedirs(args.output_dir, exist_ok=True)
    with open(os.path.join(args.output_dir, "summary.json"), "w") as handle:
        json.dump(summary, handle, indent=1)
    text = (
        f"Synthetic queries (Table S1):\n\n{markdown(summary, 'synthetic')}\n\n"
        f'Procedural "real" queries (Table 1\'s transfer):\n\n{markdown(summary, "real")}\n'
    )
    with open(os.path.join(args.output_dir, "table_s1.md"), "w") as handle:
        handle.write(text)
    print(text)


if __name__ == "__main__":
    main()
