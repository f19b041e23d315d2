"""Check a paper-scale recipe's inputs before any GPU time is spent (``make recipe-<name>``, or
``python -m vision.cli.recipe NAME [--run] [--a.b.c VALUE ...]``).

A recipe is a config under ``configs/<task>/`` (docs/recipes.md). The checker reads the config (YAML, composed with
its ``base:`` files as ``vision-train`` composes it, :mod:`vision.training.compose`; with the same ``--a.b.c VALUE``
overrides ``vision-train`` takes) and lists every file it expects:

- each split of ``data.init_args`` (``train_split`` (a path or a list), ``val_split``, ``test_split``,
  ``predict_split``) and, in each split that exists, every file it names (``images[].file_name``,
  ``images[].depth_file``, ``videos[].file_name``, relative to the split's folder);
- each weight file of ``model.init_args`` (``vggt_weights``, ``sam2_weights``, ``geometry_checkpoint``,
  ``config.patch_embed_weights``), and the registered pretrained files its forensic tools read
  (:data:`vision.forensics.tools.TOOL_WEIGHTS`, fetched by ``vision-fetch-weights``).

For a missing split it prints the command that prepares it (:data:`PREPARE`: one rule per converted dataset) and
the raw download that command reads, if that is missing too; for a missing weight file, where to get it
(:data:`WEIGHTS`). Anything missing: one ``error:`` line and exit status 2. Everything present: the training command
is printed, and run with ``--run`` (:func:`vision.cli.train.main`, in this process).
"""

from __future__ import annotations

import argparse
import re
import shlex
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from vision.data.files import read_json
from vision.data.io import resolve_inside
from vision.errors import DataError, InputError, VisionError
from vision.training.compose import compose

__all__ = ["RECIPES", "PREPARE", "WEIGHTS", "Item", "config_path", "load_config", "prepare_command", "check",
           "train_command", "main"]

ROOT = Path(__file__).resolve().parents[2]

#: recipe name (``make recipe-<name>``) -> its config, relative to the repository.
RECIPES: dict[str, str] = {
    "detection-voc": "configs/detection/oovdet_oov_voc.yaml",
    "detection-coco": "configs/detection/oovdet_oov_coco.yaml",
    "tracking": "configs/tracking/g2tam_vggt1b_sam2_vos_co3d.yaml",
    "geometry": "configs/geometry/vggt_1b_co3d.yaml",
    "forensics": "configs/forensics/genvideo.yaml",
}

_TEST_MODE = {"train": "train", "val": "test"}


@dataclass(frozen=True)
class Rule:
    """How a split whose path matches ``pattern`` is made: ``command`` and the raw input ``needs`` (both formatted
    with the match's named groups and ``mode``), and where that raw input comes from (``source``)."""

    pattern: str
    command: str
    needs: str
    source: str


#: One rule per converted dataset the recipes read.
PREPARE: tuple[Rule, ...] = (
    Rule(r"datasets/real/real_(?:voc|coco)_(?:train|val|test)\.json",
         "make data-real",
         "datasets/opencv_samples",
         "OpenCV's sample videos (make data-real fetches them with apt-get download; ../shared/footage is optional)"),
    Rule(r"datasets/coco/oov_voc_(?P<side>train|val)\.json",
         "vision-prepare-oov-coco --annotations datasets/coco/annotations/instances_{side}2017.json --iv voc "
         "--mode {mode} --image-prefix {side}2017 --out datasets/coco --split oov_voc_{side}",
         "datasets/coco/annotations/instances_{side}2017.json",
         "COCO 2017 annotations_trainval2017.zip and {side}2017.zip from cocodataset.org, unpacked in datasets/coco"),
    Rule(r"datasets/coco/oov_lvis_(?P<side>train|val)\.json",
         "vision-prepare-oov-coco --annotations datasets/coco/annotations/lvis_v1_{side}.json --by-frequency "
         "--mode {mode} --out datasets/coco --split oov_lvis_{side}",
         "datasets/coco/annotations/lvis_v1_{side}.json",
         "lvis_v1_{side}.json from lvisdataset.org in datasets/coco/annotations, beside COCO 2017's train2017/ and "
         "val2017/ folders in datasets/coco"),
    Rule(r"datasets/davis2017/(?P<side>train|val)\.json",
         "vision-prepare-vos datasets/DAVIS --layout davis --subset {side} --out datasets/davis2017",
         "datasets/DAVIS",
         "DAVIS 2017 TrainVal 480p from davischallenge.org, unpacked as datasets/DAVIS"),
    Rule(r"datasets/ytvos/(?P<side>train)\.json",
         "vision-prepare-vos datasets/youtube-vos --layout youtube --subset {side} --out datasets/ytvos",
         "datasets/youtube-vos/{side}",
         "YouTube-VOS 2019 train (JPEGImages, Annotations, meta.json) from youtube-vos.org, in datasets/youtube-vos"),
    Rule(r"datasets/mose/(?P<side>train)\.json",
         "vision-prepare-vos datasets/MOSE --layout mose --subset {side} --out datasets/mose",
         "datasets/MOSE/{side}",
         "MOSE train.tar.gz from henghuiding.github.io/MOSE, unpacked in datasets/MOSE"),
    Rule(r"datasets/co3d/(?P<category>[a-z]+)/(?P<side>train|val|test)\.json",
         "vision-prepare-co3d datasets/CO3D --category {category} --set-list fewview_dev --subset {side} --depth "
         "--out datasets/co3d/{category}",
         "datasets/CO3D/{category}",
         "CO3Dv2 category {category} (facebookresearch/co3d download_dataset.py), unpacked in datasets/CO3D"),
    Rule(r"datasets/genvideo_unseen_(?P<generator>[A-Za-z0-9_.-]+)/(?P<side>train|val|test)\.json",
         "vision-prepare-genvideo datasets/GenVideo --holdout {generator} --out datasets/genvideo_unseen_{generator} "
         "--link",
         "datasets/GenVideo/fake/{generator}",
         "GenVideo (DeMamba's release) arranged as real/**.mp4 and fake/<generator>/**.mp4 in datasets/GenVideo"),
    Rule(r"datasets/genvideo/(?P<side>train|val|test)\.json",
         "vision-prepare-genvideo datasets/GenVideo --out datasets/genvideo --link",
         "datasets/GenVideo",
         "GenVideo (DeMamba's release) arranged as real/**.mp4 and fake/<generator>/**.mp4 in datasets/GenVideo"),
)

#: weight file -> where it comes from (placed by hand: nothing is downloaded here).
WEIGHTS: dict[str, str] = {
    "checkpoints/vggt_1b/model.pt": "model.pt of facebook/VGGT-1B (its model page); place it there",
    "checkpoints/sam2.1_hiera_large.pt": "sam2.1_hiera_large.pt of SAM 2.1 (facebookresearch/sam2 checkpoints); "
                                        "place it there",
}

_SPLIT_FIELDS = ("train_split", "val_split", "test_split", "predict_split")
_WEIGHT_FIELDS = ("vggt_weights", "sam2_weights", "geometry_checkpoint", "config.patch_embed_weights")
#: files of a split that are listed one by one (the rest are counted)
_SHOWN = 3


@dataclass(frozen=True)
class Item:
    """One thing a recipe reads: ``path`` (as the config names it), the config ``field`` naming it, whether it is
    ``present``, what is wrong (``problem``, empty when present) and what makes it (``remedy``)."""

    path: str
    field: str
    present: bool
    problem: str = ""
    remedy: str = ""


def config_path(name: str) -> Path:
    """The config of recipe ``name`` (a key of :data:`RECIPES`) or a YAML path, relative to the working folder or
    else to the repository."""
    relative = RECIPES.get(name, name)
    for path in (Path(relative), ROOT / relative):
        if path.is_file():
            return path
    known = ", ".join(RECIPES)
    raise InputError(f"no recipe or config {name!r} (recipes: {known}; or a path to a YAML config)")


def load_config(path: str | Path, overrides: Sequence[str] = ()) -> dict:
    """The YAML config at ``path``, composed with its bases (:func:`vision.training.compose.compose`), with
    ``--a.b.c VALUE`` overrides applied (each value read as YAML).

    Raises:
        DataError: the file (or a base) is missing, unreadable or not a YAML mapping, or its bases do not compose.
            InputError: an override without a value or not a ``--`` option.
    """
    config = compose(path)
    items = list(overrides)
    if len(items) % 2:
        raise InputError(f"overrides come in pairs --a.b.c VALUE; {items[-1]!r} has no value")
    for key, value in zip(items[::2], items[1::2]):
        if not key.startswith("--") or len(key) < 3:
            raise InputError(f"an override is --a.b.c VALUE; got {key!r}")
        node = config
        *parents, leaf = key[2:].split(".")
        for part in parents:
            if not isinstance(node.get(part), dict):
                node[part] = {}
            node = node[part]
        node[leaf] = yaml.safe_load(value)
    return config


def prepare_command(split: str) -> tuple[str, str | None, str] | None:
    """``(command, raw input it reads, where that comes from)`` for a split path of :data:`PREPARE`, else None."""
    for rule in PREPARE:
        match = re.fullmatch(rule.pattern, Path(split).as_posix())
        if match:
            fields = dict(match.groupdict())
            fields["mode"] = _TEST_MODE.get(fields.get("side", ""), "test")
            return rule.command.format(**fields), rule.needs.format(**fields), rule.source.format(**fields)
    return None


def _get(config: dict, dotted: str) -> Any:
    node: Any = config
    for part in dotted.split("."):
        if not isinstance(node, dict):
            return None
        node = node.get(part)
    return node


def _split_paths(config: dict) -> list[tuple[str, str]]:
    """``(field, path)`` of every split the config's data section names, each path once."""
    out: list[tuple[str, str]] = []
    for field in _SPLIT_FIELDS:
        value = _get(config, f"data.init_args.{field}")
        values = value if isinstance(value, list) else [value]
        for i, path in enumerate(values):
            if isinstance(path, str) and path and path not in [p for _, p in out]:
                out.append((f"data.init_args.{field}" + (f"[{i}]" if isinstance(value, list) else ""), path))
    return out


def _missing_files(split: Path) -> tuple[int, list[str]]:
    """``(number of files the split names, the missing ones)``; a name escaping the split's folder counts as
    missing (with the reason)."""
    doc = read_json(split)
    names: list[tuple[str, str]] = []
    for key, fields in (("images", ("file_name", "depth_file")), ("videos", ("file_name",))):
        entries = doc.get(key) if isinstance(doc, dict) else None
        for i, entry in enumerate(entries if isinstance(entries, list) else []):
            for field in fields:
                if isinstance(entry, dict) and field in entry:
                    names.append((f"{key}[{i}].{field}", entry[field]))
    missing = []
    for field, name in names:
        try:
            path = resolve_inside(split.parent, name, file=split, field=field)
        except DataError as exc:
            missing.append(str(exc))
            continue
        if not path.exists():
            missing.append(str(Path(split.parent, name)))
    return len(names), missing


def _split_item(field: str, path: str) -> Item:
    prepared = prepare_command(path)
    split = Path(path)
    if split.is_file():
        try:
            total, missing = _missing_files(split)
        except DataError as exc:
            return Item(path, field, False, f"unreadable split ({exc})", prepared[0] if prepared else "")
        if not missing:
            return Item(path, field, True)
        shown = "; ".join(missing[:_SHOWN]) + (f"; and {len(missing) - _SHOWN} more" if len(missing) > _SHOWN else "")
        return Item(path, field, False, f"{len(missing)} of the {total} files it names are missing: {shown}",
                    "put the dataset's files back where the split was converted from, or convert it again: "
                    + (prepared[0] if prepared else "(no converter rule for this path)"))
    if prepared is None:
        return Item(path, field, False, "split not found", "no converter rule for this path: write or convert it "
                    "(docs/recipes.md)")
    command, needs, source = prepared
    remedy = command
    if needs and not Path(needs).exists():
        remedy += f"  (it reads {needs}, also missing: {source})"
    return Item(path, field, False, "split not found", remedy)


def _weight_item(field: str, path: str) -> Item:
    from vision.weights import weight_names

    if path in weight_names():  # a registered file named by its registry name (a pretrained patch embedding)
        return _registered_item(path, field)
    if Path(path).is_file():
        return Item(path, field, True)
    source = WEIGHTS.get(Path(path).as_posix(), "place the file there, or name another with " + field)
    return Item(path, field, False, "weight file not found", source)


def _registered_items(config: dict) -> list[Item]:
    """The registered pretrained files (:mod:`vision.weights`) the config's forensic tools read, each checked in the
    weights folder by sha256; the remedy is the ``vision-fetch-weights`` command."""
    from vision.forensics.tools import TOOL_WEIGHTS

    tools = _get(config, "model.init_args.config.tools")
    names = dict.fromkeys(w for tool in (tools if isinstance(tools, list) else []) for w in TOOL_WEIGHTS.get(tool, ()))
    return [_registered_item(name, "model.init_args.config.tools") for name in names]


def _registered_item(name: str, field: str) -> Item:
    """The registered pretrained file ``name`` in the weights folder, checked by sha256 (the remedy: its
    ``vision-fetch-weights`` command)."""
    from vision.weights import WeightsError, weights_dir, weights_path
    from vision.weights.registry import entry

    path = str(weights_dir() / entry(name).file)
    try:
        weights_path(name)
        return Item(path, field, True)
    except WeightsError:
        problem = "weight file not found" if not Path(path).is_file() else "not the registered file (sha256)"
        return Item(path, field, False, problem, f"vision-fetch-weights {name} (make weights)")


def check(config: dict) -> list[Item]:
    """Every split, file the splits name, and weight file the parsed ``config`` reads (paths relative to the
    working folder; the registered pretrained files of its forensic tools in the weights folder), each an
    :class:`Item`: present or what is missing and how to make it."""
    items = [_split_item(field, path) for field, path in _split_paths(config)]
    for field in _WEIGHT_FIELDS:
        path = _get(config, f"model.init_args.{field}")
        if isinstance(path, str) and path:
            items.append(_weight_item(f"model.init_args.{field}", path))
    return items + _registered_items(config)


def train_command(config: str | Path, overrides: Sequence[str] = ()) -> list[str]:
    """The ``vision-train fit`` command line of a recipe."""
    return ["vision-train", "fit", "--config", str(config), *overrides]


def main(argv: Sequence[str] | None = None) -> int:
    """Check a recipe: print every input, present or missing (with the command that makes it); 2 with one
    ``error:`` line if anything is missing, else print the training command (run it with ``--run``) and return 0
    (or the training's status)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                     epilog="Further --a.b.c VALUE pairs override the config, as vision-train's do.")
    parser.add_argument("recipe", help=f"one of {', '.join(RECIPES)}, or a config path")
    parser.add_argument("--run", action="store_true", help="run the training when everything is present")
    args, overrides = parser.parse_known_args(argv)
    try:
        path = config_path(args.recipe)
        items = check(load_config(path, overrides))
    except VisionError as exc:
        print(f"error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2
    for item in items:
        if item.present:
            print(f"ok       {item.path}  ({item.field})")
        else:
            print(f"MISSING  {item.path}  ({item.field}): {item.problem}\n         -> {item.remedy}")
    missing = [item for item in items if not item.present]
    if missing:
        print(f"error: {len(missing)} of the {len(items)} inputs of {path} are missing (listed above with the command "
              f"that makes each); nothing was run", file=sys.stderr)
        return 2
    command = train_command(path, overrides)
    print("everything is in place; train with:\n  " + shlex.join(command))
    if not args.run:
        return 0
    from vision.cli.train import main as train_main

    train_main(command[1:])
    return 0


if __name__ == "__main__":
    sys.exit(main())
