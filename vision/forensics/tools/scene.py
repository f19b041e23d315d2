"""Scene tool: whether the clip is a view of one rigid 3-D scene, read from the shared real-perception backbone
(:class:`vision.geometry.real_backbone.RealPerception`, the backbone G2TAM tracks real video on).

The backbone gives every frame TCMonoDepth depth on its geometry grid (``depth_size`` px shorter side) and solves
each frame's camera from the previous one (DIS flow with a forward-backward check, the previous depth lifted, RANSAC
PnP). Frames are taken as ``max_frames // block_len`` runs of ``block_len`` consecutive frames spread over the clip
(all frames when the clip has at most ``max_frames``); the backbone's stream restarts at each run. Features:

* ``camera_solved``: the share of frames after a run's first whose camera PnP solved (enough inliers). Footage of a
  rigid scene gives flow that depth and one camera motion explain; frames whose content is re-decided (per-frame
  generation, cuts, morphs) do not.
* ``pnp_inlier_share``: the median share of PnP's correspondences that are its inliers, over the solved frames.
* ``depth_reprojection``: over consecutive solved pairs ``(a, b)``, the median of ``|log(z_ab / d_b)|``, where
  ``z_ab`` is the depth of a's grid pixels (measured depth only) carried into b by the two cameras and ``d_b`` the
  depth b measures where they land: depth and camera motion that agree with each other give small values.
* ``cam_jerk``: the mean over runs of the camera centres' third difference relative to their speed (a handheld or
  dolly camera moves smoothly; cameras that jump between solutions do not); nan for runs shorter than 4 frames.

Frozen clips are not applicable (no motion to solve). Not in the detector's default tools: its worth on generated
video is measured by the forensics benchmarks before any default takes it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from vision.forensics.tools.base import Clip, ForensicTool

__all__ = ["SceneTool", "perception"]

FEATURES = ("camera_solved", "pnp_inlier_share", "depth_reprojection", "cam_jerk")
_BACKBONE: dict[str, Any] = {}


def perception() -> Any:
    """The process-wide real-perception backbone, on the depth tool's TCMonoDepth network and without the object
    detector, which the tool does not read (missing weights raise :class:`vision.weights.WeightsError`, naming the
    fetch command)."""
    if "backbone" not in _BACKBONE:
        from vision.forensics.tools.depth import depth_net
        from vision.geometry.real_backbone import RealPerception, RealPerceptionConfig

        _BACKBONE["backbone"] = RealPerception(RealPerceptionConfig(detector=None), depth_net=depth_net())
    return _BACKBONE["backbone"]


def depth_reprojection(a: Any, b: Any, step: int = 2) -> float:
    """Median ``|log(z_ab / d_b)|`` of frame ``a``'s measured grid pixels (every ``step``-th) carried into frame
    ``b`` (:class:`~vision.geometry.real_backbone.FrameGeometry` of one stream); nan when none lands in ``b``."""
    world = a.world_points()[::step, ::step][a.depth_conf[::step, ::step] > 0]
    if not len(world):
        return float("nan")
    uv, z = b.project(world)
    grid = np.rint(uv * b.grid_scale).astype(int)
    h, w = b.depth.shape
    inside = (z > 0) & (grid[:, 0] >= 0) & (grid[:, 0] < w) & (grid[:, 1] >= 0) & (grid[:, 1] < h)
    if not inside.any():
        return float("nan")
    measured = b.depth[grid[inside, 1], grid[inside, 0]]
    kept = b.depth_conf[grid[inside, 1], grid[inside, 0]] > 0
    if not kept.any():
        return float("nan")
    return float(np.median(np.abs(np.log(z[inside][kept] / measured[kept]))))


class SceneTool(ForensicTool):
    """3-D scene consistency from the real-perception backbone (see the module docstring).

    Args:
        max_frames: frames measured at most. block_len: frames per run.
        backbone: a :class:`~vision.geometry.real_backbone.RealPerception` (None: the process-wide one,
            :func:`perception`).
    """

    name = "scene"
    feature_names = FEATURES
    descriptions = {
        "camera_solved": "share of frames whose camera the real backbone's PnP solved from the previous frame",
        "pnp_inlier_share": "median share of PnP correspondences (flow and depth) that one camera motion explains",
        "depth_reprojection": "median |log| ratio of depth carried to the next frame by the solved cameras to the "
                              "depth measured there",
        "cam_jerk": "real-backbone camera-centre jerk relative to speed",
    }
    min_frames = 3

    def __init__(self, max_frames: int = 16, block_len: int = 8, backbone: Any = None) -> None:
        self.max_frames, self.block_len, self.backbone = max_frames, block_len, backbone

    def measure(self, clip: Clip) -> tuple[dict[str, float], dict, dict[str, Any]] | str:
        from vision.forensics.tools.depth import sample_blocks

        if not clip.frame_changes().any():
            return "frozen: no frame differs from the one before, so there is no motion to solve a camera from"
        backbone = self.backbone if self.backbone is not None else perception()
        solved, shares, errors, jerks, used = [], [], [], [], []
        for run in sample_blocks(clip.num_frames, self.max_frames, self.block_len):
            backbone.reset()
            geometry = [backbone.step(clip.frames[t]) for t in run]
            backbone.reset()
            used += run
            for previous, current in zip(geometry, geometry[1:]):
                solved.append(current.tracked)
                if current.tracked and current.correspondences:
                    shares.append(current.inliers / current.correspondences)
                    if previous.tracked:
                        errors.append(depth_reprojection(previous, current))
            centres = np.stack([-g.extrinsics[:, :3].T @ g.extrinsics[:, 3] for g in geometry])
            if len(centres) >= 4:
                speed = float(np.linalg.norm(np.diff(centres, axis=0), axis=1).mean())
                jerks.append(float(np.linalg.norm(np.diff(centres, n=3, axis=0), axis=1).mean() / (speed + 1e-6)))
        errors = [e for e in errors if np.isfinite(e)]
        values = {"camera_solved": float(np.mean(solved)) if solved else float("nan"),
                  "pnp_inlier_share": float(np.median(shares)) if shares else float("nan"),
                  "depth_reprojection": float(np.median(errors)) if errors else float("nan"),
                  "cam_jerk": float(np.mean(jerks)) if jerks else float("nan")}
        return values, {k: (used, None) for k in FEATURES}, {}
