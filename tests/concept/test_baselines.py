"""The concept baselines: ByteTrack's ids over views (with the first view of a track kept), box-prompt masks decoded
view by view, and both baselines' results on a rendered split with untrained tiny models (valid records, one id
per instance and phrase, one presence record per phrase and view)."""

from __future__ import annotations

import os
from collections import Counter

import numpy as np
import pytest
import torch

from vision.concept.baselines import box_masks, detect_then_track, run_baseline, text_prompt_tracker, track_boxes
from vision.concept.records import queried_phrases
from vision.errors import InputError

os.environ.setdefault("HF_HUB_OFFLINE", "1")

#: ByteTrack settings under which an untrained detector's boxes start tracks
LOW = {"track_activation_threshold": 0.0, "high_conf_det_threshold": 0.0}


def _box(x: float, y: float, size: float = 10.0) -> list[float]:
    return [x, y, x + size, y + size]


def test_bytetrack_ids_are_carried_over_views():
    """One object moving a pixel per view keeps one id on every view, its first included; a second object that
    enters later gets another id; a low-score box that starts no track and a box seen once get none."""
    views = 6
    boxes, scores = [], []
    for t in range(views):
        b, s = [_box(10 + t, 20)], [0.9]
        if t >= 2:
            b.append(_box(60 - t, 60))
            s.append(0.8)
        if t == 3:
            b += [_box(100, 5), _box(5, 100)]
            s += [0.3, 0.95]  # a low-score box alone; a confident box on one view only
        boxes.append(np.array(b, np.float32))
        scores.append(np.array(s, np.float32))
    ids = track_boxes(boxes, scores)
    first = {int(v[0]) for v in ids}
    assert len(first) == 1 and first.pop() >= 0
    second = {int(v[1]) for v in ids[2:]}
    assert len(second) == 1 and second.pop() not in {int(ids[0][0]), -1}
    assert ids[3][2:].tolist() == [-1, -1]
    assert [len(v) for v in track_boxes([np.zeros((0, 4))] * 3, [np.zeros(0)] * 3)] == [0, 0, 0]


def test_bytetrack_settings_are_its_arguments():
    boxes = [np.array([_box(10 + t, 20)], np.float32) for t in range(4)]
    scores = [np.array([0.55], np.float32)] * 4
    assert {int(v[0]) for v in track_boxes(boxes, scores)} == {-1}  # under the activation threshold (0.6)
    assert {int(v[0]) for v in track_boxes(boxes, scores, track_activation_threshold=0.5)} == {0}
    with pytest.raises(InputError, match="one score array per view"):
        track_boxes(boxes, scores[:2])


# -- with models ----------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def split(tmp_path_factory):
    from vision.data.coco import load_split
    from vision.synthetic.scenes import write_split

    path = write_split(tmp_path_factory.mktemp("concept_baselines"), "video", scenes=1, views=4, size=32,
                       mode="video", seed=0, threads=1, min_objects=2, max_objects=3)
    return load_split(path)


@pytest.fixture(scope="module")
def models():
    """Untrained tiny detector and tracker (32 px) and the package's MiniLM text encoder."""
    from vision.detection.task import DetectionConfig
    from vision.detection.task import build_model as build_detector
    from vision.text import get_text_encoder
    from vision.tracking.task import TrackingConfig
    from vision.tracking.task import build_model as build_tracker

    torch.manual_seed(0)
    encoder = get_text_encoder("minilm")
    detector = build_detector(DetectionConfig(image_size=32, max_detections=3))
    tracker = build_tracker(TrackingConfig(image_size=32, dim=32, text_encoder="minilm"))
    return detector, tracker, encoder


def _predictors(models, **tracker_options):
    from vision.detection.predictor import DetectorPredictor
    from vision.tracking.predictor import TrackerPredictor

    detector, tracker, encoder = models
    return (DetectorPredictor(detector, ["object"], 32, encoder=encoder),
            TrackerPredictor(tracker, text_encoder=encoder, window_size=3, max_anchors=1, **tracker_options))


def _check_records(records: list[dict], split) -> tuple[list[dict], list[dict]]:
    """The results format of the concept contract, checked field by field (and by the package's validator when
    there is one); returns (instance records, presence records)."""
    from vision.evaluation import results as results_module

    validate = getattr(results_module, "validate_concept_results", None)
    if validate is not None:
        validate(records, split.dataset)
    instances = [r for r in records if "track_id" in r]
    presences = [r for r in records if "presence" in r]
    assert len(instances) + len(presences) == len(records)
    for r in instances:
        assert set(r) == {"video_id", "image_id", "track_id", "category_id", "phrase", "segmentation", "bbox",
                          "score", "prompt_type"}
        image = split.images[r["image_id"]]
        assert image["video_id"] == r["video_id"] and r["prompt_type"] == "concept"
        assert r["segmentation"]["size"] == [image["height"], image["width"]]
        assert r["phrase"] == queried_phrases(split, r["video_id"])[r["category_id"]]
        assert 0.0 <= r["score"] <= 1.0 and len(r["bbox"]) == 4 and r["bbox"][2] > 0 and r["bbox"][3] > 0
    # one category per track id in a video, one record per (track, image)
    phrase_of: dict[tuple[int, int], int] = {}
    for r in instances:
        assert phrase_of.setdefault((r["video_id"], r["track_id"]), r["category_id"]) == r["category_id"]
    assert not [k for k, n in Counter((r["video_id"], r["track_id"], r["image_id"]) for r in instances).items()
                if n > 1]
    # one presence record per queried phrase and image
    expected = Counter((v, im["id"], c) for v in split.videos for im in split.images_by_video[v]
                       for c in queried_phrases(split, v))
    assert Counter((r["video_id"], r["image_id"], r["category_id"]) for r in presences) == expected
    assert all(set(r) == {"video_id", "image_id", "category_id", "presence"} and 0.0 <= r["presence"] <= 1.0
               for r in presences)
    return instances, presences


@pytest.mark.slow
def test_detect_then_track(split, models):
    """Every tracked box of every phrase gets a record (masks are whole images under a mask threshold of -inf,
    so none is empty), scored by its detection; presence = the phrase's best detection score on the view."""
    from vision.tracking.inference import video_frames

    detector, tracker = _predictors(models, mask_threshold=float("-inf"))
    records = run_baseline("detect_then_track", split, detector, tracker, **LOW)
    instances, presences = _check_records(records, split)

    (video_id,) = split.videos
    phrases = queried_phrases(split, video_id)
    frames = video_frames(split, video_id)
    detections = detector.predict(np.stack([split.load_image(im) for im in frames]))
    assert detector.vocabulary == [phrases[c] for c in sorted(phrases)]
    tracked = 0
    for k, cid in enumerate(sorted(phrases)):
        keep = [d["label_ids"] == k for d in detections]
        scores = [d["scores"][m] for d, m in zip(detections, keep)]
        tracked += sum(int((ids >= 0).sum()) for ids in track_boxes([d["boxes"][m] for d, m in
                                                                    zip(detections, keep)], scores, **LOW))
        for view, image in enumerate(frames):
            best = float(scores[view].max()) if len(scores[view]) else 0.0
            (presence,) = [r["presence"] for r in presences if r["image_id"] == image["id"] and
                           r["category_id"] == cid]
            assert presence == pytest.approx(best, abs=1e-6)
            on_view = [r["score"] for r in instances if r["image_id"] == image["id"] and r["category_id"] == cid]
            assert all(np.isclose(scores[view], s, atol=1e-6).any() for s in on_view)
    assert len(instances) == tracked > 0
    assert sorted({r["track_id"] for r in instances}) == list(range(1, len({r["track_id"] for r in instances}) + 1))
    assert all(r["segmentation"]["size"] == [32, 32] and r["bbox"] == [0.0, 0.0, 32.0, 32.0] for r in instances)


@pytest.mark.slow
def test_box_masks_decode_each_view_alone_and_its_boxes_together(split, models):
    """Masks at the frames' size on the boxes' views only; a view's boxes decoded together give the masks each
    gives alone (the decoder reads one encoding per window; up to float rounding)."""
    from vision.tracking.inference import video_frames

    _, tracker = _predictors(models)
    frames = np.stack([split.load_image(im) for im in video_frames(split, next(iter(split.videos)))])
    boxes = {0: np.array([[2, 3, 20, 18], [10, 10, 31.5, 32.2]]), 3: np.array([[0, 0, 8, 8]]), 2: np.zeros((0, 4))}
    masks = box_masks(tracker, frames, boxes)
    assert sorted(masks) == [0, 3]
    assert masks[0].shape == (2, 32, 32) and masks[3].shape == (1, 32, 32) and masks[0].dtype == bool
    alone = box_masks(tracker, frames, {0: boxes[0][1:]})[0][0]
    assert (alone == masks[0][1]).mean() > 0.99


@pytest.mark.slow
def test_text_prompt_tracker(split, models):
    """One object per phrase, ids 1..K; with every mask whole and the presence gate open every (phrase, view) has
    a record scored by the phrase's presence on that view."""
    _, tracker = _predictors(models, mask_threshold=float("-inf"), presence_threshold=0.0)
    records = run_baseline("text_prompt", split, None, tracker)
    instances, presences = _check_records(records, split)
    (video_id,) = split.videos
    phrases = queried_phrases(split, video_id)
    assert len(instances) == len(presences) == len(phrases) * len(split.images_by_video[video_id])
    presence = {(r["image_id"], r["category_id"]): r["presence"] for r in presences}
    assert all(r["score"] == presence[r["image_id"], r["category_id"]] for r in instances)
    ids = {r["category_id"]: r["track_id"] for r in instances}
    assert ids == {c: j + 1 for j, c in enumerate(sorted(phrases))}


@pytest.mark.slow
def test_bad_input(split, models):
    detector, tracker = _predictors(models)
    with pytest.raises(InputError, match="unknown baseline 'bytetrack'"):
        run_baseline("bytetrack", split, detector, tracker)
    with pytest.raises(InputError, match="needs a detector"):
        run_baseline("detect_then_track", split, None, tracker)
    with pytest.raises(InputError, match="the phrase of category 3 '' is empty"):
        text_prompt_tracker(split, next(iter(split.videos)), {3: ""}, tracker)
    with pytest.raises(InputError, match="video 99 is not in split"):
        detect_then_track(split, 99, {1: "cube"}, detector, tracker)
