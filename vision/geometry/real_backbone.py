"""The real-perception backbone: the geometry backbone's outputs (per-view features, depth, confidences, cameras,
world points) for real video, from registered pretrained networks instead of the tiny renders' backbone.

- **Depth**: TCMonoDepth's small network (registry ``tcmonodepth-small``, frozen) gives relative inverse depth
  (disparity) on the *geometry grid*, the frame resized so its shorter side is ``depth_size`` (sides multiples of
  32, :func:`vision.weights.nets.tcmonodepth.network_size`). Z-depth is ``ref / max(disparity, near_share ref)``
  with ``ref`` the median disparity of the stream's first frame: one scale for the whole video (the network is
  temporally consistent), the first frame's median depth 1, pixels at the far clamp given confidence 0.
- **Cameras**: frame to frame, as the camera solver (:mod:`vision.geometry.solver`) does between views: DIS flow
  between consecutive grid images with a forward-backward check, the previous frame's pixels lifted by its depth,
  RANSAC PnP into the new frame (at most ``max_correspondences`` evenly spaced correspondences), composed with the
  previous camera. The world is the first frame's camera; a frame whose PnP finds fewer than ``min_inliers``
  inliers keeps the previous camera (``tracked`` False): a static camera is the safer guess than a wild one.
- **Intrinsics**: a user's video carries no calibration; the focal length is ``focal`` times the grid's longer side
  (1.0: about 53 degrees across), the principal point the grid's centre.
- **Detector** (``detector``): YOLOX-nano as a torch network (registry ``yolox-nano``, frozen), the network the
  real-frame detector's body (:class:`vision.detection.yolox_body.YOLOXBody`) is built on; the real tracker's point
  and text prompts are answered with it, and a body built on it (``YOLOXBody(net=backbone.detector)``) shares it.
- **Features**: the NanoTrack backbone (registry ``nanotrack-v2``, MobileNetV3, frozen; the network the tracker's
  appearance memory runs on) on the frame resized to twice the grid: ``[C, 2h / 16, 2w / 16]`` per view.

Conventions: OpenCV camera-from-world extrinsics ``[3, 4]``; pixel ``(u, v)`` is the integer pixel index of the
grid; :meth:`FrameGeometry.project` / :meth:`FrameGeometry.lift` convert to and from the frame's own pixels.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import cv2
import numpy as np
import torch
from torch import nn

from vision.errors import InputError
from vision.geometry.solver import consistent_pixels, dis_flows, lift_pixels, pnp_camera

__all__ = ["RealPerceptionConfig", "FrameGeometry", "RealPerception"]


@dataclasses.dataclass(frozen=True)
class RealPerceptionConfig:
    """What selects and sizes the real-perception backbone (recorded in the tracker's checkpoints).

    Args:
        depth: registry name of the depth network (``tcmonodepth-small``).
        features: registry name of the feature network (``nanotrack-v2`` or ``nanotrack-v3``).
        depth_size: the geometry grid's shorter side (pixels).
        focal: the assumed focal length, a multiple of the grid's longer side.
        near_share: disparities under this share of the first frame's median are clamped (the far plane).
        consistency_px: the flow's forward-backward tolerance (grid pixels).
        reprojection_px: PnP's inlier tolerance (grid pixels).
        min_inliers: PnP inliers a frame's camera needs to be taken.
        max_correspondences: correspondences PnP samples from, evenly spaced.
        detector: registry name of the object detector the backbone holds (``yolox-nano``: the torch network the
            real-frame detector's body is built on, :class:`vision.weights.nets.yolox.YOLOXNano`), or None for none.
    """

    depth: str = "tcmonodepth-small"
    features: str = "nanotrack-v2"
    depth_size: int = 128
    focal: float = 1.0
    near_share: float = 0.05
    consistency_px: float = 1.0
    reprojection_px: float = 1.0
    min_inliers: int = 40
    max_correspondences: int = 1500
    detector: str | None = "yolox-nano"

    def __post_init__(self) -> None:
        if self.detector not in (None, "yolox-nano"):
            raise InputError(f"RealPerceptionConfig.detector must be 'yolox-nano' or None, got {self.detector!r}")
        if self.depth != "tcmonodepth-small":
            raise InputError(f"RealPerceptionConfig.depth: only 'tcmonodepth-small' is registered, got {self.depth!r}")
        if self.features not in ("nanotrack-v2", "nanotrack-v3"):
            raise InputError(f"RealPerceptionConfig.features must be 'nanotrack-v2' or 'nanotrack-v3', got "
                             f"{self.features!r}")
        for name in ("depth_size", "min_inliers", "max_correspondences"):
            if int(getattr(self, name)) < 1:
                raise InputError(f"RealPerceptionConfig.{name} must be >= 1, got {getattr(self, name)}")
        for name in ("focal", "near_share", "consistency_px", "reprojection_px"):
            if not float(getattr(self, name)) > 0:
                raise InputError(f"RealPerceptionConfig.{name} must be > 0, got {getattr(self, name)}")


@dataclasses.dataclass
class FrameGeometry:
    """One frame's geometry on the grid.

    Attributes:
        depth: float32 ``[h, w]`` z-depth (the stream's scale).
        depth_conf: float32 ``[h, w]``: 1 where the depth is measured, 0 at the far clamp.
        intrinsics: float64 ``[3, 3]`` in grid pixels.
        extrinsics: float64 ``[3, 4]`` camera-from-world (the world: the first frame's camera).
        frame_size: ``(W, H)`` of the frame.
        tracked: whether the camera was solved from this frame's correspondences (False: the previous one kept).
        inliers: PnP inliers of that solve (0 on the first frame or when kept).
        correspondences: the correspondences PnP was given (flow-consistent pixels with measured depth; 0 on the
            first frame).
    """

    depth: np.ndarray
    depth_conf: np.ndarray
    intrinsics: np.ndarray
    extrinsics: np.ndarray
    frame_size: tuple[int, int]
    tracked: bool = True
    inliers: int = 0
    correspondences: int = 0

    @property
    def grid_scale(self) -> np.ndarray:
        """Grid pixels per frame pixel, ``(sx, sy)``."""
        return np.array([self.depth.shape[1] / self.frame_size[0], self.depth.shape[0] / self.frame_size[1]])

    def world_points(self) -> np.ndarray:
        """float32 ``[h, w, 3]``: every grid pixel lifted by its depth into the world."""
        h, w = self.depth.shape
        v, u = np.mgrid[0:h, 0:w]
        pixels = np.stack([u.ravel(), v.ravel()], 1).astype(np.float64)
        return self._to_world(lift_pixels(pixels, self.depth, self.intrinsics)).reshape(h, w, 3).astype(np.float32)

    def _to_world(self, cam: np.ndarray) -> np.ndarray:
        rotation, translation = self.extrinsics[:, :3], self.extrinsics[:, 3]
        return (cam - translation) @ rotation  # R^T (x - t), row by row

    def lift(self, uv: np.ndarray) -> np.ndarray:
        """World points ``[K, 3]`` of frame pixels ``uv [K, 2]`` (the depth of the nearest grid pixel)."""
        grid = np.asarray(uv, np.float64).reshape(-1, 2) * self.grid_scale
        h, w = self.depth.shape
        grid[:, 0] = grid[:, 0].clip(0, w - 1)
        grid[:, 1] = grid[:, 1].clip(0, h - 1)
        return self._to_world(lift_pixels(grid, self.depth, self.intrinsics))

    def lift_at(self, uv: np.ndarray, z: float) -> np.ndarray:
        """The world point ``[3]`` at frame pixel ``uv (u, v)`` and z-depth ``z``."""
        grid = np.asarray(uv, np.float64) * self.grid_scale
        k = self.intrinsics
        cam = np.array([(grid[0] - k[0, 2]) / k[0, 0] * z, (grid[1] - k[1, 2]) / k[1, 1] * z, z])
        return self._to_world(cam[None])[0]

    def project(self, points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """World points ``[K, 3]`` -> (frame pixels ``[K, 2]``, z-depth ``[K]`` in this camera; <= 0 behind it)."""
        cam = np.asarray(points, np.float64).reshape(-1, 3) @ self.extrinsics[:, :3].T + self.extrinsics[:, 3]
        z = cam[:, 2]
        safe = np.where(np.abs(z) > 1e-9, z, 1e-9)
        grid = np.stack([cam[:, 0] / safe * self.intrinsics[0, 0] + self.intrinsics[0, 2],
                         cam[:, 1] / safe * self.intrinsics[1, 1] + self.intrinsics[1, 2]], 1)
        return grid / self.grid_scale, z

    def depth_at(self, uv: np.ndarray, radius: int = 1) -> np.ndarray:
        """Median z-depth ``[K]`` of the grid pixels within ``radius`` of frame pixels ``uv [K, 2]`` (nan where
        outside the frame)."""
        grid = np.rint(np.asarray(uv, np.float64).reshape(-1, 2) * self.grid_scale).astype(int)
        h, w = self.depth.shape
        out = np.full(len(grid), np.nan)
        for k, (u, v) in enumerate(grid):
            if 0 <= u < w and 0 <= v < h:
                out[k] = np.median(self.depth[max(v - radius, 0):v + radius + 1, max(u - radius, 0):u + radius + 1])
        return out

    def box_depth(self, box_xywh: np.ndarray, inner: float = 0.5) -> float:
        """Median z-depth over the central ``inner`` share (per side) of a frame box ``(x, y, w, h)``; nan when that
        part misses the frame."""
        x, y, bw, bh = (float(v) for v in box_xywh)
        sx, sy = self.grid_scale
        cx, cy = (x + bw / 2) * sx, (y + bh / 2) * sy
        hw, hh = max(bw * sx * inner / 2, 0.5), max(bh * sy * inner / 2, 0.5)
        h, w = self.depth.shape
        x0, x1 = int(max(np.floor(cx - hw), 0)), int(min(np.ceil(cx + hw), w))
        y0, y1 = int(max(np.floor(cy - hh), 0)), int(min(np.ceil(cy + hh), h))
        if x1 <= x0 or y1 <= y0:
            return float("nan")
        return float(np.median(self.depth[y0:y1, x0:x1]))


class RealPerception(nn.Module):
    """The real-perception backbone (see the module docstring), frozen: streams frames one by one
    (:meth:`reset`, :meth:`step`) or encodes a clip at once (:meth:`forward`).

    Args:
        config: :class:`RealPerceptionConfig`.
        depth_net: a loaded TCMonoDepth network (None: the registered weights, which must have been fetched).
        feature_net: a loaded :class:`~vision.weights.nets.nanotrack.NanoTrack` (None: as above); the tracker
            passes its own so that one network serves both.
    """

    def __init__(self, config: RealPerceptionConfig | None = None, depth_net: nn.Module | None = None,
                 feature_net: nn.Module | None = None, detector_net: nn.Module | None = None) -> None:
        super().__init__()
        self.config = config or RealPerceptionConfig()
        self.detector: nn.Module | None = None
        if self.config.detector is not None:
            if detector_net is None:
                from vision.weights.nets.yolox import load_yolox_nano

                detector_net = load_yolox_nano(self.config.detector)
            self.detector = detector_net.eval().requires_grad_(False)
        if depth_net is None:
            from vision.weights.nets.tcmonodepth import load_tcmonodepth

            depth_net = load_tcmonodepth()
        if feature_net is None:
            from vision.weights.nets.nanotrack import load_nanotrack

            feature_net = load_nanotrack(self.config.features.split("-")[1])
        self.depth_net = depth_net.eval().requires_grad_(False)
        self.feature_net = feature_net.eval().requires_grad_(False)
        self.reset()

    def detect(self, frame: np.ndarray, score_threshold: float = 0.3) -> dict[str, np.ndarray]:
        """COCO objects in ``frame`` (uint8 ``[H, W, 3]`` RGB) by the backbone's detector
        (:meth:`vision.weights.nets.yolox.YOLOXNano.detect`: ``boxes`` XYXY, ``scores``, ``classes``)."""
        if self.detector is None:
            raise InputError("this real-perception backbone holds no detector (RealPerceptionConfig.detector None)")
        return self.detector.detect(frame, score_threshold=score_threshold)

    def reset(self) -> None:
        """Forget the stream: the next :meth:`step` is a first frame (the world's origin and depth scale)."""
        self._previous: tuple[np.ndarray, FrameGeometry] | None = None
        self._reference: float | None = None

    def grid_size(self, height: int, width: int) -> tuple[int, int]:
        """The geometry grid ``(h, w)`` of a ``height x width`` frame."""
        from vision.weights.nets.tcmonodepth import network_size

        return network_size(height, width, self.config.depth_size)

    def intrinsics(self, h: int, w: int) -> np.ndarray:
        """The assumed ``[3, 3]`` intrinsics of an ``h x w`` grid."""
        f = self.config.focal * max(h, w)
        return np.array([[f, 0.0, (w - 1) / 2], [0.0, f, (h - 1) / 2], [0.0, 0.0, 1.0]])

    @torch.no_grad()
    def disparity(self, grid_image: np.ndarray) -> np.ndarray:
        """TCMonoDepth's relative inverse depth of a grid image (uint8 ``[h, w, 3]`` RGB) -> float32 ``[h, w]``."""
        device = next(self.depth_net.parameters()).device
        x = torch.from_numpy(np.ascontiguousarray(grid_image)).to(device, torch.float32).permute(2, 0, 1)[None]
        return self.depth_net(x)[0, 0].float().cpu().numpy()

    def _depth(self, disparity: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        if self._reference is None:
            median = float(np.median(disparity))
            self._reference = median if median > 0 else 1.0
        floor = self.config.near_share * self._reference
        conf = (disparity > floor).astype(np.float32)
        return (self._reference / np.maximum(disparity, floor)).astype(np.float32), conf

    def step(self, frame: np.ndarray) -> FrameGeometry:
        """The next frame of the stream (uint8 ``[H, W, 3]`` RGB) -> its :class:`FrameGeometry`."""
        frame = np.asarray(frame)
        if frame.ndim != 3 or frame.shape[2] != 3 or frame.dtype != np.uint8 or min(frame.shape[:2]) < 1:
            raise InputError(f"frame must be uint8 [H, W, 3] RGB, got {frame.dtype} {list(frame.shape)}")
        height, width = frame.shape[:2]
        h, w = self.grid_size(height, width)
        grid = cv2.resize(frame, (w, h), interpolation=cv2.INTER_AREA)
        depth, conf = self._depth(self.disparity(grid))
        k = self.intrinsics(h, w)
        extrinsics, tracked, inliers, given = np.eye(3, 4), True, 0, 0
        if self._previous is not None:
            previous_grid, previous = self._previous
            if previous_grid.shape != grid.shape:
                raise InputError(f"frame size changed within the stream: {previous.frame_size} then {(width, height)}")
            extrinsics, tracked, inliers, given = self._camera(previous_grid, previous, grid, k)
        geometry = FrameGeometry(depth, conf, k, extrinsics, (width, height), tracked, inliers, given)
        self._previous = (grid, geometry)
        return geometry

    def _camera(self, previous_grid: np.ndarray, previous: FrameGeometry, grid: np.ndarray,
                k: np.ndarray) -> tuple[np.ndarray, bool, int, int]:
        """This frame's camera from the previous one (see the module docstring): ``(extrinsics, solved, inliers,
        correspondences given to PnP)``."""
        cfg = self.config
        grey_a = cv2.cvtColor(previous_grid, cv2.COLOR_RGB2GRAY)
        grey_b = cv2.cvtColor(grid, cv2.COLOR_RGB2GRAY)
        forward, backward = dis_flows(grey_a, grey_b)
        ref, tgt = consistent_pixels(forward, backward, 1, cfg.consistency_px)
        if len(ref) > cfg.max_correspondences:
            take = np.linspace(0, len(ref) - 1, cfg.max_correspondences).round().astype(int)
            ref, tgt = ref[take], tgt[take]
        points = lift_pixels(ref, previous.depth, previous.intrinsics)
        good = previous.depth_conf[np.rint(ref[:, 1]).astype(int), np.rint(ref[:, 0]).astype(int)] > 0
        given = int(good.sum())
        relative, count = pnp_camera(points[good], tgt[good], k, cfg.reprojection_px, 200)
        if relative is None or count < cfg.min_inliers:
            return previous.extrinsics.copy(), False, 0, given
        rotation = relative[:, :3] @ previous.extrinsics[:, :3]
        translation = relative[:, :3] @ previous.extrinsics[:, 3] + relative[:, 3]
        return np.concatenate([rotation, translation[:, None]], 1), True, count, given

    @torch.no_grad()
    def features(self, frame: np.ndarray) -> torch.Tensor:
        """The feature network on a frame resized to twice its grid: float ``[C, 2h / 16, 2w / 16]``."""
        h, w = self.grid_size(*frame.shape[:2])
        image = cv2.resize(frame, (2 * w, 2 * h), interpolation=cv2.INTER_AREA)
        device = next(self.feature_net.parameters()).device
        x = torch.from_numpy(np.ascontiguousarray(image)).to(device, torch.float32).permute(2, 0, 1)[None]
        return self.feature_net.features(x)[0]

    def forward(self, frames: np.ndarray) -> dict[str, Any]:
        """A clip at once (uint8 ``[S, H, W, 3]`` RGB, in time order; the stream is reset first) -> the geometry
        backbone's outputs on the grid: ``feats [S, C, gh, gw]``, ``depth [S, h, w, 1]``, ``depth_conf [S, h, w]``,
        ``world_points [S, h, w, 3]``, ``extrinsics [S, 3, 4]``, ``intrinsics [S, 3, 3]`` (float32 tensors) and
        ``tracked [S]`` (bool)."""
        frames = np.asarray(frames)
        if frames.ndim != 4 or len(frames) == 0:
            raise InputError(f"frames must be uint8 [S, H, W, 3] with S >= 1, got {list(frames.shape)}")
        self.reset()
        geometry = [self.step(frame) for frame in frames]
        self.reset()

        def stack(values: list[np.ndarray]) -> torch.Tensor:
            return torch.from_numpy(np.stack(values).astype(np.float32))

        return {"feats": torch.stack([self.features(frame) for frame in frames]).float(),
                "depth": stack([g.depth for g in geometry])[..., None],
                "depth_conf": stack([g.depth_conf for g in geometry]),
                "world_points": stack([g.world_points() for g in geometry]),
                "extrinsics": stack([g.extrinsics for g in geometry]),
                "intrinsics": stack([g.intrinsics for g in geometry]),
                "tracked": torch.tensor([g.tracked for g in geometry])}
