"""``vision-predict --task detection``: the detector on an image, a folder of images or a video, for one or more
vocabularies (the registry's ``run``, ``add_flags``, ``check`` and ``USAGE`` of the detection task,
:data:`vision.tasks.PARTS`).

  vision-predict --task detection --ckpt CKPT --vocabulary "mug,chair,lamp" INPUT [--out DIR]
      -> DIR/results.json (COCO results, each with its category_name; rejected OOV objects use category id 1000
         and the name "unknown") + DIR/annotated.mp4
  vision-predict --task detection --ckpt CKPT INPUT --vocabulary "mug" --vocabulary "cat,dog"
      -> DIR/vocabulary_<k>/... per vocabulary
  vision-predict --task detection --ckpt runs/detection/real/checkpoints/last.ckpt INPUT --vocabulary "person,sandal" \
                 --exemplar-box "sandal=photo.jpg:120,300,180,340" [--exemplar-box "sandal=photo.jpg:10,10,60,40,neg"]
      -> objects like the exemplar box (on any image) are also reported under its name; ``neg``: not like this one
         (a detector on the pretrained body, vision/detection/visual_exemplars.py)
"""

from __future__ import annotations

import argparse
from pathlib import Path

from vision.errors import InputError

__all__ = ["USAGE", "add_flags", "check", "run", "parse_exemplar_box"]

#: what `vision-predict --task detection --ckpt FOLDER` needs besides the input (the model card's example)
USAGE = "--vocabulary 'name,name'"


def add_flags(group: argparse._ArgumentGroup) -> None:
    group.add_argument("--vocabulary", action="append",
                       help="class names separated by commas, semicolons or line breaks; repeat it for several "
                            "vocabularies (each writes into vocabulary_<k>/)")
    group.add_argument("--exemplar-box", action="append", default=[], metavar="NAME=IMAGE:x0,y0,x1,y1[,neg]",
                       help="an exemplar of a vocabulary name: a box (pixels) on an image file; objects like it are "
                            "reported under that name (',neg' at the end: objects like it are not); repeatable")


def parse_exemplar_box(text: str) -> tuple[str, Path, list[float], bool]:
    """``"NAME=IMAGE:x0,y0,x1,y1[,neg]"`` -> ``(name, image path, [x0, y0, x1, y1], positive)``; the box's values
    are checked by :func:`vision.concept.exemplars.parse_exemplar`'s rule (view 0 of the image). :class:`InputError`
    naming the flag and the text otherwise."""
    from vision.concept.exemplars import parse_exemplar
    from vision.text.vocabulary import parse_vocabulary

    name, eq, rest = str(text).partition("=")
    image, colon, box = rest.rpartition(":")
    if not eq or not colon or not name.strip() or not image or len(box.split(",")) not in (4, 5):
        raise InputError(f"--exemplar-box {text!r} must be NAME=IMAGE:x0,y0,x1,y1 or NAME=IMAGE:x0,y0,x1,y1,neg")
    names = parse_vocabulary(name, field="--exemplar-box")
    if len(names) != 1:
        raise InputError(f"--exemplar-box {text!r} names {len(names)} names; give one")
    _, values, positive = parse_exemplar("0," + box, "--exemplar-box")
    return names[0], Path(image), values, positive


def _vocabularies(args: argparse.Namespace) -> list[list[str]]:
    """Each ``--vocabulary`` text read by the one rule (:func:`vision.text.vocabulary.parse_vocabulary`), once per
    command: the names are kept on ``args`` for every input that follows."""
    from vision.text.vocabulary import parse_vocabulary

    parsed = vars(args).get("_vocabularies")
    if parsed is None or parsed[0] != args.vocabulary:
        parsed = (list(args.vocabulary), [parse_vocabulary(text, field="--vocabulary") for text in args.vocabulary])
        args._vocabularies = parsed
    return parsed[1]


def check(args: argparse.Namespace) -> None:
    """A vocabulary is given and each one reads (names separated by commas, semicolons or line breaks; no empty or
    repeated name)."""
    if not args.vocabulary:
        raise InputError("--task detection needs --vocabulary 'name,name,...'")
    vocabularies = _vocabularies(args)
    for text in args.exemplar_box:
        name = parse_exemplar_box(text)[0]
        for vocabulary in vocabularies:
            if name not in vocabulary:
                raise InputError(f"--exemplar-box {text!r}: {name!r} is not in the vocabulary {vocabulary}")


def run(args: argparse.Namespace, out: Path) -> None:
    from vision.cli.batch import loaded
    from vision.cli.inputs import load_input, print_notes, progress_bar
    from vision.data.io import read_image
    from vision.detection.predictor import DetectorPredictor

    check(args)
    vocabularies = _vocabularies(args)
    source = load_input(args.input, args.max_frames, args.max_pixels)
    predictor = loaded(args, "detection", lambda: DetectorPredictor.from_checkpoint(
        args.ckpt, vocabulary=vocabularies[0], device=args.device, precision=args.precision))
    exemplars = loaded(args, "exemplar boxes", lambda: [  # read once per command, for every input
        (name, read_image(image, max_pixels=args.max_pixels), box, positive)
        for name, image, box, positive in map(parse_exemplar_box, args.exemplar_box)])
    # one vocabulary writes into the input's folder, several into vocabulary_<k>/ each
    for k, vocabulary in enumerate(vocabularies, 1):
        folder = out if len(vocabularies) == 1 else out / f"vocabulary_{k}"
        folder.mkdir(exist_ok=True)
        predictor.set_vocabulary(vocabulary)  # forgets the exemplars of the last vocabulary
        for name, image, box, positive in exemplars:
            predictor.add_exemplar(name, image, box, positive)
        with progress_bar(source.frames, "detecting") as bar:
            predictor.predict(source.paths, results_path=folder / "results.json",
                              video_path=folder / "annotated.mp4", fps=source.fps, max_frames=source.max_frames,
                              max_pixels=source.max_pixels, progress=lambda done: bar.update(done - bar.n))
        print(f"wrote {folder / 'results.json'} and {folder / 'annotated.mp4'} ({', '.join(vocabulary)})")
    print_notes(source)
