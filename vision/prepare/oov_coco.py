"""Build OOV-COCO / OOV-VOC-style open-set splits from a real COCO annotation file, by category lists
(``vision-prepare-oov-coco``, or ``python datasets/prepare_oov_coco.py``).

Each listed category gets ``split: iv | novel | oov``; categories not listed are dropped with their annotations.
``--oov`` defaults to every category that is neither IV nor novel.

- ``--mode train``: annotations only for IV categories (OOV objects stay in the images, unannotated); images that
  hold a novel object are dropped (novel classes are never seen in training); ``info.vocabulary`` = IV names.
- ``--mode test``: every listed category annotated; ``info.vocabulary`` = IV + novel names (what a detector may be
  given; OOV objects must come out as "unknown").

``--iv voc`` selects the 20 PASCAL VOC classes under their COCO names (those present in the file) (OOV-VOC style:
VOC classes known, the other 60 COCO classes OOV). Image ``file_name`` entries are prefixed with
``--image-prefix`` (a path relative to the output JSON's folder).

    vision-prepare-oov-coco --annotations coco/annotations/instances_val2017.json \
        --iv voc --mode test --image-prefix ../coco/val2017 --out datasets/oov_voc_test.json
"""

from __future__ import annotations

import argparse
import copy
import sys
from collections.abc import Sequence
from pathlib import Path, PurePosixPath

from vision.data.coco import read_json, write_split
from vision.errors import DataError, VisionError

__all__ = ["VOC_CLASSES", "prepare_oov_split", "main"]

#: The 20 PASCAL VOC classes under their COCO 2017 category names.
VOC_CLASSES: tuple[str, ...] = (
    "airplane", "bicycle", "bird", "boat", "bottle", "bus", "car", "cat", "chair", "cow", "dining table", "dog",
    "horse", "motorcycle", "person", "potted plant", "sheep", "couch", "train", "tv")

MODES = ("train", "test")


def _names(value: Sequence[str] | str | None) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        if value.strip().lower() == "voc":
            return list(VOC_CLASSES)
        return [v.strip() for v in value.split(",") if v.strip()]
    return [str(v) for v in value]


def prepare_oov_split(coco: dict, iv: Sequence[str] | str, novel: Sequence[str] | str | None = None,
                      oov: Sequence[str] | str | None = None, mode: str = "test", image_prefix: str = "",
                      file: str | None = None) -> dict:
    """Return the open-set split built from ``coco`` (a COCO instances dict; not modified).

    Args:
        coco: the source annotations. iv / novel / oov: category names (lists or comma-separated strings;
            ``"voc"`` = :data:`VOC_CLASSES`); ``oov=None`` = every other category.
        mode: ``train`` or ``test`` (see the module docstring). image_prefix: prepended to image file names.
        file: the source file name, for error messages.

    Raises:
        DataError: unknown / repeated category names, no IV category, a bad mode, or a malformed source.
    """
    if mode not in MODES:
        raise DataError(f"mode must be one of {', '.join(MODES)}", field="mode", value=mode)
    for key in ("images", "annotations", "categories"):
        if not isinstance(coco.get(key), list):
            raise DataError(f"missing or non-list {key!r}", file=file, field=key)
    by_name = {}
    for i, cat in enumerate(coco["categories"]):
        if not isinstance(cat, dict) or "id" not in cat or "name" not in cat:
            raise DataError("a category needs 'id' and 'name'", file=file, field=f"categories[{i}]", value=cat)
        by_name[cat["name"]] = cat
    groups = {"iv": _names(iv), "novel": _names(novel)}
    if isinstance(iv, str) and iv.strip().lower() == "voc":  # a preset: keep the VOC classes the file has
        groups["iv"] = [n for n in groups["iv"] if n in by_name]
    listed = set(groups["iv"]) | set(groups["novel"])
    groups["oov"] = _names(oov) if oov is not None else [n for n in by_name if n not in listed]
    if not groups["iv"]:
        raise DataError("no IV category given", field="iv", value=iv)
    split_of: dict[str, str] = {}
    for key, names in groups.items():
        for name in names:
            if name not in by_name:
                raise DataError(f"category name is not in the annotation file (known: {', '.join(sorted(by_name))})",
                                file=file, field=key, value=name)
            if name in split_of:
                raise DataError(f"category is listed in both {split_of[name]!r} and {key!r}", file=file, field=key,
                                value=name)
            split_of[name] = key
    id_split = {int(by_name[n]["id"]): s for n, s in split_of.items()}
    keep_ann = {"iv"} if mode == "train" else {"iv", "novel", "oov"}
    annotations = [copy.deepcopy(a) for a in coco["annotations"] if id_split.get(int(a["category_id"])) in keep_ann]
    images = [copy.deepcopy(img) for img in coco["images"]]
    if mode == "train":
        novel_images = {int(a["image_id"]) for a in coco["annotations"]
                        if id_split.get(int(a["category_id"])) == "novel"}
        images = [img for img in images if int(img["id"]) not in novel_images]
        kept = {int(img["id"]) for img in images}
        annotations = [a for a in annotations if int(a["image_id"]) in kept]
    if image_prefix:
        for img in images:
            img["file_name"] = str(PurePosixPath(image_prefix) / img["file_name"])
    categories = [dict(copy.deepcopy(c), split=id_split[int(c["id"])]) for c in coco["categories"]
                  if int(c["id"]) in id_split]
    vocab_groups = ("iv",) if mode == "train" else ("iv", "novel")
    info = copy.deepcopy(coco.get("info", {})) if isinstance(coco.get("info"), dict) else {}
    info.update({
        "vocabulary": [c["name"] for c in sorted(categories, key=lambda c: c["id"]) if c["split"] in vocab_groups],
        "vocabulary_split": {k: list(v) for k, v in groups.items()},
        "open_set_mode": mode,
    })
    out = {"info": info, "images": images, "annotations": annotations, "categories": categories}
    if "licenses" in coco:
        out["licenses"] = copy.deepcopy(coco["licenses"])
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """Parse ``argv`` (None: ``sys.argv[1:]``), convert and write the split; 0 on success, 2 with one ``error:``
    line naming the file and field when the annotations or category lists are bad."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--annotations", required=True, help="COCO instances JSON")
    parser.add_argument("--iv", required=True, help="comma-separated IV names, or 'voc'")
    parser.add_argument("--novel", default=None, help="comma-separated novel names (named only at test)")
    parser.add_argument("--oov", default=None, help="comma-separated OOV names (default: every other category)")
    parser.add_argument("--mode", choices=MODES, default="test")
    parser.add_argument("--image-prefix", default="", help="prefix of image file names, relative to --out's folder")
    parser.add_argument("--out", required=True, help="output split JSON")
    parser.add_argument("--check-files", action="store_true", help="check that every image file exists")
    args = parser.parse_args(argv)
    out = Path(args.out)
    try:
        source = read_json(args.annotations)
        split = prepare_oov_split(source, args.iv, args.novel, args.oov, args.mode, args.image_prefix,
                                  file=args.annotations)
        write_split(out, split, check_files=args.check_files)
    except VisionError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"{out}: {len(split['images'])} images, {len(split['annotations'])} annotations, "
          f"{len(split['categories'])} categories ({args.mode})")
    return 0
