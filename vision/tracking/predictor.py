"""TrackerPredictor: SAM2-like interactive API over G2TAM (or the memory-bank control) for videos and image sets.

Usage::

    predictor = TrackerPredictor.from_checkpoint("runs/tracking/tiny/checkpoints/last.ckpt")
    state = predictor.init_state("clip.mp4")                  # or frames [T, H, W, 3] uint8, or image paths
    predictor.add_prompt(state, view=0, obj_id=1, points=[[120, 80]], labels=[1])
    predictor.add_prompt(state, view=0, obj_id=2, box=[10, 20, 60, 90])
    predictor.add_prompt(state, view=None, obj_id=3, text="the red mug")
    for view, obj_ids, masks, scores in predictor.propagate(state):   # masks bool [N, H, W], scores [N]
        ...
    state.point_cloud(1); state.export_ply("obj1.ply", obj_id=1); state.cameras; state.depth

Conventions: points ``(x, y)`` and boxes XYXY in pixels of the input frames (as SAM2); frames are resized to the
model's square input size internally and masks are returned at the input size. Label 1 = positive, 0 = negative.
A video file or image files are read straight to the model size under the input limits of :mod:`vision.data.io`
(frames over ``max_pixels`` are refused from their header, before decoding): the state holds only model-size
frames, and a mask at the input size is made per view as :meth:`TrackerPredictor.propagate` yields it.

Long videos and large sets are processed in windows of ``window_size`` views: each window holds the prompted views
(anchors, at most ``max_anchors``; the first anchor is the window's view 0 and so fixes one world frame for all
windows) plus the next unprocessed views. After each window every object's predicted 3D points (the point map
under its masks) are subsampled to ``memory_points`` and carried into the next window as 3D prompts, with their
mean appearance; per-object point clouds are capped at ``max_cloud_points``. Peak memory depends on the window,
not on the video length. Cameras and depth are those of the window in which each view was processed.

Second pass (G2TAM, ``refine=True``): within a window that holds an object's visual prompt, its first-pass mask on
the prompted view is lifted through the point map and joins its carried 3D memory; the window is then decoded
again, so a click or a box reaches the other views as the object's whole 3D extent rather than as one point.
An object prompted by text alone lifts its first-pass mask on the view where it is most surely present (if its
presence reaches the threshold there). The backbone runs once per window either way.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import numpy as np
import torch
import torch.nn.functional as F

from vision.data.io import MAX_INPUT_PIXELS, image_size
from vision.errors import InputError
from vision.tracking.baseline import MemoryBankTracker
from vision.tracking.model import G2TAM, select_best_mask
from vision.tracking.prompts import NEGATIVE, POSITIVE, Prompts, box_to_points

__all__ = ["TrackerPredictor", "TrackerState", "ObjectPrompt"]


@dataclass
class ObjectPrompt:
    """One object's prompt in model pixels: ``view`` (None for text only), ``points [K, 2]`` + ``labels [K]``
    (box corners included), ``mask [s, s]`` float, ``text`` and its embedding."""

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
    def known_points(self) -> np.ndarray | None:
        """World points ``[T, s, s, 3]`` of the known geometry (:meth:`TrackerPredictor.set_known_geometry`; NaN
        where the depth is unknown), or None without it."""
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
    def cameras(self) -> tuple[np.ndarray, np.ndarray]:
        """``(extrinsics [T, 3, 4], intrinsics [T, 3, 3])`` of the last propagation (OpenCV, model pixels)."""
        if self.extrinsics is None or self.intrinsics is None:
            raise InputError("no cameras yet: call propagate(state) first")
        return self.extrinsics, self.intrinsics

    def point_cloud(self, obj_id: int) -> Any:
        """The object's 3D points as an ``open3d.geometry.PointCloud`` (world frame of the first anchor view)."""
        import open3d as o3d

        if obj_id not in self.clouds:
            raise InputError(f"unknown object id {obj_id!r} or no propagation yet; objects: {sorted(self.clouds)}")
        pcd = o3d.geometry.PointCloud()
        pcd.points = o3d.utility.Vector3dVector(self.clouds[obj_id].astype(np.float64))
        pcd.colors = o3d.utility.Vector3dVector(self.cloud_colors[obj_id].astype(np.float64))
        return pcd

    def export_ply(self, path: str | Path, obj_id: int | None = None) -> Path:
        """Write one object's cloud (or all objects, coloured by their RGB) to a ``.ply`` file; returns the path.
        An object found in no view has an empty cloud: exporting only such objects raises :class:`InputError`."""
        import open3d as o3d

        ids = [obj_id] if obj_id is not None else sorted(self.clouds)
        if not ids:
            raise InputError("no point clouds yet: add prompts and call propagate(state) first")
        pcd = o3d.geometry.PointCloud()
        for i in ids:
            pcd += self.point_cloud(i)
        if not pcd.has_points():
            raise InputError(f"nothing to export to {path}: object(s) {ids} were found in no view (empty point cloud)")
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        if not o3d.io.write_point_cloud(str(path), pcd):
            raise InputError(f"open3d could not write {path}")
        return path


#: What :meth:`TrackerPredictor.propagate` reads of a window's encoding (the decoders' inputs and G2TAM's cameras and
#: depth), the part kept in :attr:`TrackerState.encodings`.
_DECODE_INPUTS = frozenset({"images", "feats", "hires", "world_points", "extrinsics", "intrinsics", "depth"})


def _tracking_encoding(model: G2TAM, images: torch.Tensor) -> dict[str, Any]:
    """G2TAM's encoding of a window ``images [1, S, 3, s, s]`` for tracking: the backbone's camera and point heads
    only (the depth head is not run); ``depth [1, S, s, s, 1]`` is the z of the world points in each view's camera,
    the geometry the tracker's memory is made of."""
    from vision.geometry.camera import world_to_camera_points

    encoded = {k: v for k, v in model.encode(images, heads=("camera", "points")).items() if k in _DECODE_INPUTS}
    points = encoded["world_points"]
    b, s, h, w, _ = points.shape
    camera = world_to_camera_points(points.reshape(b, s, h * w, 3), encoded["extrinsics"])
    return {**encoded, "depth": camera[..., 2:].reshape(b, s, h, w, 1)}


def _as_int(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise InputError(f"{name} must be an int, got {value!r}")
    return int(value)


class TrackerPredictor:
    """Interactive tracker over a trained model (see the module docstring).

    Args:
        model: :class:`G2TAM` or :class:`MemoryBankTracker` (eval mode is set).
        text_encoder: a TextEncoder callable or a name for :func:`vision.text.get_text_encoder` (loaded on the
            first text prompt).
        window_size: views per window. max_anchors: prompted views kept in every window.
        memory_points: 3D points carried per object between windows. max_cloud_points: cap per object cloud.
        presence_threshold: presence probability under which an object's mask is emptied.
        mask_threshold: mask logit above which a pixel belongs to the object (SAM2's ``mask_threshold``).
        refine: decode each window a second time with the first pass's masks lifted to 3D (G2TAM only): a visual
            prompt's mask on its view; for a text prompt, the mask on the view where the object is most surely
            present.
        device: torch device (default: the model's).
        cache_views: the encodings of at most this many views (whole windows, least recently used dropped first)
            are kept in the state between propagations; 0 keeps none. The default holds a 64-frame demo clip.
    """

    def __init__(self, model: G2TAM | MemoryBankTracker, text_encoder: Any = "minilm", window_size: int = 8,
                 max_anchors: int = 2, memory_points: int = 64, max_cloud_points: int = 20000,
                 presence_threshold: float = 0.5, mask_threshold: float = 0.0, refine: bool = True,
                 device: torch.device | str | None = None, cache_views: int = 96) -> None:
        if window_size < 2 or max_anchors < 1 or max_anchors >= window_size:
            raise InputError(f"need window_size >= 2 and 1 <= max_anchors < window_size, got {window_size}, "
                             f"{max_anchors}")
        self.model = model.eval()
        self.device = torch.device(device) if device is not None else next(model.parameters()).device
        self.model.to(self.device)
        self.image_size: int | None = int(model.backbone.aggregator.img_size)
        self._text_encoder = text_encoder
        self.window_size, self.max_anchors = window_size, max_anchors
        self.memory_points, self.max_cloud_points = memory_points, max_cloud_points
        self.presence_threshold = presence_threshold
        self.mask_threshold = mask_threshold
        self.refine = refine
        if isinstance(cache_views, bool) or not isinstance(cache_views, int) or cache_views < 0:
            raise InputError(f"cache_views must be an integer >= 0, got {cache_views!r}")
        self.cache_views = cache_views

    @classmethod
    def from_checkpoint(cls, path: str | Path, image_size: int | None = None, **kwargs: Any) -> "TrackerPredictor":
        """Build from a :class:`~vision.tracking.lightning.TrackingModule` checkpoint through
        :func:`vision.tracking.task.load` (``weights_only=True``); ``image_size`` rebuilds the model for another
        input size; the text encoder defaults to the checkpoint's (``config.text_encoder``); other keyword
        arguments go to the constructor."""
        from vision.tracking.task import load

        model, config = load(path, image_size=image_size)
        kwargs.setdefault("text_encoder", config.text_encoder)
        return cls(model, **kwargs)

    # ------------------------------------------------------------------ state

    def _size(self) -> int:
        if self.image_size is None:
            raise InputError("the predictor does not know the model's input size; pass image_size")
        return self.image_size

    def init_state(self, source: Any, ordered: bool | None = None, max_frames: int | None = None,
                   stride: int = 1, max_pixels: int | None = MAX_INPUT_PIXELS) -> TrackerState:
        """Start a state from frames (uint8 ``[T, H, W, 3]`` RGB or float ``[T, 3, H, W]`` in [0, 1]), a video
        path, or a list of image paths. ``ordered`` defaults to True for videos and frames, False for image lists.
        ``stride`` / ``max_frames`` sample a video file; files with frames over ``max_pixels`` are refused (None: no
        limit). The input size (the prompts' and masks' pixels) is the video's, or the first image's."""
        from vision.data.video import probe_video, read_frames_from_paths, read_video

        s = self._size()
        if isinstance(source, (str, Path)):
            info = probe_video(source)
            frames = read_video(source, stride=stride, max_frames=max_frames, size=(s, s), max_pixels=max_pixels)
            height, width = int(info.height), int(info.width)
            ordered = True if ordered is None else ordered
        elif isinstance(source, (list, tuple)):
            if not source:
                raise InputError("init_state got an empty list of image paths")
            width, height = image_size(source[0])
            frames = read_frames_from_paths(list(source), size=(s, s), max_pixels=max_pixels)
            ordered = False if ordered is None else ordered
        else:
            if isinstance(source, torch.Tensor):
                if source.ndim != 4 or source.shape[1] != 3 or not source.is_floating_point():
                    raise InputError(f"frames tensor must be float [T, 3, H, W] in [0, 1], got "
                                     f"{source.dtype} {tuple(source.shape)}")
                source = (source.clamp(0, 1) * 255).round().byte().permute(0, 2, 3, 1).cpu().numpy()
            arr = np.asarray(source)
            if arr.ndim != 4 or arr.shape[-1] != 3 or arr.dtype != np.uint8 or arr.shape[0] == 0:
                raise InputError(f"frames must be uint8 [T, H, W, 3] RGB, got {arr.dtype} {arr.shape}")
            height, width = arr.shape[1:3]
            import cv2

            frames = np.stack([cv2.resize(f, (s, s), interpolation=cv2.INTER_AREA if max(height, width) > s
                                          else cv2.INTER_LINEAR) for f in arr])
            ordered = True if ordered is None else ordered
        return TrackerState(frames=np.ascontiguousarray(frames), height=int(height), width=int(width),
                            ordered=bool(ordered))

    def set_known_geometry(self, state: TrackerState, depth: Any, extrinsics: Any, intrinsics: Any) -> None:
        """Give G2TAM the scene's geometry (an RGB-D sensor with poses, or ground truth: the oracle of the
        benchmarks): its point maps replace the backbone's in every window.

        Args:
            depth: float ``[T, H, W]`` metric z-depth at the input size, 0 (or non-finite) where unknown.
            extrinsics: ``[T, 3, 4]`` OpenCV camera-from-world; intrinsics: ``[T, 3, 3]`` in input pixels.

        In each window the points are expressed in the window's first view's camera frame and scaled to a mean
        norm of 1, the frame and scale the backbone's point maps have (``vision.geometry.losses.normalize_scene``).
        The control model has no point maps: it ignores them.
        """
        import cv2

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
        s = self._size()
        small = np.stack([cv2.resize(np.nan_to_num(d, nan=0.0, posinf=0.0, neginf=0.0), (s, s),
                                     interpolation=cv2.INTER_NEAREST) for d in depth])
        k = intrinsics.copy()
        k[:, 0] *= s / state.width
        k[:, 1] *= s / state.height
        k[:, :2, 2] = (intrinsics[:, :2, 2] + 0.5) * np.array([s / state.width, s / state.height]) - 0.5
        state.known_depth = np.where(small > 0, small, 0.0).astype(np.float32)
        state.known_extrinsics = extrinsics.astype(np.float32)
        state.known_intrinsics = k.astype(np.float32)

    def _known_world_points(self, state: TrackerState, window: list[int]) -> torch.Tensor:
        """``[1, S, s, s, 3]``: the known points of ``window`` in its first view's frame, mean norm 1 (the
        backbone's normalisation, :func:`~vision.geometry.losses.normalize_scene`), NaN where unknown."""
        from vision.geometry.losses import normalize_scene

        depth = torch.from_numpy(state.known_depth[window])[None]
        valid = depth > 0
        points = normalize_scene(torch.from_numpy(state.known_extrinsics[window])[None],
                                 torch.from_numpy(state.known_intrinsics[window])[None], depth, None,
                                 valid).world_points
        return torch.where(valid[..., None], points, torch.full_like(points, float("nan"))).to(self.device)

    def reset(self, state: TrackerState) -> None:
        """Remove every prompt and result (frames and cached encodings stay)."""
        state.prompts.clear()
        state.clouds.clear()
        state.cloud_colors.clear()
        state.extrinsics = state.intrinsics = state.depth = None

    def clear_prompts(self, state: TrackerState, obj_id: int | None = None) -> None:
        """Remove the prompts of object ``obj_id`` (the object and its cloud go with them), or of every object
        with ``obj_id=None``. Frames and cached encodings stay, so prompting again decodes without re-encoding.
        An unknown id raises :class:`InputError`."""
        if obj_id is None:
            self.reset(state)
        else:
            self.remove_object(state, _as_int(obj_id, "obj_id"))

    def remove_object(self, state: TrackerState, obj_id: int) -> None:
        """Forget one object; unknown ids raise :class:`InputError`."""
        if obj_id not in state.prompts:
            raise InputError(f"unknown object id {obj_id!r}; objects: {state.obj_ids}")
        del state.prompts[obj_id]
        state.clouds.pop(obj_id, None)
        state.cloud_colors.pop(obj_id, None)

    def _embed_text(self, text: str) -> torch.Tensor:
        if isinstance(self._text_encoder, str):
            from vision.text import get_text_encoder

            self._text_encoder = get_text_encoder(self._text_encoder)
        if self._text_encoder is None:
            raise InputError("this predictor has no text encoder")
        return self._text_encoder([text])[0].detach().float().cpu()

    def add_prompt(self, state: TrackerState, view: int | None, obj_id: int, points: Any = None,
                   labels: Any = None, box: Any = None, mask: Any = None, text: str | None = None) -> None:
        """Add or replace object ``obj_id``'s prompt on ``view`` (input pixels; see the module docstring).

        ``points [K, 2]`` with ``labels [K]`` (1 positive, 0 negative; default all positive), ``box [4]`` XYXY,
        ``mask [H, W]`` bool at the input size, ``text`` a description. Text alone needs no view."""
        obj_id = _as_int(obj_id, "obj_id")
        s = self._size()
        sx, sy = s / state.width, s / state.height
        has_visual = points is not None or box is not None or mask is not None
        if not has_visual and text is None:
            raise InputError("add_prompt needs points, a box, a mask or text")
        if has_visual:
            if view is None:
                raise InputError("a point, box or mask prompt needs a view index")
            view = _as_int(view, "view")
            if not 0 <= view < state.num_views:
                raise InputError(f"view {view} is out of range: the state has {state.num_views} views")
        elif view is not None:
            view = _as_int(view, "view")
            if not 0 <= view < state.num_views:
                raise InputError(f"view {view} is out of range: the state has {state.num_views} views")
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
            import cv2

            prompt.mask = cv2.resize(m.astype(np.float32), (s, s), interpolation=cv2.INTER_LINEAR) > 0.5
        if text is not None:
            if not isinstance(text, str) or not text.strip():
                raise InputError(f"text must be a non-empty string, got {text!r}")
            prompt.text = text
            prompt.text_embedding = self._embed_text(text)
        state.prompts[obj_id] = prompt

    # ------------------------------------------------------------------ propagation

    def _windows(self, state: TrackerState, views: list[int]) -> list[tuple[list[int], list[int]]]:
        """``[(window views, views to yield)]`` over ``views`` (in their order): anchors first, then the next
        unprocessed views. Anchors outside ``views`` still sit in every window (they hold the prompts) but are not
        yielded."""
        anchors = sorted({p.view for p in state.prompts.values() if p.view is not None})[: self.max_anchors]
        if not anchors:
            anchors = [views[0]]
        rest = [v for v in views if v not in anchors]
        chunk = self.window_size - len(anchors)
        windows = []
        for i in range(0, max(len(rest), 1), chunk):
            new = rest[i: i + chunk]
            emit = new + ([a for a in anchors if a in views] if i == 0 else [])
            windows.append((anchors + new, emit))
        return windows

    def _views(self, state: TrackerState, start_view: int | None, reverse: bool, max_views: int | None) -> list[int]:
        """The views one :meth:`propagate` yields, in its order."""
        t = state.num_views
        order = list(range(t - 1, -1, -1)) if reverse else list(range(t))
        if start_view is not None:
            start_view = _as_int(start_view, "start_view")
            if not 0 <= start_view < t:
                raise InputError(f"start_view {start_view} is out of range: the state has {t} views")
            order = order[order.index(start_view):]
        if max_views is not None:
            max_views = _as_int(max_views, "max_views")
            if max_views < 1:
                raise InputError(f"max_views must be >= 1, got {max_views}")
            order = order[:max_views]
        return order

    def _encode(self, state: TrackerState, window: list[int]) -> dict[str, Any]:
        """The window's encoding: from ``state.encodings`` when this window was encoded before, else the backbone
        (kept in the state); known point maps (:meth:`set_known_geometry`) replace G2TAM's on the way out."""
        key = tuple(window)
        encoded = state.encodings.pop(key, None)
        if encoded is None:
            images = torch.from_numpy(state.frames[window]).to(self.device).permute(0, 3, 1, 2).float()[None] / 255
            if isinstance(self.model, G2TAM):
                encoded = _tracking_encoding(self.model, images)
            else:
                encoded = {k: v for k, v in self.model.encode(images).items() if k in _DECODE_INPUTS}
        if self.cache_views > 0:
            state.encodings[key] = encoded  # most recently used last
            while sum(len(k) for k in state.encodings) > self.cache_views and len(state.encodings) > 1:
                del state.encodings[next(iter(state.encodings))]
        if isinstance(self.model, G2TAM) and state.known_depth is not None:
            encoded = {**encoded, "world_points": self._known_world_points(state, window).to(
                encoded["world_points"].dtype)}
        return encoded

    def _build_prompts(self, state: TrackerState, obj_ids: list[int], window: list[int],
                       memory: dict[int, tuple[np.ndarray, np.ndarray]]) -> Prompts:
        s = self._size()
        k = max([len(state.prompts[o].points) if state.prompts[o].points is not None else 0 for o in obj_ids] + [1])
        p = Prompts.empty(1, len(obj_ids), (s, s), num_points=k, num_memory=self.memory_points,
                          text_dim=self.model.text_dim,
                          memory_dim=self.model.dim)
        for j, o in enumerate(obj_ids):
            pr = state.prompts[o]
            p.valid[0, j] = True
            if pr.view is not None and pr.view in window:
                p.view[0, j] = window.index(pr.view)
                if pr.points is not None:
                    p.points[0, j, : len(pr.points)] = torch.from_numpy(pr.points)
                    p.labels[0, j, : len(pr.labels)] = torch.from_numpy(pr.labels)
                if pr.mask is not None:
                    p.masks[0, j] = torch.from_numpy(pr.mask.astype(np.float32))
                    p.has_mask[0, j] = True
            if pr.text_embedding is not None:
                p.text[0, j] = pr.text_embedding
                p.has_text[0, j] = True
            if o in memory:
                pts, feat = memory[o]
                p.memory_points[0, j, : len(pts)] = torch.from_numpy(pts)
                p.memory_valid[0, j, : len(pts)] = True
                p.memory_feat[0, j] = torch.from_numpy(feat)
        return p.to(self.device)

    @torch.no_grad()
    def propagate(self, state: TrackerState, start_view: int | None = None, reverse: bool = False,
                  max_views: int | None = None) -> Iterator[tuple[int, list[int], np.ndarray, np.ndarray]]:
        """Yield ``(view, obj_ids, masks bool [N, H, W], scores [N])`` per view (input size; score = presence
        probability), in frame order from ``start_view`` (default the first view; with ``reverse`` in backward
        order from it, default the last view), at most ``max_views`` views (default all). Windows are processed
        one after another; each window's encoding is kept in the state, so propagating again after
        :meth:`add_prompt` (a correction click) only decodes."""
        if not state.prompts:
            raise InputError("no prompts: call add_prompt(state, ...) before propagate(state)")
        import cv2

        views = self._views(state, start_view, reverse, max_views)
        position = {v: i for i, v in enumerate(views)}
        obj_ids = state.obj_ids
        s = self._size()
        t = state.num_views
        if state.extrinsics is None or len(state.extrinsics) != t:
            state.extrinsics = np.zeros((t, 3, 4), np.float32)
            state.intrinsics = np.zeros((t, 3, 3), np.float32)
            state.depth = np.zeros((t, s, s), np.float32)
        state.clouds = {o: np.zeros((0, 3), np.float32) for o in obj_ids}
        state.cloud_colors = {o: np.zeros((0, 3), np.float32) for o in obj_ids}
        memory: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        is_g2tam = isinstance(self.model, G2TAM)
        for window, emit in self._windows(state, views):
            encoded = self._encode(state, window)
            prompts = self._build_prompts(state, obj_ids, window, memory)
            if is_g2tam:
                wp = encoded["world_points"][0].float().cpu().numpy()  # [S, s, s, 3]
                feats = encoded["feats"][0]
                masks, prob = self._two_pass_decode(state, obj_ids, window, encoded, prompts, wp, feats, memory)
            else:
                masks, prob = self._decode(encoded, prompts)
            masks_np = masks.cpu().numpy()
            prob_np = prob.float().cpu().numpy()
            if is_g2tam:
                for i, v in enumerate(window):
                    if v in emit:
                        state.extrinsics[v] = encoded["extrinsics"][0, i].float().cpu().numpy()
                        state.intrinsics[v] = encoded["intrinsics"][0, i].float().cpu().numpy()
                        state.depth[v] = encoded["depth"][0, i, ..., 0].float().cpu().numpy()
                self._update_memory(state, obj_ids, window, emit, masks, wp, feats, memory)
            for i, v in sorted(((window.index(v), v) for v in emit), key=lambda x: position[x[1]]):
                full = np.stack([cv2.resize(m.astype(np.uint8), (state.width, state.height),
                                            interpolation=cv2.INTER_NEAREST) > 0 for m in masks_np[i]])
                yield v, list(obj_ids), full, prob_np[i].astype(np.float32)

    def _decode(self, encoded: dict[str, Any], prompts: Prompts,
                views: list[int] | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """Best-hypothesis masks ``[V, N, s, s]`` (emptied under the presence threshold) and presence ``[V, N]``
        on the window's ``views`` (indices into the window; default all, V = S)."""
        out = self.model.decode(encoded, prompts) if views is None else self.model.decode(encoded, prompts, views)
        best, _ = select_best_mask(out["masks"][0], out["iou"][0])
        prob = out["presence"][0].sigmoid()
        return (best > self.mask_threshold) & (prob[..., None, None] >= self.presence_threshold), prob

    def _lift(self, masks: np.ndarray, wp: np.ndarray, feats: torch.Tensor,
              carried: tuple[np.ndarray, np.ndarray] | None) -> tuple[np.ndarray, np.ndarray] | None:
        """An object's 3D memory from its masks ``[V, s, s]`` on views with world points ``[V, s, s, 3]`` and
        features ``[V, d, gh, gw]``, merged with the ``carried`` (points, feature): ``memory_points`` evenly
        spaced points and the mean feature under the masks (the carried feature when the masks are empty)."""
        pts = wp[masks]
        pts = pts[np.isfinite(pts).all(1)]
        if carried is not None:
            pts = np.concatenate([carried[0], pts])
        if len(pts) == 0:
            return None
        take = np.linspace(0, len(pts) - 1, min(self.memory_points, len(pts))).round().astype(int)
        grid = F.adaptive_avg_pool2d(torch.from_numpy(masks).float()[:, None].to(feats.device), feats.shape[-2:])
        denom = grid.sum()
        if float(denom) > 0:
            feat = ((feats * grid).sum(dim=(0, 2, 3)) / denom).float().cpu().numpy()
        elif carried is not None:
            feat = carried[1]
        else:
            feat = np.zeros(feats.shape[1], np.float32)
        return pts[take].astype(np.float32), np.asarray(feat, np.float32)

    def _first_pass_views(self, state: TrackerState, obj_ids: list[int], window: list[int]) -> list[int]:
        """The window's views (indices into it) whose first-pass masks :meth:`_second_pass_memory` reads: each
        visual prompt's view in this window; every view when an object has a text prompt only."""
        rows = set()
        for o in obj_ids:
            view = state.prompts[o].view
            if view is None:
                return list(range(len(window)))
            if view in window:
                rows.add(window.index(view))
        return sorted(rows)

    def _two_pass_decode(self, state: TrackerState, obj_ids: list[int], window: list[int], encoded: dict[str, Any],
                         prompts: Prompts, wp: np.ndarray, feats: torch.Tensor,
                         memory: dict[int, tuple[np.ndarray, np.ndarray]]) -> tuple[torch.Tensor, torch.Tensor]:
        """G2TAM's masks ``[S, N, s, s]`` and presence ``[S, N]`` on a window: with ``refine``, a first pass on the
        views the second pass lifts from (:meth:`_first_pass_views`), then every view decoded with the lifted
        memory; each view's masks are those of decoding every view in both passes (a view's decode does not depend
        on which other views are decoded with it)."""
        rows = self._first_pass_views(state, obj_ids, window) if self.refine else []
        if not rows:
            return self._decode(encoded, prompts)
        every = len(rows) == len(window)
        masks, prob = self._decode(encoded, prompts, None if every else rows)
        lifted = self._second_pass_memory(state, obj_ids, window, rows, masks, prob, wp, feats, memory)
        if lifted is not None:
            return self._decode(encoded, self._build_prompts(state, obj_ids, window, lifted))
        return (masks, prob) if every else self._decode(encoded, prompts)

    def _second_pass_memory(self, state: TrackerState, obj_ids: list[int], window: list[int], rows: list[int],
                            masks: torch.Tensor, prob: torch.Tensor, wp: np.ndarray, feats: torch.Tensor,
                            memory: dict[int, tuple[np.ndarray, np.ndarray]]) -> dict[int, tuple[np.ndarray,
                                                                                              np.ndarray]] | None:
        """Carried memory plus each object's first-pass mask lifted to 3D: on its prompted view for a visual
        prompt in this window, on the view where it is most surely present (presence at least
        ``presence_threshold``) for a text-only prompt. Objects with a visual prompt outside this window keep
        their carried memory only. ``masks [R, N, s, s]`` and ``prob [R, N]`` are the first pass on the window's
        views ``rows`` (every view when an object has a text prompt only). None when no object has anything
        to add."""
        masks_np = masks.cpu().numpy()  # [R, N, s, s]
        prob_np = prob.float().cpu().numpy()  # [R, N]
        lifted, added = dict(memory), False
        for j, o in enumerate(obj_ids):
            view = state.prompts[o].view
            if view is None:
                r = int(prob_np[:, j].argmax())
                if prob_np[r, j] < self.presence_threshold:
                    continue
            elif view in window:
                r = rows.index(window.index(view))
            else:
                continue
            i = rows[r]
            entry = self._lift(masks_np[[r], j], wp[[i]], feats[[i]], memory.get(o))
            if entry is not None:
                lifted[o] = entry
                added = True
        return lifted if added else None

    def _update_memory(self, state: TrackerState, obj_ids: list[int], window: list[int], emit: list[int],
                       masks: torch.Tensor, wp: np.ndarray, feats: torch.Tensor,
                       memory: dict[int, tuple[np.ndarray, np.ndarray]]) -> None:
        """Carry each object's 3D points + mean appearance forward; grow its (capped) point cloud."""
        masks_np = masks.cpu().numpy()  # [S, N, s, s]
        for j, o in enumerate(obj_ids):
            sel = masks_np[:, j]
            emit_idx = [window.index(v) for v in emit]
            new_pts = wp[emit_idx][sel[emit_idx]]
            new_col = state.frames[emit][sel[emit_idx]].astype(np.float32) / 255.0
            finite = np.isfinite(new_pts).all(1)
            cloud = np.concatenate([state.clouds[o], new_pts[finite]])
            colors = np.concatenate([state.cloud_colors[o], new_col[finite]])
            if len(cloud) > self.max_cloud_points:
                keep = np.linspace(0, len(cloud) - 1, self.max_cloud_points).round().astype(int)
                cloud, colors = cloud[keep], colors[keep]
            state.clouds[o], state.cloud_colors[o] = cloud.astype(np.float32), colors.astype(np.float32)
            entry = self._lift(sel, wp, feats, None)
            if entry is not None:
                memory[o] = entry
