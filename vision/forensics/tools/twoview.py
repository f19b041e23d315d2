"""Two-view tool: the geometry of matched local features between frames, with pretrained ALIKE keypoints and
descriptors (:mod:`vision.weights.nets.alike`) instead of tracked corners.

Frames are analysed in ``blocks`` runs of ``block_len`` consecutive frames ``f0 .. f3`` spread over the clip, each
frame resized so that its shorter side is ``size`` px (pixel thresholds below are at that analysis resolution, in
units of the clip's own pixels when it is smaller). Per run:

* **two-view geometry** on the pair ``(f0, f0 + gap)`` (a wider baseline than consecutive frames): mutual
  nearest-neighbour descriptor matches; a homography ``H`` and a fundamental matrix ``F``, each fitted by OpenCV's
  USAC (MAGSAC++) with a ``threshold`` px inlier threshold. ``h_inliers`` / ``f_inliers`` = the share of matches
  each explains;
  ``f_gain = f_inliers - h_inliers`` is the parallax only a 3-D scene seen from a moving camera gives (one plane,
  a still animated by 2-D warps or a static camera: F explains nothing H does not). ``epi_median`` = median
  Sampson distance of all matches to F (px); ``epi_tail`` = share of matches with a Sampson distance between
  ``threshold`` and ``4 threshold`` (near misses of the epipolar constraint: geometry that almost holds, the wobble
  of synthesised views, as opposed to gross mismatches).
* **depth-consistent parallax** (only with ``use_depth``, sharing the process-wide TCMonoDepth network of
  :mod:`vision.forensics.tools.depth`): the Spearman rank correlation between each match's parallax (its distance
  from ``H``'s prediction) and TCMonoDepth inverse depth at the match in ``f0``. Under a translating camera, near
  points (large inverse depth) have the larger parallax; a picture whose parallax ignores its own depth does not.
* **ghost matches** on every triple ``(a, m, b)`` of consecutive frames of the block: of the mutual matches
  ``a <-> b``, the share with no chain-consistent keypoint in the middle frame ``m`` (a keypoint of ``m`` that is
  the mutual match of the ``a`` keypoint in ``a <-> m`` and of the ``b`` keypoint in ``m <-> b``) is the middle's
  dropout. A cross-faded or flow-interpolated midpoint ghosts (doubled, softened structure) so its keypoints drop
  out of chains that its neighbours keep: ``dropout`` = mean over middles. Along the kept chains, a middle built
  from its neighbours is closer to each of them than they are to each other; ``ghost`` = ``|mean closeness of
  odd-indexed middles - mean closeness of even-indexed middles|`` (closeness: :func:`chain_dropout`):
  interpolation that replaces every other frame alternates, real footage does not.

Pairs whose median match displacement is under ``min_motion`` px, or with fewer than ``min_matches`` matches, are
not measured (nan); a clip where no block has a measured pair is not applicable, with the reason. Depth is relative,
so only the rank correlation of parallax with it is used.
"""

from __future__ import annotations

from typing import Any

import cv2
import numpy as np

from vision.forensics.tools.base import Clip, ForensicTool
from vision.forensics.tools.geometry import sampson_distance

__all__ = ["TwoViewTool", "block_starts", "chain_dropout", "alike_net"]

GEOMETRY = ("h_inliers", "f_inliers", "f_gain", "epi_median", "epi_tail", "dropout", "ghost")
DEPTH = ("depth_parallax",)

_ALIKE: dict[str, Any] = {}


def alike_net(name: str = "alike-t") -> Any:
    """The ALIKE network ``name``, loaded once per process on the CPU (missing weights raise
    :class:`vision.weights.WeightsError`, naming the fetch command)."""
    if name not in _ALIKE:
        from vision.weights.nets.alike import load_alike

        _ALIKE[name] = load_alike(name, device="cpu")
    return _ALIKE[name]


def block_starts(num_frames: int, blocks: int, block_len: int) -> list[int]:
    """First frame of at most ``blocks`` runs of ``block_len`` consecutive frames spread evenly over
    ``[0, num_frames)`` without overlap (one run of all frames when the clip is shorter than ``block_len``)."""
    length = min(block_len, num_frames)
    count = max(1, min(blocks, num_frames // length))
    return sorted({int(round(s)) for s in np.linspace(0, num_frames - length, count)})


def chain_dropout(desc_a: np.ndarray, desc_m: np.ndarray, desc_b: np.ndarray,
                  min_similarity: float) -> tuple[float, float]:
    """Chains of matches through the middle frame ``m`` of a triple ``(a, m, b)`` (descriptors ``[N, D]`` unit rows).

    Returns ``(dropout, closeness)``: ``dropout`` = share of the mutual matches ``a_i <-> b_k`` that have no
    chain-consistent keypoint ``m_j`` (``a_i <-> m_j`` and ``m_j <-> b_k`` both mutual matches); ``closeness`` =
    mean over the kept chains of ``(sim(m_j, a_i) + sim(m_j, b_k)) / 2 - sim(a_i, b_k)`` (how much closer the middle
    is to each neighbour than the neighbours are to each other: largest for a frame made from its neighbours).
    nan where there is no match / no chain."""
    from vision.weights.nets.alike import mutual_matches

    ab = mutual_matches(desc_a, desc_b, min_similarity)
    if len(ab) == 0:
        return float("nan"), float("nan")
    am = dict(map(tuple, mutual_matches(desc_a, desc_m, min_similarity).tolist()))
    mb = dict(map(tuple, mutual_matches(desc_m, desc_b, min_similarity).tolist()))
    chains = [(i, am[i], k) for i, k in ab.tolist() if i in am and mb.get(am[i]) == k]
    if not chains:
        return 1.0, float("nan")
    i, j, k = (np.array(c) for c in zip(*chains))
    sim_am = np.sum(desc_a[i] * desc_m[j], axis=1)
    sim_mb = np.sum(desc_m[j] * desc_b[k], axis=1)
    sim_ab = np.sum(desc_a[i] * desc_b[k], axis=1)
    return 1.0 - len(chains) / len(ab), float(np.mean(0.5 * (sim_am + sim_mb) - sim_ab))


def _spearman(x: np.ndarray, y: np.ndarray) -> float:
    """Spearman rank correlation of two ``[N]`` vectors (average ranks for ties); nan when either is constant."""
    from scipy.stats import rankdata

    rx, ry = rankdata(x), rankdata(y)
    if rx.std() == 0 or ry.std() == 0:
        return float("nan")
    return float(np.corrcoef(rx, ry)[0, 1])


class TwoViewTool(ForensicTool):
    """Two-view geometry of ALIKE matches (see the module docstring).

    Args:
        size: shorter side (px) of the analysis resolution. Pixel thresholds are in units of the coarser of the clip's
            and the analysis resolution (they scale up with an upsampled clip).
        blocks: runs of consecutive frames analysed. block_len: frames per run (its middles are the ghost
            checks). gap: frames between the two frames of the F / H pair that starts each run (at least the run's
            span, at most the clip's).
        top_k: keypoints per frame. score_threshold: keypoint score threshold. min_similarity: descriptor cosine
            similarity under which a mutual match is dropped. threshold: USAC inlier threshold (px). min_motion:
            median match displacement (px) under which a pair counts as not moving. min_matches: matches under
            which a pair is not measured.
        use_depth: add ``depth_parallax`` (needs the TCMonoDepth weights as well). depth_size: its input size.
    """

    name = "twoview"
    descriptions = {
        "h_inliers": "share of ALIKE matches between frames a few apart that one homography explains (1 px)",
        "f_inliers": "share of the same matches that one fundamental matrix explains (1 px Sampson distance)",
        "f_gain": "f_inliers - h_inliers: matches only a 3-D scene seen from a moving camera explains (parallax)",
        "epi_median": "median Sampson epipolar distance of the matches to the fitted fundamental matrix (px)",
        "epi_tail": "share of matches that narrowly miss the epipolar constraint (1 to 4 px Sampson distance)",
        "dropout": "share of matches between frames t-1 and t+1 with no consistent keypoint in frame t",
        "ghost": "difference between odd and even frames of how much closer a frame's matched descriptors are to both "
                 "neighbours than the neighbours are to each other (every other frame interpolated)",
        "depth_parallax": "rank correlation of each match's parallax beyond the homography with its predicted "
                          "inverse depth (near points should move more)",
    }
    min_frames = 3

    def __init__(self, size: int = 128, blocks: int = 2, block_len: int = 4, gap: int = 6, top_k: int = 256,
                 score_threshold: float = 0.05, min_similarity: float = 0.7, threshold: float = 1.0,
                 min_motion: float = 0.3,
                 min_matches: int = 16, use_depth: bool = True, depth_size: int = 64) -> None:
        self.size, self.blocks, self.block_len, self.gap, self.top_k = size, blocks, max(3, block_len), gap, top_k
        self.min_similarity, self.threshold, self.min_motion = min_similarity, threshold, min_motion
        self.score_threshold = score_threshold
        self.min_matches, self.use_depth, self.depth_size = min_matches, use_depth, depth_size
        self.feature_names = GEOMETRY + (DEPTH if use_depth else ())

    def _resize(self, frame: np.ndarray) -> tuple[np.ndarray, float]:
        """``frame`` resized so that its shorter side is ``size`` (area-downsampled, or cubic-upsampled: small
        frames give too few keypoints otherwise); returns it and the scale (analysis / clip)."""
        h, w = frame.shape[:2]
        scale = self.size / min(h, w)
        if abs(scale - 1.0) < 1e-6:
            return frame, 1.0
        interp = cv2.INTER_AREA if scale < 1 else cv2.INTER_CUBIC
        return cv2.resize(frame, (max(8, round(w * scale)), max(8, round(h * scale))), interpolation=interp), scale

    def measure(self, clip: Clip) -> tuple[dict[str, float], dict, dict[str, Any]] | str:
        from vision.weights.nets.alike import mutual_matches

        if not clip.frame_changes().any():
            return "frozen video: no frame differs from the previous one"
        net = alike_net()
        length = min(self.block_len, clip.num_frames)
        gap = max(length - 1, min(self.gap, clip.num_frames - 1))
        starts = block_starts(clip.num_frames - (gap - length + 1), self.blocks, length)
        unit = max(1.0, self.size / min(clip.height, clip.width))  # analysis px per coarsest px
        threshold, min_motion = self.threshold * unit, self.min_motion * unit
        cache: dict[int, dict[str, np.ndarray]] = {}

        def det(i: int) -> dict[str, np.ndarray]:
            if i not in cache:
                cache[i] = net.detect(self._resize(clip.frames[i])[0], top_k=self.top_k,
                                      score_threshold=self.score_threshold)
            return cache[i]

        geo_rows: list[list[float]] = []
        depth_corr: list[float] = []
        middles: list[tuple[int, float, float]] = []
        pairs: list[list[int]] = []
        used: set[int] = set()
        for s in starts:
            a, b = det(s), det(s + gap)
            m = mutual_matches(a["descriptors"], b["descriptors"], self.min_similarity)
            if len(m) < self.min_matches:
                continue
            pa = a["keypoints"][m[:, 0]].astype(np.float64)
            pb = b["keypoints"][m[:, 1]].astype(np.float64)
            if float(np.median(np.linalg.norm(pb - pa, axis=1))) < min_motion:
                continue
            idx = list(range(s, s + length))
            for j in range(1, length - 1):  # middles of the block's consecutive triples
                d, q = chain_dropout(det(idx[j - 1])["descriptors"], det(idx[j])["descriptors"],
                                     det(idx[j + 1])["descriptors"], self.min_similarity)
                if np.isfinite(d):
                    middles.append((idx[j], d, q))
            used.update(idx)
            try:
                hmat, h_mask = cv2.findHomography(pa, pb, cv2.USAC_MAGSAC, threshold)
                fmat, f_mask = cv2.findFundamentalMat(pa, pb, cv2.USAC_MAGSAC, threshold, 0.999, 2000)
            except cv2.error:  # USAC finds no model on degenerate matches (e.g. all on a line)
                continue
            if hmat is None or fmat is None or fmat.shape != (3, 3):
                continue
            h_inl, f_inl = float(h_mask.mean()), float(f_mask.mean())
            epi = sampson_distance(fmat, pa, pb)
            geo_rows.append([h_inl, f_inl, f_inl - h_inl, float(np.median(epi)),
                             float(((epi > threshold) & (epi <= 4 * threshold)).mean())])
            pairs.append([s, s + gap])
            used.update([s, s + gap])
            if self.use_depth:
                depth_corr.append(self._depth_parallax(clip.frames[s], pa, pb, hmat))
        if not geo_rows:
            return (f"no motion: no frame pair {gap} frames apart has {self.min_matches} descriptor matches "
                    f"moving over {self.min_motion} px (median, at {self.size} px)")
        arr = np.asarray(geo_rows)
        values = {name: float(arr[:, i].mean()) for i, name in enumerate(GEOMETRY[:5])}
        drops = np.array([d for _, d, _ in middles])
        odd = np.array([q for i, _, q in middles if i % 2 == 1 and np.isfinite(q)])
        even = np.array([q for i, _, q in middles if i % 2 == 0 and np.isfinite(q)])
        values["dropout"] = float(drops.mean()) if drops.size else float("nan")
        values["ghost"] = float(abs(odd.mean() - even.mean())) if odd.size and even.size else float("nan")
        if self.use_depth:
            finite = [c for c in depth_corr if np.isfinite(c)]
            values["depth_parallax"] = float(np.mean(finite)) if finite else float("nan")
        frames_used = sorted(used)
        locations = {k: (frames_used, None) for k in self.feature_names}
        middle_frames = sorted({i for i, _, _ in middles})
        locations["dropout"] = locations["ghost"] = (middle_frames or frames_used, None)
        extras: dict[str, Any] = {"pairs": pairs, "h_inliers": arr[:, 0].tolist(), "f_inliers": arr[:, 1].tolist(),
                                  "middle_frames": [m[0] for m in middles], "dropout": [m[1] for m in middles],
                                  "closeness": [m[2] for m in middles]}
        return values, locations, extras

    def _depth_parallax(self, frame: np.ndarray, pa: np.ndarray, pb: np.ndarray, hmat: np.ndarray) -> float:
        """Spearman correlation of per-match parallax ``|H(pa) - pb|`` with TCMonoDepth inverse depth of ``frame``
        sampled at ``pa`` (analysis pixels); nan when the median parallax is under 0.25 px (nothing to rank)."""
        from vision.forensics.tools.depth import depth_net
        from vision.weights.nets.tcmonodepth import predict_depth

        parallax = np.linalg.norm(cv2.perspectiveTransform(pa.reshape(-1, 1, 2), hmat).reshape(-1, 2) - pb, axis=1)
        if float(np.median(parallax)) < 0.25 * max(1.0, self.size / min(frame.shape[:2])):
            return float("nan")
        small, _ = self._resize(frame)
        inv = predict_depth(depth_net(), small[None], size=self.depth_size)[0]
        sy, sx = inv.shape[0] / small.shape[0], inv.shape[1] / small.shape[1]
        xs = np.clip((pa[:, 0] * sx).astype(int), 0, inv.shape[1] - 1)
        ys = np.clip((pa[:, 1] * sy).astype(int), 0, inv.shape[0] - 1)
        return _spearman(inv[ys, xs], parallax)
