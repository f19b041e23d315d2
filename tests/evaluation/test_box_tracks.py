"""Box tracks on labelled frames (vision/evaluation/box_tracks.py, ``--protocol boxes``): IoU on continuous
coordinates, success at IoU >= 0.5, mean IoU, the success curve's area, absent calls, the presence threshold, the
prompt frame left out, unlabelled frames ignored, the frames after an event, and the results' validation."""

from __future__ import annotations

import json

import numpy as np
import pytest

from vision.errors import DataError, InputError
from vision.evaluation.box_tracks import AUC_THRESHOLDS, box_iou_xywh, evaluate_box_tracks
from vision.evaluation.evaluate import evaluate


def split_of(tracks: dict[str, dict], frames: int = 6) -> dict:
    """A split with one video and one track per entry of ``tracks``: ``{name: {"boxes": {frame: box or None},
    "events": [...]}}``; frames without an entry are unlabelled (``annotated: false``). Image ids are
    ``100 * video + frame``."""
    split: dict = {"images": [], "annotations": [], "videos": [], "tracks": [],
                   "categories": [{"id": 1, "name": "object"}]}
    for video_id, (name, spec) in enumerate(tracks.items(), start=1):
        split["videos"].append({"id": video_id, "name": name, "events": spec.get("events", [])})
        split["tracks"].append({"id": video_id, "video_id": video_id, "category_id": 1})
        for f in range(frames):
            split["images"].append({"id": 100 * video_id + f, "file_name": f"{name}/{f}.jpg", "width": 100,
                                    "height": 100, "video_id": video_id, "frame_index": f,
                                    "annotated": f in spec["boxes"]})
            box = spec["boxes"].get(f)
            if box is not None:
                split["annotations"].append({"id": len(split["annotations"]) + 1, "image_id": 100 * video_id + f,
                                             "track_id": video_id, "category_id": 1, "bbox": box,
                                             "area": box[2] * box[3], "iscrowd": 0})
    return split


def record(video_id: int, frame: int, box: list[float], score: float = 0.9) -> dict:
    return {"video_id": video_id, "image_id": 100 * video_id + frame, "track_id": video_id, "bbox": box,
            "score": score}


def test_iou_on_continuous_coordinates():
    got = box_iou_xywh(np.array([[0, 0, 10, 10], [0, 0, 10, 10], [0, 0, 10, 10], [5, 5, 0, 0]]),
                       np.array([[0, 0, 10, 10], [5, 0, 10, 10], [20, 20, 5, 5], [5, 5, 0, 0]]))
    assert got.tolist() == pytest.approx([1.0, 50 / 150, 0.0, 0.0])


def test_success_miou_auc_and_absent_calls_by_hand():
    # frame 0 is the prompt; frames 1-3 present, 4 absent, 5 unlabelled
    split = split_of({"a": {"boxes": {0: [0, 0, 10, 10], 1: [0, 0, 10, 10], 2: [0, 0, 10, 10], 3: [0, 0, 10, 10],
                                      4: None}}})
    results = [record(1, 0, [50, 50, 5, 5]),  # on the prompt frame: not scored
               record(1, 1, [0, 0, 10, 10]),  # IoU 1
               record(1, 2, [0, 0, 10, 5]),  # IoU 0.5 exactly: a success (>= 0.5), not above 0.5 on the curve
               record(1, 3, [0, 0, 10, 10], score=0.2),  # said absent: IoU 0
               record(1, 5, [90, 90, 5, 5])]  # unlabelled frame: ignored
    m = evaluate_box_tracks(split, results)
    assert m["success@0.5"] == pytest.approx(2 / 3) and m["mIoU"] == pytest.approx(1.5 / 3)
    ious = np.array([1.0, 0.5, 0.0])
    assert m["success_auc"] == pytest.approx(float(np.mean(ious[:, None] > AUC_THRESHOLDS[None, :])))
    assert m["absent_accuracy"] == 1.0  # frame 4: no record
    assert m["num_present_frames"] == 3 and m["num_absent_frames"] == 1
    assert m["a/success@0.5"] == m["success@0.5"]
    # a box on the absent frame is a wrong call; at a presence threshold of 0.1 frame 3's record counts
    m = evaluate_box_tracks(split, results + [record(1, 4, [0, 0, 10, 10])], presence_threshold=0.1)
    assert m["absent_accuracy"] == 0.0 and m["success@0.5"] == 1.0


def test_tracks_are_averaged_each_once_and_undefined_figures_are_minus_one():
    split = split_of({"a": {"boxes": {0: [0, 0, 10, 10], 1: [0, 0, 10, 10], 2: [0, 0, 10, 10], 3: [0, 0, 10, 10]}},
                      "b": {"boxes": {0: [0, 0, 10, 10], 1: [0, 0, 10, 10]}}})
    results = [record(1, f, [0, 0, 10, 10]) for f in (1, 2, 3)]  # a tracked on 3 of 3, b never
    m = evaluate_box_tracks(split, results)
    assert m["success@0.5"] == pytest.approx(0.5) and m["b/success@0.5"] == 0.0
    assert m["absent_accuracy"] == -1.0  # no absent frame anywhere
    assert evaluate_box_tracks(split, [])["success@0.5"] == 0.0


def test_frames_after_an_event_are_their_own_row():
    boxes = {0: [0, 0, 10, 10], 1: [0, 0, 10, 10], 2: None, 3: None, 4: [0, 0, 10, 10], 5: [0, 0, 10, 10]}
    split = split_of({"a": {"boxes": boxes, "events": [{"kind": "exit", "first": 2, "last": 3}]},
                      "b": {"boxes": {0: [0, 0, 10, 10], 1: [0, 0, 10, 10]}}})
    results = [record(1, 1, [0, 0, 10, 10]), record(1, 4, [0, 0, 10, 10]), record(1, 3, [0, 0, 10, 10]),
               record(2, 1, [0, 0, 10, 10])]
    m = evaluate_box_tracks(split, results)
    assert m["after_event/success@0.5"] == 0.5  # frame 4 found, frame 5 not; b has no event
    assert m["a/absent_accuracy"] == 0.5  # frame 2 said absent, frame 3 boxed


def test_the_protocol_through_evaluate_and_its_checks(tmp_path):
    split = split_of({"a": {"boxes": {0: [0, 0, 10, 10], 1: [0, 0, 10, 10]}}})
    (tmp_path / "s.json").write_text(json.dumps(split))
    (tmp_path / "r.json").write_text(json.dumps([record(1, 1, [0, 0, 10, 10])]))
    m = evaluate(tmp_path / "s.json", tmp_path / "r.json", "tracking", protocol="boxes")
    assert m["success@0.5"] == 1.0 and m["protocol"] == "boxes"
    bad = [({"video_id": 1, "image_id": 101, "track_id": 1, "score": 1.0}, "bbox"),
           (record(1, 1, [0, 0, -1, 10]), "width and height"),
           (record(1, 1, [0, 0, 10, 10]) | {"image_id": 999}, "image_id is not in the split"),
           (record(1, 1, [0, 0, 10, 10]) | {"track_id": 7}, "track_id is not a track of video 1")]
    for entry, message in bad:
        with pytest.raises(DataError, match=message):
            evaluate(split, [entry], "tracking", protocol="boxes")
    with pytest.raises(DataError, match="duplicate record"):
        evaluate(split, [record(1, 1, [0, 0, 10, 10])] * 2, "tracking", protocol="boxes")
    with pytest.raises(InputError, match="prompted_image_ids do\\(es\\) not apply to the boxes protocol"):
        evaluate(split, [], "tracking", protocol="boxes", prompted_image_ids=[101])


def _with_mask(split: dict, image_id: int, mask: np.ndarray) -> dict:
    """``split`` with ``mask`` (bool [100, 100]) as the labelled mask of the annotation on ``image_id``."""
    from vision.data.masks import encode_mask

    for ann in split["annotations"]:
        if ann["image_id"] == image_id:
            ann["segmentation"] = encode_mask(mask)
    return split


def test_j_and_f_on_labelled_masks_with_the_box_as_the_mask_by_default():
    from vision.data.masks import encode_mask
    from vision.evaluation.tracking import boundary_f_measure, region_similarity

    truth = np.zeros((100, 100), bool)
    truth[0:10, 0:5] = True  # the left half of the labelled box
    split = split_of({"a": {"boxes": {0: [0, 0, 10, 10], 1: [0, 0, 10, 10], 2: [0, 0, 10, 10], 3: None}}})
    split = _with_mask(_with_mask(split, 100, truth), 101, truth)  # frame 0 is the prompt: its mask is not scored
    boxes_only = [record(1, 1, [0, 0, 10, 10]), record(1, 2, [0, 0, 10, 10])]
    m = evaluate_box_tracks(split, boxes_only)
    box = np.zeros((100, 100), bool)
    box[0:10, 0:10] = True
    assert m["num_mask_frames"] == 1 and m["J"] == pytest.approx(0.5)
    assert m["F"] == pytest.approx(boundary_f_measure(box, truth))
    assert m["J&F"] == pytest.approx((m["J"] + m["F"]) / 2) and m["a/J&F"] == m["J&F"]
    exact = [dict(boxes_only[0], segmentation=encode_mask(truth)), boxes_only[1]]
    assert evaluate_box_tracks(split, exact)["J&F"] == 1.0
    # said absent where the object is: an empty mask, J = F = 0; without labelled masks the figures are undefined
    assert evaluate_box_tracks(split, [dict(exact[0], score=0.1)])["J&F"] == 0.0
    assert region_similarity(np.zeros_like(truth), truth) == 0.0
    assert evaluate_box_tracks(split_of({"a": {"boxes": {0: [0, 0, 10, 10], 1: [0, 0, 10, 10]}}}),
                               boxes_only[:1])["J&F"] == -1.0


def test_a_result_mask_of_another_size_is_refused():
    from vision.data.masks import encode_mask

    split = split_of({"a": {"boxes": {0: [0, 0, 10, 10], 1: [0, 0, 10, 10]}}})
    entry = dict(record(1, 1, [0, 0, 10, 10]), segmentation=encode_mask(np.ones((50, 100), bool)))
    with pytest.raises(DataError, match="segmentation"):
        evaluate(split, [entry], "tracking", protocol="boxes")
