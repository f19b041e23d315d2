"""Build OOV-COCO / OOV-VOC-style open-set splits from a real COCO annotation file, by category lists, or from an
LVIS v1 file by category frequency (``vision prepare oov-coco``).

Each listed category gets ``split: iv | novel | oov``; categories not listed are dropped with their annotations.
``--oov`` defaults to every category that is neither IV nor novel.

- ``--mode train``: annotations only for IV categories (OOV objects stay in the images, unannotated); images that
  hold a novel object are dropped (novel classes are never seen in training); ``info.vocabulary`` = IV names.
- ``--mode test``: every listed category annotated; ``info.vocabulary`` = IV + novel names (what a detector may be
  given; OOV objects must come out as "unknown").

``--iv voc`` selects the 20 PASCAL VOC classes under their COCO names (those present in the file) (OOV-VOC style:
VOC classes known, the other 60 COCO classes OOV). Image ``file_name`` entries are prefixed with
``--image-prefix`` (a path relative to the output folder ``--out``, which must stay inside it: a split's files may
not escape its folder, so write the split into the folder holding the COCO images). The split is written as
``OUT/<split>.json``, ``split`` defaulting to the mode (``train`` / ``test``).

    vision prepare oov-coco --annotations data/coco/annotations/instances_val2017.json \
        --iv voc --mode test --image-prefix coco/val2017 --out data --split oov_voc_test

LVIS v1 (``--by-frequency``, :func:`prepare_lvis_oov_split`): the categories are partitioned by their LVIS
``frequency`` instead of by name lists; the default :data:`LVIS_FREQUENCY_PARTITION` is frequent (``f``, > 100
training images) -> ``iv``, common (``c``, 11-100) -> ``novel``, rare (``r``, 1-10) -> ``oov``; any other mapping
is given as ``f=iv,c=novel,r=oov`` (each of ``f``, ``c``, ``r`` exactly once; a value ``drop`` removes those
categories with their annotations). LVIS images have no ``file_name``: it is taken from ``coco_url`` as
``<COCO folder>/<file>`` (``val2017/000000397133.jpg``; LVIS v1 val holds images of COCO train2017 and
val2017), so ``--image-prefix`` names the COCO root (the folder holding ``train2017/`` and ``val2017/``). LVIS
annotations have no ``iscrowd``: it is set to 0.

LVIS is federated: on each image only the ``pos`` categories (those annotated there) and ``neg_category_ids``
(verified absent) are known, and a category in ``not_exhaustive_category_ids`` is annotated on the image but not
every instance of it is. How the split treats them:

- ``not_exhaustive_category_ids`` (``--mode test``): the annotations of those categories on that image are kept,
  and a whole-image ignore region of that category is added (``iscrowd: 1``, bbox ``[0, 0, W, H]``, full-image RLE,
  ``"ignore": "not_exhaustive"``). COCO AP (``vision.evaluation.evaluate(..., "detection")``: ``AP``, ``IV_AP``,
  ``novel_AP50``) matches detections to the real instances first and ignores a detection of that category that
  matches none of them -- LVIS's own rule for non-exhaustive categories. ``U-Recall`` is recall over the annotated
  unknown instances (crowd regions are left out of the unknown ground truth), so it is not penalised either. What
  stays conservative: ``AP_U``, ``WI`` and ``A-OSE`` cannot see the unannotated instances (an unknown detection on
  one counts as a false positive; a known detection on one is not counted as a wilderness hit).
  ``--mode train``: annotations kept, no ignore regions (the detection loader trains on every box, crowd or not),
  so unannotated instances act as background, as in ordinary LVIS training.
- categories neither annotated on an image nor in its ``neg_category_ids`` (unverified): the COCO evaluator treats
  them as absent, so a detection of one counts as a false positive; the AP figures are therefore lower than
  LVIS's federated AP and not comparable to published LVIS numbers. Each image keeps ``neg_category_ids`` and
  ``not_exhaustive_category_ids`` (restricted to the kept categories) for a federated evaluator (lvis-api).

    vision prepare oov-coco --annotations data/lvis/lvis_v1_val.json --by-frequency \
        --mode test --image-prefix coco --out data --split oov_lvis_test
"""

from __future__ import annotations

import argparse
import copy
from collections.abc import Mapping, Sequence
from pathlib import PurePosixPath
from urllib.parse import urlparse

import numpy as np

from vision.data.coco import read_json, write_split
from vision.data.masks import encode_mask
from vision.data.schema import validate_split
from vision.errors import DataError, InputError
from vision.prepare.converter import add_out, converter_parser, run
from vision.prepare.files import output_folder, staged_output

__all__ = ["VOC_CLASSES", "LVIS_FREQUENCY_PARTITION", "prepare_oov_split", "lvis_frequency_groups",
           "prepare_lvis_oov_split", "main"]

#: The 20 PASCAL VOC classes under their COCO 2017 category names.
VOC_CLASSES: tuple[str, ...] = (
    "airplane", "bicycle", "bird", "boat", "bottle", "bus", "car", "cat", "chair", "cow", "dining table", "dog",
    "horse", "motorcycle", "person", "potted plant", "sheep", "couch", "train", "tv")

MODES = ("train", "test")

#: LVIS category ``frequency`` -> open-set split (``iv`` / ``novel`` / ``oov``, or ``drop``).
LVIS_FREQUENCY_PARTITION: dict[str, str] = {"f": "iv", "c": "novel", "r": "oov"}
LVIS_FREQUENCIES = ("f", "c", "r")
_PARTITION_VALUES = ("iv", "novel", "oov", "drop")


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


def _parse_partition(partition: Mapping[str, str] | str | None) -> dict[str, str]:
    """``{"f": .., "c": .., "r": ..}`` from a mapping or a ``f=iv,c=novel,r=oov`` string (None: the default)."""
    if partition is None:
        return dict(LVIS_FREQUENCY_PARTITION)
    if isinstance(partition, str):
        pairs = [p.split("=", 1) for p in partition.split(",") if p.strip()]
        if any(len(p) != 2 for p in pairs):
            raise DataError("expected frequency=split pairs such as f=iv,c=novel,r=oov", field="partition",
                            value=partition)
        keys = [k.strip() for k, _ in pairs]
        if len(set(keys)) != len(keys):
            raise DataError("a frequency is given twice", field="partition", value=partition)
        partition = {k.strip(): v.strip() for k, v in pairs}
    out = {str(k): str(v) for k, v in partition.items()}
    if set(out) != set(LVIS_FREQUENCIES):
        raise DataError(f"the partition must map each of {', '.join(LVIS_FREQUENCIES)} exactly once",
                        field="partition", value=partition)
    for key, value in out.items():
        if value not in _PARTITION_VALUES:
            raise DataError(f"a frequency maps to one of {', '.join(_PARTITION_VALUES)}", field=f"partition.{key}",
                            value=value)
    if "iv" not in out.values():
        raise DataError("no frequency is mapped to iv", field="partition", value=partition)
    return out


def lvis_frequency_groups(lvis: dict, partition: Mapping[str, str] | str | None = None,
                          file: str | None = None) -> dict[str, list[str]]:
    """Category names of an LVIS annotation dict grouped by ``partition`` (see the module docstring):
    ``{"iv": [...], "novel": [...], "oov": [...]}`` in the file's category order (``drop`` ones left out).

    Raises:
        DataError: a category without a ``frequency`` in ``f`` / ``c`` / ``r`` (naming its index), a bad partition.
    """
    part = _parse_partition(partition)
    if not isinstance(lvis.get("categories"), list):
        raise DataError("missing or non-list 'categories'", file=file, field="categories")
    groups: dict[str, list[str]] = {"iv": [], "novel": [], "oov": []}
    for i, cat in enumerate(lvis["categories"]):
        freq = cat.get("frequency") if isinstance(cat, dict) else None
        if freq not in part:
            raise DataError("an LVIS category needs 'frequency' f, c or r", file=file,
                            field=f"categories[{i}].frequency", value=freq)
        if not isinstance(cat.get("name"), str):
            raise DataError("a category needs 'name'", file=file, field=f"categories[{i}].name", value=cat.get("name"))
        if part[freq] != "drop":
            groups[part[freq]].append(cat["name"])
    return groups


def _lvis_file_name(img: dict, index: int, file: str | None) -> str:
    """``file_name`` of an LVIS image: its own, else ``<folder>/<file>`` of ``coco_url``."""
    if isinstance(img.get("file_name"), str) and img["file_name"]:
        return img["file_name"]
    url = img.get("coco_url")
    parts = PurePosixPath(urlparse(url).path).parts if isinstance(url, str) else ()
    if len(parts) < 3 or any(p in ("", ".", "..") for p in parts[-2:]):
        raise DataError("an LVIS image needs 'file_name' or a 'coco_url' ending in <folder>/<file>", file=file,
                        field=f"images[{index}].coco_url", value=url)
    return f"{parts[-2]}/{parts[-1]}"


def _ignore_region(ann_id: int, image: dict, category_id: int) -> dict:
    """A whole-image crowd (ignore) annotation of ``category_id``: bbox, area and full-image RLE."""
    w, h = int(image["width"]), int(image["height"])
    rle = encode_mask(np.ones((h, w), bool))
    return {"id": ann_id, "image_id": int(image["id"]), "category_id": category_id,
            "bbox": [0.0, 0.0, float(w), float(h)], "area": float(w * h), "iscrowd": 1, "segmentation": rle,
            "ignore": "not_exhaustive"}


def prepare_lvis_oov_split(lvis: dict, partition: Mapping[str, str] | str | None = None, mode: str = "test",
                           image_prefix: str = "", file: str | None = None) -> dict:
    """Return the open-set split built from an LVIS v1 annotation dict (not modified), its categories partitioned
    by ``frequency`` (:func:`lvis_frequency_groups`); file names, ``iscrowd``, ``neg_category_ids`` and
    ``not_exhaustive_category_ids`` are handled as the module docstring says; otherwise as
    :func:`prepare_oov_split` (``mode``, ``image_prefix``). ``info.lvis_partition`` records the partition and
    ``info.not_exhaustive_ignore_regions`` the number of ignore regions added.

    Raises:
        DataError: a malformed source (naming the field), a bad partition or mode.
    """
    for key in ("images", "annotations", "categories"):
        if not isinstance(lvis.get(key), list):
            raise DataError(f"missing or non-list {key!r}", file=file, field=key)
    groups = lvis_frequency_groups(lvis, partition, file)
    source = {k: v for k, v in lvis.items() if k not in ("images", "annotations")}
    source["images"] = []
    for i, img in enumerate(lvis["images"]):
        if not isinstance(img, dict) or "id" not in img:
            raise DataError("an image needs 'id'", file=file, field=f"images[{i}]", value=img)
        source["images"].append(dict(img, file_name=_lvis_file_name(img, i, file)))
    source["annotations"] = [a if "iscrowd" in a else dict(a, iscrowd=0) for a in lvis["annotations"]]
    out = prepare_oov_split(source, groups["iv"], groups["novel"], groups["oov"], mode, image_prefix, file=file)
    kept = {int(c["id"]) for c in out["categories"]}
    ann_id = max((int(a["id"]) for a in lvis["annotations"]), default=0) + 1
    regions = []
    for img in out["images"]:
        for key in ("neg_category_ids", "not_exhaustive_category_ids"):
            ids = img.get(key, [])
            if not isinstance(ids, list):
                raise DataError("expected a list of category ids", file=file, field=f"images[id={img['id']}].{key}",
                                value=ids)
            img[key] = sorted(int(c) for c in ids if int(c) in kept)
        if mode == "test":
            for cid in img["not_exhaustive_category_ids"]:
                regions.append(_ignore_region(ann_id, img, cid))
                ann_id += 1
    out["annotations"] += regions
    part = _parse_partition(partition)
    out["info"].update({"lvis_partition": part, "not_exhaustive_ignore_regions": len(regions)})
    return out


def _split_name(split: str) -> str:
    """``split`` checked as a plain file stem (the split is written as ``OUT/<split>.json``)."""
    if not split or "/" in split or "\\" in split or split.startswith("."):
        raise InputError(f"split must be a plain file stem, got {split!r}")
    return split


def main(argv: Sequence[str] | None = None) -> int:
    """Parse ``argv`` (None: ``sys.argv[1:]``), convert and write the split; 0 on success, 2 with one ``error:``
    line naming the file and field when the annotations or category lists are bad."""
    parser = converter_parser(__doc__, full_doc=True)
    parser.add_argument("--annotations", required=True, help="COCO instances JSON")
    parser.add_argument("--iv", default=None, help="comma-separated IV names, or 'voc'")
    parser.add_argument("--by-frequency", nargs="?", const="f=iv,c=novel,r=oov", default=None, metavar="SPEC",
                        help="LVIS: partition categories by frequency (default f=iv,c=novel,r=oov; 'drop' removes)")
    parser.add_argument("--novel", default=None, help="comma-separated novel names (named only at test)")
    parser.add_argument("--oov", default=None, help="comma-separated OOV names (default: every other category)")
    parser.add_argument("--mode", choices=MODES, default="test")
    parser.add_argument("--image-prefix", default="", help="prefix of image file names, relative to --out")
    add_out(parser, help="output folder: the split is written as OUT/<split>.json")
    parser.add_argument("--split", default=None, help="JSON file stem (default: the mode, train or test)")
    parser.add_argument("--check-files", action="store_true", help="check that every image file exists")
    return run(parser, argv, _convert)


def _convert(args: argparse.Namespace) -> list[str]:
    folder = output_folder(args.out)
    out = folder / f"{_split_name(args.split or args.mode)}.json"
    source = read_json(args.annotations)
    if args.by_frequency is not None:
        if args.iv or args.novel or args.oov:
            raise DataError("--by-frequency replaces --iv / --novel / --oov; give one or the other",
                            field="--by-frequency", value=args.by_frequency)
        if not isinstance(source, dict):
            raise DataError("expected a JSON object", file=args.annotations)
        split = prepare_lvis_oov_split(source, args.by_frequency, args.mode, args.image_prefix,
                                       file=args.annotations)
    else:
        if not args.iv:
            raise DataError("give --iv (category names or 'voc') or --by-frequency (LVIS)", field="--iv")
        split = prepare_oov_split(source, args.iv, args.novel, args.oov, args.mode, args.image_prefix,
                                  file=args.annotations)
    if args.check_files:  # the images lie in OUT, not beside the staged split
        validate_split(split, folder, str(out), check_files=True)
    with staged_output(folder) as stage:
        write_split(stage / out.name, split, check_files=False)
    return [f"{out}: {len(split['images'])} images, {len(split['annotations'])} annotations, "
            f"{len(split['categories'])} categories ({args.mode})"]
