"""Cameras solved from correspondences and the backbone's depth: the geometry model's default camera path.

At the tiny scale the camera head does not learn relative pose, while the depth head does (docs/geometry.md). The
solver turns that depth into cameras, as VGGT's optional bundle adjustment and DUSt3R's global alignment turn
predicted geometry plus correspondences into cameras:

1. **Dense correspondences with view 0**: OpenCV's DIS optical flow from view 0 to view i and back, on the grey
   images upsampled by the integer factor that brings their longer side nearest ``flow_size`` (a 64 px view is too
   small for the flow's patches: it is upsampled 4 times, a 128 px view twice, views over about 170 px not at all);
   a pixel of view 0 is kept when the backward flow brings it back within ``consistency_px`` (forward-backward
   check) and it lands inside view i.
2. **PnP**: the kept pixels of view 0 are lifted to 3D by view 0's predicted depth and intrinsics; view i's camera is
   the RANSAC PnP fit (EPnP samples, inliers within ``reprojection_px`` under view i's predicted intrinsics), refined
   by Levenberg-Marquardt on its inliers.
3. **Selection**: the PnP camera is kept when its inliers cover more than ``min_inliers`` of view i's pixels;
   otherwise (a wide baseline, where flow finds no consistent motion) view i keeps the ``fallback`` camera the caller
   passes: the cameras registered from the learned patch matches, else the camera head's.

Conventions: OpenCV camera-from-world extrinsics ``[3, 4]``; the world is view 0's camera frame (view 0's camera is
the identity) at the scale of view 0's predicted depth; pixel (u, v) is the pixel's integer index, as in
:func:`vision.geometry.camera.depth_to_camera_points`. The defaults were chosen on training clips of both kinds
(docs/geometry.md, "The camera solver").
"""

from __future__ import annotations

import dataclasses

import cv2
import numpy as np

from vision.errors import InputError

__all__ = ["CameraSolver", "flow_correspondences", "pnp_camera"]


def _grey(image: np.ndarray, upsample: int) -> np.ndarray:
    """uint8 ``[H, W, 3]`` RGB -> uint8 grey ``[upsample * H, upsample * W]`` (bicubic)."""
    grey = cv2.cvtColor(image, cv2.COLOR_RGB2GRAY)
    if upsample == 1:
        return grey
    return cv2.resize(grey, None, fx=upsample, fy=upsample, interpolation=cv2.INTER_CUBIC)


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
    flow = cv2.DISOpticalFlow_create(cv2.DISOPTICAL_FLOW_PRESET_MEDIUM)
    ref, tgt = _grey(reference, upsample), _grey(target, upsample)
    forward, backward = flow.calc(ref, tgt, None), flow.calc(tgt, ref, None)
    big_h, big_w = ref.shape
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
    """Cameras of one clip from dense flow with view 0, view 0's predicted depth and PnP (see the module docstring).

    Args:
        flow_size: the flow runs on views upsampled by the integer factor (at least 1) nearest ``flow_size`` divided
            by their longer side.
        consistency_px: forward-backward tolerance of a kept correspondence, in input pixels.
        reprojection_px: PnP's RANSAC inlier tolerance, in input pixels.
        min_inliers: the PnP camera replaces the fallback when its inliers exceed this fraction of the view's pixels.
        iterations: RANSAC samples per view.
    """

    flow_size: int = 256
    consistency_px: float = 0.5
    reprojection_px: float = 0.5
    min_inliers: float = 0.05
    iterations: int = 500

    def upsample_for(self, height: int, width: int) -> int:
        """The integer factor the flow upsamples ``height x width`` views by."""
        return max(1, round(self.flow_size / max(height, width)))

    def __call__(self, images: np.ndarray, depth: np.ndarray, intrinsics: np.ndarray,
                 fallback: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Solve one clip.

        Args:
            images: uint8 RGB ``[S, H, W, 3]``; depth: view 0's predicted z-depth ``[H, W]`` (or every view's,
                ``[S, H, W]``: only view 0's is read); intrinsics: predicted ``[S, 3, 3]`` in input pixels.
            fallback: ``[S, 3, 4]`` camera-from-world cameras in the same world frame and scale (view 0 the
                identity), kept for the views the flow does not solve.

        Returns:
            ``(extrinsics [S, 3, 4] float64, inliers [S] float64)``: the cameras and, per view, the PnP inliers'
            share of the view's pixels (view 0: 1; a view that kept its fallback: that share, at most
            ``min_inliers``).
        """
        images = np.asarray(images)
        s, h, w = images.shape[:3]
        depth0 = np.asarray(depth, dtype=np.float64)
        depth0 = depth0[0] if depth0.ndim == 3 else depth0
        if images.dtype != np.uint8 or images.ndim != 4 or images.shape[-1] != 3:
            raise InputError(f"CameraSolver: images must be uint8 [S, H, W, 3], got {images.dtype} {images.shape}")
        if depth0.shape != (h, w) or np.shape(intrinsics) != (s, 3, 3) or np.shape(fallback) != (s, 3, 4):
            raise InputError(f"CameraSolver: depth [H, W] = {(h, w)}, intrinsics [S, 3, 3] and fallback [S, 3, 4] "
                             f"for S = {s}; got {depth0.shape}, {np.shape(intrinsics)}, {np.shape(fallback)}")
        intrinsics = np.asarray(intrinsics, dtype=np.float64)
        extrinsics = np.asarray(fallback, dtype=np.float64).copy()
        extrinsics[0] = np.eye(3, 4)
        share = np.zeros(s)
        share[0] = 1.0
        k0 = intrinsics[0]
        upsample = self.upsample_for(h, w)
        for i in range(1, s):
            ref, tgt = flow_correspondences(images[0], images[i], upsample, self.consistency_px)
            u, v = np.rint(ref[:, 0]).astype(int), np.rint(ref[:, 1]).astype(int)
            z = depth0[v, u]
            good = np.isfinite(z) & (z > 0)
            points = np.stack([(ref[:, 0] - k0[0, 2]) / k0[0, 0] * z, (ref[:, 1] - k0[1, 2]) / k0[1, 1] * z, z], 1)
            camera, count = pnp_camera(points[good], tgt[good], intrinsics[i], self.reprojection_px, self.iterations)
            share[i] = count / float(h * w)
            if camera is not None and share[i] > self.min_inliers:
                extrinsics[i] = camera
        return extrinsics, share
