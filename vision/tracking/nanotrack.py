"""NanoTracker: a single-object tracker on the torch NanoTrack network (:mod:`vision.weights.nets.nanotrack`), the
algorithm of OpenCV's ``cv2.TrackerNano`` step for step.

Frames are the package's: uint8 ``[H, W, 3]`` **RGB**. OpenCV's tracker takes BGR frames and swaps them to RGB for
its network (``blobFromImage(..., swapRB=true)``); here the RGB crop goes to the network as it is, so that it sees
what it sees in OpenCV (``network_channels="bgr"`` feeds BGR instead, as upstream's Python tracker and its training
did). Boxes are ``(x, y, w, h)`` in pixels, ``(x, y)`` the top-left corner.

``init(frame, box)``: the target's centre and size; a square of side ``int(sqrt((w + p) (h + p)))`` with ``p =
0.5 (w + h)`` (the context) around the centre is cropped, padded with the frame's mean colour where it leaves the
frame, resized to 127 x 127 and encoded once (the template features).

``update(frame)``:

1. ``s = sqrt((w + p) (h + p))``, ``scale = 127 / s``; the search square has side ``int(s 255 / 127)``, cropped as
   above around the last centre (the mean colour of this frame) and resized to 255;
2. the head gives a softmax object probability and box distances on an ``S x S`` grid (S = 16 for v2, 15 for v3)
   whose cell ``(i, j)`` sits at ``((j - S // 2) 16 + 127, (i - S // 2) 16 + 127)`` in the search crop;
3. penalties: ``exp(-(r c - 1) k)`` with ``r`` the change of aspect ratio (the larger of it and its inverse) of each
   predicted box against the target's, and ``c`` the same for the size ``sqrt((w + p) (h + p))`` against the
   target's size in the search crop's scale;
4. ``pscore = penalty * probability * (1 - window_influence) + window * window_influence`` with OpenCV's
   ``createHanningWindow`` (the square root of an outer product of Hann windows); its first maximum (row-major) is
   the answer and its value the score;
5. the centre moves by the winning box's offset from the crop centre divided by ``scale``; the size is smoothed by
   ``lr = penalty * probability * learning_rate`` at that cell; the centre is clipped to the frame of ``init``, each
   side to ``[10, frame side]``.

Constants and order come from OpenCV's ``modules/video/src/tracking/tracker_nano.cpp``. Three lines of that
source (opencv/opencv@9271727) read differently from what the opencv-python 5.1.0 build does, which steps 1 and 3
follow: the source truncates ``w + h`` to an int in ``p``, takes the search side as ``int(2 s)`` (integer ``255 /
127``) and measures the size penalty against the target's centre coordinates; the 5.1.0 build (and upstream's
Python tracker) does not. This algorithm on OpenCV's own network outputs reproduces the build's boxes and scores
frame by frame.

OpenCV returns the box truncated to ints (``int(x)``, ...); :meth:`NanoTracker.update` returns the float box of its
state, of which ``np.trunc`` gives OpenCV's rectangle.
"""

from __future__ import annotations

import dataclasses
import math

import cv2
import numpy as np
import torch

from vision.errors import InputError
from vision.weights.nets.nanotrack import NanoTrack, load_nanotrack

__all__ = ["EXEMPLAR_SIZE", "INSTANCE_SIZE", "TRACK_PARAMS", "NanoTracker", "Response", "crop_square"]

#: side of the template crop and of the search crop (pixels, both versions)
EXEMPLAR_SIZE = 127
INSTANCE_SIZE = 255
#: the network's total stride: search-crop pixels between score cells
STRIDE = 16
#: the context added around the target: half of ``w + h`` on each of ``w`` and ``h``
CONTEXT_AMOUNT = 0.5
#: the smallest width / height a tracked box is clipped to (pixels)
MIN_SIDE = 10.0

#: (window influence, penalty k, size learning rate) per version: v2 uses OpenCV TrackerNano's constants; v3 (whose
#: ONNX files for OpenCV are not registered) upstream's ``models/config/configv3.yaml``
TRACK_PARAMS: dict[str, tuple[float, float, float]] = {"v2": (0.455, 0.055, 0.37), "v3": (0.455, 0.138, 0.348)}


def _check_frame(frame: np.ndarray) -> np.ndarray:
    frame = np.asarray(frame)
    if frame.ndim != 3 or frame.shape[2] != 3 or frame.dtype != np.uint8:
        raise InputError(f"frame must be uint8 [H, W, 3] RGB, got {frame.dtype} {list(frame.shape)}")
    return frame


def crop_square(frame: np.ndarray, centre: tuple[float, float], side: int, out_size: int) -> np.ndarray:
    """OpenCV TrackerNano's ``getSubwindow``: the ``side x side`` square whose top-left corner is ``int(centre) -
    (side + 1) // 2``, the parts outside ``frame`` filled with its per-channel mean colour (rounded to uint8), resized
    bilinearly (``cv2.resize``) to ``out_size x out_size``. ``frame`` uint8 ``[H, W, 3]`` -> uint8 ``[out_size,
    out_size, 3]`` in the same channel order."""
    h, w = frame.shape[:2]
    half = (side + 1) // 2
    x0, y0 = int(centre[0]) - half, int(centre[1]) - half  # int(): C++'s truncation toward zero
    x1, y1 = x0 + side, y0 + side
    patch = frame[max(y0, 0):max(min(y1, h), 0), max(x0, 0):max(min(x1, w), 0)]
    pads = (max(0, -y0), max(0, y1 - h), max(0, -x0), max(0, x1 - w))  # top, bottom, left, right
    if any(pads):
        mean = cv2.mean(frame)[:3]  # OpenCV pads with the whole frame's mean colour
        if patch.size == 0:  # the square misses the frame entirely
            patch = np.empty((side, side, 3), np.uint8)
            patch[:] = np.clip(np.rint(mean), 0, 255).astype(np.uint8)
        else:
            patch = cv2.copyMakeBorder(patch, *pads, cv2.BORDER_CONSTANT, value=mean)
    return cv2.resize(patch, (out_size, out_size))


def _size_measure(w: np.ndarray | float, h: np.ndarray | float) -> np.ndarray | float:
    """``sqrt((w + p) (h + p))`` with ``p = (w + h) / 2`` (OpenCV's ``sizeCal``)."""
    pad = (w + h) * 0.5
    return np.sqrt((w + pad) * (h + pad))


def _change(r: np.ndarray) -> np.ndarray:
    """The larger of ``r`` and ``1 / r``, element-wise."""
    return np.maximum(r, 1.0 / r)


class NanoTracker:
    """One object followed through RGB frames with NanoTrack (see the module docstring for the algorithm).

    Args:
        net: a :class:`~vision.weights.nets.nanotrack.NanoTrack` (its device is used), or a version (``"v2"``,
            ``"v3"``) whose registered weights :func:`~vision.weights.nets.nanotrack.load_nanotrack` loads.
        window_influence: weight of the cosine window in the score (None: :data:`TRACK_PARAMS` of the version).
        penalty_k: strength of the scale / aspect-ratio penalty (None: as above).
        learning_rate: how fast the box size follows the prediction (None: as above).
        network_channels: ``"rgb"`` (OpenCV TrackerNano's input order, the default) or ``"bgr"`` (upstream's).

    Torch's thread settings are left as the caller set them.
    """

    def __init__(self, net: NanoTrack | str = "v2", window_influence: float | None = None,
                 penalty_k: float | None = None, learning_rate: float | None = None,
                 network_channels: str = "rgb") -> None:
        self.net = load_nanotrack(net) if isinstance(net, str) else net.eval()
        if network_channels not in ("rgb", "bgr"):
            raise InputError(f"network_channels must be 'rgb' or 'bgr', got {network_channels!r}")
        self.network_channels = network_channels
        defaults = TRACK_PARAMS[self.net.version]
        self.window_influence = defaults[0] if window_influence is None else float(window_influence)
        self.penalty_k = defaults[1] if penalty_k is None else float(penalty_k)
        self.learning_rate = defaults[2] if learning_rate is None else float(learning_rate)
        self.device = next(self.net.parameters()).device
        self.template: torch.Tensor | None = None
        self.centre = np.zeros(2)  # (x, y), pixels
        self.size = np.zeros(2)  # (w, h), pixels
        self.frame_size = (0, 0)  # (W, H) of the init frame: OpenCV clips every later box to it
        self.last: Response | None = None  # the latest update's whole answer

    def _features(self, crop: np.ndarray) -> torch.Tensor:
        """The backbone's features of a uint8 ``[S, S, 3]`` RGB crop (as a float 0-255 ``[1, 3, S, S]`` input)."""
        if self.network_channels == "bgr":
            crop = crop[:, :, ::-1]
        image = torch.from_numpy(np.ascontiguousarray(crop)).to(self.device).permute(2, 0, 1)[None].float()
        return self.net.features(image)

    @torch.no_grad()
    def init(self, frame: np.ndarray, box_xywh: tuple[float, float, float, float] | np.ndarray) -> None:
        """Start tracking the object in ``box_xywh`` (pixels, positive width and height) of ``frame`` (uint8
        ``[H, W, 3]`` RGB). OpenCV's tracker takes an integer rectangle; pass integers for parity."""
        frame = _check_frame(frame)
        x, y, w, h = (float(v) for v in box_xywh)
        if not (w > 0 and h > 0 and math.isfinite(x + y + w + h)):
            raise InputError(f"box must be finite (x, y, w, h) with w, h > 0, got {tuple(box_xywh)}")
        self.centre = np.array([x + w * 0.5, y + h * 0.5])
        self.size = np.array([w, h])
        self.frame_size = (frame.shape[1], frame.shape[0])
        context = CONTEXT_AMOUNT * (w + h)
        side = int(math.sqrt((w + context) * (h + context)))
        self.template = self._features(crop_square(frame, self.centre, side, EXEMPLAR_SIZE))
        self._grid(self.net.score_size)

    def _grid(self, s: int) -> None:
        """The cosine window and the cells' positions in the search crop for an ``s x s`` score map."""
        # cv2.createHanningWindow: the square root of the outer product of two Hann windows
        self.window = np.sqrt(np.outer(np.hanning(s), np.hanning(s))).astype(np.float32)
        points = ((np.arange(s) - s // 2) * STRIDE + INSTANCE_SIZE // 2).astype(np.float32)
        self.grid_x, self.grid_y = np.meshgrid(points, points)

    @torch.no_grad()
    def update(self, frame: np.ndarray) -> tuple[np.ndarray, float]:
        """Follow the object into ``frame`` (uint8 ``[H, W, 3]`` RGB). Returns ``(box, score)``: float64 ``(x, y, w,
        h)`` in pixels and the winning windowed score (OpenCV's ``getTrackingScore``). The whole answer, score map
        included, stays in :attr:`last`."""
        if self.template is None:
            raise InputError("NanoTracker.update before init")
        self.last = self.respond(frame, self.centre, self.size)
        self.commit(self.last)
        return self.last.box, self.last.score

    def commit(self, response: "Response") -> None:
        """Take ``response`` (of :meth:`respond`) as the tracker's new state."""
        self.centre, self.size = response.centre, response.size

    @torch.no_grad()
    def respond(self, frame: np.ndarray, centre: np.ndarray, size: np.ndarray) -> "Response":
        """The network's answer for a target of ``size (w, h)`` last seen at ``centre (x, y)`` (frame pixels) in
        ``frame`` (uint8 ``[H, W, 3]`` RGB), without changing the tracker: steps 1-5 of the module docstring."""
        if self.template is None:
            raise InputError("NanoTracker.respond before init")
        frame = _check_frame(frame)
        # 1. the search crop: twice (255 / 127) the template's context square, around the last centre
        w, h = (float(v) for v in size)
        context = CONTEXT_AMOUNT * (w + h)
        side = math.sqrt((w + context) * (h + context))
        scale = EXEMPLAR_SIZE / side  # search-crop pixels per frame pixel
        search_side = int(side * INSTANCE_SIZE / EXEMPLAR_SIZE)
        crop = crop_square(frame, centre, search_side, INSTANCE_SIZE)
        logits, distances = self.net.head(self.template, self._features(crop))
        logits, distances = logits[0].float().cpu().numpy(), distances[0].float().cpu().numpy()

        # 2. the object's probability (softmax, channel 1) and each cell's box corners in the search crop
        top = np.maximum(logits[0], logits[1])
        background, foreground = np.exp(logits[0] - top), np.exp(logits[1] - top)
        probability = foreground / (background + foreground)
        x1, y1 = self.grid_x - distances[0], self.grid_y - distances[1]
        x2, y2 = self.grid_x + distances[2], self.grid_y + distances[3]

        # 3. penalise changes of size and aspect ratio against the current target (in the crop's scale)
        size_change = _change(_size_measure(x2 - x1, y2 - y1) / _size_measure(w * scale, h * scale))
        ratio_change = _change((w / h) / ((x2 - x1) / (y2 - y1)))
        penalty = np.exp(-(ratio_change * size_change - 1) * self.penalty_k)

        # 4. favour small displacements (cosine window); the first maximum wins
        pscore = penalty * probability * (1 - self.window_influence) + self.window * self.window_influence
        best = np.unravel_index(int(np.argmax(pscore)), pscore.shape)

        # 5. move to the winner's centre, smooth the size by its confidence, clip to the init frame
        offset = np.array([(x1[best] + x2[best]) / 2, (y1[best] + y2[best]) / 2]) - INSTANCE_SIZE // 2
        predicted = np.array([x2[best] - x1[best], y2[best] - y1[best]]) / scale
        lr = float(penalty[best] * probability[best]) * self.learning_rate
        new_centre = np.asarray(centre, np.float64) + offset / scale
        new_size = predicted * lr + (1 - lr) * np.array([w, h])
        bounds = np.array(self.frame_size, np.float64)
        new_centre = np.clip(new_centre, 0.0, bounds)
        new_size = np.maximum(MIN_SIDE, np.minimum(bounds, new_size))
        return Response(new_centre, new_size, float(pscore[best]), probability, float(probability[best]),
                        float(penalty[best]))


@dataclasses.dataclass
class Response:
    """NanoTrack's answer on one search crop (:meth:`NanoTracker.respond`).

    Attributes:
        centre, size: the answered target, float64 ``(x, y)`` and ``(w, h)`` in frame pixels.
        score: the winning windowed score (OpenCV's ``getTrackingScore``).
        probability: float32 ``[S, S]`` the object probability of every cell.
        peak: the winning cell's probability; penalty: its scale / aspect-ratio penalty.
    """

    centre: np.ndarray
    size: np.ndarray
    score: float
    probability: np.ndarray
    peak: float
    penalty: float

    @property
    def box(self) -> np.ndarray:
        """float64 ``(x, y, w, h)``."""
        return np.array([*(self.centre - self.size / 2), *self.size])
