"""The vocabulary travels with the detection results: ``vision-predict --task detection`` writes each result's
``category_name`` beside its id (the position in the user's vocabulary), and ``vision-evaluate`` scores it under the
split's id of that name, so a split whose ids 1..K mean other classes is scored against the right ones."""

from __future__ import annotations

import json

import cv2
import numpy as np
import pytest
import torch

import vision.detection.vocabulary as vocabulary_module
from tests.cli.conftest import write_task_checkpoint
from vision.cli import evaluate as evaluate_cli
from vision.cli.predict import main as predict_main
from vision.detection.results import UNKNOWN_CATEGORY_ID, UNKNOWN_NAME, coco_results, image_results
from vision.evaluation.evaluate import evaluate
from vision.evaluation.tasks.detection import UNKNOWN_NAME as EVALUATED_UNKNOWN_NAME


def test_the_scorer_and_the_predictor_name_rejected_objects_alike():
    assert EVALUATED_UNKNOWN_NAME == UNKNOWN_NAME


def test_the_training_results_carry_no_names():
    """``tools/train.py test`` / ``predict`` results (ids of the training split) are written as before."""
    det = {"boxes": torch.tensor([[1.0, 2.0, 5.0, 6.0], [0.0, 0.0, 3.0, 3.0]]), "scores": torch.tensor([0.9, 0.4]),
           "labels": torch.tensor([1, -1])}
    (image_id, results), = image_results([det], [7], [(8, 8)], {7: {"width": 16, "height": 8}}, ["mug", "cup"],
                                         [4, 9])
    assert image_id == 7 and [sorted(r) for r in results] == [["bbox", "category_id", "image_id", "score"]] * 2
    assert [r["category_id"] for r in results] == [9, UNKNOWN_CATEGORY_ID]
    named = coco_results([{"boxes": np.zeros((1, 4), np.float32), "scores": np.ones(1, np.float32),
                           "category_ids": np.array([3]), "labels": ["cup"]}], [1], names=True)
    assert named == [{"image_id": 1, "category_id": 3, "category_name": "cup", "bbox": [0.0, 0.0, 0.0, 0.0],
                      "score": 1.0}]


@pytest.fixture
def predicted(tmp_path, fake_encoder, monkeypatch):
    """``vision-predict --task detection --vocabulary "dog,cat"`` on one image with a tiny untrained detector:
    the results file it writes."""
    monkeypatch.setattr(vocabulary_module, "shared_text_encoder", lambda name="minilm": fake_encoder)
    checkpoint, _ = write_task_checkpoint(tmp_path / "detector.ckpt", "detection", channels=32, score_threshold=0.0,
                                          max_detections=40)
    image = tmp_path / "image.png"
    cv2.imwrite(str(image), np.random.default_rng(0).integers(0, 255, (64, 64, 3), dtype=np.uint8))
    assert predict_main(["--task", "detection", "--ckpt", str(checkpoint), "--vocabulary", "dog,cat", str(image),
                         "--out", str(tmp_path / "out"), "--device", "cpu"]) == 0
    return tmp_path / "out" / "results.json"


@pytest.mark.slow
def test_predicted_results_score_against_a_split_whose_ids_mean_other_classes(predicted, tmp_path, capsys):
    """The split says cat=1, dog=2, the user's vocabulary "dog,cat": the predictor's results (ids 1 = dog, 2 = cat,
    with the names) score the same as the results under the split's ids; without the names they would be scored
    against the wrong classes."""
    results = json.loads(predicted.read_text())
    assert {(r["category_id"], r["category_name"]) for r in results} <= {(1, "dog"), (2, "cat"),
                                                                         (UNKNOWN_CATEGORY_ID, UNKNOWN_NAME)}
    assert {r["category_name"] for r in results} >= {"dog", "cat"}
    split_ids = {"cat": 1, "dog": 2}
    # the ground truth: the detector's own boxes, each of its named class (so the right ids score AP 1)
    known = [r for r in results if r["category_name"] in split_ids]
    split = {"images": [{"id": 1, "width": 64, "height": 64, "file_name": "image.png"}],
             "categories": [{"id": 1, "name": "cat"}, {"id": 2, "name": "dog"}],
             "annotations": [{"id": n, "image_id": 1, "category_id": split_ids[r["category_name"]], "bbox": r["bbox"],
                              "area": r["bbox"][2] * r["bbox"][3], "iscrowd": 0} for n, r in enumerate(known, 1)]}
    (tmp_path / "split.json").write_text(json.dumps(split))
    options = dict(unknown_category_id=UNKNOWN_CATEGORY_ID, category_ids=[1, 2])
    right = [{k: v for k, v in r.items() if k != "category_name"}
             | {"category_id": split_ids.get(r["category_name"], r["category_id"])} for r in results]
    expected = evaluate(split, right, "detection", **options)
    assert expected["AP"] == pytest.approx(1.0)
    assert evaluate(tmp_path / "split.json", predicted, "detection", **options) == expected
    positions = [{k: v for k, v in r.items() if k != "category_name"} for r in results]
    assert evaluate(split, positions, "detection", **options)["AP"] < 0.9
    # vision-evaluate prints the same table for the predictor's file and the one under the split's ids
    (tmp_path / "right.json").write_text(json.dumps(right))
    command = ["--split", str(tmp_path / "split.json"), "--task", "detection", "--unknown-category-id", "1000",
               "--category-ids", "1,2", "--results"]
    assert evaluate_cli.main([*command, str(tmp_path / "right.json")]) == 0
    table = capsys.readouterr().out
    assert evaluate_cli.main([*command, str(predicted)]) == 0
    assert capsys.readouterr().out == table
    # a split without one of the vocabulary's names: one error line, no figure
    (tmp_path / "dogs.json").write_text(json.dumps({**split, "categories": [{"id": 1, "name": "dog"}],
                                                    "annotations": []}))
    assert evaluate_cli.main(["--split", str(tmp_path / "dogs.json"), "--task", "detection",
                              "--unknown-category-id", "1000", "--results", str(predicted)]) == 2
    captured = capsys.readouterr()
    first = next(i for i, r in enumerate(results) if r["category_name"] == "cat")
    assert captured.out == ""
    assert captured.err == (f"error: {predicted}: results[{first}].category_name='cat': category_name names none of "
                            "the split's categories ('dog'); results are scored under the split's ids of their "
                            "names\n")
