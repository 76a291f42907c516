"""Procedural Shapes3D: 64x64x3 scenes with the factors, value counts and order of DeepMind's 3dshapes.

The build machines cannot download the real data set (docs/PAPERS.md section 6). :func:`render` draws:

======  ============  ======  =========================================================
index   factor        values  rendered as
======  ============  ======  =========================================================
0       floor_hue     10      hue of the floor, HSV(h, 1, 1), h = 0.0, 0.1, ..., 0.9
1       wall_hue      10      hue of the two back walls (a room corner)
2       object_hue    10      hue of the object
3       scale         8       object size, linspace(0.75, 1.25, 8)
4       shape         4       cube, cylinder, sphere, pill (a capsule lying on its side)
5       orientation   15      camera azimuth around the scene, linspace(-30, 30, 15) deg
======  ============  ======  =========================================================
"""

from __future__ import annotations

import functools

import numpy as np

IMAGE_SIZE = 64
NUM_HUES = 10
SCALES = np.linspace(0.75, 1.25, 8)
SHAPES = ("cube", "cylinder", "sphere", "pill")
ORIENTATIONS_DEG = np.linspace(-30.0, 30.0, 15)
HUES = np.arange(NUM_HUES) / NUM_HUES

# Surface classes: the last axis of the weight tables.
FLOOR, WALL, OBJECT = 0, 1, 2

# Scene layout in world units (y up, object standing on the floor at the origin).
_WALL_DISTANCE = 2.6  # distance of each wall plane from the origin
_CAMERA_DISTANCE = 5.6  # horizontal distance of the camera from the origin
_CAMERA_HEIGHT = 2.1
_CAMERA_TARGET = np.array([0.0, 0.75, 0.0])
_FIELD_OF_VIEW_DEG = 40.0
_OBJECT_UNIT = 0.55  # half size of the object at scale 1
_LIGHT = np.array([-0.55, 1.0, 0.7]) / np.linalg.norm([-0.55, 1.0, 0.7])
_AMBIENT = 0.4  # shading = ambient + (1 - ambient) * max(0, n . light), times 0.55 in shadow
_SHADOW = 0.55
_SUPERSAMPLE = 2
_EPS = 1e-4

# Unit normals of the two walls (pointing into the room); together they make a corner behind
# the object, so that the orbiting camera sees the corner move.
_WALL_NORMALS = np.array([[np.sqrt(0.5), 0.0, np.sqrt(0.5)], [-np.sqrt(0.5), 0.0, np.sqrt(0.5)]])


def hue_to_rgb(hues: np.ndarray) -> np.ndarray:
    """HSV(h, 1, 1) -> RGB in [0, 1]: [...] hues in [0, 1) -> [..., 3] float32."""
    h6 = (np.asarray(hues, dtype=np.float64) % 1.0) * 6.0
    # Standard HSV with s = v = 1: each channel is a clipped triangle wave of the hue.
    r = np.clip(np.abs(h6 - 3.0) - 1.0, 0.0, 1.0)
    g = np.clip(2.0 - np.abs(h6 - 2.0), 0.0, 1.0)
    b = np.clip(2.0 - np.abs(h6 - 4.0), 0.0, 1.0)
    return np.stack([r, g, b], axis=-1).astype(np.float32)


_HUE_RGB_255 = hue_to_rgb(HUES) * 255.0  # [10, 3], float32


def _dot(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.sum(a * b, axis=-1)


def _camera_rays(orientation_deg: float, size: int) -> tuple[np.ndarray, np.ndarray]:
    """Camera origin [3] and unit ray directions [size, size, 3]. Row 0 is the top of the image."""
    azimuth = np.deg2rad(orientation_deg)
    origin = np.array(
        [_CAMERA_DISTANCE * np.sin(azimuth), _CAMERA_HEIGHT, _CAMERA_DISTANCE * np.cos(azimuth)]
    )
    forward = _CAMERA_TARGET - origin
    forward /= np.linalg.norm(forward)
    right = np.cross(forward, [0.0, 1.0, 0.0])
    right /= np.linalg.norm(right)
    up = np.cross(right, forward)
    half = np.tan(np.deg2rad(_FIELD_OF_VIEW_DEG) / 2.0)
    # Pixel centres in [-1, 1].
    coords = (np.arange(size) + 0.5) / size * 2.0 - 1.0
    ys, xs = np.meshgrid(-coords, coords, indexing="ij")
    dirs = forward + (xs[..., None] * half) * right + (ys[..., None] * half) * up
    return origin, dirs / np.linalg.norm(dirs, axis=-1, keepdims=True)


def _hit_sphere(
    o: np.ndarray, d: np.ndarray, centre: np.ndarray, radius: float
) -> tuple[np.ndarray, np.ndarray]:
    """Nearest hit t [N], inf where missed, and outward normal [N, 3] of rays o + t d."""
    oc = o - centre
    b = _dot(oc, d)
    disc = b * b - (_dot(oc, oc) - radius * radius)
    root = np.sqrt(np.maximum(disc, 0.0))
    t = np.where(disc > 0, -b - root, np.inf)
    t = np.where(t > _EPS, t, np.inf)
    normal = (o + np.where(np.isfinite(t), t, 0.0)[:, None] * d - centre) / radius
    return t, normal


def _hit_box(o: np.ndarray, d: np.ndarray, half: float) -> tuple[np.ndarray, np.ndarray]:
    """Axis-aligned cube [-half, half] x [0, 2 half] x [-half, half], by the slab method."""
    lo = np.array([-half, 0.0, -half])
    hi = np.array([half, 2.0 * half, half])
    with np.errstate(divide="ignore", invalid="ignore"):
        inv = 1.0 / d
        t1 = (lo - o) * inv
        t2 = (hi - o) * inv
    near = np.nan_to_num(np.minimum(t1, t2), nan=-np.inf)
    far = np.nan_to_num(np.maximum(t1, t2), nan=np.inf)
    t_near = near.max(axis=-1)
    t_far = far.min(axis=-1)
    hit = (t_far >= t_near) & (t_near > _EPS)
    t = np.where(hit, t_near, np.inf)
    axis = near.argmax(axis=-1)
    normal = np.zeros_like(d)
    rows = np.arange(d.shape[0])
    normal[rows, axis] = -np.sign(d[rows, axis])
    return t, normal


def _hit_cylinder(
    o: np.ndarray, d: np.ndarray, radius: float, height: float
) -> tuple[np.ndarray, np.ndarray]:
    """Upright cylinder around the y axis from y = 0 to y = height, with a top cap."""
    a = d[:, 0] ** 2 + d[:, 2] ** 2
    b = o[..., 0] * d[:, 0] + o[..., 2] * d[:, 2]
    c = o[..., 0] ** 2 + o[..., 2] ** 2 - radius * radius
    disc = b * b - a * c
    with np.errstate(divide="ignore", invalid="ignore"):
        t_side = (-b - np.sqrt(np.maximum(disc, 0.0))) / a
        y_side = o[..., 1] + t_side * d[:, 1]
        side_ok = (disc > 0) & (a > 1e-12) & (t_side > _EPS) & (y_side >= 0.0) & (y_side <= height)
        t_side = np.where(side_ok, t_side, np.inf)
        t_top = (height - o[..., 1]) / d[:, 1]
    px = o[..., 0] + t_top * d[:, 0]
    pz = o[..., 2] + t_top * d[:, 2]
    top_ok = np.isfinite(t_top) & (t_top > _EPS) & (px * px + pz * pz <= radius * radius)
    t_top = np.where(top_ok, t_top, np.inf)
    t = np.minimum(t_side, t_top)
    p = o + np.where(np.isfinite(t), t, 0.0)[:, None] * d
    side_normal = np.stack([p[:, 0], np.zeros_like(t), p[:, 2]], axis=-1) / radius
    top_normal = np.broadcast_to(np.array([0.0, 1.0, 0.0]), d.shape)
    normal = np.where((t_top <= t_side)[:, None], top_normal, side_normal)
    return t, normal


def _hit_capsule(
    o: np.ndarray, d: np.ndarray, pa: np.ndarray, pb: np.ndarray, radius: float
) -> tuple[np.ndarray, np.ndarray]:
    """Capsule around the segment pa-pb: the cylinder part, else the nearer end sphere."""
    ba = pb - pa
    oa = o - pa
    baba = float(ba @ ba)
    bard = d @ ba
    baoa = oa @ ba
    rdoa = _dot(d, oa)
    oaoa = _dot(oa, oa)
    a = baba - bard * bard
    b = baba * rdoa - baoa * bard
    c = baba * oaoa - baoa * baoa - radius * radius * baba
    disc = b * b - a * c
    with np.errstate(divide="ignore", invalid="ignore"):
        t_body = (-b - np.sqrt(np.maximum(disc, 0.0))) / a
    along = baoa + t_body * bard
    body_ok = (disc >= 0) & (a > 1e-12) & (along > 0) & (along < baba) & (t_body > _EPS)
    # Rays that miss the infinite cylinder miss the capsule; others may hit an end cap.
    t_a, _ = _hit_sphere(o, d, pa, radius)
    t_b, _ = _hit_sphere(o, d, pb, radius)
    t = np.where(body_ok, t_body, np.minimum(t_a, t_b))
    t = np.where(disc >= 0, t, np.inf)
    p = o + np.where(np.isfinite(t), t, 0.0)[:, None] * d
    k = np.clip(((p - pa) @ ba) / baba, 0.0, 1.0)
    normal = (p - (pa + k[:, None] * ba)) / radius
    return t, normal


def _hit_object_exact(shape: str, unit: float, o: np.ndarray, d: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    if shape == "cube":
        return _hit_box(o, d, unit)
    if shape == "cylinder":
        return _hit_cylinder(o, d, unit, 2.0 * unit)
    if shape == "sphere":
        return _hit_sphere(o, d, np.array([0.0, unit, 0.0]), unit)
    if shape == "pill":
        radius = 0.62 * unit
        pa = np.array([-0.95 * unit, radius, 0.0])
        pb = np.array([0.95 * unit, radius, 0.0])
        return _hit_capsule(o, d, pa, pb, radius)
    raise ValueError(f"Unknown shape {shape!r}; choose one of {SHAPES}.")


def _hit_object(shape: str, scale: float, o: np.ndarray, d: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Nearest hit t [N], inf where missed, and normal [N, 3] with the object of this shape and
    scale.
    """
    unit = _OBJECT_UNIT * scale
    # Every shape fits in a sphere of radius sqrt(3) unit around (0, unit, 0); the exact
    # intersection runs only for the rays that meet it (a fraction of the image).
    centre = np.array([0.0, unit, 0.0])
    oc = o - centre
    b = _dot(oc, d)
    disc = b * b - (_dot(oc, oc) - 3.0 * unit * unit)
    candidates = np.flatnonzero((disc > 0) & (-b + np.sqrt(np.maximum(disc, 0.0)) > _EPS))
    t = np.full(d.shape[0], np.inf)
    normal = np.zeros(d.shape)
    if candidates.size:
        t[candidates], normal[candidates] = _hit_object_exact(shape, unit, o[candidates], d[candidates])
    return t, normal


def _orientation_weights(orientation_deg: float, size: int) -> np.ndarray:
    """Per-pixel weights of the floor, wall and object colours from this orientation.

    One per scale and shape: [8, 4, size, size, 3] float32.
    """
    fine = size * _SUPERSAMPLE
    origin, dirs = _camera_rays(orientation_deg, fine)
    d = dirs.reshape(-1, 3)
    o = np.broadcast_to(origin, d.shape)
    rows = np.arange(d.shape[0])
    # Background: the room is the intersection of half-spaces, so the ray leaves it through
    # the nearest plane it moves away from. It does not depend on the object: done once.
    with np.errstate(divide="ignore", invalid="ignore"):
        t_floor = np.where(d[:, 1] < 0, -origin[1] / d[:, 1], np.inf)
        wall_dots = d @ _WALL_NORMALS.T  # [N, 2]
        t_walls = np.where(wall_dots < 0, (-_WALL_DISTANCE - _WALL_NORMALS @ origin) / wall_dots, np.inf)
    t_wall = t_walls.min(axis=-1)
    is_floor = t_floor <= t_wall
    t_background = np.minimum(t_floor, t_wall)
    background_normal = np.where(is_floor[:, None], [0.0, 1.0, 0.0], _WALL_NORMALS[t_walls.argmin(axis=-1)])
    background_point = o + t_background[:, None] * d
    background_shading = _AMBIENT + (1.0 - _AMBIENT) * np.maximum(background_normal @ _LIGHT, 0.0)
    shadow_origin = background_point + 1e-3 * background_normal
    light = np.broadcast_to(_LIGHT, d.shape)
    background_surface = np.where(is_floor, FLOOR, WALL)

    out = np.empty((len(SCALES), len(SHAPES), size, size, 3), dtype=np.float32)
    for i, scale in enumerate(SCALES):
        for j, shape in enumerate(SHAPES):
            t_object, object_normal = _hit_object(shape, float(scale), o, d)
            on_object = t_object < t_background
            # Cast shadow of the object on floor and walls (the object does not shadow itself).
            shadow_t, _ = _hit_object(shape, float(scale), shadow_origin, light)
            shading = np.where(np.isfinite(shadow_t), background_shading * _SHADOW, background_shading)
            object_shading = _AMBIENT + (1.0 - _AMBIENT) * np.maximum(object_normal @ _LIGHT, 0.0)
            shading = np.where(on_object, object_shading, shading)
            weights = np.zeros((d.shape[0], 3))
            weights[rows, np.where(on_object, OBJECT, background_surface)] = shading
            # Average the supersamples: coverage-weighted shading, i.e. anti-aliased edges.
            out[i, j] = weights.reshape(size, _SUPERSAMPLE, size, _SUPERSAMPLE, 3).mean(axis=(1, 3))
    return out


def weight_tables(size: int = IMAGE_SIZE) -> np.ndarray:
    """Colour weights of every scale, shape and orientation: [8, 4, 15, size, size, 3] float32.

    A scene's geometry depends only on scale, shape and orientation, 480 combinations. Its
    colours depend only on the three hues. Every pixel mixes at most the three surfaces, weighted
    by 2x2-supersampled coverage times a grey Lambertian shading:

        image[y, x, :] = sum_c weights[scale, shape, orientation, y, x, c] * rgb(hue_c)

    The tables are 24 MB, ray cast once per process in about a second at 64x64, cached and
    read-only. Then an image costs one gather and three multiply-adds per pixel. Shading is a
    scalar per surface, so a pixel covered by one surface keeps its hue exactly.
    """
    # One cache key per size however the argument is passed (lru_cache keys differ for
    # f() and f(64)).
    return _cached_weight_tables(int(size))


@functools.lru_cache(maxsize=2)
def _cached_weight_tables(size: int) -> np.ndarray:
    tables = np.stack([_orientation_weights(float(angle), size) for angle in ORIENTATIONS_DEG], axis=2)
    tables.setflags(write=False)
    return tables


def render(factors: np.ndarray, size: int = IMAGE_SIZE) -> np.ndarray:
    """Renders scenes from factor indices, deterministically; :func:`weight_tables` says why it is fast.

    The camera orbits the scene with the orientation. So every shape, the sphere too, changes with
    it: the room corner, the shading and the cast shadow move.

    Args:
      factors: int array [..., 6] of factor indices in the 3dshapes order, each within its value
      count. The order is floor_hue, wall_hue, object_hue, scale, shape, orientation.
      size: image height and width in pixels.
    Returns:
      uint8 images [..., size, size, 3].
    """
    factors = np.asarray(factors)
    if factors.shape[-1:] != (6,) or not np.issubdtype(factors.dtype, np.integer):
        raise ValueError(
            f"render expects integer factor indices of shape [..., 6], got {factors.dtype} {factors.shape}."
        )
    sizes = np.array([NUM_HUES, NUM_HUES, NUM_HUES, len(SCALES), len(SHAPES), len(ORIENTATIONS_DEG)])
    if np.any(factors < 0) or np.any(factors >= sizes):
        raise ValueError(f"Factor indices out of range; each must lie in [0, {sizes.tolist()}).")
    lead = factors.shape[:-1]
    flat = factors.reshape(-1, 6)
    tables = weight_tables(size)
    weights = tables[flat[:, 3], flat[:, 4], flat[:, 5]].reshape(-1, size * size, 3)  # [B, pixels, surfaces]
    colours = _HUE_RGB_255[flat[:, :3]]  # [B, surfaces, rgb]
    # One small batched matmul mixes the three surface colours of every pixel; it is several
    # times faster than broadcasting multiply-adds (no [B, H, W, 3, 3] temporaries).
    image = np.matmul(weights, colours)
    # Weights sum to at most 1 per pixel, so values stay within [0, 255] before rounding.
    image = (image + 0.5).astype(np.uint8)
    return image.reshape(lead + (size, size, 3))
