"""Exemplar prompts on real frames (vision.detection.visual_exemplars): the scoring rule, the merge with a name's
detections, the checks, and on a real photograph (skimage's coins, a thing outside COCO-80 that the text alone never
finds) one coin's box finding the others through the pretrained body and MobileNetV2, a negative exemplar removing
them, and the detection CLI's --exemplar-box."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from vision.detection.visual_exemplars import ExemplarSettings, check_box, exemplar_scores, merge_matches
from vision.errors import InputError

skimage_data = pytest.importorskip("skimage.data")


def unit(rows) -> torch.Tensor:
    return torch.nn.functional.normalize(torch.as_tensor(rows, dtype=torch.float32), dim=-1)


def test_settings_and_box_checks() -> None:
    for bad in (dict(proposals=0), dict(nms_iou=0.0), dict(crop_size=8), dict(calibration=(1.0, float("nan"), 0.0)),
                dict(min_score=1.0)):
        with pytest.raises(InputError):
            ExemplarSettings(**bad)
    with pytest.raises(InputError, match="x0 < x1"):
        check_box([5, 5, 5, 9], 10, 10)
    with pytest.raises(InputError, match="outside"):
        check_box([20, 0, 30, 5], 10, 10)
    with pytest.raises(InputError, match="four finite"):
        check_box([0, 0, float("inf"), 5], 10, 10)
    assert check_box([1, 2, 3, 4], 10, 10).tolist() == [1, 2, 3, 4]


def test_scores_rise_with_likeness_and_objectness_and_negatives_veto() -> None:
    settings = ExemplarSettings()
    positive = unit([[1.0, 0.0, 0.0]])
    descriptors = unit([[1.0, 0.0, 0.0], [1.0, 1.0, 0.0], [0.0, 1.0, 0.0], [1.0, 0.0, 0.0]])
    objectness = np.array([0.9, 0.9, 0.9, 0.01])
    scores = exemplar_scores(descriptors, objectness, positive, None, settings)
    assert scores[0] > scores[1] > scores[2]            # closer to the exemplar: higher
    assert scores[0] > scores[3]                        # the same look where the body sees no object: lower
    assert np.all((scores >= 0) & (scores <= 1))
    # a negative exemplar as close as the positive one vetoes the proposal; a far one changes nothing
    vetoed = exemplar_scores(descriptors, objectness, positive, unit([[1.0, 0.9, 0.0]]), settings)
    assert vetoed[1] == 0.0 and vetoed[0] == scores[0] and vetoed[2] == 0.0
    with pytest.raises(InputError, match="positive"):
        exemplar_scores(descriptors, objectness, torch.zeros(0, 3), None, settings)


def test_merge_keeps_the_higher_score_of_a_box_found_both_ways() -> None:
    result = {"boxes": np.array([[0, 0, 10, 10], [50, 50, 60, 60]], np.float32), "scores": np.array([0.4, 0.6], np.float32),
              "label_ids": np.array([0, -1]), "labels": ["cup", "unknown"], "category_ids": np.array([1, 1000])}
    found = {"sandal": (np.array([[0, 0, 10, 9], [50, 50, 60, 60], [80, 80, 90, 90]], np.float32),
                        np.array([0.9, 0.7, 0.2], np.float32)),
             "cup": (np.array([[1, 0, 10, 10]], np.float32), np.array([0.3], np.float32))}
    merged = merge_matches(result, found, ["cup", "sandal"], [1, 2], 1000)
    # cup: its name's box (0.4) wins over the exemplar's (0.3) at the same place; sandal: three matches; the
    # unknown box a sandal match covers with a higher score is named by it
    assert merged["labels"] == ["sandal", "sandal", "cup", "sandal"]
    np.testing.assert_allclose(merged["scores"], [0.9, 0.7, 0.4, 0.2])
    assert merged["category_ids"].tolist() == [2, 2, 1, 2]
    assert merged["label_ids"].tolist() == [1, 1, 0, 1]


@pytest.fixture(scope="module")
def coins(pretrained_weights: Path):
    """skimage's coins photograph as RGB, the coins' boxes (Otsu threshold, closed, the connected regions), and a
    predictor on the untrained YOLOX-nano body."""
    from skimage import filters, measure, morphology

    from vision.detection.predictor import DetectorPredictor
    from vision.detection.task import DetectionConfig, build_model

    grey = skimage_data.coins()
    mask = morphology.closing(grey > filters.threshold_otsu(grey), morphology.disk(3))
    regions = [r.bbox for r in measure.regionprops(measure.label(mask)) if r.area > 300]
    boxes = np.array([[c0, r0, c1, r1] for r0, c0, r1, c1 in regions], np.float64)
    torch.manual_seed(0)
    config = DetectionConfig(body="yolox-nano", body_weights="yolox-nano", image_size=416, score_threshold=0.001,
                             competitor_similarity=0.62)
    predictor = DetectorPredictor(build_model(config).eval(), ["coin", "person"], config.image_size,
                                  competitor_similarity=config.competitor_similarity)
    return np.repeat(grey[..., None], 3, axis=2), boxes, predictor


def coin_hits(result: dict, boxes: np.ndarray, top: int) -> tuple[int, int]:
    from vision.evaluation.concept_boxes import box_iou_xyxy

    found = np.asarray(result["boxes"])[[n == "coin" for n in result["labels"]]][:top]
    return int((box_iou_xyxy(found, boxes).max(axis=1) >= 0.5).sum()) if len(found) else 0, len(found)


def test_one_coin_finds_the_others(coins) -> None:
    image, boxes, predictor = coins
    assert len(boxes) >= 20
    predictor.set_vocabulary(["coin", "person"])
    hits, _ = coin_hits(predictor.predict(image), boxes, 10)
    assert hits == 0                                                  # the name alone: COCO-80 has no coin
    predictor.add_exemplar("coin", image, boxes[0])
    result = predictor.predict(image)
    hits, shown = coin_hits(result, boxes, 15)
    assert shown == 15 and hits >= 12, (hits, shown)                 # the best matches are coins
    coin_scores = result["scores"][[n == "coin" for n in result["labels"]]]
    # on other photographs (an astronaut, a cat) no match scores as high as the coins' median match
    for other in (skimage_data.astronaut(), skimage_data.chelsea()):
        elsewhere = predictor.predict(other)
        others = elsewhere["scores"][[n == "coin" for n in elsewhere["labels"]]]
        assert others.max(initial=0.0) < np.median(coin_scores[:15])
    # a negative exemplar on another coin: "not this kind" leaves no coin among the best matches
    predictor.add_exemplar("coin", image, boxes[1], positive=False)
    hits, _ = coin_hits(predictor.predict(image), boxes, 15)
    assert hits <= 1
    # a new vocabulary forgets the exemplars
    predictor.set_vocabulary(["coin"])
    assert coin_hits(predictor.predict(image), boxes, 10)[0] == 0


def test_exemplar_errors(coins) -> None:
    image, boxes, predictor = coins
    predictor.set_vocabulary(["coin"])
    with pytest.raises(InputError, match="not in the vocabulary"):
        predictor.add_exemplar("sandal", image, boxes[0])
    with pytest.raises(InputError, match="outside"):
        predictor.add_exemplar("coin", image, [1000, 1000, 1100, 1100])
    with pytest.raises(InputError, match="uint8"):
        predictor.add_exemplar("coin", image.astype(np.float32), boxes[0])


def test_a_detector_without_a_pretrained_body_refuses_exemplars() -> None:
    from vision.detection.predictor import DetectorPredictor
    from vision.detection.task import DetectionConfig, build_model

    config = DetectionConfig()
    predictor = DetectorPredictor(build_model(config).eval(), ["coin"], config.image_size)
    with pytest.raises(InputError, match="pretrained body"):
        predictor.add_exemplar("coin", np.zeros((64, 64, 3), np.uint8), [0, 0, 10, 10])


def test_the_exemplar_box_flag_is_read_and_checked_before_any_model() -> None:
    import argparse

    from vision.detection.cli import check, parse_exemplar_box

    assert parse_exemplar_box("sandal=a/b.jpg:1,2,30,40") == ("sandal", Path("a/b.jpg"), [1.0, 2.0, 30.0, 40.0], True)
    assert parse_exemplar_box("sandal=c:/x.png:1,2,30,40,neg")[1:] == (Path("c:/x.png"), [1.0, 2.0, 30.0, 40.0], False)
    for bad, message in (("sandal", "must be NAME=IMAGE"), ("=a.jpg:1,2,3,4", "must be NAME=IMAGE"),
                         ("a,b=a.jpg:1,2,3,4", "names 2 names"), ("sandal=a.jpg:1,2,3", "must be NAME=IMAGE"),
                         ("sandal=a.jpg:5,2,3,4", "--exemplar-box")):
        with pytest.raises(InputError, match=message):
            parse_exemplar_box(bad)
    args = argparse.Namespace(vocabulary=["person,sandal", "person"], exemplar_box=["sandal=a.jpg:1,2,3,4"])
    with pytest.raises(InputError, match="not in the vocabulary"):
        check(args)
