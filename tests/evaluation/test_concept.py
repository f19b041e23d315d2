"""The ``concept`` scorer: HOTA / IDSW through the whole pipeline equal trackeval's on the same masks, video mask AP
(YouTube-VIS), cgF1 / pmF1 / IL_MCC (sam3's definition), presence MCC and the acceptance of objects outside the
phrases on hand-computed cases, and the validation of concept results."""

from __future__ import annotations

import contextlib
import copy
import io
import json
import math

import numpy as np
import pytest
from pycocotools.coco import COCO
from pycocotools.cocoeval import COCOeval
from trackeval.datasets._base_dataset import _BaseDataset
from trackeval.metrics import CLEAR, HOTA

from vision.data.masks import encode_mask, mask_to_bbox
from vision.errors import DataError, InputError
from vision.evaluation.concept import evaluate_concept
from vision.evaluation.evaluate import evaluate
from vision.evaluation.tasks.concept import validate_concept_results

PHRASES = {1: "mug", 2: "bowl", 3: "cube", 4: "chair"}


def rect(h: int, w: int, y0: int, x0: int, y1: int, x1: int) -> np.ndarray:
    """Boolean mask [h, w], True on rows y0:y1 and columns x0:x1."""
    m = np.zeros((h, w), bool)
    m[y0:y1, x0:x1] = True
    return m


def build(videos: list[dict], near: dict | None = None) -> tuple[dict, list[dict]]:
    """A concept split and its results from per-video dicts.

    Each video: ``id``, ``frames`` (count), ``size`` (h, w), optional ``ordered``, ``concepts`` (category ids; None:
    left out), ``gt`` {track id: (category, {frame: mask})}, ``pred`` {track id: (category, {frame: (mask, score)})},
    ``presence`` {(frame, category): value}. Image ids are ``100 * video id + frame``."""
    split: dict = {"images": [], "annotations": [], "videos": [], "tracks": [],
                   "categories": [{"id": k, "name": v} for k, v in PHRASES.items()]}
    if near is not None:
        split["info"] = {"near_categories": near}
    results: list[dict] = []
    for v in videos:
        h, w = v["size"]
        entry = {"id": v["id"], "name": f"v{v['id']}", "ordered": v.get("ordered", True)}
        if v.get("concepts") is not None:
            entry["concepts"] = list(v["concepts"])
        split["videos"].append(entry)
        for f in range(v["frames"]):
            split["images"].append({"id": 100 * v["id"] + f, "width": w, "height": h, "video_id": v["id"],
                                    "frame_index": f, "file_name": f"{v['id']}/{f}.png"})
        for track_id, (category, masks) in v["gt"].items():
            split["tracks"].append({"id": track_id, "video_id": v["id"], "category_id": category})
            for f, m in masks.items():
                split["annotations"].append({"id": len(split["annotations"]) + 1, "image_id": 100 * v["id"] + f,
                                             "track_id": track_id, "category_id": category,
                                             "segmentation": encode_mask(m), "bbox": mask_to_bbox(m),
                                             "area": float(m.sum()), "iscrowd": 0})
        for track_id, (category, masks) in v.get("pred", {}).items():
            for f, (m, score) in masks.items():
                results.append({"video_id": v["id"], "image_id": 100 * v["id"] + f, "track_id": track_id,
                                "category_id": category, "phrase": PHRASES[category],
                                "segmentation": encode_mask(m), "bbox": mask_to_bbox(m), "score": score,
                                "prompt_type": "concept"})
        for (f, category), value in v.get("presence", {}).items():
            results.append({"video_id": v["id"], "image_id": 100 * v["id"] + f, "category_id": category,
                            "presence": value})
    return split, results


def score(videos: list[dict], near: dict | None = None, **options) -> dict:
    split, results = build(videos, near)
    validate_concept_results(results, split)
    return evaluate_concept(split, results, **options)


# ---------------------------------------------------------------- HOTA through the pipeline = trackeval


def random_videos(rng: np.random.Generator) -> list[dict]:
    """2-3 small videos: 2-4 instances of queried phrases entering, leaving and returning, a negative phrase, an
    outside object, noisy predictions with id swaps and false positives, some videos without any prediction."""
    videos = []
    for vid in range(1, int(rng.integers(2, 4)) + 1):
        frames, h, w = int(rng.integers(2, 7)), 8, 10
        targets = sorted(rng.choice([1, 2, 4], size=int(rng.integers(1, 3)), replace=False).tolist())
        gt, pred = {}, {}
        for k in range(int(rng.integers(1, 5))):
            category = int(targets[k % len(targets)]) if k < 3 or rng.random() < 0.7 else 3  # 3: outside
            start, stop = sorted(rng.integers(0, frames + 1, 2))
            visible = [f for f in range(frames) if (start <= f < stop) != (rng.random() < 0.2)]
            masks = {}
            for f in visible:
                y, x = int(rng.integers(0, h - 2)), int(rng.integers(0, w - 2))
                masks[f] = rect(h, w, y, x, y + int(rng.integers(1, 4)), x + int(rng.integers(1, 4)))
            gt[10 * vid + k] = (category, masks)
            if rng.random() < 0.8 and category != 3:
                swap = int(rng.integers(0, frames + 1))
                for f, m in masks.items():
                    track = 50 * vid + k + (20 if f >= swap else 0)  # an id switch at frame `swap`
                    if rng.random() < 0.85:
                        moved = np.roll(m, (int(rng.integers(-1, 2)), int(rng.integers(-1, 2))), axis=(0, 1))
                        pred.setdefault(track, (category, {}))[1][f] = (moved, float(rng.random()))
        for k in range(int(rng.integers(0, 3))):  # false positives, some on the negative phrase 4 / 2
            category = int(rng.choice(targets))
            f = int(rng.integers(0, frames))
            pred[90 * vid + k] = (category, {f: (rect(h, w, 0, 0, 2, 2), float(rng.random()))})
        if rng.random() < 0.2:
            pred = {}  # a video with no predictions at all
        concepts = sorted(set(targets) | ({2} if rng.random() < 0.5 else set()))
        videos.append({"id": vid, "frames": frames, "size": (h, w), "ordered": bool(rng.random() < 0.5),
                       "concepts": concepts, "gt": gt, "pred": pred})
    return videos


def trackeval_reference(videos: list[dict]) -> tuple[dict, dict[str, float]]:
    """HOTA (trackeval's class average over the queried phrases with a detection, ``ignore_empty_classes=True``) and
    summed IDSW, and per-phrase HOTA, from trackeval's metrics on data built here from the masks with trackeval's own
    mask IoU."""
    metric, clear = HOTA(), CLEAR({"PRINT_CONFIG": False})
    classes, per_phrase, switches = {}, {}, 0
    for category in sorted({c for v in videos for c in v["concepts"]}):
        sequences = {}
        for v in (v for v in videos if category in v["concepts"]):
            gt_ids, tr_ids, sims = [], [], []
            for f in range(v["frames"]):
                g = [(t, m[f]) for t, (c, m) in sorted(v["gt"].items()) if c == category and f in m and m[f].any()]
                p = [(t, m[f][0]) for t, (c, m) in sorted(v["pred"].items()) if c == category and f in m]
                sims.append(_BaseDataset._calculate_mask_ious(
                    np.array([x[1] for x in g], np.uint8).reshape(-1, 8, 10),
                    np.array([x[1] for x in p], np.uint8).reshape(-1, 8, 10)))
                gt_ids.append([x[0] for x in g])
                tr_ids.append([x[0] for x in p])
            gt_u = sorted({t for ids in gt_ids for t in ids})
            tr_u = sorted({t for ids in tr_ids for t in ids})
            data = {"num_timesteps": v["frames"], "similarity_scores": sims,
                    "gt_ids": [np.array([gt_u.index(t) for t in ids], int) for ids in gt_ids],
                    "tracker_ids": [np.array([tr_u.index(t) for t in ids], int) for ids in tr_ids],
                    "num_gt_ids": len(gt_u), "num_tracker_ids": len(tr_u),
                    "num_gt_dets": sum(map(len, gt_ids)), "num_tracker_dets": sum(map(len, tr_ids))}
            sequences[v["id"]] = metric.eval_sequence(data)
            switches += clear.eval_sequence(data)["IDSW"] if data["num_gt_dets"] else 0
        combined = metric.combine_sequences(sequences)
        classes[category] = combined
        if combined["HOTA_TP"][0] + combined["HOTA_FN"][0] + combined["HOTA_FP"][0] > 0:
            per_phrase[f"HOTA/{PHRASES[category]}"] = float(np.mean(combined["HOTA"]))
    res = metric.combine_classes_class_averaged(classes, ignore_empty_classes=True)
    out = {k: float(np.mean(res[k])) for k in ("HOTA", "DetA", "AssA", "LocA", "DetRe", "DetPr", "AssRe", "AssPr")}
    return {**out, "IDSW": switches}, per_phrase


def test_hota_through_the_pipeline_equals_trackeval():
    rng = np.random.default_rng(7)
    for case in range(25):
        videos = random_videos(rng)
        if not any(m.any() for v in videos for c, ms in v["gt"].values() if c in v["concepts"]
                   for m in ms.values()):
            continue
        metrics = score(videos)
        expected, per_phrase = trackeval_reference(videos)
        for key, value in {**expected, **per_phrase}.items():
            assert abs(metrics[key] - value) < 1e-9, (case, key, metrics[key], value)
        assert {k for k in metrics if k.startswith("HOTA/")} == set(per_phrase)


def test_every_contract_key_is_returned():
    mug = rect(6, 6, 1, 1, 4, 4)
    metrics = score([{"id": 1, "frames": 2, "size": (6, 6), "concepts": [1, 2],
                      "gt": {1: (1, {0: mug, 1: mug})}, "pred": {5: (1, {0: (mug, 0.9), 1: (mug, 0.7)})},
                      "presence": {(0, 1): 0.9, (1, 1): 0.8, (0, 2): 0.1, (1, 2): 0.2}}])
    assert list(metrics) == ["HOTA", "DetA", "AssA", "LocA", "DetRe", "DetPr", "AssRe", "AssPr", "IDSW",
                             "phrase_HOTA", "phrase_DetA", "phrase_AssA", "phrase_LocA", "phrase_DetRe",
                             "phrase_DetPr", "phrase_AssRe", "phrase_AssPr", "AP", "AP50", "AP75", "cgF1", "pmF1",
                             "IL_MCC", "video_cgF1", "video_pmF1", "video_IL_MCC", "presence_MCC", "outside_accepted",
                             "near_accepted", "HOTA/mug"]
    # the bowl is queried and absent, and nothing is predicted for it: its class is empty and not averaged
    assert metrics["HOTA"] == metrics["DetA"] == metrics["AssA"] == metrics["LocA"] == 1.0
    assert metrics["phrase_HOTA"] == metrics["phrase_DetA"] == metrics["phrase_AssA"] == 1.0
    assert isinstance(metrics["IDSW"], int) and metrics["IDSW"] == 0
    assert metrics["outside_accepted"] == metrics["near_accepted"] == -1.0  # no outside tracks: undefined


# ---------------------------------------------------------------- video AP (YouTube-VIS), by hand


def one_video_ap(gt: dict, pred: dict, concepts=(1,), frames: int = 3) -> dict:
    m = score([{"id": 1, "frames": frames, "size": (4, 4), "concepts": list(concepts), "gt": gt, "pred": pred}])
    return {k: m[k] for k in ("AP", "AP50", "AP75")}


SQUARE = rect(4, 4, 0, 0, 2, 2)  # 4 pixels


def test_video_ap_perfect_instance():
    # one ground-truth track on frames 0, 1; the prediction is identical: sequence IoU 1 -> precision 1 at every
    # threshold and recall point
    got = one_video_ap({1: (1, {0: SQUARE, 1: SQUARE})}, {7: (1, {0: (SQUARE, 0.9), 1: (SQUARE, 0.5)})})
    assert got == pytest.approx({"AP": 1.0, "AP50": 1.0, "AP75": 1.0}, abs=1e-12)  # COCO's tp / (tp + eps)


def test_video_ap_partial_sequence_iou():
    # frame 0: identical (I 4, U 4); frame 1: shifted one column (I 2, U 6); frame 2: predicted only (U 2 more,
    # ground truth absent). Sequence IoU = (4 + 2 + 0) / (4 + 6 + 2) = 0.5: a match at IoU 0.50 only.
    # AP50 = 1; at 0.55..0.95 the one prediction is a false positive: precision 0. AP = (1 + 9 * 0) / 10 = 0.1.
    shifted = rect(4, 4, 0, 1, 2, 3)
    half = rect(4, 4, 2, 2, 3, 4)
    got = one_video_ap({1: (1, {0: SQUARE, 1: SQUARE})},
                       {7: (1, {0: (SQUARE, 0.9), 1: (shifted, 0.9), 2: (half, 0.9)})})
    assert got == pytest.approx({"AP": 0.1, "AP50": 1.0, "AP75": 0.0}, abs=1e-12)


def test_video_ap_two_predictions_on_one_ground_truth():
    # ground truth: 8 pixels on frames 0 and 1. A covers 5 of them on each frame: IoU (5 + 5) / (8 + 8) = 0.625,
    # record scores 0.8 and 1.0 -> sequence score 0.9. B is exact (IoU 1), scores 0.95 and 0.25 -> 0.6 (its
    # best record outscores A's mean: the ranking is by the mean). COCO matches by score: at t <= 0.625 (0.50,
    # 0.55, 0.60) A takes the ground truth and B is a false positive: precision [1, 0.5] -> 1 at every recall
    # point. At t >= 0.65 (7 thresholds) A is a false positive, B a true positive: precision [0, 0.5] ->
    # interpolated 0.5 everywhere. AP = (3 * 1 + 7 * 0.5) / 10 = 0.65; AP50 = 1; AP75 = 0.5.
    gt_mask = rect(4, 4, 0, 0, 2, 4)
    part = rect(4, 4, 0, 0, 2, 2) | rect(4, 4, 0, 2, 1, 3)
    got = one_video_ap({1: (1, {0: gt_mask, 1: gt_mask})},
                       {7: (1, {0: (part, 0.8), 1: (part, 1.0)}), 8: (1, {0: (gt_mask, 0.95), 1: (gt_mask, 0.25)})})
    assert got == pytest.approx({"AP": 0.65, "AP50": 1.0, "AP75": 0.5}, abs=1e-12)


def test_video_ap_without_predictions_is_zero_and_a_phrase_without_ground_truth_is_left_out():
    # no prediction: precision 0 everywhere
    assert one_video_ap({1: (1, {0: SQUARE})}, {}) == {"AP": 0.0, "AP50": 0.0, "AP75": 0.0}
    # phrase 2 is queried but has no ground truth: its false positive does not count, AP is phrase 1's
    got = one_video_ap({1: (1, {0: SQUARE})}, {7: (1, {0: (SQUARE, 0.9)}), 8: (2, {1: (SQUARE, 0.95)})},
                       concepts=(1, 2))
    assert got == pytest.approx({"AP": 1.0, "AP50": 1.0, "AP75": 1.0}, abs=1e-12)
    # two phrases with ground truth, one perfect and one missed: the mean over phrases, (1 + 0) / 2
    got = one_video_ap({1: (1, {0: SQUARE}), 2: (2, {1: SQUARE})}, {7: (1, {0: (SQUARE, 0.9)})}, concepts=(1, 2))
    assert got == pytest.approx({"AP": 0.5, "AP50": 0.5, "AP75": 0.5}, abs=1e-12)
    # no phrase has ground truth: undefined
    assert one_video_ap({}, {8: (2, {1: (SQUARE, 0.95)})}, concepts=(2,))["AP"] == -1.0


def test_video_ap_of_one_frame_videos_equals_pycocotools_mask_ap():
    # with one frame per video the sequence IoU is the mask IoU, and YouTube-VIS AP is COCO's segm AP (area all,
    # 100 detections) with videos as images: pycocotools' COCOeval on the same masks gives the same figures
    rng = np.random.default_rng(5)
    for case in range(8):
        videos = []
        for vid in range(1, 9):
            gt, pred = {}, {}
            for k in range(int(rng.integers(0, 4))):
                category, (y, x) = int(rng.integers(1, 3)), rng.integers(0, 12, 2)
                m = rect(16, 16, y, x, y + int(rng.integers(2, 5)), x + int(rng.integers(2, 5)))
                gt[10 * vid + k] = (category, {0: m})
                if rng.random() < 0.8:
                    moved = np.roll(m, tuple(int(s) for s in rng.integers(-1, 2, 2)), (0, 1))
                    pred[50 * vid + k] = (category if rng.random() < 0.9 else 3 - category,
                                          {0: (moved, float(rng.random()))})
            for k in range(int(rng.integers(0, 3))):  # false positives
                y, x = rng.integers(0, 12, 2)
                box = rect(16, 16, y, x, y + 3, x + 3)
                pred[90 * vid + k] = (int(rng.integers(1, 3)), {0: (box, float(rng.random()))})
            videos.append({"id": vid, "frames": 1, "size": (16, 16), "concepts": [1, 2], "gt": gt, "pred": pred})
        split, results = build(videos)
        ours = score(videos)
        coco = COCO()
        coco.dataset = {"images": split["images"], "annotations": split["annotations"],
                        "categories": split["categories"][:2]}
        with contextlib.redirect_stdout(io.StringIO()):
            coco.createIndex()
            detections = coco.loadRes([{k: r[k] for k in ("image_id", "category_id", "segmentation", "score")}
                                       for r in results])
            reference = COCOeval(coco, detections, "segm")
            reference.evaluate()
            reference.accumulate()
            reference.summarize()
        got = [ours["AP"], ours["AP50"], ours["AP75"]]
        np.testing.assert_allclose(got, reference.stats[:3], rtol=0, atol=1e-12, err_msg=f"case {case}")


# ---------------------------------------------------------------- cgF1 / pmF1 / IL_MCC (sam3), by hand

P1 = 1 / (1 + 1e-4)  # sam3's precision (and recall) for 1 TP and no error: TP / (TP + 0 + 1e-4)
F1_PERFECT = 2 * P1 * P1 / (P1 + P1 + 1e-4)  # its F1, with sam3's 1e-4 in the denominator


def cg(gt: dict, pred: dict, concepts=(1,), frames: int = 2) -> dict:
    m = score([{"id": 1, "frames": frames, "size": (4, 4), "concepts": list(concepts), "gt": gt, "pred": pred}])
    return {k: m[k] for k in ("cgF1", "pmF1", "IL_MCC")}


def test_cgf1_perfect_case():
    # (frame 0, mug): one instance found exactly: IL TP; (frame 1, mug): nothing there, nothing predicted: IL TN.
    # IL_MCC = (1 * 1 - 0) / (sqrt(1 * 1 * 1 * 1) + 1e-6); TP = 1 at every threshold, no FP or FN.
    got = cg({1: (1, {0: SQUARE})}, {7: (1, {0: (SQUARE, 0.9)})})
    mcc = 1 / (1 + 1e-6)
    assert got["IL_MCC"] == pytest.approx(mcc, abs=1e-15)
    assert got["pmF1"] == pytest.approx(F1_PERFECT, abs=1e-15)
    assert got["cgF1"] == pytest.approx(F1_PERFECT * mcc, abs=1e-15)


def test_cgf1_all_negative_is_zero():
    # every pair is an IL TN: TP = FP = FN = 0, so MCC = 0 / (0 + 1e-6) = 0 and pmF1 = 0 / 1e-4 = 0
    assert cg({}, {}, concepts=(1, 2)) == {"cgF1": 0.0, "pmF1": 0.0, "IL_MCC": 0.0}


def test_cgf1_false_positive_on_a_negative_phrase():
    # the perfect case plus a prediction of the absent phrase 2 on frame 0 (IL FP) and a mug prediction below the
    # 0.5 score threshold on frame 1 (ignored, the pair stays a TN). IL: TP 1, TN 2 (mug f1, bowl f1), FP 1, FN 0:
    # MCC = (1 * 2 - 1 * 0) / (sqrt((1 + 1) (1 + 0) (2 + 1) (2 + 0)) + 1e-6) = 2 / (sqrt(12) + 1e-6).
    # pmF1 counts FPs only on pairs with ground truth: unchanged.
    got = cg({1: (1, {0: SQUARE})}, {7: (1, {0: (SQUARE, 0.9), 1: (SQUARE, 0.3)}), 8: (2, {0: (SQUARE, 0.8)})},
             concepts=(1, 2))
    mcc = 2 / (math.sqrt(12) + 1e-6)
    assert got["IL_MCC"] == pytest.approx(mcc, abs=1e-15)
    assert got["pmF1"] == pytest.approx(F1_PERFECT, abs=1e-15)
    assert got["cgF1"] == pytest.approx(F1_PERFECT * mcc, abs=1e-15)


def test_cgf1_missed_instance_and_partial_iou():
    # frame 0 holds two mugs, one found exactly: TP 1, FN 1 at every threshold. P = 1 / (1 + 1e-4),
    # R = 1 / (2 + 1e-4), F1 = 2PR / (P + R + 1e-4). IL: TP (frame 0), TN (frame 1): MCC = 1 / (1 + 1e-6).
    other = rect(4, 4, 2, 2, 4, 4)
    got = cg({1: (1, {0: SQUARE}), 2: (1, {0: other})}, {7: (1, {0: (SQUARE, 0.9)})})
    p, r = 1 / (1 + 1e-4), 1 / (2 + 1e-4)
    f1 = 2 * p * r / (p + r + 1e-4)
    assert got["pmF1"] == pytest.approx(f1, abs=1e-15)
    assert got["cgF1"] == pytest.approx(f1 / (1 + 1e-6), abs=1e-15)
    # a prediction of IoU 7/8 (7 of the 8 pixels): TP at 0.50..0.85 (8 thresholds), at 0.90 and 0.95 an FP on a
    # pair with ground truth and an FN: F1 = 0 there. pmF1 = 8 / 10 * F1_PERFECT.
    wide = rect(4, 4, 0, 0, 2, 4)
    seven = wide.copy()
    seven[1, 3] = False
    got = cg({1: (1, {0: wide})}, {7: (1, {0: (seven, 0.9)})})
    assert got["pmF1"] == pytest.approx(0.8 * F1_PERFECT, abs=1e-15)


def test_cgf1_degenerate_mcc_without_negative_pairs():
    # only positive pairs (the mug is on both frames and found): TN = FP = 0, so TP TN - FP FN = 0 and the
    # denominator is 0 + 1e-6: IL_MCC = 0 and cgF1 = 0 although pmF1 is perfect
    got = cg({1: (1, {0: SQUARE, 1: SQUARE})}, {7: (1, {0: (SQUARE, 0.9), 1: (SQUARE, 0.9)})})
    assert got["IL_MCC"] == 0.0 and got["cgF1"] == 0.0
    assert got["pmF1"] == pytest.approx(2 * (2 / (2 + 1e-4)) ** 2 / (2 * 2 / (2 + 1e-4) + 1e-4), abs=1e-15)


# ---------------------------------------------------------------- presence MCC, outside / near acceptance


def test_presence_mcc():
    # pairs (frame, phrase): mug present on frames 0, 1, 2; bowl absent everywhere. Presence >= 0.5 is "present":
    # mug: 0.9 TP, 0.5 TP, 0.2 FN; bowl: 0.1 TN, 0.4 TN, 0.7 FP -> TP 2, TN 2, FP 1, FN 1:
    # MCC = (2 * 2 - 1 * 1) / (sqrt(3 * 3 * 3 * 3) + 1e-6) = 3 / (9 + 1e-6)
    presence = {(0, 1): 0.9, (1, 1): 0.5, (2, 1): 0.2, (0, 2): 0.1, (1, 2): 0.4, (2, 2): 0.7}
    video = {"id": 1, "frames": 3, "size": (4, 4), "concepts": [1, 2],
             "gt": {1: (1, {0: SQUARE, 1: SQUARE, 2: SQUARE})}, "presence": presence}
    assert score([video])["presence_MCC"] == pytest.approx(3 / (9 + 1e-6), abs=1e-15)
    assert score([{**video, "presence": {}}])["presence_MCC"] == -1.0  # no presence records: undefined


def test_outside_and_near_acceptance():
    # "mug" (1) is queried; a bowl (2, a near category of mug) and a cube (3) are not. The bowl is visible on
    # frames 0, 1 and covered (IoU >= 0.5) by mug instance 7 on frame 0: 1 of 2 views, at least half -> accepted.
    # The cube is visible on frames 0, 1, 2 and covered on frame 2 only: 1 of 3 -> not accepted.
    # outside_accepted = 1 / 2 (bowl, cube); near_accepted = 1 / 1 (bowl).
    bowl, cube = rect(4, 4, 0, 0, 2, 2), rect(4, 4, 2, 2, 4, 4)
    video = {"id": 1, "frames": 3, "size": (4, 4), "concepts": [1],
             "gt": {1: (1, {0: rect(4, 4, 0, 3, 1, 4)}), 2: (2, {0: bowl, 1: bowl}),
                    3: (3, {0: cube, 1: cube, 2: cube})},
             "pred": {7: (1, {0: (bowl, 0.9), 1: (rect(4, 4, 3, 0, 4, 1), 0.9)}), 8: (1, {2: (cube, 0.8)})}}
    metrics = score([video], near={"mug": ["bowl"]})
    assert metrics["outside_accepted"] == 0.5 and metrics["near_accepted"] == 1.0


# ---------------------------------------------------------------- validation and the scorer's entry points


def small_case() -> tuple[dict, list[dict]]:
    return build([{"id": 1, "frames": 2, "size": (4, 4), "concepts": [1, 2], "gt": {1: (1, {0: SQUARE})},
                   "pred": {7: (1, {0: (SQUARE, 0.9), 1: (SQUARE, 0.4)})}, "presence": {(0, 1): 0.9}},
                  {"id": 2, "frames": 1, "size": (4, 4), "concepts": [1], "gt": {}}])


def _set(i: int, **values):
    def edit(results: list) -> None:
        results[i].update(values)
    return edit


def _drop(i: int, key: str):
    def edit(results: list) -> None:
        del results[i][key]
    return edit


BAD = [
    (_set(0, video_id=9), "results[0].video_id", "not in the split"),
    (_set(0, image_id=999), "results[0].image_id", "not in the split"),
    (_set(0, image_id=200), "results[0].video_id", "belongs to video 2"),
    (_set(0, category_id=77), "results[0].category_id", "not in the split's categories"),
    (_set(0, category_id=3), "results[0].category_id", "not queried on video 1"),
    (_set(0, score=1.5), "results[0].score", "[0, 1]"),
    (_set(2, presence=-0.1), "results[2].presence", "[0, 1]"),
    (_set(0, segmentation=encode_mask(np.zeros((5, 4), bool))), "results[0].segmentation", ""),
    (_set(1, image_id=100), "results[1]", "duplicate record for this (track_id, image_id)"),
    (_set(1, category_id=2, phrase="bowl"), "results[1].category_id", "track 7 of video 1 has category 1"),
    (_drop(0, "phrase"), "results[0]", "missing"),
    (_set(0, phrase="cup"), "results[0].phrase", "not the name of category 1"),
    (_set(2, track_id=7), "results[2].track_id", "presence record carries no track_id"),
]


@pytest.mark.parametrize("edit, field, message", BAD)
def test_bad_results_are_refused_naming_file_entry_and_field(edit, field, message):
    split, results = small_case()
    results = copy.deepcopy(results)
    edit(results)
    with pytest.raises(DataError) as info:
        validate_concept_results(results, split, "preds.json")
    assert info.value.file == "preds.json" and info.value.field.startswith(field) and message in str(info.value)


def test_bad_split_parts_are_refused():
    split, results = small_case()
    split["videos"][0]["concepts"] = [1, 42]
    with pytest.raises(DataError, match=r"gt.json: videos\[0\].concepts\[1\]=42: concept is not a category id"):
        validate_concept_results(results, split, "preds.json", split_file="gt.json")
    split, results = small_case()
    split["tracks"][0]["category_id"] = 42
    with pytest.raises(DataError, match=r"tracks\[0\].category_id"):
        validate_concept_results(results, split, "preds.json", split_file="gt.json")
    split, _ = small_case()
    with pytest.raises(InputError, match="score_threshold"):
        evaluate_concept(split, results, score_threshold=2)


def test_scorer_through_evaluate(tmp_path):
    split, results = small_case()
    (tmp_path / "split.json").write_text(json.dumps(split))
    (tmp_path / "results.json").write_text(json.dumps(results))
    metrics = evaluate(tmp_path / "split.json", tmp_path / "results.json", "concept", score_threshold=0.5)
    validate_concept_results(results, split)
    assert metrics == evaluate_concept(split, results)
    # the mug is found on frame 0 and track 7's record on frame 1 (no mug there) is a false positive: DetA = 1 / 2,
    # AssA = 1 / (1 + 2 - 1) (the ground-truth track on 1 frame, track 7 on 2, matched once): HOTA = 1 / 2 (the
    # bowl, queried and absent, has no record: not averaged)
    assert metrics["HOTA"] == metrics["HOTA/mug"] == pytest.approx(0.5, abs=1e-12)
    results[0]["score"] = 2.0
    (tmp_path / "results.json").write_text(json.dumps(results))
    with pytest.raises(DataError, match="results.json: results.0..score"):
        evaluate(split, tmp_path / "results.json", "concept")
    with pytest.raises(InputError, match="unknown option"):
        evaluate(split, results, "concept", protocol="davis2017")


def test_command_line_scores_a_concept_results_file(tmp_path, capsys):
    from vision.cli.evaluate import main

    split, results = small_case()
    (tmp_path / "split.json").write_text(json.dumps(split))
    (tmp_path / "results.json").write_text(json.dumps(results))
    assert main(["--split", str(tmp_path / "split.json"), "--results", str(tmp_path / "results.json"),
                 "--task", "concept", "--out", str(tmp_path / "m.json")]) == 0
    assert "HOTA/mug" in capsys.readouterr().out
    validate_concept_results(results, split)
    assert json.loads((tmp_path / "m.json").read_text()) == pytest.approx(evaluate_concept(split, results))


def test_hundreds_of_instances_on_one_frame_are_scored(tmp_path, capsys):
    # 300 disjoint 2x2 instances on one 40x40 frame, each found exactly: every figure is perfect but video AP, which
    # keeps 100 instances per video and phrase (recall 1/3: precision 1 at 34 of the 101 recall points)
    from vision.cli.evaluate import main

    cells = [(2 * (i // 20), 2 * (i % 20)) for i in range(300)]
    gt = {t + 1: (1, {0: rect(40, 40, y, x, y + 2, x + 2)}) for t, (y, x) in enumerate(cells)}
    pred = {t + 1: (1, {0: (rect(40, 40, y, x, y + 2, x + 2), 0.9)}) for t, (y, x) in enumerate(cells)}
    split, results = build([{"id": 1, "frames": 1, "size": (40, 40), "concepts": [1], "gt": gt, "pred": pred}])
    (tmp_path / "split.json").write_text(json.dumps(split))
    (tmp_path / "results.json").write_text(json.dumps(results))
    assert main(["--split", str(tmp_path / "split.json"), "--results", str(tmp_path / "results.json"),
                 "--task", "concept", "--out", str(tmp_path / "m.json")]) == 0
    metrics = json.loads((tmp_path / "m.json").read_text())
    assert metrics["HOTA"] == pytest.approx(1.0) and metrics["AP"] == pytest.approx(34 / 101)
    precision = 300 / (300 + 1e-4)  # sam3's smoothing
    assert metrics["pmF1"] == pytest.approx(2 * precision * precision / (2 * precision + 1e-4), abs=1e-12)


def test_command_line_passes_the_concept_options_and_refuses_them_elsewhere(tmp_path, capsys):
    from vision.cli.evaluate import main

    split, results = small_case()
    (tmp_path / "split.json").write_text(json.dumps(split))
    (tmp_path / "results.json").write_text(json.dumps(results))
    args = ["--split", str(tmp_path / "split.json"), "--results", str(tmp_path / "results.json")]
    assert main([*args, "--task", "concept", "--score-threshold", "0.95", "--out", str(tmp_path / "m.json")]) == 0
    # at 0.95 no record counts for cgF1: the figures equal the scorer's with that option, not the default's
    strict = evaluate_concept(split, results, score_threshold=0.95)
    assert json.loads((tmp_path / "m.json").read_text()) == pytest.approx(strict)
    assert strict["pmF1"] != evaluate_concept(split, results)["pmF1"]
    with pytest.raises(SystemExit):
        main([*args, "--task", "detection", "--accept-iou", "0.3"])
    assert "does not apply to --task detection" in capsys.readouterr().err
