"""The state of one tracking session (a video or an image set) and the prompts in it.

:class:`TrackerState` holds the model-size frames, the prompts (:class:`ObjectPrompt`, in model pixels), the known
geometry, the cached window encodings and the results of the last propagation.
:func:`object_prompt` checks a prompt given in input pixels and converts it to model pixels;
:func:`set_known_geometry` stores an RGB-D / ground-truth geometry at the model size and
:func:`known_world_points` gives it to a window in the backbone's normalisation.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np
import torch

from vision.data.resize import resize_image, resize_nearest
from vision.errors import InputError
from vision.text.user_text import check_text
from vision.tracking.prompts import NEGATIVE, POSITIVE, box_to_points

__all__ = ["ObjectPrompt", "TrackerState", "as_int", "known_world_points", "object_prompt", "set_known_geometry"]


def as_int(value: Any, name: str) -> int:
    """``value`` as an int (bools refused), else :class:`InputError` naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise InputError(f"{name} must be an int, got {value!r}")
    return int(value)


@dataclass
class ObjectPrompt:
    """One object's prompt in model pixels: ``view`` (None for text only), ``points [K, 2]`` + ``labels [K]``
    (box corners included), ``mask [s, s]`` bool, ``text`` and its embedding."""

    view: int | None = None
    points: np.ndarray | None = None
    labels: np.ndarray | None = None
    mask: np.ndarray | None = None
    text: str | None = None
    text_embedding: torch.Tensor | None = None


@dataclass
class TrackerState:
    """Inference state of one video / image set.

    ``frames``: uint8 ``[T, s, s, 3]`` at the model size; ``height``/``width``: input frame size; ``ordered``;
    ``prompts``: obj_id -> :class:`ObjectPrompt`; after :meth:`TrackerPredictor.propagate`: ``extrinsics [T, 3, 4]``,
    ``intrinsics [T, 3, 3]`` (model pixels), ``depth [T, s, s]`` (views not propagated yet are zeros) and per-object
    clouds of the last propagation (:meth:`point_cloud`). ``encodings``: each window's backbone encoding, keyed by
    the window's views, kept so that a prompt added after :meth:`TrackerPredictor.propagate` only decodes again
    (as SAM2 keeps its image features in the inference state).
    """

    frames: np.ndarray
    height: int
    width: int
    ordered: bool
    prompts: dict[int, ObjectPrompt] = field(default_factory=dict)
    extrinsics: np.ndarray | None = None
    intrinsics: np.ndarray | None = None
    depth: np.ndarray | None = None
    clouds: dict[int, np.ndarray] = field(default_factory=dict)
    cloud_colors: dict[int, np.ndarray] = field(default_factory=dict)
    known_depth: np.ndarray | None = None
    known_extrinsics: np.ndarray | None = None
    known_intrinsics: np.ndarray | None = None
    encodings: dict[tuple[int, ...], dict[str, Any]] = field(default_factory=dict, repr=False)

    @property
    def num_views(self) -> int:
        return int(self.frames.shape[0])

    @property
    def size(self) -> int:
        """The model's square input size ``s`` (the side of :attr:`frames`)."""
        return int(self.frames.shape[1])

    @property
    def known_points(self) -> np.ndarray | None:
        """World points ``[T, s, s, 3]`` of the known geometry (:func:`set_known_geometry`; NaN where the depth is
        unknown), or None without it."""
        if self.known_depth is None:
            return None
        from vision.geometry.camera import depth_to_world_points

        points = depth_to_world_points(torch.from_numpy(self.known_depth), torch.from_numpy(self.known_extrinsics),
                                       torch.from_numpy(self.known_intrinsics)).numpy()
        points[self.known_depth <= 0] = np.nan
        return points

    @property
    def obj_ids(self) -> list[int]:
        return sorted(self.prompts)

    @property
    def prompted_views(self) -> list[int]:
        """The views that hold a visual prompt (point, box or mask), sorted."""
        return sorted({p.view for p in self.prompts.values() if p.view is not None})

    @property
    def cameras(self) -> tuple[np.ndarray, np.ndarray]:
        """``(extrinsics [T, 3, 4], intrinsics [T, 3, 3])`` of the last propagation (OpenCV, model pixels)."""
        if self.extrinsics is None or self.intrinsics is None:
            raise InputError("no cameras yet: call propagate(state) first")
        return self.extrinsics, self.intrinsics

    def point_cloud(self, obj_id: int) -> Any:
        """Object ``obj_id``'s cloud of the last propagation as an ``open3d.geometry.PointCloud`` (world frame of the
        first anchor view, coloured by the frames); an unknown id, or no propagation yet, raises
        :class:`InputError`."""
        import open3d as o3d

        if obj_id not in self.clouds:
            raise InputError(f"unknown object id {obj_id!r} or no propagation yet; objects: {sorted(self.clouds)}")
        pcd = o3d.geometry.PointCloud()
        pcd.points = o3d.utility.Vector3dVector(self.clouds[obj_id].astype(np.float64))
        pcd.colors = o3d.utility.Vector3dVector(self.cloud_colors[obj_id].astype(np.float64))
        return pcd

    def export_ply(self, path: str | Path, obj_id: int | None = None) -> Path:
        """Write object ``obj_id``'s cloud (None: every object's, each coloured by its RGB) to a ``.ply`` file;
        returns the path. An object found in no view has an empty cloud: exporting only such objects raises
        :class:`InputError`."""
        import open3d as o3d

        ids = [obj_id] if obj_id is not None else sorted(self.clouds)
        if not ids:
            raise InputError("no point clouds yet: add prompts and call propagate(state) first")
        pcd = o3d.geometry.PointCloud()
        for i in ids:
            pcd += self.point_cloud(i)
        if not pcd.has_points():
            raise InputError(f"nothing to export to {path}: object(s) {ids} were found in no view (empty point "
                             "cloud)")
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        if not o3d.io.write_point_cloud(str(path), pcd):
            raise InputError(f"open3d could not write {path}")
        return path

    def clear(self) -> None:
        """Remove every prompt and result (frames, known geometry and cached encodings stay)."""
        self.prompts.clear()
        self.clouds.clear()
        self.cloud_colors.clear()
        self.extrinsics = self.intrinsics = self.depth = None

    def remove(self, obj_id: int) -> None:
        """Forget one object (its prompt and cloud); unknown ids raise :class:`InputError`."""
        if obj_id not in self.prompts:
            raise InputError(f"unknown object id {obj_id!r}; objects: {self.obj_ids}")
        del self.prompts[obj_id]
        self.clouds.pop(obj_id, None)
        self.cloud_colors.pop(obj_id, None)

    def record_geometry(self, window: list[int], emit: list[int], encoded: dict[str, Any]) -> None:
        """Keep the cameras and depth of the views ``emit`` from the encoding of ``window`` (a model with
        ``uses_geometry_memory``) in :attr:`extrinsics`, :attr:`intrinsics` and :attr:`depth`."""
        for i, v in enumerate(window):
            if v in emit:
                self.extrinsics[v] = encoded["extrinsics"][0, i].float().cpu().numpy()
                self.intrinsics[v] = encoded["intrinsics"][0, i].float().cpu().numpy()
                self.depth[v] = encoded["depth"][0, i, ..., 0].float().cpu().numpy()

    def cached_encoding(self, window: list[int], encode: Callable[[], dict[str, Any]],
                        cache_views: int) -> dict[str, Any]:
        """The encoding of ``window``: from :attr:`encodings` when this window was encoded before, else
        ``encode()``. It is then kept as the most recently used; the least recently used windows are dropped
        while more than ``cache_views`` views are kept (at least the last window stays; 0 keeps none)."""
        key = tuple(window)
        encoded = self.encodings.pop(key, None)
        if encoded is None:
            encoded = encode()
        if cache_views > 0:
            self.encodings[key] = encoded  # most recently used last
            while sum(len(k) for k in self.encodings) > cache_views and len(self.encodings) > 1:
                del self.encodings[next(iter(self.encodings))]
        return encoded


def _check_view(view: Any, state: TrackerState) -> int:
    view = as_int(view, "view")
    if not 0 <= view < state.num_views:
        raise InputError(f"view {view} is out of range: the state has {state.num_views} views")
    return view


def object_prompt(state: TrackerState, view: int | None, points: Any = None, labels: Any = None, box: Any = None,
                  mask: Any = None, text: str | None = None) -> ObjectPrompt:
    """One object's prompt given in input pixels (see :meth:`TrackerPredictor.add_prompt`), checked and converted
    to the model's pixels; the text is checked and kept, its embedding is left to the caller.

    Raises:
        InputError: no prompt at all, a visual prompt without a view, a view out of range, points or a box off
            the image, bad labels, an empty box or mask, a mask of another size, an empty text.
    """
    s = state.size
    sx, sy = s / state.width, s / state.height
    has_visual = points is not None or box is not None or mask is not None
    if not has_visual and text is None:
        raise InputError("add_prompt needs points, a box, a mask or text")
    if has_visual:
        if view is None:
            raise InputError("a point, box or mask prompt needs a view index")
        view = _check_view(view, state)
    elif view is not None:
        view = _check_view(view, state)
    prompt = ObjectPrompt(view=view if has_visual else None)
    pts: list[np.ndarray] = []
    lbs: list[np.ndarray] = []
    if points is not None:
        p = np.asarray(points, dtype=np.float64)
        if p.ndim == 1 and p.shape == (2,):
            p = p[None]
        if p.ndim != 2 or p.shape[1] != 2 or len(p) == 0:
            raise InputError(f"points must have shape [K, 2] (x, y pixels), got {p.shape}")
        lb = np.ones(len(p), np.int64) if labels is None else np.asarray(labels).reshape(-1)
        if len(lb) != len(p):
            raise InputError(f"labels has {len(lb)} entries for {len(p)} points")
        if not np.isin(lb, [0, 1]).all():
            raise InputError(f"labels must be 0 (negative) or 1 (positive), got {lb.tolist()}")
        off = (p[:, 0] < 0) | (p[:, 0] > state.width - 1) | (p[:, 1] < 0) | (p[:, 1] > state.height - 1)
        if off.any() or not np.isfinite(p).all():
            raise InputError(f"point {p[np.argmax(off)].tolist()} is off the image "
                             f"(width {state.width}, height {state.height})")
        pts.append(p * [sx, sy])
        lbs.append(np.where(lb == 1, POSITIVE, NEGATIVE))
    elif labels is not None:
        raise InputError("labels given without points")
    if box is not None:
        b = np.asarray(box, dtype=np.float64).reshape(-1)
        if b.shape != (4,) or not np.isfinite(b).all():
            raise InputError(f"box must be [x0, y0, x1, y1] pixels, got {np.asarray(box).tolist()}")
        if b[2] <= b[0] or b[3] <= b[1]:
            raise InputError(f"box {b.tolist()} is empty: need x1 > x0 and y1 > y0")
        if b[0] < 0 or b[1] < 0 or b[2] > state.width or b[3] > state.height:
            raise InputError(f"box {b.tolist()} is off the image (width {state.width}, height {state.height})")
        corners, corner_labels = box_to_points(torch.tensor(b * [sx, sy, sx, sy]))
        pts.append(corners.numpy())
        lbs.append(corner_labels.numpy())
    if pts:
        prompt.points = np.concatenate(pts).astype(np.float32)
        prompt.labels = np.concatenate(lbs).astype(np.int64)
    if mask is not None:
        m = np.asarray(mask)
        if m.shape != (state.height, state.width):
            raise InputError(f"mask must have shape (height, width) = ({state.height}, {state.width}), "
                             f"got {m.shape}")
        if not m.astype(bool).any():
            raise InputError("mask is empty")
        # the mask's coverage of each model pixel (area when shrinking, bilinear when enlarging), at least half
        prompt.mask = resize_image(m.astype(np.float32), (s, s)) > 0.5
    if text is not None:
        check_text(text, "text")
        prompt.text = text
    return prompt


def set_known_geometry(state: TrackerState, depth: Any, extrinsics: Any, intrinsics: Any) -> None:
    """Store the scene's geometry in ``state`` at the model size (see :meth:`TrackerPredictor.set_known_geometry`):
    ``depth [T, H, W]`` at the input size (0 or non-finite where unknown), ``extrinsics [T, 3, 4]`` OpenCV
    camera-from-world, ``intrinsics [T, 3, 3]`` in input pixels; the intrinsics follow the resize under the
    pixel-centre convention (:mod:`vision.data.resize`)."""
    t = state.num_views
    depth = np.asarray(depth, np.float32)
    extrinsics = np.asarray(extrinsics, np.float64)
    intrinsics = np.asarray(intrinsics, np.float64)
    if depth.shape != (t, state.height, state.width):
        raise InputError(f"depth must be [T, H, W] = {[t, state.height, state.width]}, got {list(depth.shape)}")
    if extrinsics.shape != (t, 3, 4) or intrinsics.shape != (t, 3, 3):
        raise InputError(f"extrinsics / intrinsics must be [{t}, 3, 4] / [{t}, 3, 3], got "
                         f"{list(extrinsics.shape)} / {list(intrinsics.shape)}")
    if not (np.isfinite(extrinsics).all() and np.isfinite(intrinsics).all()):
        raise InputError("extrinsics / intrinsics contain NaN or inf")
    s = state.size
    small = np.stack([resize_nearest(np.nan_to_num(d, nan=0.0, posinf=0.0, neginf=0.0), (s, s)) for d in depth])
    k = intrinsics.copy()
    k[:, 0] *= s / state.width
    k[:, 1] *= s / state.height
    k[:, :2, 2] = (intrinsics[:, :2, 2] + 0.5) * np.array([s / state.width, s / state.height]) - 0.5
    state.known_depth = np.where(small > 0, small, 0.0).astype(np.float32)
    state.known_extrinsics = extrinsics.astype(np.float32)
    state.known_intrinsics = k.astype(np.float32)


def known_world_points(state: TrackerState, window: list[int]) -> torch.Tensor:
    """``[1, S, s, s, 3]`` (CPU): the known points of ``window`` in its first view's frame, mean norm 1 (the
    backbone's normalisation, :func:`~vision.geometry.losses.normalize_scene`), NaN where unknown."""
    from vision.geometry.losses import normalize_scene

    depth = torch.from_numpy(state.known_depth[window])[None]
    valid = depth > 0
    points = normalize_scene(torch.from_numpy(state.known_extrinsics[window])[None],
                             torch.from_numpy(state.known_intrinsics[window])[None], depth, None,
                             valid).world_points
    return torch.where(valid[..., None], points, torch.full_like(points, float("nan")))
