"""J / F / J&F against PyPI vos-benchmark (the SA-V evaluator's code), plus COCO-video tracking evaluation."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image
from vos_benchmark.benchmark import VideoEvaluator
from vos_benchmark.evaluator import Evaluator
from vos_benchmark.utils import _seg2bmap

from tests.evaluation.conftest import blob, label_sequence, noisy_labels
from vision.data.masks import encode_mask
from vision.errors import DataError
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
