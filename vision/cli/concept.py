"""``vision-predict --concept`` / ``--exemplar``: every instance of noun phrases and/or exemplar boxes, found,
segmented and tracked with persistent ids (the concept tracker, :class:`vision.concept.predictor.ConceptPredictor`).

  vision-predict --task tracking --ckpt CONCEPT_CKPT INPUT --concept "mug" [--concept "chair"]
                 [--exemplar VIEW,x0,y0,x1,y1[,neg]] [--out DIR]
  vision-predict --task concept ...                  (the same)
      -> DIR/results.json (instance and presence records, :mod:`vision.concept.records`)
         + DIR/annotated.mp4 for a video, DIR/annotated/<image name>.png for images (each instance's mask in the
           colour of its id, labelled with its id and phrase)
         + DIR/instance_<id>.ply (each instance's 3D points) + DIR/scene.ply / scene.glb (the reconstruction with
           the instances coloured)

Prompts: each ``--concept`` is one phrase with its own set of ids; an ``--exemplar`` box (view, XYXY pixels of the
input; ``neg`` at the end: "not this") belongs to the ``--concept`` given before it on the command line; exemplars
given before any ``--concept`` form one concept of their own, found by its boxes alone (it needs a positive one).
A folder of images is a view set (any order); a video's frames are its views. The checkpoint must be a concept
checkpoint or model folder.

Bad prompts (an empty phrase, a malformed exemplar, a view the input lacks, a box off the image, more concepts than
the checkpoint takes) are one ``error:`` line and exit status 2, checked before any model runs.

:func:`export_concepts` (used by this runner and by the demo's Track tab) runs a prompted state and writes the files.
"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator, Sequence

import numpy as np

from vision.errors import DataError, InputError

if TYPE_CHECKING:
    from vision.cli.inputs import Input
    from vision.concept.predictor import ConceptPredictor, ConceptState

__all__ = ["ConceptPrompt", "ConceptExport", "add_concept_arguments", "check_concept_arguments", "concept_prompts",
           "parse_exemplar", "check_exemplars", "check_concept_count", "load_concept_predictor", "label_instances",
           "export_concepts", "run_concept", "CONCEPT_HINT"]

#: what to give when a checkpoint is not a concept one
CONCEPT_HINT = ("a concept checkpoint or model folder (vision-train --config configs/concept/tiny.yaml writes "
                "runs/concept/tiny/checkpoints/last.ckpt)")

#: the flags of the point / box / text prompts, which --concept / --exemplar replace
_OBJECT_FLAGS = ("points", "labels", "box", "text", "prompt")


@dataclass
class ConceptPrompt:
    """One concept of the command line: a ``phrase`` (None: exemplars only) and its ``exemplars``
    ``(view, [x0, y0, x1, y1] input pixels, positive)``, as :meth:`ConceptPredictor.add_concept` takes them."""

    phrase: str | None
    exemplars: list[tuple[int, list[float], bool]] = field(default_factory=list)


class _InOrder(argparse.Action):
    """Appends ``(kind, value)`` to one list for both --concept and --exemplar, keeping their command-line order
    (an exemplar belongs to the phrase given before it)."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        items = list(getattr(namespace, self.dest, None) or [])
        items.append((self.const, values))
        setattr(namespace, self.dest, items)


def add_concept_arguments(parser: argparse.ArgumentParser) -> None:
    """``--concept`` and ``--exemplar`` (stored in order as ``args.concept_prompts``)."""
    parser.add_argument("--concept", dest="concept_prompts", action=_InOrder, const="phrase", metavar="PHRASE",
                        help="tracking / concept: find and track every instance of this noun phrase (each its own "
                             "ids); repeat it for more phrases (one pass). Needs a concept checkpoint")
    parser.add_argument("--exemplar", dest="concept_prompts", action=_InOrder, const="exemplar",
                        metavar="VIEW,x0,y0,x1,y1",  # no brackets: argparse's usage wrapping asserts on them
                        help="tracking / concept: an exemplar box (input pixels) of the --concept before it; "
                             "VIEW,x0,y0,x1,y1,neg for a negative one (not this); "
                             "before any --concept, exemplars form a concept of their own; repeatable")


def parse_exemplar(text: str, name: str = "--exemplar") -> tuple[int, list[float], bool]:
    """``"VIEW,x0,y0,x1,y1[,neg|pos]"`` -> ``(view, [x0, y0, x1, y1], positive)``: view a whole number >= 0, the
    box four finite numbers with x0 < x1 and y0 < y1 (pixels of the input). :class:`InputError` naming the
    exemplar (``name`` and the text) otherwise."""
    fields = [f.strip() for f in str(text).split(",")]
    what = f"{name} {text!r}"
    if len(fields) not in (5, 6):
        raise InputError(f"{what} must be VIEW,x0,y0,x1,y1 or VIEW,x0,y0,x1,y1,neg ({len(fields)} values given)")
    positive = True
    if len(fields) == 6:
        if fields[5].lower() not in ("neg", "pos"):
            raise InputError(f"{what}: the sixth value must be 'neg' (not this) or 'pos', got {fields[5]!r}")
        positive = fields[5].lower() == "pos"
    try:
        view = int(fields[0])
    except ValueError:
        raise InputError(f"{what}: VIEW must be a whole number >= 0, got {fields[0]!r}") from None
    if view < 0:
        raise InputError(f"{what}: VIEW must be a whole number >= 0, got {view}")
    try:
        box = [float(v) for v in fields[1:5]]
    except ValueError:
        raise InputError(f"{what}: x0,y0,x1,y1 must be numbers (pixels)") from None
    if not all(math.isfinite(v) for v in box):
        raise InputError(f"{what}: x0,y0,x1,y1 must be finite numbers (pixels)")
    if not (box[0] < box[2] and box[1] < box[3]):
        raise InputError(f"{what}: the box must have x0 < x1 and y0 < y1")
    return view, box, positive


def concept_prompts(args: argparse.Namespace) -> list[ConceptPrompt]:
    """The concepts of ``args.concept_prompts`` (see the module docstring for which concept an exemplar joins);
    [] without --concept / --exemplar. An empty or repeated phrase, a malformed exemplar, or exemplars alone with
    no positive one are :class:`InputError`."""
    prompts: list[ConceptPrompt] = []
    loose: ConceptPrompt | None = None  # the exemplars given before any phrase
    for kind, value in getattr(args, "concept_prompts", None) or []:
        if kind == "phrase":
            phrase = " ".join(str(value).split())
            if not phrase:
                raise InputError(f"--concept needs a non-empty phrase, got {value!r}")
            if any(p.phrase is not None and p.phrase.lower() == phrase.lower() for p in prompts):
                raise InputError(f"--concept {phrase!r} is given twice")
            prompts.append(ConceptPrompt(phrase))
        elif prompts and prompts[-1].phrase is not None:
            prompts[-1].exemplars.append(parse_exemplar(value))
        else:
            if loose is None:
                loose = ConceptPrompt(None)
                prompts.insert(0, loose)
            loose.exemplars.append(parse_exemplar(value))
    if loose is not None and not any(positive for _, _, positive in loose.exemplars):
        raise InputError("exemplars without a --concept before them need at least one positive box (without 'neg')")
    return prompts


def check_concept_arguments(args: argparse.Namespace) -> None:
    """Check --concept / --exemplar before any input is read: the task takes them (tracking or concept), they are
    not mixed with point / box / text prompts or --stream, and each parses (:func:`concept_prompts`)."""
    if not getattr(args, "concept_prompts", None):
        if args.task == "concept":
            raise InputError("--task concept needs --concept PHRASE and/or --exemplar VIEW,x0,y0,x1,y1[,neg]")
        return
    if args.task not in ("tracking", "concept"):
        raise InputError(f"--concept / --exemplar are prompts of --task tracking or concept, not --task {args.task}")
    mixed = [f"--{name}" for name in _OBJECT_FLAGS if getattr(args, name, None)]
    if mixed:
        raise InputError(f"give either --concept / --exemplar or {', '.join(mixed)}, not both (point, box and text "
                         f"prompts track one object each)")
    if getattr(args, "stream", False):
        raise InputError("--stream does not take --concept / --exemplar: concept tracking reads the whole input")
    concept_prompts(args)


def check_exemplars(prompts: Sequence[ConceptPrompt], width: int, height: int, views: int | None,
                    name: str = "--exemplar") -> None:
    """Every exemplar lies on a view of the input (``views``: how many are used; None when a video does not say)
    and inside its ``width`` x ``height`` pixels; :class:`InputError` naming the exemplar (``name`` and its
    values) otherwise."""
    from vision.concept.predictor import check_exemplar

    for prompt in prompts:
        for view, box, positive in prompt.exemplars:
            text = ",".join(f"{v:g}" for v in (view, *box)) + ("" if positive else ",neg")
            check_exemplar(view, box, width, height, views, f"{name} {text!r}")


def check_concept_count(predictor: "ConceptPredictor", prompts: Sequence[ConceptPrompt], how: str = "") -> None:
    """At most the checkpoint's ``max_phrases`` concepts in one pass; one :class:`InputError` line otherwise
    (``how``: how the user gave them, for the message)."""
    limit = predictor.config.max_phrases
    if len(prompts) > limit:
        given = f"{len(prompts)} concepts given" + (f" {how}" if how else "")
        raise InputError(f"{given}; this checkpoint takes at most {limit} in one pass (max_phrases)")


def load_concept_predictor(checkpoint: Path, device: Any, precision: str) -> "ConceptPredictor":
    """The concept predictor of ``checkpoint``; a checkpoint of another task is one :class:`InputError` saying
    which checkpoint is needed."""
    from vision.concept.predictor import ConceptPredictor

    try:
        return ConceptPredictor.from_checkpoint(checkpoint, device=device, precision=precision)
    except DataError as exc:
        if exc.field != "task":
            raise
        raise InputError(f"{checkpoint} holds a {exc.value} model; concept prompts (--concept / --exemplar) need "
                         f"{CONCEPT_HINT}") from None


# ---------------------------------------------------------------------------------------------------- the files


@dataclass
class ConceptExport:
    """What :func:`export_concepts` wrote into ``folder``: ``results`` (JSON), ``video`` (annotated mp4, or None
    when ``images`` were written instead), ``plys`` (instance id -> its .ply; instances without a 3D point are in
    ``empty``), ``scene_ply`` / ``scene_glb`` (None without geometry), and for the summary: ``phrases`` (instance
    id -> its concept's name), ``views_with_instance`` (id -> views where its mask is not empty) and
    ``present`` (concept name -> views whose presence passes the model's threshold)."""

    folder: Path
    results: Path
    video: Path | None = None
    images: list[Path] = field(default_factory=list)
    plys: dict[int, Path] = field(default_factory=dict)
    empty: list[int] = field(default_factory=list)
    scene_ply: Path | None = None
    scene_glb: Path | None = None
    phrases: dict[int, str] = field(default_factory=dict)
    views_with_instance: dict[int, int] = field(default_factory=dict)
    present: dict[str, int] = field(default_factory=dict)

    def summary(self, views: int) -> list[str]:
        """One line per concept: its instances and on how many of ``views`` it is present."""
        lines = []
        for name, count in self.present.items():
            ids = [o for o, p in self.phrases.items() if p == name]
            found = ", ".join(f"{o} ({self.views_with_instance.get(o, 0)} views)" for o in ids) or "none"
            lines.append(f"{name}: present on {count} of {views} views; {len(ids)} instance(s): {found}")
        return lines


def label_instances(frame: np.ndarray, masks: Sequence[np.ndarray], obj_ids: Sequence[int],
                    labels: Sequence[str]) -> np.ndarray:
    """``frame`` uint8 [H, W, 3] RGB with each mask (bool, any size) filled and outlined in the colour of its id and
    labelled "<id> <label>" at its top-left (:func:`vision.tracking.export.overlay_masks` draws the mask and the id;
    the label follows the id in the same colour). Returns a new array."""
    from vision.tracking.export import overlay_masks

    return overlay_masks(frame, list(masks), list(obj_ids), labels=list(labels))


def export_concepts(predictor: "ConceptPredictor", state: "ConceptState", frames: np.ndarray, out_dir: str | Path,
                    fps: float = 10.0, image_names: Sequence[str] | None = None,
                    progress: Callable[[int, int], None] | None = None) -> ConceptExport:
    """Propagate ``state`` (concepts already added) and write, into ``out_dir``: ``results.json``
    (:func:`vision.concept.inference.concept_records`, video id 1, image id = view + 1, category id = concept
    index + 1), the drawn views (:func:`label_instances` on ``frames`` uint8 [T, H, W, 3], the input's or
    downscaled: ``annotated.mp4`` at ``fps``, or ``annotated/<name>.png`` per view when ``image_names`` are
    given), ``instance_<id>.ply`` per instance with 3D points, and ``scene.ply`` / ``scene.glb``.
    ``progress(done, total)`` is called after each view."""
    from vision.concept.inference import concept_records
    from vision.data.io import atomic_write_json
    from vision.data.resize import resize_nearest
    from vision.data.video import write_video
    from vision.tracking.export import _write_scene_ply, scene_points

    total = state.num_views
    if len(frames) != total or (image_names is not None and len(image_names) != total):
        raise InputError(f"export_concepts: {len(frames)} frames and "
                         f"{'no' if image_names is None else len(image_names)} image names for a state of "
                         f"{total} views")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    size = state.tracker.size
    names = [c.name for c in state.concepts]
    small: dict[int, np.ndarray] = {}  # instance id -> bool [T, s, s] masks at the model size

    def kept(outputs: Iterator[tuple]) -> Iterator[tuple]:  # the records and the drawing from one propagation
        for item in outputs:
            view, obj_ids, _, masks, _ = item
            for obj_id, mask in zip(obj_ids, masks):
                small.setdefault(obj_id, np.zeros((total, size, size), bool))[view] = resize_nearest(mask,
                                                                                                     (size, size))
            if progress is not None:
                progress(view + 1, total)
            yield item

    records = concept_records(kept(predictor.propagate(state)), state, 1, [v + 1 for v in range(total)],
                              list(range(1, len(names) + 1)))
    export = ConceptExport(folder=out, results=out / "results.json")
    atomic_write_json(export.results, records)
    ids = sorted(small)
    export.phrases = {o: names[state.instances[o]] for o in ids}
    export.views_with_instance = {o: int(small[o].any(axis=(1, 2)).sum()) for o in ids}
    threshold = predictor.config.presence_threshold
    export.present = {name: int((state.presence[:, k] >= threshold).sum()) for k, name in enumerate(names)}
    labels = [export.phrases[o] for o in ids]
    drawn = (label_instances(frame, [small[o][view] for o in ids], ids, labels) for view, frame in enumerate(frames))
    if image_names is None:
        export.video = write_video(out / "annotated.mp4", drawn, fps=fps, crf=20, preset="veryfast")
    else:
        import cv2

        (out / "annotated").mkdir(exist_ok=True)
        taken: set[str] = set()
        for name, image in zip(image_names, drawn):
            stem = Path(name).stem if Path(name).stem not in taken else Path(name).name  # a.png next to a.jpg
            taken.add(stem)
            path = out / "annotated" / f"{stem}.png"
            if not cv2.imwrite(str(path), cv2.cvtColor(image, cv2.COLOR_RGB2BGR)):
                raise DataError("OpenCV could not write the image", file=path)
            export.images.append(path)
    tracker = state.tracker
    for obj_id in ids:
        if len(tracker.clouds.get(obj_id, ())) == 0:
            export.empty.append(obj_id)
        else:
            export.plys[obj_id] = tracker.export_ply(out / f"instance_{obj_id}.ply", obj_id=obj_id)
    if ids and tracker.depth is not None and (tracker.depth > 0).any():
        from vision.data.glb import write_points_glb

        points, colours = scene_points(tracker, small)
        if len(points):
            export.scene_ply = _write_scene_ply(out / "scene.ply", points, colours)
            take = np.linspace(0, len(points) - 1, min(6000, len(points))).round().astype(int)
            export.scene_glb = write_points_glb(out / "scene.glb", points[take], colours[take])
    return export


# ---------------------------------------------------------------------------------------------------- the runner


def run_concept(args: argparse.Namespace, out: Path) -> None:
    """``vision-predict`` with --concept / --exemplar (``--task tracking`` or ``concept``) on ``args.input``."""
    from tqdm import tqdm

    from vision.cli.batch import loaded
    from vision.cli.inputs import load_input

    prompts = concept_prompts(args)
    if not prompts:
        raise InputError(f"--task {args.task} with concept prompts needs --concept PHRASE and/or --exemplar "
                         f"VIEW,x0,y0,x1,y1[,neg]")
    source: Input = load_input(args.input, args.max_frames, args.max_pixels)
    check_exemplars(prompts, source.width, source.height, source.frames)
    predictor = loaded(args, "concept", lambda: load_concept_predictor(args.ckpt, args.device, args.precision))
    check_concept_count(predictor, prompts, "(--concept, or exemplars alone)")
    state = predictor.init_state(source.source, ordered=source.video is not None, max_frames=source.max_frames,
                                 max_pixels=source.max_pixels)
    for prompt in prompts:
        predictor.add_concept(state, prompt.phrase, exemplars=prompt.exemplars)
    image_names = None if source.video is not None else [p.name for p in source.images]
    with tqdm(total=state.num_views, desc="concepts", unit="view", disable=None) as bar:
        export = export_concepts(predictor, state, source.working_frames(), out, fps=source.fps,
                                 image_names=image_names, progress=lambda done, total: bar.update(done - bar.n))
    if source.note:
        print(f"note: {source.note}")
    for line in export.summary(state.num_views):
        print(line)
    drawn = [export.video] if export.video is not None else [export.folder / "annotated"]
    written = [export.results, *drawn, *export.plys.values()]
    written += [p for p in (export.scene_ply, export.scene_glb) if p is not None]
    print("wrote " + ", ".join(str(p) for p in written))
    for obj_id in export.empty:
        print(f"instance {obj_id} has no 3D point: no .ply written for it")
