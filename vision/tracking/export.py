"""Run a prompted :class:`~vision.tracking.predictor.TrackerPredictor` state and write what a user downloads.

:func:`track_and_export` propagates the prompts and writes, into one folder:

- ``results.json``: COCO-video results ``[{video_id: 1, track_id, image_id = frame + 1, segmentation (RLE),
  score}]``, one per object and frame;
- ``annotated.mp4``: the given frames (the input's, or the input's downscaled to at most
  :data:`vision.data.io.MAX_WORKING_PIXELS` by the callers) with every object's mask filled in its colour
  (:func:`object_colour`), outlined, and labelled with its id (H.264);
- ``masks.zip``: ``object_<id>/frame_<nnnnn>.png``, one 0/255 PNG per object and frame at the input size;
- ``object_<id>.ply``: each object's 3D points (world frame of the first prompted view), coloured by the image;
- ``scene.ply`` and ``scene.glb``: the reconstruction of every frame (depth unprojected with the predicted
  cameras) with the tracked objects painted in their colours; the ``.glb`` is for web viewers
  (:func:`vision.data.glb.write_points_glb`). Only G2TAM predicts geometry: the memory-bank control writes neither.
"""

from __future__ import annotations

import io
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator, Protocol, Sequence

import cv2
import numpy as np

from vision.data.io import atomic_write_bytes, atomic_write_json
from vision.data.masks import encode_mask
from vision.data.resize import resize_nearest
from vision.data.video import write_video
from vision.errors import DataError, InputError
from vision.tracking.session import TrackerState

__all__ = ["OBJECT_COLOURS", "Propagator", "object_colour", "overlay_masks", "scene_points", "track_and_export",
           "TrackingExport"]

#: RGB colour of object id k is ``OBJECT_COLOURS[(k - 1) % len(OBJECT_COLOURS)]``.
OBJECT_COLOURS: tuple[tuple[int, int, int], ...] = (
    (255, 64, 64), (64, 160, 255), (80, 220, 80), (255, 200, 40), (200, 90, 255), (255, 140, 40),
    (40, 220, 220), (255, 90, 190))


class Propagator(Protocol):
    """What :func:`track_and_export` runs: a :class:`~vision.tracking.predictor.TrackerPredictor` (this module sits
    below the predictor, so it names the one method it calls)."""

    def propagate(self, state: TrackerState) -> Iterator[tuple[int, list[int], np.ndarray, np.ndarray]]:
        """``(view, obj_ids, masks bool [N, H, W], scores [N])`` per view, at the state's input size."""
        ...


def object_colour(obj_id: int) -> tuple[int, int, int]:
    """The RGB colour that draws object ``obj_id`` everywhere (video, 3D view, demo prompts)."""
    return OBJECT_COLOURS[(int(obj_id) - 1) % len(OBJECT_COLOURS)]


def overlay_masks(frame: np.ndarray, masks: np.ndarray | list[np.ndarray], obj_ids: list[int],
                  alpha: float = 0.5, labels: Sequence[str] | None = None) -> np.ndarray:
    """``frame`` uint8 [H, W, 3] RGB with each ``masks[i]`` (bool, any size: resized to [H, W] by pixel-centre
    nearest neighbour, so model-size masks can be drawn on a frame of any size) blended in the colour of ``obj_ids[i]``,
    outlined in white and labelled with the id at its top-left (``labels[i]``, when given, follows the id in the
    same colour, drawn after every mask so no mask covers a label); returns a new array.

    Memory: one uint8 copy of the frame and of each mask, and float work only inside the mask's bounding box."""
    out = frame.copy()
    height, width = frame.shape[:2]
    corners: list[tuple[int, int, int]] = []  # (index, x, y) of each drawn mask, for the labels
    for i, (obj_id, mask) in enumerate(zip(obj_ids, masks)):
        mask = np.asarray(mask).astype(np.uint8)
        if mask.shape != (height, width):
            mask = resize_nearest(mask, (height, width))
        x, y, w, h = cv2.boundingRect(mask)
        if w == 0 or h == 0:
            continue
        roi, inside = out[y:y + h, x:x + w], mask[y:y + h, x:x + w] > 0
        colour = np.array(object_colour(obj_id), np.float32)
        roi[inside] = ((1 - alpha) * roi[inside] + alpha * colour).astype(np.uint8)
        contours, _ = cv2.findContours(mask[y:y + h, x:x + w], cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_SIMPLE,
                                       offset=(x, y))
        cv2.drawContours(out, contours, -1, (255, 255, 255), 1)
        cv2.putText(out, str(obj_id), (x, max(10, y - 2)), cv2.FONT_HERSHEY_SIMPLEX, 0.35,
                    tuple(int(c) for c in colour), 1, cv2.LINE_AA)
        corners.append((i, x, y))
    for i, x, y in corners if labels is not None else ():
        (id_width, _), _ = cv2.getTextSize(str(obj_ids[i]), cv2.FONT_HERSHEY_SIMPLEX, 0.35, 1)
        cv2.putText(out, labels[i], (x + id_width + 3, max(10, y - 2)), cv2.FONT_HERSHEY_SIMPLEX, 0.35,
                    object_colour(obj_ids[i]), 1, cv2.LINE_AA)
    return out


def scene_points(state: TrackerState, object_masks: dict[int, np.ndarray], max_points: int = 20000,
                 tint: float = 0.7, trim: float = 0.02) -> tuple[np.ndarray, np.ndarray]:
    """The whole reconstruction after :meth:`TrackerPredictor.propagate`: every view's depth unprojected with its
    predicted camera, coloured by the (model-size) frame, and pixels of a tracked object blended (``tint``) towards
    its colour. ``object_masks``: obj_id -> bool ``[T, s, s]`` masks at the model size. Stray points are dropped:
    a point is kept when each coordinate lies within the ``trim`` .. ``1 - trim`` quantiles of that axis, widened
    by 10 % of their span on both sides (predicted depth has a few far outliers that would shrink the view).

    Returns ``(points [N, 3] float32, colours [N, 3] float32 in [0, 1])`` in the world frame of the first prompted
    view, evenly subsampled to at most ``max_points``; empty arrays when there is no geometry (zero depth)."""
    import torch

    from vision.geometry.camera import depth_to_world_points

    extrinsics, intrinsics = state.cameras
    depth = state.depth
    world = depth_to_world_points(torch.from_numpy(depth), torch.from_numpy(extrinsics),
                                  torch.from_numpy(intrinsics)).numpy()  # [T, s, s, 3]
    colours = state.frames.astype(np.float32) / 255.0
    for obj_id, masks in object_masks.items():
        colour = np.array(object_colour(obj_id), np.float32) / 255.0
        colours[masks] = (1 - tint) * colours[masks] + tint * colour
    valid = (depth > 0) & np.isfinite(world).all(axis=-1)
    points, colours = world[valid], colours[valid]
    if len(points) and trim > 0:
        low, high = np.quantile(points, [trim, 1 - trim], axis=0)
        margin = 0.1 * (high - low)
        inside = ((points >= low - margin) & (points <= high + margin)).all(axis=1)
        points, colours = points[inside], colours[inside]
    if len(points) > max_points:
        keep = np.linspace(0, len(points) - 1, max_points).round().astype(int)
        points, colours = points[keep], colours[keep]
    return points.astype(np.float32), colours.astype(np.float32)


@dataclass
class TrackingExport:
    """Paths written by :func:`track_and_export`; ``plys`` maps object id -> its ``.ply`` (objects with no 3D
    point have none and are listed in ``empty``); ``scene_ply`` / ``scene_glb`` are None without geometry;
    ``frames_with_object`` maps object id -> number of frames where its mask is not empty."""

    folder: Path
    results: Path
    video: Path
    masks: Path
    plys: dict[int, Path] = field(default_factory=dict)
    empty: list[int] = field(default_factory=list)
    scene_ply: Path | None = None
    scene_glb: Path | None = None
    frames_with_object: dict[int, int] = field(default_factory=dict)


def _write_scene_ply(path: Path, points: np.ndarray, colours: np.ndarray) -> Path:
    import open3d as o3d

    pcd = o3d.geometry.PointCloud()
    pcd.points = o3d.utility.Vector3dVector(points.astype(np.float64))
    pcd.colors = o3d.utility.Vector3dVector(colours.astype(np.float64))
    if not o3d.io.write_point_cloud(str(path), pcd):
        raise DataError("open3d could not write the point cloud", file=path)
    return path


def track_and_export(predictor: Propagator, state: TrackerState, frames: np.ndarray, out_dir: str | Path,
                     fps: float = 10.0, progress: Callable[[int, int], None] | None = None,
                     scene_max_points: int = 20000, glb_max_points: int = 6000) -> TrackingExport:
    """Propagate ``state`` (prompts already added) and write the files listed in the module docstring.

    Args:
        predictor / state: a predictor and its prompted state, made from the same input as ``frames``.
        frames: the frames to draw ``annotated.mp4`` on, uint8 ``[T, H, W, 3]`` RGB: the input's, or the input's
            downscaled (pass frames of at most :data:`vision.data.io.MAX_WORKING_PIXELS` to bound memory). Either
            way ``results.json`` and ``masks.zip`` are at the state's input size; the video is at the frames' size
            and is drawn from the model-size masks one frame at a time.
        out_dir: output folder (created). fps: frame rate of ``annotated.mp4``.
        progress: called as ``progress(done, total)`` after each frame.
        scene_max_points / glb_max_points: caps on the points of ``scene.ply`` / ``scene.glb``.
    """
    if len(frames) != state.num_views:
        raise InputError(f"frames has {len(frames)} frames but the state {state.num_views} views")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    total = state.num_views
    size = state.frames.shape[1]
    results: list[dict] = []
    small = {o: np.zeros((total, size, size), bool) for o in state.obj_ids}
    counts = {o: 0 for o in state.obj_ids}
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zf:
        for done, (view, obj_ids, masks, scores) in enumerate(predictor.propagate(state), start=1):
            for obj_id, mask, score in zip(obj_ids, masks, scores):
                results.append({"video_id": 1, "track_id": int(obj_id), "image_id": int(view) + 1,
                                "segmentation": encode_mask(mask), "score": float(score)})
                ok, png = cv2.imencode(".png", mask.astype(np.uint8) * 255)
                zf.writestr(f"object_{obj_id}/frame_{view:05d}.png", png.tobytes())
                small[obj_id][view] = resize_nearest(mask, (size, size))
                counts[obj_id] += int(mask.any())
            if progress is not None:
                progress(done, total)
    export = TrackingExport(folder=out, results=out / "results.json", video=out / "annotated.mp4",
                            masks=out / "masks.zip", frames_with_object=counts)
    atomic_write_json(export.results, results)
    atomic_write_bytes(export.masks, archive.getvalue())
    ids = state.obj_ids
    write_video(export.video, (overlay_masks(frame, [small[o][view] for o in ids], ids)
                               for view, frame in enumerate(frames)), fps=fps, crf=20, preset="veryfast")
    for obj_id in state.obj_ids:
        if len(state.clouds.get(obj_id, ())) == 0:
            export.empty.append(obj_id)
        else:
            export.plys[obj_id] = state.export_ply(out / f"object_{obj_id}.ply", obj_id=obj_id)
    if state.depth is not None and (state.depth > 0).any():
        from vision.data.glb import write_points_glb

        points, colours = scene_points(state, small, max_points=scene_max_points)
        if len(points):
            export.scene_ply = _write_scene_ply(out / "scene.ply", points, colours)
            keep = np.linspace(0, len(points) - 1, min(glb_max_points, len(points))).round().astype(int)
            export.scene_glb = write_points_glb(out / "scene.glb", points[keep], colours[keep])
    return export
