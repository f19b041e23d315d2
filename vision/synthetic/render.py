"""CPU ray-casting renderer of synthetic scenes (open3d ``RaycastingScene``; no GL).

World frame of a scene: metres, z up, the floor is the plane z = 0, the room is the square
[-ROOM_HALF, ROOM_HALF]^2 with walls of height ROOM_HEIGHT. Cameras follow OpenCV: x right, y down, z forward;
extrinsics are camera-from-world [R | t] (3x4), intrinsics K (3x3), and integer pixel coordinates (u, v) are pixel
centres. Depth is the metric z of the hit point in the camera frame (0 where a ray leaves the room, i.e. hits
nothing). Instance id 0 is the background (floor, walls, sky); objects are numbered 1..N.

Shading is Lambertian under one point light plus an ambient term, with hard cast shadows from one batch of
shadow rays per view. Surfaces carry solid procedural textures (see :mod:`vision.synthetic.objects`) or
photographs (texture ``"photo"``, :mod:`vision.synthetic.photos`) laid on with a planar mapping: the floor by
(x, y), a wall by (its horizontal coordinate, -z), an object by a box (hard triplanar) mapping in its own frame
(each point projected along the axis its normal is closest to). A scene may also carry a
:class:`Photometric` jitter (light colour, brightness, contrast, gamma, sensor noise) applied when it is rendered.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import open3d as o3d

from vision.synthetic.objects import PHOTO, SURFACE_TEXTURES, category_mesh, texture_weight

__all__ = ["ROOM_HALF", "ROOM_HEIGHT", "ObjectSpec", "SurfaceStyle", "Photometric", "SceneSpec", "Scene", "look_at",
           "object_mesh", "render_scene"]

ROOM_HALF = 5.0
ROOM_HEIGHT = 3.5
AMBIENT = 0.32
DIFFUSE = 0.78
SKY = np.array([0.70, 0.80, 0.95])


@dataclass(frozen=True)
class SurfaceStyle:
    """Colour and texture of one surface.

    colour / colour2: primary / secondary RGB in [0, 1]; texture: a name in ``SURFACE_TEXTURES``; scale: pattern
    period (metres); axis: stripe direction in the texture frame; phase: offset added to texture coordinates
    (metres); seed: noise seed.

    Photo surfaces (``texture="photo"``): photo: index into :data:`vision.synthetic.photos.PHOTO_SOURCES`;
    photo_scale: metres covered by the photo's longer side; photo_offset: shift of the photo in texture space, in
    units of its longer side; photo_rotation: rotation (radians) of the photo in its mapping plane; photo_tint: 0
    shows the photo's own colours, 1 shows ``colour`` modulated by the photo's luminance (normalised by its mean,
    so the surface's mean brightness stays that of ``colour``), linear in between.
    """

    colour: tuple[float, float, float]
    colour2: tuple[float, float, float]
    texture: str = "plain"
    scale: float = 0.1
    axis: tuple[float, float, float] = (0.0, 0.0, 1.0)
    phase: tuple[float, float, float] = (0.0, 0.0, 0.0)
    seed: int = 0
    photo: int = -1
    photo_scale: float = 1.0
    photo_offset: tuple[float, float] = (0.0, 0.0)
    photo_rotation: float = 0.0
    photo_tint: float = 0.0


@dataclass(frozen=True)
class Photometric:
    """Per-scene camera / light jitter, applied to every view of a scene in this order.

    light_colour: RGB factors on the lit surfaces' shade (a colour cast of the light; the sky is not lit);
    gamma: ``c <- c ** gamma`` on colours clipped to [0, 1]; contrast, brightness: ``c <- (c - 0.5) * contrast +
    0.5 + brightness``; noise: standard deviation of additive Gaussian sensor noise (in [0, 1] colour units, drawn
    per view from ``numpy.random.default_rng([seed, view index])``), then clipped and quantised to uint8.
    """

    light_colour: tuple[float, float, float] = (1.0, 1.0, 1.0)
    brightness: float = 0.0
    contrast: float = 1.0
    gamma: float = 1.0
    noise: float = 0.0
    seed: int = 0


@dataclass(frozen=True)
class ObjectSpec:
    """One object instance resting on the floor.

    instance_id: 1..N within its scene; category / colour_name / texture name its look; position: (x, y) of the
    footprint centre on the floor (metres); yaw: rotation about z (radians); scale: factor on the category's
    canonical mesh; radius: footprint radius after scaling (metres); height: top z (metres); caption: e.g.
    "the red striped mug"; style: its surface style.
    """

    instance_id: int
    category: str
    colour_name: str
    texture: str
    position: tuple[float, float]
    yaw: float
    scale: float
    radius: float
    height: float
    caption: str
    style: SurfaceStyle

    @property
    def centre(self) -> np.ndarray:
        """World point at the middle of the object's bounding cylinder, [3]."""
        return np.array([self.position[0], self.position[1], self.height / 2.0])


@dataclass(frozen=True)
class SceneSpec:
    """Everything needed to render one scene: objects, room styles, light and cameras.

    K: [S, 3, 3] intrinsics; extrinsics: [S, 3, 4] camera-from-world; width / height in pixels;
    target: the world point the cameras look at, [3]; photometric: optional per-scene jitter (None: none).
    """

    objects: tuple[ObjectSpec, ...]
    floor: SurfaceStyle
    walls: tuple[SurfaceStyle, SurfaceStyle, SurfaceStyle, SurfaceStyle]
    light: tuple[float, float, float]
    K: np.ndarray
    extrinsics: np.ndarray
    width: int
    height: int
    mode: str
    target: tuple[float, float, float] = (0.0, 0.0, 0.0)
    photometric: Photometric | None = None


@dataclass
class Scene:
    """A rendered scene, all arrays in memory.

    rgb: uint8 [S, H, W, 3]; depth: float32 [S, H, W] metric z-depth (0 = no surface); instance_ids: int32
    [S, H, W] (0 = background, k = objects[k - 1]); K: float64 [S, 3, 3]; extrinsics: float64 [S, 3, 4]
    camera-from-world (OpenCV); objects: the instances; visible_area: int64 [S, N] pixels where each instance is
    the first hit; amodal_area: int64 [S, N] pixels whose ray meets the instance at all (in-image, occluders
    ignored); visibility: float32 [S, N] = visible / amodal (0 where amodal is 0).
    """

    rgb: np.ndarray
    depth: np.ndarray
    instance_ids: np.ndarray
    K: np.ndarray
    extrinsics: np.ndarray
    objects: list[ObjectSpec]
    visible_area: np.ndarray
    amodal_area: np.ndarray
    visibility: np.ndarray
    mode: str = "video"
    spec: SceneSpec | None = field(default=None, repr=False)


def look_at(eye: np.ndarray, target: np.ndarray) -> np.ndarray:
    """OpenCV camera-from-world extrinsics [3, 4] of a camera at ``eye`` looking at ``target`` with z up.

    Camera axes: x right, y down (towards world -z on screen), z forward. ``eye`` must not be straight above or
    below ``target``.
    """
    eye = np.asarray(eye, dtype=np.float64)
    forward = np.asarray(target, dtype=np.float64) - eye
    forward /= np.linalg.norm(forward)
    right = np.cross(forward, np.array([0.0, 0.0, 1.0]))
    right /= np.linalg.norm(right)
    down = np.cross(forward, right)
    rot = np.stack([right, down, forward], 0)
    return np.concatenate([rot, (-rot @ eye)[:, None]], 1)


def object_mesh(obj: ObjectSpec) -> tuple[np.ndarray, np.ndarray]:
    """World-space mesh of an object: (vertices float32 [V, 3], triangles uint32 [T, 3])."""
    v, t = category_mesh(obj.category)
    c, s = np.cos(obj.yaw), np.sin(obj.yaw)
    rot = np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])
    world = (v * obj.scale) @ rot.T + np.array([obj.position[0], obj.position[1], 0.0])
    return world.astype(np.float32), t.astype(np.uint32)


def _quad(corners: list[tuple[float, float, float]]) -> tuple[np.ndarray, np.ndarray]:
    return np.asarray(corners, dtype=np.float32), np.array([[0, 1, 2], [0, 2, 3]], dtype=np.uint32)


def _room() -> list[tuple[np.ndarray, np.ndarray]]:
    """Floor (z = 0) and four walls, in that order."""
    a, h = ROOM_HALF, ROOM_HEIGHT
    return [
        _quad([(-a, -a, 0), (a, -a, 0), (a, a, 0), (-a, a, 0)]),
        _quad([(-a, -a, 0), (a, -a, 0), (a, -a, h), (-a, -a, h)]),
        _quad([(a, -a, 0), (a, a, 0), (a, a, h), (a, -a, h)]),
        _quad([(a, a, 0), (-a, a, 0), (-a, a, h), (a, a, h)]),
        _quad([(-a, a, 0), (-a, -a, 0), (-a, -a, h), (-a, a, h)]),
    ]


class _Surfaces:
    """Per-geometry lookup tables (index = open3d geometry id; the last row stands for the sky, i.e. no hit)."""

    def __init__(self, styles: list[SurfaceStyle], origins: np.ndarray, yaws: np.ndarray, instance: np.ndarray):
        self.colour = np.array([s.colour for s in styles], dtype=np.float32)
        self.colour2 = np.array([s.colour2 for s in styles], dtype=np.float32)
        self.kind = np.array([SURFACE_TEXTURES.index(s.texture) for s in styles], dtype=np.int64)
        self.scale = np.array([s.scale for s in styles], dtype=np.float32)
        self.axis = np.array([s.axis for s in styles], dtype=np.float32)
        self.phase = np.array([s.phase for s in styles], dtype=np.float32)
        self.seed = np.array([s.seed for s in styles], dtype=np.int64)
        self.origin = origins.astype(np.float32)
        self.cos, self.sin = np.cos(yaws).astype(np.float32), np.sin(yaws).astype(np.float32)
        self.instance = instance
        self.photo_code = SURFACE_TEXTURES.index(PHOTO)
        self.bank = None
        if (self.kind == self.photo_code).any():
            from vision.synthetic.photos import photo_bank

            self.bank = photo_bank()
            photos = [s.photo for s in styles if s.texture == PHOTO]
            if min(photos) < 0 or max(photos) >= len(self.bank):
                raise ValueError(f"photo index out of range 0..{len(self.bank) - 1}: {photos}")
        self.photo = np.array([s.photo for s in styles], dtype=np.int64)
        self.photo_scale = np.array([s.photo_scale for s in styles], dtype=np.float32)
        self.photo_offset = np.array([s.photo_offset for s in styles], dtype=np.float32)
        self.photo_cos = np.cos([s.photo_rotation for s in styles]).astype(np.float32)
        self.photo_sin = np.sin([s.photo_rotation for s in styles]).astype(np.float32)
        self.photo_tint = np.array([s.photo_tint for s in styles], dtype=np.float32)

    def albedo(self, gid: np.ndarray, points: np.ndarray, normals: np.ndarray | None = None) -> np.ndarray:
        """Textured albedo [M, 3] float32 of points [M, 3] on geometries ``gid`` [M] (index ``len - 1`` = sky).

        ``normals`` [M, 3] (world frame, either orientation) choose the mapping plane of photo surfaces; they are
        needed only when some surface shows a photo."""
        albedo = np.take(self.colour, gid, axis=0)
        kind = np.take(self.kind, gid)
        if not kind.any():
            return albedo
        d = points - np.take(self.origin, gid, axis=0)
        c, s = np.take(self.cos, gid), np.take(self.sin, gid)
        q = np.stack([c * d[:, 0] + s * d[:, 1], c * d[:, 1] - s * d[:, 0], d[:, 2]], 1)
        q += np.take(self.phase, gid, axis=0)
        w = texture_weight(kind, q, np.take(self.scale, gid), np.take(self.axis, gid, axis=0), np.take(self.seed, gid))
        albedo += (np.take(self.colour2, gid, axis=0) - albedo) * w[:, None]
        if self.bank is not None:
            sel = np.flatnonzero(kind == self.photo_code)
            if len(sel):
                if normals is None:
                    raise ValueError("photo surfaces need the hit normals")
                n = np.take(normals, sel, axis=0)
                cs, sn = np.take(c, sel), np.take(s, sel)
                n_obj = np.stack([cs * n[:, 0] + sn * n[:, 1], cs * n[:, 1] - sn * n[:, 0], n[:, 2]], 1)
                albedo[sel] = self._photo_albedo(np.take(gid, sel), np.take(q, sel, axis=0), n_obj)
        return albedo

    def _photo_albedo(self, gid: np.ndarray, q: np.ndarray, n: np.ndarray) -> np.ndarray:
        """Albedo [M, 3] of photo surfaces at texture-frame points q [M, 3] with object-frame normals n [M, 3]:
        box (hard triplanar) mapping: the plane (x, y), (y, -z) or (x, -z) across which the normal's z, x or y
        component is largest in magnitude."""
        from vision.synthetic.photos import LUMA, PHOTO_SIDE, sample_photos

        axis = np.argmax(np.abs(n), axis=1)  # 0: x, 1: y, 2: z
        u = np.where(axis == 0, q[:, 1], q[:, 0])
        v = np.where(axis == 2, q[:, 1], -q[:, 2])
        photo = np.take(self.photo, gid)
        # texture-space rotation and scale folded into one 2x2 matrix per point (pixels per metre), plus offset
        k = np.float32(PHOTO_SIDE) / np.take(self.photo_scale, gid)
        cr, sr = np.take(self.photo_cos, gid) * k, np.take(self.photo_sin, gid) * k
        offset = np.take(self.photo_offset, gid, axis=0) * np.float32(PHOTO_SIDE)
        rgb = sample_photos(self.bank, photo, cr * u - sr * v + offset[:, 0], sr * u + cr * v + offset[:, 1])
        tint = np.take(self.photo_tint, gid)[:, None]
        lum = (rgb @ LUMA) / np.take(self.bank.mean_luminance, photo)
        tinted = np.take(self.colour, gid, axis=0) * np.clip(0.35 + 0.65 * lum, 0.0, 1.8)[:, None]
        return np.clip(tint * tinted + (1.0 - tint) * rgb, 0.0, 1.0)


def _build(spec: SceneSpec) -> tuple[o3d.t.geometry.RaycastingScene, o3d.t.geometry.RaycastingScene, _Surfaces]:
    """The full ray-casting scene, an objects-only scene (for amodal masks) and the surface tables."""
    scene = o3d.t.geometry.RaycastingScene()
    objects_only = o3d.t.geometry.RaycastingScene()
    styles: list[SurfaceStyle] = [spec.floor, *spec.walls]
    meshes = _room() + [object_mesh(o) for o in spec.objects]
    ids = []
    for v, t in meshes:
        ids.append(scene.add_triangles(o3d.core.Tensor(v), o3d.core.Tensor(t)))
    if ids != list(range(len(meshes))):
        raise RuntimeError(f"open3d returned unexpected geometry ids {ids}")
    for k, (v, t) in enumerate(meshes[5:]):
        gid = objects_only.add_triangles(o3d.core.Tensor(v), o3d.core.Tensor(t))
        if gid != k:
            raise RuntimeError(f"open3d returned unexpected geometry id {gid} for object {k}")
    sky = tuple(float(x) for x in SKY)
    styles += [o.style for o in spec.objects] + [SurfaceStyle(colour=sky, colour2=sky)]
    n = len(spec.objects)
    origins = np.zeros((len(meshes) + 1, 3))
    yaws = np.zeros(len(meshes) + 1)
    for k, o in enumerate(spec.objects):
        origins[5 + k, :2] = o.position
        yaws[5 + k] = o.yaw
    instance = np.concatenate([np.zeros(5, dtype=np.int32), np.arange(1, n + 1, dtype=np.int32),
                               np.zeros(1, dtype=np.int32)])
    return scene, objects_only, _Surfaces(styles, origins, yaws, instance)


def _pixel_rays(K: np.ndarray, width: int, height: int) -> np.ndarray:
    """Camera-frame ray directions [H*W, 3] float32 through integer pixel centres, with z = 1 (so a hit
    distance along them equals the z-depth)."""
    u, v = np.meshgrid(np.arange(width, dtype=np.float64), np.arange(height, dtype=np.float64))
    pix = np.stack([u.ravel(), v.ravel(), np.ones(width * height)], 1)
    return (pix @ np.linalg.inv(K).T).astype(np.float32)


def _object_pixels(verts: list[np.ndarray], K: np.ndarray, ext: np.ndarray, width: int, height: int) -> np.ndarray:
    """Indices of the pixels inside the union of the objects' projected vertex boxes (a superset of every pixel
    whose ray can meet an object)."""
    keep = np.zeros((height, width), dtype=bool)
    for v in verts:
        cam = v @ ext[:, :3].T + ext[:, 3]
        if (cam[:, 2] <= 1e-6).any():  # straddles the camera plane: be conservative
            return np.arange(width * height)
        uv = cam[:, :2] / cam[:, 2:3] @ K[:2, :2].T + K[:2, 2]
        x0, y0 = np.floor(uv.min(0)).astype(np.int64) - 1
        x1, y1 = np.ceil(uv.max(0)).astype(np.int64) + 2
        keep[max(y0, 0):max(min(y1, height), 0), max(x0, 0):max(min(x1, width), 0)] = True
    return np.flatnonzero(keep)


def _render_view(scene: o3d.t.geometry.RaycastingScene, objects_only: o3d.t.geometry.RaycastingScene,
                 surf: _Surfaces, verts: list[np.ndarray], light: np.ndarray, d_cam: np.ndarray, sky: np.ndarray,
                 K: np.ndarray, ext: np.ndarray, width: int, height: int, threads: int,
                 photometric: Photometric | None = None, view: int = 0
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """One view (index ``view``): rgb uint8 [H, W, 3], depth float32 [H, W], instance ids int32 [H, W], amodal
    areas [N]."""
    rot = ext[:, :3].astype(np.float32)
    centre = (-ext[:, :3].T @ ext[:, 3]).astype(np.float32)
    n_pix = width * height
    rays = np.empty((n_pix, 6), dtype=np.float32)
    rays[:, :3] = centre
    rays[:, 3:] = d_cam @ rot
    ans = scene.cast_rays(o3d.core.Tensor.from_numpy(rays), nthreads=threads)
    t_hit = ans["t_hit"].numpy()
    hit = np.isfinite(t_hit)
    gid = np.where(hit, ans["geometry_ids"].numpy(), len(surf.kind) - 1).astype(np.int64)
    depth = np.where(hit, t_hit, 0.0).astype(np.float32)
    normals = np.where(hit[:, None], ans["primitive_normals"].numpy(), 0.0).astype(np.float32)
    d = rays[:, 3:]
    points = centre + d * depth[:, None]
    normals *= np.where(np.einsum("ij,ij->i", normals, d) > 0, -1.0, 1.0).astype(np.float32)[:, None]
    to_light = light - points
    ndotl = np.maximum(np.einsum("ij,ij->i", normals, to_light)
                       / np.sqrt(np.einsum("ij,ij->i", to_light, to_light)), 0.0)
    lit_idx = np.flatnonzero(ndotl > 0)
    shadow_rays = np.empty((len(lit_idx), 6), dtype=np.float32)
    shadow_rays[:, :3] = np.take(points, lit_idx, axis=0) + np.take(normals, lit_idx, axis=0) * np.float32(2e-3)
    shadow_rays[:, 3:] = light - shadow_rays[:, :3]
    occluded = scene.test_occlusions(o3d.core.Tensor.from_numpy(shadow_rays), tnear=0.0, tfar=1.0,
                                     nthreads=threads).numpy()
    ndotl[lit_idx[occluded.astype(bool)]] = 0.0
    shade = surf.albedo(gid, points, normals) * (AMBIENT + DIFFUSE * ndotl)[:, None]
    if photometric is not None:
        shade *= np.asarray(photometric.light_colour, dtype=np.float32)
    colour = np.where(hit[:, None], shade, sky)  # rays that leave the room see a vertical sky gradient
    if photometric is not None:
        colour = _jitter(colour, photometric, view)
    rgb = (np.clip(colour, 0.0, 1.0) * 255.0 + 0.5).astype(np.uint8).reshape(height, width, 3)
    inst = np.take(surf.instance, gid)

    n_objects = len(verts)
    amodal = np.zeros(n_objects, dtype=np.int64)
    sub = _object_pixels(verts, K, ext, width, height) if n_objects else np.zeros(0, dtype=np.int64)
    if len(sub):
        lists = objects_only.list_intersections(o3d.core.Tensor.from_numpy(np.ascontiguousarray(rays[sub])),
                                                nthreads=threads)
        counts = np.diff(lists["ray_splits"].numpy().astype(np.int64))
        seen = np.zeros((len(sub), n_objects), dtype=bool)
        seen[np.repeat(np.arange(len(sub)), counts), lists["geometry_ids"].numpy().astype(np.int64)] = True
        amodal = seen.sum(0).astype(np.int64)
    return rgb, depth.reshape(height, width), inst.reshape(height, width), amodal


def _jitter(colour: np.ndarray, p: Photometric, view: int) -> np.ndarray:
    """Gamma, contrast, brightness and sensor noise (see :class:`Photometric`) on colours [M, 3]."""
    c = np.clip(colour, 0.0, 1.0).astype(np.float32) ** np.float32(p.gamma)
    c = (c - np.float32(0.5)) * np.float32(p.contrast) + np.float32(0.5 + p.brightness)
    if p.noise > 0:
        noise = np.random.default_rng([int(p.seed), int(view)]).standard_normal(c.shape, dtype=np.float32)
        c += noise * np.float32(p.noise)
    return c


def render_scene(spec: SceneSpec, threads: int = 0) -> Scene:
    """Ray-cast every view of ``spec``.

    Args:
        spec: the scene description.
        threads: open3d ray-casting threads (0 = open3d's default, all cores). Output does not depend on it.

    Returns:
        :class:`Scene` with S = len(spec.extrinsics) views of size spec.height x spec.width.
    """
    scene, objects_only, surf = _build(spec)
    s, h, w, n = len(spec.extrinsics), spec.height, spec.width, len(spec.objects)
    rgb = np.zeros((s, h, w, 3), dtype=np.uint8)
    depth = np.zeros((s, h, w), dtype=np.float32)
    inst = np.zeros((s, h, w), dtype=np.int32)
    amodal = np.zeros((s, n), dtype=np.int64)
    light = np.asarray(spec.light, dtype=np.float32)
    verts = [object_mesh(o)[0].astype(np.float64) for o in spec.objects]
    sky = np.repeat((SKY[None] * np.linspace(1.0, 0.85, h)[:, None]).astype(np.float32), w, 0)
    d_cam, last_K = None, None
    for i in range(s):
        if last_K is None or not np.array_equal(spec.K[i], last_K):
            d_cam, last_K = _pixel_rays(spec.K[i], w, h), spec.K[i]
        rgb[i], depth[i], inst[i], amodal[i] = _render_view(scene, objects_only, surf, verts, light, d_cam, sky,
                                                            spec.K[i], spec.extrinsics[i], w, h, threads,
                                                            spec.photometric, i)
    visible = np.stack([np.bincount(inst[i].ravel(), minlength=n + 1)[1:] for i in range(s)], 0).astype(np.int64)
    visibility = np.where(amodal > 0, np.minimum(visible / np.maximum(amodal, 1), 1.0), 0.0).astype(np.float32)
    return Scene(rgb=rgb, depth=depth, instance_ids=inst, K=spec.K.copy(), extrinsics=spec.extrinsics.copy(),
                 objects=list(spec.objects), visible_area=visible, amodal_area=amodal, visibility=visibility,
                 mode=spec.mode, spec=spec)
