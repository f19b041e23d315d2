"""The presence head's training data: the real tracker run on camera-path clips over photographs
(:mod:`vision.tracking.real.camera_paths`), every answer it judged recorded with its cues and a label.

Objects: YOLOX-nano's detections (registry ``yolox-nano``, the teacher) on each photograph, score at least 0.3, a
box between 0.5% and 20% of the photograph, at most ``per_photo`` per photograph (highest score first); and
``random_per_photo`` boxes of no class (2-10% of the photograph, aspect 1:2 to 2:1, where the image has
structure), since a user boxes anything: a face, a bag, a pair of legs. Each object
gives ``clips_per_object`` clips, the events taken in turn; an occlusion's occluder is a patch of another
photograph.

While a clip runs, the target's decisions are teacher-forced (:attr:`vision.tracking.real.target.Target.oracle`):
it holds an answer whose box overlaps the object's visible box (IoU >= 0.5, or 0.3 while the object is partly
hidden), and searches otherwise; so the recorded answers are those the tracker meets at run time: its own answers
while it follows, its drift, and the candidates of its searches (the 3D memory's projection, the grid). Labels:
1 where the object is at least half visible and the answer's IoU with it is at least 0.5; 0 where under a tenth of
it is visible, or the answer's IoU is under 0.2; the answers between are left out (``label`` -1).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from vision.errors import InputError
from vision.evaluation.box_tracks import box_iou_xywh
from vision.tracking.real.camera_paths import EVENTS, camera_path_clip

__all__ = ["builtin_photos", "folder_photos", "photo_objects", "collect_cues"]

PHOTO_SUFFIXES = (".jpg", ".jpeg", ".png")


def builtin_photos() -> list[tuple[str, np.ndarray]]:
    """scikit-image's colour photographs that ship with it: ``(name, uint8 [H, W, 3] RGB)``."""
    from skimage import data

    return [(name, getattr(data, name)()) for name in ("astronaut", "chelsea", "coffee", "rocket")] + [
        ("motorcycle", data.stereo_motorcycle()[0])]


def folder_photos(folder: str | Path) -> list[tuple[str, np.ndarray]]:
    """Every photograph (``.jpg``, ``.jpeg``, ``.png``) directly in ``folder``, name order, as RGB."""
    from vision.data.io import read_image

    folder = Path(folder)
    if not folder.is_dir():
        raise InputError(f"photos folder {folder} does not exist")
    return [(p.stem, read_image(p)) for p in sorted(folder.iterdir()) if p.suffix.lower() in PHOTO_SUFFIXES]


def photo_objects(photos: Sequence[tuple[str, np.ndarray]], per_photo: int = 3, min_score: float = 0.3,
                  random_per_photo: int = 3, seed: int = 0, detector=None) -> list[tuple[int, np.ndarray]]:
    """``(photo index, box xyxy)`` of the objects YOLOX-nano finds and of random boxes with structure (see the
    module docstring)."""
    rng = np.random.default_rng(seed)
    if detector is None:
        from vision.weights.nets.onnx_models import YOLOXNano

        detector = YOLOXNano()
    objects = []
    for index, (_, photo) in enumerate(photos):
        found = detector.detect(photo, score_threshold=min_score)
        area = photo.shape[0] * photo.shape[1]
        kept = 0
        for box in found["boxes"]:
            share = (box[2] - box[0]) * (box[3] - box[1]) / area
            if 0.005 <= share <= 0.2 and kept < per_photo:
                objects.append((index, np.asarray(box, np.float64)))
                kept += 1
        grey = photo.mean(2)
        edges = np.hypot(*np.gradient(grey))
        placed, tries = 0, 0
        while placed < random_per_photo and tries < 50:
            tries += 1
            share, aspect = rng.uniform(0.02, 0.1), np.exp(rng.uniform(-np.log(2), np.log(2)))
            w = min(np.sqrt(share * area * aspect), photo.shape[1] - 2)
            h = min(share * area / w, photo.shape[0] - 2)
            x0, y0 = rng.uniform(0, photo.shape[1] - w), rng.uniform(0, photo.shape[0] - h)
            region = edges[int(y0):int(y0 + h), int(x0):int(x0 + w)]
            if region.size and region.mean() >= edges.mean():  # structure at least as rich as the photo's average
                objects.append((index, np.array([x0, y0, x0 + w, y0 + h])))
                placed += 1
    return objects


def _label(box: np.ndarray, truth: np.ndarray, visible: float) -> int:
    if visible < 0.1 or not np.isfinite(truth).all():
        return 0
    iou = float(box_iou_xywh(box[None], truth[None])[0])
    if iou < 0.2:
        return 0
    if visible >= 0.5 and iou >= 0.5:
        return 1
    return -1


def collect_cues(photos: Sequence[tuple[str, np.ndarray]], objects: Sequence[tuple[int, np.ndarray]],
                 make_target: Callable, perception, clips_per_object: int = 3, frames: int = 48,
                 size: tuple[int, int] = (320, 240), seed: int = 0,
                 log: Callable[[str], None] | None = None) -> dict[str, np.ndarray]:
    """Run the tracker on the clips of ``objects`` and record its answers (see the module docstring).

    Args:
        photos: ``(name, RGB)`` photographs; objects: :func:`photo_objects` of them.
        make_target: ``(frame, geometry, box xywh) -> Target`` (a fresh target on the clip's first frame).
        perception: the :class:`~vision.geometry.real_backbone.RealPerception` that gives each frame's geometry.
        clips_per_object, frames, size: clips per object, their length and ``(width, height)``.
        seed: the clips' random seed.

    Returns:
        ``cues`` float32 ``[N, len(CUES)]``, ``label`` int64 ``[N]`` (1, 0, or -1: left out), ``clip`` int64 ``[N]``
        (the clip's index: splits are made by clip) and ``photo`` int64 ``[N]`` (the photograph's index).
    """
    rng = np.random.default_rng(seed)
    cues, labels, clip_ids, photo_ids = [], [], [], []
    clip_index = 0
    for n, (index, box) in enumerate(objects):
        photo = photos[index][1]
        for k in range(clips_per_object):
            event = EVENTS[(n + k) % len(EVENTS)]
            other = photos[(index + 1 + int(rng.integers(len(photos) - 1))) % len(photos)][1] if len(photos) > 1 \
                else photo[::-1]
            oy, ox = int(rng.integers(0, max(other.shape[0] // 2, 1))), int(rng.integers(0, max(other.shape[1] // 2, 1)))
            occluder = other[oy:oy + other.shape[0] // 2, ox:ox + other.shape[1] // 2]
            try:
                clip = camera_path_clip(photo, box, rng, event, frames, size, occluder)
            except InputError:
                continue  # this object cannot leave the view of this photograph
            first = int(np.argmax(clip.visible >= 0.99)) if (clip.visible >= 0.99).any() else -1
            if first != 0:
                continue
            perception.reset()
            target = make_target(clip.frames[0], perception.step(clip.frames[0]), clip.boxes[0])
            target.record = []
            for t in range(1, frames):
                truth, visible = clip.boxes[t], clip.visible[t]

                def oracle(answer: np.ndarray, truth=truth, visible=visible) -> float:
                    if visible < 0.1 or not np.isfinite(truth).all():
                        return 0.0
                    iou = float(box_iou_xywh(answer[None], truth[None])[0])
                    return 1.0 if iou >= (0.5 if visible >= 0.5 else 0.3) else 0.0

                target.oracle = oracle
                start = len(target.record)
                target.step(clip.frames[t], perception.step(clip.frames[t]))
                for c, answer in target.record[start:]:
                    cues.append(c)
                    labels.append(_label(answer, truth, visible))
                    clip_ids.append(clip_index)
                    photo_ids.append(index)
            clip_index += 1
        if log is not None:
            log(f"object {n + 1}/{len(objects)} ({photos[index][0]}): {len(cues)} answers so far")
    width = len(cues[0]) if cues else 0
    return {"cues": np.asarray(cues, np.float32).reshape(-1, width), "label": np.asarray(labels, np.int64),
            "clip": np.asarray(clip_ids, np.int64), "photo": np.asarray(photo_ids, np.int64)}
