"""Procedural handwritten-digit-like images: the built-in stand-in for MNIST.

Each digit class 0-9 has one or two stroke templates (polylines in a unit box, y pointing
down). Every image draws its template with its own style:

- ``slant``: horizontal shear, pixels of x per pixel of height (positive leans the top right);
- ``thickness``: stroke width in pixels (full width of the stroke's ink profile);
- ``scale``: digit height in pixels (MNIST digits fit a 20 x 20 box);
- ``aspect``: width / height multiplier;
- ``rotation``: small in-plane rotation in radians;
- ``shift_x``, ``shift_y``: offset of the digit centre from the image centre in pixels;
- a smooth random wobble of the template (so no two images of a class share a skeleton).

Strokes are rasterised without a drawing library: points are sampled densely along every
stroke (each carrying its own arc length in pixels) and splatted into the 28 x 28 grid with a
Gaussian kernel through ``np.bincount``, which approximates the stroke's line integral; a
saturating transfer ``1 - exp(-gain * profile)`` turns it into anti-aliased ink whose width
grows with the kernel width and the gain. Everything is vectorised over chunks of images.
"""

from __future__ import annotations

import dataclasses

import numpy as np

IMAGE_SIZE = 28
NUM_CLASSES = 10
# Points sampled along every template (all strokes together). At the largest scale the
# digits' skeletons are about 90 px long, so 192 points keep the spacing near 0.5 px.
POINTS_PER_DIGIT = 192
# The splat window is (2 * radius + 1)^2 pixels around each point; 3 px covers the widest
# kernel (sigma 1.05 px) to about 3 sigma.
SPLAT_RADIUS = 3
# Images rendered per vectorised chunk: bounds memory to about 100 MB.
CHUNK = 1024

STYLE_FACTORS = ("slant", "thickness", "scale", "aspect", "rotation", "shift_x", "shift_y")


def _arc(cx: float, cy: float, rx: float, ry: float, start_deg: float, end_deg: float, n: int = 40) -> np.ndarray:
    """Elliptic arc in the unit box; angles in degrees, 0 = right, 90 = down (y points down)."""
    angles = np.deg2rad(np.linspace(start_deg, end_deg, n))
    return np.stack([cx + rx * np.cos(angles), cy + ry * np.sin(angles)], axis=-1)


def _poly(*points: tuple[float, float]) -> np.ndarray:
    return np.asarray(points, dtype=np.float64)


def _chain(*pieces: np.ndarray) -> np.ndarray:
    """Joins pieces into one stroke (the pen does not lift between them)."""
    return np.concatenate(pieces, axis=0)


# Templates: class -> list of variants; a variant is a list of strokes; a stroke an [n, 2]
# polyline in the unit box (x right, y down; the box is later scaled to the digit height).
TEMPLATES: dict[int, list[list[np.ndarray]]] = {
    0: [
        [_arc(0.5, 0.5, 0.36, 0.5, -90, 270, 64)],
        [_arc(0.5, 0.5, 0.3, 0.5, -100, 275, 64)],
    ],
    1: [
        [_poly((0.52, 0.0), (0.48, 1.0))],
        [_chain(_poly((0.3, 0.2), (0.55, 0.0)), _poly((0.55, 0.0), (0.5, 1.0)))],
    ],
    2: [
        [_chain(_arc(0.5, 0.28, 0.34, 0.28, 200, 360, 24), _poly((0.84, 0.28), (0.12, 1.0), (0.92, 1.0)))],
        [_chain(_arc(0.5, 0.26, 0.32, 0.26, 190, 380, 26), _poly((0.78, 0.42), (0.1, 0.98)),
                _arc(0.25, 0.88, 0.12, 0.1, 90, -90, 10)[::-1][:1] * 0 + np.array([[0.1, 0.98]]),
                _poly((0.1, 0.98), (0.95, 0.95)))],
    ],
    3: [
        [_chain(_arc(0.48, 0.25, 0.32, 0.25, 200, 450, 30), _arc(0.48, 0.73, 0.36, 0.27, -90, 160, 30))],
    ],
    4: [
        [_poly((0.62, 0.0), (0.08, 0.68), (0.92, 0.68)), _poly((0.66, 0.3), (0.64, 1.0))],
        [_poly((0.2, 0.0), (0.14, 0.6), (0.86, 0.6)), _poly((0.72, 0.05), (0.7, 1.0))],
    ],
    5: [
        [_poly((0.85, 0.0), (0.25, 0.0), (0.2, 0.45)), _arc(0.45, 0.68, 0.38, 0.3, -150, 150, 36)],
    ],
    6: [
        [_chain(_poly((0.78, 0.0), (0.4, 0.3)), _arc(0.5, 0.72, 0.32, 0.28, 210, 570, 44))],
    ],
    7: [
        [_poly((0.08, 0.0), (0.92, 0.0), (0.4, 1.0))],
        [_poly((0.08, 0.05), (0.92, 0.0), (0.45, 1.0)), _poly((0.4, 0.5), (0.85, 0.5))],
    ],
    8: [
        [_chain(_arc(0.5, 0.25, 0.26, 0.25, 90, 450, 40), _arc(0.5, 0.74, 0.32, 0.26, -90, 270, 44))],
    ],
    9: [
        [_chain(_arc(0.45, 0.28, 0.3, 0.28, 0, 360, 40), _poly((0.75, 0.28), (0.68, 1.0)))],
        [_chain(_arc(0.45, 0.28, 0.3, 0.28, 0, 360, 40), _poly((0.75, 0.28), (0.72, 0.7)),
                _arc(0.5, 0.7, 0.22, 0.3, 0, 120, 12))],
    ],
}


def _resample(strokes: list[np.ndarray], count: int) -> tuple[np.ndarray, np.ndarray]:
    """Samples ``count`` points evenly by arc length over all strokes of one template.

    Returns points [count, 2] in the unit box and each point's arc length [count] (template
    units); points of different strokes are never joined, so the pen lifts between strokes.
    """
    lengths = [np.sum(np.linalg.norm(np.diff(stroke, axis=0), axis=1)) for stroke in strokes]
    total = float(sum(lengths))
    counts = [max(2, int(round(count * length / total))) for length in lengths]
    counts[-1] += count - sum(counts)  # exact total so all templates stack into one array
    points, weights = [], []
    for stroke, length, n in zip(strokes, lengths, counts):
        cumulative = np.concatenate([[0.0], np.cumsum(np.linalg.norm(np.diff(stroke, axis=0), axis=1))])
        # Midpoints of n equal pieces: each point stands for length / n of ink.
        targets = (np.arange(n) + 0.5) * length / n
        points.append(np.stack([np.interp(targets, cumulative, stroke[:, k]) for k in range(2)], axis=-1))
        weights.append(np.full(n, length / n))
    return np.concatenate(points), np.concatenate(weights)


def _template_bank() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """All variants as arrays: points [V, K, 2] (centred on 0), weights [V, K], class of each variant [V]."""
    points, weights, classes = [], [], []
    for digit in range(NUM_CLASSES):
        for strokes in TEMPLATES[digit]:
            p, w = _resample(strokes, POINTS_PER_DIGIT)
            points.append(p - np.array([0.5, 0.5]))
            weights.append(w)
            classes.append(digit)
    return np.stack(points), np.stack(weights), np.asarray(classes)


_BANK = _template_bank()


@dataclasses.dataclass(frozen=True)
class RenderedDigits:
    """images: [N, 28, 28] uint8 (ink 255 on black, like MNIST); labels: [N] uint8;
    style: factor name -> [N] float64 values (units in the module docstring)."""

    images: np.ndarray
    labels: np.ndarray
    style: dict[str, np.ndarray]


def sample_style(rng: np.random.Generator, count: int) -> dict[str, np.ndarray]:
    """Draws independent style factors for ``count`` images (ranges mimic MNIST's spread)."""
    return {
        "slant": rng.uniform(-0.45, 0.45, count),
        "thickness": rng.uniform(1.4, 4.2, count),
        "scale": rng.uniform(15.0, 21.0, count),
        "aspect": rng.uniform(0.7, 1.15, count),
        "rotation": rng.normal(0.0, 0.08, count),
        "shift_x": rng.uniform(-1.5, 1.5, count),
        "shift_y": rng.uniform(-1.5, 1.5, count),
    }


def _render_chunk(
    labels: np.ndarray, variants: np.ndarray, style: dict[str, np.ndarray], wobble: np.ndarray
) -> np.ndarray:
    """Renders one chunk: labels/variants [B], style values [B], wobble [B, 4, 2] -> float32 [B, 28, 28] in [0, 1]."""
    bank_points, bank_weights, _ = _BANK
    points = bank_points[variants]  # [B, K, 2], unit box centred on 0
    weights = bank_weights[variants]  # [B, K]
    # Smooth wobble: two low-frequency sinusoids per axis move the skeleton by up to ~0.05
    # of the height, so each image has its own handwriting-like distortions.
    phase = points[..., ::-1] * np.pi * 2.0  # use the other coordinate as the wave argument
    points = points + wobble[:, None, 0, :] * np.sin(phase + wobble[:, None, 1, :]) \
        + wobble[:, None, 2, :] * np.sin(2.0 * phase + wobble[:, None, 3, :])
    # Affine style: scale (height in px, aspect on x), slant (shear), rotation, shift.
    height = style["scale"][:, None]
    x = points[..., 0] * height * style["aspect"][:, None]
    y = points[..., 1] * height
    x = x - style["slant"][:, None] * y  # y points down: the top (y < 0) moves right for slant > 0
    cos, sin = np.cos(style["rotation"])[:, None], np.sin(style["rotation"])[:, None]
    x, y = cos * x - sin * y, sin * x + cos * y
    centre = (IMAGE_SIZE - 1) / 2.0
    x = x + centre + style["shift_x"][:, None]
    y = y + centre + style["shift_y"][:, None]
    # Arc length each point stands for, now in pixels (the affine map stretches strokes).
    length_px = weights * height * np.sqrt(style["aspect"][:, None] * (1.0 + style["slant"][:, None] ** 2) ** 0.5)

    # Thickness -> kernel width and gain of the saturating transfer. For a Gaussian profile
    # g * exp(-d^2 / 2 s^2) the ink (>= 1/2 after the transfer) is 2 s sqrt(2 ln(g / ln 2)) wide.
    thickness = style["thickness"]
    sigma = np.clip(thickness / 4.0, 0.45, 1.05)
    gain = np.log(2.0) * np.exp((thickness / (2.0 * sigma)) ** 2 / 2.0)

    batch, k = x.shape
    offsets = np.arange(-SPLAT_RADIUS, SPLAT_RADIUS + 1)
    ox, oy = np.meshgrid(offsets, offsets, indexing="xy")
    ox, oy = ox.ravel(), oy.ravel()  # [W]
    px = np.round(x)[..., None] + ox  # [B, K, W] pixel columns near each point
    py = np.round(y)[..., None] + oy
    d2 = (px - x[..., None]) ** 2 + (py - y[..., None]) ** 2
    s2 = (2.0 * sigma**2)[:, None, None]
    # Normalised so that a straight stroke's profile peaks at 1: line integral of the
    # 2-D Gaussian is sqrt(2 pi) s times the 1-D profile.
    value = np.exp(-d2 / s2) * (length_px / (np.sqrt(2.0 * np.pi) * sigma[:, None]))[..., None]
    inside = (px >= 0) & (px < IMAGE_SIZE) & (py >= 0) & (py < IMAGE_SIZE)
    flat = (np.arange(batch)[:, None, None] * IMAGE_SIZE + py) * IMAGE_SIZE + px
    profile = np.bincount(
        flat[inside].astype(np.int64), weights=value[inside], minlength=batch * IMAGE_SIZE * IMAGE_SIZE
    ).reshape(batch, IMAGE_SIZE, IMAGE_SIZE)
    return (1.0 - np.exp(-gain[:, None, None] * profile)).astype(np.float32)


def render_digits(count: int, seed: int, labels: np.ndarray | None = None) -> RenderedDigits:
    """Renders ``count`` digit images, deterministic in ``seed``.

    Args:
      count: number of images.
      seed: seed of the numpy Generator that draws labels (if not given), variants and styles.
      labels: optional [count] digit classes 0-9; default: balanced classes in random order.
    Returns:
      RenderedDigits with images [count, 28, 28] uint8, labels [count] uint8 and the style
      factors [count] that drew each image.
    """
    if count < 0:
        raise ValueError(f"count must be >= 0, got {count}.")
    rng = np.random.default_rng(seed)
    if labels is None:
        labels = rng.permutation(np.arange(count) % NUM_CLASSES)
    labels = np.asarray(labels)
    if labels.shape != (count,) or (count and (labels.min() < 0 or labels.max() >= NUM_CLASSES)):
        raise ValueError(f"labels must be [count] digits in 0..9, got shape {labels.shape}.")
    _, _, bank_classes = _BANK
    # Variant index: a random one among the variants of each image's class.
    first = np.searchsorted(bank_classes, np.arange(NUM_CLASSES))
    per_class = np.bincount(bank_classes, minlength=NUM_CLASSES)
    variants = first[labels] + (rng.random(count) * per_class[labels]).astype(np.int64)
    style = sample_style(rng, count)
    wobble = np.concatenate(
        [rng.normal(0.0, 0.025, (count, 1, 2)), rng.uniform(0, 2 * np.pi, (count, 1, 2)),
         rng.normal(0.0, 0.015, (count, 1, 2)), rng.uniform(0, 2 * np.pi, (count, 1, 2))], axis=1
    )
    images = np.empty((count, IMAGE_SIZE, IMAGE_SIZE), np.uint8)
    for start in range(0, count, CHUNK):
        stop = min(start + CHUNK, count)
        chunk_style = {name: values[start:stop] for name, values in style.items()}
        ink = _render_chunk(labels[start:stop], variants[start:stop], chunk_style, wobble[start:stop])
        images[start:stop] = np.round(ink * 255.0).astype(np.uint8)
    return RenderedDigits(images=images, labels=labels.astype(np.uint8), style=style)


def procedural_mnist(seed: int = 0, train_size: int = 60_000, test_size: int = 10_000) -> tuple[RenderedDigits, RenderedDigits]:
    """A train/test split shaped like MNIST's (60k/10k by default); the splits use
    independent seeds derived from ``seed``, so they share no images."""
    train_seed, test_seed = np.random.SeedSequence(seed).spawn(2)
    return (
        render_digits(train_size, int(train_seed.generate_state(1)[0])),
        render_digits(test_size, int(test_seed.generate_state(1)[0])),
    )
