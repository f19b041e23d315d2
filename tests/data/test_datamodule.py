"""MultiViewDataModule.category_names: the names absent-category text prompts are drawn from."""

from __future__ import annotations

import json

import pytest

from vision.data.datamodule import MultiViewDataModule
from vision.synthetic.scenes import write_split


@pytest.fixture(scope="module")
def splits(tmp_path_factory):
    root = tmp_path_factory.mktemp("names")
    train = write_split(root, "train", scenes=1, views=2, size=16, mode="video", seed=0, max_objects=2, threads=1,
                        vocab="iv=cube,snowman;oov=mug")
    val = write_split(root, "val", scenes=1, views=2, size=16, mode="video", seed=1, max_objects=2, threads=1,
                      vocab="iv=sphere")
    return train, val


def test_names_come_from_the_training_splits_in_id_order_else_the_evaluation_splits(splits):
    train, val = (str(p) for p in splits)
    expected = [c["name"] for c in sorted(json.loads(open(train).read())["categories"], key=lambda c: c["id"])]
    fitting = MultiViewDataModule([train], val, views=2, augment=False)
    assert fitting.category_names() == ()  # nothing read yet
    fitting.setup("fit")
    assert list(fitting.category_names()) == expected == ["cube", "mug", "snowman"]
    validating = MultiViewDataModule([train], val, views=2, augment=False)
    validating.setup("validate")
    assert validating.category_names() == ("sphere",)
