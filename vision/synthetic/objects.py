"""The object, colour and texture library of the synthetic scene generator.

Every category is a triangle mesh built from open3d primitives (boxes, spheres, cylinders, cones, tori, arrows)
and surfaces of revolution (:func:`lathe`). Meshes are returned in an object frame with the z axis up, the base
resting on the plane z = 0 and the footprint centred on the z axis, scaled so that the largest extent equals the
category's nominal size in metres.

Textures are *solid* (3-D) procedural patterns evaluated at the hit point expressed in the object frame, so a
pattern sticks to the object and looks the same from every view. :func:`texture_weight` returns, per point, the
weight of the secondary colour (0 = primary colour, 1 = secondary colour).
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import open3d as o3d

__all__ = [
    "CATEGORIES", "COLOURS", "COLOUR_NAMES", "TEXTURES", "PHOTO", "SURFACE_TEXTURES", "TEXTURE_WORDS", "NOMINAL_SIZE",
    "category_mesh", "lathe", "secondary_colour", "texture_weight", "value_noise",
]

Mesh = tuple[np.ndarray, np.ndarray]  # vertices float64 [V, 3], triangles int32 [T, 3]

#: Named object categories, in the order that fixes their COCO category ids (id = index + 1).
CATEGORIES: tuple[str, ...] = (
    "cube", "sphere", "cylinder", "cone", "torus", "capsule", "arrow", "pyramid", "bowl", "bottle",
    "vase", "dumbbell", "mug", "table", "chair", "lamp", "snowman", "mushroom", "tree", "bench",
)

#: Largest extent (metres) of each category's mesh.
NOMINAL_SIZE: dict[str, float] = {
    "cube": 0.30, "sphere": 0.32, "cylinder": 0.36, "cone": 0.40, "torus": 0.40, "capsule": 0.42,
    "arrow": 0.50, "pyramid": 0.36, "bowl": 0.36, "bottle": 0.42, "vase": 0.42, "dumbbell": 0.46,
    "mug": 0.30, "table": 0.62, "chair": 0.62, "lamp": 0.60, "snowman": 0.58, "mushroom": 0.40,
    "tree": 0.65, "bench": 0.62,
}

#: Named colours as linear RGB in [0, 1].
COLOURS: dict[str, tuple[float, float, float]] = {
    "red": (0.85, 0.10, 0.10),
    "green": (0.12, 0.65, 0.18),
    "blue": (0.12, 0.25, 0.85),
    "yellow": (0.95, 0.85, 0.10),
    "orange": (0.98, 0.50, 0.05),
    "purple": (0.50, 0.15, 0.70),
    "pink": (0.98, 0.55, 0.75),
    "cyan": (0.10, 0.80, 0.85),
    "white": (0.95, 0.95, 0.95),
    "black": (0.08, 0.08, 0.08),
    "brown": (0.45, 0.26, 0.10),
    "gray": (0.50, 0.50, 0.50),
}
COLOUR_NAMES: tuple[str, ...] = tuple(COLOURS)

#: Procedural textures; index in this tuple is the texture code used by the renderer.
TEXTURES: tuple[str, ...] = ("plain", "checker", "stripes", "dots", "noise")
#: The texture of a surface that shows a photograph (:mod:`vision.synthetic.photos`), drawn only when a split
#: is made with ``textures="photo"``; not in :data:`TEXTURES`, whose list procedural splits record unchanged.
PHOTO = "photo"
#: Every texture the renderer knows; index in this tuple is its texture code (:data:`TEXTURES` first).
SURFACE_TEXTURES: tuple[str, ...] = TEXTURES + (PHOTO,)
#: The adjective a caption uses for each texture ("" for plain; "" for a photo: a photo-textured object is
#: tinted with its named colour and captioned by colour and category only).
TEXTURE_WORDS: dict[str, str] = {
    "plain": "", "checker": "checkered", "stripes": "striped", "dots": "dotted", "noise": "speckled", PHOTO: "",
}


# --------------------------------------------------------------------------------------------------------------
# Mesh helpers


def _rot_x(a: float) -> np.ndarray:
    c, s = np.cos(a), np.sin(a)
    return np.array([[1.0, 0.0, 0.0], [0.0, c, -s], [0.0, s, c]])


def _rot_y(a: float) -> np.ndarray:
    c, s = np.cos(a), np.sin(a)
    return np.array([[c, 0.0, s], [0.0, 1.0, 0.0], [-s, 0.0, c]])


def _from_o3d(mesh: o3d.geometry.TriangleMesh) -> Mesh:
    return np.asarray(mesh.vertices, dtype=np.float64).copy(), np.asarray(mesh.triangles, dtype=np.int32).copy()


def _move(mesh: Mesh, offset: tuple[float, float, float] = (0.0, 0.0, 0.0), rot: np.ndarray | None = None) -> Mesh:
    """Rotate (about the origin) then translate a mesh."""
    v, t = mesh
    if rot is not None:
        v = v @ rot.T
    return v + np.asarray(offset, dtype=np.float64), t


def _merge(parts: list[Mesh]) -> Mesh:
    verts, tris, base = [], [], 0
    for v, t in parts:
        verts.append(v)
        tris.append(t + base)
        base += len(v)
    return np.concatenate(verts, 0), np.concatenate(tris, 0).astype(np.int32)


def _box(sx: float, sy: float, sz: float, centre: tuple[float, float, float]) -> Mesh:
    """Axis-aligned box of size (sx, sy, sz) centred at ``centre``."""
    v, t = _from_o3d(o3d.geometry.TriangleMesh.create_box(sx, sy, sz))
    return v - np.array([sx, sy, sz]) / 2 + np.asarray(centre), t


def _sphere(r: float, centre: tuple[float, float, float], res: int = 12) -> Mesh:
    v, t = _from_o3d(o3d.geometry.TriangleMesh.create_sphere(r, res))
    return v + np.asarray(centre), t


def _cylinder(r: float, h: float, base: tuple[float, float, float], res: int = 20) -> Mesh:
    """Cylinder along +z standing on ``base`` (the centre of its bottom disc)."""
    v, t = _from_o3d(o3d.geometry.TriangleMesh.create_cylinder(r, h, res, 1))
    return v + np.asarray(base) + np.array([0.0, 0.0, h / 2]), t


def _cone(r: float, h: float, base: tuple[float, float, float], res: int = 20) -> Mesh:
    v, t = _from_o3d(o3d.geometry.TriangleMesh.create_cone(r, h, res, 1))
    return v + np.asarray(base), t


def lathe(profile: list[tuple[float, float]], segments: int = 24) -> Mesh:
    """Surface of revolution about the z axis.

    Args:
        profile: polyline of (radius, z) points, swept around z; consecutive points are joined by bands of quads.
            A radius of 0 closes the surface at that height. The surface is one-sided geometry; the renderer
            shades both sides, so open shells (bowls, lamp shades) are fine.
        segments: number of angular segments.

    Returns:
        (vertices [len(profile) * segments, 3], triangles [2 * (len(profile) - 1) * segments, 3]).
    """
    prof = np.asarray(profile, dtype=np.float64)
    ang = np.linspace(0.0, 2 * np.pi, segments, endpoint=False)
    ring_x, ring_y = np.cos(ang), np.sin(ang)
    v = np.stack([prof[:, :1] * ring_x[None], prof[:, :1] * ring_y[None],
                  np.repeat(prof[:, 1:2], segments, axis=1)], axis=-1).reshape(-1, 3)
    i = np.arange(len(prof) - 1)[:, None]
    j = np.arange(segments)[None, :]
    a = i * segments + j
    b = i * segments + (j + 1) % segments
    c = a + segments
    d = b + segments
    t = np.concatenate([np.stack([a, b, d], -1).reshape(-1, 3), np.stack([a, d, c], -1).reshape(-1, 3)], 0)
    return v, t.astype(np.int32)


# --------------------------------------------------------------------------------------------------------------
# Category builders (arbitrary units; normalised afterwards)


def _build(category: str) -> Mesh:
    tm = o3d.geometry.TriangleMesh
    if category == "cube":
        return _box(1.0, 1.0, 1.0, (0.0, 0.0, 0.5))
    if category == "sphere":
        return _sphere(0.5, (0.0, 0.0, 0.5), res=16)
    if category == "cylinder":
        return _cylinder(0.35, 1.0, (0.0, 0.0, 0.0), res=24)
    if category == "cone":
        return _cone(0.45, 1.0, (0.0, 0.0, 0.0), res=24)
    if category == "torus":
        v, t = _from_o3d(tm.create_torus(1.0, 0.35, 24, 12))
        return v + np.array([0.0, 0.0, 0.35]), t
    if category == "capsule":
        return _merge([_cylinder(0.3, 0.8, (0.0, 0.0, 0.3)), _sphere(0.3, (0.0, 0.0, 0.3)),
                       _sphere(0.3, (0.0, 0.0, 1.1))])
    if category == "arrow":  # lying on the floor, pointing along +x
        arrow = _from_o3d(tm.create_arrow(0.1, 0.22, 0.7, 0.35, 16, 1, 1))
        return _move(arrow, (-0.5, 0.0, 0.22), rot=_rot_y(np.pi / 2))
    if category == "pyramid":
        return _cone(0.7, 0.9, (0.0, 0.0, 0.0), res=4)
    if category == "bowl":
        outer = [(0.0, 0.0), (0.25, 0.0), (0.42, 0.08), (0.5, 0.22), (0.52, 0.32)]
        inner = [(0.47, 0.32), (0.45, 0.23), (0.38, 0.12), (0.22, 0.05), (0.0, 0.05)]
        return lathe(outer + inner, 32)
    if category == "bottle":
        return lathe([(0.0, 0.0), (0.16, 0.0), (0.17, 0.03), (0.17, 0.5), (0.13, 0.6), (0.06, 0.7),
                      (0.06, 0.85), (0.07, 0.86), (0.07, 0.9), (0.0, 0.9)], 24)
    if category == "vase":
        return lathe([(0.0, 0.0), (0.18, 0.0), (0.3, 0.15), (0.34, 0.35), (0.25, 0.6), (0.14, 0.75),
                      (0.16, 0.88), (0.2, 0.95), (0.17, 0.95), (0.12, 0.8), (0.0, 0.8)], 28)
    if category == "dumbbell":  # bar along x
        bar = _move(_cylinder(0.06, 1.0, (0.0, 0.0, -0.5), res=12), rot=_rot_y(np.pi / 2))
        plates = [_move(_cylinder(0.25, 0.16, (0.0, 0.0, -0.08)), rot=_rot_y(np.pi / 2)) for _ in range(2)]
        return _merge([_move(bar, (0.0, 0.0, 0.25)), _move(plates[0], (-0.42, 0.0, 0.25)),
                       _move(plates[1], (0.42, 0.0, 0.25))])
    if category == "mug":
        body = lathe([(0.0, 0.0), (0.3, 0.0), (0.3, 0.7), (0.26, 0.7), (0.26, 0.05), (0.0, 0.05)], 28)
        handle = _from_o3d(tm.create_torus(0.18, 0.05, 16, 8))
        return _merge([body, _move(handle, (0.33, 0.0, 0.36), rot=_rot_x(np.pi / 2))])
    if category == "table":
        parts = [_box(1.2, 0.8, 0.06, (0.0, 0.0, 0.72))]
        for sx in (-1, 1):
            for sy in (-1, 1):
                parts.append(_cylinder(0.035, 0.69, (sx * 0.52, sy * 0.33, 0.0), res=10))
        return _merge(parts)
    if category == "chair":
        parts = [_box(0.5, 0.5, 0.05, (0.0, 0.0, 0.45)), _box(0.05, 0.5, 0.5, (-0.225, 0.0, 0.72))]
        for sx in (-1, 1):
            for sy in (-1, 1):
                parts.append(_box(0.05, 0.05, 0.43, (sx * 0.2, sy * 0.2, 0.215)))
        return _merge(parts)
    if category == "lamp":
        shade = lathe([(0.28, 0.62), (0.15, 0.95), (0.0, 0.95)], 24)
        return _merge([_cylinder(0.22, 0.05, (0.0, 0.0, 0.0)), _cylinder(0.025, 0.85, (0.0, 0.0, 0.05), res=10),
                       shade])
    if category == "snowman":
        nose = _move(_cone(0.04, 0.16, (0.0, 0.0, 0.0), res=10), (0.11, 0.0, 0.93), rot=_rot_y(np.pi / 2))
        return _merge([_sphere(0.3, (0.0, 0.0, 0.3)), _sphere(0.21, (0.0, 0.0, 0.75)),
                       _sphere(0.14, (0.0, 0.0, 1.06)), nose])
    if category == "mushroom":
        stem = lathe([(0.0, 0.0), (0.16, 0.0), (0.12, 0.2), (0.11, 0.45), (0.0, 0.45)], 20)
        theta = np.linspace(0.0, np.pi / 2, 8)
        dome = [(0.0, 0.4), (0.45, 0.4)] + [(0.45 * np.cos(a), 0.4 + 0.35 * np.sin(a)) for a in theta]
        return _merge([stem, lathe(dome, 28)])
    if category == "tree":
        return _merge([_cylinder(0.08, 0.3, (0.0, 0.0, 0.0), res=12), _cone(0.4, 0.5, (0.0, 0.0, 0.25)),
                       _cone(0.32, 0.45, (0.0, 0.0, 0.5)), _cone(0.22, 0.4, (0.0, 0.0, 0.75))])
    if category == "bench":
        return _merge([_box(1.2, 0.35, 0.06, (0.0, 0.0, 0.42)), _box(0.06, 0.3, 0.39, (-0.5, 0.0, 0.195)),
                       _box(0.06, 0.3, 0.39, (0.5, 0.0, 0.195)), _box(1.2, 0.04, 0.3, (0.0, -0.16, 0.65))])
    raise ValueError(f"unknown category {category!r}; known: {', '.join(CATEGORIES)}")


@lru_cache(maxsize=None)
def _normalised(category: str) -> Mesh:
    v, t = _build(category)
    lo, hi = v.min(0), v.max(0)
    v = v - np.array([(lo[0] + hi[0]) / 2, (lo[1] + hi[1]) / 2, lo[2]])
    v = v * (NOMINAL_SIZE[category] / float((hi - lo).max()))
    v.setflags(write=False)
    t.setflags(write=False)
    return v, t


def category_mesh(category: str) -> Mesh:
    """The canonical mesh of ``category``: (vertices float64 [V, 3], triangles int32 [T, 3]).

    Object frame: z up, base on z = 0, footprint centred on the z axis, largest extent = ``NOMINAL_SIZE``.
    The arrays are read-only (cached); transform copies.
    """
    if category not in NOMINAL_SIZE:
        raise ValueError(f"unknown category {category!r}; known: {', '.join(CATEGORIES)}")
    return _normalised(category)


# --------------------------------------------------------------------------------------------------------------
# Colours and textures


def secondary_colour(rgb: np.ndarray) -> np.ndarray:
    """The pattern colour that goes with a primary colour: darker for light colours, lighter for dark ones.

    Args:
        rgb: [..., 3] linear RGB in [0, 1].
    Returns:
        [..., 3] RGB in [0, 1]; the primary colour stays dominant so the named colour still describes the object.
    """
    rgb = np.asarray(rgb, dtype=np.float64)
    luma = rgb @ np.array([0.299, 0.587, 0.114])
    dark = rgb * 0.45
    light = rgb * 0.45 + 0.55
    return np.where((luma > 0.45)[..., None], dark, light)


def _hash01(ix: np.ndarray, iy: np.ndarray, iz: np.ndarray, seed: np.ndarray) -> np.ndarray:
    """Deterministic hash of integer lattice points (int64 arrays) to floats in [0, 1)."""
    h = (ix.astype(np.uint64) * np.uint64(0x8DA6B343) ^ iy.astype(np.uint64) * np.uint64(0xD8163841)
         ^ iz.astype(np.uint64) * np.uint64(0xCB1AB31F) ^ seed.astype(np.uint64) * np.uint64(0x9E3779B1))
    h &= np.uint64(0xFFFFFFFF)
    h ^= h >> np.uint64(15)
    h = (h * np.uint64(0x2C1B3C6D)) & np.uint64(0xFFFFFFFF)
    h ^= h >> np.uint64(12)
    h = (h * np.uint64(0x297A2D39)) & np.uint64(0xFFFFFFFF)
    h ^= h >> np.uint64(15)
    return h.astype(np.float64) / 4294967296.0


def value_noise(q: np.ndarray, seed: np.ndarray) -> np.ndarray:
    """Smooth 3-D value noise in [0, 1].

    Args:
        q: [M, 3] points in lattice units (one lattice cell = one noise feature).
        seed: [M] integer seed per point (different surfaces get different noise).
    Returns:
        [M] float64, trilinear interpolation of hashed lattice values with a smoothstep fade.
    """
    base = np.floor(q)
    f = q - base
    f = f * f * (3.0 - 2.0 * f)
    b = base.astype(np.int64)
    out = np.zeros(len(q), dtype=np.float64)
    for dx in (0, 1):
        wx = f[:, 0] if dx else 1.0 - f[:, 0]
        for dy in (0, 1):
            wy = f[:, 1] if dy else 1.0 - f[:, 1]
            for dz in (0, 1):
                wz = f[:, 2] if dz else 1.0 - f[:, 2]
                out += wx * wy * wz * _hash01(b[:, 0] + dx, b[:, 1] + dy, b[:, 2] + dz, seed)
    return out


def texture_weight(kind: np.ndarray, q: np.ndarray, scale: np.ndarray, axis: np.ndarray,
                   seed: np.ndarray) -> np.ndarray:
    """Weight of the secondary colour for solid procedural textures, vectorised over points.

    Args:
        kind: [M] int texture code (index into :data:`SURFACE_TEXTURES`; photo points get weight 0).
        q: [M, 3] hit points in the surface's texture frame (object frame plus a phase offset), metres.
        scale: [M] pattern period in metres.
        axis: [M, 3] unit axis for stripes.
        seed: [M] int seed for noise.
    Returns:
        [M] weights in [0, 1] (0 = primary colour), in the dtype of ``q``.
    """
    w = np.zeros(len(q), dtype=q.dtype)
    u = q / scale[:, None]
    sel = kind == TEXTURES.index("checker")
    if sel.any():
        np.place(w, sel, (np.floor(np.compress(sel, u, axis=0)).astype(np.int64).sum(1) % 2).astype(w.dtype))
    sel = kind == TEXTURES.index("stripes")
    if sel.any():
        proj = np.einsum("ij,ij->i", np.compress(sel, u, axis=0), np.compress(sel, axis, axis=0))
        np.place(w, sel, (np.floor(proj).astype(np.int64) % 2).astype(w.dtype))
    sel = kind == TEXTURES.index("dots")
    if sel.any():
        us = np.compress(sel, u, axis=0)
        off = us - np.round(us)
        np.place(w, sel, (np.einsum("ij,ij->i", off, off) < 0.33 ** 2).astype(w.dtype))
    sel = kind == TEXTURES.index("noise")
    if sel.any():
        n = value_noise(np.compress(sel, u, axis=0) * 2.0, np.compress(sel, seed))
        np.place(w, sel, np.clip((n - 0.35) * 2.5, 0.0, 1.0).astype(w.dtype))
    return w
