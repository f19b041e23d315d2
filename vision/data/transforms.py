"""Augmentation pipelines (albumentations) for multi-view samples and detection samples.

Multi-view sample (one scene or clip, S views, T tracks)::

    images       uint8   [S, H, W, 3]  RGB
    depth        float32 [S, H, W]     metric depth along the optical axis (metres), 0 = invalid
    valid_depth  bool    [S, H, W]
    intrinsics   float32 [S, 3, 3]     OpenCV K, pixel-centre convention (see below)
    extrinsics   float32 [S, 3, 4]     OpenCV camera-from-world [R | t]
    has_camera   bool
    instance_ids int32   [S, H, W]     0 = background, otherwise the pixel's track id (a value of ``track_ids``)
    track_ids    int64   [T];  captions list[str] (T);  category_ids int64 [T];  visible bool [S, T]
    image_ids    int64   [S];  video_id int

Detection sample::

    image uint8 [H, W, 3];  boxes float32 [N, 4] XYXY pixels;  category_ids int64 [N];  masks bool [N, H, W];
    iscrowd bool [N];  image_id int

Pixel convention. Integer pixel coordinates are pixel centres (OpenCV): the image covers ``[-0.5, W - 0.5]`` and a
camera point projects to ``u = fx * X / Z + s * Y / Z + cx``. Under this convention

* cropping at ``(x0, y0)`` gives ``cx' = cx - x0``, ``cy' = cy - y0``;
* resizing a ``w x h`` crop to ``W' x H'`` (``sx = W'/w``, ``sy = H'/h``) maps ``u -> (u + 0.5) * sx - 0.5``, so
  ``fx' = sx fx``, ``s' = sx s``, ``cx' = sx (cx + 0.5) - 0.5`` and likewise ``fy, cy`` with ``sy``. Images and
  maps are resized by :mod:`vision.data.resize`, which follows this convention (area or bilinear for images,
  pixel-centre nearest neighbour for depth, validity and ids);
* a horizontal flip of an image ``W'`` wide maps ``u -> W' - 1 - u``.

Horizontal flip with cameras. Mirroring an image is a reflection, which no rotation can express. We mirror the
*whole scene*: with ``M = diag(-1, 1, 1)``, a world point becomes ``M X``, each camera frame is mirrored likewise,
and ``R' = M R M``, ``t' = M t``, ``K' = F K M`` where ``F`` maps ``u -> W' - 1 - u``; i.e. ``fx`` is unchanged,
``cx' = W' - 1 - cx`` and the skew changes sign. ``R'`` is again a proper rotation (det +1), ``fx`` stays positive
and depth is unchanged, so every downstream consumer (pose encodings, quaternions, unprojection) sees an ordinary,
consistent camera rig; the first view keeps ``[I | 0]`` if it had it. Because the world itself is mirrored, the flip
is drawn once per sample and applied to all views together. Captions are mirrored too: the words "left" and
"right" are swapped.

Crop policy (train). Each view draws its own crop independently (the intrinsics follow each view's crop): area a
fraction ``scale`` of the image, aspect ratio the image's aspect ratio times a factor in ``ratio`` (log-uniform),
clipped to fit, at a uniformly random position. The crop is resized to a square ``image_size x image_size``
(anisotropic when the crop is not square: ``fx`` and ``fy`` scale differently, which the intrinsics record).
Evaluation resizes the whole image to ``image_size x image_size`` deterministically; this equals the train policy's
``scale = 1``, ``ratio = 1`` case, so evaluation inputs lie inside the training distribution.

Photometric augmentations (colour jitter, blur, noise, grey) touch the RGB image only and are drawn independently
per view.

Randomness: ``transform(sample, seed=k)`` draws that sample's augmentation from ``k`` alone (what the datasets do
when read with the sample keys of ``vision.data.sampler``: training is then reproducible and resumable whatever the
workers). Without a per-sample seed, each transform re-seeds itself on first use in every process, so DataLoader
workers draw different augmentations (constructor ``seed=None``: OS entropy; an int: reproducible from
``(seed, worker id)``).
"""

from __future__ import annotations

import os
import re
from typing import Any, Callable

import albumentations as A
import numpy as np

from torch.utils.data import get_worker_info

from vision.data.resize import crop_resize_intrinsics, resize_image, resize_nearest
from vision.errors import InputError

__all__ = [
    "build_multiview_transform",
    "build_detection_transform",
    "MultiViewTransform",
    "DetectionTransform",
    "flip_intrinsics",
    "flip_extrinsics",
    "DETECTION_INSTANCE_KEYS",
]

Sample = dict[str, Any]
CropBox = tuple[int, int, int, int]  # x0, y0, x1, y1 (exclusive end), integer pixels

#: per-instance keys of a detection sample that are filtered together with the boxes (when present)
DETECTION_INSTANCE_KEYS = ("category_ids", "iscrowd", "track_ids", "captions", "annotation_ids")


# ----------------------------------------------------------------------------------------------------------------
# camera updates


def flip_intrinsics(K: np.ndarray, width: int) -> np.ndarray:
    """``K' = F K M`` for a horizontally mirrored view ``width`` pixels wide: ``fx`` kept, ``cx' = width - 1 - cx``,
    skew negated (``M = diag(-1, 1, 1)``, ``F: u -> width - 1 - u``; see the module docstring)."""
    M = np.diag([-1.0, 1.0, 1.0])
    F = np.array([[-1.0, 0.0, width - 1.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    return (F @ np.asarray(K, np.float64) @ M).astype(np.float32)


def flip_extrinsics(extrinsics: np.ndarray) -> np.ndarray:
    """Camera-from-world ``[R | t]`` of the mirrored scene: ``[M R M | M t]``, ``M = diag(-1, 1, 1)``; a proper
    rotation stays a proper rotation."""
    M = np.diag([-1.0, 1.0, 1.0])
    E = np.asarray(extrinsics, np.float64)
    return np.concatenate([M @ E[:, :3] @ M, M @ E[:, 3:]], axis=1).astype(np.float32)


_LEFT_RIGHT = re.compile(r"\b(left|right)\b", flags=re.IGNORECASE)


def _swap_left_right(text: str) -> str:
    """Swap the words left/right (keeping capitalisation) in a caption of a mirrored image."""

    def swap(match: re.Match[str]) -> str:
        word = match.group(0)
        other = "right" if word.lower() == "left" else "left"
        if word.isupper():
            return other.upper()
        if word[0].isupper():
            return other.capitalize()
        return other

    return _LEFT_RIGHT.sub(swap, text)


# ----------------------------------------------------------------------------------------------------------------
# shared pieces


def _check_image_size(image_size: int) -> int:
    if isinstance(image_size, bool) or not isinstance(image_size, (int, np.integer)) or image_size < 1:
        raise InputError(f"image_size must be a positive int; got {image_size!r}")
    return int(image_size)


def _check_range(name: str, value: tuple[float, float], low: float, high: float) -> tuple[float, float]:
    if (not isinstance(value, (tuple, list)) or len(value) != 2
            or not all(isinstance(v, (int, float)) and np.isfinite(v) for v in value)
            or not low < value[0] <= value[1] <= high):
        raise InputError(f"{name} must be a (min, max) pair with {low} < min <= max <= {high}; got {value!r}")
    return float(value[0]), float(value[1])


def _draw_crop(rng: np.random.Generator, height: int, width: int, scale: tuple[float, float],
               ratio: tuple[float, float]) -> CropBox:
    """A random crop: area fraction in ``scale``, aspect = image aspect x factor in ``ratio`` (log-uniform)."""
    log_ratio = (np.log(ratio[0]), np.log(ratio[1]))
    for _ in range(10):
        area = rng.uniform(scale[0], scale[1]) * height * width
        aspect = (width / height) * float(np.exp(rng.uniform(log_ratio[0], log_ratio[1])))
        crop_w = int(round(np.sqrt(area * aspect)))
        crop_h = int(round(np.sqrt(area / aspect)))
        if 1 <= crop_w <= width and 1 <= crop_h <= height:
            x0 = int(rng.integers(0, width - crop_w + 1))
            y0 = int(rng.integers(0, height - crop_h + 1))
            return x0, y0, x0 + crop_w, y0 + crop_h
    return 0, 0, width, height


def _photometric() -> A.Compose:
    """Colour jitter, blur, noise and grey conversion; touches RGB only."""
    return A.Compose([
        A.ColorJitter(brightness=(0.7, 1.3), contrast=(0.7, 1.3), saturation=(0.7, 1.3), hue=(-0.05, 0.05), p=0.9),
        A.OneOf([
            A.GaussianBlur(blur_limit=(3, 5), sigma_limit=(0.3, 1.5)),
            A.MotionBlur(blur_limit=(3, 5)),
        ], p=0.2),
        A.GaussNoise(std_range=(0.01, 0.04), p=0.2),
        A.ToGray(p=0.05),
    ])


class _Resize(A.Resize):
    """Albumentations' resize (boxes and keypoints follow) with images resized by
    :func:`vision.data.resize.resize_image` and masks (depth, ids, instance masks) by
    :func:`vision.data.resize.resize_nearest`: the one resize rule, pixel-centre aligned."""

    def apply(self, img: np.ndarray, **params: Any) -> np.ndarray:
        return resize_image(img, (self.height, self.width))

    def apply_to_mask(self, mask: np.ndarray, **params: Any) -> np.ndarray:
        return resize_nearest(mask, (self.height, self.width))


def keep_aspect_size(height: int, width: int, image_size: int) -> tuple[int, int]:
    """``(H', W')`` of a ``height x width`` image scaled by ``r = image_size / max(height, width)``, each side
    truncated to an integer (at least 1): YOLOX's letterbox size
    (:func:`vision.weights.nets.onnx_models.letterbox`) without its padding."""
    ratio = image_size / max(height, width)
    return max(1, int(height * ratio)), max(1, int(width * ratio))


def _geometric(crop: CropBox, image_size: int, flip: bool, targets: dict[str, str],
               bbox_params: A.BboxParams | None = None, keep_aspect: bool = False) -> A.Compose:
    """Crop, resize to ``image_size`` square (or, with ``keep_aspect``, to :func:`keep_aspect_size`: the longer
    side ``image_size``) (:mod:`vision.data.resize`: area when shrinking, bilinear when enlarging, masks
    pixel-centre nearest) and optionally mirror horizontally."""
    x0, y0, x1, y1 = crop
    height, width = (keep_aspect_size(y1 - y0, x1 - x0, image_size) if keep_aspect
                     else (image_size, image_size))
    steps: list[A.BasicTransform] = [
        A.Crop(x_min=x0, y_min=y0, x_max=x1, y_max=y1),
        _Resize(height=height, width=width),
    ]
    if flip:
        steps.append(A.HorizontalFlip(p=1.0))
    return A.Compose(steps, additional_targets=targets, bbox_params=bbox_params)


def _array(sample: Sample, key: str, dtype: Any, shape: tuple[int | None, ...]) -> np.ndarray:
    """``sample[key]`` as an array of ``dtype`` whose shape matches ``shape`` (None = any), else InputError."""
    if key not in sample:
        raise InputError(f"sample is missing {key!r}")
    value = np.asarray(sample[key])
    if value.ndim != len(shape) or any(s is not None and s != v for s, v in zip(shape, value.shape)):
        want = "[" + ", ".join("?" if s is None else str(s) for s in shape) + "]"
        raise InputError(f"sample[{key!r}] must have shape {want}; got {tuple(value.shape)}")
    if value.dtype == object:
        raise InputError(f"sample[{key!r}] must be a numeric array; got dtype object")
    return value.astype(dtype, copy=False)


def _uint8_image(sample: Sample, key: str, shape: tuple[int | None, ...]) -> np.ndarray:
    """``sample[key]`` as a uint8 RGB array (no silent casting of float images), else InputError."""
    if key not in sample:
        raise InputError(f"sample is missing {key!r}")
    dtype = np.asarray(sample[key]).dtype
    if dtype != np.uint8:
        raise InputError(f"sample[{key!r}] must be uint8 RGB; got dtype {dtype}")
    return _array(sample, key, np.uint8, shape)


class _RandomTransform:
    """Shared arguments and the random state of both pipelines.

    Random draws are re-seeded in every new process, so forked or spawned DataLoader workers never repeat each
    other's augmentations: with ``seed=None`` from fresh OS entropy, with an int ``seed`` reproducibly from
    ``(seed, DataLoader worker id)``.
    """

    def __init__(self, image_size: int, train: bool, scale: tuple[float, float], ratio: tuple[float, float],
                 flip_prob: float, photometric: bool, seed: int | None) -> None:
        self.image_size = _check_image_size(image_size)
        self.train = bool(train)
        self.scale = _check_range("scale", scale, 0.0, 1.0)
        self.ratio = _check_range("ratio", ratio, 0.0, float("inf"))
        if isinstance(flip_prob, bool) or not isinstance(flip_prob, (int, float)) or not 0.0 <= flip_prob <= 1.0:
            raise InputError(f"flip_prob must be in [0, 1]; got {flip_prob!r}")
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0):
            raise InputError(f"seed must be None or a non-negative int; got {seed!r}")
        self.flip_prob = float(flip_prob)
        self.seed = None if seed is None else int(seed)
        self.photometric = _photometric() if self.train and photometric else None
        self._pid: int | None = None
        self._rng = np.random.default_rng(0)

    def _random(self, sample_seed: int | None = None) -> np.random.Generator:
        """The generator of this sample: a fresh one from ``sample_seed`` when given (the photometric pipeline is
        re-seeded from it too), else the generator of this process (re-seeded on first use in each process)."""
        if sample_seed is not None:
            rng = np.random.default_rng(sample_seed)
            if self.photometric is not None:
                self.photometric.set_random_seed(int(rng.integers(2**31)))
            return rng
        if self._pid != os.getpid():
            self._pid = os.getpid()
            if self.seed is None:
                self._rng = np.random.default_rng()
            else:
                worker = get_worker_info()
                self._rng = np.random.default_rng([self.seed, 0 if worker is None else worker.id])
            if self.photometric is not None:
                self.photometric.set_random_seed(int(self._rng.integers(2**31)))
        return self._rng


# ----------------------------------------------------------------------------------------------------------------
# multi-view


class MultiViewTransform(_RandomTransform):
    """Geometry-consistent augmentation of a multi-view sample (see the module docstring for every convention).

    Args:
        image_size: output side; every view becomes ``image_size x image_size``.
        train: random per-view crops, one flip decision per sample, per-view photometric noise; otherwise a
            deterministic resize of each whole view.
        scale: crop area as a fraction of the image (train).
        ratio: crop aspect ratio relative to the image's (train).
        flip_prob: probability of mirroring the sample (train).
        photometric: apply the per-view photometric augmentations (train).
        seed: seed of the random draws (None: fresh entropy).

    Call: ``transform(sample) -> new sample`` (the input is not modified). Per-pixel maps (``depth``,
    ``valid_depth``, ``instance_ids``) are optional and transformed when present; ``intrinsics`` / ``extrinsics``
    are updated when present; ``visible[s, t]`` is cleared for a track whose id no longer appears in view ``s``
    after the crop (when ``instance_ids``, ``track_ids`` and ``visible`` are present). Other keys pass unchanged.
    """

    def __init__(self, image_size: int, train: bool, scale: tuple[float, float] = (0.4, 1.0),
                 ratio: tuple[float, float] = (3 / 4, 4 / 3), flip_prob: float = 0.5, photometric: bool = True,
                 seed: int | None = None) -> None:
        super().__init__(image_size, train, scale, ratio, flip_prob, photometric, seed)

    def __call__(self, sample: Sample, seed: int | None = None) -> Sample:
        if not isinstance(sample, dict):
            raise InputError(f"a multi-view sample must be a dict; got {type(sample).__name__}")
        images = _uint8_image(sample, "images", (None, None, None, 3))
        num_views, height, width = images.shape[:3]
        if num_views == 0 or height == 0 or width == 0:
            raise InputError(f"sample['images'] is empty: shape {tuple(images.shape)}")
        maps = {key: _array(sample, key, dtype, (num_views, height, width))
                for key, dtype in (("depth", np.float32), ("valid_depth", np.uint8), ("instance_ids", np.int32))
                if key in sample}
        K = _array(sample, "intrinsics", np.float32, (num_views, 3, 3)) if "intrinsics" in sample else None
        E = _array(sample, "extrinsics", np.float32, (num_views, 3, 4)) if "extrinsics" in sample else None

        size = self.image_size
        rng = self._random(seed)
        flip = self.train and rng.random() < self.flip_prob
        targets = {key: "mask" for key in maps}
        out_images = np.empty((num_views, size, size, 3), np.uint8)
        out_maps = {key: np.empty((num_views, size, size), value.dtype) for key, value in maps.items()}
        out_K = None if K is None else np.empty_like(K)
        out_E = None if E is None else np.empty_like(E)
        for view in range(num_views):
            crop = _draw_crop(rng, height, width, self.scale, self.ratio) if self.train \
                else (0, 0, width, height)
            geometric = _geometric(crop, size, flip, targets)
            result = geometric(image=images[view], **{key: value[view] for key, value in maps.items()})
            image = result["image"]
            if self.photometric is not None:
                image = self.photometric(image=image)["image"]
            out_images[view] = image
            for key in maps:
                out_maps[key][view] = result[key]
            if out_K is not None:
                out_K[view] = crop_resize_intrinsics(K[view], crop, (size, size))
                if flip:
                    out_K[view] = flip_intrinsics(out_K[view], size)
            if out_E is not None:
                out_E[view] = flip_extrinsics(E[view]) if flip else E[view]

        out = dict(sample)
        out["images"] = out_images
        if "depth" in out_maps:
            out["depth"] = out_maps["depth"]
        if "valid_depth" in out_maps:
            out["valid_depth"] = out_maps["valid_depth"].astype(bool)
        if "instance_ids" in out_maps:
            out["instance_ids"] = out_maps["instance_ids"]
        if out_K is not None:
            out["intrinsics"] = out_K
        if out_E is not None:
            out["extrinsics"] = out_E
        if "instance_ids" in out_maps and "visible" in sample and "track_ids" in sample:
            out["visible"] = self._visible(sample, out_maps["instance_ids"], num_views)
        if flip and "captions" in sample:
            out["captions"] = [_swap_left_right(c) if isinstance(c, str) else c for c in sample["captions"]]
        return out

    @staticmethod
    def _visible(sample: Sample, instance_ids: np.ndarray, num_views: int) -> np.ndarray:
        """Track t stays visible in view v only if its slot id ``t + 1`` (the datasets' convention:
        ``instance_ids`` holds index + 1 into ``track_ids``, 0 = background) survives the crop."""
        num_tracks = len(np.asarray(sample["track_ids"]).reshape(-1))
        visible = _array(sample, "visible", bool, (num_views, num_tracks))
        slots = np.arange(1, num_tracks + 1)
        present = np.stack([np.isin(slots, instance_ids[v]) for v in range(num_views)], axis=0)
        return visible & present


def build_multiview_transform(image_size: int, train: bool, **kwargs: Any) -> Callable[[Sample], Sample]:
    """The multi-view pipeline: train = random per-view crop + resize, sample-wide flip, per-view photometric
    noise; eval = deterministic resize. ``kwargs`` (scale, ratio, flip_prob, photometric, seed) go to
    :class:`MultiViewTransform`."""
    return MultiViewTransform(image_size, train, **kwargs)


# ----------------------------------------------------------------------------------------------------------------
# detection


class DetectionTransform(_RandomTransform):
    """Augmentation of a detection sample (XYXY pixel boxes, per-instance masks).

    Train: a random crop (same policy as the multi-view one) resized to ``image_size`` square, horizontal flip,
    photometric noise. Eval: resize to ``image_size`` square. With ``keep_aspect`` the crop (eval: the image) is
    resized to its longer side ``image_size`` instead (:func:`keep_aspect_size`; a pretrained body's letterbox
    geometry, the batch padded by the collate). Boxes go through albumentations (``pascal_voc``,
    clipped to the image); an instance is dropped, with its mask and every per-instance field
    (:data:`DETECTION_INSTANCE_KEYS`), when its box leaves the image (less than 1 px² left). When an instance has a
    non-empty mask, its output box is the tight box of the transformed mask (``[x0, y0, x1 + 1, y1 + 1]`` over its
    pixels), so masks and boxes always agree; an instance whose mask was non-empty and is now empty is dropped.
    Instances with an all-empty mask (box-only annotations) keep the transformed box.

    Boxes with zero width or height on input are dropped (albumentations ``filter_invalid_bboxes``); boxes that are
    not finite or have ``x1 < x0`` / ``y1 < y0`` raise :class:`InputError`.
    """

    def __init__(self, image_size: int, train: bool, scale: tuple[float, float] = (0.3, 1.0),
                 ratio: tuple[float, float] = (3 / 4, 4 / 3), flip_prob: float = 0.5, photometric: bool = True,
                 seed: int | None = None, keep_aspect: bool = False) -> None:
        super().__init__(image_size, train, scale, ratio, flip_prob, photometric, seed)
        self.keep_aspect = bool(keep_aspect)
        self.bbox_params = A.BboxParams(format="pascal_voc", label_fields=["instance_index"], min_area=1.0,
                                        clip=True, filter_invalid_bboxes=True)

    def __call__(self, sample: Sample, seed: int | None = None) -> Sample:
        if not isinstance(sample, dict):
            raise InputError(f"a detection sample must be a dict; got {type(sample).__name__}")
        image = _uint8_image(sample, "image", (None, None, 3))
        height, width = image.shape[:2]
        if height == 0 or width == 0:
            raise InputError(f"sample['image'] is empty: shape {tuple(image.shape)}")
        boxes = _array(sample, "boxes", np.float32, (None, 4))
        num = len(boxes)
        if not np.isfinite(boxes).all():
            raise InputError(f"sample['boxes'] must be finite; got {boxes[~np.isfinite(boxes).all(axis=1)][:3]!r}")
        bad = (boxes[:, 2] < boxes[:, 0]) | (boxes[:, 3] < boxes[:, 1])
        if bad.any():
            raise InputError(f"sample['boxes'] must be XYXY with x1 >= x0 and y1 >= y0; got {boxes[bad][:3]!r}")
        masks = _array(sample, "masks", np.uint8, (num, height, width)) if "masks" in sample else None
        for key in DETECTION_INSTANCE_KEYS:
            if key in sample and len(sample[key]) != num:
                raise InputError(f"sample[{key!r}] has {len(sample[key])} entries but there are {num} boxes")

        size = self.image_size
        rng = self._random(seed)
        crop = _draw_crop(rng, height, width, self.scale, self.ratio) if self.train else (0, 0, width, height)
        flip = self.train and rng.random() < self.flip_prob
        geometric = _geometric(crop, size, flip, {}, bbox_params=self.bbox_params, keep_aspect=self.keep_aspect)
        inputs: dict[str, Any] = {"image": image, "bboxes": boxes, "instance_index": np.arange(num)}
        if masks is not None and num > 0:  # albumentations cannot take an empty stack of masks
            inputs["masks"] = masks
        result = geometric(**inputs)
        out_image = result["image"]
        if self.photometric is not None:
            out_image = self.photometric(image=out_image)["image"]

        kept = np.asarray(result["instance_index"], np.int64).reshape(-1)
        out_boxes = np.asarray(result["bboxes"], np.float32).reshape(-1, 4)
        out_masks = None
        if masks is not None:
            out_height, out_width = out_image.shape[:2]
            all_masks = np.asarray(result["masks"]).reshape(num, out_height, out_width) if num > 0 \
                else np.zeros((0, out_height, out_width), np.uint8)
            out_masks = all_masks[kept].astype(bool)
            had_mask = masks.reshape(num, height * width).any(axis=1)[kept]
            keep = np.ones(len(kept), bool)
            for i in range(len(kept)):
                if not had_mask[i]:
                    continue
                ys, xs = np.nonzero(out_masks[i])
                if len(xs) == 0:
                    keep[i] = False
                    continue
                out_boxes[i] = (xs.min(), ys.min(), xs.max() + 1, ys.max() + 1)
            kept, out_boxes, out_masks = kept[keep], out_boxes[keep], out_masks[keep]

        out = dict(sample)
        out["image"] = out_image
        out["boxes"] = out_boxes.astype(np.float32)
        if out_masks is not None:
            out["masks"] = out_masks
        for key in DETECTION_INSTANCE_KEYS:
            if key not in sample:
                continue
            value = sample[key]
            if isinstance(value, np.ndarray):
                out[key] = value[kept]
            else:
                out[key] = [value[i] for i in kept]
        if "category_ids" in out:
            out["category_ids"] = np.asarray(out["category_ids"], np.int64).reshape(-1)
        if "iscrowd" in out:
            out["iscrowd"] = np.asarray(out["iscrowd"], bool).reshape(-1)
        if flip and "captions" in out:
            out["captions"] = [_swap_left_right(c) if isinstance(c, str) else c for c in out["captions"]]
        return out


def build_detection_transform(image_size: int, train: bool, **kwargs: Any) -> Callable[[Sample], Sample]:
    """The detection pipeline: train = random crop + resize + flip + photometric; eval = resize.
    ``kwargs`` (scale, ratio, flip_prob, photometric, seed, keep_aspect) go to :class:`DetectionTransform`."""
    return DetectionTransform(image_size, train, **kwargs)
