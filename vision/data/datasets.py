"""torch Datasets over a :class:`~vision.data.coco.Split`, producing numpy sample dicts, plus collate functions.

Samples are plain numpy dicts so that transforms (``vision.data.transforms``) can work on them; ``clip_to_tensors``
and the ``collate_*`` functions turn them into torch tensors.

Multi-view clip sample contract (shared with the transforms)::

    images        uint8   [S, H, W, 3]   RGB
    depth         float32 [S, H, W]      metres, 0 = invalid (all zeros without depth)
    valid_depth   bool    [S, H, W]
    intrinsics    float32 [S, 3, 3]      OpenCV K (a default pinhole f = max(H, W), centred, without cameras)
    extrinsics    float32 [S, 3, 4]      OpenCV camera-from-world ([I | 0] without cameras)
    has_camera    bool                   every view has a camera in the split
    instance_ids  int32   [S, H, W]      0 = background, k = index + 1 into track_ids
    track_ids     int64   [T]            sorted track ids present in the clip
    captions      list[str] of T         track caption, or its category name when the caption is empty
    concepts      list[str]              the phrases queried on the video (:meth:`Split.queried_phrases`)
    category_ids  int64   [T]
    visible       bool    [S, T]         the track has a non-empty mask on that view
    image_ids     int64   [S]
    video_id      int

Keys. Every dataset here takes a plain index or a :data:`~vision.data.sampler.SampleKey` ``(index, sample_seed)``
(what :class:`~vision.data.sampler.ResumableSampler` yields for training). With a key, the item's random draws
(window, augmentation) come from its ``sample_seed`` alone, so they do not depend on the worker or the order in
which items are loaded; with a plain index they come from torch's global RNG (random windows) and the transform's
own generator.
"""

from __future__ import annotations

import bisect
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
import torch
from torch.utils.data import ConcatDataset, Dataset

from vision.data.coco import Split
from vision.data.sampler import SampleKey, split_key
from vision.errors import DataError, InputError

__all__ = [
    "MultiViewClipDataset",
    "KeyedConcatDataset",
    "DetectionImageDataset",
    "LabelledVideoDataset",
    "LABEL_CODES",
    "default_intrinsics",
    "clip_to_tensors",
    "collate_clips",
    "detection_to_tensors",
    "collate_detection",
    "collate_videos",
]

#: ``transform(sample) -> sample``; a transform of a dataset that is read with sample keys must also accept
#: ``transform(sample, seed=int)`` and draw that sample's randomness from the seed (as ``vision.data.transforms``).
Transform = Callable[..., dict]


def _apply(transform: Transform | None, sample: dict, seed: int | None) -> dict:
    if transform is None:
        return sample
    return transform(sample) if seed is None else transform(sample, seed=seed)


def _sub_seeds(seed: int | None, count: int) -> list[int | None]:
    """``count`` independent seeds derived from a sample seed (``None`` stays ``None``)."""
    if seed is None:
        return [None] * count
    return [int(v) for v in np.random.SeedSequence(seed).generate_state(count, dtype=np.uint64) >> np.uint64(1)]


def default_intrinsics(height: int, width: int) -> np.ndarray:
    """A plausible pinhole K float32 [3, 3] (focal = max(H, W) px, principal point at the centre) for images
    without a camera, so geometry code never divides by zero; ``has_camera`` tells it is not real."""
    f = float(max(height, width))
    return np.array([[f, 0.0, width / 2.0], [0.0, f, height / 2.0], [0.0, 0.0, 1.0]], np.float32)


class MultiViewClipDataset(Dataset):
    """Clips of ``views`` images of one video or unordered image set.

    Ordered videos give windows of frames ``start, start + stride, ..., start + (views - 1) * stride`` (indices into
    the frames sorted by ``frame_index``); windows start every ``step`` frames (default: the window's span, so
    windows do not overlap). Unordered sets give their images in chunks of ``views`` (ordered by ``frame_index``).
    With ``random_window`` there is one item per video and each access draws a random window (ordered) or a random
    subset of ``views`` images (unordered): from the sample seed of a :data:`SampleKey`, else from torch's RNG.
    Videos with too few frames are skipped; images outside any video are not used.

    Viewpoint change of random windows (the geometry curriculum; both default to today's draw):

    - ``max_stride``: an ordered video's window takes every ``s``-th frame, ``s`` drawn with the window among
      ``1..max_stride`` (every window that fits is equally likely).
    - ``max_view_angle`` (degrees, settable between epochs): every view of a drawn clip is within this relative
      rotation angle (the geodesic angle of ``R_j R_0^T``) of the clip's first view, which defines the world frame.
      An ordered video draws among the windows that satisfy it (stride-1 windows when none does); an unordered set
      draws a random first view and ``views - 1`` others among those within the angle (the nearest ones when too
      few are). Views without cameras count as angle 0. ``None``: no limit.

    Args:
        split: the split.
        views: S, images per clip (>= 1).
        stride: frame step inside a window of an ordered video (>= 1).
        transform: callable sample -> sample applied last (see the module docstring for the contract).
        random_window: draw windows at random (training) instead of enumerating them.
        step: start-to-start distance of enumerated windows of ordered videos; default the window's span.
        max_stride: largest frame step of random windows of ordered videos (>= stride).
        max_view_angle: largest relative rotation (degrees) of a random clip's views to its first view, or None.
    """

    def __init__(self, split: Split, views: int, stride: int = 1, transform: Transform | None = None,
                 random_window: bool = False, step: int | None = None, max_stride: int | None = None,
                 max_view_angle: float | None = None) -> None:
        if isinstance(views, bool) or not isinstance(views, int) or views < 1:
            raise InputError(f"views must be an integer >= 1, got {views!r}")
        if isinstance(stride, bool) or not isinstance(stride, int) or stride < 1:
            raise InputError(f"stride must be an integer >= 1, got {stride!r}")
        span = (views - 1) * stride + 1
        if step is None:
            step = span
        if isinstance(step, bool) or not isinstance(step, int) or step < 1:
            raise InputError(f"step must be an integer >= 1, got {step!r}")
        if max_stride is None:
            max_stride = stride
        if isinstance(max_stride, bool) or not isinstance(max_stride, int) or max_stride < stride:
            raise InputError(f"max_stride must be an integer >= stride ({stride}), got {max_stride!r}")
        self.max_stride = max_stride
        self.max_view_angle = max_view_angle
        self._angles: dict[int, np.ndarray] = {}
        self.split = split
        self.views = views
        self.stride = stride
        self.span = span
        self.step = step
        self.transform = transform
        self.random_window = random_window
        self.videos: list[int] = []  # eligible videos, for random windows
        self.windows: list[tuple[int, list[int]]] = []  # (video id, frame positions) for enumerated windows
        for video_id in sorted(split.videos):
            frames = split.images_by_video[video_id]
            ordered = split.videos[video_id].get("ordered", True)
            n = len(frames)
            if ordered:
                if n < span:
                    continue
                starts = range(0, n - span + 1, step)
                windows = [[s + k * stride for k in range(views)] for s in starts]
            else:
                if n < views:
                    continue
                windows = [list(range(s, s + views)) for s in range(0, n - views + 1, views)]
            self.videos.append(video_id)
            self.windows.extend((video_id, w) for w in windows)
        if not self.videos:
            raise DataError(f"no video or image set has enough images for views={views}, stride={stride} "
                            f"(need {span} frames of an ordered video or {views} images of an unordered set)",
                            file=split.file, field="videos")

    def __len__(self) -> int:
        return len(self.videos) if self.random_window else len(self.windows)

    @property
    def max_view_angle(self) -> float | None:
        return self._max_view_angle

    @max_view_angle.setter
    def max_view_angle(self, value: float | None) -> None:
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0):
            raise InputError(f"max_view_angle must be a positive number of degrees or None, got {value!r}")
        self._max_view_angle = None if value is None else float(value)

    def view_angles(self, video_id: int) -> np.ndarray:
        """Relative rotation angles (degrees) between every two images of a video, float64 [n, n] in frame order
        (0 where either image has no camera); cached per video."""
        if video_id not in self._angles:
            frames = self.split.images_by_video[video_id]
            rotations = np.stack([cam[1][:, :3] if cam is not None else np.eye(3)
                                  for cam in (self.split.camera(img) for img in frames)]).astype(np.float64)
            relative = np.einsum("iab,jcb->ijac", rotations, rotations)  # R_i R_j^T
            cos = (np.trace(relative, axis1=-2, axis2=-1) - 1.0) / 2.0
            self._angles[video_id] = np.degrees(np.arccos(np.clip(cos, -1.0, 1.0)))
        return self._angles[video_id]

    def _random_positions(self, video_id: int, generator: torch.Generator | None) -> list[int]:
        n = len(self.split.images_by_video[video_id])
        ordered = self.split.videos[video_id].get("ordered", True)
        limit = self._max_view_angle
        if ordered and self.max_stride == self.stride and limit is None:
            start = int(torch.randint(0, n - self.span + 1, (), generator=generator).item())
            return [start + k * self.stride for k in range(self.views)]
        if ordered:
            return self._ordered_window(video_id, n, limit, generator)
        if limit is None:
            return sorted(int(i) for i in torch.randperm(n, generator=generator)[: self.views].tolist())
        angles = self.view_angles(video_id)
        first = int(torch.randint(0, n, (), generator=generator).item())
        others = np.array([i for i in range(n) if i != first], np.int64)
        near = others[angles[first, others] <= limit]
        if len(near) >= self.views - 1:
            pick = near[torch.randperm(len(near), generator=generator)[: self.views - 1].numpy()]
        else:
            pick = others[np.argsort(angles[first, others], kind="stable")[: self.views - 1]]
        return [first, *(int(i) for i in pick)]

    def _ordered_window(self, video_id: int, n: int, limit: float | None,
                        generator: torch.Generator | None) -> list[int]:
        """A random window of an ordered video among every (start, stride) that fits and keeps its views within
        ``limit`` degrees of its first frame (stride-1 windows when none does)."""
        windows = [(start, step) for step in range(self.stride, self.max_stride + 1)
                   for start in range(0, n - (self.views - 1) * step)]
        if limit is not None:
            angles = self.view_angles(video_id)
            within = [(start, step) for start, step in windows
                      if max(angles[start, start + k * step] for k in range(self.views)) <= limit]
            windows = within or [(start, self.stride) for start in range(0, n - self.span + 1)]
        start, step = windows[int(torch.randint(0, len(windows), (), generator=generator).item())]
        return [start + k * step for k in range(self.views)]

    def __getitem__(self, key: int | SampleKey) -> dict[str, Any]:
        index, seed = split_key(key)
        window_seed, transform_seed = _sub_seeds(seed, 2)
        if self.random_window:
            video_id = self.videos[index]
            generator = None if window_seed is None else torch.Generator().manual_seed(window_seed)
            positions = self._random_positions(video_id, generator)
        else:
            video_id, positions = self.windows[index]
        frames = [self.split.images_by_video[video_id][p] for p in positions]
        return _apply(self.transform, self.load_clip(video_id, frames), transform_seed)

    def load_clip(self, video_id: int, frames: Sequence[dict]) -> dict[str, Any]:
        """The sample dict (module docstring) of the given image dicts of one video, in the given order."""
        split = self.split
        images = [split.load_image(img) for img in frames]
        shapes = {im.shape for im in images}
        if len(shapes) != 1:
            raise DataError(f"images of one clip differ in size: {sorted(shapes)}", file=split.file,
                            field=f"videos[id={video_id}]", value=[img["id"] for img in frames])
        height, width = images[0].shape[:2]
        depth = np.stack([split.depth(img) for img in frames])
        cameras = [split.camera(img) for img in frames]
        has_camera = all(cam is not None for cam in cameras)
        intrinsics = np.stack([cam[0] if cam is not None else default_intrinsics(height, width) for cam in cameras])
        identity = np.concatenate([np.eye(3, dtype=np.float32), np.zeros((3, 1), np.float32)], axis=1)
        extrinsics = np.stack([cam[1] if cam is not None else identity for cam in cameras])

        per_view = []  # per view: list of (track id, mask)
        track_set: set[int] = set()
        for img in frames:
            entries = []
            for ann in split.annotations_by_image[img["id"]]:
                if "track_id" not in ann:
                    continue
                entries.append((ann["track_id"], split.annotation_mask(ann)))
                track_set.add(ann["track_id"])
            per_view.append(entries)
        track_ids = sorted(track_set)
        slot = {t: k for k, t in enumerate(track_ids)}
        instance_ids = np.zeros((len(frames), height, width), np.int32)
        visible = np.zeros((len(frames), len(track_ids)), bool)
        for s, entries in enumerate(per_view):
            # larger masks first, smaller ones drawn on top; ties by track id for determinism
            for track_id, mask in sorted(entries, key=lambda e: (-int(e[1].sum()), e[0])):
                instance_ids[s][mask] = slot[track_id] + 1
                visible[s, slot[track_id]] = bool(mask.any())
        captions = []
        category_ids = []
        for t in track_ids:
            track = split.tracks[t]
            caption = track.get("caption") or split.categories[track["category_id"]]["name"]
            captions.append(caption)
            category_ids.append(track["category_id"])
        return {
            "images": np.stack(images).astype(np.uint8),
            "depth": depth.astype(np.float32),
            "valid_depth": depth > 0,
            "intrinsics": intrinsics.astype(np.float32),
            "extrinsics": extrinsics.astype(np.float32),
            "has_camera": has_camera,
            "instance_ids": instance_ids,
            "track_ids": np.asarray(track_ids, np.int64).reshape(-1),
            "captions": captions,
            "category_ids": np.asarray(category_ids, np.int64).reshape(-1),
            "visible": visible,
            "image_ids": np.asarray([img["id"] for img in frames], np.int64),
            "video_id": int(video_id),
            "concepts": list(split.queried_phrases(video_id).values()),
        }


class KeyedConcatDataset(ConcatDataset):
    """:class:`torch.utils.data.ConcatDataset` that also takes :data:`SampleKey` keys and passes the sample seed on
    to the part the index falls in (indices run over the parts in order)."""

    def __getitem__(self, key: int | SampleKey) -> Any:
        index, seed = split_key(key)
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(f"index {index} out of range for {len(self)} items")
        part = bisect.bisect_right(self.cumulative_sizes, index)
        local = index - (self.cumulative_sizes[part - 1] if part else 0)
        return self.datasets[part][local if seed is None else (local, seed)]


class DetectionImageDataset(Dataset):
    """Single images with their boxes and masks, sorted by image id (images without annotations included).

    Sample: ``{"image": uint8 [H, W, 3] RGB, "boxes": float32 [N, 4] XYXY px, "category_ids": int64 [N],
    "masks": bool [N, H, W], "iscrowd": bool [N], "image_id": int}``.

    Args:
        split: the split.
        transform: callable sample -> sample applied last.
        categories: keep only annotations of these category ids (e.g. the ``iv`` ones for training); None keeps all.
        mosaic: probability that a sample is a mosaic of itself and three other images drawn at random
            (:func:`vision.data.mosaic.mosaic`), before ``transform``; 0 never (the sample is the image alone). The
            draws come from the sample's seed when the key carries one.
    """

    def __init__(self, split: Split, transform: Transform | None = None,
                 categories: Sequence[int] | None = None, mosaic: float = 0.0) -> None:
        if not 0.0 <= mosaic <= 1.0:
            raise InputError(f"mosaic is a probability in [0, 1], got {mosaic!r}")
        self.mosaic = float(mosaic)
        if categories is not None:
            unknown = [c for c in categories if c not in split.categories]
            if unknown:
                raise InputError(f"category ids {unknown} are not in split {split.file}")
            categories = frozenset(int(c) for c in categories)
        self.split = split
        self.transform = transform
        self.categories = categories
        self.image_ids = sorted(split.images)

    def __len__(self) -> int:
        return len(self.image_ids)

    def __getitem__(self, key: int | SampleKey) -> dict[str, Any]:
        index, seed = split_key(key)
        transform_seed, mosaic_seed = _sub_seeds(seed, 2)  # the first equals _sub_seeds(seed, 1)[0]
        sample = self._sample(index)
        if self.mosaic > 0:
            rng = np.random.default_rng(mosaic_seed)
            if rng.random() < self.mosaic:
                from vision.data.mosaic import mosaic

                others = rng.integers(0, len(self), size=3)
                sample = mosaic([sample, *(self._sample(int(i)) for i in others)])
        return _apply(self.transform, sample, transform_seed)

    def _sample(self, index: int) -> dict[str, Any]:
        """The image at ``index`` with its annotations, untransformed."""
        split = self.split
        img = split.images[self.image_ids[index]]
        image = split.load_image(img)
        height, width = image.shape[:2]
        anns = [a for a in split.annotations_by_image[img["id"]]
                if self.categories is None or a["category_id"] in self.categories]
        boxes = np.zeros((len(anns), 4), np.float32)
        masks = np.zeros((len(anns), height, width), bool)
        for i, ann in enumerate(anns):
            x, y, w, h = ann["bbox"]
            boxes[i] = [x, y, x + w, y + h]
            masks[i] = split.annotation_mask(ann)
        sample = {
            "image": image,
            "boxes": boxes,
            "category_ids": np.asarray([a["category_id"] for a in anns], np.int64).reshape(-1),
            "masks": masks,
            "iscrowd": np.asarray([bool(a.get("iscrowd", 0)) for a in anns], bool).reshape(-1),
            "image_id": int(img["id"]),
        }
        return sample


#: Integer codes of the forensic labels (``cgi`` is neither class: scored and reported apart, never trained on).
LABEL_CODES = {"generated": 1, "real": 0, "cgi": -1}


class LabelledVideoDataset(Dataset):
    """Videos with a forensic ``label`` and a ``file_name``, sorted by video id.

    Sample: ``{"video_path": Path, "label": int (1 = generated, 0 = real, -1 = cgi: neither, scored apart),
    "generator": str | None, "family": str | None, "video_id": int}``. Decoding is left to the consumer (``vision.data.video``).
    """

    def __init__(self, split: Split) -> None:
        self.split = split
        self.video_ids = sorted(v for v, video in split.videos.items() if "label" in video and "file_name" in video)
        if not self.video_ids:
            raise DataError("no video has both 'label' and 'file_name'", file=split.file, field="videos")

    def __len__(self) -> int:
        return len(self.video_ids)

    def __getitem__(self, key: int | SampleKey) -> dict[str, Any]:
        video = self.split.videos[self.video_ids[split_key(key)[0]]]
        return {
            "video_path": self.split.video_path(video),
            "label": LABEL_CODES[video["label"]],
            "generator": video.get("generator"),
            "family": video.get("family"),
            "video_id": int(video["id"]),
        }


def clip_to_tensors(sample: dict[str, Any]) -> dict[str, Any]:
    """Clip sample (numpy) -> torch: ``images`` float [S, 3, H, W] in [0, 1], ``depth`` float [S, H, W],
    ``valid_depth`` bool, ``intrinsics`` float [S, 3, 3], ``extrinsics`` float [S, 3, 4], ``has_camera`` bool [],
    ``instance_ids`` int64 [S, H, W], ``track_ids`` / ``category_ids`` int64 [T], ``visible`` bool [S, T],
    ``image_ids`` int64 [S], ``video_id`` int64 [], ``captions`` list[str] (unchanged)."""
    images = np.ascontiguousarray(sample["images"])
    if images.ndim != 4 or images.shape[-1] != 3:
        raise InputError(f"clip images must be uint8 [S, H, W, 3], got shape {images.shape}")
    if images.dtype == np.uint8:
        img_t = torch.from_numpy(images).permute(0, 3, 1, 2).float().div_(255.0)
    else:
        img_t = torch.from_numpy(images.astype(np.float32)).permute(0, 3, 1, 2).contiguous()
    return {
        "images": img_t.contiguous(),
        "depth": torch.from_numpy(np.asarray(sample["depth"], np.float32).copy()),
        "valid_depth": torch.from_numpy(np.asarray(sample["valid_depth"], bool).copy()),
        "intrinsics": torch.from_numpy(np.asarray(sample["intrinsics"], np.float32).copy()),
        "extrinsics": torch.from_numpy(np.asarray(sample["extrinsics"], np.float32).copy()),
        "has_camera": torch.tensor(bool(sample["has_camera"])),
        "instance_ids": torch.from_numpy(np.asarray(sample["instance_ids"], np.int64).copy()),
        "track_ids": torch.from_numpy(np.asarray(sample["track_ids"], np.int64).reshape(-1).copy()),
        "captions": list(sample["captions"]),
        "category_ids": torch.from_numpy(np.asarray(sample["category_ids"], np.int64).reshape(-1).copy()),
        "visible": torch.from_numpy(np.asarray(sample["visible"], bool).copy()),
        "image_ids": torch.from_numpy(np.asarray(sample["image_ids"], np.int64).copy()),
        "video_id": torch.tensor(int(sample["video_id"]), dtype=torch.int64),
        "concepts": list(sample.get("concepts", [])),
    }


def collate_clips(samples: list[dict[str, Any]]) -> dict[str, Any]:
    """Batch clips (numpy samples or outputs of :func:`clip_to_tensors`) of equal S, H, W.

    Returns ``images`` float [B, S, 3, H, W] in [0, 1], ``depth`` [B, S, H, W], ``valid_depth``, ``intrinsics``
    [B, S, 3, 3], ``extrinsics`` [B, S, 3, 4], ``has_camera`` bool [B], ``instance_ids`` int64 [B, S, H, W],
    ``image_ids`` [B, S], ``video_id`` [B]; tracks padded to T = max over the batch: ``track_ids`` and
    ``category_ids`` int64 [B, T] (-1 = padding), ``visible`` bool [B, S, T], ``track_valid`` bool [B, T], and
    ``captions`` and ``concepts`` (the phrases queried on each clip's video, :meth:`~vision.data.coco.Split.
    queried_phrases`) lists (B) of lists of str. Instance id k of clip b still means ``track_ids[b, k - 1]``.
    """
    if not samples:
        raise InputError("collate_clips needs at least one sample")
    clips = [s if isinstance(s["images"], torch.Tensor) else clip_to_tensors(s) for s in samples]
    shapes = {tuple(c["images"].shape) for c in clips}
    if len(shapes) != 1:
        raise InputError(f"clips of one batch must share [S, 3, H, W]; got {sorted(shapes)} "
                         "(set image_size so the transforms resize them)")
    batch: dict[str, Any] = {}
    for key in ("images", "depth", "valid_depth", "intrinsics", "extrinsics", "has_camera", "instance_ids",
                "image_ids", "video_id"):
        batch[key] = torch.stack([c[key] for c in clips])
    num_tracks = max(int(c["track_ids"].numel()) for c in clips)
    b, s = len(clips), clips[0]["images"].shape[0]
    track_ids = torch.full((b, num_tracks), -1, dtype=torch.int64)
    category_ids = torch.full((b, num_tracks), -1, dtype=torch.int64)
    visible = torch.zeros((b, s, num_tracks), dtype=torch.bool)
    track_valid = torch.zeros((b, num_tracks), dtype=torch.bool)
    for i, c in enumerate(clips):
        t = int(c["track_ids"].numel())
        track_ids[i, :t] = c["track_ids"]
        category_ids[i, :t] = c["category_ids"]
        visible[i, :, :t] = c["visible"]
        track_valid[i, :t] = True
    batch.update(track_ids=track_ids, category_ids=category_ids, visible=visible, track_valid=track_valid,
                 captions=[list(c["captions"]) for c in clips], concepts=[list(c.get("concepts", [])) for c in clips])
    return batch


def detection_to_tensors(sample: dict[str, Any]) -> dict[str, Any]:
    """Detection sample (numpy) -> ``image`` float [3, H, W] in [0, 1] and a target with ``boxes`` float [N, 4]
    XYXY px, ``category_ids`` int64 [N], ``masks`` bool [N, H, W], ``iscrowd`` bool [N], ``image_id`` int."""
    image = np.ascontiguousarray(sample["image"])
    if image.ndim != 3 or image.shape[-1] != 3:
        raise InputError(f"detection image must be uint8 [H, W, 3], got shape {image.shape}")
    img_t = torch.from_numpy(image).permute(2, 0, 1)
    img_t = img_t.float().div_(255.0) if image.dtype == np.uint8 else img_t.float()
    return {
        "image": img_t.contiguous(),
        "boxes": torch.from_numpy(np.asarray(sample["boxes"], np.float32).reshape(-1, 4).copy()),
        "category_ids": torch.from_numpy(np.asarray(sample["category_ids"], np.int64).reshape(-1).copy()),
        "masks": torch.from_numpy(np.asarray(sample["masks"], bool).copy()),
        "iscrowd": torch.from_numpy(np.asarray(sample["iscrowd"], bool).reshape(-1).copy()),
        "image_id": int(sample["image_id"]),
    }


def collate_detection(samples: list[dict[str, Any]]) -> dict[str, Any]:
    """Batch detection samples (numpy or from :func:`detection_to_tensors`).

    Returns ``images`` float [B, 3, Hmax, Wmax] in [0, 1] (zero-padded at the bottom/right, so box coordinates
    are unchanged), ``image_sizes`` int64 [B, 2] as (H, W) before padding, ``image_ids`` int64 [B], and ``targets``:
    a list of B dicts with ``boxes`` [N, 4] XYXY px, ``category_ids`` [N], ``masks`` [N, H, W] (unpadded),
    ``iscrowd`` [N], ``image_id``.
    """
    if not samples:
        raise InputError("collate_detection needs at least one sample")
    items = [s if isinstance(s["image"], torch.Tensor) else detection_to_tensors(s) for s in samples]
    sizes = torch.tensor([[int(it["image"].shape[1]), int(it["image"].shape[2])] for it in items], dtype=torch.int64)
    hmax, wmax = int(sizes[:, 0].max()), int(sizes[:, 1].max())
    images = torch.zeros((len(items), 3, hmax, wmax), dtype=torch.float32)
    for i, it in enumerate(items):
        h, w = it["image"].shape[1:]
        images[i, :, :h, :w] = it["image"]
    targets = [{k: it[k] for k in ("boxes", "category_ids", "masks", "iscrowd", "image_id")} for it in items]
    return {"images": images, "image_sizes": sizes,
            "image_ids": torch.tensor([it["image_id"] for it in items], dtype=torch.int64), "targets": targets}


def collate_videos(samples: list[dict[str, Any]]) -> dict[str, Any]:
    """Batch labelled-video samples: ``video_path`` list[Path], ``label`` int64 [B], ``generator`` list,
    ``video_id`` int64 [B]."""
    if not samples:
        raise InputError("collate_videos needs at least one sample")
    return {
        "video_path": [Path(s["video_path"]) for s in samples],
        "label": torch.tensor([int(s["label"]) for s in samples], dtype=torch.int64),
        "generator": [s["generator"] for s in samples],
        "video_id": torch.tensor([int(s["video_id"]) for s in samples], dtype=torch.int64),
    }
