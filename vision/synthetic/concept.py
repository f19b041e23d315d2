"""Synthetic splits for concept prompts: every instance of a phrase, with near-category distractors, objects
outside every phrase, entries, exits and long occlusions (issue 29's data).

A concept scene holds 1 or 2 *target* categories (the phrases, from :data:`TARGET_PHRASES`) with 2-6 instances each
(same category, distinct colours, random textures), 1-2 *near* distractors (a category of :data:`NEAR_CATEGORIES`
of one of its targets; 2-4 in ``near`` mode) and 0-2 objects *outside* every phrase (:data:`OUTSIDE_CATEGORIES`).
It is rendered by :func:`vision.synthetic.render.render_scene` in the room of :mod:`vision.synthetic.scenes`, and
written as that module's COCO-video splits are (same ids, tracks, captions, cameras, depth), plus per video
``concepts`` (the ids of the target categories AND of one phrase with no object in the scene: a negative phrase)
and ``info.near_categories`` (:data:`NEAR_CATEGORIES` restricted to the phrases queried in the split).

Modes (:data:`CONCEPT_MODES`), all with S views:

- ``video``: ordered. The camera stands outside the layout (slowly orbiting) and *pans*: its look-at direction
  turns from one side of the targets (about their median bearing) across to the other side and back (``sin``
  profile), so instances on the far side enter late and instances on the first side leave and come back.
- ``near``: as ``video`` with 2-4 near-category distractors.
- ``unordered``: views spread over 90-150 degrees around the layout in random order (``ordered: false``), from
  :mod:`vision.synthetic.scenes`'s unordered camera sampler.
- ``occlusion``: ordered orbit (50-170 degrees in all) around a large occluder: a cube (outside every phrase)
  scaled to a 1.0-1.3 m block, placed first so the layout surrounds it, then moved with the layout so it stands at
  the orbit's centre; the cameras look at it from as close as keeps it under about 70% of the image width. The
  orbit is centred on the line from the target instance it can hide longest through the block and sized from the
  arc over which the block covers it, so that instance disappears behind the block for a run of frames (typically
  a third to two thirds of them) in the middle of the video and comes back after it.

Sizes: camera distances follow the layout's extent as in :mod:`vision.synthetic.scenes`; at 64 px an instance is
typically 5-20 px across. Seeds: scene ``index`` of split ``name`` is drawn from
:func:`vision.synthetic.scenes.scene_seed` ``(seed, name, index)``; the same arguments give byte-identical files.
Conventions (world frame, cameras, depth, instance ids) are those of :mod:`vision.synthetic.render`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

import numpy as np

from vision.errors import InputError
from vision.synthetic.objects import CATEGORIES, COLOUR_NAMES, NOMINAL_SIZE, TEXTURES, category_mesh
from vision.synthetic.render import ROOM_HALF, ObjectSpec, Scene, SceneSpec, look_at, render_scene
from vision.synthetic.scenes import (_SPLIT_NAME, DEFAULT_VOCAB, FRAME_INFO, _camera_poses, _check_args, _intrinsics,
                                     _object_style, _place_objects, _room, add_scene, caption_for, scene_seed)

__all__ = ["TARGET_PHRASES", "NEAR_CATEGORIES", "OUTSIDE_CATEGORIES", "OCCLUDER_CATEGORY", "CONCEPT_MODES", "ROLES",
           "ConceptSpec", "sample_concept_spec", "generate_concept_scene", "visibility_events",
           "write_concept_split"]

#: For each target phrase (an in-vocabulary category of :data:`vision.synthetic.scenes.DEFAULT_VOCAB`), its close
#: cousins: categories that look alike at 64 px (a mug's body is a cylinder, a bowl is a short open vessel; a
#: bench and a table are boards on legs like a chair; ...). No target is a near category of another, so a
#: distractor is never an instance of any phrase.
NEAR_CATEGORIES: dict[str, tuple[str, ...]] = {
    "mug": ("bowl", "cylinder"),
    "bottle": ("vase", "cylinder"),
    "chair": ("bench", "table"),
    "sphere": ("capsule", "snowman"),
    "cone": ("pyramid", "tree"),
}
#: The phrases a scene's targets (and its negative phrase) are drawn from.
TARGET_PHRASES: tuple[str, ...] = tuple(NEAR_CATEGORIES)
#: Categories neither a phrase nor a near category of one: the objects outside every phrase.
OUTSIDE_CATEGORIES: tuple[str, ...] = tuple(
    c for c in CATEGORIES if c not in NEAR_CATEGORIES and not any(c in near for near in NEAR_CATEGORIES.values()))
#: The category of ``occlusion`` mode's large occluder (scaled up into a block).
OCCLUDER_CATEGORY = "cube"
CONCEPT_MODES = ("video", "unordered", "occlusion", "near")
#: What each object of a concept scene is there for.
ROLES = ("target", "near", "outside", "occluder")

#: Side (metres) of the occluder block.
OCCLUDER_SIDE = (1.0, 1.3)


@dataclass(frozen=True)
class ConceptSpec:
    """A sampled concept scene: ``spec`` (what the renderer draws), ``targets`` (the phrases with instances in the
    scene, in draw order), ``negative`` (a phrase of the pool with no object in the scene), ``roles`` (one of
    :data:`ROLES` per object of ``spec.objects``) and ``mode`` (one of :data:`CONCEPT_MODES`)."""

    spec: SceneSpec
    targets: tuple[str, ...]
    negative: str
    roles: tuple[str, ...]
    mode: str


def _check_phrases(phrases: Iterable[str]) -> tuple[str, ...]:
    """The phrase pool in :data:`TARGET_PHRASES` order; at least two (a scene's targets plus a negative)."""
    if isinstance(phrases, str):
        raise InputError(f"phrases: expected a list of phrases, got the string {phrases!r}")
    names = list(phrases)
    for name in names:
        if name not in NEAR_CATEGORIES:
            raise InputError(f"phrases: unknown phrase {name!r}; known: {', '.join(TARGET_PHRASES)}")
    pool = tuple(p for p in TARGET_PHRASES if p in names)
    if len(pool) < 2:
        raise InputError(f"phrases: need at least 2 distinct phrases (targets and a negative), got {names!r}")
    return pool


def _check_mode(mode: str) -> str:
    """The renderer's mode (``video`` = ordered, ``unordered``) of a concept mode."""
    if mode not in CONCEPT_MODES:
        raise InputError(f"mode must be one of {', '.join(CONCEPT_MODES)}, got {mode!r}")
    return "unordered" if mode == "unordered" else "video"


def _draft(rng: np.random.Generator, category: str, colour: str, scale: float | None = None) -> dict:
    """An object's look, size and pose (position still missing), drawn from ``rng`` in a fixed order."""
    texture = "plain" if rng.uniform() < 0.55 else TEXTURES[1 + int(rng.integers(len(TEXTURES) - 1))]
    drawn = float(rng.uniform(0.8, 1.2))
    scale = drawn if scale is None else scale
    yaw = float(rng.uniform(0.0, 2 * np.pi))
    v, _ = category_mesh(category)
    return {"category": category, "colour_name": colour, "texture": texture, "scale": scale, "yaw": yaw,
            "radius": float(np.sqrt((v[:, :2] ** 2).sum(1)).max() * scale), "height": float(v[:, 2].max() * scale),
            "caption": caption_for(colour, texture, category), "style": _object_style(rng, colour, texture)}


def _pan_poses(rng: np.random.Generator, views: int, target: np.ndarray, distance: float, fov: float,
               extent: float, points: np.ndarray) -> np.ndarray:
    """Extrinsics [S, 3, 4] of ``video`` / ``near`` mode: a camera at horizontal ``distance`` from ``target``
    (orbiting 0.5-1.5 degrees per frame) whose look-at direction pans by ``A * sin(theta)`` about the median
    bearing of ``points`` [M, 2] (the target instances' x, y, seen from the first camera position), theta going
    linearly from -0.5..-0.4 pi (looking to one side) through pi/2 (the other side) to 1.3..1.5 pi (back to the
    first side). ``A = h + c * alpha`` (``h`` the half field of view, ``alpha`` the half
    angle the layout of radius ``extent`` subtends, c in [0, 0.3]), so that at the start the targets on the other
    side of the median are out of view (late entries) and at the turn those on the first side are (exits, and
    returns on the way back)."""
    frames = np.arange(views, dtype=np.float64)
    t = frames / max(views - 1, 1)
    az0 = rng.uniform(0.0, 2 * np.pi)
    drift = np.radians(rng.uniform(0.5, 1.5)) * (1.0 if rng.uniform() < 0.5 else -1.0)
    elev = np.radians(rng.uniform(20.0, 32.0))
    sign = 1.0 if rng.uniform() < 0.5 else -1.0
    theta0 = rng.uniform(-0.5, -0.4) * np.pi
    theta = theta0 + (rng.uniform(1.3, 1.5) * np.pi - theta0) * t
    half_fov = np.radians(fov) / 2.0
    alpha = np.arcsin(min(extent / distance, 0.95))
    amplitude = half_fov + alpha * rng.uniform(0.0, 0.3)
    eye0 = target[:2] + distance * np.array([np.cos(az0), np.sin(az0)])
    bearing = np.arctan2(points[:, 1] - eye0[1], points[:, 0] - eye0[0]) - (az0 + np.pi)
    centre = float(np.median((bearing + np.pi) % (2 * np.pi) - np.pi))
    pan = centre + sign * amplitude * np.sin(theta)
    az = az0 + drift * frames
    eyes = np.stack([target[0] + distance * np.cos(az), target[1] + distance * np.sin(az),
                     np.full(views, target[2] + distance * np.tan(elev))], 1)
    yaw = az + np.pi + pan
    looks = np.stack([eyes[:, 0] + distance * np.cos(yaw), eyes[:, 1] + distance * np.sin(yaw),
                      np.full(views, target[2])], 1)
    return np.stack([look_at(e, g) for e, g in zip(eyes, looks)], 0)


def _occlusion_poses(rng: np.random.Generator, views: int, target: np.ndarray, distance: float,
                     hidden: np.ndarray, occluder: np.ndarray, clearance: float) -> np.ndarray:
    """Extrinsics [S, 3, 4] of ``occlusion`` mode: an orbit arc at horizontal ``distance`` around ``target``
    (looking at it, elevation 12-22 degrees) past the arc of azimuths from which the floor-plane segment camera ->
    ``hidden`` (x, y) passes within ``clearance`` of ``occluder`` (x, y) (found by a 0.5-degree scan around the
    azimuth where the ray from ``hidden`` through ``occluder`` leaves the orbit circle). The orbit spans that arc
    divided by f in [0.25, 0.4] (clipped to 50-170 degrees), the arc's middle at a fraction 0.4-0.6 of the video.
    ``clearance`` (the block's half side minus the instance's radius) underestimates the arc (a turned block and
    a partly hidden instance of a few pixels cover more), so ``hidden`` is typically out of sight for 1.5 f of the
    views in the middle of the video, in sight before and after."""
    frames = np.arange(views, dtype=np.float64)
    t = frames / max(views - 1, 1)
    d = occluder - hidden
    d /= np.linalg.norm(d)
    p = hidden - target[:2]
    pd = float(p @ d)
    s = -pd + np.sqrt(max(pd * pd - float(p @ p) + distance * distance, 0.0))
    hit = p + s * d
    az_mid = float(np.arctan2(hit[1], hit[0]))

    def covered(az: float) -> bool:
        cam = target[:2] + distance * np.array([np.cos(az), np.sin(az)])
        seg = cam - hidden
        u = np.clip(float((occluder - hidden) @ seg) / float(seg @ seg), 0.0, 1.0)
        return bool(np.linalg.norm(hidden + u * seg - occluder) < clearance)

    steps = np.radians(np.arange(0.0, 90.0, 0.5))
    ends = []
    for sign in (1.0, -1.0):  # the covered arc's ends on either side of az_mid (0 where az_mid is not covered)
        end = 0.0
        for a in steps if covered(az_mid) else ():
            if not covered(az_mid + sign * a):
                break
            end = sign * a
        ends.append(end)
    centre = az_mid + (ends[0] + ends[1]) / 2.0
    span = np.clip((ends[0] - ends[1]) / rng.uniform(0.25, 0.4), np.radians(50.0), np.radians(170.0))
    span *= 1.0 if rng.uniform() < 0.5 else -1.0
    az = centre + span * (t - rng.uniform(0.4, 0.6))
    elev = np.radians(rng.uniform(12.0, 22.0))
    eyes = np.stack([target[0] + distance * np.cos(az), target[1] + distance * np.sin(az),
                     np.full(views, target[2] + distance * np.tan(elev))], 1)
    return np.stack([look_at(e, target) for e in eyes], 0)


def sample_concept_spec(rng: np.random.Generator, views: int, size: int, mode: str = "video",
                        phrases: Iterable[str] = TARGET_PHRASES) -> ConceptSpec:
    """Draw a concept scene (objects and their roles, room, light, cameras) from ``rng``.

    Args:
        rng: the random generator (consumed in a fixed order, so the same state gives the same scene).
        views: S; size: image width = height in pixels; mode: one of :data:`CONCEPT_MODES`.
        phrases: the pool of target phrases (at least two, from :data:`TARGET_PHRASES`); 1 or 2 of them get
            instances, and the negative phrase is drawn from the rest.

    Returns:
        :class:`ConceptSpec`. Objects are numbered in the order occluder (``occlusion`` mode only), target
        instances (grouped by target), near distractors, outside objects.
    """
    scene_mode = _check_mode(mode)
    _check_args(views, size, scene_mode, 1, 1)
    pool = _check_phrases(phrases)
    n_targets = 1 + int(rng.integers(min(2, len(pool) - 1)))  # leaves a phrase for the negative
    picked = rng.permutation(len(pool))
    targets = tuple(pool[i] for i in picked[:n_targets])
    absent = [pool[i] for i in picked[n_targets:]]
    negative = absent[int(rng.integers(len(absent)))]

    drafts: list[dict] = []
    roles: list[str] = []
    if mode == "occlusion":
        side = float(rng.uniform(*OCCLUDER_SIDE))
        colour = COLOUR_NAMES[int(rng.integers(len(COLOUR_NAMES)))]
        drafts.append(_draft(rng, OCCLUDER_CATEGORY, colour, scale=side / NOMINAL_SIZE[OCCLUDER_CATEGORY]))
        roles.append("occluder")
    for phrase in targets:
        count = int(rng.integers(2, 7))
        colours = rng.permutation(len(COLOUR_NAMES))[:count]  # distinct colours within a phrase
        for c in colours:
            drafts.append(_draft(rng, phrase, COLOUR_NAMES[int(c)]))
            roles.append("target")
    n_near = int(rng.integers(2, 5)) if mode == "near" else int(rng.integers(1, 3))
    for _ in range(n_near):
        near = NEAR_CATEGORIES[targets[int(rng.integers(len(targets)))]]
        category = near[int(rng.integers(len(near)))]
        drafts.append(_draft(rng, category, COLOUR_NAMES[int(rng.integers(len(COLOUR_NAMES)))]))
        roles.append("near")
    for _ in range(int(rng.integers(3))):
        category = OUTSIDE_CATEGORIES[int(rng.integers(len(OUTSIDE_CATEGORIES)))]
        drafts.append(_draft(rng, category, COLOUR_NAMES[int(rng.integers(len(COLOUR_NAMES)))]))
        roles.append("outside")

    positions = _place_objects(rng, [d["radius"] for d in drafts])
    if mode == "occlusion":  # the block in the middle: the cameras orbit it and look at it
        positions = [(x - positions[0][0], y - positions[0][1]) for x, y in positions]
    objects = tuple(ObjectSpec(instance_id=k + 1, position=pos, **d)
                    for k, (d, pos) in enumerate(zip(drafts, positions)))
    extent = max(np.hypot(*o.position) + o.radius for o in objects)
    floor, walls, light = _room(rng)
    fov = float(rng.uniform(50.0, 60.0))
    target = np.array([0.0, 0.0, float(rng.uniform(0.12, 0.25))])
    distance = extent / np.sin(np.radians(fov) / 2.0) * float(rng.uniform(0.72, 0.9))
    if mode == "occlusion":  # as close as keeps the block under ~70% of the image width, outside the layout
        distance = max(objects[0].radius / np.tan(np.radians(0.35 * fov)), extent + 0.4)
    distance = float(np.clip(distance, 1.2, ROOM_HALF - 0.6))
    if mode == "unordered":
        extrinsics = _camera_poses(rng, views, "unordered", target, distance)
    elif mode == "occlusion":
        half = objects[0].scale * NOMINAL_SIZE[OCCLUDER_CATEGORY] / 2.0
        occ_xy = np.asarray(objects[0].position)
        # the target instance with the widest hidden angle: asin((block half-side - own radius) / distance)
        cover = [(half - o.radius) / np.hypot(*(np.asarray(o.position) - occ_xy)) if r == "target" else -np.inf
                 for o, r in zip(objects, roles)]
        k = int(np.argmax(cover))
        extrinsics = _occlusion_poses(rng, views, target, distance, np.asarray(objects[k].position), occ_xy,
                                      half - objects[k].radius)
    else:
        points = np.array([o.position for o, r in zip(objects, roles) if r == "target"])
        extrinsics = _pan_poses(rng, views, target, distance, fov, extent, points)
    K = np.repeat(_intrinsics(size, fov)[None], views, 0)
    spec = SceneSpec(objects=objects, floor=floor, walls=walls, light=light, K=K, extrinsics=extrinsics,
                     width=size, height=size, mode=scene_mode, target=tuple(float(x) for x in target))
    return ConceptSpec(spec=spec, targets=targets, negative=negative, roles=tuple(roles), mode=mode)


def generate_concept_scene(rng_seed: int | np.random.SeedSequence | np.random.Generator, views: int, size: int,
                           mode: str = "video", phrases: Iterable[str] = TARGET_PHRASES,
                           threads: int = 0) -> tuple[ConceptSpec, Scene]:
    """Sample (:func:`sample_concept_spec`) and render one concept scene.

    Args:
        rng_seed: an int seed, a SeedSequence (e.g. from :func:`vision.synthetic.scenes.scene_seed`) or a Generator.
        views: S; size: H = W in pixels; mode: one of :data:`CONCEPT_MODES`; phrases: the phrase pool.
        threads: open3d ray-casting threads (0 = all cores); results do not depend on it.

    Returns:
        (the sampled :class:`ConceptSpec`, the rendered :class:`vision.synthetic.render.Scene`).
    """
    rng = rng_seed if isinstance(rng_seed, np.random.Generator) else np.random.default_rng(rng_seed)
    concept = sample_concept_spec(rng, views, size, mode, phrases)
    return concept, render_scene(concept.spec, threads=threads)


def visibility_events(visible_area: np.ndarray, amodal_area: np.ndarray) -> dict[str, np.ndarray]:
    """What happens to each instance along the views, from a rendered scene's areas.

    Args:
        visible_area: int [S, N] pixels where each instance is the first hit (an instance is *visible* on a view
            where this is > 0, as it is annotated there); amodal_area: int [S, N] pixels whose ray meets it at all.

    Returns:
        per instance, arrays [N]: ``seen`` (bool, visible on some view), ``first`` (int, first visible view; S if
        never), ``late_entry`` (bool, seen and first > 0), ``exit_return`` (bool, a run of views where it is not
        visible lies between two views where it is), ``occluded_run`` (int, the longest such run during which it
        stays inside the image, amodal > 0 on every view: hidden by something else, then back; 0 if none).
    """
    visible = np.asarray(visible_area) > 0
    inside = np.asarray(amodal_area) > 0
    s, n = visible.shape
    seen = visible.any(0)
    first = np.where(seen, visible.argmax(0), s)
    exit_return = np.zeros(n, dtype=bool)
    occluded = np.zeros(n, dtype=np.int64)
    for k in range(n):
        frames = np.flatnonzero(visible[:, k])
        for a, b in zip(frames[:-1], frames[1:]):
            if b - a > 1:
                exit_return[k] = True
                if inside[a + 1:b, k].all():
                    occluded[k] = max(occluded[k], b - a - 1)
    return {"seen": seen, "first": first, "late_entry": seen & (first > 0), "exit_return": exit_return,
            "occluded_run": occluded}


def _category_split(name: str) -> str:
    return next(key for key, names in DEFAULT_VOCAB.items() if name in names)


def write_concept_split(out_dir: str | Path, split_name: str, scenes: int, views: int, size: int,
                        mode: str = "video", seed: int = 0, *, phrases: Iterable[str] = TARGET_PHRASES,
                        progress: bool = False, threads: int = 0) -> Path:
    """Render ``scenes`` concept scenes and write ``out_dir/split_name.json`` plus its files under
    ``out_dir/split_name/``, through :func:`vision.data.coco.write_split` (validated; files as
    :func:`vision.synthetic.scenes.write_split` writes them).

    Args:
        out_dir: the folder of the split JSON; every file name in the JSON is relative to it.
        split_name: letters, digits, ``_ . -``; it also salts the scene seeds (``scene_seed(seed, split_name, i)``).
        scenes: number of scenes (one ``videos`` entry each); views: S images per scene; size: H = W pixels.
        mode: one of :data:`CONCEPT_MODES`. seed: non-negative base seed.
        phrases: the phrase pool (default :data:`TARGET_PHRASES`). progress: tqdm bar. threads: ray-casting threads.

    Returns:
        The path of the JSON file. Categories: every phrase of the pool, its near categories and
        :data:`OUTSIDE_CATEGORIES` (ids ``CATEGORIES.index(name) + 1`` as in every synthetic split, ``split`` from
        the default vocabulary). Each video has ``concepts``: sorted ids of its target phrases and its negative
        phrase. ``info.near_categories``: :data:`NEAR_CATEGORIES` for the phrases queried on some video.
    """
    from vision.data.coco import write_split as write_coco_split

    if not isinstance(split_name, str) or not _SPLIT_NAME.match(split_name):
        raise InputError(f"split name must match {_SPLIT_NAME.pattern}, got {split_name!r}")
    if isinstance(scenes, bool) or not isinstance(scenes, (int, np.integer)) or scenes < 1:
        raise InputError(f"scenes must be an integer >= 1, got {scenes!r}")
    _check_args(views, size, _check_mode(mode), 1, 1)
    pool = _check_phrases(phrases)
    scene_seed(seed, split_name, 0)  # validates the seed
    names = set(pool) | {c for p in pool for c in NEAR_CATEGORIES[p]} | set(OUTSIDE_CATEGORIES)
    used = [c for c in CATEGORIES if c in names]
    category_ids = {c: CATEGORIES.index(c) + 1 for c in used}
    out_dir = Path(out_dir)

    first_ids = {"image": 1, "annotation": 1, "track": 1}
    videos, images, annotations, tracks = [], [], [], []
    queried: set[str] = set()
    indices: Iterable[int] = range(scenes)
    if progress:
        from tqdm import tqdm
        indices = tqdm(indices, desc=f"concept {split_name}", unit="scene")
    for index in indices:
        concept, scene = generate_concept_scene(scene_seed(seed, split_name, index), views, size, mode, pool, threads)
        video = add_scene(out_dir, scene, index, split_name, first_ids, category_ids, videos, images, annotations,
                          tracks)
        asked = (*concept.targets, concept.negative)
        queried.update(asked)
        video["concepts"] = sorted(category_ids[p] for p in asked)
    phrases_used = [p for p in pool if p in queried]
    dataset = {
        "info": {
            "description": "vision synthetic concept scenes (open3d ray casting)",
            "generator": "vision.synthetic.concept",
            "version": 1,
            "arguments": {"split": split_name, "scenes": int(scenes), "views": int(views), "size": int(size),
                          "mode": mode, "seed": int(seed), "phrases": list(pool)},
            "vocabulary": phrases_used,
            "near_categories": {p: list(NEAR_CATEGORIES[p]) for p in phrases_used},
            "colors": list(COLOUR_NAMES),
            "textures": list(TEXTURES),
            **FRAME_INFO,
        },
        "videos": videos,
        "images": images,
        "annotations": annotations,
        "tracks": tracks,
        "categories": [{"id": category_ids[c], "name": c, "split": _category_split(c)} for c in used],
    }
    json_path = out_dir / f"{split_name}.json"
    write_coco_split(json_path, dataset, check_files=True)
    return json_path
