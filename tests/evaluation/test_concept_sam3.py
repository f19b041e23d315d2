"""The concept scorer against sam3's evaluators and trackeval's Evaluator on random cases: per-frame cgF1 / pmF1 /
IL_MCC (sam3's image ``CGF1Eval``), their video forms (sam3's ``VideoCGF1Evaluator``), phrase-HOTA (sam3's
``VideoPhraseHotaEvaluator``) and HOTA averaged over the queried phrases with a detection, with IDSW (trackeval's
``Evaluator`` on YouTube-VIS files); the references are rebuilt in :mod:`tests.evaluation.sam3_reference`. Then the two conventions
that move figures, on the hand cases of the issue."""

from __future__ import annotations

import numpy as np
import pytest

from tests.evaluation import sam3_reference as ref
from vision.data.masks import encode_mask, mask_to_bbox
from vision.evaluation.concept import evaluate_concept
from vision.evaluation.tasks.concept import validate_concept_results

PHRASES = {1: "mug", 2: "bowl", 3: "cube"}
H, W = 6, 8


def rect(y0: int, x0: int, y1: int, x1: int) -> np.ndarray:
    m = np.zeros((H, W), bool)
    m[y0:y1, x0:x1] = True
    return m


def build(videos: list[dict]) -> tuple[dict, list[dict]]:
    """Split and results from ``{id, frames, concepts, unannotated (frame indices), gt {track: (category, {frame:
    mask})}, pred {track: (category, {frame: (mask, score)})}}``; image ids ``100 * video + frame``."""
    split: dict = {"images": [], "annotations": [], "videos": [], "tracks": [],
                   "categories": [{"id": k, "name": v} for k, v in PHRASES.items()]}
    results: list[dict] = []
    for v in videos:
        split["videos"].append({"id": v["id"], "name": f"v{v['id']}", "concepts": list(v["concepts"])})
        for f in range(v["frames"]):
            image = {"id": 100 * v["id"] + f, "width": W, "height": H, "video_id": v["id"], "frame_index": f,
                     "file_name": f"{v['id']}/{f}.png"}
            if f in v.get("unannotated", ()):
                image["annotated"] = False
            split["images"].append(image)
        for track_id, (category, masks) in v["gt"].items():
            split["tracks"].append({"id": track_id, "video_id": v["id"], "category_id": category})
            for f, m in masks.items():
                split["annotations"].append({"id": len(split["annotations"]) + 1, "image_id": 100 * v["id"] + f,
                                             "track_id": track_id, "category_id": category,
                                             "segmentation": encode_mask(m), "bbox": mask_to_bbox(m),
                                             "area": float(m.sum()), "iscrowd": 0})
        for track_id, (category, masks) in v["pred"].items():
            for f, (m, score) in masks.items():
                results.append({"video_id": v["id"], "image_id": 100 * v["id"] + f, "track_id": track_id,
                                "category_id": category, "phrase": PHRASES[category],
                                "segmentation": encode_mask(m), "bbox": mask_to_bbox(m), "score": score})
    validate_concept_results(results, split)
    return split, results


def random_case(rng: np.random.Generator) -> list[dict]:
    """2-5 videos of 1-4 frames: queried phrases present and absent, masks on a coarse grid (IoUs tie), empty
    ground-truth masks, predictions jittered, missed, switched, with empty masks at high scores, scores of exactly
    0.5, false positives on absent phrases, a video or a whole case without predictions, unannotated frames."""
    videos = []
    no_predictions = rng.random() < 0.1
    for vid in range(1, int(rng.integers(2, 6)) + 1):
        frames = int(rng.integers(1, 5))
        concepts = sorted(rng.choice(list(PHRASES), size=int(rng.integers(1, 4)), replace=False).tolist())
        gt, pred = {}, {}
        for k in range(int(rng.integers(0, 4))):
            category = int(rng.choice(concepts[:2])) if rng.random() < 0.9 else 3  # 3 may be outside the concepts
            masks = {}
            for f in range(frames):
                if rng.random() < 0.75:
                    y, x = 2 * rng.integers(0, 3, 2)
                    masks[f] = rect(y, x, y + 2 * int(rng.integers(1, 3)), x + 2 * int(rng.integers(1, 3)))
                    if rng.random() < 0.1:
                        masks[f] = np.zeros((H, W), bool)  # an annotation with an empty mask: not present
            gt[10 * vid + k] = (category, masks)
            if category in concepts and rng.random() < 0.8:
                for f, m in masks.items():
                    if rng.random() < 0.8:
                        track = 50 * vid + k + (20 if rng.random() < 0.15 else 0)
                        shift = (2 * int(rng.integers(-1, 2)), int(rng.integers(-1, 2))) if rng.random() < 0.4 else (0, 0)
                        moved = np.roll(m, shift, axis=(0, 1))
                        if rng.random() < 0.1:
                            moved = np.zeros((H, W), bool)
                        score = 0.5 if rng.random() < 0.1 else float(np.round(rng.random(), 2))
                        pred.setdefault(track, (category, {}))[1][f] = (moved, score)
        for k in range(int(rng.integers(0, 3))):  # false positives, empty ones among them
            category = int(rng.choice(concepts))
            masks = {}
            for f in range(frames):
                if rng.random() < 0.6:
                    m = rect(0, 0, 2, 2) if rng.random() < 0.8 else np.zeros((H, W), bool)
                    masks[f] = (m, float(np.round(rng.uniform(0.3, 1.0), 2)))
            if masks:
                pred[90 * vid + k] = (category, masks)
        unannotated = [f for f in range(frames) if rng.random() < 0.1]
        videos.append({"id": vid, "frames": frames, "concepts": concepts, "gt": gt,
                       "pred": {} if no_predictions or rng.random() < 0.1 else pred,
                       "unannotated": unannotated if len(unannotated) < frames else []})
    return videos


CASES = 40


def cases(seed: int, count: int = CASES):
    rng = np.random.default_rng(seed)
    for case in range(count):
        yield case, *build(random_case(rng))


def test_per_frame_cgf1_equals_sam3_image_evaluator():
    for case, split, results in cases(11):
        got = evaluate_concept(split, results)
        want = ref.image_cgf1(split, results)
        for key in ("cgF1", "pmF1", "IL_MCC"):
            assert got[key] == pytest.approx(want[key], abs=1e-12), (case, key)


def test_video_cgf1_equals_sam3_video_evaluator():
    for case, split, results in cases(12):
        got = evaluate_concept(split, results)
        want = ref.video_cgf1(split, results)
        for key in ("cgF1", "pmF1", "IL_MCC"):
            assert got[f"video_{key}"] == pytest.approx(want[key], abs=1e-12), (case, key)


def test_score_threshold_is_sam3s_for_both_cgf1_forms():
    for case, split, results in cases(13, 10):
        got = evaluate_concept(split, results, score_threshold=0.7)
        image, video = ref.image_cgf1(split, results, 0.7), ref.video_cgf1(split, results, 0.7)
        for key in ("cgF1", "pmF1", "IL_MCC"):
            assert got[key] == pytest.approx(image[key], abs=1e-12), (case, key)
            assert got[f"video_{key}"] == pytest.approx(video[key], abs=1e-12), (case, key)


def test_hota_equals_trackeval_averaging_the_queried_phrases_with_a_detection():
    for case, split, results in cases(14, 20):
        got = evaluate_concept(split, results)
        want = ref.trackeval_hota(split, results, phrase=False)
        assert {k for k in got if k.startswith("HOTA/")} == {k for k in want if k.startswith("HOTA/")}
        if "HOTA" not in want:
            assert got["HOTA"] == -1.0 and got["IDSW"] == want["IDSW"] == 0, case
        for key, value in want.items():
            assert got[key] == pytest.approx(value, abs=1e-9), (case, key)


def test_phrase_hota_equals_sam3_phrase_hota():
    for case, split, results in cases(15, 20):
        got = evaluate_concept(split, results)
        want = ref.trackeval_hota(split, results, phrase=True)
        if not want:  # no (video, phrase) pair with a detection: sam3's evaluator has nothing to score
            assert got["phrase_HOTA"] == -1.0, case
            continue
        for key in ("HOTA", "DetA", "AssA", "LocA", "DetRe", "DetPr", "AssRe", "AssPr"):
            assert got[f"phrase_{key}"] == pytest.approx(want[key], abs=1e-9), (case, key)


# ---------------------------------------------------------------- the conventions that move figures, by hand

SQUARE = rect(0, 0, 2, 2)


def test_an_empty_mask_record_with_a_high_score_counts_as_sam3_counts_it():
    # video 1 queries mug and bowl: the mug is found on frame 0 (image-level TP), frame 1 has nothing (TN) and on
    # frame 0 a bowl record with score 0.9 and an empty mask: an image-level FP (dropping it made (frame 0, bowl)
    # a TN: TP 1, TN 3, IL_MCC 1.0). Pairs: TP 1, FP 1, TN 2, FN 0: IL_MCC = (1 * 2 - 0) / (sqrt(2 * 1 * 3 * 2) +
    # 1e-6) = 2 / sqrt(12) = 0.577.
    empty = np.zeros((H, W), bool)
    split, results = build([{"id": 1, "frames": 2, "concepts": [1, 2], "gt": {1: (1, {0: SQUARE})},
                             "pred": {7: (1, {0: (SQUARE, 0.9)}), 8: (2, {0: (empty, 0.9)})}}])
    got = evaluate_concept(split, results)
    assert got["IL_MCC"] == pytest.approx(2 / (12 ** 0.5 + 1e-6), abs=1e-12)
    assert got["IL_MCC"] == pytest.approx(ref.image_cgf1(split, results)["IL_MCC"], abs=1e-12)
    # per video: (video 1, mug) TP, (video 1, bowl) FP (its instance exists): MCC = 0 (no TN), as sam3's video one
    assert got["video_IL_MCC"] == ref.video_cgf1(split, results)["IL_MCC"] == 0.0
    # HOTA sees non-empty masks only (sam3's phrase-HOTA sets area-0 masks to None): the mug perfect, the bowl
    # (no ground truth, no non-empty record) an empty class, not averaged
    assert got["HOTA"] == got["HOTA/mug"] == got["phrase_HOTA"] == 1.0 and "HOTA/bowl" not in got


def test_false_positives_on_a_queried_phrase_without_ground_truth_lower_hota():
    # mug found on the three frames with one id switch; bowl (queried, absent) gets a false positive track. The
    # bowl's class has detections, so trackeval averages it: HOTA = (HOTA/mug + 0) / 2. sam3's phrase-HOTA pools
    # both pairs into one class: the bowl's detections are false positives of that class.
    other = rect(2, 2, 4, 4)
    videos = [{"id": 1, "frames": 3, "concepts": [1, 2], "gt": {1: (1, {0: SQUARE, 1: SQUARE, 2: SQUARE})},
               "pred": {7: (1, {0: (SQUARE, 0.9), 1: (SQUARE, 0.9)}), 9: (1, {2: (SQUARE, 0.8)}),
                        8: (2, {0: (other, 0.8), 1: (other, 0.8)})}}]
    # mug: DetA 1 (IoU 1 everywhere); ground truth on 3 frames matched to track 7 twice (2 frames) and 9 once:
    # AssA = (2 * 2 / (3 + 2 - 2) + 1 * 1 / (3 + 1 - 1)) / 3 = 5 / 9, HOTA/mug = sqrt(5 / 9) = 0.745 (the HOTA the
    # scorer gave when it averaged the phrases with ground truth only). Phrase-HOTA: the bowl's 2 detections are
    # false positives of the one class: DetA = 3 / 5, AssA 5 / 9, HOTA = sqrt(1 / 3) = 0.577.
    split, results = build(videos)
    got = evaluate_concept(split, results)
    assert got["HOTA/mug"] == pytest.approx((5 / 9) ** 0.5, abs=1e-12) and got["HOTA/bowl"] == 0.0
    assert got["HOTA"] == pytest.approx((5 / 9) ** 0.5 / 2, abs=1e-12)
    assert got["phrase_HOTA"] == pytest.approx((1 / 3) ** 0.5, abs=1e-12)
    without_fp = evaluate_concept(*build([{**videos[0], "pred": {k: v for k, v in videos[0]["pred"].items()
                                                                  if k != 8}}]))
    assert got["phrase_HOTA"] < without_fp["phrase_HOTA"] == pytest.approx(got["HOTA/mug"], abs=1e-12)
    assert got["phrase_HOTA"] == pytest.approx(ref.trackeval_hota(split, results, phrase=True)["HOTA"], abs=1e-9)


def test_phrase_hota_keeps_instances_above_the_threshold_only():
    # an instance of mean score exactly 0.5 counts for cgF1 (>=) but not for phrase-HOTA (> 0.5, sam3's
    # prob_thresh); HOTA reads no score
    split, results = build([{"id": 1, "frames": 2, "concepts": [1], "gt": {1: (1, {0: SQUARE, 1: SQUARE})},
                             "pred": {7: (1, {0: (SQUARE, 0.5), 1: (SQUARE, 0.5)})}}])
    got = evaluate_concept(split, results)
    assert got["HOTA"] == 1.0 and got["phrase_HOTA"] == 0.0 and got["video_pmF1"] > 0.99
