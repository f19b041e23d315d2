"""``vision-predict --concept`` / ``--exemplar`` (and ``vision-concept``): every instance of noun phrases and/or
exemplar boxes, found, segmented and tracked with persistent ids.

  vision-predict --task tracking --ckpt CONCEPT_CKPT INPUT --concept "mug" [--concept "chair"]
                 [--exemplar VIEW,x0,y0,x1,y1[,neg]] [--out DIR]
  vision-predict --task concept ...                  (the same)
      -> DIR/results.json (instance and presence records, :mod:`vision.concept.records`)
         + DIR/annotated.mp4 for a video, DIR/annotated/<image name>.png for images (each instance's mask in the
           colour of its id, labelled with its id and phrase)
         + DIR/instance_<id>.ply (each instance's 3D points) + DIR/scene.ply / scene.glb (the reconstruction with
           the instances coloured)
  vision-predict --task concept --ckpt DETECTION_CKPT INPUT --concept "cup"
  vision-concept --detector DETECTION_CKPT INPUT --concept "cup"      (python -m vision.concept.cli; the same)
      -> DIR/results.json + the drawn views, answered by the detector alone
         (:class:`vision.concept.detector_only.DetectorConceptPredictor`): the masks are the detector's boxes, and
         there are no 3D points

Which model answers is read from the checkpoint's task: a concept checkpoint runs the concept model
(:class:`vision.concept.predictor.ConceptPredictor`: detector + G2TAM tracker, trained on synthetic renders), a
detection checkpoint (e.g. ``runs/detection/real_coco/checkpoints/last.ckpt``, trained on real frames) the detector
alone with online 2D association. The output says which model answered, what it was trained on
(:mod:`vision.provenance`) and what the masks are.

Prompts: each ``--concept`` is one phrase with its own set of ids; an ``--exemplar`` box (view, XYXY pixels of the
input; ``neg`` at the end: "not this") belongs to the ``--concept`` given before it on the command line; exemplars
given before any ``--concept`` form one concept of their own, found by its boxes alone (it needs a positive one).
A folder of images is a view set (any order); a video's frames are its views. The checkpoint must be a concept or a
detection checkpoint or model folder. Of the tracking flags, ``--solve-cameras`` applies (a concept checkpoint's
tracker on the camera solver's cameras; refused with a detection checkpoint, which has none); the others
(``--view``, ``--presence-threshold``, ``--memory-points``) are refused by name.

Bad prompts (an empty phrase, a malformed exemplar, a view the input lacks, a box off the image, more concepts than
the checkpoint takes) are one ``error:`` line and exit status 2, checked before any model runs.

The prompts are read by :mod:`vision.concept.exemplars` and the files written by
:func:`vision.concept.export.export_concepts`, as the demo's Track tab does.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vision.concept.exemplars import ConceptPrompt, check_concept_count, check_exemplars, parse_exemplar
from vision.errors import DataError, InputError
from vision.text.user_text import check_text

if TYPE_CHECKING:
    from vision.cli.inputs import Input
    from vision.concept.detector_only import DetectorConceptPredictor
    from vision.concept.predictor import ConceptPredictor

__all__ = ["USAGE", "add_flags", "check", "concept_prompts", "load_concept_predictor", "describe_answer", "run", "main",
           "CONCEPT_HINT"]

#: what `vision-predict --task concept --ckpt FOLDER` needs besides the input (the model card's example)
USAGE = "--concept 'phrase'"

#: what to give when a checkpoint is not a concept one
CONCEPT_HINT = ("a concept checkpoint or model folder (vision-train --config configs/concept/tiny.yaml writes "
                "runs/concept/tiny/checkpoints/last.ckpt), or a detection checkpoint, which answers with its boxes "
                "(runs/detection/real_coco/checkpoints/last.ckpt, trained on real frames)")

#: the flags of the point / box / text prompts, which --concept / --exemplar replace
_OBJECT_FLAGS = ("points", "labels", "box", "text", "prompt")


class _InOrder(argparse.Action):
    """Appends ``(kind, value)`` to one list for both --concept and --exemplar, keeping their command-line order
    (an exemplar belongs to the phrase given before it)."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        items = list(getattr(namespace, self.dest, None) or [])
        items.append((self.const, values))
        setattr(namespace, self.dest, items)


def add_flags(group: argparse._ArgumentGroup) -> None:
    """``--concept`` and ``--exemplar`` (stored in order as ``args.concept_prompts``)."""
    group.add_argument("--concept", dest="concept_prompts", action=_InOrder, const="phrase", metavar="PHRASE",
                       help="find and track every instance of this noun phrase (each its own ids); repeat it for "
                            "more phrases (one pass). Needs a concept checkpoint")
    group.add_argument("--exemplar", dest="concept_prompts", action=_InOrder, const="exemplar",
                       metavar="VIEW,x0,y0,x1,y1",  # no brackets: argparse's usage wrapping asserts on them
                       help="an exemplar box (input pixels) of the --concept before it; VIEW,x0,y0,x1,y1,neg for a "
                            "negative one (not this); before any --concept, exemplars form a concept of their own; "
                            "repeatable")


def concept_prompts(args: argparse.Namespace) -> list[ConceptPrompt]:
    """The concepts of ``args.concept_prompts`` (see the module docstring for which concept an exemplar joins);
    [] without --concept / --exemplar. An empty or repeated phrase, a malformed exemplar, or exemplars alone with
    no positive one are :class:`InputError`."""
    prompts: list[ConceptPrompt] = []
    loose: ConceptPrompt | None = None  # the exemplars given before any phrase
    for kind, value in getattr(args, "concept_prompts", None) or []:
        if kind == "phrase":
            phrase = check_text(value, "--concept")
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


def check(args: argparse.Namespace) -> None:
    """Check --concept / --exemplar before any input is read: at least one is given, they are not mixed with point /
    box / text prompts or --stream, and each parses (:func:`concept_prompts`)."""
    if not getattr(args, "concept_prompts", None):
        raise InputError(f"--task {args.task} needs --concept PHRASE and/or --exemplar VIEW,x0,y0,x1,y1[,neg]")
    mixed = [f"--{name}" for name in _OBJECT_FLAGS if getattr(args, name, None)]
    if mixed:
        raise InputError(f"give either --concept / --exemplar or {', '.join(mixed)}, not both (point, box and text "
                         f"prompts track one object each)")
    unread = _unread_flags(args)
    if unread:
        raise InputError(f"{', '.join(unread)} {'does' if len(unread) == 1 else 'do'} not apply to --concept / "
                         f"--exemplar (concept prompts take --solve-cameras of the tracking flags)")
    if getattr(args, "stream", False):
        raise InputError("--stream does not take --concept / --exemplar: concept tracking reads the whole input")
    concept_prompts(args)


def _unread_flags(args: argparse.Namespace) -> list[str]:
    """The flags of ``--task tracking`` given with ``--task tracking --concept`` that concept prompts do not read:
    all but the point / box / text prompts (refused with their own message) and ``--solve-cameras``."""
    flags = getattr(args, "_task_flags", {})
    read = {action.dest for action in flags.get("concept", [])} | {"solve_cameras", *_OBJECT_FLAGS}
    return [action.option_strings[0] for action in flags.get(args.task, [])
            if action.dest not in read and getattr(args, action.dest, None) != action.default]




def load_concept_predictor(checkpoint: Path, device: Any, precision: str, solve_cameras: bool = False
                           ) -> "ConceptPredictor | DetectorConceptPredictor":
    """The predictor that answers concept prompts with ``checkpoint``: the concept model of a concept checkpoint
    (its tracker on the camera solver's cameras with ``solve_cameras``), the detector alone
    (:class:`~vision.concept.detector_only.DetectorConceptPredictor`) of a detection one; a checkpoint of another
    task, or ``solve_cameras`` with a detection checkpoint (2D boxes, no cameras to solve), is one
    :class:`InputError` saying which checkpoint is needed."""
    from vision.concept.detector_only import DetectorConceptPredictor
    from vision.concept.predictor import ConceptPredictor
    from vision.detection.task import DetectionConfig

    try:
        options = {"solve_cameras": True} if solve_cameras else {}
        return ConceptPredictor.from_checkpoint(checkpoint, device=device, precision=precision, **options)
    except DataError as exc:
        if exc.field != "task":
            raise
        if exc.value == DetectionConfig.task and solve_cameras:
            raise InputError(f"--solve-cameras needs a concept checkpoint: {checkpoint} holds a detection model, "
                             f"which answers with 2D boxes and has no cameras to solve") from None
        if exc.value == DetectionConfig.task:  # the detector it combines answers alone
            return DetectorConceptPredictor.from_checkpoint(checkpoint, device=device, precision=precision)
        raise InputError(f"{checkpoint} holds a {exc.value} model; concept prompts (--concept / --exemplar) need "
                         f"{CONCEPT_HINT}") from None


def describe_answer(predictor: "ConceptPredictor | DetectorConceptPredictor", checkpoint: Path,
                    state: Any = None) -> list[str]:
    """Two lines for the user: which model answered (the checkpoint and what it was trained on,
    :func:`vision.provenance.read_provenance`) and what its masks are."""
    from vision.concept.detector_only import DetectorConceptPredictor
    from vision.provenance import read_provenance

    if isinstance(predictor, DetectorConceptPredictor):
        line = getattr(state, "masks_line", "") or f"boxes from the detector ({predictor.mask_note})"
        return [f"model: {predictor.describe()}", f"masks: {line}"]
    return [f"model: the concept model (detector + G2TAM tracker): {read_provenance(checkpoint)}",
            "masks: the concept model's tracker, decoded from each proposal's box"]


# ---------------------------------------------------------------------------------------------------- the runner


def run(args: argparse.Namespace, out: Path) -> None:
    """``vision-predict`` with --concept / --exemplar (``--task tracking`` or ``concept``) on ``args.input``."""
    from vision.cli.batch import loaded
    from vision.cli.inputs import load_input, progress_bar
    from vision.concept.detector_only import DetectorConceptPredictor, export_box_concepts
    from vision.concept.export import export_concepts

    prompts = concept_prompts(args)
    if not prompts:
        raise InputError(f"--task {args.task} with concept prompts needs --concept PHRASE and/or --exemplar "
                         f"VIEW,x0,y0,x1,y1[,neg]")
    source: Input = load_input(args.input, args.max_frames, args.max_pixels)
    check_exemplars(prompts, source.width, source.height, source.frames)
    predictor = loaded(args, "concept", lambda: load_concept_predictor(args.ckpt, args.device, args.precision,
                                                                       getattr(args, "solve_cameras", False)))
    check_concept_count(predictor, prompts, "(--concept, or exemplars alone)")
    state = predictor.init_state(source.source, ordered=source.video is not None, max_frames=source.max_frames,
                                 max_pixels=source.max_pixels)
    for prompt in prompts:
        predictor.add_concept(state, prompt.phrase, exemplars=prompt.exemplars)
    image_names = None if source.video is not None else [p.name for p in source.images]
    write = export_box_concepts if isinstance(predictor, DetectorConceptPredictor) else export_concepts
    with progress_bar(state.num_views, "concepts", unit="view") as bar:
        export = write(predictor, state, source.working_frames(), out, fps=source.fps, image_names=image_names,
                       progress=lambda done, total: bar.update(done - bar.n))
    if source.note:
        print(f"note: {source.note}")
    for line in loaded(args, "concept answer", lambda: describe_answer(predictor, args.ckpt, state)):
        print(line)
    for line in export.summary(state.num_views):
        print(line)
    drawn = [export.video] if export.video is not None else [export.folder / "annotated"]
    written = [export.results, *drawn, *export.plys.values()]
    written += [p for p in (export.scene_ply, export.scene_glb) if p is not None]
    print("wrote " + ", ".join(str(p) for p in written))
    for obj_id in export.empty:
        print(f"instance {obj_id} has no 3D point: no .ply written for it")


def main(argv: Sequence[str] | None = None) -> int:
    """``vision-concept`` (``python -m vision.concept.cli``): ``vision-predict --task concept`` (every flag of it),
    with ``--detector PATH`` as the checkpoint: a detection checkpoint answers with its boxes (see the module
    docstring). Returns ``vision-predict``'s exit status."""
    from vision.cli.predict import main as predict

    argv = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(prog="vision-concept", add_help=False)
    parser.add_argument("--detector", type=Path)
    known, rest = parser.parse_known_args(argv)

    def given(flag: str) -> bool:
        return any(a == flag or a.startswith(flag + "=") for a in rest)

    if given("--task"):
        print("error: vision-concept runs --task concept; other tasks run with vision-predict", file=sys.stderr)
        return 2
    if known.detector is not None:
        if given("--ckpt"):
            print("error: give --detector or --ckpt, not both (--detector is the checkpoint)", file=sys.stderr)
            return 2
        rest = ["--ckpt", str(known.detector), *rest]
    return predict(["--task", "concept", *rest])

if __name__ == "__main__":
    sys.exit(main())
