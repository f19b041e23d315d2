"""Concept prompts answered by a detector alone (vision/concept/detector_only.py): the ids of the online association,
the rejection of a phrase by the detector's other names, the boxes-as-masks answer, the files it writes, and the
errors a user meets.

Most tests run a *scripted* detector: a real tiny :class:`OOVDetector` (its classifier, OOV prompt and text table
are the real ones) whose forward pass is replaced by one that finds the coloured squares of the frames: a red square
has the region embedding of the text row of "cup", a green one of "person", a blue one the detector's OOV prompt.
So what is tested is the predictor's own work (proposals, rejection, association, coordinates), not what an
untrained network happens to output."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from scipy import ndimage

from tests.concept.conftest import hashed_text
from vision.concept.detector_only import (MASK_SOURCE, DetectorConceptConfig, DetectorConceptPredictor,
                                          OnlineAssociator, export_box_concepts)
from vision.detection.predictor import DetectorPredictor
from vision.detection.task import DetectionConfig, build_model
from vision.errors import InputError

SIZE = 64  # the detector's input size
VOCABULARY = ["cup", "person", "car"]
RED, GREEN, BLUE = (230, 30, 30), (30, 230, 30), (30, 30, 230)


def scripted_forward(model: torch.nn.Module, stride: int = 4):
    """A forward pass that "detects" every coloured blob of the frames (see the module docstring)."""
    rows = {RED: hashed_text(["a cup"])[0], GREEN: hashed_text(["a person"])[0]}
    background = torch.nn.functional.normalize(torch.randn(rows[RED].shape[0],
                                                           generator=torch.Generator().manual_seed(1)), dim=0)
    centres = torch.arange(stride / 2, SIZE, stride)
    gy, gx = torch.meshgrid(centres, centres, indexing="ij")
    points = torch.stack([gx.reshape(-1), gy.reshape(-1)], dim=-1)  # [L, 2]

    def forward(images: torch.Tensor) -> dict[str, torch.Tensor]:
        images = images.float()
        b, l = images.shape[0], len(points)
        objectness = torch.full((b, l), -8.0)
        boxes = torch.cat([points - 2, points + 2], dim=-1).expand(b, l, 4).clone()
        embeddings = background.expand(b, l, -1).clone()
        for i, image in enumerate(images):
            rgb = (image.permute(1, 2, 0).numpy() * 255).round()
            labels, count = ndimage.label(rgb.max(-1) > 60)
            for blob in range(1, count + 1):
                ys, xs = np.nonzero(labels == blob)
                colour = tuple(rgb[ys, xs].mean(0))
                nearest = min((RED, GREEN, BLUE), key=lambda c: sum((a - b) ** 2 for a, b in zip(c, colour)))
                row = model.classifier.prompts()[0].detach() if nearest == BLUE else rows[nearest]
                box = torch.tensor([xs.min(), ys.min(), xs.max() + 1, ys.max() + 1], dtype=torch.float32)
                inside = ((points[:, 0] >= box[0]) & (points[:, 0] <= box[2]) & (points[:, 1] >= box[1])
                          & (points[:, 1] <= box[3]))
                objectness[i, inside] = 6.0
                boxes[i, inside] = box
                embeddings[i, inside] = row
        return {"points": points, "strides": torch.full((l,), float(stride)), "objectness": objectness,
                "boxes": boxes, "embeddings": embeddings}

    return forward


@pytest.fixture(scope="module")
def detector() -> DetectorPredictor:
    torch.manual_seed(0)
    model = build_model(DetectionConfig(image_size=SIZE)).eval()
    model.forward = scripted_forward(model)
    return DetectorPredictor(model, VOCABULARY, SIZE, encoder=hashed_text)


@pytest.fixture()
def predictor(detector) -> DetectorConceptPredictor:
    return DetectorConceptPredictor(detector)


def frames_with(squares_per_frame: list[list[tuple[tuple[int, int, int], tuple[int, int, int, int]]]],
                height: int = 80, width: int = 96) -> np.ndarray:
    """Black frames [T, height, width, 3] with filled squares ``(colour, (x0, y0, x1, y1))`` in input pixels."""
    out = np.zeros((len(squares_per_frame), height, width, 3), np.uint8)
    for t, squares in enumerate(squares_per_frame):
        for colour, (x0, y0, x1, y1) in squares:
            out[t, y0:y1, x0:x1] = colour
    return out


def answers(predictor, frames, *phrases, **state_options):
    state = predictor.init_state(frames, **state_options)
    for phrase in phrases:
        predictor.add_concept(state, phrase)
    return state, list(predictor.propagate(state))


def test_a_static_object_keeps_one_id_and_its_box_is_its_mask(predictor):
    frames = frames_with([[(RED, (24, 20, 60, 56))]] * 5)
    state, out = answers(predictor, frames, "cup")
    assert [v for v, *_ in out] == list(range(5))
    assert all(ids == [1] and concepts == [0] for _, ids, concepts, _, _ in out)
    assert state.instances == {1: 0} and state.mask_source == MASK_SOURCE == "box"
    assert "not learned real images" in state.mask_note
    for (view, ids, _, masks, scores), result in zip(out, state.results):
        assert masks.shape == (1, 80, 96) and masks.dtype == bool and scores[0] > 0.9
        # the box comes back in input pixels (the detector saw 64 x 64), within a model pixel's worth
        np.testing.assert_allclose(result.boxes[0], [24, 20, 60, 56], atol=96 / 64 + 1e-4)
        ys, xs = np.nonzero(masks[0])
        assert (xs.min(), ys.min(), xs.max() + 1, ys.max() + 1) == tuple(
            int(v) for v in np.concatenate([np.floor(result.boxes[0, :2]), np.ceil(result.boxes[0, 2:])]))
    assert state.presence.shape == (5, 1) and (state.presence[:, 0] > 0.9).all()
    again = list(predictor.propagate(state))  # a second call gives the same answer
    assert all(a[1] == b[1] and np.array_equal(a[3], b[3]) for a, b in zip(out, again))


def test_two_objects_keep_two_ids_while_they_move(predictor):
    frames = frames_with([[(RED, (4 + 2 * t, 10, 30 + 2 * t, 36)), (RED, (60 - 2 * t, 40, 86 - 2 * t, 70))]
                          for t in range(6)])
    state, out = answers(predictor, frames, "cup")
    assert len(state.instances) == 2
    left = {ids[int(np.argmin(r.boxes[:, 0]))] for (_, ids, *_), r in zip(out, state.results)}
    right = {ids[int(np.argmax(r.boxes[:, 0]))] for (_, ids, *_), r in zip(out, state.results)}
    assert len(left) == len(right) == 1 and left != right


def test_each_phrase_has_its_own_ids_and_an_object_outside_every_name_is_rejected(predictor):
    frames = frames_with([[(RED, (4, 4, 30, 30)), (GREEN, (50, 40, 80, 76)), (BLUE, (40, 4, 60, 24))]] * 3)
    state, out = answers(predictor, frames, "cup", "person")
    assert sorted(state.instances.values()) == [0, 1]  # the blue blob is the detector's "unknown": no one's
    for _, ids, concepts, _, _ in out:
        assert sorted(concepts) == [0, 1] and len(set(ids)) == 2


def test_a_phrase_the_detector_knows_by_another_name_is_rejected_by_that_name(detector):
    """"mug" is not in the vocabulary; the red square is a "cup", which competes with "mug" and wins: no mug. The
    ablation without rejection gives every object to its nearest phrase, so the cup becomes a mug."""
    frames = frames_with([[(RED, (24, 20, 60, 56))]] * 2)
    state, out = answers(DetectorConceptPredictor(detector), frames, "mug")
    assert state.instances == {} and all(ids == [] and masks.shape == (0, 80, 96) for _, ids, _, masks, _ in out)
    assert (state.presence == 0).all()
    state, _ = answers(DetectorConceptPredictor(detector, {"rejection": False}), frames, "mug")
    assert state.instances == {1: 0}
    # the phrase itself is taken out of the competitors: "cup" is found
    state, _ = answers(DetectorConceptPredictor(detector), frames, "Cup")
    assert state.instances == {1: 0}


def test_exemplar_boxes_add_an_instance_and_negative_ones_remove_it(predictor):
    frames = frames_with([[(RED, (24, 20, 60, 56))]] * 3)
    state = predictor.init_state(frames)
    predictor.add_concept(state, None, exemplars=[(1, [24, 20, 60, 56], True)])
    out = list(predictor.propagate(state))
    assert out[1][1] and state.presence[1, 0] == 1.0
    state = predictor.init_state(frames)
    predictor.add_concept(state, "cup", exemplars=[(0, [24, 20, 60, 56], False)])
    out = list(predictor.propagate(state))
    assert out[0][1] == []  # the negative box's proposal is gone from its view


def test_the_association_keeps_a_track_alive_a_few_frames_and_births_only_confident_proposals():
    config = DetectorConceptConfig(max_missed=2, birth_score=0.5)
    associator = OnlineAssociator(config)
    box, emb = np.array([[10.0, 10, 30, 30]]), np.array([[1.0, 0.0]])
    one = dict(concepts=np.array([0]), scores=np.array([0.9]))
    assert associator.step(box, emb, **one).tolist() == [1]
    assert associator.step(np.zeros((0, 4)), np.zeros((0, 2)), np.zeros(0), np.zeros(0)).tolist() == []
    assert associator.step(np.zeros((0, 4)), np.zeros((0, 2)), np.zeros(0), np.zeros(0)).tolist() == []
    assert associator.step(box + 1, emb, **one).tolist() == [1]  # two frames missed: still its id
    for _ in range(3):
        associator.step(np.zeros((0, 4)), np.zeros((0, 2)), np.zeros(0), np.zeros(0))
    assert associator.step(box, emb, **one).tolist() == [2]  # three missed: a new id
    # a weak proposal matched to nothing is dropped; matched to a track it keeps the track's id
    far = np.array([[60.0, 60, 80, 80]])
    assert associator.step(np.concatenate([box, far]), np.concatenate([emb, emb]), np.array([0, 0]),
                           np.array([0.35, 0.35])).tolist() == [2, 0]
    # another concept never takes a track's id
    assert associator.step(box, emb, np.array([1]), np.array([0.9])).tolist() == [3]


def test_the_files_say_what_a_box_answer_is(predictor, tmp_path):
    frames = frames_with([[(RED, (24, 20, 60, 56))]] * 3)
    state = predictor.init_state(frames)
    predictor.add_concept(state, "cup")
    predictor.add_concept(state, "car")
    export = export_box_concepts(predictor, state, frames, tmp_path / "out", fps=5)
    records = json.loads(export.results.read_text())
    instances = [r for r in records if "track_id" in r]
    assert len(instances) == 3 and {r["track_id"] for r in instances} == {1}
    assert all(r["phrase"] == "cup" and r["segmentation"]["size"] == [80, 96] for r in instances)
    assert len([r for r in records if "presence" in r]) == 6
    assert export.summary(3) == ["cup: present on 3 of 3 views; 1 instance(s): 1 (3 views)",
                                 "car: present on 0 of 3 views; 0 instance(s): none"]
    assert export.video is not None and export.video.is_file() and export.plys == {}


@pytest.mark.parametrize("source, message", [
    ([], "empty list"),
    (np.zeros((2, 8, 8), np.uint8), "frames must be uint8"),
    (np.zeros((2, 8, 8, 3), np.float32), "frames must be uint8"),
    ("missing.mp4", "missing.mp4"),
])
def test_bad_inputs_are_refused(predictor, source, message):
    from vision.errors import VisionError

    with pytest.raises(VisionError, match=message):
        predictor.init_state(source)


@pytest.mark.parametrize("phrase, exemplars, message", [
    ("", (), "a concept phrase '' is empty"),
    (None, (), "a phrase or at least one positive exemplar"),
    ("cup", [(5, [0, 0, 5, 5], True)], "view 5, but the input has views 0..1"),
    ("cup", [(0, [0, 0, 97, 5], True)], "off the image"),
    ("cup", [(0,)], r"\(view, box\)"),
])
def test_bad_concepts_are_refused(predictor, phrase, exemplars, message):
    state = predictor.init_state(frames_with([[]] * 2))
    with pytest.raises(InputError, match=message):
        predictor.add_concept(state, phrase, exemplars=exemplars)
    assert state.concepts == []
    with pytest.raises(InputError, match="no concept"):
        next(predictor.propagate(state))
    predictor.add_concept(state, "cup")
    with pytest.raises(InputError, match="already a concept"):
        predictor.add_concept(state, " CUP ")


def test_bad_settings_are_refused():
    with pytest.raises(InputError, match="birth_score must be a number in"):
        DetectorConceptConfig(birth_score=1.5)
    with pytest.raises(InputError, match="max_missed must be an integer >= 0"):
        DetectorConceptConfig(max_missed=-1)
    with pytest.raises(InputError, match="unknown DetectorConceptConfig field"):
        DetectorConceptConfig.from_value({"threshold": 0.2})


def write_detection_checkpoint(path: Path, train_split: str | None = None, **fields) -> Path:
    """An untrained detection checkpoint (a tiny backbone at 32 px unless ``fields`` say otherwise) as
    ``tools/train.py`` writes it: its training vocabulary (:data:`VOCABULARY`) and, with ``train_split``, its data."""
    torch.manual_seed(0)
    config = DetectionConfig(**{"image_size": 32, "channels": 16, **fields})
    model = build_model(config)
    checkpoint = {"state_dict": {f"model.{k}": v for k, v in model.state_dict().items()},
                  "hyper_parameters": {"_class_path": "vision.detection.lightning.OOVDetModule",
                                       "config": config.to_dict(), "class_names": list(VOCABULARY),
                                       "category_ids": [1, 2, 3]},
                  "task": "detection", "epoch": 0, "global_step": 1}
    if train_split is not None:
        checkpoint["datamodule_hyper_parameters"] = {"train_split": train_split, "image_size": config.image_size}
    torch.save(checkpoint, path)
    return path


def test_from_a_checkpoint_it_says_which_model_answers(tmp_path):
    split = tmp_path / "real_coco_train.json"
    split.write_text(json.dumps({"info": {"teacher": {"name": "yolox-nano"}}, "images": [], "annotations": [],
                                 "categories": []}))
    ckpt = write_detection_checkpoint(tmp_path / "last.ckpt", train_split=str(split))
    predictor = DetectorConceptPredictor.from_checkpoint(ckpt, encoder=hashed_text)
    assert predictor.competitors == VOCABULARY and predictor.provenance.real is True
    assert predictor.describe() == ("the detector alone: last.ckpt (trained on real frames, teacher-labelled "
                                    "(yolox-nano), 3 known classes)")
    _, out = answers(predictor, frames_with([[(RED, (4, 4, 30, 30))]] * 2), "cup")
    assert len(out) == 2 and all(m.shape[1:] == (80, 96) for _, _, _, m, _ in out)


@pytest.fixture(scope="module")
def yolox_detector(pretrained_weights) -> DetectorPredictor:
    """A detector on the untrained YOLOX-nano body (its boxes are the pretrained network's), with competitors."""
    torch.manual_seed(0)
    config = DetectionConfig(body="yolox-nano", body_weights="yolox-nano", image_size=416, score_threshold=0.001,
                             competitor_similarity=0.62)
    return DetectorPredictor(build_model(config).eval(), ["person"], config.image_size,
                             competitor_similarity=config.competitor_similarity)


def test_on_the_pretrained_body_frames_keep_their_aspect_ratio(yolox_detector):
    """A detector on the YOLOX body letterboxes its input; the concept state reads frames with their aspect ratio
    kept, so a phrase's box on a 600x400 photograph is the detector's own box on it (not a box of a squashed
    frame), in the photograph's pixels."""
    skimage_data = pytest.importorskip("skimage.data")
    from vision.evaluation.concept_boxes import box_iou_xyxy

    detector = yolox_detector
    detector.set_vocabulary(["cup"])
    image = skimage_data.coffee()                                  # 400 x 600, a cup of coffee
    found = detector.predict(image)
    cup = found["boxes"][[n == "cup" for n in found["labels"]]][0]
    predictor = DetectorConceptPredictor(detector)
    state = predictor.init_state(np.stack([image, image]))
    assert state.frames.shape[1:3] == (416, 624)                    # shorter side at the input size
    predictor.add_concept(state, "cup")
    boxes = [state.results[view].boxes for view, *_ in predictor.propagate(state)]
    for frame_boxes in boxes:
        assert len(frame_boxes) >= 1
        assert box_iou_xyxy(frame_boxes[:1], cup[None])[0, 0] > 0.9
        assert frame_boxes[:, [0, 2]].max() <= 600 and frame_boxes[:, [1, 3]].max() <= 400


def test_a_phrase_naming_a_voc_class_gets_deeplab_masks_and_others_boxes(yolox_detector):
    """On the astronaut photograph "man" names VOC's person: its mask is DeepLabV3's person pixels inside the box
    (most of the box, not all of it); "cup" names no VOC class and keeps its box; the answer says which; the
    config's ``masks: box`` gives boxes for both."""
    skimage_data = pytest.importorskip("skimage.data")

    detector = yolox_detector
    detector.set_vocabulary(["person"])
    image = skimage_data.astronaut()
    for masks_setting in ("deeplabv3", "box"):
        predictor = DetectorConceptPredictor(detector, {"masks": masks_setting})
        state = predictor.init_state(image[None])
        predictor.add_concept(state, "man")
        predictor.add_concept(state, "cup")
        _, ids, concepts, masks, _ = next(predictor.propagate(state))
        man = [n for n, c in enumerate(concepts) if c == 0]
        assert man, "the astronaut is not found as a man"
        x0, y0, x1, y1 = state.results[0].boxes[man[0]]
        box_area = (np.ceil(x1) - np.floor(x0)) * (np.ceil(y1) - np.floor(y0))
        share = masks[man[0]].sum() / box_area
        if masks_setting == "deeplabv3":
            assert 0.3 < share < 0.95, share
            assert "DeepLabV3" in state.masks_line and "man (as VOC person)" in state.masks_line
            assert "cup (not a VOC class)" in state.masks_line
        else:
            assert share == pytest.approx(1.0, abs=0.02)
            assert state.masks_line.startswith("boxes from the detector")
