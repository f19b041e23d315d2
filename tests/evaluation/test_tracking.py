"""J / F / J&F against PyPI vos-benchmark (the SA-V evaluator's code), plus COCO-video tracking evaluation."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image
from vos_benchmark.benchmark import VideoEvaluator
from vos_benchmark.evaluator import Evaluator
from vos_benchmark.utils import _seg2bmap

from tests.evaluation.conftest import blob, label_sequence, noisy_labels, perturb
from vision.data.masks import encode_mask
from vision.errors import DataError, InputError
from vision.evaluation.tracking import (boundary_f_measure, boundary_map, evaluate_sequence, evaluate_tracking,
                                        region_similarity, sequence_statistics)


def reference_per_frame(pred_maps: np.ndarray, gt_maps: np.ndarray) -> tuple[dict, dict]:
    """Per-object per-frame J and F (0-1) from vos-benchmark's Evaluator fed label maps frame by frame."""
    ev = Evaluator()
    for p, g in zip(pred_maps, gt_maps):
        ev.feed_frame(p, g)
    return ({k: np.asarray(v, float) for k, v in ev.object_iou.items()},
            {k: np.asarray(v, float) for k, v in ev.boundary_f.items()})


def test_boundary_map_matches_reference():
    rng = np.random.default_rng(1)
    for _ in range(10):
        m = blob(rng, 37, 53, 3, 20)
        np.testing.assert_array_equal(boundary_map(m), _seg2bmap(m))
    full = np.ones((9, 7), bool)
    np.testing.assert_array_equal(boundary_map(full), _seg2bmap(full))


def test_blobs_match_vos_benchmark_per_frame_and_per_object():
    rng = np.random.default_rng(3)
    gt = label_sequence(rng, 8, 60, 80, 3)
    pred = noisy_labels(rng, gt)
    assert set(np.unique(gt[0])) == {0, 1, 2, 3}
    ref_j, ref_f = reference_per_frame(pred, gt)
    ev = Evaluator()
    for p, g in zip(pred, gt):
        ev.feed_frame(p, g)
    mean_j, mean_f = ev.conclude()
    for k in (1, 2, 3):
        ours = evaluate_sequence(list(pred == k), list(gt == k))
        np.testing.assert_allclose(ours["J_per_frame"], ref_j[k], atol=1e-6)
        np.testing.assert_allclose(ours["F_per_frame"], ref_f[k], atol=1e-6)
        assert ours["J"] == pytest.approx(mean_j[k] / 100, abs=1e-6)
        assert ours["F"] == pytest.approx(mean_f[k] / 100, abs=1e-6)
        assert 0.2 < ours["J"] < 1.0 and 0.2 < ours["F"] < 1.0


def test_edge_cases_match_vos_benchmark():
    h, w = 40, 50
    rng = np.random.default_rng(5)
    obj = blob(rng, h, w, 5, 12)
    other = np.roll(obj, 9, axis=1)
    empty = np.zeros((h, w), bool)
    # frame 0 introduces object 1 to the reference evaluator; then: empty prediction, empty GT, both empty,
    # and disjoint masks (P + R = 0 is impossible here, but precision and recall are both small).
    preds = [obj, empty, other, empty, other]
    gts = [obj, obj, empty, empty, obj]
    ref_j, ref_f = reference_per_frame(np.stack(preds).astype(np.uint8), np.stack(gts).astype(np.uint8))
    ours = evaluate_sequence(preds, gts)
    np.testing.assert_allclose(ours["J_per_frame"], ref_j[1], atol=1e-6)
    np.testing.assert_allclose(ours["F_per_frame"], ref_f[1], atol=1e-6)
    assert ours["J_per_frame"][1:4] == [0.0, 0.0, 1.0]
    assert ours["F_per_frame"][1:4] == [0.0, 0.0, 1.0]
    assert region_similarity(empty, empty) == 1.0 and boundary_f_measure(empty, empty) == 1.0


def test_tolerance_in_pixels_and_diagonal_fraction():
    gt = np.zeros((100, 100), bool)
    gt[20:60, 20:60] = True
    shifted = np.roll(gt, 2, axis=1)
    # ceil(0.008 * 141.4) = 2 px: a 2-pixel shift is within tolerance; a 1-pixel tolerance is not enough.
    assert boundary_f_measure(shifted, gt) == pytest.approx(1.0)
    assert boundary_f_measure(shifted, gt, tolerance=1) < 1.0


def test_sequence_statistics_hand_computed():
    # n = 8: bin edges round(linspace(1, 8, 5)) - 1 = [0, 2, 4, 5, 7]; first bin v[0:3], last bin v[5:8]
    v = [1.0, 1.0, 0.9, 0.6, 0.5, 0.4, 0.2, 0.0]
    mean, recall, decay = sequence_statistics(v)
    assert mean == pytest.approx(np.mean(v))
    assert recall == pytest.approx(4 / 8)
    assert decay == pytest.approx((1.0 + 1.0 + 0.9) / 3 - (0.4 + 0.2 + 0.0) / 3)


def _video_split_from_labels(gt_maps: dict[int, np.ndarray]) -> dict:
    """A COCO-video split from per-video label maps (one track per label; track id = 10 * video + label)."""
    images, annotations, tracks, videos = [], [], [], []
    image_id = 1
    for vid, maps in gt_maps.items():
        videos.append({"id": vid, "name": f"v{vid}", "ordered": True})
        labels = sorted(int(k) for k in np.unique(maps) if k)
        tracks += [{"id": 10 * vid + k, "video_id": vid, "category_id": 1, "caption": "x"} for k in labels]
        for t, m in enumerate(maps):
            images.append({"id": image_id, "video_id": vid, "frame_index": t, "height": m.shape[0],
                           "width": m.shape[1], "file_name": f"{vid}/{t}.png"})
            for k in labels:
                if (m == k).any():
                    annotations.append({"id": len(annotations) + 1, "image_id": image_id, "category_id": 1,
                                        "track_id": 10 * vid + k, "segmentation": encode_mask(m == k),
                                        "bbox": [0, 0, 1, 1], "area": 1, "iscrowd": 0})
            image_id += 1
    return {"videos": videos, "images": images, "annotations": annotations, "tracks": tracks,
            "categories": [{"id": 1, "name": "thing"}]}


def _results_from_labels(split: dict, pred_maps: dict[int, np.ndarray]) -> list[dict]:
    out = []
    for img in split["images"]:
        m = pred_maps[img["video_id"]][img["frame_index"]]
        for k in np.unique(m):
            if k:
                out.append({"video_id": img["video_id"], "track_id": 10 * img["video_id"] + int(k),
                            "image_id": img["id"], "segmentation": encode_mask(m == k), "score": 0.9})
    return out


def test_evaluate_tracking_matches_vos_benchmark_video_evaluator(tmp_path):
    rng = np.random.default_rng(11)
    gt_maps = {1: label_sequence(rng, 7, 48, 64, 2), 2: label_sequence(rng, 6, 48, 64, 3)}
    pred_maps = {v: noisy_labels(rng, m) for v, m in gt_maps.items()}
    for v, maps in gt_maps.items():  # the reference only scores objects from the first frame it sees on
        assert len(np.unique(maps[1])) == len(np.unique(maps))
    for root, maps_by_video in (("gt", gt_maps), ("pred", pred_maps)):
        for v, maps in maps_by_video.items():
            (tmp_path / root / f"v{v}").mkdir(parents=True)
            for t, m in enumerate(maps):
                Image.fromarray(m).save(tmp_path / root / f"v{v}" / f"{t:05d}.png")
    ref_j, ref_f = [], []
    for v in gt_maps:
        _, iou, bf = VideoEvaluator(str(tmp_path / "gt"), str(tmp_path / "pred"), skip_first_and_last=True)(f"v{v}")
        ref_j += [iou[k] / 100 for k in sorted(iou)]
        ref_f += [bf[k] / 100 for k in sorted(bf)]
    split = _video_split_from_labels(gt_maps)
    results = _results_from_labels(split, pred_maps)
    metrics = evaluate_tracking(split, results, skip_first_and_last=True)
    assert metrics["num_tracks"] == 5
    np.testing.assert_allclose([t["J"] for t in metrics["per_track"]], ref_j, atol=1e-6)
    np.testing.assert_allclose([t["F"] for t in metrics["per_track"]], ref_f, atol=1e-6)
    assert metrics["J"] == pytest.approx(np.mean(ref_j), abs=1e-6)
    assert metrics["F"] == pytest.approx(np.mean(ref_f), abs=1e-6)
    assert metrics["J&F"] == pytest.approx((np.mean(ref_j) + np.mean(ref_f)) / 2, abs=1e-6)
    # every object is present from the first frame on: DAVIS 2017's protocol scores the same frames
    davis = evaluate_tracking(split, results, protocol="davis2017")
    assert davis["J&F"] == pytest.approx(metrics["J&F"], abs=1e-12) and davis["num_frames"] == metrics["num_frames"]


def test_davis2017_protocol_hand_computed():
    # five frames: object 1 throughout; object 2 leaves after frame 1 but stays predicted to frame 3;
    # object 3 enters at frame 2. All predictions are otherwise perfect.
    gt = np.zeros((5, 20, 30), np.uint8)
    gt[:, 2:8, 2:8] = 1
    gt[:2, 2:8, 12:18] = 2
    gt[2:, 12:18, 20:26] = 3
    pred = gt.copy()
    pred[2:4, 2:8, 12:18] = 2
    split = _video_split_from_labels({1: gt})
    results = _results_from_labels(split, {1: pred})
    davis = evaluate_tracking(split, results, protocol="davis2017")
    per = {t["track_id"]: t for t in davis["per_track"]}
    # first-frame objects 1 and 2 over frames 1..3; object 2: J = 1, 0, 0; object 3 is not scored
    assert sorted(per) == [11, 12] and per[12]["J"] == pytest.approx(1 / 3) and per[11]["num_frames"] == 3
    assert davis["J"] == pytest.approx((1 + 1 / 3) / 2)
    vos = evaluate_tracking(split, results)
    per = {t["track_id"]: t for t in vos["per_track"]}
    # vos-benchmark: object 2 over frames 0..4 (J = 1, 1, 0, 0, 1), object 3 from frame 2 on
    assert per[12]["J"] == pytest.approx(3 / 5) and per[13]["num_frames"] == 3 and per[13]["J"] == 1.0
    assert vos["J"] == pytest.approx((1 + 3 / 5 + 1) / 3)
    # prompted views go first: without frame 0, frame 1 is DAVIS's first frame and frames 2..3 are scored
    prompted = evaluate_tracking(split, results, protocol="davis2017", prompted_image_ids=[1])
    assert {t["track_id"]: t["J"] for t in prompted["per_track"]} == {11: 1.0, 12: 0.0}
    with pytest.raises(InputError, match="protocol"):
        evaluate_tracking(split, results, protocol="davis")


def test_prompted_views_missing_predictions_and_hungarian():
    rng = np.random.default_rng(2)
    gt_maps = {1: label_sequence(rng, 5, 40, 50, 2)}
    split = _video_split_from_labels(gt_maps)
    perfect = _results_from_labels(split, gt_maps)
    m = evaluate_tracking(split, perfect)
    assert m["J"] == 1.0 and m["F"] == 1.0 and m["J&F"] == 1.0
    assert m["mIoU"] == 1.0 and m["matched_mIoU"] == 1.0 and m["match_recall"] == 1.0

    # Drop track 11's prediction on image 1 (its first view): J drops by 1/5 for that track ...
    partial = [r for r in perfect if not (r["track_id"] == 11 and r["image_id"] == 1)]
    m = evaluate_tracking(split, partial)
    per = {t["track_id"]: t for t in m["per_track"]}
    assert per[11]["J"] == pytest.approx(4 / 5) and per[12]["J"] == 1.0
    # ... unless image 1 is the prompted view, which cross-view consistency leaves out.
    m = evaluate_tracking(split, partial, prompted_image_ids=[1])
    assert m["J&F"] == 1.0 and m["num_frames"] == 2 * 4

    # Arbitrary predicted track ids: J&F refuses them unless allowed; Hungarian matching recovers the pairing.
    swapped = [dict(r, track_id={11: 7, 12: 8}[r["track_id"]]) for r in perfect]
    with pytest.raises(DataError, match=r"results\[0\]\.track_id"):
        evaluate_tracking(split, swapped)
    m = evaluate_tracking(split, swapped, allow_unknown_tracks=True)
    assert m["J"] < 1.0 and m["matched_mIoU"] == 1.0 and m["match_recall"] == 1.0

    # Hand-checked spatio-temporal IoU: a prediction covering three quarters of the object's pixels per view.
    rows = []
    for img in split["images"]:
        mask = gt_maps[1][img["frame_index"]] == 1
        half = mask.copy()
        ys, xs = np.nonzero(mask)
        keep = np.argsort(ys * 1000 + xs)[: 3 * len(ys) // 4]
        half[:] = False
        half[ys[keep], xs[keep]] = True
        rows.append((img, mask, half))
    inter = sum(int(h.sum()) for _, _, h in rows)
    union = sum(int(m.sum()) for _, m, _ in rows)
    res = [{"video_id": 1, "track_id": 11, "image_id": img["id"], "segmentation": encode_mask(h), "score": 1.0}
           for img, _, h in rows]
    m = evaluate_tracking(split, res)
    assert 0.7 < inter / union < 0.8
    assert m["match_recall"] == 0.5  # one of the two GT tracks is matched
    assert m["matched_mIoU"] == pytest.approx(inter / union)
    assert m["mIoU"] == pytest.approx(inter / union / 2)
    assert evaluate_tracking(split, res, match_iou=0.8)["match_recall"] == 0.0


def test_duplicate_and_wrong_video():
    rng = np.random.default_rng(4)
    split = _video_split_from_labels({1: label_sequence(rng, 3, 20, 20, 1)})
    res = _results_from_labels(split, {1: label_sequence(np.random.default_rng(4), 3, 20, 20, 1)})
    with pytest.raises(DataError, match="duplicate"):
        evaluate_tracking(split, res + res[:1], results_file="r.json")
    bad = dict(res[0], video_id=2)
    split["videos"].append({"id": 2, "name": "v2", "ordered": True})
    with pytest.raises(DataError, match="belongs to video 1"):
        evaluate_tracking(split, [bad])


def _write_pngs(root, maps_by_video: dict[int, np.ndarray]) -> None:
    for v, maps in maps_by_video.items():
        (root / f"v{v}").mkdir(parents=True)
        for t, m in enumerate(maps):
            Image.fromarray(m.astype(np.uint8)).save(root / f"v{v}" / f"{t:05d}.png")


def _vos_benchmark(tmp_path, gt_maps: dict, pred_maps: dict, skip_first_and_last: bool) -> dict:
    """vos-benchmark's VideoEvaluator on PNG folders: per (video, label) J and F (0-1), and its global figures
    (means over every object of every video, as ``vos_benchmark.benchmark.benchmark`` computes them)."""
    root = tmp_path / f"skip{int(skip_first_and_last)}"
    _write_pngs(root / "gt", gt_maps)
    _write_pngs(root / "pred", pred_maps)
    evaluator = VideoEvaluator(str(root / "gt"), str(root / "pred"), skip_first_and_last=skip_first_and_last)
    per_object = {}
    for v in gt_maps:
        _, iou, bf = evaluator(f"v{v}")
        per_object.update({10 * v + int(k): (iou[k] / 100, bf[k] / 100) for k in iou})
    j = float(np.mean([jf[0] for jf in per_object.values()]))
    f = float(np.mean([jf[1] for jf in per_object.values()]))
    return {"per_object": per_object, "J": j, "F": f, "J&F": (j + f) / 2}


def _entries_exits_gaps(seed: int = 21) -> tuple[dict, dict]:
    """Four videos, twelve objects: late entries, exits, gaps (absent in the middle), objects never predicted,
    objects predicted before they appear and after they leave, an object only in the first frame, and a predicted
    label that is no ground-truth object."""
    rng = np.random.default_rng(seed)
    frames, h, w = 9, 40, 56
    gt_maps, pred_maps = {}, {}
    # label -> frames where it is in the ground truth, frames where it is predicted
    plans = {
        1: {1: (range(0, 9), range(0, 9)), 2: (range(3, 9), []), 3: (range(0, 4), range(0, 6))},
        2: {1: (list(range(0, 3)) + list(range(6, 9)), range(0, 9)), 2: (range(2, 7), range(1, 7)),
            3: (range(5, 9), range(5, 8))},
        3: {1: (range(0, 1), range(0, 2)), 2: (range(1, 9), range(1, 9)), 3: (range(4, 6), range(4, 6)),
            7: ([], range(2, 5))},
        4: {1: (range(0, 8), range(0, 9)), 2: (range(6, 9), range(7, 9)), 3: ([2, 3, 6, 7], range(2, 9))},
    }
    for v, plan in plans.items():
        moving = label_sequence(rng, frames, h, w, max(plan))
        gt = np.zeros_like(moving)
        pred = np.zeros_like(moving)
        for label, (in_gt, in_pred) in plan.items():
            for t in in_gt:
                gt[t][moving[t] == label] = label
            for t in in_pred:
                noisy = perturb(rng, moving[t] == label)
                pred[t][noisy & (pred[t] == 0)] = label
        gt_maps[v], pred_maps[v] = gt, pred
    return gt_maps, pred_maps


def test_late_entry_hand_computed():
    # four frames; object 1 perfectly predicted throughout, object 2 enters at frame 2 and is never predicted
    h, w = 20, 20
    gt = np.zeros((4, h, w), np.uint8)
    gt[:, 2:8, 2:8] = 1
    gt[2:, 12:18, 12:18] = 2
    pred = np.where(gt == 1, 1, 0).astype(np.uint8)
    split = _video_split_from_labels({1: gt})
    results = _results_from_labels(split, {1: pred})
    m = evaluate_tracking(split, results)
    per = {t["track_id"]: t for t in m["per_track"]}
    assert per[11]["J"] == 1.0 and per[11]["num_frames"] == 4
    assert per[12]["J"] == 0.0 and per[12]["num_frames"] == 2  # frames before it enters are not scored
    assert m["J"] == pytest.approx(0.5)


def test_entries_exits_and_gaps_match_vos_benchmark(tmp_path):
    gt_maps, pred_maps = _entries_exits_gaps()
    split = _video_split_from_labels(gt_maps)
    split["tracks"].append({"id": 37, "video_id": 3, "category_id": 1, "caption": "x"})  # predicted, never in GT
    results = _results_from_labels(split, pred_maps)
    assert len(split["tracks"]) == 13  # twelve ground-truth objects and one that is only predicted
    for skip in (False, True):
        ref = _vos_benchmark(tmp_path, gt_maps, pred_maps, skip)
        m = evaluate_tracking(split, results, skip_first_and_last=skip)
        ours = {t["track_id"]: (t["J"], t["F"]) for t in m["per_track"]}
        assert sorted(ours) == sorted(ref["per_object"])
        for track_id, (j, f) in ref["per_object"].items():
            assert ours[track_id][0] == pytest.approx(j, abs=1e-6), track_id
            assert ours[track_id][1] == pytest.approx(f, abs=1e-6), track_id
        for key in ("J", "F", "J&F"):
            assert m[key] == pytest.approx(ref[key], abs=1e-6), key
        assert m["num_tracks"] == len(ref["per_object"])
    # the object only in the first frame is not scored once the first frame is dropped; 37 never is
    assert 37 not in ours and 31 not in ours


def test_unknown_predicted_tracks_do_not_change_j_and_f(tmp_path):
    gt_maps, pred_maps = _entries_exits_gaps(seed=5)
    split = _video_split_from_labels(gt_maps)
    results = _results_from_labels(split, pred_maps)  # label 7 of video 3 is track 37: not a split track
    with pytest.raises(DataError, match="track_id"):
        evaluate_tracking(split, results)
    m = evaluate_tracking(split, results, allow_unknown_tracks=True)
    ref = _vos_benchmark(tmp_path, gt_maps, pred_maps, False)
    assert m["J&F"] == pytest.approx(ref["J&F"], abs=1e-6)


def test_unlabelled_frames_are_not_scored():
    # YouTube-VOS / MOSE label some frames only: an image marked annotated: false has no ground truth, so a
    # prediction there is neither rewarded nor punished (without the mark it would count as a false positive)
    h, w = 20, 20
    gt = np.zeros((4, h, w), np.uint8)
    gt[:, 2:8, 2:8] = 1
    gt[1] = 0  # frame 1 carries no label in the split
    pred = np.zeros_like(gt)
    pred[:, 2:8, 2:8] = 1  # the object is really there on frame 1 too
    split = _video_split_from_labels({1: gt})
    results = _results_from_labels(split, {1: pred})
    unmarked = evaluate_tracking(split, results)
    assert unmarked["J"] < 1.0
    frame1 = sorted((im for im in split["images"]), key=lambda im: im["frame_index"])[1]
    frame1["annotated"] = False
    marked = evaluate_tracking(split, results)
    assert marked["J"] == 1.0 and marked["per_track"][0]["num_frames"] == 3


def test_a_split_whose_tracks_have_boxes_but_no_masks_is_refused_not_scored_zero():
    """Tracking is scored on masks: a box-only tracked annotation was an empty mask, and a split of them scored
    J&F 0.0 over 0 tracks without a word."""
    from vision.evaluation.evaluate import evaluate

    rng = np.random.default_rng(5)
    gt_maps = {1: label_sequence(rng, 4, 24, 32, 2)}
    split = _video_split_from_labels(gt_maps)
    results = _results_from_labels(split, gt_maps)
    boxes_only = {**split, "annotations": [{k: v for k, v in a.items() if k != "segmentation"}
                                           for a in split["annotations"]]}
    with pytest.raises(DataError, match="a tracked annotation needs an RLE segmentation") as info:
        evaluate(boxes_only, results, "tracking")
    assert info.value.field == "annotations[0].segmentation"
    untracked = {**split, "annotations": [{k: v for k, v in a.items() if k != "track_id"}
                                          for a in split["annotations"]]}
    with pytest.raises(DataError, match="no tracked annotations"):
        evaluate(untracked, [], "tracking")
    assert evaluate(split, results, "tracking")["J&F"] == pytest.approx(1.0)
