"""The synthetic OOV split: IV-only training annotations, OOV objects unannotated, novel classes only at test.

:func:`write_oov_synthetic` renders (with :func:`vision.synthetic.scenes.write_split`)

- ``<name>_render`` for training: scenes drawn from the ``iv`` and ``oov`` categories only (novel classes are never
  seen in training), then :func:`derive_train_split` writes ``<name>_train.json``: same images, annotations
  only for ``iv`` categories (``oov`` objects stay in the pixels, unannotated), ``info.vocabulary`` = iv names;
- ``<name>_val`` and ``<name>_test``: every category (iv + novel + oov), all annotated, ``info.vocabulary`` =
  iv + novel names (what a detector may be given; oov objects must come out as "unknown").

Category ids are the generator's (``CATEGORIES.index(name) + 1``), the same in every split.
"""

from __future__ import annotations

import copy
from pathlib import Path

from vision.data.coco import write_split as write_coco_split
from vision.errors import DataError
from vision.synthetic.scenes import format_vocab, parse_vocab, write_split

__all__ = ["derive_train_split", "write_oov_synthetic"]


def derive_train_split(dataset: dict, keep_splits: tuple[str, ...] = ("iv",), file: str | None = None) -> dict:
    """A copy of ``dataset`` whose annotations (and tracks) keep only categories with ``split`` in ``keep_splits``
    (a category without ``split`` counts as ``iv``). Images are all kept; ``info.vocabulary`` becomes the kept
    names and ``info.derived_from`` records the rule."""
    if not isinstance(dataset, dict) or not isinstance(dataset.get("categories"), list):
        raise DataError("expected a COCO split with a 'categories' list", file=file, field="categories")
    out = copy.deepcopy(dataset)
    keep = {int(c["id"]) for c in out["categories"] if c.get("split", "iv") in keep_splits}
    out["annotations"] = [a for a in out.get("annotations", []) if int(a["category_id"]) in keep]
    if "tracks" in out:
        out["tracks"] = [t for t in out["tracks"] if int(t["category_id"]) in keep]
    info = out.setdefault("info", {})
    info["vocabulary"] = [c["name"] for c in sorted(out["categories"], key=lambda c: c["id"]) if c["id"] in keep]
    info["derived_from"] = {"rule": "annotations kept only for category splits " + ",".join(keep_splits)}
    return out


def write_oov_synthetic(out_dir: str | Path, name: str = "oov", train_scenes: int = 40, val_scenes: int = 8,
                        test_scenes: int = 16, views: int = 4, size: int = 64, seed: int = 0,
                        vocab: str | dict | None = None, threads: int = 1) -> dict[str, Path]:
    """Render and write the three splits; returns ``{"train", "val", "test"}`` -> JSON paths.

    Args:
        out_dir: folder of the JSON files (image files go in sub-folders named after the rendered splits).
        name: prefix of the split names. *_scenes: scenes per split; views: images per scene (unordered views).
        size: image side in pixels. seed: generator seed. vocab: iv / novel / oov split (default: the generator's).
        threads: open3d ray-casting threads.
    """
    vocabulary = parse_vocab(vocab)
    train_vocab = {"iv": vocabulary["iv"], "novel": (), "oov": vocabulary["oov"]}
    out_dir = Path(out_dir)
    render = write_split(out_dir, f"{name}_render", train_scenes, views, size, "unordered", seed,
                         format_vocab(train_vocab), threads=threads)
    from vision.data.coco import read_json

    train = derive_train_split(read_json(render), file=str(render))
    train_path = out_dir / f"{name}_train.json"
    write_coco_split(train_path, train)
    paths = {"train": train_path}
    for split, scenes in (("val", val_scenes), ("test", test_scenes)):
        paths[split] = write_split(out_dir, f"{name}_{split}", scenes, views, size, "unordered", seed,
                                   format_vocab(vocabulary), threads=threads)
    return paths


def main(argv: list[str] | None = None) -> None:
    """CLI: ``python -m vision.synthetic.detection --out datasets/synthetic [--train-scenes 480 ...]``.

    480 training scenes x 4 views (1920 images): with the first 60 scenes alone the detector learned its training
    images (IV AP50 32 on them, 5 on the test split; ``benchmarks/diagnose_oovdet.py``). The validation and test
    scenes do not depend on the number of training scenes (each scene's seed is salted by its split's name)."""
    import argparse

    parser = argparse.ArgumentParser(description="render the synthetic OOV detection splits")
    parser.add_argument("--out", default="datasets/synthetic")
    parser.add_argument("--name", default="oov")
    parser.add_argument("--train-scenes", type=int, default=480)
    parser.add_argument("--val-scenes", type=int, default=4)
    parser.add_argument("--test-scenes", type=int, default=20)
    parser.add_argument("--views", type=int, default=4)
    parser.add_argument("--size", type=int, default=64)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    paths = write_oov_synthetic(args.out, args.name, args.train_scenes, args.val_scenes, args.test_scenes,
                                args.views, args.size, args.seed)
    for key, path in paths.items():
        print(f"{key}: {path}")


if __name__ == "__main__":
    main()
