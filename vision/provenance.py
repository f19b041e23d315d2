"""What a checkpoint was trained on, in words: the line the demo and ``vision-predict`` print beside an answer, so
that a user can tell a model of real frames from one of synthetic renders.

The words come from what the files record, nothing is guessed from a checkpoint's name:

- the training data: a Lightning checkpoint's ``datamodule_hyper_parameters`` (a model folder's
  ``training.data``), whose ``train_split`` names the split file(s);
- what that split is, from its ``info`` when the file is there: a teacher-labelled split of real frames records
  ``info.teacher`` (``vision-prepare-real-detection``: "real frames, teacher-labelled (yolox-nano)"), a rendered one
  ``info.generator == "vision.synthetic"`` and its render size (``"64-px synthetic renders"``); any other split is
  named by its path;
- the known classes: the training vocabulary stored with a detector (``hyper_parameters.class_names``): "80 COCO
  classes" when they are the 80 COCO names, else their number.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["Provenance", "read_provenance"]

#: The 80 COCO class names (the order of the COCO 2017 category ids), to say "80 COCO classes".
COCO_NAMES = frozenset((
    "person", "bicycle", "car", "motorcycle", "airplane", "bus", "train", "truck", "boat", "traffic light",
    "fire hydrant", "stop sign", "parking meter", "bench", "bird", "cat", "dog", "horse", "sheep", "cow", "elephant",
    "bear", "zebra", "giraffe", "backpack", "umbrella", "handbag", "tie", "suitcase", "frisbee", "skis", "snowboard",
    "sports ball", "kite", "baseball bat", "baseball glove", "skateboard", "surfboard", "tennis racket", "bottle",
    "wine glass", "cup", "fork", "knife", "spoon", "bowl", "banana", "apple", "sandwich", "orange", "broccoli",
    "carrot", "hot dog", "pizza", "donut", "cake", "chair", "couch", "potted plant", "bed", "dining table", "toilet",
    "tv", "laptop", "mouse", "remote", "keyboard", "cell phone", "microwave", "oven", "toaster", "sink",
    "refrigerator", "book", "clock", "vase", "scissors", "teddy bear", "hair drier", "toothbrush"))


@dataclass(frozen=True)
class Provenance:
    """A checkpoint and what it was trained on: ``checkpoint`` (its path), ``data`` (the training data in words,
    e.g. ``"real frames, teacher-labelled (yolox-nano)"``), ``real`` (True for real frames, False for synthetic
    renders, None when the record does not say), ``classes`` (the known classes in words, or None), ``body`` (a
    pretrained body the model is built on, e.g. ``"yolox-nano"``, from its config's ``body``; None for none)."""

    checkpoint: Path
    data: str
    real: bool | None = None
    classes: str | None = None
    body: str | None = None

    @property
    def name(self) -> str:
        """The checkpoint as users name it: its run folder and file (``real_coco/checkpoints/last.ckpt``)."""
        parts = self.checkpoint.parts
        return "/".join(parts[-3:]) if len(parts) >= 3 and parts[-2] == "checkpoints" else self.checkpoint.name

    def __str__(self) -> str:
        body = f"on the pretrained {self.body} body, " if self.body else ""
        return f"{self.name} ({body}trained on {self.data}" + (f", {self.classes}" if self.classes else "") + ")"


def _split_kind(path: Path) -> tuple[str, bool | None]:
    """What the split file ``path`` holds, in words, and whether it is real frames (None: it does not say)."""
    from vision.data.files import read_json
    from vision.errors import VisionError

    if not path.is_file():
        return f"{path} (not found here)", None
    try:
        dataset = read_json(path, what="split")
    except VisionError:  # an unreadable split only loses the description, never the answer
        return str(path), None
    info = dataset.get("info") if isinstance(dataset, Mapping) else None
    if not isinstance(info, Mapping):
        return str(path), None
    teacher = info.get("teacher")
    if isinstance(teacher, Mapping):
        return f"real frames, teacher-labelled ({teacher.get('name', 'a teacher detector')})", True
    if info.get("generator") == "vision.synthetic":
        size = (info.get("arguments") or {}).get("size")
        return (f"{size}-px synthetic renders" if size else "synthetic renders"), False
    return str(path), None


def _classes(names: Any) -> str | None:
    if not isinstance(names, list) or not names:
        return None
    if len(names) == len(COCO_NAMES) and set(names) == COCO_NAMES:
        return f"{len(names)} COCO classes"
    return f"{len(names)} known classes"


def read_provenance(checkpoint: str | Path, root: str | Path | None = None) -> Provenance:
    """The :class:`Provenance` of a checkpoint file or model folder; split paths are relative to ``root`` (default:
    the working directory, where ``tools/train.py`` ran). A file that cannot be read is a :class:`~vision.errors.
    DataError` (:func:`vision.checkpoint.read_model`)."""
    from vision.checkpoint import read_model

    path = Path(checkpoint)
    ckpt = read_model(path)
    hparams = ckpt.get("hyper_parameters") if isinstance(ckpt.get("hyper_parameters"), Mapping) else {}
    data = ckpt.get("datamodule_hyper_parameters")
    if not isinstance(data, Mapping):
        data = ((ckpt.get("training") or {}).get("data") if isinstance(ckpt.get("training"), Mapping) else None)
    classes = _classes(hparams.get("class_names"))
    config = hparams.get("config") if isinstance(hparams.get("config"), Mapping) else {}
    body = config.get("body") if isinstance(config.get("body"), str) and config.get("body") != "vggt" else None
    splits = data.get("train_split") if isinstance(data, Mapping) else None
    splits = [splits] if isinstance(splits, str) else [s for s in splits or [] if isinstance(s, str)]
    if not splits:
        return Provenance(path, "data its checkpoint does not record", None, classes, body)
    kinds = [_split_kind(Path(root or ".") / s) for s in splits]
    words = ", ".join(dict.fromkeys(k for k, _ in kinds))
    real = {r for _, r in kinds}
    return Provenance(path, words, real.pop() if len(real) == 1 else None, classes, body)
