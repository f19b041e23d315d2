"""Depth tool: how a pretrained monocular depth network (TCMonoDepth, :mod:`vision.weights.nets.tcmonodepth`) sees
the clip over time.

TCMonoDepth predicts relative inverse depth (larger = nearer; unknown scale and shift) from one frame and was
trained to be temporally consistent on real video. Frames are taken as runs of ``block_len`` consecutive frames
spread over the clip (all frames when the clip has at most ``max_frames``), and predicted at ``size`` px (shorter
side). Every map is normalised to scale-and-shift invariance, ``n(d) = (d - median d) / mean |d - median d|``, and
luma at the same resolution gets the same normalisation, so depth and image changes are in comparable units.
DIS optical flow (ULTRAFAST preset) between luma frames (at the depth resolution) gives the motion.

Features (pixels at the depth resolution):

* ``flicker``: median over consecutive pairs of ``mean |n(d_t+1) - n(d_t)| / (mean |n(I_t+1) - n(I_t)| + 0.05)``:
  depth that changes more than the picture does (per-frame generation with independent noise re-decides the depth
  layout each frame).
* ``warp_error``: median over consecutive pairs of ``mean |n(d_t) - n(d_t+1)(p + flow)|``: depth change that the
  motion does not explain (temporal inconsistency after motion compensation).
* ``parallax_rank``: over pairs ``(t, t + g)`` with motion, the mean Spearman rank correlation between ``n(d_t)``
  and the magnitude of the flow left after removing the homography that best explains it (RANSAC on the flow
  field). A camera translating through a 3-D scene gives near points (large inverse depth) the larger residual
  motion; a picture that is not a view of the depth it shows (a still moved in 2-D, a composite, frames whose
  depth is re-decided each frame) does not.
* ``h_depth_residual``: over the same pairs, the mean of ``mean |n(d_t) - n(d_t+g)(H(p))|``: how far the depth map
  of ``t + g`` is from the one of ``t`` carried by that homography; a still animated by 2-D warps has depth maps
  that move exactly with one homography (small), real footage with parallax does not, and depth that flickers
  does not either (large).

The pairs are every ``(t, t + g)`` inside one run of frames for each gap ``g`` in ``gaps`` (1, 2 and 3 frames by
default). A generator that re-makes some frames then changes some of the pairs (frame interpolation replaces every
other frame and keeps both ends of an even-length run, so a run's two ends alone would not see it), and the
several gaps give both the short pairs that frame-level inconsistency shows in and the longer ones that collect
more parallax.
Pairs whose mean flow magnitude is under ``min_motion`` px do not enter ``parallax_rank`` and
``h_depth_residual`` (nan when none has motion); a frozen clip is not applicable.
"""

from __future__ import annotations

from typing import Any

import cv2
import numpy as np

from vision.forensics.tools.base import Clip, ForensicTool, max_block_region
from vision.forensics.tools.motion import dis_flow, warp
from vision.forensics.tools.planar import homography_flow

__all__ = ["DepthTool", "depth_net", "normalise", "sample_blocks", "span_pairs_of"]

FEATURES = ("flicker", "warp_error", "parallax_rank", "h_depth_residual")
BORDER = 4  # px dropped at the border of the depth maps (warps replicate the border there)
_NET: dict[str, Any] = {}


def depth_net() -> Any:
    """The TCMonoDepth network, loaded once per process on the CPU (missing weights raise
    :class:`vision.weights.WeightsError`, naming the fetch command)."""
    if "net" not in _NET:
        from vision.weights.nets.tcmonodepth import load_tcmonodepth

        _NET["net"] = load_tcmonodepth(device="cpu")
    return _NET["net"]


def normalise(image: np.ndarray) -> np.ndarray:
    """Scale-and-shift invariant form ``(x - median x) / mean |x - median x|`` of ``float [H, W]`` (zeros for a
    constant map)."""
    x = image.astype(np.float32)
    centred = x - np.median(x)
    spread = float(np.abs(centred).mean())
    return centred / spread if spread > 1e-8 else np.zeros_like(centred)


def sample_blocks(num_frames: int, max_frames: int, block_len: int) -> list[list[int]]:
    """Frame indices as runs of consecutive frames: one run of all frames when ``num_frames <= max_frames``,
    else ``max_frames // block_len`` runs of ``block_len`` frames spread evenly without overlap."""
    if num_frames <= max_frames:
        return [list(range(num_frames))]
    count = max(1, max_frames // block_len)
    starts = sorted({int(round(s)) for s in np.linspace(0, num_frames - block_len, count)})
    return [list(range(s, s + block_len)) for s in starts]


def span_pairs_of(blocks: list[list[int]], gaps: tuple[int, ...]) -> list[tuple[int, int]]:
    """Every pair ``(block[i], block[i + g])`` of each run of frames for each gap ``g`` (in frames of the run)."""
    return [(block[i], block[i + g]) for block in blocks for g in gaps for i in range(len(block) - g)]


def _rank_correlation(rx: np.ndarray, ry: np.ndarray) -> float:
    """Spearman rank correlation from the ranks ``[N]`` of two vectors; nan when either is constant."""
    if rx.std() == 0 or ry.std() == 0:
        return float("nan")
    return float(np.corrcoef(rx, ry)[0, 1])


def _flow_homography(flow: np.ndarray, step: int = 4) -> np.ndarray | None:
    """The homography (3x3, pixels of frame a -> b) that best explains the flow ``[H, W, 2]``: RANSAC (1 px) on
    the flow sampled every ``step`` px inside the border; None when it cannot be fitted."""
    h, w = flow.shape[:2]
    ys, xs = np.mgrid[BORDER:h - BORDER:step, BORDER:w - BORDER:step]
    src = np.stack([xs.ravel(), ys.ravel()], axis=1).astype(np.float32)
    if len(src) < 8:
        return None
    dst = src + flow[ys.ravel(), xs.ravel()]
    hmat, _ = cv2.findHomography(src, dst, cv2.RANSAC, 1.0)
    return hmat


class DepthTool(ForensicTool):
    """Relative depth over time (see the module docstring).

    Args:
        size: depth network input size (shorter side, px; the network rounds the sides to multiples of 32).
        max_frames: frames predicted at most. block_len: consecutive frames per run when the clip is longer.
        min_motion: mean flow magnitude (px at the depth resolution) under which a pair counts as not moving.
        gaps: frame gaps of the pairs ``parallax_rank`` and ``h_depth_residual`` are measured on (pairs inside one
            run of frames).
    """

    name = "depth"
    feature_names = FEATURES
    descriptions = {
        "flicker": "change of the scale-and-shift normalised depth between consecutive frames, relative to the "
                   "change of the picture",
        "warp_error": "change of the normalised depth between consecutive frames that the optical flow does not "
                      "explain",
        "parallax_rank": "rank correlation between predicted inverse depth and the motion left after removing one "
                         "homography (near points should show more parallax)",
        "h_depth_residual": "how far a later depth map is from the earlier one moved by one homography (a 2-D "
                            "warped still gives depth that moves exactly with it)",
    }
    min_frames = 2
    version = 2  # pair features over every pair of gaps 1-3 inside a run, ULTRAFAST flow

    def __init__(self, size: int = 64, max_frames: int = 16, block_len: int = 4, min_motion: float = 0.25,
                 gaps: tuple[int, ...] = (1, 2, 3)) -> None:
        self.size, self.max_frames, self.block_len, self.min_motion = size, max_frames, max(2, block_len), min_motion
        self.gaps = tuple(sorted({int(g) for g in gaps if int(g) >= 1})) or (1,)

    def measure(self, clip: Clip) -> tuple[dict[str, float], dict, dict[str, Any]] | str:
        from scipy.stats import rankdata

        from vision.weights.nets.tcmonodepth import predict_depth

        if not clip.frame_changes().any():
            return "frozen video: no frame differs from the previous one"
        blocks = sample_blocks(clip.num_frames, self.max_frames, self.block_len)
        idx = [i for block in blocks for i in block]
        depth = predict_depth(depth_net(), clip.frames[idx], size=self.size)  # [n, h, w]
        h, w = depth.shape[1:]
        pos = {f: n for n, f in enumerate(idx)}
        nd = {f: normalise(depth[pos[f]]) for f in idx}
        ni = {f: normalise(cv2.resize(clip.gray(f), (w, h), interpolation=cv2.INTER_AREA).astype(np.float32))
              for f in idx}
        gray = {f: cv2.resize(clip.gray(f), (w, h), interpolation=cv2.INTER_AREA) for f in idx}
        inner = np.zeros((h, w), bool)
        inner[BORDER:h - BORDER, BORDER:w - BORDER] = True
        flows: dict[tuple[int, int], np.ndarray] = {}  # ULTRAFAST DIS flow of a pair, shared by all features

        def flow_of(a: int, b: int) -> np.ndarray:
            if (a, b) not in flows:
                flows[a, b] = dis_flow(gray[a], gray[b], cv2.DISOPTICAL_FLOW_PRESET_ULTRAFAST)
            return flows[a, b]

        flicker, warp_err, pair_frames = [], [], []
        worst = (-1.0, None, None)
        for block in blocks:
            for a, b in zip(block[:-1], block[1:]):
                change = float(np.abs(nd[b] - nd[a])[inner].mean())
                image_change = float(np.abs(ni[b] - ni[a])[inner].mean())
                flicker.append(change / (image_change + 0.05))
                err = np.abs(nd[a] - warp(nd[b], flow_of(a, b)))
                warp_err.append(float(err[inner].mean()))
                pair_frames.append([a, b])
                if warp_err[-1] > worst[0]:
                    worst = (warp_err[-1], [a, b], np.where(inner, err, 0.0))
        depth_ranks: dict[int, np.ndarray] = {}  # ranks of a frame's inner depth, shared by the pairs it starts
        ranks, h_res, span_pairs = [], [], []
        for a, b in span_pairs_of(blocks, self.gaps):
            flow = flow_of(a, b)
            if float(np.linalg.norm(flow, axis=2)[inner].mean()) < self.min_motion:
                continue
            hmat = _flow_homography(flow)
            if hmat is None:
                continue
            h_flow = homography_flow(hmat, h, w)
            residual = np.linalg.norm(flow - h_flow, axis=2)
            if a not in depth_ranks:
                depth_ranks[a] = rankdata(nd[a][inner])
            ranks.append(_rank_correlation(depth_ranks[a], rankdata(residual[inner])))
            carried = warp(nd[b], h_flow)
            h_res.append(float(np.abs(nd[a] - carried)[inner].mean()))
            span_pairs.append([a, b])
        finite_ranks = [r for r in ranks if np.isfinite(r)]
        values = {"flicker": float(np.median(flicker)) if flicker else float("nan"),
                  "warp_error": float(np.median(warp_err)) if warp_err else float("nan"),
                  "parallax_rank": float(np.mean(finite_ranks)) if finite_ranks else float("nan"),
                  "h_depth_residual": float(np.mean(h_res)) if h_res else float("nan")}
        sy, sx = clip.height / h, clip.width / w
        locations: dict[str, tuple[list[int], list[int] | None]] = {k: (idx, None) for k in FEATURES}
        if worst[1] is not None:
            x0, y0, x1, y1 = max_block_region(worst[2], max(4, min(h, w) // 4))
            region = [int(x0 * sx), int(y0 * sy), int(min(clip.width, x1 * sx)), int(min(clip.height, y1 * sy))]
            locations["warp_error"] = (worst[1], region)
        span_frames = sorted({f for p in span_pairs for f in p})
        locations["parallax_rank"] = locations["h_depth_residual"] = (span_frames or idx, None)
        extras: dict[str, Any] = {"frames": idx, "pairs": pair_frames, "flicker": flicker, "warp_error": warp_err,
                                  "depth_scale": [float(np.abs(d - np.median(d)).mean()) for d in depth],
                                  "span_pairs": span_pairs, "parallax_rank": ranks, "h_depth_residual": h_res}
        return values, locations, extras
