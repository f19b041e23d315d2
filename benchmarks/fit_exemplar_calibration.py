"""Fit the exemplar score's calibration (:attr:`vision.detection.visual_exemplars.ExemplarSettings.calibration`) on
the teacher-labelled real training frames, and print it with how well it ranks.

Data: every ``--step``-th frame of ``--split`` (default ``datasets/real/real_coco_train.json``, ``vision prepare
real-detection``: frames of the training videos, COCO boxes by the YOLOX-nano teacher; never the hand-checked
frames). Per frame, the class-agnostic proposals of the pretrained body and their MobileNetV2 descriptors
(:func:`~vision.detection.visual_exemplars.class_agnostic_proposals`, :class:`~vision.detection.visual_exemplars.
CropEmbedder`); per (frame, COCO class with a box on another frame) the exemplar is that class's first box on a frame
of another video (else of another frame). Each proposal is one sample: features ``(cosine to the exemplar,
log objectness)``, label "IoU >= 0.5 with a box of the exemplar's class on this frame". A logistic regression
(scikit-learn, C = 1) gives ``(a, b, c)``; the script prints them and the average precision of the scores.

    .venv/bin/python benchmarks/fit_exemplar_calibration.py [--split datasets/real/real_coco_train.json] [--step 6]
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--split", type=Path, default=Path("datasets/real/real_coco_train.json"))
    parser.add_argument("--step", type=int, default=6, help="every step-th frame (by image id)")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args(argv)
    if not args.split.is_file():
        print(f"error: {args.split} is absent (vision prepare real-detection)", file=sys.stderr)
        return 2
    import torch
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import average_precision_score

    from vision.data.coco import load_split
    from vision.detection.predictor import DetectorPredictor
    from vision.detection.task import DetectionConfig, build_model
    from vision.detection.visual_exemplars import CropEmbedder, ExemplarSettings, class_agnostic_proposals
    from vision.evaluation.concept_boxes import box_iou_xyxy

    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    config = DetectionConfig(body="yolox-nano", body_weights="yolox-nano", image_size=416)
    predictor = DetectorPredictor(build_model(config).eval(), ["object"], config.image_size)
    embedder = CropEmbedder.from_registry()
    settings = ExemplarSettings()
    split = load_split(args.split)
    ids = sorted(split.images)[::args.step]
    frames = {}
    for image_id in ids:
        image = split.load_image(split.images[image_id])
        outputs = predictor.outputs([image])
        clip, scale = predictor.input_geometry(image)
        boxes, objectness = class_agnostic_proposals(outputs["boxes"][0], outputs["agnostic_objectness"][0],
                                                     settings, clip, scale)
        truth = [(a["category_id"], [a["bbox"][0], a["bbox"][1], a["bbox"][0] + a["bbox"][2],
                                     a["bbox"][1] + a["bbox"][3]])
                 for a in sorted(split.annotations_by_image[image_id], key=lambda a: a["id"]) if not a.get("iscrowd")]
        frames[image_id] = {"source": str(split.images[image_id].get("video", image_id)), "boxes": boxes,
                            "objectness": objectness, "descriptors": embedder(image, boxes).numpy(),
                            "truth": truth, "truth_descriptors": embedder(image, np.array([b for _, b in truth]))
                            .numpy() if truth else np.zeros((0, 1280), np.float32)}
    features, labels = [], []
    classes = sorted({c for f in frames.values() for c, _ in f["truth"]})
    for cid in classes:
        owners = [(i, n) for i in ids for n, (c, _) in enumerate(frames[i]["truth"]) if c == cid]
        for image_id in ids:
            frame = frames[image_id]
            others = [o for o in owners if o[0] != image_id]
            other_source = [o for o in others if frames[o[0]]["source"] != frame["source"]]
            if not others:
                continue
            owner, index = (other_source or others)[0]
            cosine = frame["descriptors"] @ frames[owner]["truth_descriptors"][index]
            mine = np.array([b for c, b in frame["truth"] if c == cid]).reshape(-1, 4)
            hit = (box_iou_xyxy(frame["boxes"], mine).max(axis=1) >= 0.5) if len(mine) else \
                np.zeros(len(cosine), bool)
            features.append(np.stack([cosine, np.log(np.clip(frame["objectness"], 1e-6, 1.0))], axis=1))
            labels.append(hit)
    x, y = np.concatenate(features), np.concatenate(labels)
    model = LogisticRegression(C=1.0, max_iter=1000).fit(x, y)
    a, b = model.coef_[0]
    c = model.intercept_[0]
    print(f"frames {len(ids)}, classes {len(classes)}, samples {len(y)}, positives {int(y.sum())}")
    print(f"calibration (a, b, c) = ({a:.2f}, {b:.2f}, {c:.2f}); average precision "
          f"{average_precision_score(y, model.predict_proba(x)[:, 1]):.3f} (the cosine alone "
          f"{average_precision_score(y, x[:, 0]):.3f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
