"""vision.provenance: what a checkpoint says of itself, in the words the demo and the concept CLI print."""

from __future__ import annotations

import json
from pathlib import Path

import torch

from vision.provenance import read_provenance


def _checkpoint(folder: Path, config: dict) -> Path:
    folder.mkdir(parents=True)
    split = folder / "train.json"
    split.write_text(json.dumps({"info": {"teacher": {"name": "yolox-nano"}}}))
    path = folder / "real" / "checkpoints" / "last.ckpt"
    path.parent.mkdir(parents=True)
    torch.save({"state_dict": {}, "task": "detection",
                "hyper_parameters": {"config": config, "class_names": ["person", "dog"]},
                "datamodule_hyper_parameters": {"train_split": str(split)}}, path)
    return path


def test_a_pretrained_body_is_named_and_the_trained_body_is_not(tmp_path: Path) -> None:
    yolox = read_provenance(_checkpoint(tmp_path / "a", {"body": "yolox-nano"}))
    assert yolox.body == "yolox-nano" and yolox.real is True
    assert str(yolox) == ("real/checkpoints/last.ckpt (on the pretrained yolox-nano body, trained on real frames, "
                          "teacher-labelled (yolox-nano), 2 known classes)")
    dense = read_provenance(_checkpoint(tmp_path / "b", {"body": "vggt"}))
    assert dense.body is None
    assert str(dense) == ("real/checkpoints/last.ckpt (trained on real frames, teacher-labelled (yolox-nano), "
                          "2 known classes)")
