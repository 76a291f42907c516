"""Augmentations as the pipelines apply them (docs/PAPERS.md section 1; supplement S5, S8.4).

The random ops themselves are :mod:`abc_tf.data.augment_ops`. Here: ``--data.augmentations`` specs
(``"contrast:0.3,saturation:0.3,crop:0.2"``) parsed and checked before training,
:func:`augment_stack` applying a spec, :func:`double_augment` making the two views of double
augmentation, and :func:`pose_augment`, the S5 recipe for stacks that mix renders (RGBA) and
photos.
"""

from __future__ import annotations

from typing import Callable, Mapping, Sequence

import tensorflow as tf

from abc_tf.data.augment_ops import (
    AUGMENTATIONS,
    add_sobel,
    check_amplitude,
    flatten_stack,
    gaussian_noise,
    paint_background,
    random_brightness,
    random_hue,
    random_translate,
    salt_and_pepper,
    to_float,
)


# Amplitudes of the S5 colouring augmentations at ``augmentation_amplitude`` = 1. The paper
# gives no numbers; these keep a car recognisable (see tests/test_augment.py and the figure
# of RESULTS.md, Pose isolation).
POSE_COLOUR_AMPLITUDES = {
    "brightness": 0.2,
    "hue": 0.1,
    "gaussian_noise": 0.03,
    "salt_pepper": 0.01,
    "sobel": 0.3,
}


def _split_by_mask(
    mask: tf.Tensor,
    images: tf.Tensor,
    if_true: Callable[[tf.Tensor], tf.Tensor],
    if_false: Callable[[tf.Tensor], tf.Tensor],
) -> tf.Tensor:
    """``if_true`` on the images where ``mask`` (shape ``images.shape[:-3]``) holds, ``if_false``
    on the others, in their places: each image pays for one branch only (``tf.where`` would
    compute both for every image). Both functions keep the image shape."""
    flat, shape = flatten_stack(images)
    index = tf.range(tf.shape(flat)[0])
    parts = tf.dynamic_partition(index, tf.cast(tf.reshape(mask, [-1]), tf.int32), 2)
    outputs = [function(tf.gather(flat, part)) for function, part in zip((if_false, if_true), parts)]
    return tf.reshape(tf.dynamic_stitch(parts, outputs), shape)


def pose_augment(
    images: tf.Tensor,
    is_real: tf.Tensor,
    backgrounds: tf.Tensor | None,
    crop_amplitude: float,
    colour_amplitude: float,
    seed: tf.Tensor,
) -> tf.Tensor:
    """One S5 augmentation of a mixed stack of renders and photos.

    images: [..., H, W, 4] float in [0, 1]: RGB (premultiplied for renders) and alpha (1 for
    photos); is_real: bool [...] (True: a photo). In order: bounding-box translation by
    ``crop_amplitude`` (edge fill for photos, transparent for renders), background painting
    of renders with random crops of ``backgrounds`` (skipped when None), hue for photos, then
    brightness, an added Sobel copy, normal and salt-and-pepper noise for all, with the
    amplitudes of ``POSE_COLOUR_AMPLITUDES`` times ``colour_amplitude``.
    Returns RGB [..., H, W, 3] float32 in [0, 1]; the identity on RGB at both amplitudes 0
    without backgrounds.
    """
    images = tf.convert_to_tensor(images, tf.float32)
    is_real = tf.convert_to_tensor(is_real, tf.bool)
    seeds = tf.random.experimental.stateless_split(tf.cast(seed, tf.int64), num=8)
    if crop_amplitude > 0:
        # Photos are filled from their edges, renders with transparency.
        images = _split_by_mask(
            is_real,
            images,
            lambda photos: random_translate(photos, crop_amplitude, seeds[0], fill_mode="nearest"),
            lambda renders: random_translate(renders, crop_amplitude, seeds[7], fill_mode="constant"),
        )
    rgb, alpha = images[..., :3], images[..., 3:]
    if backgrounds is not None:
        # Photos have alpha 1 everywhere (edge fill keeps it), so painting leaves them alone.
        rgb = paint_background(rgb, alpha, backgrounds, 1.0, seeds[1])
    amp = {name: value * float(colour_amplitude) for name, value in POSE_COLOUR_AMPLITUDES.items()}
    if amp["hue"] > 0:
        rgb = _split_by_mask(
            is_real, rgb, lambda photos: random_hue(photos, min(amp["hue"], 0.5), seeds[2]), tf.identity
        )
    rgb = random_brightness(rgb, min(amp["brightness"], 1.0), seeds[3])
    rgb = add_sobel(rgb, amp["sobel"], seeds[4])
    rgb = gaussian_noise(rgb, amp["gaussian_noise"], seeds[5])
    rgb = salt_and_pepper(rgb, min(amp["salt_pepper"], 1.0), seeds[6])
    return rgb


def parse_augmentations(spec: str) -> tuple[tuple[str, float], ...]:
    """Parses ``"name:amplitude,name:amplitude"`` (flag ``--data.augmentations``) into pairs.

    An empty string means no augmentation. Raises ValueError naming the flag on unknown
    names, missing or negative amplitudes, or repeated names.
    """
    pairs: list[tuple[str, float]] = []
    for item in (part.strip() for part in spec.split(",")):
        if not item:
            continue
        name, sep, value = item.partition(":")
        name = name.strip()
        if name not in AUGMENTATIONS:
            raise ValueError(
                f"--data.augmentations: unknown augmentation {name!r}; known: "
                f"{', '.join(sorted(AUGMENTATIONS))}."
            )
        if not sep:
            raise ValueError(f"--data.augmentations: {name!r} needs an amplitude, e.g. '{name}:0.2'.")
        try:
            amplitude = float(value)
        except ValueError:
            raise ValueError(
                f"--data.augmentations: amplitude of {name!r} is not a number: {value!r}."
            ) from None
        if any(name == seen for seen, _ in pairs):
            raise ValueError(f"--data.augmentations names {name!r} twice.")
        pairs.append((name, amplitude))
    return tuple(pairs)


def validate_augmentations(pairs: Sequence[tuple[str, float]]) -> None:
    """Checks every amplitude's range before training starts (the bounds the ops check)."""
    for name, amplitude in pairs:
        try:
            check_amplitude(name, amplitude)
        except ValueError as error:
            raise ValueError(f"--data.augmentations: {error}") from None


def augment_stack(
    images: tf.Tensor, augmentations: Sequence[tuple[str, float]] | Mapping[str, float], seed: tf.Tensor
) -> tf.Tensor:
    """Applies the named augmentations in order, each with its own seed derived from ``seed``.

    images: [..., H, W, C] float32 in [0, 1]. Returns the same shape, float32 in [0, 1].
    """
    pairs = list(augmentations.items()) if isinstance(augmentations, Mapping) else list(augmentations)
    images = tf.convert_to_tensor(images, tf.float32)
    if not pairs:
        return images
    seeds = tf.random.experimental.stateless_split(tf.cast(seed, tf.int64), num=len(pairs))
    for index, (name, amplitude) in enumerate(pairs):
        images = AUGMENTATIONS[name](images, amplitude, seeds[index])
    return images


def double_augment(
    batch: Mapping[str, tf.Tensor],
    augmentations: Sequence[tuple[str, float]],
    seed: tf.Tensor,
    keys: Sequence[str] = ("set_a", "set_b"),
    double: bool = True,
) -> dict[str, tf.Tensor]:
    """Augments every image of the named sets twice (views ``key`` and ``key + '_view2'``).

    batch: {key: [P, S, H, W, C]} uint8 or float in [0, 1]. Returns a new dict with the views
    as float32 in [0, 1]; other entries pass through. With ``double=False`` each set gets one
    augmented view and no ``_view2`` key. The two views use independent seeds.
    """
    out = dict(batch)
    seeds = tf.random.experimental.stateless_split(tf.cast(seed, tf.int64), num=2 * len(keys))
    for index, key in enumerate(keys):
        if key not in batch:
            continue
        images = to_float(batch[key])
        out[key] = augment_stack(images, augmentations, seeds[2 * index])
        if double:
            out[key + "_view2"] = augment_stack(images, augmentations, seeds[2 * index + 1])
    return out
