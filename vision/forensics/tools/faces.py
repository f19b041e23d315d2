"""Faces tool: a face region measured against its own surroundings (face-swap and face-reenactment traces).

A face swapped, re-rendered or pasted into footage is produced by another process than the rest of the frame: it is
sharper or blurrier, carries another noise level and another compression history than the pixels around it, and its
landmarks, re-detected or re-synthesised in every frame, move in ways the image content does not. Real footage passes
the face and its surroundings through one camera and one encoder.

Detection: YuNet (:class:`vision.weights.nets.onnx_models.YuNet`, 160x120 network input) on ``max_frames`` frames
spread over the clip. Each frame is first padded (right / bottom, black) to the network's 4:3 aspect so that faces
are not stretched; the detector's own resize then scales it (up for small clips, down for large ones). The
best-scoring face of a frame counts when its score is at least ``score_threshold`` and its box is at least
``min_face`` pixels on its shorter side. A clip with no such face is not applicable ("no face found in N sampled
frames").

Regions (per frame with a face, luma in 0-255 units): the face is the detected box shrunk by 10% on each side (skin
rather than hair or background); the background is the ring between the box enlarged 1.3x and 2.5x about its centre,
clipped to the frame (the surroundings a splice is blended into), or the whole frame outside the 1.3x box when the
ring holds under 64 pixels. Filters run on the ring's bounding window only.

Features (per frame, then the median over frames with a face):

* ``sharpness_ratio``: ``log`` of the Laplacian (3x3) variance of the face over that of the background;
* ``noise_ratio``: ``log`` of the noise level of the face over the background's: 1.4826 MAD of the high-pass
  residual ``g - blur3x3(g)`` on the flatter half of each region's pixels (gradient magnitude under the region's
  median), where the residual is mostly noise rather than texture;
* ``block_ratio``: ``log`` of the 8x8 blockiness of the face over the background's (:func:`blockiness`: the
  strongest of the 8 grid phases of the luma steps over the median phase; a face compressed on its own, at another
  quality or on another grid, differs from the frame around it);
* ``landmark_jitter``: on up to ``max_pairs`` frame pairs ``(t, t + 1)`` with a face in both, the mean over the
  five landmarks of ``|landmark displacement - DIS optical flow at the landmark|``, in units of the face size
  ``sqrt(w h)`` (the detected face moving other than its own pixels);
* ``box_motion``: on the same pairs, ``|box centre displacement - median flow inside the face|`` in face-size units
  (the face box following something else than the face's content).
"""

from __future__ import annotations

import math
from typing import Any

import cv2
import numpy as np

from vision.forensics.tools.base import Clip, ForensicTool, sample_indices

__all__ = ["FaceTool", "blockiness", "face_regions", "laplacian_variance", "noise_level"]

# the shrink of the face box and the enlargements bounding the background ring (factors of the box size)
FACE_SHRINK = 0.10
RING_INNER = 1.3
RING_OUTER = 2.5
MIN_REGION_PIXELS = 64
BLOCK = 8
# added to the variances / levels / blockiness before the log ratios (0-255 luma units; blockiness is unitless)
EPS_VAR = 1.0
EPS_LEVEL = 0.5
EPS_BLOCK = 0.01
# the side the face crop is brought to (at most) for the optical flow of the motion features
FLOW_SIDE = 160


def face_regions(box: np.ndarray, height: int, width: int) -> tuple[np.ndarray, np.ndarray, tuple[int, int, int, int]]:
    """Face and background masks of a face box ``(x0, y0, w, h)`` (pixels) in an ``height x width`` frame (see the
    module docstring), both ``bool`` over the window ``(x0, y0, x1, y1)`` returned with them: the outer ring's box,
    or the whole frame when the background is the frame outside the inner box. The background is empty when the
    face fills the frame."""
    x0, y0, w, h = (float(v) for v in box[:4])
    cx, cy = x0 + w / 2, y0 + h / 2

    def rect(scale: float) -> tuple[int, int, int, int]:
        return (max(0, round(cx - scale * w / 2)), max(0, round(cy - scale * h / 2)),
                min(width, round(cx + scale * w / 2)), min(height, round(cy + scale * h / 2)))

    def mask(r: tuple[int, int, int, int], window: tuple[int, int, int, int]) -> np.ndarray:
        m = np.zeros((window[3] - window[1], window[2] - window[0]), bool)
        m[max(0, r[1] - window[1]):max(0, r[3] - window[1]), max(0, r[0] - window[0]):max(0, r[2] - window[0])] = True
        return m

    window = rect(RING_OUTER)
    inner = mask(rect(RING_INNER), window)
    if (~inner).sum() < MIN_REGION_PIXELS:  # the ring is too thin: the whole frame outside the inner box
        window = (0, 0, width, height)
        inner = mask(rect(RING_INNER), window)
    return mask(rect(1 - 2 * FACE_SHRINK), window), ~inner, window


def laplacian_variance(gray: np.ndarray) -> np.ndarray:
    """Grey ``[H, W]`` (0-255 units) -> ``float32 [H, W]`` 3x3 Laplacian (its variance over a region = sharpness)."""
    return cv2.Laplacian(gray.astype(np.float32), cv2.CV_32F, ksize=3)


def noise_level(residual: np.ndarray, grad: np.ndarray, mask: np.ndarray) -> float:
    """1.4826 MAD of ``residual`` over the pixels of ``mask`` whose ``grad`` is at most its median over ``mask``."""
    g = grad[mask]
    if g.size < MIN_REGION_PIXELS:
        return float("nan")
    r = residual[mask][g <= np.median(g)]
    return 1.4826 * float(np.median(np.abs(r - np.median(r))))


def blockiness(gray: np.ndarray, mask: np.ndarray, block: int = BLOCK) -> float:
    """Block-grid strength of a region, whatever the grid's phase: the mean absolute luma step between
    neighbouring pixels is taken per phase (position modulo ``block``) of the step, horizontally and vertically,
    over pairs with both pixels in ``mask``; per direction the largest phase mean over the median phase mean, and
    the two directions averaged. About 1 without block edges; a compressed region's grid lines (frame-aligned from
    the video's codec, or at another phase for a face encoded on its own and pasted) raise it. nan when a phase has
    under 4 pairs."""
    g = gray.astype(np.float32)
    ratios = []
    for axis in (1, 0):
        step = np.abs(np.diff(g, axis=axis))
        both = (mask[:, 1:] & mask[:, :-1]) if axis == 1 else (mask[1:, :] & mask[:-1, :])
        phase = np.arange(step.shape[axis]) % block
        phase = phase[None, :] if axis == 1 else phase[:, None]
        phase = np.broadcast_to(phase, step.shape)[both]
        values = step[both]
        counts = np.bincount(phase, minlength=block)
        if counts.min() < 4:
            return float("nan")
        means = np.bincount(phase, weights=values, minlength=block) / counts
        ratios.append((means.max() + EPS_BLOCK) / (np.median(means) + EPS_BLOCK))
    return float(np.mean(ratios))


def _log_ratio(a: float, b: float, eps: float) -> float:
    if not (math.isfinite(a) and math.isfinite(b)):
        return float("nan")
    return float(math.log((a + eps) / (b + eps)))


def _iou(a: np.ndarray, b: np.ndarray) -> float:
    """IoU of two ``(x0, y0, w, h)`` boxes."""
    ix = max(0.0, min(a[0] + a[2], b[0] + b[2]) - max(a[0], b[0]))
    iy = max(0.0, min(a[1] + a[3], b[1] + b[3]) - max(a[1], b[1]))
    inter = ix * iy
    union = a[2] * a[3] + b[2] * b[3] - inter
    return float(inter / union) if union > 0 else 0.0


def _match(face: np.ndarray, candidates: np.ndarray, min_iou: float = 0.3) -> np.ndarray | None:
    """The row of ``candidates [N, 15]`` that overlaps ``face`` most (IoU at least ``min_iou``: the same face in the
    next frame), or None."""
    if not len(candidates):
        return None
    ious = [_iou(face[:4], c[:4]) for c in candidates]
    best = int(np.argmax(ious))
    return candidates[best] if ious[best] >= min_iou else None


def _nanmedian(values: list[float]) -> float:
    arr = np.asarray(values, np.float64)
    arr = arr[np.isfinite(arr)]
    return float(np.median(arr)) if arr.size else float("nan")


class FaceTool(ForensicTool):
    """Face-versus-surroundings statistics (see the module docstring).

    Args:
        max_frames: frames searched for faces (spread over the clip).
        max_pairs: frame pairs ``(t, t + 1)`` for the motion features.
        score_threshold: lowest YuNet score that counts as a face.
        min_face: shortest side (pixels of the clip) of a face box that counts.
        threads: onnxruntime threads of the detector.
    """

    name = "faces"
    feature_names = ("sharpness_ratio", "noise_ratio", "block_ratio", "landmark_jitter", "box_motion")
    descriptions = {
        "sharpness_ratio": "log ratio of the face's Laplacian variance to its surroundings' (a blurred or "
                           "over-sharp pasted face)",
        "noise_ratio": "log ratio of the face's noise level to its surroundings' (flat pixels, high-pass residual)",
        "block_ratio": "log ratio of the face's 8x8 blockiness to its surroundings' (another compression history)",
        "landmark_jitter": "how far the face landmarks move other than the optical flow of the pixels under them "
                           "(face-size units)",
        "box_motion": "how far the face box moves other than the face's own pixels (face-size units)",
    }
    min_frames = 1
    version = 1

    def __init__(self, max_frames: int = 8, max_pairs: int = 4, score_threshold: float = 0.9, min_face: int = 12,
                 threads: int = 1) -> None:
        self.max_frames, self.max_pairs = int(max_frames), int(max_pairs)
        self.score_threshold, self.min_face, self.threads = float(score_threshold), int(min_face), int(threads)
        self._detector = None

    def detect(self, frame: np.ndarray) -> np.ndarray:
        """The counting faces of ``uint8 [H, W, 3]`` RGB as ``float32 [N, 15]`` (YuNet's rows: box x0, y0, w, h,
        five landmarks, score; clip pixels), highest score first."""
        from vision.weights.nets.onnx_models import YuNet

        if self._detector is None:
            self._detector = YuNet(threads=self.threads)
        h, w = frame.shape[:2]
        net_h, net_w = self._detector.height, self._detector.width
        # pad to the network's aspect (right / bottom) so the detector's resize scales both axes alike
        ph, pw = max(h, math.ceil(w * net_h / net_w)), max(w, math.ceil(h * net_w / net_h))
        padded = frame if (ph, pw) == (h, w) else cv2.copyMakeBorder(frame, 0, ph - h, 0, pw - w,
                                                                      cv2.BORDER_CONSTANT, value=0)
        faces = self._detector.detect(np.ascontiguousarray(padded), score_threshold=self.score_threshold)
        # big enough, and centred inside the frame (not in the padding)
        keep = (np.minimum(faces[:, 2], faces[:, 3]) >= self.min_face) & (faces[:, 0] + faces[:, 2] / 2 < w) & \
            (faces[:, 1] + faces[:, 3] / 2 < h)
        return faces[keep]

    def _region_stats(self, gray: np.ndarray, face: np.ndarray) -> tuple[float, float, float]:
        """(sharpness, noise, block) log ratios of one frame's face against its background."""
        face_mask, bg_mask, (x0, y0, x1, y1) = face_regions(face, *gray.shape)
        if face_mask.sum() < MIN_REGION_PIXELS or bg_mask.sum() < MIN_REGION_PIXELS:
            return float("nan"), float("nan"), float("nan")
        # filters on the window only; blockiness looks at every grid phase, so the crop loses no grid alignment
        g = gray[y0:y1, x0:x1].astype(np.float32)
        lap = laplacian_variance(g)
        residual = g - cv2.GaussianBlur(g, (3, 3), 0)
        gx = cv2.Sobel(g, cv2.CV_32F, 1, 0, ksize=3)
        gy = cv2.Sobel(g, cv2.CV_32F, 0, 1, ksize=3)
        grad = cv2.GaussianBlur(np.sqrt(gx * gx + gy * gy), (5, 5), 0)
        sharp = _log_ratio(float(lap[face_mask].var()), float(lap[bg_mask].var()), EPS_VAR)
        noise = _log_ratio(noise_level(residual, grad, face_mask), noise_level(residual, grad, bg_mask), EPS_LEVEL)
        block = _log_ratio(blockiness(g, face_mask), blockiness(g, bg_mask), 0.0)
        return sharp, noise, block

    def _motion(self, clip: Clip, t: int, a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
        """(landmark jitter, box motion) of the faces ``a`` in frame ``t`` and ``b`` in ``t + 1``, face-size units;
        the flow is DIS on the crop around face ``a`` (box enlarged 2x), brought to at most ``FLOW_SIDE``."""
        x0, y0, w, h = (float(v) for v in a[:4])
        size = math.sqrt(max(w * h, 1.0))
        cx, cy = x0 + w / 2, y0 + h / 2
        X0, Y0 = max(0, int(cx - w)), max(0, int(cy - h))
        X1, Y1 = min(clip.width, math.ceil(cx + w)), min(clip.height, math.ceil(cy + h))
        ga, gb = clip.gray(t)[Y0:Y1, X0:X1], clip.gray(t + 1)[Y0:Y1, X0:X1]
        if ga.shape[0] < 8 or ga.shape[1] < 8:
            return float("nan"), float("nan")
        scale = min(1.0, FLOW_SIDE / max(ga.shape))
        if scale < 1.0:
            dsize = (max(8, round(ga.shape[1] * scale)), max(8, round(ga.shape[0] * scale)))
            ga, gb = (cv2.resize(x, dsize, interpolation=cv2.INTER_AREA) for x in (ga, gb))
        sx, sy = ga.shape[1] / (X1 - X0), ga.shape[0] / (Y1 - Y0)
        dis = cv2.DISOpticalFlow_create(cv2.DISOPTICAL_FLOW_PRESET_MEDIUM)
        flow = dis.calc(np.ascontiguousarray(ga), np.ascontiguousarray(gb), None)  # crop px (scaled), a -> b
        flow = flow / np.array([sx, sy], np.float32)  # back to clip pixels

        def flow_at(x: float, y: float) -> np.ndarray:
            i = int(np.clip(round((y - Y0) * sy - 0.5), 0, flow.shape[0] - 1))
            j = int(np.clip(round((x - X0) * sx - 0.5), 0, flow.shape[1] - 1))
            return flow[i, j]

        la, lb = a[4:14].reshape(5, 2), b[4:14].reshape(5, 2)
        jitter = float(np.mean([np.linalg.norm((lb[k] - la[k]) - flow_at(*la[k])) for k in range(5)])) / size
        # median flow over the face box (shrunk) inside the crop
        fx0, fy0 = int((x0 + FACE_SHRINK * w - X0) * sx), int((y0 + FACE_SHRINK * h - Y0) * sy)
        fx1 = math.ceil((x0 + (1 - FACE_SHRINK) * w - X0) * sx)
        fy1 = math.ceil((y0 + (1 - FACE_SHRINK) * h - Y0) * sy)
        inside = flow[max(0, fy0):max(fy0 + 1, fy1), max(0, fx0):max(fx0 + 1, fx1)].reshape(-1, 2)
        centre_move = (b[0:2] + b[2:4] / 2) - (a[0:2] + a[2:4] / 2)
        box = float(np.linalg.norm(centre_move - np.median(inside, axis=0))) / size if inside.size else float("nan")
        return jitter, box

    def measure(self, clip: Clip) -> tuple[dict[str, float], dict, dict[str, Any]] | str:
        idx = [int(i) for i in sample_indices(clip.num_frames, self.max_frames)]
        # the best-scoring face of each sampled frame (the one a person would name first)
        found = {i: f[0] for i in idx if len(f := self.detect(clip.frames[i]))}
        if not found:
            return f"no face found in {len(idx)} sampled frames"
        per_frame = {i: self._region_stats(clip.gray(i), f) for i, f in found.items()}

        # motion pairs: frames with a face whose next frame differs and also shows a face
        starts = [i for i in found if i + 1 < clip.num_frames and clip.frame_changes()[i]]
        starts = [starts[int(k)] for k in sample_indices(len(starts), self.max_pairs)] if starts else []
        motions, pair_frames = [], []
        for t in starts:
            nxt = _match(found[t], self.detect(clip.frames[t + 1]))
            if nxt is None:
                continue
            motions.append(self._motion(clip, t, found[t], nxt))
            pair_frames += [t, t + 1]

        frames = sorted(found)
        stats = np.array([per_frame[i] for i in frames], np.float64)
        values = {"sharpness_ratio": _nanmedian(stats[:, 0].tolist()), "noise_ratio": _nanmedian(stats[:, 1].tolist()),
                  "block_ratio": _nanmedian(stats[:, 2].tolist()),
                  "landmark_jitter": _nanmedian([m[0] for m in motions]),
                  "box_motion": _nanmedian([m[1] for m in motions])}
        boxes = np.array([found[i][:4] for i in frames], np.float64)
        x0, y0, w, h = np.median(boxes, axis=0)
        region = [int(max(0, x0)), int(max(0, y0)), int(min(clip.width, x0 + w)), int(min(clip.height, y0 + h))]
        locations = {k: (frames, region) for k in ("sharpness_ratio", "noise_ratio", "block_ratio")}
        locations.update({k: (sorted(set(pair_frames)), region) for k in ("landmark_jitter", "box_motion")})
        extras = {"face_frames": frames, "face_boxes": boxes.tolist(), "sampled_frames": idx,
                  "per_frame_ratios": stats.tolist(), "pair_motion": [list(m) for m in motions]}
        return values, locations, extras
