"""Running the real tracker on a user's video: prompts of every kind turned into boxes, masks for the answers, and
the files ``vision-predict --task tracking`` writes.

:class:`RealTrackerPredictor` takes the command line's prompts (:class:`~vision.tracking.prompt_text.
ObjectPromptSpec`: a box ``[x0, y0, x1, y1]``, points with labels, or a text) in the input's pixels, runs
:class:`~vision.tracking.real.model.RealG2TAM` on the frames, and masks each present answer
(:class:`~vision.tracking.real.masks.BoxMasks`). :func:`export_real` writes, into one folder:

- ``results.json``: ``[{video_id: 1, track_id, image_id = frame + 1, bbox [x, y, w, h], segmentation (RLE),
  score (presence probability), present}]`` at the input's size, one per object and frame from its prompt on (an
  absent object's record has an empty mask and ``present`` false);
- ``annotated.mp4``: the frames with every present object's mask in its colour, labelled with its id and the
  model's name;
- ``masks.zip``: ``object_<id>/frame_<nnnnn>.png``, 0/255 at the input's size.
"""

from __future__ import annotations

import io
import zipfile
from collections.abc import Iterator, Sequence
from pathlib import Path

import cv2
import numpy as np

from vision.data.io import atomic_write_bytes, atomic_write_json
from vision.data.masks import encode_mask
from vision.errors import InputError
from vision.tracking.real.masks import BoxMasks
from vision.tracking.real.model import RealG2TAM, check_box
from vision.tracking.real.prompts import box_from_mask, box_from_points, box_from_text

__all__ = ["RealTrackerPredictor", "export_real"]


class RealTrackerPredictor:
    """A :class:`RealG2TAM` with its prompt readers and masks (see the module docstring).

    Args:
        model: the tracker; masks: the mask mode (:data:`vision.tracking.real.masks.MASK_MODES`).
    """

    def __init__(self, model: RealG2TAM, masks: str = "grabcut") -> None:
        self.model = model
        self.masker = BoxMasks(masks)

    @classmethod
    def from_checkpoint(cls, path: str | Path, device: str = "cpu", masks: str = "grabcut",
                        checkpoint: dict | None = None) -> "RealTrackerPredictor":
        from vision.tracking.real.checkpoint import load_real_tracker

        return cls(load_real_tracker(path, device=device, checkpoint=checkpoint), masks)

    @property
    def name(self) -> str:
        return self.model.name

    def boxes(self, frames: np.ndarray, specs: Sequence, scale: tuple[float, float] = (1.0, 1.0),
              masks: dict[int, np.ndarray] | None = None) -> dict[int, tuple[int, np.ndarray]]:
        """``{obj_id: (frame, box (x, y, w, h))}`` in the frames' pixels from prompt specs in the input's pixels
        (``scale``: frame pixels per input pixel, ``(sx, sy)``); ``masks``: the mask prompts, bool ``[H, W]`` at
        the input's size by object (:func:`vision.tracking.prompt_text.prompt_masks`). Each object's prompt is its
        box, else its mask's tight box, else its points, else its text."""
        masks = masks or {}
        if not len(frames):
            raise InputError("the video has no frames")
        if len(specs) > self.model.config.max_objects:
            raise InputError(f"{len(specs)} objects prompted, more than the configured maximum "
                             f"{self.model.config.max_objects}")
        sx, sy = scale
        out = {}
        for spec in specs:
            frame = 0 if spec.frame is None else int(spec.frame)
            if not 0 <= frame < len(frames):
                raise InputError(f"object {spec.obj_id}: prompt frame {frame} is not one of the video's "
                                 f"{len(frames)} frames")
            size = (frames.shape[2], frames.shape[1])
            if spec.box is not None:
                x0, y0, x1, y1 = (float(v) for v in spec.box)
                box = check_box([x0 * sx, y0 * sy, (x1 - x0) * sx, (y1 - y0) * sy], size,
                                f"object {spec.obj_id}'s box")
            elif int(spec.obj_id) in masks:
                x, y, w, h = box_from_mask(masks[int(spec.obj_id)])
                box = check_box([x * sx, y * sy, w * sx, h * sy], size, f"object {spec.obj_id}'s mask")
            elif spec.points:
                points = np.asarray(spec.points, np.float64) * np.array([sx, sy])
                box = box_from_points(frames[frame], points, spec.labels, detector=self.model.perception.detector)
            elif spec.text:
                frame, box = box_from_text(frames, spec.text, detector=self.model.perception.detector)
            else:
                raise InputError(f"object {spec.obj_id} has no box, points or text")
            out[int(spec.obj_id)] = (frame, box)
        return out

    def run(self, frames: np.ndarray, prompts: dict[int, tuple[int, np.ndarray]]
            ) -> Iterator[tuple[int, list[int], np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
        """``(frame, obj_ids, boxes [N, 4], presence [N], present [N] bool, masks bool [N, H, W])`` per frame (the
        objects prompted so far; an absent object's mask is empty)."""
        for t, _, answers in self.model.track(frames, prompts):
            ids = sorted(answers)
            boxes = np.array([answers[o].box for o in ids], np.float64).reshape(-1, 4)
            presence = np.array([answers[o].presence for o in ids], np.float64)
            present = np.array([answers[o].present for o in ids], bool)
            masks = np.zeros((len(ids), *frames.shape[1:3]), bool)
            if present.any():
                masks[present] = self.masker.masks(frames[t], boxes[present])
            yield t, ids, boxes, presence, present, masks


def export_real(predictor: RealTrackerPredictor, frames: np.ndarray, specs: Sequence, out_dir: str | Path,
                input_size: tuple[int, int], fps: float = 10.0, progress=None,
                masks: dict[int, np.ndarray] | None = None) -> dict[int, int]:
    """Track ``frames`` (uint8 ``[T, h, w, 3]``, the input at a working size) from prompt ``specs`` (input
    pixels; ``masks``: their mask prompts, :meth:`RealTrackerPredictor.boxes`) and write the files of the module
    docstring at ``input_size (W, H)``. Returns ``{obj_id: frames where it is present}``."""
    from vision.data.video import write_video
    from vision.tracking.export import overlay_masks

    width, height = input_size
    sx, sy = frames.shape[2] / width, frames.shape[1] / height
    prompts = predictor.boxes(frames, specs, (sx, sy), masks)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    results = []
    counts = {o: 0 for o in prompts}
    archive = io.BytesIO()
    label = predictor.name.split(" ")[0]

    def drawn(zf: zipfile.ZipFile) -> Iterator[np.ndarray]:
        """Track, record each frame's results and masks, and yield the frame drawn (one frame held at a time)."""
        for t, ids, boxes, presence, present, masks in predictor.run(frames, prompts):
            for obj_id, box, p, here, mask in zip(ids, boxes, presence, present, masks):
                full = cv2.resize(mask.astype(np.uint8), (width, height), interpolation=cv2.INTER_NEAREST) > 0
                results.append({"video_id": 1, "track_id": int(obj_id), "image_id": t + 1,
                                "bbox": [float(box[0] / sx), float(box[1] / sy), float(box[2] / sx),
                                         float(box[3] / sy)],
                                "segmentation": encode_mask(full), "score": float(p), "present": bool(here)})
                ok, png = cv2.imencode(".png", full.astype(np.uint8) * 255)
                zf.writestr(f"object_{obj_id}/frame_{t:05d}.png", png.tobytes())
                counts[obj_id] += int(here)
            yield overlay_masks(frames[t], list(masks), ids, labels=[label] * len(ids)) if ids else frames[t]
            if progress is not None:
                progress(t + 1, len(frames))

    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zf:
        write_video(out / "annotated.mp4", drawn(zf), fps=fps, crf=20, preset="veryfast")
    atomic_write_json(out / "results.json", results)
    atomic_write_bytes(out / "masks.zip", archive.getvalue())
    return counts
