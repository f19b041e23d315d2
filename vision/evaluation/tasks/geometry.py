"""What ``vision-evaluate --task geometry`` runs: the geometry scorer (depth, pose and point-map figures with their
baselines), its options, the split check and the results validator. Torch-free; SciPy is imported by
:mod:`vision.evaluation.geometry` when scoring."""

from __future__ import annotations

from pathlib import Path
from typing import Any


__all__ = ["OPTIONS", "score_geometry", "check_geometry_parts", "validate_geometry_results", "score", "check_split",
           "check_results"]

#: the options :func:`score_geometry` takes
OPTIONS = frozenset({"split_root", "max_points", "seed"})


def score_geometry(gt: dict, results: list, *, split_file: str | None = None, results_file: str | None = None,
                   **options: Any) -> dict:
    """Depth, pose and point-map figures with their baselines
    (:func:`vision.evaluation.geometry.evaluate_geometry_results`) of the results, validated first
    (:func:`validate_geometry_results`)."""
    from vision.evaluation.geometry import evaluate_geometry_results

    clips = validate_geometry_results(results, gt, results_file, split_file=split_file)
    return evaluate_geometry_results(gt, clips, results_file=results_file, gt_file=split_file, **options)


def check_geometry_parts(dataset: Any, file: str | Path | None = None) -> None:
    """Geometry: ``images`` (as for tracking) and ``videos`` (integer ids); the cameras and depth files of the
    images a result uses are checked by :func:`vision.evaluation.results.validate_geometry_results`."""
    from vision.data.checker import ScalarChecker
    from vision.data.schema import entries as split_entries, scored_images, top_list

    c = ScalarChecker(None if file is None else str(file))
    c.dict_(dataset, "<top level>")
    scored_images(c, dataset)
    split_entries(c, top_list(c, dataset, "videos", required=False), "videos")


def validate_geometry_results(results: list, split: dict, file: str | None = None,
                              split_file: str | None = None) -> dict[tuple[int, ...], list[dict]]:
    """Check the split (:func:`vision.data.schema.validate_scored_parts`, errors naming
    ``split_file``) and the geometry results in
    ``file`` against it; return the clips: ``{clip image ids: [decoded entry per view, in clip order]}``.

    Each result is one image of one clip of S >= 2 views of the split:

    - ``image_id``: the image; ``clip``: the clip's image ids in view order, all of one video of the split, each
      with a ``camera`` (``K``, ``extrinsics``) and a ``depth_file``; every image of a clip has exactly one result
      that names the same clip;
    - ``extrinsics`` (3x4, OpenCV camera-from-world, the world being view 0's camera): the predicted camera;
    - ``depth``: predicted z-depth ``[H, W]`` (any scale: it is median-scaled per image), H = W the side the
      split's images are resized to for scoring; ``world_points``: predicted points ``[H, W, 3]`` in view 0's
      camera frame; both :func:`encode_array` objects;
    - the optional cameras of :data:`GEOMETRY_CAMERA_FIELDS` (3x4 each; every result carries a field or none does):
      ``head_extrinsics``, the camera head's when ``extrinsics`` are solved ones; ``match_extrinsics``, the camera
      registered from learned matches; ``ray_extrinsics``, the camera fitted to a predicted ray map.

    The decoded entries carry ``depth`` and ``world_points`` as float32 arrays, the cameras as float64 arrays and
    ``index``, the entry's place in ``results`` (for messages). A camera's left 3x3 must be a rotation (within
    :data:`ROTATION_TOLERANCE`): relative poses are scored as rotations.
    """
    from vision.evaluation.results import GEOMETRY_CAMERA_FIELDS, ResultsChecker, camera_matrix, decode_array

    check_geometry_parts(split, split_file)
    c = ResultsChecker(file)
    g = ResultsChecker(split_file)
    images = {int(img["id"]): img for img in split.get("images", [])}
    if not results:
        raise c.fail("no results: a geometry results file holds one entry per image of each clip", "results", [])
    clips: dict[tuple[int, ...], dict[int, dict]] = {}
    first: dict[tuple[tuple[int, ...], int], int] = {}
    with_optional: dict[str, bool] = {}  # optional camera field -> present in the first result
    side: int | None = None
    for i, r in enumerate(results):
        field = f"results[{i}]"
        c.entry(r, field, ("image_id", "clip", "extrinsics", "depth", "world_points"))
        image_id = c.int_(r["image_id"], f"{field}.image_id")
        clip = tuple(c.int_(v, f"{field}.clip[{j}]") for j, v in enumerate(c.list_(r["clip"], f"{field}.clip")))
        if len(clip) < 2 or len(set(clip)) != len(clip):
            raise c.fail("a clip is a list of at least 2 distinct image ids", f"{field}.clip", list(clip))
        if image_id not in clip:
            raise c.fail(f"image_id {image_id} is not one of its clip's images", f"{field}.clip", list(clip))
        for j, member in enumerate(clip):
            if member not in images:
                raise c.fail("image id is not in the split", f"{field}.clip[{j}]", member)
        videos = {images[m].get("video_id") for m in clip}
        if len(videos) != 1 or None in videos:
            raise c.fail("the images of a clip must belong to one video of the split (one world frame)",
                         f"{field}.clip", list(clip))
        if (clip, image_id) in first:
            raise c.fail(f"duplicate result for this image of this clip (first: results[{first[clip, image_id]}])",
                         f"{field}.image_id", image_id)
        first[clip, image_id] = i
        entry = {"index": i, "image_id": image_id, "clip": clip,
                 "extrinsics": camera_matrix(c, r["extrinsics"], f"{field}.extrinsics")}
        for name in GEOMETRY_CAMERA_FIELDS.values():
            present = name in r
            if with_optional.setdefault(name, present) != present:
                raise c.fail(f"{name} must be given in every result or in none", f"{field}.{name}",
                             "present" if present else "absent")
            if present:
                entry[name] = camera_matrix(c, r[name], f"{field}.{name}")
        depth = decode_array(r["depth"], f"{field}.depth", file)
        if depth.ndim != 2 or depth.shape[0] != depth.shape[1]:
            raise c.fail("depth must be a square [H, W] map (the split's images are resized to H x W to score it)",
                         f"{field}.depth.size", list(depth.shape))
        if side is not None and depth.shape[0] != side:
            raise c.fail(f"every depth map must have the same size (results[0]: {side} x {side})",
                         f"{field}.depth.size", list(depth.shape))
        side = depth.shape[0]
        entry["depth"] = depth
        entry["world_points"] = decode_array(r["world_points"], f"{field}.world_points", file, size=(side, side, 3))
        clips.setdefault(clip, {})[image_id] = entry
    for clip, entries in clips.items():
        missing = [m for m in clip if m not in entries]
        if missing:
            raise c.fail(f"clip {list(clip)} has no result for image(s) {missing}", "clip", list(clip))
        for m in clip:
            image = images[m]
            field = f"images[id={m}]"
            camera = g.dict_(g.key(image, "camera", field), f"{field}.camera")
            g.matrix(g.key(camera, "K", f"{field}.camera"), f"{field}.camera.K", 3, 3)
            camera_matrix(g, g.key(camera, "extrinsics", f"{field}.camera"), f"{field}.camera.extrinsics")
            g.str_(g.key(image, "depth_file", field), f"{field}.depth_file", nonempty=True)
    return {clip: [entries[m] for m in clip] for clip, entries in clips.items()}


# The registry's fixed names (vision.tasks.PARTS)
score = score_geometry
check_split = check_geometry_parts
check_results = validate_geometry_results
