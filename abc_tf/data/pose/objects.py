"""Procedural pose objects: car-like and chair-like instances and the viewpoints to see them from.

The build machines cannot download the real pose data, KeypointNet renders of ShapeNet, CompCars and
Pascal3D+. So a stand-in with the same structure is drawn (docs/PAPERS.md sections 3, 5; supplement S8.3).
The ray caster is :mod:`abc_tf.data.pose.ray_cast`; the two image domains are :mod:`abc_tf.data.pose.domains`.

- **instances**: a handful of primitives, axis-aligned boxes and cylinders in the object frame, in random
  proportions and colours, from a numpy Generator seeded by ``(category, pool, index)``. Disjoint pools:
  0 trains (synthetic renders, the lookup dictionary), 1 gives training's unlabelled "real" images, 2 tests.
- **cars**, length along x, front at +x, z up: a body with a lower hood in front, a cabin set toward the back,
  four wheels (cylinders along y), head- and tail-lights that differ as in real cars, sometimes a spoiler.
- **chairs**, front at +x: seat, four legs (boxes or cylinders), a back (a panel or two posts and a rail),
  sometimes armrests.
- **"real" paint**: another palette, mostly greys inside the synthetic range, and glossy materials.
"""

from __future__ import annotations

import dataclasses
from typing import Sequence

import numpy as np

CATEGORIES = ("car", "chair")
# Supplement S8.3: renders are filtered to these maximum elevations (radians).
DEFAULT_MAX_ELEVATION = {"car": 0.5, "chair": 1.3}
POOLS = {"train": 0, "real_train": 1, "test": 2}

BOX, CYLINDER = 0, 1
MAX_BOXES, MAX_CYLINDERS = 12, 4  # primitive slots per instance


@dataclasses.dataclass(frozen=True)
class Instance:
    """One object: K primitives in the object frame (z up).

    kind: int [K] (BOX or CYLINDER); center: [K, 3]; size: [K, 3] box half extents, or for
    cylinders (half length, radius, 0); axis: int [K] cylinder axis (0, 1, 2); colour: [K, 3]
    albedo in [0, 1]; gloss: [K] specular weight used by the "real" domain.
    """

    kind: np.ndarray
    center: np.ndarray
    size: np.ndarray
    axis: np.ndarray
    colour: np.ndarray
    gloss: np.ndarray


class _Parts:
    """Collects primitives while an instance is built."""

    def __init__(self) -> None:
        self.rows: list[tuple[int, Sequence[float], Sequence[float], int, Sequence[float], float]] = []

    def box(self, center, half, colour, gloss=0.0) -> None:
        self.rows.append((BOX, center, half, 0, colour, gloss))

    def cylinder(self, center, axis: int, half_length: float, radius: float, colour, gloss=0.0) -> None:
        self.rows.append((CYLINDER, center, (half_length, radius, 0.0), axis, colour, gloss))

    def build(self) -> Instance:
        kind, center, size, axis, colour, gloss = zip(*self.rows)
        return Instance(
            np.array(kind, np.int64),
            np.array(center, np.float64),
            np.array(size, np.float64),
            np.array(axis, np.int64),
            np.clip(np.array(colour, np.float64), 0.0, 1.0),
            np.array(gloss, np.float64),
        )


def _hsv(h: float, s: float, v: float) -> np.ndarray:
    h6 = (h % 1.0) * 6.0
    rgb = np.clip(np.array([abs(h6 - 3.0) - 1.0, 2.0 - abs(h6 - 2.0), 2.0 - abs(h6 - 4.0)]), 0.0, 1.0)
    return v * (1.0 - s + s * rgb)


def _paint_colour(rng: np.random.Generator, real: bool) -> np.ndarray:
    """Body colour. Synthetic: any hue, saturation and (not too dark) value, greys included, like
    the textures of a large model collection; "real": mostly white/grey/silver/dark paints, some
    reds and blues (a different distribution inside the synthetic one's support)."""
    if not real:
        return _hsv(rng.uniform(), rng.uniform(0.0, 1.0), rng.uniform(0.3, 1.0))
    choice = rng.uniform()
    if choice < 0.6:  # achromatic paints
        return np.full(3, rng.choice([0.2, 0.4, 0.6, 0.8, 0.92]) + rng.normal(0, 0.03))
    return _hsv(
        rng.choice([0.0, 0.02, 0.6, 0.62, 0.1, 0.35]) + rng.normal(0, 0.02),
        rng.uniform(0.5, 0.9),
        rng.uniform(0.3, 0.8),
    )


def make_car(rng: np.random.Generator, real: bool = False) -> Instance:
    """A car, length along x, front at +x: a body with a lower hood in front, a cabin set toward
    the back, 4 wheels, head- and tail-lights, sometimes a spoiler. Hood, cabin and lights make
    front and back differ, as in real cars (the symmetric rest causes the usual flip errors)."""
    parts = _Parts()
    length, width = rng.uniform(3.6, 4.9), rng.uniform(1.55, 2.0)
    radius, clearance = rng.uniform(0.28, 0.40), rng.uniform(0.10, 0.22)
    body_h = rng.uniform(0.42, 0.78)
    paint = _paint_colour(rng, real)
    gloss = rng.uniform(0.3, 0.8) if real else 0.0
    body_bottom = clearance + 0.1
    body_top = body_bottom + body_h
    hood_l, hood_h = length * rng.uniform(0.18, 0.3), body_h * rng.uniform(0.55, 0.75)
    rear_l = length - hood_l
    parts.box(
        (-length / 2 + rear_l / 2, 0.0, (body_bottom + body_top) / 2),
        (rear_l / 2, width / 2, body_h / 2),
        paint,
        gloss,
    )
    parts.box(
        (length / 2 - hood_l / 2, 0.0, body_bottom + hood_h / 2),
        (hood_l / 2, width / 2, hood_h / 2),
        paint,
        gloss,
    )
    cabin_l = length * rng.uniform(0.32, 0.5)
    cabin_x = length * rng.uniform(-0.2, -0.06)  # toward the back
    cabin_h = rng.uniform(0.32, 0.62)
    glass = (
        0.55 * paint + 0.45 * np.array([0.08, 0.1, 0.14])
        if not real
        else np.array([0.05, 0.07, 0.1]) + rng.uniform(0, 0.1)
    )
    parts.box(
        (cabin_x, 0.0, body_top + cabin_h / 2),
        (cabin_l / 2, width * rng.uniform(0.38, 0.47), cabin_h / 2),
        glass,
        0.9 if real else 0.0,
    )
    wheel_x = length / 2 - radius - rng.uniform(0.25, 0.55)
    tyre = np.full(3, rng.uniform(0.05, 0.15))
    for sx in (-1.0, 1.0):
        for sy in (-1.0, 1.0):
            parts.cylinder((sx * wheel_x, sy * (width / 2 - 0.1), radius), 1, 0.13, radius, tyre)
    head_z = body_bottom + hood_h * rng.uniform(0.5, 0.75)
    tail_z = body_bottom + body_h * rng.uniform(0.55, 0.8)
    for sy in (-1.0, 1.0):
        parts.box((length / 2, sy * width * 0.32, head_z), (0.03, width * 0.13, 0.07), (1.0, 0.95, 0.7))
        parts.box((-length / 2, sy * width * 0.35, tail_z), (0.03, width * 0.1, 0.06), (0.85, 0.08, 0.05))
    if rng.uniform() < 0.3:
        parts.box((-length / 2 + 0.15, 0.0, body_top + 0.12), (0.12, width * 0.45, 0.03), paint * 0.7, gloss)
    return parts.build()


def make_chair(rng: np.random.Generator, real: bool = False) -> Instance:
    """A chair: seat, 4 legs, a back (panel or posts + rail), optional armrests. Front +x."""
    parts = _Parts()
    width, depth = rng.uniform(0.40, 0.62), rng.uniform(0.38, 0.60)
    seat_t, seat_z = rng.uniform(0.04, 0.10), rng.uniform(0.38, 0.50)
    frame = (
        _hsv(rng.uniform(), rng.uniform(0.0, 0.8), rng.uniform(0.15, 0.9))
        if not real
        else (
            np.array([0.45, 0.3, 0.15]) * rng.uniform(0.5, 1.3)
            if rng.uniform() < 0.5
            else np.full(3, rng.uniform(0.1, 0.7))
        )
    )
    cushion = (
        _hsv(rng.uniform(), rng.uniform(0.3, 1.0), rng.uniform(0.35, 1.0)) if rng.uniform() < 0.6 else frame
    )
    gloss = rng.uniform(0.1, 0.5) if real else 0.0
    parts.box((0.0, 0.0, seat_z), (depth / 2, width / 2, seat_t / 2), cushion, gloss)
    leg = rng.uniform(0.018, 0.04)
    leg_h = seat_z - seat_t / 2
    round_legs = rng.uniform() < 0.5
    for sx in (-1.0, 1.0):
        for sy in (-1.0, 1.0):
            center = (sx * (depth / 2 - leg), sy * (width / 2 - leg), leg_h / 2)
            if round_legs:
                parts.cylinder(center, 2, leg_h / 2, leg, frame, gloss)
            else:
                parts.box(center, (leg, leg, leg_h / 2), frame, gloss)
    back_h, back_t = rng.uniform(0.35, 0.70), rng.uniform(0.025, 0.07)
    back_x = -depth / 2 + back_t / 2
    back_bottom = seat_z + seat_t / 2
    if rng.uniform() < 0.5:  # solid panel
        parts.box(
            (back_x, 0.0, back_bottom + back_h / 2),
            (back_t / 2, width * rng.uniform(0.4, 0.5), back_h / 2),
            cushion,
            gloss,
        )
    else:  # two posts and a top rail
        for sy in (-1.0, 1.0):
            parts.box(
                (back_x, sy * (width / 2 - leg), back_bottom + back_h / 2),
                (back_t / 2, leg, back_h / 2),
                frame,
                gloss,
            )
        rail_h = back_h * rng.uniform(0.2, 0.45)
        parts.box(
            (back_x, 0.0, back_bottom + back_h - rail_h / 2),
            (back_t / 2, width / 2, rail_h / 2),
            cushion,
            gloss,
        )
    if rng.uniform() < 0.3:  # armrests on two supports
        arm_z = back_bottom + rng.uniform(0.15, 0.25)
        for sy in (-1.0, 1.0):
            parts.box((0.0, sy * width / 2, arm_z), (depth / 2, 0.025, 0.02), frame, gloss)
            parts.box(
                (depth / 2 - 0.03, sy * width / 2, (back_bottom + arm_z) / 2),
                (0.02, 0.02, (arm_z - back_bottom) / 2),
                frame,
                gloss,
            )
    return parts.build()


def make_instance(category: str, pool: str, index: int, real: bool = False) -> Instance:
    """Instance ``index`` of ``pool`` (train, real_train, test): the same arguments give the same object."""
    if category not in CATEGORIES:
        raise ValueError(f"Unknown pose category {category!r}; choose one of {', '.join(CATEGORIES)}.")
    if pool not in POOLS:
        raise ValueError(f"Unknown instance pool {pool!r}; choose one of {', '.join(POOLS)}.")
    rng = np.random.default_rng([CATEGORIES.index(category), POOLS[pool], int(index), 0x90E])
    return make_car(rng, real) if category == "car" else make_chair(rng, real)


def stack_instances(instances: Sequence[Instance]) -> Instance:
    """Stacks instances into fields [B, K, ...]: ``MAX_BOXES`` box slots, then ``MAX_CYLINDERS``
    cylinder slots (so the ray caster computes each formula only where it applies).

    Unused slots are zero-size primitives far away, which no ray hits.
    """
    fields: dict[str, list[np.ndarray]] = {field.name: [] for field in dataclasses.fields(Instance)}
    for instance in instances:
        order = []
        for kind, slots in ((BOX, MAX_BOXES), (CYLINDER, MAX_CYLINDERS)):
            chosen = np.flatnonzero(instance.kind == kind)
            if len(chosen) > slots:
                raise ValueError(
                    f"An instance has {len(chosen)} primitives of kind {kind}, more than {slots}."
                )
            order.append(np.concatenate([chosen, np.full(slots - len(chosen), -1)]))
        order = np.concatenate(order)
        pad = order < 0
        for name in fields:
            values = getattr(instance, name)[np.maximum(order, 0)].copy()
            values[pad] = 1e6 if name == "center" else 0
            fields[name].append(values)
    stacked = {name: np.stack(values) for name, values in fields.items()}
    stacked["kind"] = np.broadcast_to(
        np.repeat([BOX, CYLINDER], [MAX_BOXES, MAX_CYLINDERS]), stacked["kind"].shape
    ).copy()
    return Instance(**stacked)


def sample_viewpoints(
    rng: np.random.Generator, count: int, max_elevation: float, tilt_std: float = 0.0
) -> np.ndarray:
    """Euler angles [count, 3] (radians): azimuth uniform, elevation uniform over the area of the
    upper hemisphere up to ``max_elevation`` (sin e uniform, the filter of supplement S8.3
    applied to hemisphere-uniform viewpoints), tilt normal with ``tilt_std`` (0: none)."""
    azimuth = rng.uniform(0.0, 2 * np.pi, count)
    elevation = np.arcsin(rng.uniform(0.0, np.sin(max_elevation), count))
    tilt = rng.normal(0.0, tilt_std, count) if tilt_std > 0 else np.zeros(count)
    return np.stack([azimuth, elevation, tilt], axis=-1)
