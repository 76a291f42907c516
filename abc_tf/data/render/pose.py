"""Procedural pose data: car-like and chair-like objects ray cast from known viewpoints.

The real pose data (KeypointNet renders of ShapeNet, CompCars, Pascal3D+) cannot be
downloaded on the build machines, so this module draws a stand-in with the same structure
(SPEC.md sections 3, 5; supplement S8.3):

- **instances**: every object instance is a handful of primitives (axis-aligned boxes and
  cylinders in the object frame) with random proportions and colours, drawn from a numpy
  Generator seeded by ``(category, pool, index)``. Pools keep instances disjoint: pool 0 trains
  (synthetic renders, the lookup dictionary), pool 1 gives the unlabelled "real" images of
  training, pool 2 the test instances.
- **cars** (length along object x, front at +x, z up): body with a lower hood in front, a
  cabin set toward the back, four wheels (cylinders along y), head- and tail-lights (front and
  back differ, as in real cars) and sometimes a spoiler. **chairs** (front at +x): seat, four
  legs (boxes or cylinders), a back (a panel or two posts and a rail), sometimes armrests.
- **camera**: orthographic, exact rotation ``R = Rz(-t) Rx(e - pi/2) Rz(-a)`` (world ->
  camera, the authors' convention of :mod:`abc_tf.geometry`); the camera looks along
  its -z axis, image x is camera x and image up is camera y.
- **tight crop**: the image is the object's projected bounding box (computed exactly from the
  primitives, no second pass), stretched to ``size x size`` like a box crop of a photo.
- **synthetic domain** (KeypointNet-like): Lambertian shading under a light fixed relative
  to the camera, transparent background (RGBA; RGB premultiplied, i.e. black outside the
  object), no tilt.
- **"real" domain** (Pascal3D+-like, only for evaluation and as unlabelled images): another
  paint palette (mostly greys, inside the synthetic palette's range), glossy materials (Blinn-Phong highlights), a random sun direction and
  ambient level, slightly jittered (annotator-like) boxes, small in-plane tilt, cluttered
  backgrounds, blur, sensor noise and a gamma change.

Instances, viewpoints and exact bounding boxes are numpy; the ray casting (all rays x all
primitives of a block of images, then shading) is one TensorFlow function, XLA-compiled for
large blocks (about 8 ms per 32 x 32 image with 2 x 2 supersampling on 2 busy CPU cores).
Rendering is a pure function of its seeds.
"""

from __future__ import annotations

import dataclasses
from typing import Sequence

import numpy as np
import tensorflow as tf
from scipy import ndimage

from abc_tf.geometry import euler_to_matrix

CATEGORIES = ("car", "chair")
# Supplement S8.3: renders are filtered to these maximum elevations (radians).
DEFAULT_MAX_ELEVATION = {"car": 0.5, "chair": 1.3}
POOLS = {"train": 0, "real_train": 1, "test": 2}

BOX, CYLINDER = 0, 1
MAX_BOXES, MAX_CYLINDERS = 12, 4  # primitive slots per instance
_RAY_START = 50.0  # camera-plane distance of ray origins; objects are a few units across
_CHUNK_RAYS = 1 << 21  # rays x primitives per compiled call (bounds memory, ~100 MB)


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
            np.array(kind, np.int64), np.array(center, np.float64), np.array(size, np.float64),
            np.array(axis, np.int64), np.clip(np.array(colour, np.float64), 0.0, 1.0), np.array(gloss, np.float64),
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
    return _hsv(rng.choice([0.0, 0.02, 0.6, 0.62, 0.1, 0.35]) + rng.normal(0, 0.02), rng.uniform(0.5, 0.9), rng.uniform(0.3, 0.8))


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
    parts.box((-length / 2 + rear_l / 2, 0.0, (body_bottom + body_top) / 2), (rear_l / 2, width / 2, body_h / 2), paint, gloss)
    parts.box((length / 2 - hood_l / 2, 0.0, body_bottom + hood_h / 2), (hood_l / 2, width / 2, hood_h / 2), paint, gloss)
    cabin_l = length * rng.uniform(0.32, 0.5)
    cabin_x = length * rng.uniform(-0.2, -0.06)  # toward the back
    cabin_h = rng.uniform(0.32, 0.62)
    glass = 0.55 * paint + 0.45 * np.array([0.08, 0.1, 0.14]) if not real else np.array([0.05, 0.07, 0.1]) + rng.uniform(0, 0.1)
    parts.box(
        (cabin_x, 0.0, body_top + cabin_h / 2), (cabin_l / 2, width * rng.uniform(0.38, 0.47), cabin_h / 2), glass,
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
    frame = _hsv(rng.uniform(), rng.uniform(0.0, 0.8), rng.uniform(0.15, 0.9)) if not real else (
        np.array([0.45, 0.3, 0.15]) * rng.uniform(0.5, 1.3) if rng.uniform() < 0.5 else np.full(3, rng.uniform(0.1, 0.7))
    )
    cushion = _hsv(rng.uniform(), rng.uniform(0.3, 1.0), rng.uniform(0.35, 1.0)) if rng.uniform() < 0.6 else frame
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
        parts.box((back_x, 0.0, back_bottom + back_h / 2), (back_t / 2, width * rng.uniform(0.4, 0.5), back_h / 2), cushion, gloss)
    else:  # two posts and a top rail
        for sy in (-1.0, 1.0):
            parts.box((back_x, sy * (width / 2 - leg), back_bottom + back_h / 2), (back_t / 2, leg, back_h / 2), frame, gloss)
        rail_h = back_h * rng.uniform(0.2, 0.45)
        parts.box((back_x, 0.0, back_bottom + back_h - rail_h / 2), (back_t / 2, width / 2, rail_h / 2), cushion, gloss)
    if rng.uniform() < 0.3:  # armrests on two supports
        arm_z = back_bottom + rng.uniform(0.15, 0.25)
        for sy in (-1.0, 1.0):
            parts.box((0.0, sy * width / 2, arm_z), (depth / 2, 0.025, 0.02), frame, gloss)
            parts.box((depth / 2 - 0.03, sy * width / 2, (back_bottom + arm_z) / 2), (0.02, 0.02, (arm_z - back_bottom) / 2), frame, gloss)
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
                raise ValueError(f"An instance has {len(chosen)} primitives of kind {kind}, more than {slots}.")
            order.append(np.concatenate([chosen, np.full(slots - len(chosen), -1)]))
        order = np.concatenate(order)
        pad = order < 0
        for name in fields:
            values = getattr(instance, name)[np.maximum(order, 0)].copy()
            values[pad] = 1e6 if name == "center" else 0
            fields[name].append(values)
    stacked = {name: np.stack(values) for name, values in fields.items()}
    stacked["kind"] = np.broadcast_to(np.repeat([BOX, CYLINDER], [MAX_BOXES, MAX_CYLINDERS]), stacked["kind"].shape).copy()
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


def projected_boxes(objects: Instance, rotations: np.ndarray) -> np.ndarray:
    """Exact bounding boxes of the objects in the camera plane: [B, 4] (xmin, xmax, ymin, ymax).

    Along a camera axis with object-frame direction r (a row of R), a box of half extents h
    reaches ``|r| . h`` from its centre and a cylinder (axis a, half length l, radius rho)
    ``l |r_a| + rho sqrt(1 - r_a^2)``.
    """
    present = objects.center[..., 0] < 1e5  # [B, K]
    extents = []
    centres = np.einsum("bij,bkj->bki", rotations[:, :2, :], objects.center)  # [B, K, 2]
    for row in range(2):
        r = rotations[:, row, :]  # [B, 3]
        box_extent = (np.abs(r)[:, None, :] * objects.size).sum(-1, keepdims=True)  # [B, K, 1]
        r_axis = np.take_along_axis(np.broadcast_to(r[:, None, :], objects.size.shape), objects.axis[..., None], axis=-1)
        cyl_extent = objects.size[..., 0:1] * np.abs(r_axis) + objects.size[..., 1:2] * np.sqrt(np.clip(1 - r_axis**2, 0, 1))
        extent = np.where(objects.kind[..., None] == BOX, box_extent, cyl_extent)[..., 0]
        low = np.where(present, centres[..., row] - extent, np.inf).min(axis=1)
        high = np.where(present, centres[..., row] + extent, -np.inf).max(axis=1)
        extents += [low, high]
    return np.stack(extents, axis=-1)


def _cast_rays_graph(
    origins: tf.Tensor,
    direction: tf.Tensor,
    center: tf.Tensor,
    size: tf.Tensor,
    axis: tf.Tensor,
    colour: tf.Tensor,
    gloss: tf.Tensor,
    light: tf.Tensor,
    ambient: tf.Tensor,
    specular: tf.Tensor,
    shininess: tf.Tensor,
) -> tuple[tf.Tensor, tf.Tensor]:
    """Nearest hit of parallel rays with the primitives, shaded (float32, XLA-fused).

    origins [B, R, 3] and direction [B, 3] (unit) in the object frame; center, size, colour
    [B, K, 3], gloss [B, K] in the layout of :func:`stack_instances`; axis [B, KC, 3] one-hot
    cylinder axes; light [B, 3] unit (object frame), ambient, specular [B]. Returns
    (rgb [B, R, 3] premultiplied, alpha [B, R] in {0, 1}).

    XLA fuses the long element-wise chains below into a few loops; the same code in numpy
    spends most of its time writing [B, R, K, 3] temporaries (about 10 times slower).
    """
    kb = MAX_BOXES
    safe = tf.where(tf.abs(direction) < 1e-9, 1e-9 * tf.ones_like(direction), direction)
    d = safe[:, None, None, :]
    # Boxes: slab method on [B, R, KB, 3].
    p = origins[:, :, None, :] - center[:, None, :kb, :]
    half = size[:, None, :kb, :]
    t1, t2 = (-half - p) / d, (half - p) / d
    t_low = tf.minimum(t1, t2)
    box_near, box_far = tf.reduce_max(t_low, -1), tf.reduce_min(tf.maximum(t1, t2), -1)
    inf = tf.constant(np.inf, tf.float32)
    box_near = tf.where((box_near <= box_far) & (box_far > 0), box_near, inf)
    # Face normal: the axis whose slab was entered last, facing the ray.
    entered = tf.cast(tf.equal(t_low, box_near[..., None]), tf.float32)  # [B, R, KB, 3] one-hot
    box_normal = entered * -tf.sign(d)
    # Cylinders on [B, R, KC]: the infinite cylinder around the axis, cut by the slab along it.
    ax = axis[:, None, :, :]
    p = origins[:, :, None, :] - center[:, None, kb:, :]
    p_a, d_a = tf.reduce_sum(p * ax, -1), tf.reduce_sum(d * ax, -1)
    p_c, d_c = p - p_a[..., None] * ax, d - d_a[..., None] * ax
    radius, half_len = size[:, None, kb:, 1], size[:, None, kb:, 0]
    qa = tf.maximum(tf.reduce_sum(d_c * d_c, -1), 1e-9)
    qb = tf.reduce_sum(p_c * d_c, -1)  # half of the usual b
    disc = qb * qb - qa * (tf.reduce_sum(p_c * p_c, -1) - radius**2)
    root = tf.sqrt(tf.maximum(disc, 0.0))
    side_near = tf.where(disc >= 0, (-qb - root) / qa, inf)
    side_far = tf.where(disc >= 0, (-qb + root) / qa, -inf)
    d_a = tf.where(tf.abs(d_a) < 1e-9, 1e-9 * tf.ones_like(d_a), d_a)
    ca, cb = (-half_len - p_a) / d_a, (half_len - p_a) / d_a
    cap_near = tf.minimum(ca, cb)
    cyl_near = tf.maximum(side_near, cap_near)
    cyl_far = tf.minimum(side_far, tf.maximum(ca, cb))
    cyl_near = tf.where((cyl_near <= cyl_far) & (cyl_far > 0), cyl_near, inf)
    cap_normal = ax * -tf.sign(d_a)[..., None]
    hit_point = p + cyl_near[..., None] * d
    radial = hit_point - tf.reduce_sum(hit_point * ax, -1, keepdims=True) * ax
    radial = radial / tf.maximum(tf.norm(radial, axis=-1, keepdims=True), 1e-9)
    cyl_normal = tf.where((cap_near >= side_near)[..., None], cap_normal, radial)
    # Missed primitives have inf - inf = nan normals; zero them before the one-hot sum below.
    cyl_normal = tf.where(tf.math.is_finite(cyl_near)[..., None], cyl_normal, 0.0)
    # z-buffer over all primitives: one-hot of the nearest.
    near = tf.concat([box_near, cyl_near], -1)  # [B, R, K]
    nearest = tf.reduce_min(near, -1, keepdims=True)
    hit = tf.math.is_finite(nearest[..., 0])
    winner = tf.one_hot(tf.argmin(near, -1), tf.shape(near)[-1], dtype=tf.float32)  # [B, R, K]
    normal = tf.reduce_sum(winner[..., None] * tf.concat([box_normal, cyl_normal], 2), 2)
    albedo = tf.einsum("brk,bkc->brc", winner, colour)
    shine = tf.einsum("brk,bk->br", winner, gloss)
    lit = light[:, None, :]
    diffuse = tf.maximum(tf.reduce_sum(normal * lit, -1), 0.0)
    shade = ambient[:, None] + (1 - ambient[:, None]) * diffuse
    halfway = lit - safe[:, None, :]  # light + view direction (the view points back along the ray)
    halfway = halfway / tf.maximum(tf.norm(halfway, axis=-1, keepdims=True), 1e-9)
    highlight = tf.maximum(tf.reduce_sum(normal * halfway, -1), 0.0) ** shininess
    rgb = albedo * shade[..., None] + (specular[:, None] * shine * highlight)[..., None]
    alpha = tf.cast(hit, tf.float32)
    return tf.clip_by_value(rgb, 0.0, 1.0) * alpha[..., None], alpha


# XLA pays a compilation (seconds) per input shape and then runs several times faster: worth it
# for the thousands of images of a data set, not for a handful.
_cast_rays_xla = tf.function(_cast_rays_graph, jit_compile=True, reduce_retracing=True, autograph=False)
_cast_rays_plain = tf.function(_cast_rays_graph, reduce_retracing=True, autograph=False)
_XLA_MIN_RAYS = 1 << 17  # images x rays per call from which XLA is used


@dataclasses.dataclass(frozen=True)
class Lighting:
    """Per-image lighting: light direction in camera coordinates [B, 3] (unit), ambient [B],
    specular strength [B] (0: matte, the synthetic domain), shininess exponent."""

    light: np.ndarray
    ambient: np.ndarray
    specular: np.ndarray
    shininess: float = 24.0


def render(
    objects: Instance,
    euler: np.ndarray,
    size: int,
    lighting: Lighting,
    box_jitter: np.ndarray | None = None,
    supersample: int = 2,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Ray casts B objects, each tight-cropped to its projected bounding box.

    objects: stacked instances (fields [B, K, ...]); euler: [B, 3] radians; size: output side;
    box_jitter: optional [B, 4] relative offsets of (xmin, xmax, ymin, ymax) in units of the
    box size (annotation noise of "real" boxes). Returns (rgb float [B, size, size, 3] in [0, 1],
    premultiplied by alpha; alpha [B, size, size] in [0, 1]; rotations [B, 3, 3]).
    """
    euler = np.asarray(euler, np.float64)
    rotations = euler_to_matrix(euler)
    count = euler.shape[0]
    boxes = projected_boxes(objects, rotations)
    if box_jitter is not None:
        span = np.stack([boxes[:, 1] - boxes[:, 0]] * 2 + [boxes[:, 3] - boxes[:, 2]] * 2, axis=-1)
        boxes = boxes + box_jitter * span
    fine = size * supersample
    grid = (np.arange(fine) + 0.5) / fine  # pixel centres in [0, 1]
    xs = boxes[:, 0:1] + grid[None, :] * (boxes[:, 1:2] - boxes[:, 0:1])  # [B, fine] left -> right
    ys = boxes[:, 3:4] - grid[None, :] * (boxes[:, 3:4] - boxes[:, 2:3])  # [B, fine] top -> bottom
    cam = np.stack(np.broadcast_arrays(xs[:, None, :], ys[:, :, None], _RAY_START), axis=-1).reshape(count, -1, 3)
    # Camera -> object frame: p_obj = R^T p_cam; rays travel along camera -z.
    origins = np.einsum("bji,brj->bri", rotations, cam)
    direction = -rotations[:, 2, :]
    light_obj = np.einsum("bji,bj->bi", rotations, lighting.light)
    rgb = np.zeros((count, fine * fine, 3), np.float32)
    alpha = np.zeros((count, fine * fine), np.float32)
    per_block = max(1, _CHUNK_RAYS // (fine * fine * (MAX_BOXES + MAX_CYLINDERS)))  # images per call
    f32 = lambda values: tf.constant(np.asarray(values, np.float32))  # noqa: E731
    per_block = min(per_block, count)
    for start in range(0, count, per_block):
        # Every call gets per_block images (the last block padded by repetition): one compiled shape.
        rows = np.minimum(np.arange(start, start + per_block), count - 1)
        cast_rays = _cast_rays_xla if per_block * fine * fine >= _XLA_MIN_RAYS else _cast_rays_plain
        block_rgb, block_alpha = cast_rays(
            f32(origins[rows]), f32(direction[rows]), f32(objects.center[rows]), f32(objects.size[rows]),
            f32(np.eye(3)[objects.axis[rows, MAX_BOXES:]]), f32(objects.colour[rows]), f32(objects.gloss[rows]),
            f32(light_obj[rows]), f32(lighting.ambient[rows]), f32(lighting.specular[rows]), f32(lighting.shininess),
        )
        used = min(per_block, count - start)
        rgb[start : start + used], alpha[start : start + used] = block_rgb.numpy()[:used], block_alpha.numpy()[:used]
    rgb = np.clip(rgb, 0.0, 1.0).reshape(count, fine, fine, 3)
    alpha = alpha.reshape(count, fine, fine)
    if supersample > 1:  # box filter: antialiased edges and fractional alpha
        rgb = rgb.reshape(count, size, supersample, size, supersample, 3).mean(axis=(2, 4))
        alpha = alpha.reshape(count, size, supersample, size, supersample).mean(axis=(2, 4))
    return rgb, alpha, rotations


def synthetic_lighting(count: int) -> Lighting:
    """KeypointNet-like renders: one light above-left of the camera, fixed, no highlights."""
    light = np.array([-0.35, 0.55, 0.76])
    light = np.tile(light / np.linalg.norm(light), (count, 1))
    return Lighting(light, np.full(count, 0.45), np.zeros(count))


def real_lighting(rng: np.random.Generator, rotations: np.ndarray) -> Lighting:
    """A random sun above the horizon (world frame), random ambient level, glossy highlights."""
    count = rotations.shape[0]
    sun_azimuth = rng.uniform(0, 2 * np.pi, count)
    sun_elevation = rng.uniform(0.25, 1.4, count)
    sun_world = np.stack(
        [np.cos(sun_elevation) * np.cos(sun_azimuth), np.cos(sun_elevation) * np.sin(sun_azimuth), np.sin(sun_elevation)], -1
    )
    light = np.einsum("bij,bj->bi", rotations, sun_world)
    return Lighting(light, rng.uniform(0.35, 0.7, count), rng.uniform(0.3, 0.9, count))


def clutter_backgrounds(rng: np.random.Generator, count: int, size: int) -> np.ndarray:
    """Cluttered scenes [count, size, size, 3] in [0, 1]: a sky/ground gradient with random
    rectangles and discs of random colours, the stand-in for real photo backgrounds."""
    rows = np.linspace(0.0, 1.0, size)[None, :, None, None]
    top, bottom = rng.uniform(0.1, 0.95, (count, 1, 1, 3)), rng.uniform(0.05, 0.7, (count, 1, 1, 3))
    horizon = rng.uniform(0.3, 0.7, (count, 1, 1, 1))
    out = np.where(rows < horizon, top + (bottom - top) * rows * 0.3, bottom * (0.8 + 0.4 * rows))
    out = np.broadcast_to(out, (count, size, size, 3)).copy()
    yy, xx = np.meshgrid(np.arange(size) / size, np.arange(size) / size, indexing="ij")
    for _ in range(10):
        colour = rng.uniform(0.0, 1.0, (count, 1, 1, 3))
        cy, cx = rng.uniform(-0.1, 1.1, (2, count, 1, 1))
        hy, hx = rng.uniform(0.03, 0.35, (2, count, 1, 1))
        rect = (np.abs(yy - cy) < hy) & (np.abs(xx - cx) < hx)
        disc = (yy - cy) ** 2 + (xx - cx) ** 2 < (hy * hx)
        shape = np.where(rng.uniform(size=(count, 1, 1)) < 0.6, rect, disc)
        shape &= rng.uniform(size=(count, 1, 1)) < 0.8
        out = np.where(shape[..., None], colour, out)
    return np.clip(out, 0.0, 1.0)


def to_uint8(images: np.ndarray) -> np.ndarray:
    return np.clip(np.rint(np.asarray(images) * 255.0), 0, 255).astype(np.uint8)


def render_synthetic(
    category: str, pool: str, instance_ids: np.ndarray, euler: np.ndarray, size: int, supersample: int = 2
) -> tuple[np.ndarray, np.ndarray]:
    """KeypointNet-like renders: (RGBA uint8 [B, size, size, 4] with RGB premultiplied, rotations [B, 3, 3])."""
    instance_ids = np.asarray(instance_ids)
    cache = {int(i): make_instance(category, pool, int(i)) for i in np.unique(instance_ids)}
    objects = stack_instances([cache[int(i)] for i in instance_ids])
    rgb, alpha, rotations = render(objects, euler, size, synthetic_lighting(len(instance_ids)), supersample=supersample)
    return np.concatenate([to_uint8(rgb), to_uint8(alpha)[..., None]], axis=-1), rotations


def render_real(
    category: str, pool: str, instance_ids: np.ndarray, euler: np.ndarray, size: int, seed: int, supersample: int = 2
) -> tuple[np.ndarray, np.ndarray]:
    """"Real"-domain photos: (RGB uint8 [B, size, size, 3], rotations [B, 3, 3]).

    Other materials and palettes, a random sun, jittered boxes, clutter behind the object,
    then Gaussian blur (sigma 0.2..1.0 px), a gamma change and sensor noise (sigma up to 0.04).
    """
    instance_ids = np.asarray(instance_ids)
    rng = np.random.default_rng([int(seed), 0x4EA1])
    cache = {int(i): make_instance(category, pool, int(i), real=True) for i in np.unique(instance_ids)}
    objects = stack_instances([cache[int(i)] for i in instance_ids])
    rotations = euler_to_matrix(euler)
    jitter = rng.normal(0.0, 0.03, (len(instance_ids), 4))
    rgb, alpha, rotations = render(objects, euler, size, real_lighting(rng, rotations), jitter, supersample)
    background = clutter_backgrounds(rng, len(instance_ids), size)
    image = rgb + (1.0 - alpha[..., None]) * background
    sigmas = rng.uniform(0.2, 1.0, len(image)) * size / 64.0
    image = np.stack([ndimage.gaussian_filter(im, (s, s, 0)) for im, s in zip(image, sigmas)])
    image = np.clip(image, 0.0, 1.0) ** rng.uniform(0.6, 1.1, (len(image), 1, 1, 1))
    image = image + rng.normal(0.0, 1.0, image.shape) * rng.uniform(0.0, 0.04, (len(image), 1, 1, 1))
    return to_uint8(image), rotations
