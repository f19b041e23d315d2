"""What limits OOVDet's in-vocabulary AP? Measurements that need no training.

Four parts, each printed as a plain table (and all figures written to ``OUT/diagnose.json``); the measurements
themselves are :mod:`vision.detection.diagnostics`:

1. **Assignment** (no checkpoint weights needed, only the config): the head's own FCOS-style assignment
   (:func:`vision.detection.losses.assign_targets`, over the detector's own location grid) on the training split's
   ``iv`` boxes. Per object: its positives (locations whose target is this object after the smallest-box tie
   break), the level of its positives, and two recalls at IoU 0.5:

   - *ideal-target recall*: share of objects with >= 1 positive. A positive's regression target is the object's
     own (l, t, r, b) from a location inside it, which ``softplus(x) * stride * scale`` can represent exactly, so its
     ideal box has IoU 1 (the IoU of the target box itself is computed, not assumed);
   - *prior-box recall*: share of objects for which some positive's *initial* box (box conv at its initialisation,
     weights ~0 and bias 0: ``l = t = r = b = softplus(0) * stride``, a square of side ``2 ln 2 * stride`` centred on
     the location; the anchor an anchor-free head starts from) has IoU >= 0.5 with the object.

   Object size in this 64-px world: ``sqrt(w * h)`` in model-input pixels; small < 8 (under one patch), medium
   8-16, large >= 16 (:data:`SIZE_BINS`).
2. **Classification vs localisation** of the checkpoint on ``--split`` (COCO AP50 through
   :func:`vision.evaluation.detection.coco_ap`, pycocotools' figures): AP50 over the given vocabulary (= the
   ``IV_AP50`` that ``tools/train.py test`` reports, iv + novel classes), over the 12 trained ``iv`` classes, and
   class-agnostic AP50 (:func:`vision.evaluation.detection.class_agnostic_ap`: the objects of the kept categories
   and the detections in one class); the ``iv`` confusion matrix at IoU >= 0.5 (each ``iv`` object takes the
   highest-scoring detection with IoU >= 0.5, any label; rows = true class, normalised over the matched objects);
   localisation: per object the best IoU of any final detection (after NMS, score > the config's threshold) and of
   any dense location's box (before scoring and NMS), their mean and the recall at IoU 0.5 / 0.75, per size.
3. **Text side**: cosine similarities of the vocabulary's MiniLM prompts (``template.format(name)``, the checkpoint's
   template), mean off-diagonal, nearest other class; region-to-text top-1 accuracy of the checkpoint's region
   embeddings for ``iv`` objects, at (a) the matched location (highest score among dense locations whose box has
   IoU >= 0.5 with the object: the detection before NMS) and (b) every training-assignment positive; against the 12
   ``iv`` texts and against the whole given vocabulary, plus the softmax probability of the true class (with the
   config's temperature, which is fixed, not learned) and how often background / OOV win.
4. ``--train-ap``: parts 2-3 also on the training split (under- vs over-fitting).

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/diagnose_oovdet.py \
        --ckpt runs/detection/tiny/checkpoints/last.ckpt --split datasets/synthetic/oov_test.json \
        --train-split datasets/synthetic/oov_train.json --out runs/diagnose_oovdet --train-ap
"""

from __future__ import annotations

import argparse
import math
import os
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402

from vision.data.coco import Split, load_split  # noqa: E402
from vision.data.io import atomic_write_json  # noqa: E402
from vision.data.resize import resize_image  # noqa: E402
from vision.detection.diagnostics import (  # noqa: E402
    SIZE_BINS, assignment_statistics, best_matches, confusion_matrix, cosine_table, nearest_mean_accuracy,
    row_normalise, size_bins, summarise_assignment, xywh_to_xyxy)
from vision.detection.losses import assign_targets  # noqa: E402
from vision.detection.model import OOVDetector, location_scores  # noqa: E402
from vision.detection.results import UNKNOWN_CATEGORY_ID, coco_results, label_detections  # noqa: E402
from vision.detection.task import DetectionConfig, load  # noqa: E402
from vision.detection.vocabulary import encode_vocabulary  # noqa: E402
from vision.errors import DataError, InputError  # noqa: E402
from vision.evaluation.detection import class_agnostic_ap, coco_ap  # noqa: E402
from vision.text import get_text_encoder  # noqa: E402

# ---------------------------------------------------------------------------------------------------------------
# running the detector

def _image_batches(split: Split, size: int, batch: int):
    ids = sorted(split.images)
    for start in range(0, len(ids), batch):
        chunk = ids[start:start + batch]
        frames = []
        for i in chunk:
            frame = split.load_image(split.images[i])
            if frame.shape[:2] != (size, size):
                frame = resize_image(frame, (size, size))
            frames.append(frame)
        images = torch.from_numpy(np.stack(frames)).permute(0, 3, 1, 2).float().div_(255.0)
        yield chunk, images


def _gt_boxes(split: Split, image_id: int, size: int | None, category_ids: set[int] | None = None
              ) -> tuple[torch.Tensor, list[int]]:
    """Ground-truth XYXY boxes in model-input pixels (``size`` square; None: the image's pixels) and their category
    ids (optionally only ``category_ids``)."""
    img = split.images[image_id]
    anns = [a for a in split.dataset["annotations"] if int(a["image_id"]) == image_id and not a.get("iscrowd", 0)
            and (category_ids is None or int(a["category_id"]) in category_ids)]
    boxes = xywh_to_xyxy([a["bbox"] for a in anns])
    if size is not None:
        boxes = boxes * torch.tensor([size / img["width"], size / img["height"]] * 2)
    return boxes, [int(a["category_id"]) for a in anns]


def measure_assignment(model: OOVDetector, config: DetectionConfig, split: Split) -> dict[str, Any]:
    """Part 1 over every image of ``split`` (its ``iv`` annotations, as the training losses see them)."""
    with torch.no_grad():
        out = model(torch.zeros(1, 3, config.image_size, config.image_size))
    points, strides = out["points"].cpu(), out["strides"].cpu()
    iv = split.category_ids(("iv",))
    index = {c: i for i, c in enumerate(iv)}
    parts: dict[str, list] = {}
    bins: list[str] = []
    for image_id in sorted(split.images):
        boxes, cats = _gt_boxes(split, image_id, config.image_size, set(iv))
        stats = assignment_statistics(points, strides, boxes, torch.tensor([index[c] for c in cats], dtype=torch.int64),
                                      len(iv))
        for key, value in stats.items():
            parts.setdefault(key, []).append(value)
        bins += size_bins(boxes)
    stats = {k: np.concatenate(v) for k, v in parts.items()}
    levels = {f"stride {s:g}": int((stats["min_stride"] == s).sum()) for s in sorted(set(strides.tolist()))}
    return {"rows": summarise_assignment(stats, bins), "objects_by_finest_level": levels,
            "locations": int(points.shape[0]),
            "histogram": {"0": int((stats["positives"] == 0).sum()), "1": int((stats["positives"] == 1).sum()),
                          "2-4": int(((stats["positives"] >= 2) & (stats["positives"] <= 4)).sum()),
                          "5+": int((stats["positives"] >= 5).sum())}}


@torch.no_grad()
def run_detector(model: OOVDetector, config: DetectionConfig, split: Split, names: list[str], ids: list[int],
                 iv_ids: list[int], device: torch.device, batch: int = 16) -> dict[str, Any]:
    """Detect on every image of ``split`` with the vocabulary ``names`` / ``ids`` (as the predictor does) and
    collect, per ``iv`` object, what parts 2 and 3 need."""
    text = encode_vocabulary(names, config.prompt_template, get_text_encoder("minilm")).to(device)
    iv_rows = [ids.index(c) for c in iv_ids]
    size = config.image_size
    results: list[dict] = []
    per_object: dict[str, list] = {k: [] for k in ("cat", "bin", "dense_iou", "region_iv_top1", "region_vocab_top1",
                                                   "region_true_prob", "region_bg_or_oov", "has_region")}
    regions: dict[str, list] = {"cat": [], "embedding": [], "feature": []}
    pos_iv_top1, pos_vocab_top1 = [], []
    for chunk, images in _image_batches(split, size, batch):
        out = model(images.to(device))
        dets = model.postprocess(out, text, [(size, size)] * len(chunk))
        logits = model.classify(out["embeddings"], text)
        probs = logits.softmax(-1)
        k = text.shape[0]
        dense_scores = location_scores(logits, out["objectness"], k)[0]
        for b, image_id in enumerate(chunk):
            img = split.images[image_id]
            res = label_detections(dets[b], names, ids, UNKNOWN_CATEGORY_ID,
                                   (img["width"] / size, img["height"] / size))
            results += coco_results([res], [image_id])
            boxes, cats = _gt_boxes(split, image_id, size, set(iv_ids))
            if boxes.shape[0] == 0:
                continue
            boxes = boxes.to(device)
            match, dense_best = best_matches(boxes.cpu(), out["boxes"][b].cpu(), dense_scores[b].cpu())
            per_object["cat"] += cats
            per_object["bin"] += size_bins(boxes.cpu())
            per_object["dense_iou"] += dense_best.tolist()
            sims = out["embeddings"][b] @ text.t()  # [N, K]
            for j, c in enumerate(cats):
                true_row = ids.index(c)
                m = int(match[j])
                per_object["has_region"].append(m >= 0)
                if m < 0:
                    for key in ("region_iv_top1", "region_vocab_top1", "region_true_prob", "region_bg_or_oov"):
                        per_object[key].append(float("nan"))
                    continue
                per_object["region_iv_top1"].append(float(iv_rows[int(sims[m, iv_rows].argmax())] == true_row))
                per_object["region_vocab_top1"].append(float(int(sims[m].argmax()) == true_row))
                per_object["region_true_prob"].append(float(probs[b, m, true_row]))
                per_object["region_bg_or_oov"].append(float(int(logits[b, m].argmax()) >= k))
                regions["cat"].append(c)
                regions["embedding"].append(out["embeddings"][b, m].cpu().numpy())
                regions["feature"].append(out["features"][b, m].cpu().numpy())
            # training-assignment positives (the locations the classification loss trains)
            labels = torch.tensor([iv_ids.index(c) for c in cats], dtype=torch.int64)
            tl, _, matched = assign_targets(out["points"].cpu(), out["strides"].cpu(), boxes.cpu(), labels, len(iv_ids))
            pos = (matched >= 0).nonzero().flatten().to(device)
            if pos.numel():
                true_rows = torch.tensor([ids.index(iv_ids[int(t)]) for t in tl[matched >= 0]], device=device)
                s = sims[pos]
                iv_pick = torch.tensor(iv_rows, device=device)[s[:, iv_rows].argmax(-1)]
                pos_iv_top1 += (iv_pick == true_rows).float().tolist()
                pos_vocab_top1 += (s.argmax(-1) == true_rows).float().tolist()
    objects = {k: np.asarray(v) for k, v in per_object.items()}
    regions_np = {"cat": np.asarray(regions["cat"], np.int64)}
    for key in ("embedding", "feature"):
        regions_np[key] = np.stack(regions[key]) if regions[key] else np.zeros((0, 1), np.float32)
    nan = float("nan")
    return {"results": results, "objects": objects, "regions": regions_np,
            "positive_iv_top1": float(np.mean(pos_iv_top1)) if pos_iv_top1 else nan,
            "positive_vocab_top1": float(np.mean(pos_vocab_top1)) if pos_vocab_top1 else nan,
            "num_positive_locations": len(pos_iv_top1)}


def ap_table(gt: dict, results: list[dict], vocab_ids: list[int], iv_ids: list[int]) -> dict[str, float]:
    """AP50 figures of part 2 (0-1 scale)."""
    known = [r for r in results if int(r["category_id"]) in set(vocab_ids)]
    out = {"vocab_AP50": coco_ap(gt, known, category_ids=vocab_ids)["AP50"],
           "iv_AP50": coco_ap(gt, known, category_ids=iv_ids)["AP50"]}
    out["agn_iv_ivlabelled_AP50"] = class_agnostic_ap(gt, results, gt_category_ids=iv_ids,
                                                      result_category_ids=iv_ids)["AP50"]
    out["agn_iv_anylabel_AP50"] = class_agnostic_ap(gt, results, gt_category_ids=iv_ids, ignore_other=True)["AP50"]
    out["agn_all_AP50"] = class_agnostic_ap(gt, results)["AP50"]
    return out


def per_class_ap50(gt: dict, results: list[dict], ids: list[int]) -> dict[int, float]:
    return {c: coco_ap(gt, [r for r in results if int(r["category_id"]) == c], category_ids=[c])["AP50"]
            for c in ids}


def confusion_and_localisation(split: Split, results: list[dict], names_by_id: dict[int, str], iv_ids: list[int],
                               novel_ids: list[int], size: int) -> dict[str, Any]:
    """Part 2's confusion matrix and the final-detection localisation figures, for ``iv`` objects and all objects."""
    by_image: dict[int, list[dict]] = {}
    for r in results:
        by_image.setdefault(int(r["image_id"]), []).append(r)
    columns = [names_by_id[c] for c in iv_ids] + ["novel", "unknown"]
    col_of = {c: i for i, c in enumerate(iv_ids)}
    true, pred, missed = [], [], np.zeros(len(iv_ids), np.int64)
    loc: dict[str, list] = {"bin": [], "iou": [], "iv": []}
    for image_id in sorted(split.images):
        img = split.images[image_id]
        boxes, cats = _gt_boxes(split, image_id, None)  # image pixels, as the COCO results
        dets = by_image.get(image_id, [])
        det_boxes = xywh_to_xyxy([d["bbox"] for d in dets])
        det_scores = torch.tensor([float(d["score"]) for d in dets])
        match, best = best_matches(boxes, det_boxes, det_scores)
        scale = torch.tensor([size / img["width"], size / img["height"]] * 2)  # size bins in model-input pixels
        loc["bin"] += size_bins(boxes * scale)
        loc["iou"] += best.tolist()
        loc["iv"] += [c in col_of for c in cats]
        for j, c in enumerate(cats):
            if c not in col_of:
                continue
            if match[j] < 0:
                missed[col_of[c]] += 1
                continue
            p = int(dets[int(match[j])]["category_id"])
            true.append(col_of[c])
            pred.append(col_of[p] if p in col_of else len(iv_ids) + (0 if p in novel_ids else 1))
    counts = confusion_matrix(true, pred, len(iv_ids), len(columns))
    return {"columns": columns, "counts": counts, "missed": missed,
            "loc": {k: np.asarray(v) for k, v in loc.items()}}


# ---------------------------------------------------------------------------------------------------------------
# printing

def _pct(x: float) -> str:
    return "   -" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{100 * x:5.1f}"


def print_assignment(a: dict[str, Any]) -> None:
    print(f"\n== 1. assignment before training (assign_targets on {a['split']}, iv boxes; {a['locations']} locations "
          f"= strides {', '.join(a['objects_by_finest_level'])}) ==")
    print("size bins on sqrt(w*h) px: " + ", ".join(f"{n} [{lo:g}, {hi:g})" for n, lo, hi in SIZE_BINS))
    print(f"{'bin':8s}{'objects':>8s}{'pos mean':>9s}{'min':>5s}{'median':>7s}{'zero %':>8s}{'ideal R50':>10s}"
          f"{'prior R50':>10s}{'any-loc prior R50':>18s}")
    for r in a["rows"]:
        print(f"{r['bin']:8s}{r['n']:8d}{r['mean']:9.2f}{r['min']:5d}{r['median']:7.1f}{_pct(r['zero_share']):>8s}"
              f"{_pct(r['ideal_recall50']):>10s}{_pct(r['prior_recall50']):>10s}{_pct(r['any_prior_recall50']):>18s}")
    print("positives per object histogram:", a["histogram"], "| objects by finest positive level:",
          a["objects_by_finest_level"], "(objects with no positive are in none)")


def print_ap(title: str, ap: dict[str, float]) -> None:
    print(f"\n== 2. AP50 on {title} (x100) ==")
    labels = {"vocab_AP50": "AP50 over the given vocabulary (= IV_AP50 of tools/train.py test)",
              "iv_AP50": "AP50 over the trained iv classes",
              "agn_iv_ivlabelled_AP50": "class-agnostic: iv objects vs iv-labelled detections",
              "agn_iv_anylabel_AP50": "class-agnostic: iv objects vs all detections (other objects ignored)",
              "agn_all_AP50": "class-agnostic: all objects vs all detections (the ablation's agn_AP50)"}
    for key, text in labels.items():
        if key in ap:
            print(f"{text:72s}{100 * ap[key]:6.1f}")


def print_confusion(cm: dict[str, Any]) -> None:
    cols = cm["columns"]
    frac = row_normalise(cm["counts"])
    print("\n== 2. iv confusion at IoU >= 0.5 (row = true class; % of its matched objects; highest-scoring detection "
          "with IoU >= 0.5, any label) ==")
    print(f"{'true':9s}" + "".join(f"{c[:6]:>7s}" for c in cols) + f"{'matched':>9s}{'missed':>7s}")
    for i, name in enumerate(cols[: cm["counts"].shape[0]]):
        n = int(cm["counts"][i].sum())
        print(f"{name[:9]:9s}" + "".join(f"{100 * v:7.0f}" for v in frac[i]) + f"{n:9d}{int(cm['missed'][i]):7d}")
    total = cm["counts"].sum()
    diag = np.trace(cm["counts"][:, : cm["counts"].shape[0]])
    print(f"correct class among matched iv objects: {diag}/{total} = {_pct(diag / max(total, 1))}%; "
          f"matched {total}/{total + cm['missed'].sum()}")


def print_localisation(title: str, loc: dict[str, np.ndarray], dense: dict[str, np.ndarray]) -> None:
    print(f"\n== 2. localisation on {title}: best IoU per object (any label) ==")
    print(f"{'objects':10s}{'bin':8s}{'n':>5s}{'final mIoU':>11s}{'R50':>7s}{'R75':>7s}{'dense mIoU':>11s}{'R50':>7s}"
          f"{'R75':>7s}")
    for group in ("iv", "all"):
        sel_g = loc["iv"] if group == "iv" else np.ones(len(loc["iv"]), bool)
        for name in [b[0] for b in SIZE_BINS] + ["all"]:
            sel = sel_g & ((loc["bin"] == name) if name != "all" else True)
            if not sel.any():
                continue
            iou = loc["iou"][sel]
            line = f"{group:10s}{name:8s}{int(sel.sum()):5d}{iou.mean():11.3f}{_pct((iou >= .5).mean()):>7s}" \
                   f"{_pct((iou >= .75).mean()):>7s}"
            if group == "iv":
                dsel = (dense["bin"] == name) if name != "all" else np.ones(len(dense["bin"]), bool)
                d = dense["dense_iou"][dsel]
                line += f"{d.mean():11.3f}{_pct((d >= .5).mean()):>7s}{_pct((d >= .75).mean()):>7s}"
            print(line)
    print("final = detections after NMS (score > threshold); dense = every location's box before scoring and NMS")


def print_text(names: list[str], sim: np.ndarray, mean_off: float, nearest: list[int], iv_count: int) -> None:
    print(f"\n== 3. MiniLM prompt cosine similarity (iv: first {iv_count}, then novel) ==")
    short = [n[:6] for n in names]
    print(f"{'':9s}" + "".join(f"{s:>7s}" for s in short))
    for i, n in enumerate(names):
        print(f"{n[:9]:9s}" + "".join(f"{v:7.2f}" for v in sim[i]))
    k = sim.shape[0]
    off = ~np.eye(k, dtype=bool)
    iv_off = sim[:iv_count, :iv_count][~np.eye(iv_count, dtype=bool)]
    print(f"mean off-diagonal: all {mean_off:.3f}, iv-iv {iv_off.mean():.3f}; min {sim[off].min():.3f}, "
          f"max {sim[off].max():.3f}")
    print("nearest other class: " + "; ".join(f"{names[i]} -> {names[j]} ({sim[i, j]:.2f})"
                                              for i, j in enumerate(nearest)))


def print_regions(title: str, run: dict[str, Any], temperature: float) -> None:
    o = run["objects"]
    has = o["has_region"].astype(bool)
    print(f"\n== 3. region-to-text on {title} (iv objects; tau = {temperature:g}, fixed) ==")
    print(f"iv objects with a dense location whose box has IoU >= 0.5: {int(has.sum())}/{len(has)}")
    if has.any():
        print(f"  at that location (highest score): top-1 vs the iv texts {_pct(np.nanmean(o['region_iv_top1']))}%, "
              f"vs the given vocabulary {_pct(np.nanmean(o['region_vocab_top1']))}%, mean softmax p(true) "
              f"{np.nanmean(o['region_true_prob']):.3f}, background/OOV column wins "
              f"{_pct(np.nanmean(o['region_bg_or_oov']))}%")
    print(f"  at the {run['num_positive_locations']} training-assignment positives: top-1 vs the iv texts "
          f"{_pct(run['positive_iv_top1'])}%, vs the given vocabulary {_pct(run['positive_vocab_top1'])}% "
          f"(chance vs iv: {100 / 12:.1f}%)")


# ---------------------------------------------------------------------------------------------------------------

def _checked_file(path: str, what: str) -> str:
    if not Path(path).is_file():
        raise InputError(f"{what} {path!r} is not a file")
    return path


def diagnose_split(model: OOVDetector, config: DetectionConfig, split: Split, device: torch.device,
                   iv_only_vocabulary: bool) -> dict[str, Any]:
    """Parts 2-3 on one split with its given vocabulary (or only its iv names)."""
    names_by_id = {int(c): cat["name"] for c, cat in split.categories.items()}
    id_by_name = {v: k for k, v in names_by_id.items()}
    names = split.vocabulary(("iv",)) if iv_only_vocabulary else split.given_vocabulary()
    missing = [n for n in names if n not in id_by_name]
    if missing:
        raise DataError("info.vocabulary names a category the split does not define", file=split.file,
                        field="info.vocabulary", value=missing)
    ids = [id_by_name[n] for n in names]
    iv_ids = split.category_ids(("iv",))
    novel_ids = [c for c in ids if c not in iv_ids]
    run = run_detector(model, config, split, names, ids, iv_ids, device)
    gt = split.dataset
    ap = ap_table(gt, run["results"], ids, iv_ids)
    per_class = per_class_ap50(gt, run["results"], ids)
    cm = confusion_and_localisation(split, run["results"], names_by_id, iv_ids, novel_ids, config.image_size)
    return {"names": names, "ids": ids, "iv_ids": iv_ids, "run": run, "split_images": sorted(split.images), "ap": ap,
            "per_class": per_class, "cm": cm, "names_by_id": names_by_id}


def report_split(title: str, d: dict[str, Any], temperature: float) -> dict[str, Any]:
    print_ap(title, d["ap"])
    pc = d["per_class"]
    print("per-class AP50 (n/a: no object of the class): " + ", ".join(
        f"{d['names_by_id'][c]} {100 * v:.1f}" if v >= 0 else f"{d['names_by_id'][c]} n/a" for c, v in pc.items()))
    results = d["run"]["results"]
    print(f"detections: {len(results)} ({len(results) / max(1, len(d['split_images'])):.1f} per image)")
    print_confusion(d["cm"])
    print_localisation(title, d["cm"]["loc"], d["run"]["objects"])
    print_regions(title, d["run"], temperature)
    o, loc = d["run"]["objects"], d["cm"]["loc"]
    return {"vocabulary": d["names"], "ap": d["ap"], "per_class_AP50": {d["names_by_id"][c]: v for c, v in pc.items()},
            "confusion": {"columns": d["cm"]["columns"], "counts": d["cm"]["counts"].tolist(),
                          "missed": d["cm"]["missed"].tolist()},
            "localisation": {g: {"mean_iou": float(loc["iou"][s].mean()), "R50": float((loc["iou"][s] >= .5).mean()),
                                 "R75": float((loc["iou"][s] >= .75).mean())}
                             for g, s in (("iv", loc["iv"]), ("all", np.ones(len(loc["iv"]), bool)))},
            "dense_iv": {"mean_iou": float(o["dense_iou"].mean()), "R50": float((o["dense_iou"] >= .5).mean()),
                         "R75": float((o["dense_iou"] >= .75).mean())},
            "regions": {"matched": int(o["has_region"].sum()), "objects": int(len(o["has_region"])),
                        "iv_top1": float(np.nanmean(o["region_iv_top1"])),
                        "vocab_top1": float(np.nanmean(o["region_vocab_top1"])),
                        "true_prob": float(np.nanmean(o["region_true_prob"])),
                        "bg_or_oov": float(np.nanmean(o["region_bg_or_oov"])),
                        "positive_iv_top1": d["run"]["positive_iv_top1"],
                        "positive_vocab_top1": d["run"]["positive_vocab_top1"]}}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ckpt", default="runs/detection/tiny/checkpoints/last.ckpt")
    parser.add_argument("--split", default="datasets/synthetic/oov_test.json", help="evaluated split (parts 2-3)")
    parser.add_argument("--train-split", default="datasets/synthetic/oov_train.json", help="part 1 (and 4)")
    parser.add_argument("--out", default="runs/diagnose_oovdet", help="folder for diagnose.json and the results")
    parser.add_argument("--train-ap", action="store_true", help="part 4: parts 2-3 also on the training split")
    parser.add_argument("--iv-vocabulary", action="store_true",
                        help="also run the evaluated split with only its iv names as the vocabulary")
    parser.add_argument("--device", default=None, help="torch device (default: cuda when available, else cpu)")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    device = torch.device(args.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    model, config, trained = load(_checked_file(args.ckpt, "--ckpt"), with_vocabulary=True)
    model = model.to(device).eval()
    ckpt_meta = torch.load(args.ckpt, map_location="cpu", weights_only=True)
    hp = ckpt_meta.get("hyper_parameters", {})
    print(f"checkpoint {args.ckpt}: global_step {ckpt_meta.get('global_step')}, geometry_checkpoint "
          f"{hp.get('geometry_checkpoint')!r}, temperature {config.temperature} (fixed), template "
          f"{config.prompt_template!r}, training vocabulary {trained.class_names if trained else None}")
    del ckpt_meta
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    report: dict[str, Any] = {"ckpt": args.ckpt, "split": args.split, "train_split": args.train_split,
                              "size_bins": [list(b[:2]) + [str(b[2])] for b in SIZE_BINS]}

    train = load_split(_checked_file(args.train_split, "--train-split"))
    assignment = measure_assignment(model.cpu(), config, train)
    model.to(device)
    assignment["split"] = args.train_split
    print_assignment(assignment)
    report["assignment"] = assignment

    split = load_split(_checked_file(args.split, "--split"))
    evaluated = diagnose_split(model, config, split, device, iv_only_vocabulary=False)
    atomic_write_json(out / "results.json", evaluated["run"]["results"])
    report["evaluated"] = report_split(args.split, evaluated, config.temperature)

    names = evaluated["names"]
    text = encode_vocabulary(names, config.prompt_template, get_text_encoder("minilm"))
    sim, mean_off, nearest = cosine_table(text)
    iv_count = sum(c in evaluated["iv_ids"] for c in evaluated["ids"])
    order = [i for i, c in enumerate(evaluated["ids"]) if c in evaluated["iv_ids"]] + \
            [i for i, c in enumerate(evaluated["ids"]) if c not in evaluated["iv_ids"]]
    sim_o = sim[np.ix_(order, order)]
    names_o = [names[i] for i in order]
    _, _, nearest_o = cosine_table(text[order])
    print_text(names_o, sim_o, mean_off, nearest_o, iv_count)
    report["text"] = {"names": names_o, "cosine": sim_o.round(4).tolist(), "mean_offdiag": mean_off,
                      "nearest": {names_o[i]: names_o[j] for i, j in enumerate(nearest_o)}}

    if args.iv_vocabulary:
        iv_only = diagnose_split(model, config, split, device, iv_only_vocabulary=True)
        report["evaluated_iv_vocabulary"] = report_split(f"{args.split} with the iv names only", iv_only,
                                                         config.temperature)
    if args.train_ap:
        on_train = diagnose_split(model, config, train, device, iv_only_vocabulary=False)
        report["train"] = report_split(f"{args.train_split} (training split, iv vocabulary)", on_train,
                                       config.temperature)
        tr, ev = on_train["run"]["regions"], evaluated["run"]["regions"]
        probe = {key: nearest_mean_accuracy(tr[key], tr["cat"], ev[key], ev["cat"]) for key in ("embedding", "feature")}
        probe["text"] = report["evaluated"]["regions"]["iv_top1"]
        print(f"\n== 3. matched iv regions of {args.split}: nearest class mean of the training split's matched regions "
              f"({len(tr['cat'])} regions) vs the text rows ==")
        print(f"{'classifier':44s}{'top-1 %':>8s}")
        for key, text in (("text", "iv text rows (what the detector uses)"),
                          ("embedding", "train-region class means, region embeddings"),
                          ("feature", "train-region class means, head features [C]")):
            print(f"{text:44s}{_pct(probe[key]):>8s}")
        report["class_mean_probe"] = probe
    atomic_write_json(out / "diagnose.json", _plain(report), indent=1)
    print(f"\nwrote {out / 'diagnose.json'} and {out / 'results.json'}")


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, np.ndarray):
        return _plain(value.tolist())
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return None if math.isnan(float(value)) else float(value)
    return value


if __name__ == "__main__":
    main()
