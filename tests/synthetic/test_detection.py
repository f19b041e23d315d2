"""Tests of the synthetic OOV detection splits (vision.synthetic.detection)."""

from __future__ import annotations

from pathlib import Path

import pytest

from vision.data.coco import load_split, read_json
from vision.synthetic.detection import derive_train_split, write_oov_synthetic


@pytest.fixture(scope="module")
def oov_splits(tmp_path_factory) -> dict[str, Path]:
    """Tiny synthetic OOV splits (64 px): train 3 scenes x 2 views, val 1 x 2, test 2 x 2."""
    out = tmp_path_factory.mktemp("oov")
    return write_oov_synthetic(out, train_scenes=3, val_scenes=1, test_scenes=2, views=2, size=64, seed=0)


def test_derive_train_split_keeps_only_iv_annotations():
    ds = {"info": {}, "images": [{"id": 1}, {"id": 2}],
          "annotations": [{"id": 1, "image_id": 1, "category_id": 1}, {"id": 2, "image_id": 1, "category_id": 2},
                          {"id": 3, "image_id": 2, "category_id": 3}],
          "tracks": [{"id": 1, "category_id": 1}, {"id": 2, "category_id": 2}],
          "categories": [{"id": 1, "name": "a", "split": "iv"}, {"id": 2, "name": "b", "split": "oov"},
                         {"id": 3, "name": "c"}]}
    out = derive_train_split(ds)
    assert [a["id"] for a in out["annotations"]] == [1, 3]  # no split = iv
    assert [t["id"] for t in out["tracks"]] == [1]
    assert len(out["images"]) == 2 and out["info"]["vocabulary"] == ["a", "c"]
    assert len(ds["annotations"]) == 3  # input untouched


def test_synthetic_oov_splits(oov_splits):
    train, test = load_split(oov_splits["train"]), load_split(oov_splits["test"])
    splits = {c["name"]: c["split"] for c in test.categories.values()}
    assert {"iv", "novel", "oov"} <= set(splits.values())
    # training: only iv annotations, no novel category at all, but oov objects are in the rendered pixels
    train_cats = {c["id"]: c["split"] for c in train.categories.values()}
    assert "novel" not in train_cats.values()
    assert all(train_cats[a["category_id"]] == "iv" for a in train.dataset["annotations"])
    rendered = read_json(oov_splits["train"].parent / "oov_render.json")
    assert len(rendered["images"]) == len(train.dataset["images"])
    assert train.given_vocabulary() == train.vocabulary(("iv",))
    assert set(test.given_vocabulary()) == {n for n, s in splits.items() if s in ("iv", "novel")}
    assert any(splits[test.categories[a["category_id"]]["name"]] != "iv" for a in test.dataset["annotations"])
    oov_in_train = [a for a in rendered["annotations"] if train_cats[a["category_id"]] == "oov"]
    assert oov_in_train, "the tiny fixture should contain at least one unannotated oov object"
