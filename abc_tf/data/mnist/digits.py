"""Procedural handwritten-digit-like images: the built-in stand-in for MNIST.

Each digit class 0-9 has one or two stroke templates: polylines in a unit box, y pointing down.
Every image draws its template with its own style:

- ``slant``: horizontal shear in pixels of x per pixel of height; positive leans the top right;
- ``thickness``: stroke width in pixels, the full width of the ink profile;
- ``scale``: digit height in pixels. MNIST digits fit a 20 x 20 box;
- ``aspect``: width / height multiplier; ``rotation``: small in-plane rotation in radians;
- ``shift_x``, ``shift_y``: offset of the digit centre from the image centre in pixels;
- a smooth random wobble of the template, so no two images of a class share a skeleton.

Points sampled densely along the strokes are splatted into the 28 x 28 grid with a separable Gaussian
kernel, approximating the line integral. ``1 - exp(-gain * profile)`` turns it into anti-aliased ink.
"""

from __future__ import annotations

import dataclasses

import numpy as np

IMAGE_SIZE = 28
NUM_CLASSES = 10
# Points sampled along every template (all strokes together). At the largest scale the
# longest skeleton (an 8) is about 70 px, so 128 points lie <= 0.55 px apart, close enough
# for the narrowest kernel (sigma 0.45 px) to leave no visible beading.
POINTS_PER_DIGIT = 128
# Images rendered per vectorised chunk: bounds memory to about 50 MB.
CHUNK = 1024

STYLE_FACTORS = ("slant", "thickness", "scale", "aspect", "rotation", "shift_x", "shift_y")


def _arc(
    cx: float, cy: float, rx: float, ry: float, start_deg: float, end_deg: float, n: int = 40
) -> np.ndarray:
    """Elliptic arc in the unit box. Angles in degrees: 0 is right, 90 is down."""
    angles = np.deg2rad(np.linspace(start_deg, end_deg, n))
    return np.stack([cx + rx * np.cos(angles), cy + ry * np.sin(angles)], axis=-1)


def _poly(*points: tuple[float, float]) -> np.ndarray:
    return np.asarray(points, dtype=np.float64)


def _chain(*pieces: np.ndarray) -> np.ndarray:
    """Joins pieces into one stroke; the pen does not lift between them."""
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
        [
            _chain(
                _arc(0.5, 0.26, 0.32, 0.26, 190, 380, 26),
                _poly((0.78, 0.42), (0.1, 0.98)),
                _arc(0.3, 0.86, 0.16, 0.12, 180, 330, 10),
                _poly((0.44, 0.8), (0.95, 0.97)),
            )
        ],
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
        [
            _chain(
                _arc(0.45, 0.28, 0.3, 0.28, 0, 360, 40),
                _poly((0.75, 0.28), (0.72, 0.7)),
                _arc(0.5, 0.7, 0.22, 0.3, 0, 120, 12),
            )
        ],
    ],
}


def _resample(strokes: list[np.ndarray], count: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Samples ``count`` points evenly by arc length over all strokes of one template.

    Returns points [count, 2] in the unit box, each point's arc length [count] in template units,
    and its unit tangent [count, 2]. Points of different strokes are never joined: the pen lifts
    between strokes.
    """
    lengths = [np.sum(np.linalg.norm(np.diff(stroke, axis=0), axis=1)) for stroke in strokes]
    total = float(sum(lengths))
    counts = [max(2, int(round(count * length / total))) for length in lengths]
    counts[-1] += count - sum(counts)  # exact total so all templates stack into one array
    points, weights, tangents = [], [], []
    for stroke, length, n in zip(strokes, lengths, counts):
        pieces = np.diff(stroke, axis=0)
        piece_lengths = np.linalg.norm(pieces, axis=1)
        cumulative = np.concatenate([[0.0], np.cumsum(piece_lengths)])
        # Midpoints of n equal pieces: each point stands for length / n of ink.
        targets = (np.arange(n) + 0.5) * length / n
        points.append(np.stack([np.interp(targets, cumulative, stroke[:, k]) for k in range(2)], axis=-1))
        weights.append(np.full(n, length / n))
        piece = np.clip(np.searchsorted(cumulative, targets, side="right") - 1, 0, len(pieces) - 1)
        tangents.append(pieces[piece] / np.maximum(piece_lengths[piece], 1e-12)[:, None])
    return np.concatenate(points), np.concatenate(weights), np.concatenate(tangents)


def _template_bank() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """All variants: points [V, K, 2] centred on 0, arc lengths [V, K], tangents [V, K, 2], classes [V]."""
    points, weights, tangents, classes = [], [], [], []
    for digit in range(NUM_CLASSES):
        for strokes in TEMPLATES[digit]:
            p, w, t = _resample(strokes, POINTS_PER_DIGIT)
            points.append(p - np.array([0.5, 0.5]))
            weights.append(w)
            tangents.append(t)
            classes.append(digit)
    return np.stack(points), np.stack(weights), np.stack(tangents), np.asarray(classes)


_BANK = _template_bank()


@dataclasses.dataclass(frozen=True)
class RenderedDigits:
    """images: [N, 28, 28] uint8, ink 255 on black like MNIST. labels: [N] uint8.

    style: factor name -> [N] float64 values, in the module docstring's units.
    """

    images: np.ndarray
    labels: np.ndarray
    style: dict[str, np.ndarray]


def sample_style(rng: np.random.Generator, count: int) -> dict[str, np.ndarray]:
    """Draws independent style factors for ``count`` images, in ranges that mimic MNIST's spread of slant
    and thickness as ``abc_tf.evaluation.tasks.mnist_style`` measures them."""
    return {
        "slant": rng.uniform(-0.35, 0.5, count),
        "thickness": np.exp(rng.uniform(np.log(1.5), np.log(4.2), count)),
        "scale": rng.uniform(13.5, 19.5, count),
        "aspect": rng.uniform(0.7, 1.15, count),
        "rotation": rng.normal(0.0, 0.08, count),
        "shift_x": rng.uniform(-1.0, 1.0, count),
        "shift_y": rng.uniform(-1.0, 1.0, count),
    }


def _render_chunk(
    labels: np.ndarray, variants: np.ndarray, style: dict[str, np.ndarray], wobble: np.ndarray
) -> np.ndarray:
    """Renders one chunk of labels, variants and styles [B] and wobble [B, 4, 2] to float32 [B, 28, 28]."""
    bank_points, bank_weights, bank_tangents, _ = _BANK
    points = bank_points[variants]  # [B, K, 2], unit box centred on 0
    weights = bank_weights[variants]  # [B, K]
    tangents = bank_tangents[variants]  # [B, K, 2]
    # Smooth wobble: two low-frequency sinusoids per axis move the skeleton by up to ~0.05
    # of the height, so each image has its own handwriting-like distortions.
    phase = points[..., ::-1] * np.pi * 2.0  # use the other coordinate as the wave argument
    points = (
        points
        + wobble[:, None, 0, :] * np.sin(phase + wobble[:, None, 1, :])
        + wobble[:, None, 2, :] * np.sin(2.0 * phase + wobble[:, None, 3, :])
    )
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
    # Arc length each point stands for, now in pixels: the linear part of the affine map
    # (rotation keeps lengths) stretches the tangent; the small wobble is neglected.
    tx = tangents[..., 0] * style["aspect"][:, None] - style["slant"][:, None] * tangents[..., 1]
    length_px = weights * height * np.hypot(tx, tangents[..., 1])

    # Thickness -> kernel width and gain of the saturating transfer. For a Gaussian profile
    # g * exp(-d^2 / 2 s^2) the ink (>= 1/2 after the transfer) is 2 s sqrt(2 ln(g / ln 2)) wide.
    thickness = style["thickness"]
    sigma = np.clip(thickness / 4.0, 0.45, 1.05)
    gain = np.log(2.0) * np.exp((thickness / (2.0 * sigma)) ** 2 / 2.0)

    # The 2-D Gaussian kernel is separable, so splatting every point is one batched matmul:
    # profile[r, c] = sum_k wy[k, r] * wx[k, c], with wy/wx the kernel's weights of point k
    # over all 28 rows/columns. Ink falling outside the image is simply not counted.
    grid = np.arange(IMAGE_SIZE, dtype=np.float32)
    inv_s2 = (1.0 / (2.0 * sigma**2)).astype(np.float32)[:, None, None]
    # The exponent is capped at 20 (weights >= 2e-9) because float32 subnormals from the far
    # tails would make the matmul about 50 times slower; the cap changes no pixel value.
    weight_x = np.exp(
        -np.minimum(((grid - x[..., None].astype(np.float32)) ** 2) * inv_s2, 20.0)
    )  # [B, K, 28]
    weight_y = np.exp(-np.minimum(((grid - y[..., None].astype(np.float32)) ** 2) * inv_s2, 20.0))
    # Normalised so that a straight stroke's profile peaks at 1: the line integral of the
    # 2-D Gaussian is sqrt(2 pi) sigma times the 1-D profile.
    weight_y *= (length_px / (np.sqrt(2.0 * np.pi) * sigma[:, None])).astype(np.float32)[..., None]
    profile = np.matmul(weight_y.transpose(0, 2, 1), weight_x)  # [B, 28, 28]
    return (1.0 - np.exp(-gain[:, None, None] * profile)).astype(np.float32)


def render_digits(
    count: int,
    seed: int,
    labels: np.ndarray | None = None,
    style_overrides: dict[str, float | np.ndarray] | None = None,
) -> RenderedDigits:
    """Renders ``count`` digit images, deterministic in ``seed``. 70,000 take a few seconds on one CPU core.

    ``labels`` default to balanced classes in random order; ``style_overrides`` (factor name -> scalar or
    [count]) replace the drawn values, e.g. one digit at several slants.
    """
    if count < 0:
        raise ValueError(f"count must be >= 0, got {count}.")
    rng = np.random.default_rng(seed)
    if labels is None:
        labels = rng.permutation(np.arange(count) % NUM_CLASSES)
    labels = np.asarray(labels)
    if labels.shape != (count,) or (count and (labels.min() < 0 or labels.max() >= NUM_CLASSES)):
        raise ValueError(f"labels must be [count] digits in 0..9, got shape {labels.shape}.")
    bank_classes = _BANK[3]
    # Variant index: a random one among the variants of each image's class.
    first = np.searchsorted(bank_classes, np.arange(NUM_CLASSES))
    per_class = np.bincount(bank_classes, minlength=NUM_CLASSES)
    variants = first[labels] + (rng.random(count) * per_class[labels]).astype(np.int64)
    style = sample_style(rng, count)
    for name, value in (style_overrides or {}).items():
        if name not in style:
            raise ValueError(f"Unknown style factor {name!r}; factors: {', '.join(STYLE_FACTORS)}.")
        style[name] = np.broadcast_to(np.asarray(value, np.float64), (count,)).copy()
    wobble = np.concatenate(
        [
            rng.normal(0.0, 0.025, (count, 1, 2)),
            rng.uniform(0, 2 * np.pi, (count, 1, 2)),
            rng.normal(0.0, 0.015, (count, 1, 2)),
            rng.uniform(0, 2 * np.pi, (count, 1, 2)),
        ],
        axis=1,
    )
    images = np.empty((count, IMAGE_SIZE, IMAGE_SIZE), np.uint8)
    for start in range(0, count, CHUNK):
        stop = min(start + CHUNK, count)
        chunk_style = {name: values[start:stop] for name, values in style.items()}
        ink = _render_chunk(labels[start:stop], variants[start:stop], chunk_style, wobble[start:stop])
        images[start:stop] = np.round(ink * 255.0).astype(np.uint8)
    return RenderedDigits(images=images, labels=labels.astype(np.uint8), style=style)


def procedural_mnist(
    seed: int = 0, train_size: int = 60_000, test_size: int = 10_000
) -> tuple[RenderedDigits, RenderedDigits]:
    """A train/test split shaped like MNIST's, 60k/10k by default, of independent seeds."""
    train_seed, test_seed = np.random.SeedSequence(seed).spawn(2)
    return (
        render_digits(train_size, int(train_seed.generate_state(1)[0])),
        render_digits(test_size, int(test_seed.generate_state(1)[0])),
    )
