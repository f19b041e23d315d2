"""DetectorPredictor: run a trained OOV detector on images, frame stacks or video files.

``DetectorPredictor.from_checkpoint(path, vocabulary=[...])`` loads a Lightning checkpoint of
:class:`~vision.detection.lightning.OOVDetModule` (``torch.load(weights_only=True)``) or a model folder; the
vocabulary (a list of names, or a text such as ``"mug, chair; lamp"``: :mod:`vision.text.vocabulary`) may differ
from the training one (zero-shot): its prompts are encoded once and cached. ``predict(x)`` accepts

- one image: ``uint8 [H, W, 3]`` RGB array, or float tensor ``[3, H, W]`` in [0, 1];
- frames: ``uint8 [T, H, W, 3]`` array, float tensor ``[T, 3, H, W]``, or a list of images of one size;
- a video path (``str`` / ``Path``), decoded with :func:`vision.data.video.iter_frames`;
- a list of image paths, read one by one with :func:`vision.data.io.read_image`.

Every frame is resized to the model's square input size; boxes come back in the input's pixel coordinates (XYXY).
Files (a video, image paths) are read under the input limits of :mod:`vision.data.io`: frames over ``max_pixels``
are refused before decoding, and frames over :data:`~vision.data.io.MAX_WORKING_PIXELS` are downscaled as they are
read, so memory does not grow with the input's size; their boxes are scaled back to the input's pixels, and the
annotated video is drawn on the downscaled frames. Frames are run and drawn batch by batch: memory does not grow
with the number of frames either (except for the results).
Per frame it returns ``{"boxes" float32 [n, 4], "scores" [n], "label_ids" int64 [n] (index into the vocabulary,
-1 = unknown), "labels" list[str] (``"unknown"`` for OOV), "category_ids" int64 [n]}``. ``results_path`` writes
COCO results (XYWH, the unknown category id for OOV) whose records also carry ``category_name`` (the vocabulary's
name, ``"unknown"`` for OOV): a vocabulary's ids are its positions 1..K unless given, and ``vision-evaluate`` scores
each result under the split's id of its name. ``video_path`` writes an annotated H.264 mp4.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Sequence

import cv2
import numpy as np
import torch

from vision.data.io import MAX_INPUT_PIXELS, MAX_WORKING_PIXELS, atomic_write_json, fit_within, image_size, read_image
from vision.data.resize import resize_image
from vision.detection.model import UNKNOWN_LABEL, OOVDetector
from vision.detection.results import UNKNOWN_CATEGORY_ID, UNKNOWN_NAME, coco_results, label_detections
from vision.detection.task import load
from vision.detection.vocabulary import DEFAULT_TEMPLATE, encode_vocabulary, known_competitors
from vision.device import autocast, load_for_inference, placement
from vision.errors import InputError
from vision.text.vocabulary import check_vocabulary, parse_vocabulary

__all__ = ["Predictor", "DetectorPredictor"]

_COLOURS = [(230, 25, 75), (60, 180, 75), (255, 225, 25), (0, 130, 200), (245, 130, 48), (145, 30, 180),
            (70, 240, 240), (240, 50, 230), (210, 245, 60), (250, 190, 212), (0, 128, 128), (170, 110, 40)]


def _frame_array(frame: Any, index: int) -> np.ndarray:
    """One frame -> uint8 [H, W, 3] RGB; InputError naming the index and shape otherwise."""
    if isinstance(frame, torch.Tensor):
        if frame.ndim != 3 or frame.shape[0] != 3:
            raise InputError(f"frame {index}: a tensor image must be [3, H, W], got shape {tuple(frame.shape)}")
        if not frame.is_floating_point():
            raise InputError(f"frame {index}: a tensor image must be float in [0, 1], got dtype {frame.dtype}")
        lo, hi = float(frame.min()), float(frame.max())
        if lo < -1e-3 or hi > 1 + 1e-3:
            raise InputError(f"frame {index}: tensor values must be in [0, 1], got min={lo:.4g} max={hi:.4g}")
        return (frame.detach().cpu().clamp(0, 1).permute(1, 2, 0).numpy() * 255.0 + 0.5).astype(np.uint8)
    array = np.asarray(frame)
    if array.ndim != 3 or array.shape[-1] != 3:
        raise InputError(f"frame {index}: an image must be uint8 [H, W, 3] RGB, got shape {tuple(array.shape)}")
    if array.dtype != np.uint8:
        raise InputError(f"frame {index}: an image array must be uint8, got dtype {array.dtype}")
    if array.shape[0] < 1 or array.shape[1] < 1:
        raise InputError(f"frame {index}: empty image of shape {tuple(array.shape)}")
    return array


#: A frame and the factors ``(x, y)`` from its pixels to the input's (1 unless it was downscaled as it was read).
Scaled = tuple[np.ndarray, tuple[float, float]]


def _video_frames(path: str | Path, stride: int, max_frames: int | None, max_pixels: int | None) -> Iterator[Scaled]:
    from vision.data.video import iter_frames, probe_video

    info = probe_video(path)
    work = fit_within(info.width, info.height, MAX_WORKING_PIXELS)
    scale = (info.width / work[0], info.height / work[1])
    for frame in iter_frames(path, stride=stride, max_frames=max_frames, size=work, max_pixels=max_pixels):
        yield frame, scale


def _image_files(paths: Sequence[str | Path], max_pixels: int | None) -> Iterator[Scaled]:
    for path in paths:
        width, height = image_size(path)
        work = fit_within(width, height, MAX_WORKING_PIXELS)
        yield read_image(path, size=work, max_pixels=max_pixels), (width / work[0], height / work[1])


def _as_frames(inputs: Any, stride: int = 1, max_frames: int | None = None,
               max_pixels: int | None = MAX_INPUT_PIXELS) -> tuple[Iterable[Scaled], bool]:
    """Normalise ``inputs``; returns (frames with their scale to the input's pixels, is_single_image). Files are
    read lazily at most :data:`MAX_WORKING_PIXELS`; ``stride`` / ``max_frames`` apply to video files."""
    if isinstance(inputs, (str, Path)):
        return _video_frames(inputs, stride, max_frames, max_pixels), False
    if isinstance(inputs, (list, tuple)) and inputs and all(isinstance(f, (str, Path)) for f in inputs):
        return _image_files(inputs, max_pixels), False
    if isinstance(inputs, (torch.Tensor, np.ndarray)):
        if inputs.ndim == 3:
            return [(_frame_array(inputs, 0), (1.0, 1.0))], True
        if inputs.ndim == 4 and len(inputs):
            return [(_frame_array(f, i), (1.0, 1.0)) for i, f in enumerate(inputs)], False
        kind, shapes = (("tensor", "[3, H, W] or [T, 3, H, W]") if isinstance(inputs, torch.Tensor) else
                        ("array", "[H, W, 3] or [T, H, W, 3]"))
        raise InputError(f"images {kind} must be {shapes} with T >= 1, got shape {tuple(inputs.shape)}")
    if isinstance(inputs, (list, tuple)):
        if not inputs:
            raise InputError("no frames given (empty list)")
        return [(_frame_array(f, i), (1.0, 1.0)) for i, f in enumerate(inputs)], False
    raise InputError(f"predict takes an image, frames, a video path or image paths; got {type(inputs).__name__}")


def _in_input_pixels(result: dict[str, Any], scale: tuple[float, float]) -> dict[str, Any]:
    """``result`` with its boxes multiplied by ``scale`` (x, y): from a downscaled frame's pixels to the input's."""
    if scale == (1.0, 1.0):
        return result
    factors = np.array([scale[0], scale[1], scale[0], scale[1]], np.float32)
    return {**result, "boxes": (result["boxes"] * factors).astype(np.float32)}


def _batches(items: Iterable[Scaled], size: int) -> Iterator[list[Scaled]]:
    batch: list[Scaled] = []
    for item in items:
        batch.append(item)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


class DetectorPredictor:
    """Inference wrapper around :class:`OOVDetector` with a (changeable) vocabulary.

    Args:
        model: the detector (put in eval mode). vocabulary: class names, a list or a text (:meth:`set_vocabulary`).
            category_ids: COCO id per name (default 1..K). image_size: square model input size.
            unknown_category_id: COCO id of OOV results.
        prompt_template: text prompt per name. encoder: text encoder (default the shared MiniLM).
        batch_size: frames per forward pass.
        device: where the model runs (``"auto"``, ``"cpu"``, ``"cuda[:N]"``, ``"mps"``, a ``torch.device``; the model
            is moved there; default: where it is). precision: ``"32"``, ``"bf16"``, ``"16"`` or a ``torch.dtype``,
            the compute dtype of :func:`vision.device.autocast` (weights stay float32; results are float32).
        competitor_similarity: the config's :attr:`~vision.detection.task.DetectionConfig.competitor_similarity`
            (the body's known names no vocabulary name explains compete for the OOV column); None: none.
    """

    def __init__(self, model: OOVDetector, vocabulary: str | Sequence[str], image_size: int,
                 category_ids: Sequence[int] | None = None, unknown_category_id: int = UNKNOWN_CATEGORY_ID,
                 prompt_template: str = DEFAULT_TEMPLATE, encoder: Any = None, batch_size: int = 16,
                 device: str | torch.device | None = None, precision: str | torch.dtype = "32",
                 competitor_similarity: float | None = None) -> None:
        self.device, self.dtype = placement(device, precision, model)
        self.model = model.to(self.device).eval()
        self.image_size = int(image_size)
        if self.image_size % model.patch_size:
            raise InputError(f"image_size {image_size} is not a multiple of the patch size {model.patch_size}")
        self.unknown_category_id = int(unknown_category_id)
        self.prompt_template = prompt_template
        self.encoder = encoder
        self.batch_size = int(batch_size)
        self.competitor_similarity = None if competitor_similarity is None else float(competitor_similarity)
        self.exemplars: Any = None  # an ExemplarMatcher once add_exemplar is called
        self.set_vocabulary(vocabulary, category_ids)

    @classmethod
    def from_checkpoint(cls, path: str | Path, vocabulary: str | Sequence[str] | None = None,
                        category_ids: Sequence[int] | None = None, device: str | torch.device = "cpu",
                        precision: str | torch.dtype = "32", **kwargs: Any) -> "DetectorPredictor":
        """Load an :class:`OOVDetModule` checkpoint or a detection model folder onto ``device`` (``"auto"`` and the
        other names of :func:`vision.device.resolve_device`) through :func:`vision.detection.task.load` (with the
        training vocabulary; :func:`vision.device.load_for_inference`), run in ``precision``; ``vocabulary`` (a
        list of names or a text, as :meth:`set_vocabulary`) defaults to the training vocabulary (with its category
        ids). ``kwargs`` go to the constructor (e.g. ``unknown_category_id``, ``encoder``); the prompt template is
        the checkpoint's config's unless given."""
        (model, config, trained), device, dtype = load_for_inference(load, path, device, precision,
                                                                    with_vocabulary=True)
        if vocabulary is None:
            if trained is None:
                raise InputError(f"{path}: the checkpoint stores no training vocabulary; pass vocabulary=[...]")
            vocabulary = trained.class_names
            category_ids = trained.category_ids if category_ids is None else category_ids
        kwargs.setdefault("prompt_template", config.prompt_template)
        kwargs.setdefault("competitor_similarity", config.competitor_similarity)
        return cls(model, vocabulary, config.image_size, category_ids=category_ids, device=device,
                   precision=dtype, **kwargs)

    def set_vocabulary(self, vocabulary: str | Sequence[str], category_ids: Sequence[int] | None = None) -> None:
        """Change the vocabulary: a list of names (:func:`~vision.text.vocabulary.check_vocabulary`: non-empty,
        distinct non-empty strings) or a text of names (:func:`~vision.text.vocabulary.parse_vocabulary`:
        ``"mug, chair; lamp"``); embeddings are cached."""
        names = parse_vocabulary(vocabulary) if isinstance(vocabulary, str) else check_vocabulary(
            list(vocabulary) if isinstance(vocabulary, tuple) else vocabulary)
        ids = list(range(1, len(names) + 1)) if category_ids is None else [int(c) for c in category_ids]
        if len(ids) != len(names) or len(set(ids)) != len(ids):
            raise InputError(f"category_ids {ids} must be {len(names)} distinct ids, one per vocabulary name")
        if self.unknown_category_id in ids:
            raise InputError(f"category id {self.unknown_category_id} is reserved for unknown objects")
        self.vocabulary = names
        self.category_ids = ids
        text = encode_vocabulary(names, self.prompt_template, self.encoder)
        width = self.model.classifier.oov_prompts.shape[-1]
        if text.shape[-1] != width:  # a config whose embed_dim is not the text encoder's width
            raise InputError(f"the text encoder gives {text.shape[-1]}-d embeddings but this detector's embed_dim "
                             f"is {width}: its checkpoint was trained with another text encoder")
        self.text = text.to(self.device)
        if self.exemplars is not None:
            self.exemplars.clear()  # exemplars belong to the names of one vocabulary
        self.competitors = known_competitors(self.model.known_names, self.text, self.competitor_similarity,
                                             self.prompt_template, self.encoder)

    def add_exemplar(self, name: str, frame: np.ndarray, box: Sequence[float], positive: bool = True) -> None:
        """An exemplar box (XYXY pixels of ``frame``, uint8 ``[H, W, 3]`` RGB; any frame of any video) for the
        vocabulary name ``name``: later frames also report the objects that look like it under that name (or, with
        ``positive=False``, stop reporting those that look like it; :mod:`vision.detection.visual_exemplars`).
        Needs a detector on a pretrained body (``body: yolox-nano``, whose class-agnostic objectness proposes the
        boxes) and the registered ``mobilenetv2-imagenet`` weights; changing the vocabulary forgets the exemplars."""
        if name not in self.vocabulary:
            raise InputError(f"exemplar name {name!r} is not in the vocabulary {self.vocabulary}")
        if not self.model.keeps_aspect:
            raise InputError("exemplar boxes on real frames need a detector on a pretrained body (body: yolox-nano); "
                             "this detector's body has no class-agnostic proposals")
        if self.exemplars is None:
            from vision.detection.visual_exemplars import CropEmbedder, ExemplarMatcher

            self.exemplars = ExemplarMatcher(CropEmbedder.from_registry(device=self.device))
        self.exemplars.add(name, frame, box, positive)

    def model_input(self, frames: Sequence[np.ndarray]) -> torch.Tensor:
        """The model's input batch ``[B, 3, s, s]`` float in [0, 1] on its device: each uint8 ``[H, W, 3]`` RGB frame
        resized to the square input size (:func:`vision.data.resize.resize_image`; a frame of that size as is), or,
        for a body that keeps the aspect ratio (``model.keeps_aspect``), letterboxed into it
        (:func:`vision.weights.nets.onnx_models.letterbox`)."""
        size = self.image_size
        if self.model.keeps_aspect:
            from vision.weights.nets.onnx_models import letterbox

            batch = np.stack([letterbox(f, size, size)[0] for f in frames])
        else:
            batch = np.stack([resize_image(f, (size, size)) if f.shape[:2] != (size, size) else f for f in frames])
        return torch.from_numpy(batch).to(self.device).permute(0, 3, 1, 2).float().div_(255.0)

    def input_geometry(self, frame: np.ndarray) -> tuple[tuple[int, int], tuple[float, float]]:
        """Where ``frame`` lies in the model's input (:meth:`model_input`): its ``(H, W)`` there (boxes are clipped
        to it) and the ``(x, y)`` scale from input pixels back to the frame's."""
        size = self.image_size
        height, width = frame.shape[:2]
        if not self.model.keeps_aspect:
            return (size, size), (width / size, height / size)
        ratio = min(size / height, size / width)
        return (int(height * ratio), int(width * ratio)), (1.0 / ratio, 1.0 / ratio)

    @torch.no_grad()
    def outputs(self, frames: Sequence[np.ndarray]) -> dict[str, torch.Tensor]:
        """The detector's raw outputs on ``frames`` (:meth:`model_input`; in the predictor's precision): what
        :meth:`OOVDetector.postprocess` takes, and the concept proposals of
        :class:`vision.concept.detector_only.DetectorConceptPredictor`. Boxes in model pixels."""
        with autocast(self.device, self.dtype):
            return self.model(self.model_input(frames))

    @torch.no_grad()
    def _run(self, frames: list[np.ndarray]) -> list[dict[str, Any]]:
        outputs = self.outputs(frames)
        geometry = [self.input_geometry(frame) for frame in frames]
        with autocast(self.device, self.dtype):
            dets = self.model.postprocess(outputs, self.text, [clip for clip, _ in geometry], self.competitors)
        dets = [{k: v.float() if v.is_floating_point() else v for k, v in det.items()} for det in dets]
        results = [label_detections(det, self.vocabulary, self.category_ids, self.unknown_category_id, scale)
                   for (_, scale), det in zip(geometry, dets)]
        if self.exemplars is None or not self.exemplars.names:
            return results
        from vision.detection.visual_exemplars import merge_matches

        return [merge_matches(result, self.exemplars.find(frame, outputs["boxes"][n], outputs["agnostic_objectness"][n],
                                                          clip, scale),
                              self.vocabulary, self.category_ids, self.unknown_category_id)
                for n, (frame, (clip, scale), result) in enumerate(zip(frames, geometry, results))]

    def _detections(self, frames: Iterable[Scaled],
                    progress: Callable[[int], None] | None) -> Iterator[tuple[np.ndarray, dict[str, Any], tuple]]:
        """Run the model batch by batch: ``(frame, result in the frame's pixels, scale to the input's)``."""
        done = 0
        for batch in _batches(frames, self.batch_size):
            images = [_frame_array(frame, done + i) for i, (frame, _) in enumerate(batch)]
            for image, (_, scale), result in zip(images, batch, self._run(images)):
                yield image, result, scale
            done += len(batch)
            if progress is not None:
                progress(done)

    def predict(self, inputs: Any, image_ids: Sequence[int] | None = None, results_path: str | Path | None = None,
                video_path: str | Path | None = None, fps: float = 10.0, stride: int = 1,
                max_frames: int | None = None, progress: Callable[[int], None] | None = None,
                max_pixels: int | None = MAX_INPUT_PIXELS) -> dict[str, Any] | list[dict[str, Any]]:
        """Detect objects (see the module docstring). A single image returns one dict, frames / videos a list.

        Args:
            inputs: an image, frames, a video path or image paths. image_ids: COCO image id per frame (default 1..T).
            results_path: write COCO detection results here. video_path: write an annotated H.264 mp4 here (frames
                read from files are drawn at most :data:`MAX_WORKING_PIXELS`; arrays at their size).
            fps: frame rate of the annotated video (a video input keeps its own rate / stride when known).
            stride, max_frames: frame sampling of a video file input.
            progress: called with the number of frames done after each batch (for progress bars).
            max_pixels: files with larger frames are refused before decoding (None: no limit).
        """
        frames, single = _as_frames(inputs, stride, max_frames, max_pixels)
        if isinstance(inputs, (str, Path)):
            from vision.data.video import probe_video

            fps = float(probe_video(inputs).fps or fps) / stride
        results: list[dict[str, Any]] = []
        if video_path is None:
            results = [_in_input_pixels(r, scale) for _, r, scale in self._detections(frames, progress)]
        else:
            from vision.data.video import write_video

            def drawn() -> Iterator[np.ndarray]:  # the encoder pulls frames: one batch is held at a time
                for frame, result, scale in self._detections(frames, progress):
                    results.append(_in_input_pixels(result, scale))
                    yield self.draw(frame, result)

            write_video(video_path, drawn(), fps=fps, crf=23, preset="veryfast")
        if not results:
            raise InputError("no frame to run on")
        if image_ids is not None and len(image_ids) != len(results):
            raise InputError(f"image_ids has {len(image_ids)} entries for {len(results)} frames")
        ids = list(image_ids) if image_ids is not None else list(range(1, len(results) + 1))
        if results_path is not None:
            atomic_write_json(results_path, self.to_coco(results, ids))
        return results[0] if single else results

    def predict_split(self, split_path: str | Path, results_path: str | Path | None = None) -> list[dict[str, Any]]:
        """Run on every image of a COCO split (sorted by image id) and return (and optionally write) COCO results."""
        from vision.data.coco import load_split

        split = load_split(split_path)
        ids = sorted(split.images)
        results: list[dict[str, Any]] = []
        for start in range(0, len(ids), self.batch_size):
            chunk = ids[start:start + self.batch_size]
            frames = [_frame_array(split.load_image(split.images[i]), n) for n, i in enumerate(chunk)]
            results += self.to_coco(self._run(frames), chunk)
        if results_path is not None:
            atomic_write_json(results_path, results)
        return results

    def to_coco(self, results: list[dict[str, Any]], image_ids: Sequence[int]) -> list[dict[str, Any]]:
        """COCO results of per-frame results, each naming its category (:func:`coco_results` with ``names``)."""
        return coco_results(results, image_ids, names=True)

    def draw(self, frame: np.ndarray, result: dict[str, Any], min_score: float = 0.3) -> np.ndarray:
        """``frame`` uint8 [H, W, 3] RGB with the detections drawn; detections under ``min_score`` are left out.

        Two styles: a vocabulary class gets a solid box in its colour and its name on a filled tag of that colour;
        an object rejected as unknown (out of vocabulary) gets a dashed white box and a plain ``unknown`` label."""
        canvas = np.ascontiguousarray(frame.copy())
        for box, score, label, lid in zip(result["boxes"], result["scores"], result["labels"], result["label_ids"]):
            if score < min_score:
                continue
            x0, y0, x1, y1 = (int(round(float(v))) for v in box)
            text = f"{label} {score:.2f}"
            if lid == UNKNOWN_LABEL:
                _dashed_rectangle(canvas, (x0, y0), (x1, y1), (255, 255, 255))
                cv2.putText(canvas, text, (x0, max(8, y0 - 2)), cv2.FONT_HERSHEY_SIMPLEX, 0.3, (255, 255, 255), 1,
                            cv2.LINE_AA)
                continue
            colour = _COLOURS[int(lid) % len(_COLOURS)]
            cv2.rectangle(canvas, (x0, y0), (x1, y1), colour, 1)
            (tw, th), _ = cv2.getTextSize(text, cv2.FONT_HERSHEY_SIMPLEX, 0.3, 1)
            ty = max(th + 2, y0)
            cv2.rectangle(canvas, (x0, ty - th - 2), (x0 + tw + 2, ty), colour, -1)
            cv2.putText(canvas, text, (x0 + 1, ty - 1), cv2.FONT_HERSHEY_SIMPLEX, 0.3, (0, 0, 0), 1, cv2.LINE_AA)
        return canvas


def _dashed_rectangle(canvas: np.ndarray, p0: tuple[int, int], p1: tuple[int, int], colour: tuple[int, int, int],
                      dash: int = 4) -> None:
    """Draw the outline of the box ``p0``-``p1`` as dashes of ``dash`` pixels (in place)."""
    (x0, y0), (x1, y1) = p0, p1
    for a, b in (((x0, y0), (x1, y0)), ((x1, y0), (x1, y1)), ((x1, y1), (x0, y1)), ((x0, y1), (x0, y0))):
        length = max(abs(b[0] - a[0]), abs(b[1] - a[1]))
        for start in range(0, length + 1, 2 * dash):
            end = min(start + dash, length)
            f0, f1 = start / max(length, 1), end / max(length, 1)
            cv2.line(canvas, (round(a[0] + (b[0] - a[0]) * f0), round(a[1] + (b[1] - a[1]) * f0)),
                     (round(a[0] + (b[0] - a[0]) * f1), round(a[1] + (b[1] - a[1]) * f1)), colour, 1)

#: the task's predictor (the registry's fixed name, vision.tasks.PARTS)
Predictor = DetectorPredictor
