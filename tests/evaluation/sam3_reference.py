"""The concept scorer's references, rebuilt for the parity tests (test-only; nothing of ``vision`` is used to score).

sam3 (facebookresearch/sam3) is not installable as a library here, so its evaluators' steps are rebuilt on the
libraries they run on (pycocotools, PyPI trackeval), each function naming the sam3 code it follows:

- :func:`image_cgf1`: ``sam3/eval/cgf1_eval.py`` ``CGF1Eval`` (``computeIoU``, ``evaluateImg``, ``accumulate``,
  ``summarize``) as ``CGF1Evaluator`` runs it on SA-Co's images, each an (image, noun phrase) pair;
- :func:`video_cgf1`: ``sam3/eval/saco_veval_evaluators.py`` ``VideoCGF1Evaluator``: every (video, phrase) pair
  remapped to one video (``remap_video_category_pairs_to_unique_video_ids``, negative pairs from
  ``video_np_pairs``), then ``ytvis_eval.VideoDemoF1Eval``: ``CGF1Eval`` with ``YTVISevalMixin.computeIoU``'s
  masklet IoU (summed intersections over summed unions, 1 when both are empty), predictions unsorted;
- :func:`trackeval_hota`: PyPI trackeval's ``Evaluator`` on its ``YouTubeVIS`` dataset (files in a folder) with
  ``HOTA`` and ``CLEAR``; with ``phrase=True`` sam3's ``VideoPhraseHotaEvaluator`` before it: predictions of score
  > the threshold, masks of area 0 set to ``None``, every (video, phrase) pair remapped to one video of one class.

The split and results are first written in sam3's formats by :func:`sam3_image_inputs` and :func:`sam3_video_inputs`
(the conventions the concept scorer documents: the queried (image or video, phrase) pairs, ground truth present
where its mask is not empty, records and tracks in track-id order, an instance's score the mean of its records').
"""

from __future__ import annotations

import contextlib
import io
import json
import tempfile
from collections import defaultdict
from pathlib import Path

import numpy as np
from pycocotools import mask as mask_utils
from scipy.optimize import linear_sum_assignment

IOU_THRS = np.linspace(.5, 0.95, int(np.round((0.95 - .5) / .05)) + 1)  # pycocotools Params().iouThrs


def _area(rle: dict) -> int:
    return int(mask_utils.area(rle))


def _empty_rle(h: int, w: int) -> dict:
    rle = mask_utils.encode(np.asfortranarray(np.zeros((h, w), np.uint8)))
    return {"size": [h, w], "counts": rle["counts"].decode("ascii")}


def _scored_frames(split: dict) -> dict[int, list[dict]]:
    """video id -> its annotated images in frame order."""
    frames: dict[int, list[dict]] = defaultdict(list)
    for im in split["images"]:
        if im.get("annotated", True) is not False:
            frames[im["video_id"]].append(im)
    for images in frames.values():
        images.sort(key=lambda im: (im.get("frame_index", 0), im["id"]))
    return frames


def _queried(split: dict) -> dict[int, list[int]]:
    return {v["id"]: sorted(v["concepts"]) for v in split["videos"]}


def _track_category(split: dict) -> dict[int, int]:
    return {t["id"]: t["category_id"] for t in split["tracks"]}


# ---------------------------------------------------------------- inputs in sam3's formats


def sam3_image_inputs(split: dict, results: list[dict]) -> list[dict]:
    """SA-Co image evaluation inputs: one entry per (scored image, queried phrase) pair ``{"gt": [rle], "dt":
    [(rle, score)]}`` in pair order, ground truth in track order, predictions in track order."""
    category = _track_category(split)
    gt: dict[tuple[int, int], list] = defaultdict(list)
    for ann in sorted(split["annotations"], key=lambda a: a["track_id"]):
        if _area(ann["segmentation"]) > 0:
            gt[(ann["image_id"], category[ann["track_id"]])].append(ann["segmentation"])
    dt: dict[tuple[int, int], list] = defaultdict(list)
    for r in sorted((r for r in results if "presence" not in r), key=lambda r: r["track_id"]):
        dt[(r["image_id"], r["category_id"])].append((r["segmentation"], r["score"]))
    pairs = []
    for video_id, cats in _queried(split).items():
        for im in _scored_frames(split)[video_id]:
            for c in cats:
                pairs.append({"gt": gt[(im["id"], c)], "dt": dt[(im["id"], c)]})
    return pairs


def sam3_video_inputs(split: dict, results: list[dict], empty_as_none: bool = False) -> tuple[dict, list[dict]]:
    """SA-Co/VEval inputs: the YT-VIS ground truth (``videos`` with ``file_names`` of the scored frames,
    ``annotations`` = the tracks of queried phrases present on a scored frame, ``segmentations`` ``None`` where
    absent, ``video_np_pairs`` = the queried pairs) and the YT-VIS predictions (one per (video, track), its score the
    mean of its records', an empty mask on frames without a record, or ``None`` with ``empty_as_none``, which also
    turns empty masks into ``None``)."""
    frames = _scored_frames(split)
    queried = _queried(split)
    category = _track_category(split)
    index = {im["id"]: (v, i) for v, images in frames.items() for i, im in enumerate(images)}
    size = {v["id"]: (split["images"][0]["height"], split["images"][0]["width"]) for v in split["videos"]}
    for im in split["images"]:
        size[im["video_id"]] = (im["height"], im["width"])
    videos = [{"id": v["id"], "file_names": [f"v{v['id']}/{im['id']}.jpg" for im in frames[v["id"]]],
               "height": size[v["id"]][0], "width": size[v["id"]][1], "length": len(frames[v["id"]])}
              for v in split["videos"]]
    tracks: dict[int, list] = {}
    for ann in split["annotations"]:
        if ann["image_id"] not in index or _area(ann["segmentation"]) == 0:
            continue
        video_id, i = index[ann["image_id"]]
        if category[ann["track_id"]] not in queried[video_id]:
            continue  # an object of a phrase not queried on its video is not part of any pair
        tracks.setdefault(ann["track_id"], [None] * len(frames[video_id]))[i] = ann["segmentation"]
    annotations = []
    for track_id in sorted(tracks):
        video_id = next(t["video_id"] for t in split["tracks"] if t["id"] == track_id)
        segs = tracks[track_id]
        h, w = size[video_id]
        annotations.append({"id": track_id, "video_id": video_id, "category_id": category[track_id],
                            "segmentations": segs, "areas": [_area(s) if s else None for s in segs],
                            "iscrowd": 0, "height": h, "width": w})
    gt = {"videos": videos, "annotations": annotations,
          "categories": [c for c in split["categories"]],
          "video_np_pairs": [{"video_id": v, "category_id": c} for v, cats in queried.items() for c in cats]}
    records: dict[tuple[int, int], list] = defaultdict(list)
    for r in results:
        if "presence" not in r and r["image_id"] in index:
            records[(r["video_id"], r["track_id"])].append(r)
    preds = []
    for (video_id, track_id) in sorted(records, key=lambda k: k[1]):
        h, w = size[video_id]
        segs: list = [None if empty_as_none else _empty_rle(h, w) for _ in frames[video_id]]
        for r in records[(video_id, track_id)]:
            empty = _area(r["segmentation"]) == 0
            segs[index[r["image_id"]][1]] = None if (empty and empty_as_none) else r["segmentation"]
        rs = records[(video_id, track_id)]
        preds.append({"video_id": video_id, "category_id": rs[0]["category_id"],
                      "score": float(np.mean([r["score"] for r in rs])), "segmentations": segs})
    return gt, preds


# ---------------------------------------------------------------- cgF1 (CGF1Eval)


class _Counts:
    """CGF1Eval.evaluateImg's per-pair results and CGF1Eval.accumulate / summarize over them."""

    def __init__(self) -> None:
        self.pairs: list[dict] = []

    def evaluate_pair(self, ious: np.ndarray, scores: list[float], num_gt: int, threshold: float) -> None:
        """``ious`` [all predictions, ground truth] (computeIoU: unsorted, all predictions), then evaluateImg."""
        keep_dt = np.array([s >= threshold for s in scores], bool)
        num_dt = int(keep_dt.sum())
        n = len(IOU_THRS)
        if num_gt == 0 and num_dt == 0:
            self.pairs.append({"IL_TP": 0, "IL_TN": 1, "IL_FP": 0, "IL_FN": 0})
            return
        if num_gt > 0 and num_dt == 0:
            self.pairs.append({"IL_TP": 0, "IL_TN": 0, "IL_FP": 0, "IL_FN": 1, "TPs": np.zeros(n, np.int64),
                               "FPs": np.zeros(n, np.int64), "FNs": np.ones(n, np.int64) * num_gt})
            return
        ious = np.zeros((num_dt, num_gt)) if len(ious) == 0 else ious[keep_dt, :]
        matched_dt, matched_gt = linear_sum_assignment(-ious)
        match_scores = ious[matched_dt, matched_gt]
        tps = np.array([(match_scores >= t).sum() for t in IOU_THRS], np.int64)
        res = {"TPs": tps, "FPs": num_dt - tps, "FNs": num_gt - tps, "IL_TP": int(num_gt > 0 and num_dt > 0),
               "IL_FP": int(num_gt == 0 and num_dt > 0), "IL_TN": 0, "IL_FN": 0}
        if num_gt > 0 and num_dt > 0:
            res["positive"] = True
        self.pairs.append(res)

    def summary(self) -> dict[str, float]:
        n = len(IOU_THRS)
        tps, pm_fps, fns = np.zeros(n, np.int64), np.zeros(n, np.int64), np.zeros(n, np.int64)
        il = {"TP": 0, "FP": 0, "TN": 0, "FN": 0}
        for res in self.pairs:
            for k in il:
                il[k] += res["IL_" + k]
            if "TPs" not in res:
                continue
            tps += res["TPs"]
            fns += res["FNs"]
            if res.get("positive"):
                pm_fps += res["FPs"]
        precision = tps / (tps + pm_fps + 1e-4)
        recall = tps / (tps + fns + 1e-4)
        pm_f1 = 2 * precision * recall / (precision + recall + 1e-4)
        il_mcc = float(il["TP"] * il["TN"] - il["FP"] * il["FN"]) / (
            (float(il["TP"] + il["FP"]) * float(il["TP"] + il["FN"]) * float(il["TN"] + il["FP"])
             * float(il["TN"] + il["FN"])) ** 0.5 + 1e-6)
        cg = pm_f1 * il_mcc

        def mean_valid(s: np.ndarray) -> float:  # summarize's _summarize: the mean of the values > -1
            return float(np.mean(s[s > -1])) if len(s[s > -1]) else -1.0

        return {"cgF1": mean_valid(cg), "pmF1": mean_valid(pm_f1), "IL_MCC": il_mcc}


def image_cgf1(split: dict, results: list[dict], threshold: float = 0.5) -> dict[str, float]:
    """cgF1, positive micro F1 and IL_MCC of sam3's image evaluator over the (image, phrase) pairs."""
    counts = _Counts()
    for pair in sam3_image_inputs(split, results):
        g = pair["gt"]
        d = [rle for rle, _ in pair["dt"]]
        ious = mask_utils.iou(d, g, [0] * len(g)) if d and g else []
        counts.evaluate_pair(np.asarray(ious, float).reshape(len(d), len(g)) if len(ious) else ious,
                             [s for _, s in pair["dt"]], len(g), threshold)
    return counts.summary()


def _masklet_iou(preds: list, gts: list) -> float:
    """YTVISevalMixin.computeIoU's ``iou_masklets``: summed intersections over summed unions (1 when empty)."""
    inter = union = 0
    for p, g in zip(preds, gts):
        if p and g:
            inter += mask_utils.area(mask_utils.merge([p, g], intersect=True))
            union += mask_utils.area(mask_utils.merge([p, g], intersect=False))
        elif g:
            union += mask_utils.area(g)
        elif p:
            union += mask_utils.area(p)
    return inter / union if union > 0 else 1


def video_cgf1(split: dict, results: list[dict], threshold: float = 0.5) -> dict[str, float]:
    """cgF1, positive micro F1 and IL_MCC of sam3's VideoCGF1Evaluator over the (video, phrase) pairs."""
    gt, preds = sam3_video_inputs(split, results)
    pairs = sorted({(p["video_id"], p["category_id"]) for p in preds}
                   | {(a["video_id"], a["category_id"]) for a in gt["annotations"]})
    for vnp in gt["video_np_pairs"]:  # the negative pairs, appended after the others
        if (vnp["video_id"], vnp["category_id"]) not in pairs:
            pairs.append((vnp["video_id"], vnp["category_id"]))
    counts = _Counts()
    for video_id, category_id in pairs:
        g = [a["segmentations"] for a in gt["annotations"]
             if a["video_id"] == video_id and a["category_id"] == category_id]
        dts = [p for p in preds if p["video_id"] == video_id and p["category_id"] == category_id]
        ious = np.array([[_masklet_iou(d["segmentations"], gi) for gi in g] for d in dts]) if g and dts else []
        counts.evaluate_pair(ious, [d["score"] for d in dts], len(g), threshold)
    return counts.summary()


# ---------------------------------------------------------------- HOTA (trackeval's Evaluator, YouTubeVIS)


def _uncompressed(rle: dict | None) -> dict | None:
    """A compressed RLE as YT-VIS ground truth stores it (``counts`` a list), which trackeval's dataset reads."""
    if rle is None:
        return None
    mask = mask_utils.decode({"size": rle["size"], "counts": rle["counts"].encode("ascii")})
    flat = mask.ravel(order="F")
    change = np.flatnonzero(np.diff(np.concatenate([[0], flat, [1 - flat[-1]]])))  # run boundaries
    counts = np.diff(np.concatenate([[0], change])).tolist()
    if counts and counts[-1] == 0:
        counts.pop()
    return {"size": rle["size"], "counts": counts}


def trackeval_hota(split: dict, results: list[dict], phrase: bool, threshold: float = 0.5) -> dict:
    """HOTA figures and IDSW of trackeval's Evaluator on YouTubeVIS files: ``phrase=False``: classes the queried
    phrases, every prediction, the classes with a detection averaged (``combine_classes_class_averaged`` with
    ``ignore_empty_classes=True``) and each of them; ``phrase=True``: sam3's phrase-HOTA (predictions of score >
    ``threshold``, every (video, phrase) pair one video, one class: ``cls_comb_cls_av`` of that class)."""
    from trackeval import Evaluator
    from trackeval.datasets import YouTubeVIS
    from trackeval.metrics import CLEAR, HOTA

    gt, preds = sam3_video_inputs(split, results, empty_as_none=True)  # sam3's phrase-HOTA: area 0 -> None
    queried_cats = sorted({c for v in split["videos"] for c in v["concepts"]})
    names = {c["id"]: c["name"] for c in split["categories"]}
    if phrase:
        preds = [p for p in preds if p["score"] > threshold]
        pairs = sorted({(p["video_id"], p["category_id"]) for p in preds}
                       | {(a["video_id"], a["category_id"]) for a in gt["annotations"]})
        new_id = {pair: i + 1 for i, pair in enumerate(pairs)}
        video = {v["id"]: v for v in gt["videos"]}
        gt["videos"] = [{**video[v], "id": new_id[(v, c)],
                         "file_names": [f"remapped_vid_{new_id[(v, c)]:012d}/{n}" for n in video[v]["file_names"]]}
                        for (v, c) in pairs]
        for a in gt["annotations"]:
            a["video_id"], a["category_id"] = new_id[(a["video_id"], a["category_id"])], 1
        for p in preds:
            p["video_id"], p["category_id"] = new_id[(p["video_id"], p["category_id"])], 1
        gt["categories"] = [{"id": 1, "name": "_remapped_for_phrase_metrics_"}]
    else:
        gt["categories"] = [{"id": c, "name": names[c]} for c in queried_cats]
    for p in preds:
        p["score"] = 1.0 if phrase else p["score"]
    for a in gt["annotations"]:
        a["segmentations"] = [_uncompressed(s) for s in a["segmentations"]]
    if not gt["videos"]:
        return {}
    with tempfile.TemporaryDirectory() as root:
        gt_dir = Path(root, "gt", "youtube_vis_test")
        tr_dir = Path(root, "trackers", "youtube_vis_test", "tracker", "data")
        gt_dir.mkdir(parents=True)
        tr_dir.mkdir(parents=True)
        (gt_dir / "gt.json").write_text(json.dumps(gt))
        (tr_dir / "results.json").write_text(json.dumps(preds))
        config = {"USE_PARALLEL": False, "PRINT_RESULTS": False, "PRINT_ONLY_COMBINED": True, "PRINT_CONFIG": False,
                  "TIME_PROGRESS": False, "DISPLAY_LESS_PROGRESS": True, "OUTPUT_SUMMARY": False,
                  "OUTPUT_EMPTY_CLASSES": False, "OUTPUT_DETAILED": False, "PLOT_CURVES": False,
                  "LOG_ON_ERROR": None, "BREAK_ON_ERROR": True}
        dataset = {"GT_FOLDER": str(Path(root, "gt")) + "/", "TRACKERS_FOLDER": str(Path(root, "trackers")) + "/",
                   "SPLIT_TO_EVAL": "test", "PRINT_CONFIG": False, "OUTPUT_FOLDER": str(Path(root, "out"))}
        with contextlib.redirect_stdout(io.StringIO()):
            out, _ = Evaluator(config).evaluate([YouTubeVIS(dataset)],
                                                [HOTA(), CLEAR({"PRINT_CONFIG": False})])
    combined = out["YouTubeVIS"]["tracker"]["COMBINED_SEQ"]
    hota_keys = ("HOTA", "DetA", "AssA", "LocA", "DetRe", "DetPr", "AssRe", "AssPr")
    # the Evaluator's cls_comb_cls_av passes ignore_empty_classes=False; the scorer averages with True
    per_class = {c["name"]: combined[c["name"]]["HOTA"] for c in gt["categories"]}
    if not any((r["HOTA_TP"] + r["HOTA_FN"] + r["HOTA_FP"] > 0).any() for r in per_class.values()):
        return {"IDSW": int(combined["cls_comb_cls_av"]["CLEAR"]["IDSW"])}  # no class with a detection
    averaged = HOTA().combine_classes_class_averaged(per_class, ignore_empty_classes=not phrase)
    figures: dict = {k: float(np.mean(averaged[k])) for k in hota_keys}
    figures["IDSW"] = int(combined["cls_comb_cls_av"]["CLEAR"]["IDSW"])
    if not phrase:
        for name, res in per_class.items():
            if (res["HOTA_TP"] + res["HOTA_FN"] + res["HOTA_FP"] > 0).any():
                figures[f"HOTA/{name}"] = float(np.mean(res["HOTA"]))
    return figures
