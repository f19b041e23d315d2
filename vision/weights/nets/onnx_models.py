"""The registered ONNX networks, run with onnxruntime on the CPU: YuNet faces, XFeat local features, YOLOX-nano COCO
boxes and DeepLabV3 PASCAL VOC masks.

Each class opens its file through :func:`vision.weights.store.weights_path` (checked by sha256) in an onnxruntime
``InferenceSession`` on the ``CPUExecutionProvider`` with ``threads`` intra-op threads (default 1, so that several
sessions or test workers share a machine without oversubscribing it). Every network has a fixed input size; an image
of any size is resized (or letterboxed) to it the way the upstream sample does, and the results are mapped back to
the input image's pixels.

Conventions: images are uint8 [H, W, 3] RGB (the order scikit-image and the package use; where the upstream sample
feeds OpenCV's BGR frames the channels are swapped here so that the network sees what it saw there); pixel
coordinates are (x, y) with x along the width; boxes are in the input image's pixels.

Upstream (the pre- and post-processing follows these, written anew here):

- YuNet: Kazuhito00/Image-Processing-Node-Editor ``node/deep_learning_node/face_detection/YuNet/yunet.py``.
- XFeat: Kazuhito00/XFeat-Image-Matching-ONNX-Sample ``xfeat_onnx.py`` and verlab/accelerated_features
  ``modules/xfeat.py`` (``detectAndCompute``).
- YOLOX-nano: Kazuhito00/YOLOX-ONNX-TFLite-Sample (``sample_onnx.py``, ``yolox/yolox_onnx.py``) and Megvii YOLOX
  ``yolox/utils/demo_utils.py`` (grid decoding, NMS).
- DeepLabV3: Kazuhito00/Image-Processing-Node-Editor ``node/deep_learning_node/semantic_segmentation/deeplab_v3/``.
"""

from __future__ import annotations

from itertools import product

import cv2
import numpy as np
import torch
import torch.nn.functional as F
from scipy.ndimage import maximum_filter

from vision.errors import InputError
from vision.weights.store import weights_path

__all__ = ["COCO_CLASSES", "VOC_CLASSES", "DeepLabV3VOC", "XFeat", "YOLOXNano", "YuNet", "letterbox", "nms_xyxy",
           "yolox_boxes", "yolox_letterbox", "yolox_anchor_points", "yolox_detections"]

#: the 80 COCO class names in YOLOX's (contiguous) index order
COCO_CLASSES = (
    "person", "bicycle", "car", "motorcycle", "airplane", "bus", "train", "truck", "boat", "traffic light",
    "fire hydrant", "stop sign", "parking meter", "bench", "bird", "cat", "dog", "horse", "sheep", "cow",
    "elephant", "bear", "zebra", "giraffe", "backpack", "umbrella", "handbag", "tie", "suitcase", "frisbee",
    "skis", "snowboard", "sports ball", "kite", "baseball bat", "baseball glove", "skateboard", "surfboard",
    "tennis racket", "bottle", "wine glass", "cup", "fork", "knife", "spoon", "bowl", "banana", "apple",
    "sandwich", "orange", "broccoli", "carrot", "hot dog", "pizza", "donut", "cake", "chair", "couch",
    "potted plant", "bed", "dining table", "toilet", "tv", "laptop", "mouse", "remote", "keyboard", "cell phone",
    "microwave", "oven", "toaster", "sink", "refrigerator", "book", "clock", "vase", "scissors", "teddy bear",
    "hair drier", "toothbrush",
)

#: the 21 PASCAL VOC classes (index 0 is the background) in the network's output order
VOC_CLASSES = (
    "background", "aeroplane", "bicycle", "bird", "boat", "bottle", "bus", "car", "cat", "chair", "cow",
    "diningtable", "dog", "horse", "motorbike", "person", "pottedplant", "sheep", "sofa", "train", "tvmonitor",
)


def _session(name: str, threads: int):
    """An onnxruntime CPU session of the registered file ``name`` with ``threads`` intra-op threads."""
    import onnxruntime as ort

    if int(threads) < 1:
        raise InputError(f"threads must be at least 1, got {threads}")
    options = ort.SessionOptions()
    options.intra_op_num_threads = int(threads)
    options.inter_op_num_threads = 1
    options.log_severity_level = 3  # errors only
    return ort.InferenceSession(str(weights_path(name)), options, providers=["CPUExecutionProvider"])


def _check_image(image: np.ndarray) -> np.ndarray:
    image = np.asarray(image)
    if image.ndim != 3 or image.shape[2] != 3 or image.dtype != np.uint8:
        raise InputError(f"image must be uint8 [H, W, 3] RGB, got {image.dtype} {image.shape}")
    return np.ascontiguousarray(image)


def nms_xyxy(boxes: np.ndarray, scores: np.ndarray, iou_threshold: float) -> np.ndarray:
    """Greedy non-maximum suppression.

    Args:
        boxes: float [N, 4] (x0, y0, x1, y1).
        scores: float [N].
        iou_threshold: a box whose IoU with a kept, higher-scoring box exceeds this is dropped.

    Returns:
        int64 [K] indices of the kept boxes, highest score first.
    """
    x0, y0, x1, y1 = (boxes[:, i].astype(np.float64) for i in range(4))
    areas = np.maximum(x1 - x0, 0.0) * np.maximum(y1 - y0, 0.0)
    order = np.argsort(-scores, kind="stable")
    keep = []
    while order.size:
        best, rest = order[0], order[1:]
        keep.append(best)
        width = np.maximum(np.minimum(x1[best], x1[rest]) - np.maximum(x0[best], x0[rest]), 0.0)
        height = np.maximum(np.minimum(y1[best], y1[rest]) - np.maximum(y0[best], y0[rest]), 0.0)
        inter = width * height
        iou = inter / np.maximum(areas[best] + areas[rest] - inter, 1e-12)
        order = rest[iou <= iou_threshold]
    return np.asarray(keep, dtype=np.int64)


class YuNet:
    """The YuNet face detector (registry name ``yunet-120x160``): 160x120 input, 1076 prior boxes.

    The image is resized (aspect ratio not kept) to 160x120 and fed as float 0-255 NCHW; each prior's box, five
    landmarks and score are decoded SSD-style (centre offsets times 0.1 x prior size, sizes as exp(0.2 x offset) x
    prior size), the score is ``sqrt(class score x clip(iou score, 0, 1))``, and greedy NMS on the boxes keeps the
    faces; coordinates are scaled back to the input image.

    Args:
        threads: onnxruntime intra-op threads.
    """

    #: prior sizes (network pixels) per feature level, the levels' strides, and the SSD variances
    MIN_SIZES = ((10, 16, 24), (32, 48), (64, 96), (128, 192, 256))
    STEPS = (8, 16, 32, 64)
    VARIANCE = (0.1, 0.2)
    #: candidates kept before NMS and faces kept after it (upstream's top_k and keep_top_k)
    TOP_K = 5000
    KEEP_TOP_K = 750

    def __init__(self, threads: int = 1) -> None:
        self.session = _session("yunet-120x160", threads)
        self.input_name = self.session.get_inputs()[0].name
        _, _, self.height, self.width = self.session.get_inputs()[0].shape
        self.priors = self._priors()

    def _priors(self) -> np.ndarray:
        """float32 [P, 4] prior boxes (cx, cy, w, h) as fractions of the input width / height, level by level and
        row-major within a level (the order of the network's outputs)."""
        # the feature maps of strides 8..64: the input halved five times with upstream's integer rounding
        size = (self.height, self.width)
        halved = [(int(int((size[0] + 1) / 2) / 2), int(int((size[1] + 1) / 2) / 2))]  # stride 4
        for _ in range(4):
            halved.append((int(halved[-1][0] / 2), int(halved[-1][1] / 2)))
        priors = []
        for level, (rows, cols) in enumerate(halved[1:]):
            step = self.STEPS[level]
            for i, j in product(range(rows), range(cols)):
                for min_size in self.MIN_SIZES[level]:
                    priors.append(((j + 0.5) * step / self.width, (i + 0.5) * step / self.height,
                                   min_size / self.width, min_size / self.height))
        return np.asarray(priors, dtype=np.float32)

    def detect(self, image: np.ndarray, score_threshold: float = 0.6, nms_threshold: float = 0.3) -> np.ndarray:
        """Faces in ``image``.

        Args:
            image: uint8 [H, W, 3] RGB.
            score_threshold: the lowest face score kept.
            nms_threshold: IoU above which the lower-scoring of two faces is dropped.

        Returns:
            float32 [N, 15], highest score first: x0, y0, w, h of the box, the (x, y) of the five landmarks (right
            eye, left eye, nose tip, right and left mouth corner), score; in ``image``'s pixels.
        """
        image = _check_image(image)
        height, width = image.shape[:2]
        # upstream converts its BGR frame to RGB before the resize, so the network reads RGB
        resized = cv2.resize(image, (self.width, self.height), interpolation=cv2.INTER_LINEAR)
        blob = resized.astype(np.float32).transpose(2, 0, 1)[None]
        loc, conf, iou = self.session.run(None, {self.input_name: blob})

        scores = np.sqrt(conf[:, 1] * np.clip(iou[:, 0], 0.0, 1.0))
        centres, sizes = self.priors[:, 0:2], self.priors[:, 2:4]
        scale = np.array([self.width, self.height], dtype=np.float32)
        box_centres = (centres + loc[:, 0:2] * self.VARIANCE[0] * sizes) * scale
        box_sizes = sizes * np.exp(loc[:, 2:4] * self.VARIANCE[1]) * scale
        corners = box_centres - box_sizes / 2
        # landmark k is an offset of the prior centre, in loc[:, 4 + 2k : 6 + 2k]
        landmarks = np.concatenate([(centres + loc[:, 4 + 2 * k:6 + 2 * k] * self.VARIANCE[0] * sizes) * scale
                                    for k in range(5)], axis=1)

        candidates = np.flatnonzero(scores >= score_threshold)
        candidates = candidates[np.argsort(-scores[candidates], kind="stable")][:self.TOP_K]
        xyxy = np.concatenate([corners[candidates], corners[candidates] + box_sizes[candidates]], axis=1)
        kept = candidates[nms_xyxy(xyxy, scores[candidates], nms_threshold)][:self.KEEP_TOP_K]

        # network pixels -> image pixels (the resize is a per-axis scaling)
        sx, sy = width / self.width, height / self.height
        out = np.zeros((len(kept), 15), dtype=np.float32)
        out[:, 0:2] = corners[kept] * (sx, sy)
        out[:, 2:4] = box_sizes[kept] * (sx, sy)
        out[:, 4:14] = landmarks[kept] * np.tile((sx, sy), 5)
        out[:, 14] = scores[kept]
        return out


class XFeat:
    """XFeat keypoints and descriptors (registry name ``xfeat-320x224``): 320x224 input.

    The image is resized (aspect ratio not kept) to 320x224 and fed as float [0, 1] NCHW (the network averages the
    channels to grey itself). Its outputs are a 64-d descriptor map and 65 keypoint logits per 8x8 cell (64 positions
    and a "no keypoint" bin) at 1/8 resolution, and a reliability map. As upstream: a softmax over the 65 logits
    gives a full-resolution keypoint heatmap, a 5x5 maximum filter with threshold 0.05 picks the keypoints, each
    keypoint's score is the heatmap (nearest) times the reliability (bilinear) at it (verlab's ``detectAndCompute``;
    Kazuhito00's sample samples the heatmap bilinearly instead of the reliability), the descriptors are sampled
    bicubically from the L2-normalised descriptor map and L2-normalised again; the keypoints are scaled back by the
    width and height ratios (an integer network pixel ``x`` becomes ``x * W / 320``, as upstream).

    Args:
        threads: onnxruntime intra-op threads.
    """

    #: the heatmap threshold and the maximum-filter size of the keypoint NMS (upstream's defaults)
    DETECTION_THRESHOLD = 0.05
    NMS_KERNEL = 5

    def __init__(self, threads: int = 1) -> None:
        self.session = _session("xfeat-320x224", threads)
        self.input_name = self.session.get_inputs()[0].name
        _, _, self.height, self.width = self.session.get_inputs()[0].shape

    def _sample(self, maps: torch.Tensor, keypoints: torch.Tensor, mode: str) -> torch.Tensor:
        """Values of ``maps`` [1, C, h, w] at ``keypoints`` [N, 2] (x, y in network pixels, the full 320x224 grid
        whatever h, w are) as float [N, C]; XFeat's ``InterpolateSparse2d``: the positions are normalised by
        (W - 1, H - 1) and sampled with ``align_corners=False``."""
        scale = torch.tensor([self.width - 1, self.height - 1], dtype=torch.float32)
        grid = (2.0 * keypoints / scale - 1.0).view(1, 1, -1, 2)
        return F.grid_sample(maps, grid, mode=mode, align_corners=False)[0, :, 0, :].T

    def detect(self, image: np.ndarray, top_k: int = 4096) -> dict[str, np.ndarray]:
        """Keypoints of ``image``.

        Args:
            image: uint8 [H, W, 3] RGB.
            top_k: the most keypoints kept (the highest scores).

        Returns:
            ``keypoints`` float32 [N, 2] (x, y) in ``image``'s pixels, ``descriptors`` float32 [N, 64] of unit
            norm, ``scores`` float32 [N] (> 0), highest score first.
        """
        image = _check_image(image)
        height, width = image.shape[:2]
        resized = cv2.resize(image, (self.width, self.height), interpolation=cv2.INTER_LINEAR)
        blob = (resized.astype(np.float32) / 255.0).transpose(2, 0, 1)[None]
        descriptor_map, logits, reliability = (torch.from_numpy(x) for x in
                                               self.session.run(None, {self.input_name: blob}))
        descriptor_map = F.normalize(descriptor_map, dim=1)

        # 65 logits per 8x8 cell -> probabilities; channel 8 * i + j is the pixel (row i, column j) of the cell
        cells = torch.softmax(logits, dim=1)[:, :64]
        _, _, rows, cols = cells.shape
        heatmap = cells.permute(0, 2, 3, 1).reshape(1, rows, cols, 8, 8).permute(0, 1, 3, 2, 4)
        heatmap = heatmap.reshape(1, 1, rows * 8, cols * 8)

        # keypoints: local maxima of the heatmap over 5x5 windows (zero outside) above the threshold
        values = heatmap[0, 0].numpy()
        peaks = (values == maximum_filter(values, size=self.NMS_KERNEL, mode="constant", cval=0.0)) & \
            (values > self.DETECTION_THRESHOLD)
        ys, xs = np.nonzero(peaks)
        keypoints = torch.from_numpy(np.stack([xs, ys], axis=1).astype(np.float32))
        if len(keypoints) == 0:
            return {"keypoints": np.zeros((0, 2), np.float32), "descriptors": np.zeros((0, 64), np.float32),
                    "scores": np.zeros(0, np.float32)}

        scores = (self._sample(heatmap, keypoints, "nearest") * self._sample(reliability, keypoints, "bilinear"))[:, 0]
        order = torch.argsort(scores, descending=True, stable=True)[:top_k]
        order = order[scores[order] > 0]
        keypoints, scores = keypoints[order], scores[order]
        descriptors = F.normalize(self._sample(descriptor_map, keypoints, "bicubic"), dim=1)

        keypoints = keypoints * torch.tensor([width / self.width, height / self.height])
        return {"keypoints": keypoints.numpy().astype(np.float32),
                "descriptors": descriptors.numpy().astype(np.float32), "scores": scores.numpy().astype(np.float32)}


#: YOLOX's feature strides (the head's three levels) and the grey of its letterbox canvas
YOLOX_STRIDES = (8, 16, 32)
YOLOX_PAD_VALUE = 114


def yolox_letterbox(image: np.ndarray, height: int, width: int) -> tuple[np.ndarray, float]:
    """YOLOX's input for ``image``, letterboxed as upstream (``preproc`` of Megvii YOLOX and Kazuhito00's sample).

    The image is scaled by ``r = min(height / H, width / W)`` (bilinear; the scaled size is truncated to integers),
    placed at the top-left of a ``height`` x ``width`` canvas of grey :data:`YOLOX_PAD_VALUE`, and its channels
    swapped to BGR (YOLOX trains on OpenCV's BGR images and the sample feeds BGR frames).

    Args:
        image: uint8 [H, W, 3] RGB.
        height, width: the network's input size.

    Returns:
        ``(blob, r)``: float32 [1, 3, height, width] BGR in 0-255 (no normalisation), and the scale ``r`` (a box in
        the network's pixels divided by ``r`` is in ``image``'s pixels).

    Raises:
        InputError: ``image`` is not uint8 [H, W, 3].
    """
    canvas, ratio = letterbox(image, height, width)
    return np.ascontiguousarray(canvas[:, :, ::-1].transpose(2, 0, 1)[None], dtype=np.float32), ratio


def letterbox(image: np.ndarray, height: int, width: int) -> tuple[np.ndarray, float]:
    """``image`` scaled by ``r = min(height / H, width / W)`` (bilinear; the scaled size truncated to integers) at
    the top-left of a ``height`` x ``width`` canvas of grey :data:`YOLOX_PAD_VALUE`: YOLOX's letterbox, in the
    image's own channel order.

    Args:
        image: uint8 [H, W, 3].
        height, width: the canvas size.

    Returns:
        ``(canvas, r)``: uint8 [height, width, 3], and ``r`` (a box on the canvas divided by ``r`` is in ``image``'s
        pixels).

    Raises:
        InputError: ``image`` is not uint8 [H, W, 3].
    """
    image = _check_image(image)
    image_height, image_width = image.shape[:2]
    ratio = min(height / image_height, width / image_width)
    resized = cv2.resize(image, (int(image_width * ratio), int(image_height * ratio)),
                         interpolation=cv2.INTER_LINEAR)
    canvas = np.full((height, width, 3), YOLOX_PAD_VALUE, dtype=np.uint8)
    canvas[:resized.shape[0], :resized.shape[1]] = resized
    return canvas, ratio


def yolox_anchor_points(height: int, width: int,
                        strides: tuple[int, ...] = YOLOX_STRIDES) -> tuple[np.ndarray, np.ndarray]:
    """The anchor points of YOLOX's output rows for a ``height`` x ``width`` input: level by level (``strides``),
    row-major within a level (the order of the network's output rows; 3549 points at 416x416).

    Returns:
        ``(grid, stride)``: float32 [A, 2], each point's grid cell (x, y) at its level, and float32 [A, 1], its
        stride in pixels.
    """
    grids, per_point = [], []
    for stride in strides:
        rows, cols = height // stride, width // stride
        ys, xs = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
        grids.append(np.stack([xs.ravel(), ys.ravel()], axis=1))
        per_point.append(np.full(rows * cols, stride))
    return np.concatenate(grids).astype(np.float32), np.concatenate(per_point).astype(np.float32)[:, None]


def yolox_boxes(terms, grid, stride):
    """YOLOX's grid decoding: box terms ``[..., 4]`` (x, y, log w, log h relative to the anchor point's grid cell,
    in units of its stride) -> XYXY boxes ``[..., 4]`` in network pixels: centre ``(xy + grid) * stride``, size
    ``exp(log wh) * stride``. NumPy arrays or torch tensors (``grid [A, 2]``, ``stride [A, 1]``, from
    :func:`yolox_anchor_points`), the same operations either way."""
    exp, cat = (np.exp, np.concatenate) if isinstance(terms, np.ndarray) else (torch.exp, torch.cat)
    centres = (terms[..., 0:2] + grid) * stride
    sizes = exp(terms[..., 2:4]) * stride
    return cat([centres - sizes / 2, centres + sizes / 2], -1)


def yolox_detections(rows: np.ndarray, grid: np.ndarray, stride: np.ndarray, ratio: float,
                     image_size: tuple[int, int], score_threshold: float,
                     nms_threshold: float) -> dict[str, np.ndarray]:
    """Boxes from YOLOX's raw output rows: grid decoding and class-aware NMS (Megvii YOLOX's ``demo_postprocess``
    and ``multiclass_nms``).

    Each row is (x, y, log w, log h) relative to its grid cell, then the objectness and the class probabilities
    (sigmoids applied). The box centre is ``(xy + grid) * stride``, its size ``exp(log wh) * stride``, in network
    pixels, divided by ``ratio`` into image pixels; a row's class scores are objectness x class probability. For each
    class the rows scoring above ``score_threshold`` go through greedy NMS (:func:`nms_xyxy`); the kept boxes of all
    classes are sorted by score and clipped to the image.

    Args:
        rows: float [A, 5 + C], one image's output rows.
        grid, stride: from :func:`yolox_anchor_points` for the network's input size.
        ratio: the letterbox scale (:func:`yolox_letterbox`).
        image_size: the image's (H, W).
        score_threshold: the lowest score (objectness x class probability) kept.
        nms_threshold: IoU above which the lower-scoring of two boxes of one class is dropped.

    Returns:
        ``boxes`` float32 [N, 4] (x0, y0, x1, y1) in the image's pixels, ``scores`` float32 [N], ``classes`` int64
        [N] (class indices), highest score first.
    """
    height, width = image_size
    boxes = yolox_boxes(rows[:, 0:4], grid, stride) / ratio
    class_scores = rows[:, 4:5] * rows[:, 5:]

    kept_boxes, kept_scores, kept_classes = [], [], []
    for cls in range(class_scores.shape[1]):
        candidates = np.flatnonzero(class_scores[:, cls] > score_threshold)
        if candidates.size == 0:
            continue
        kept = candidates[nms_xyxy(boxes[candidates], class_scores[candidates, cls], nms_threshold)]
        kept_boxes.append(boxes[kept])
        kept_scores.append(class_scores[kept, cls])
        kept_classes.append(np.full(len(kept), cls, dtype=np.int64))
    if not kept_boxes:
        return {"boxes": np.zeros((0, 4), np.float32), "scores": np.zeros(0, np.float32),
                "classes": np.zeros(0, np.int64)}
    boxes, scores, classes = (np.concatenate(x) for x in (kept_boxes, kept_scores, kept_classes))
    order = np.argsort(-scores, kind="stable")
    boxes = boxes[order]
    boxes[:, 0::2] = np.clip(boxes[:, 0::2], 0, width)
    boxes[:, 1::2] = np.clip(boxes[:, 1::2], 0, height)
    return {"boxes": boxes.astype(np.float32), "scores": scores[order].astype(np.float32),
            "classes": classes[order]}


class YOLOXNano:
    """YOLOX-nano COCO-80 detector (registry name ``yolox-nano``): 416x416 input, 3549 anchor points.

    The image is letterboxed as upstream (:func:`yolox_letterbox`): scaled by ``r = min(416 / H, 416 / W)``
    (bilinear), placed at the top-left of a 416x416 canvas of grey 114, fed as float 0-255 NCHW in BGR order (YOLOX
    trains on OpenCV's BGR images and the sample feeds BGR frames). Each output row is (x, y, log w, log h) relative
    to its grid cell at strides 8, 16, 32, then the objectness and 80 class probabilities (sigmoids inside the
    graph); a row's class scores are objectness x class probability. Class-aware greedy NMS (YOLOX's
    ``multiclass_nms``) keeps the boxes; they are divided by ``r`` and clipped to the image
    (:func:`yolox_detections`). :class:`vision.weights.nets.yolox.YOLOXNano` is the same network in PyTorch, read
    from the same file, with the same pre- and post-processing.

    Args:
        threads: onnxruntime intra-op threads.
    """

    STRIDES = YOLOX_STRIDES
    PAD_VALUE = YOLOX_PAD_VALUE

    def __init__(self, threads: int = 1) -> None:
        self.session = _session("yolox-nano", threads)
        self.input_name = self.session.get_inputs()[0].name
        _, _, self.height, self.width = self.session.get_inputs()[0].shape
        # per anchor point: its grid cell (x, y) and stride, level by level, row-major within a level
        self.grid, self.stride = yolox_anchor_points(self.height, self.width, self.STRIDES)

    def detect(self, image: np.ndarray, score_threshold: float = 0.3,
               nms_threshold: float = 0.45) -> dict[str, np.ndarray]:
        """COCO objects in ``image``.

        Args:
            image: uint8 [H, W, 3] RGB.
            score_threshold: the lowest score (objectness x class probability) kept.
            nms_threshold: IoU above which the lower-scoring of two boxes of one class is dropped.

        Returns:
            ``boxes`` float32 [N, 4] (x0, y0, x1, y1) in ``image``'s pixels, ``scores`` float32 [N], ``classes``
            int64 [N] (indices into :data:`COCO_CLASSES`), highest score first.
        """
        blob, ratio = yolox_letterbox(image, self.height, self.width)  # checks the image
        rows = self.session.run(None, {self.input_name: blob})[0][0]
        return yolox_detections(rows, self.grid, self.stride, ratio, np.shape(image)[:2], score_threshold,
                                nms_threshold)


class DeepLabV3VOC:
    """DeepLabV3-MobileNetV2 PASCAL VOC segmentation (registry name ``deeplabv3-voc``): 257x257 NHWC input.

    As upstream: the image is resized (aspect ratio not kept) to 257x257 (bilinear), fed RGB as ``x / 127.5 - 1``;
    the 21 class logits are resized back to the image's size (bilinear) and the arg-max taken per pixel.

    Args:
        threads: onnxruntime intra-op threads.
    """

    def __init__(self, threads: int = 1) -> None:
        self.session = _session("deeplabv3-voc", threads)
        self.input_name = self.session.get_inputs()[0].name
        _, self.height, self.width, _ = self.session.get_inputs()[0].shape

    def segment(self, image: np.ndarray) -> np.ndarray:
        """Per-pixel VOC classes of ``image``.

        Args:
            image: uint8 [H, W, 3] RGB.

        Returns:
            int64 [H, W], indices into :data:`VOC_CLASSES` (0: background).
        """
        image = _check_image(image)
        height, width = image.shape[:2]
        resized = cv2.resize(image, (self.width, self.height), interpolation=cv2.INTER_LINEAR)
        blob = (resized.astype(np.float32) / 127.5 - 1.0)[None]
        logits = self.session.run(None, {self.input_name: blob})[0][0]  # [257, 257, 21]
        # cv2.resize handles the 21 channels at once (up to 512 are allowed)
        logits = cv2.resize(logits, (width, height), interpolation=cv2.INTER_LINEAR)
        return np.argmax(logits, axis=2).astype(np.int64)
