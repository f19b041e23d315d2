"""Tracking prompts written as text lines, one prompt per line (used by the demo's prompt box and by
``vision-predict --prompt``)::

    object 1 frame 0 positive 120,80
    object 1 frame 0 negative 140,90
    object 2 frame 3 box 10,20,60,90
    object 3 text the red mug
    object 4 frame 0 mask masks/mug.png

``positive`` / ``negative`` add a point (``point`` is the same as ``positive``; ``+`` and ``-`` are short forms),
``box`` sets the box (x0,y0,x1,y1), ``text`` sets a description, ``mask`` names an image file whose non-zero pixels
are the object (the input's size; read by :func:`read_mask`, on the command line only: ``allow_masks``). Coordinates are pixels of the input frames and
frames count from 0. Lines of one object combine: its points and box must all be on the same frame. ``obj`` may
stand for ``object``; blank lines and lines starting with ``#`` are ignored.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from vision.errors import InputError
from vision.text.user_text import check_text, check_text_field

__all__ = ["ObjectPromptSpec", "read_mask", "prompt_masks", "parse_prompt_lines", "format_prompt_line", "parse_numbers", "parse_points",
           "parse_labels", "flag_prompts"]

_LINE = re.compile(r"^(?:obj|object)\s+(?P<obj>\S+)\s+(?:frame\s+(?P<frame>\S+)\s+)?(?P<kind>positive|negative|point"
                   r"|\+|-|box|text|mask)(?:\s+(?P<rest>.*))?$", re.IGNORECASE)
_KINDS = {"positive": "positive", "point": "positive", "+": "positive", "negative": "negative", "-": "negative",
          "box": "box", "text": "text", "mask": "mask"}


@dataclass
class ObjectPromptSpec:
    """One object's prompt: ``frame`` (None for text only), ``points [[x, y], ...]`` with ``labels`` (1 positive,
    0 negative), ``box [x0, y0, x1, y1]`` or None, ``text`` or None, ``mask`` (the path of a mask image, read by
    :func:`read_mask`) or None. Arguments of ``TrackerPredictor.add_prompt`` come from :meth:`arrays` (the mask
    read separately, at the input's size)."""

    obj_id: int
    frame: int | None = None
    points: list[list[float]] = field(default_factory=list)
    labels: list[int] = field(default_factory=list)
    box: list[float] | None = None
    text: str | None = None
    mask: str | None = None

    def arrays(self) -> dict:
        """Keyword arguments for ``TrackerPredictor.add_prompt`` (``view``, ``points``, ``labels``, ``box``,
        ``text``)."""
        return {"view": self.frame,
                "points": np.asarray(self.points, np.float32) if self.points else None,
                "labels": np.asarray(self.labels, np.int64) if self.points else None,
                "box": np.asarray(self.box, np.float32) if self.box is not None else None,
                "text": self.text}


def _int(text: str | None, what: str, where: str) -> int:
    try:
        value = int(text)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise InputError(f"{where}: {what} must be a whole number, got {text!r}") from None
    if value < 0:
        raise InputError(f"{where}: {what} must be >= 0, got {value}")
    return value


def _numbers(text: str | None, count: int, what: str, where: str) -> list[float]:
    parts = [p for p in re.split(r"[,\s]+", (text or "").strip()) if p]
    try:
        values = [float(p) for p in parts]
    except ValueError:
        raise InputError(f"{where}: {what} must be {count} comma-separated numbers, got {text!r}") from None
    if len(values) != count or not all(np.isfinite(values)):
        raise InputError(f"{where}: {what} must be {count} comma-separated numbers, got {text!r}")
    return values


def read_mask(path: str | Path, size: tuple[int, int], what: str = "mask prompt") -> np.ndarray:
    """bool ``[H, W]``: the non-zero pixels of the image file ``path`` (any channel), which must be ``size``
    ``(W, H)``, the input's size, and hold at least one such pixel.

    Raises:
        InputError: naming ``what`` and the file: unreadable, oversized (:func:`vision.data.io.read_image`), of
            another size, or empty.
    """
    from vision.data.io import read_image
    from vision.errors import VisionError

    path = Path(path)
    if not path.is_file():
        raise InputError(f"{what}: {path} is not a file")
    try:
        image = read_image(path)
    except VisionError as exc:
        raise InputError(f"{what}: {exc}") from None
    if image.shape[1::-1] != tuple(size):
        raise InputError(f"{what}: {path} is {image.shape[1]}x{image.shape[0]}, the input {size[0]}x{size[1]}: a mask "
                         "has the input's size")
    mask = image.any(axis=-1)
    if not mask.any():
        raise InputError(f"{what}: {path} has no non-zero pixel (an empty mask)")
    return mask


def prompt_masks(specs: list[ObjectPromptSpec], size: tuple[int, int]) -> dict[int, np.ndarray]:
    """``{obj_id: bool [H, W]}``: the mask of every spec with one, read (:func:`read_mask`) at the input's
    ``size`` ``(W, H)``."""
    return {spec.obj_id: read_mask(spec.mask, size, f"object {spec.obj_id}'s mask prompt")
            for spec in specs if spec.mask is not None}


def parse_prompt_lines(text: str, allow_masks: bool = False) -> list[ObjectPromptSpec]:
    """Parse prompt lines (see the module docstring) into one :class:`ObjectPromptSpec` per object, by id.
    ``allow_masks``: ``mask`` lines name files, so only a reader on the user's own machine (the command line)
    takes them; elsewhere (the demo) they are refused.

    Raises:
        InputError: naming the line number and what is wrong (unknown form, bad number, a second box, mask or
            text for one object, points of one object on two frames, a point, box or mask without a frame, a mask
            line where masks are not taken, no prompt).
    """
    objects: dict[int, ObjectPromptSpec] = {}
    check_text_field(text, "the prompt lines")
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        where = f"prompt line {number} ({line!r})"
        match = _LINE.match(line)
        if match is None:
            raise InputError(f"{where}: expected 'object ID [frame N] positive|negative X,Y', "
                             f"'object ID frame N box X0,Y0,X1,Y1' or 'object ID text WORDS'")
        obj_id = _int(match["obj"], "the object id", where)
        kind = _KINDS[match["kind"].lower()]
        spec = objects.setdefault(obj_id, ObjectPromptSpec(obj_id))
        if kind == "text":
            words = (match["rest"] or "").strip()
            if not words:
                raise InputError(f"{where}: a text prompt needs words after 'text'")
            check_text(words, f"{where}: the text prompt")
            if spec.text is not None:
                raise InputError(f"{where}: object {obj_id} already has a text prompt")
            spec.text = words
            continue
        if match["frame"] is None:
            raise InputError(f"{where}: a {kind} prompt needs 'frame N' before it")
        frame = _int(match["frame"], "the frame", where)
        if spec.frame is not None and spec.frame != frame:
            raise InputError(f"{where}: object {obj_id} is already prompted on frame {spec.frame}; "
                             f"all its points and its box must be on one frame")
        spec.frame = frame
        if kind == "mask":
            if not allow_masks:
                raise InputError(f"{where}: mask prompts are image files given on the command line (vision-predict "
                                 "--mask or --prompt), not here")
            if spec.mask is not None:
                raise InputError(f"{where}: object {obj_id} already has a mask")
            spec.mask = (match["rest"] or "").strip()
            if not spec.mask:
                raise InputError(f"{where}: a mask prompt needs the mask image's path after 'mask'")
            continue
        if kind == "box":
            if spec.box is not None:
                raise InputError(f"{where}: object {obj_id} already has a box")
            x0, y0, x1, y1 = _numbers(match["rest"], 4, "a box", where)
            if x1 <= x0 or y1 <= y0:
                raise InputError(f"{where}: a box needs x0 < x1 and y0 < y1")
            spec.box = [x0, y0, x1, y1]
        else:
            spec.points.append(_numbers(match["rest"], 2, "a point", where))
            spec.labels.append(1 if kind == "positive" else 0)
    if not objects:
        raise InputError("no prompt given: add at least one line such as 'object 1 frame 0 positive 120,80'")
    return [objects[k] for k in sorted(objects)]


def format_prompt_line(obj_id: int, kind: str, frame: int | None = None,
                       values: list[float] | None = None, text: str | None = None) -> str:
    """The line for one prompt (``kind``: positive, negative, box or text); numbers are rounded to pixels."""
    if kind == "text":
        return f"object {int(obj_id)} text {text}"
    coords = ",".join(str(int(round(v))) for v in values or [])
    return f"object {int(obj_id)} frame {int(frame)} {kind} {coords}"  # type: ignore[arg-type]


# ---------------------------------------------------------------- the single-object flags of vision-predict

def parse_numbers(text: str, what: str) -> list[float]:
    """``"1,2.5,3"`` -> ``[1.0, 2.5, 3.0]``; :class:`InputError` naming ``what`` otherwise."""
    try:
        return [float(v) for v in text.split(",")]
    except ValueError:
        raise InputError(f"{what} must be comma-separated numbers, got {text!r}") from None


def parse_points(text: str) -> np.ndarray:
    """``"x,y;x,y"`` -> float [N, 2]."""
    points = [parse_numbers(p, "--points") for p in text.split(";") if p.strip()]
    if not points or any(len(p) != 2 for p in points):
        raise InputError(f"--points must look like 'x,y;x,y', got {text!r}")
    return np.asarray(points, np.float32)


def parse_labels(text: str) -> list[int]:
    """``--labels``: each value exactly 1 (positive click) or 0 (negative); anything else (``0.5``, ``2``) is
    refused rather than rounded to a click of the other kind."""
    values = parse_numbers(text, "--labels")
    if any(v not in (0.0, 1.0) for v in values):
        raise InputError(f"--labels must be 1 (positive) or 0 (negative) for each point, got {text!r}")
    return [int(v) for v in values]


def flag_prompts(view: int = 0, points: str | None = None, labels: str | None = None, box: str | None = None,
                 texts: list[str] | None = None, lines: list[str] | None = None,
                 mask: str | None = None) -> list[ObjectPromptSpec]:
    """The prompts of ``--prompt`` ``lines``, or of ``--points/--labels/--box/--mask/--text`` as object 1 (on
    frame ``view``, with the first text; each further text is one more object, 2, 3, ...): the one reading of
    ``vision-predict``'s tracking prompts, for files and streams alike."""
    single = any(v is not None for v in (points, box, texts, mask))
    if lines and single:
        raise InputError("give either --prompt lines or --points/--labels/--box/--mask/--text, not both")
    if lines:
        return parse_prompt_lines("\n".join(lines), allow_masks=True)
    if not single:
        raise InputError("--task tracking needs a prompt: --points (with --labels), --box, --mask, --text, or "
                         "--prompt lines")
    texts = [check_text(text, "--text") for text in texts or []]
    spec = ObjectPromptSpec(1, frame=view if points or box or mask else None, text=texts[0] if texts else None,
                            mask=mask)
    if points:
        spec.points = parse_points(points).tolist()
        spec.labels = parse_labels(labels) if labels else [1] * len(spec.points)
    elif labels:
        raise InputError("--labels needs --points")
    if box:
        spec.box = parse_numbers(box, "--box")
    return [spec] + [ObjectPromptSpec(k, text=text) for k, text in enumerate(texts[1:], 2)]
