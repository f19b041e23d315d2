"""The non-learned generator families of the AIGV benchmark (:mod:`vision.prepare.aigv`).

Each function is one real mechanism by which generated or manipulated video is made, applied to real footage or
real photographs. Frames are ``uint8 [L, H, W, 3]`` RGB in and out; randomness comes only from the
``numpy.random.Generator`` passed in (deterministic seeding).

Families (``family`` field of a split entry) and their generators (``generator`` field):
    ``interpolation``: ``interp_flow`` (every odd frame replaced by a midpoint backward-warped from both
        neighbours along DIS optical flow, the flow-based frame interpolation of video generators and "smooth
        motion" up-converters) and ``interp_blend`` (every odd frame replaced by the 50/50 blend of its
        neighbours, the cross-fade interpolation of cheap frame-rate converters).
    ``animation``: ``animate`` (a still photograph animated by a smooth virtual camera: zoom, rotation, drift and a
        little keystone, one homography per frame, no parallax; the "Ken Burns" / image-to-video mechanism).
    ``upscaling``: ``upscale`` (video downscaled 2-4x and upscaled back with bicubic or Lanczos interpolation and an
        unsharp mask: the missing high frequencies and halo artefacts of super-resolution).
    ``splice``: ``splice`` (an object/face-sized ellipse replaced, over time, by content from another clip through
        a feathered mask that moves along a smooth path: a face-swap / inpainting style local manipulation).
The ``perframe`` family (learned models applied per frame with independent noise) lives in
:mod:`vision.prepare.aigv_generators`.
"""

from __future__ import annotations

import cv2
import numpy as np

from vision.errors import InputError

__all__ = ["FAMILY_OF", "interp_flow", "interp_blend", "animate_still", "upscale", "splice_mask", "splice"]

#: ``generator -> family`` for every generator of the benchmark (the learned ones included).
FAMILY_OF: dict[str, str] = {
    "vae": "vae", "nextframe": "nextframe", "diffusion": "diffusion",
    "interp_flow": "interpolation", "interp_blend": "interpolation",
    "animate": "animation",
    "perframe_vae": "perframe", "perframe_diffusion": "perframe",
    "upscale": "upscaling",
    "splice": "splice",
    "cgi": "cgi", "render": "cgi",
}


def _check_clip(frames: np.ndarray, name: str, min_len: int = 3) -> None:
    if frames.ndim != 4 or frames.shape[-1] != 3 or frames.dtype != np.uint8 or len(frames) < min_len:
        raise InputError(f"{name}: expected uint8 frames [L>={min_len}, H, W, 3]; got {frames.dtype} "
                         f"{tuple(frames.shape)}")


# ---------------------------------------------------------------------------------------------------------------
# interpolation


def _flow(a: np.ndarray, b: np.ndarray, dis: cv2.DISOpticalFlow) -> np.ndarray:
    """DIS optical flow ``float32 [H, W, 2]`` (x, y) from RGB frame ``a`` to ``b``: a's pixel p moves to p + F(p)."""
    return dis.calc(cv2.cvtColor(a, cv2.COLOR_RGB2GRAY), cv2.cvtColor(b, cv2.COLOR_RGB2GRAY), None)


def _backward_warp(image: np.ndarray, flow: np.ndarray) -> np.ndarray:
    """Sample ``image`` at ``p + flow(p)`` (bilinear, border replicated): ``float32 [H, W, 3]``."""
    h, w = flow.shape[:2]
    gx, gy = np.meshgrid(np.arange(w, dtype=np.float32), np.arange(h, dtype=np.float32))
    return cv2.remap(image.astype(np.float32), gx + flow[..., 0], gy + flow[..., 1], cv2.INTER_LINEAR,
                     borderMode=cv2.BORDER_REPLICATE)


def flow_midpoint(a: np.ndarray, b: np.ndarray, dis: cv2.DISOpticalFlow | None = None) -> np.ndarray:
    """The frame halfway between RGB frames ``a`` and ``b`` (``uint8 [H, W, 3]``).

    Flows F01 (a -> b) and F10 (b -> a); the flows from the midpoint t = 1/2 are approximated as in Super SloMo,
    F_t0 = -t(1-t) F01 + t^2 F10 and F_t1 = (1-t)^2 F01 - t(1-t) F10, and the midpoint is the mean of ``a``
    backward-warped along F_t0 and ``b`` backward-warped along F_t1.
    """
    dis = dis or cv2.DISOpticalFlow_create(cv2.DISOPTICAL_FLOW_PRESET_MEDIUM)
    f01, f10 = _flow(a, b, dis), _flow(b, a, dis)
    f_t0 = 0.25 * (f10 - f01)
    f_t1 = 0.25 * (f01 - f10)
    mid = 0.5 * (_backward_warp(a, f_t0) + _backward_warp(b, f_t1))
    return np.clip(mid.round(), 0, 255).astype(np.uint8)


def interp_flow(frames: np.ndarray) -> np.ndarray:
    """Every odd frame t with both neighbours (1 <= t <= L-2) replaced by :func:`flow_midpoint` of frames t-1 and
    t+1; even frames (and a final odd frame) are kept: ``uint8 [L, H, W, 3]``."""
    _check_clip(frames, "interp_flow")
    dis = cv2.DISOpticalFlow_create(cv2.DISOPTICAL_FLOW_PRESET_MEDIUM)
    out = frames.copy()
    for t in range(1, len(frames) - 1, 2):
        out[t] = flow_midpoint(frames[t - 1], frames[t + 1], dis)
    return out


def interp_blend(frames: np.ndarray) -> np.ndarray:
    """Every odd frame t with both neighbours replaced by the blend (frame[t-1] + frame[t+1]) / 2 (rounded):
    ``uint8 [L, H, W, 3]``."""
    _check_clip(frames, "interp_blend")
    out = frames.copy()
    for t in range(1, len(frames) - 1, 2):
        out[t] = ((frames[t - 1].astype(np.uint16) + frames[t + 1] + 1) // 2).astype(np.uint8)
    return out


# ---------------------------------------------------------------------------------------------------------------
# animation of a still


def camera_homographies(still_hw: tuple[int, int], length: int, size: int,
                        rng: np.random.Generator) -> np.ndarray:
    """``float64 [L, 3, 3]``: for each frame, the homography mapping still pixel coordinates (x, y) to output
    pixels of a ``size`` x ``size`` frame. A square window of the still (side 55-80% of the shorter side) is
    zoomed (x0.8-1.25 over the clip), rotated (up to +-8 degrees), drifted and keystoned (corners moved by up to
    3% of the window) along smooth (cosine-eased) paths; every window corner stays inside the still."""
    h, w = still_hw
    short = min(h, w)
    side0 = rng.uniform(0.55, 0.8) * short
    zoom = rng.uniform(0.8, 1.25)
    angle = np.deg2rad(rng.uniform(-8, 8))
    keystone = rng.uniform(-0.03, 0.03, size=(4, 2)) * side0
    half_diag = 0.5 * np.sqrt(2) * side0 * max(1.0, 1.0 / zoom) + np.abs(keystone).max()
    if 2 * half_diag >= short:
        side0 *= 0.95 * short / (2 * half_diag)
        keystone *= 0.95 * short / (2 * half_diag)
        half_diag = 0.5 * np.sqrt(2) * side0 * max(1.0, 1.0 / zoom) + np.abs(keystone).max()
    lo_x, hi_x, lo_y, hi_y = half_diag, w - half_diag, half_diag, h - half_diag
    c0 = np.array([rng.uniform(lo_x, hi_x), rng.uniform(lo_y, hi_y)])
    c1 = np.array([rng.uniform(lo_x, hi_x), rng.uniform(lo_y, hi_y)])
    c1 = c0 + np.clip(c1 - c0, -0.25 * side0, 0.25 * side0)  # a drift, not a jump
    unit = np.array([[-0.5, -0.5], [0.5, -0.5], [0.5, 0.5], [-0.5, 0.5]])
    out_corners = np.array([[0, 0], [size, 0], [size, size], [0, size]], np.float32)
    hs = []
    for i in range(length):
        s = 0.5 - 0.5 * np.cos(np.pi * i / max(1, length - 1))  # eased progress 0 -> 1
        side = side0 / (zoom ** s)  # zooming in shrinks the window
        rot = angle * s
        r = np.array([[np.cos(rot), -np.sin(rot)], [np.sin(rot), np.cos(rot)]])
        quad = (unit * side) @ r.T + c0 + s * (c1 - c0) + s * keystone * (side / side0)
        hs.append(cv2.getPerspectiveTransform(quad.astype(np.float32), out_corners))
    return np.stack(hs)


def animate_still(still: np.ndarray, length: int, size: int, rng: np.random.Generator) -> np.ndarray:
    """Animate an RGB photograph ``uint8 [H, W, 3]`` into ``uint8 [length, size, size, 3]`` by a smooth virtual
    camera (:func:`camera_homographies`); the still is first area-resized so its window is about 1.5x ``size``
    (each output pixel averages real pixels, as a camera's would)."""
    if still.ndim != 3 or still.shape[-1] != 3 or still.dtype != np.uint8:
        raise InputError(f"animate: expected a uint8 RGB still [H, W, 3]; got {still.dtype} {tuple(still.shape)}")
    scale = min(1.0, 1.5 * size / (0.55 * min(still.shape[:2])))
    small = cv2.resize(still, (max(8, round(still.shape[1] * scale)), max(8, round(still.shape[0] * scale))),
                       interpolation=cv2.INTER_AREA) if scale < 1 else still
    hs = camera_homographies(small.shape[:2], length, size, rng)
    return np.stack([cv2.warpPerspective(small, hmat, (size, size), flags=cv2.INTER_LINEAR,
                                         borderMode=cv2.BORDER_REFLECT) for hmat in hs])


# ---------------------------------------------------------------------------------------------------------------
# super-resolution style upscaling


def upscale(frames: np.ndarray, rng: np.random.Generator, factor: float | None = None,
            method: str | None = None) -> np.ndarray:
    """Downscale every frame by ``factor`` (default: drawn from [2, 4]) with area averaging, upscale back to the
    same size with ``method`` (``"cubic"`` or ``"lanczos"``, default drawn) and sharpen with an unsharp mask
    (Gaussian sigma 1-1.5 px, amount 0.5-1.0): ``uint8 [L, H, W, 3]``."""
    _check_clip(frames, "upscale", min_len=1)
    factor = float(factor if factor is not None else rng.uniform(2.0, 4.0))
    method = method or ("cubic", "lanczos")[int(rng.integers(2))]
    if factor < 1.0 or method not in ("cubic", "lanczos"):
        raise InputError(f"upscale: factor must be >= 1 and method cubic|lanczos; got {factor}, {method!r}")
    sigma, amount = rng.uniform(1.0, 1.5), rng.uniform(0.5, 1.0)
    h, w = frames.shape[1:3]
    small = (max(1, round(w / factor)), max(1, round(h / factor)))
    interp = cv2.INTER_CUBIC if method == "cubic" else cv2.INTER_LANCZOS4
    out = []
    for frame in frames:
        up = cv2.resize(cv2.resize(frame, small, interpolation=cv2.INTER_AREA), (w, h), interpolation=interp)
        up = up.astype(np.float32)
        blur = cv2.GaussianBlur(up, (0, 0), sigma)
        out.append(np.clip(up + amount * (up - blur), 0, 255).round().astype(np.uint8))
    return np.stack(out)


# ---------------------------------------------------------------------------------------------------------------
# splicing


def splice_mask(length: int, size: int, rng: np.random.Generator) -> np.ndarray:
    """``float32 [L, size, size]`` in [0, 1]: a feathered ellipse (axes 18-28% and 22-34% of ``size``, edge blurred
    with sigma 4% of ``size``) whose centre moves along a smooth eased path inside the frame."""
    ax = (rng.uniform(0.18, 0.28) * size, rng.uniform(0.22, 0.34) * size)
    margin = np.array(ax) + 0.05 * size
    start = rng.uniform(margin, size - margin)
    end = rng.uniform(margin, size - margin)
    end = start + np.clip(end - start, -0.3 * size, 0.3 * size)
    sigma = 0.04 * size
    masks = []
    for i in range(length):
        s = 0.5 - 0.5 * np.cos(np.pi * i / max(1, length - 1))
        cx, cy = start + s * (end - start)
        m = np.zeros((size, size), np.float32)
        cv2.ellipse(m, (int(round(cx * 16)), int(round(cy * 16))), (int(round(ax[0] * 16)), int(round(ax[1] * 16))),
                    0, 0, 360, 1.0, thickness=-1, lineType=cv2.LINE_AA, shift=4)
        masks.append(cv2.GaussianBlur(m, (0, 0), sigma))
    return np.clip(np.stack(masks), 0, 1)


def splice(target: np.ndarray, donor: np.ndarray, rng: np.random.Generator,
           return_mask: bool = False) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
    """Replace a moving, feathered region of ``target`` ``uint8 [L, H, W, 3]`` (square, H == W) by ``donor`` (the
    same shape, another clip): ``out = m * donor + (1 - m) * target`` with ``m`` from :func:`splice_mask`. The donor
    content is colour-matched to the target inside the region (mean and std per channel over the clip), as splicing
    tools do so the seam is not a trivial colour jump. Returns the clip (and the mask ``[L, H, W]`` if
    ``return_mask``)."""
    _check_clip(target, "splice", min_len=1)
    if donor.shape != target.shape or target.shape[1] != target.shape[2]:
        raise InputError(f"splice: target and donor must be the same square clip shape; got "
                         f"{tuple(target.shape)} and {tuple(donor.shape)}")
    mask = splice_mask(len(target), target.shape[1], rng)
    t, d = target.astype(np.float32), donor.astype(np.float32)
    weight = mask[..., None]
    wsum = weight.sum() + 1e-6
    t_mean, d_mean = (t * weight).sum((0, 1, 2)) / wsum, (d * weight).sum((0, 1, 2)) / wsum
    t_std = np.sqrt((weight * (t - t_mean) ** 2).sum((0, 1, 2)) / wsum) + 1e-3
    d_std = np.sqrt((weight * (d - d_mean) ** 2).sum((0, 1, 2)) / wsum) + 1e-3
    matched = (d - d_mean) * (t_std / d_std) + t_mean
    out = np.clip(weight * matched + (1 - weight) * t, 0, 255).round().astype(np.uint8)
    return (out, mask) if return_mask else out
