"""ForensicFeatureDataModule: cgi videos are neither class (never trained or calibrated on, scored at test), and
leave-family-out drops whole families from training and validation only."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np

from vision.forensics.lightning import ForensicFeatureDataModule


def _relabelled(split: Path, out: Path) -> Path:
    """``split`` with its first generated video relabelled ``cgi`` and the generated ones given a family
    (simA -> famA, simB -> famB)."""
    data = json.loads(split.read_text())
    first = True
    for video in data["videos"]:
        if video["label"] == "generated":
            video["family"] = {"simA": "famA", "simB": "famB"}[video["generator"]]
            if first:
                video.update(label="cgi", generator="cgi", family="cgi")
                first = False
    path = out / split.name
    path.write_text(json.dumps(data))
    return path


def test_cgi_is_left_out_of_training_and_validation_but_scored_at_test(tiny_split, tmp_path):
    shutil.copytree(tiny_split["root"] / "videos", tmp_path / "videos")
    train, val = _relabelled(tiny_split["train"], tmp_path), _relabelled(tiny_split["val"], tmp_path)
    dm = ForensicFeatureDataModule(str(train), str(val), tools=["spectrum"], image_size=48, max_frames=8,
                                   test_split=str(val))
    _, y = dm.train_features()
    assert sorted(set(y.tolist())) == [0, 1] and len(y) == 11  # 12 videos, one is cgi
    assert len(dm.eval_dataset("validate")) == 7
    test = dm.eval_dataset("test")
    assert len(test) == 8 and (test.labels == -1).sum() == 1


def test_exclude_families_drops_a_family_from_training_and_validation(tiny_split, tmp_path):
    shutil.copytree(tiny_split["root"] / "videos", tmp_path / "videos")
    train, val = _relabelled(tiny_split["train"], tmp_path), _relabelled(tiny_split["val"], tmp_path)
    dm = ForensicFeatureDataModule(str(train), str(val), tools=["spectrum"], image_size=48, max_frames=8,
                                   exclude_families=["famA"])
    _, y, videos = dm.features(str(train), exclude=True)
    assert all(v["family"] != "famA" and v["generator"] != "cgi" for v in videos)
    assert np.array_equal(np.unique(y), [0, 1])
    _, _, kept = dm.features(str(val), exclude=False)
    assert any(v["family"] == "famA" for v in kept)


def test_exclude_footage_drops_every_clip_drawing_on_it(tiny_split, tmp_path):
    """Leave-one-source-out: a clip is held out when its source, the video its still was cut from, or its splice
    donor is the held-out footage."""
    shutil.copytree(tiny_split["root"] / "videos", tmp_path / "videos")
    data = json.loads(tiny_split["train"].read_text())
    for i, video in enumerate(data["videos"]):
        video["source"] = ["bikes", "carphone", "carphone_frame0012", "carphone"][i % 4]
        if i % 4 == 3:
            video["donor"] = "bikes"
    train = tmp_path / "train.json"
    train.write_text(json.dumps(data))
    dm = ForensicFeatureDataModule(str(train), str(tiny_split["val"]), tools=["spectrum"], image_size=48,
                                   max_frames=8, exclude_footage=["bikes"])
    _, _, kept = dm.features(str(train), exclude=True)
    assert {v["source"] for v in kept} == {"carphone", "carphone_frame0012"}
    assert all(v["donor"] is None for v in kept)
    assert len(kept) == len(data["videos"]) // 2
