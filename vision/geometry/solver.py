"""Cameras solved from correspondences and the backbone's depth: the geometry model's default camera path.

At the tiny scale the camera head does not learn relative pose, while the depth head does (docs/geometry.md). The
solver turns that depth into cameras, as VGGT's optional bundle adjustment and DUSt3R's global alignment turn
predicted geometry plus correspondences into cameras:

1. **Dense correspondences between every two views**: OpenCV's DIS optical flow from view i to view j and back, on
   the grey images upsampled by the integer factor that brings their longer side nearest ``flow_size`` (a 64 px view
   is too small for the flow's patches: it is upsampled 4 times, a 128 px view twice, views over about 170 px not at
   all); a pixel of view i is kept when the backward flow brings it back within ``consistency_px`` (forward-backward
   check) and it lands inside view j. The same two flows give the pair's correspondences in both directions.
2. **PnP per ordered pair**: the kept pixels of view i are lifted to 3D by view i's predicted depth and intrinsics;
   view j's camera relative to view i is the RANSAC PnP fit (EPnP samples, inliers within ``reprojection_px`` under
   view j's predicted intrinsics), refined by Levenberg-Marquardt on its inliers; the pair's strength is its
   inliers' share of the view's pixels.
3. **A maximum spanning tree from view 0** (Prim's): starting from view 0, the unplaced view with the strongest pair
   from a placed view is placed by composing that pair's camera with the placed view's, while that pair's inliers
   cover more than ``min_inliers`` of the view. A view two wide steps from view 0 is thus reached through a view
   between them, and each view is placed from the neighbour that sees it best. A view no placed view relates to (a
   wide baseline, where flow finds no consistent motion) keeps the ``fallback`` camera the caller passes: the
   cameras registered from the learned patch matches, else the camera head's.

S views cost S(S-1)/2 flow pairs and S(S-1) PnP fits.

Conventions: OpenCV camera-from-world extrinsics ``[3, 4]``; the world is view 0's camera frame (view 0's camera is
the identity) at the scale of the predicted depth; pixel (u, v) is the pixel's integer index, as in
:func:`vision.geometry.camera.depth_to_camera_points`. The defaults were chosen on training clips of both kinds
(docs/geometry.md, "The camera solver").
"""

from __future__ import annotations

import dataclasses
from typing import Any

import cv2
import numpy as np
import torch

from vision.errors import InputError
from vision.geometry.camera import compose_extrinsics

__all__ = ["CameraSolver", "consistent_pixels", "dis_flows", "flow_correspondences", "lift_pixels", "pnp_camera"]


def _grey(image: np.ndarray, upsample: int) -> np.ndarray:
    """uint8 ``[H, W, 3]`` RGB -> uint8 grey ``[upsample * H, upsample * W]`` (bicubic)."""
    grey = cv2.cvtColor(image, cv2.COLOR_RGB2GRAY)
    if upsample == 1:
        return grey
    return cv2.resize(grey, None, fx=upsample, fy=upsample, interpolation=cv2.INTER_CUBIC)


def dis_flows(reference: np.ndarray, target: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """DIS optical flow ``[H, W, 2]`` from grey ``reference`` to grey ``target`` and back."""
    flow = cv2.DISOpticalFlow_create(cv2.DISOPTICAL_FLOW_PRESET_MEDIUM)
    return flow.calc(reference, target, None), flow.calc(target, reference, None)


def consistent_pixels(forward: np.ndarray, backward: np.ndarray, upsample: int,
                consistency_px: float) -> tuple[np.ndarray, np.ndarray]:
    """The reference pixels (on the input grid) whose ``forward`` flow lands inside the target and whose
    ``backward`` flow returns them within ``consistency_px`` input pixels: ``(reference [K, 2], target [K, 2])``
    float64 (u, v) in input pixels. ``forward``, ``backward``: flows on the grids upsampled ``upsample`` times."""
    big_h, big_w = forward.shape[:2]
    # the input grid's pixel centres on the upsampled grid: u -> upsample * u + (upsample - 1) / 2
    ys, xs = np.mgrid[0:big_h:upsample, 0:big_w:upsample] + (upsample - 1) // 2
    start = np.stack([xs.ravel(), ys.ravel()], 1)
    landed = start + forward[start[:, 1], start[:, 0]]
    inside = (landed[:, 0] >= 0) & (landed[:, 0] <= big_w - 1) & (landed[:, 1] >= 0) & (landed[:, 1] <= big_h - 1)
    near = np.rint(landed).astype(int)
    near[:, 0] = near[:, 0].clip(0, big_w - 1)
    near[:, 1] = near[:, 1].clip(0, big_h - 1)
    back = landed + backward[near[:, 1], near[:, 0]]
    keep = inside & (np.linalg.norm(back - start, axis=1) < consistency_px * upsample)
    offset = (upsample - 1) / 2
    return ((start[keep] - offset) / upsample).astype(np.float64), ((landed[keep] - offset) / upsample).astype(
        np.float64)


def flow_correspondences(reference: np.ndarray, target: np.ndarray, upsample: int = 4,
                         consistency_px: float = 0.5) -> tuple[np.ndarray, np.ndarray]:
    """Forward-backward consistent dense correspondences from ``reference`` to ``target``.

    Args:
        reference, target: uint8 RGB images ``[H, W, 3]`` of the same size.
        upsample: the flow runs on the images upsampled this many times (bicubic).
        consistency_px: a pixel is kept when the backward flow returns it within this many input pixels.

    Returns:
        ``(reference_pixels [K, 2], target_pixels [K, 2])`` float64 (u, v) in input pixels: every reference pixel
        (on the input grid) that is kept, and where it lands in ``target``.
    """
    if reference.shape != target.shape or reference.ndim != 3 or reference.shape[-1] != 3:
        raise InputError(f"flow_correspondences: two RGB images [H, W, 3] of one size, got {reference.shape} "
                         f"and {target.shape}")
    forward, backward = dis_flows(_grey(reference, upsample), _grey(target, upsample))
    return consistent_pixels(forward, backward, upsample, consistency_px)


def lift_pixels(pixels: np.ndarray, depth: np.ndarray, intrinsics: np.ndarray) -> np.ndarray:
    """Pixels ``[K, 2]`` (u, v) of a view with z-depth ``[H, W]`` and intrinsics ``[3, 3]`` -> camera points
    ``[K, 3]`` (the depth of the nearest pixel)."""
    u, v = np.rint(pixels[:, 0]).astype(int), np.rint(pixels[:, 1]).astype(int)
    z = depth[v, u]
    return np.stack([(pixels[:, 0] - intrinsics[0, 2]) / intrinsics[0, 0] * z,
                     (pixels[:, 1] - intrinsics[1, 2]) / intrinsics[1, 1] * z, z], 1)


def pnp_camera(points: np.ndarray, pixels: np.ndarray, intrinsics: np.ndarray, reprojection_px: float = 0.5,
               iterations: int = 500) -> tuple[np.ndarray | None, int]:
    """The camera that sees world ``points [K, 3]`` at ``pixels [K, 2]``: RANSAC PnP (EPnP samples) then
    Levenberg-Marquardt on the inliers. Returns ``(extrinsics [3, 4] float64 or None, inlier count)``; None (and 0)
    when fewer than 6 points agree."""
    if len(points) < 6:
        return None, 0
    found, rvec, tvec, inliers = cv2.solvePnPRansac(
        points.astype(np.float64), pixels.astype(np.float64), intrinsics.astype(np.float64), None,
        iterationsCount=iterations, reprojectionError=reprojection_px, confidence=0.999, flags=cv2.SOLVEPNP_EPNP)
    if not found or inliers is None or len(inliers) < 6:
        return None, 0
    keep = inliers[:, 0]
    rvec, tvec = cv2.solvePnPRefineLM(points[keep].astype(np.float64), pixels[keep].astype(np.float64),
                                      intrinsics.astype(np.float64), None, rvec, tvec)
    rotation, _ = cv2.Rodrigues(rvec)
    return np.concatenate([rotation, tvec.reshape(3, 1)], axis=1), len(keep)


@dataclasses.dataclass(frozen=True)
class CameraSolver:
    """Cameras of one clip from dense flow between its views, their predicted depth and PnP, joined by a maximum
    spanning tree from view 0 (see the module docstring).

    Args:
        flow_size: the flow runs on views upsampled by the integer factor (at least 1) nearest ``flow_size`` divided
            by their longer side.
        consistency_px: forward-backward tolerance of a kept correspondence, in input pixels.
        reprojection_px: PnP's RANSAC inlier tolerance, in input pixels.
        min_inliers: a pair's PnP camera joins the tree only when its inliers exceed this fraction of the view's
            pixels.
        iterations: RANSAC samples per pair.
    """

    flow_size: int = 256
    consistency_px: float = 0.5
    reprojection_px: float = 0.5
    min_inliers: float = 0.05
    iterations: int = 500

    def upsample_for(self, height: int, width: int) -> int:
        """The integer factor the flow upsamples ``height x width`` views by."""
        return max(1, round(self.flow_size / max(height, width)))

    def pair_cameras(self, images: np.ndarray, depth: np.ndarray,
                     intrinsics: np.ndarray) -> dict[tuple[int, int], tuple[np.ndarray, float]]:
        """Every ordered pair's relative camera: ``{(i, j): (T_ji [3, 4], share)}``, where ``T_ji`` maps view i's
        camera frame to view j's (at view i's depth scale) and ``share`` is its PnP inliers' fraction of the view's
        pixels; pairs whose PnP fails are absent. Arguments as :meth:`__call__`'s (already checked)."""
        s, h, w = images.shape[:3]
        upsample = self.upsample_for(h, w)
        greys = [_grey(image, upsample) for image in images]
        pairs = {}
        for i in range(s):
            for j in range(i + 1, s):
                forward, backward = dis_flows(greys[i], greys[j])  # one flow each way serves both directions
                for a, b, there, back in ((i, j, forward, backward), (j, i, backward, forward)):
                    ref, tgt = consistent_pixels(there, back, upsample, self.consistency_px)
                    points = lift_pixels(ref, depth[a], intrinsics[a])
                    good = np.isfinite(points[:, 2]) & (points[:, 2] > 0)
                    camera, count = pnp_camera(points[good], tgt[good], intrinsics[b], self.reprojection_px,
                                               self.iterations)
                    if camera is not None:
                        pairs[(a, b)] = (camera, count / float(h * w))
        return pairs

    def __call__(self, images: np.ndarray, depth: np.ndarray, intrinsics: np.ndarray,
                 fallback: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Solve one clip.

        Args:
            images: uint8 RGB ``[S, H, W, 3]``; depth: every view's predicted z-depth ``[S, H, W]`` (0 or not
                finite: not lifted); intrinsics: predicted ``[S, 3, 3]`` in input pixels.
            fallback: ``[S, 3, 4]`` camera-from-world cameras in the same world frame and scale (view 0 the
                identity), kept for the views the tree does not reach.

        Returns:
            ``(extrinsics [S, 3, 4] float64, inliers [S] float64)``: the cameras and, per view, the inlier share of
            the pair that placed it (view 0: 1; a view that kept its fallback: the best share a placed view gave
            it, at most ``min_inliers``).
        """
        images = np.asarray(images)
        depth = np.asarray(depth, dtype=np.float64)
        if images.dtype != np.uint8 or images.ndim != 4 or images.shape[-1] != 3:
            raise InputError(f"CameraSolver: images must be uint8 [S, H, W, 3], got {images.dtype} {images.shape}")
        s, h, w = images.shape[:3]
        if depth.shape != (s, h, w) or np.shape(intrinsics) != (s, 3, 3) or np.shape(fallback) != (s, 3, 4):
            raise InputError(f"CameraSolver: depth [S, H, W] = {(s, h, w)}, intrinsics [S, 3, 3] and fallback "
                             f"[S, 3, 4] for S = {s}; got {depth.shape}, {np.shape(intrinsics)}, {np.shape(fallback)}")
        intrinsics = np.asarray(intrinsics, dtype=np.float64)
        extrinsics = np.asarray(fallback, dtype=np.float64).copy()
        extrinsics[0] = np.eye(3, 4)
        share = np.zeros(s)
        share[0] = 1.0
        pairs = self.pair_cameras(images, depth, intrinsics)
        placed = {0}
        # Prim's maximum spanning tree from view 0: each step places the unplaced view with the strongest pair from a
        # placed one, composing that pair's camera with the placed view's
        while len(placed) < s:
            edges = [(fraction, a, b, camera) for (a, b), (camera, fraction) in pairs.items()
                     if a in placed and b not in placed]
            if not edges:
                break
            fraction, a, b, camera = max(edges, key=lambda edge: edge[0])
            if fraction <= self.min_inliers:
                break
            extrinsics[b] = compose_extrinsics(torch.from_numpy(camera), torch.from_numpy(extrinsics[a])).numpy()
            share[b] = fraction
            placed.add(b)
        for (a, b), (_, fraction) in pairs.items():
            if a in placed and b not in placed:
                share[b] = max(share[b], fraction)
        return extrinsics, share

    def solve_outputs(self, outputs: dict[str, Any], fallback: torch.Tensor) -> torch.Tensor:
        """Every clip of a geometry backbone's ``outputs`` solved: float64 ``[B, S, 3, 4]`` camera-from-world on the
        CPU, ``fallback [B, S, 3, 4]`` for the views the tree does not reach.

        Args:
            outputs: ``images [B, S, 3, H, W]`` in [0, 1], ``depth [B, S, H, W, 1]`` and ``intrinsics [B, S, 3, 3]``
                (the backbone's outputs; any device, no gradient taken).
            fallback: cameras in the outputs' world frame and scale (e.g. the camera head's ``extrinsics``).
        """
        images = (outputs["images"].detach().float().cpu().clamp(0, 1) * 255).round().to(torch.uint8)
        images = images.permute(0, 1, 3, 4, 2).numpy()  # [B, S, H, W, 3]
        depth = outputs["depth"][..., 0].detach().double().cpu().numpy()  # [B, S, H, W]
        intrinsics = outputs["intrinsics"].detach().double().cpu().numpy()
        fallback = fallback.detach().double().cpu().numpy()
        return torch.stack([torch.from_numpy(self(images[b], depth[b], intrinsics[b], fallback[b])[0])
                            for b in range(len(images))])
