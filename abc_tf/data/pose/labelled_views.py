"""Images of known pose for evaluation, never for training: the family's ``pose_views``.

A split ("train", "test", "validation") and a domain ("synthetic", "real") choose them.
Procedural views are rendered deterministically from a seed and kept for the next call;
KeypointNet views are read from the files and Pascal3D+-style lists.
"""

from __future__ import annotations

import functools

import numpy as np

from abc_tf.config import ExperimentConfig
from abc_tf.data.groups import GroupIndex
from abc_tf.data.pose import procedural as pose_procedural
from abc_tf.data.pose import render_cache
from abc_tf.data.pose.config_checks import check_config, held_out_instances, max_elevation, source
from abc_tf.data.pose.keypointnet import keypointnet_files, read_keypointnet
from abc_tf.data.pose.pascal3d import read_pose_list
from abc_tf.geometry import euler_to_matrix

DOMAINS = ("synthetic", "real")

# "validation": the last --data.validation_instances training instances, held out of training
# and of the "train" split's dictionaries (appended: the views' random streams of "train" and
# "test" keep their index).
SPLITS = ("train", "test", "validation")


def kept_training_rows(instances: np.ndarray, num_instances: int, held_out: int) -> np.ndarray:
    """Bool [N]: the rows of ``instances`` (indices 0..num_instances-1) not held out (the last
    ``held_out`` instances are). ValueError when nothing would be left to train on."""
    if held_out >= num_instances:
        raise ValueError(
            f"--data.validation_instances={held_out} leaves no training instance (the data has "
            f"{num_instances})."
        )
    return np.asarray(instances) < num_instances - held_out


def labelled_images(
    config: ExperimentConfig, split: str, domain: str, num_images: int | None = None, seed: int = 0
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Images with known pose, for evaluation (never for ABC training).

    split: "train" = instances used in training (the lookup dictionary: their poses never enter
      ABC training), "test" = held-out instances, or "validation" = the training instances
      ``--data.validation_instances`` holds out of training and of "train" (synthetic only). domain:
      "synthetic" = clean renders on black, or "real" = the real domain (procedural: other materials,
      lighting, clutter, noise, blur; files: the Pascal3D+-style ``--data.pose_test_list``, split "test"
      only).
    num_images: how many (None: all the files hold, or 1800 train / 500 test procedural);
      fewer files than asked gives all of them; a random subset (``seed``) otherwise.
    Returns (uint8 [n, S, S, 3], rotations float64 [n, 3, 3], Euler angles float64 [n, 3] in
    radians). Procedural images are rendered deterministically from ``seed``.
    """
    check_config(config)
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}.")
    if domain not in DOMAINS:
        raise ValueError(f"domain must be one of {DOMAINS}, got {domain!r}.")
    if num_images is not None and num_images <= 0:
        raise ValueError(f"num_images must be positive, got {num_images}.")
    held_out = held_out_instances(config)
    if split == "validation" and not held_out:
        raise ValueError(
            "The validation split needs training instances held out: set --data.validation_instances "
            "(for training and evaluation alike)."
        )
    if split == "validation" and domain != "synthetic":
        raise ValueError(
            f"The validation split has synthetic renders only (the training instances'), not {domain!r}."
        )
    size, elev = config.data.image_size, max_elevation(config)
    if source(config) == "procedural":
        return _procedural_views(
            config.data.pose_category,
            split,
            domain,
            num_images,
            size,
            elev,
            int(seed),
            held_out,
            pose_procedural.PROCEDURAL,
        )
    rng = _views_rng(seed, split, domain)
    if domain == "real":
        if split != "test":
            raise ValueError(
                "The real images of --data.real_data_path carry no pose; labelled real images come from "
                "--data.pose_test_list (split 'test')."
            )
        if not config.data.pose_test_list:
            raise ValueError("Labelled real images need --data.pose_test_list (a Pascal3D+-style list).")
        images, rotations, euler = read_pose_list(
            config.data.pose_test_list, config.data.pose_test_images or None, size
        )
    else:
        rgba, euler, instances, names = read_keypointnet(
            keypointnet_files(config.data.path, "test" if split == "test" else "train"), size, elev
        )
        if split != "test" and held_out:
            kept = kept_training_rows(instances, len(names), held_out)
            rgba, euler = (rgba[kept], euler[kept]) if split == "train" else (rgba[~kept], euler[~kept])
        images = rgba[..., :3]
        euler = euler.astype(np.float64)
        rotations = euler_to_matrix(euler)
    if num_images is not None and num_images < len(images):
        chosen = np.sort(GroupIndex.whole(len(images)).draw_from_all(rng, 1, num_images)[0])
        images, rotations, euler = images[chosen], rotations[chosen], euler[chosen]
    return images, rotations, euler


def _views_rng(seed: int, split: str, domain: str) -> np.random.Generator:
    return np.random.default_rng([int(seed), SPLITS.index(split), DOMAINS.index(domain), 0x1AB])


@functools.lru_cache(maxsize=4)
def _procedural_views(
    category: str,
    split: str,
    domain: str,
    num_images: int | None,
    size: int,
    elev: float,
    seed: int,
    held_out: int,
    sizes: pose_procedural.ProceduralSizes,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The procedural views of :func:`labelled_images`, kept for the next call with the same
    arguments (evaluating several runs or checkpoints renders a dictionary pool once; 7200
    renders at 64 px take about a minute here), and on disk for the next process
    (:mod:`abc_tf.data.pose.render_cache`). Read-only: callers share the arrays."""
    # sizes: a key only (tests shrink pose_procedural.PROCEDURAL).
    views = render_cache.cached(
        "pose_views",
        (category, split, domain, num_images, size, elev, seed, held_out, sizes),
        lambda: pose_procedural.labelled_images(
            category, split, domain, num_images, size, elev, _views_rng(seed, split, domain), held_out
        ),
    )
    for array in views:
        array.setflags(write=False)
    return views
