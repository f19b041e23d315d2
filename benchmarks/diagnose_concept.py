"""What the concept tracker's two heads see: how well each input separates the classes they learn, on the
validation splits, with the trained heads beside the inputs alone. No training.

``python benchmarks/diagnose_concept.py [--concept runs/concept/tiny/checkpoints/last.ckpt]
[--splits datasets/synthetic/concept_val_{video,unordered,occlusion,near}.json] [--match-iou 0.3]``

Every video of a split is read whole (clips of all its views, :class:`vision.data.datasets.MultiViewClipDataset`)
and turned into the heads' inputs and targets exactly as training does (:func:`vision.concept.lightning.
heads_data`): per (view, phrase) the presence features and "the phrase is visible there"; per pair of proposals of
one phrase on two views that both match an object (mask IoU >= ``match_iou``) the association features and "the
same object". Printed per split: ROC AUC (scikit-learn) of each association feature (distances negated: smaller
means more alike), of the trained association head and of the 3D-distance rule's accuracy; the median 3D distance
of same / different pairs; ROC AUC and MCC at 0.5 of the presence head, of the rule (the best proposal's score)
and of each presence feature.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import torch
from sklearn.metrics import matthews_corrcoef, roc_auc_score

from vision.concept.lightning import heads_data, rule_predictor
from vision.concept.task import load
from vision.data.coco import load_split
from vision.data.datasets import MultiViewClipDataset
from vision.tracking.inference import video_frames

PAIR_NAMES = ("-distance", "-distance/extent", "cos embedding", "cos appearance", "-|log extent ratio|", "-colour")
PRESENCE_NAMES = ("best score", "top-3 score", "won objectness", "best cosine", "kept/4", "rival", "scene best",
                  "scene mean")
PAIR_SIGN = (-1, -1, 1, 1, -1, -1)


def _auc(y: np.ndarray, score: np.ndarray) -> float:
    return float(roc_auc_score(y, score)) if 0 < y.mean() < 1 else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--concept", default="runs/concept/tiny/checkpoints/last.ckpt")
    parser.add_argument("--splits", nargs="+", default=[f"datasets/synthetic/concept_val_{m}.json"
                                                        for m in ("video", "unordered", "occlusion", "near")])
    parser.add_argument("--match-iou", type=float, default=0.3)
    args = parser.parse_args()
    torch.set_grad_enabled(False)
    model, config = load(args.concept)
    predictor = rule_predictor(model, config)
    for path in args.splits:
        split = load_split(path)
        dataset = MultiViewClipDataset(split, views=1)
        pairs, presence = [], []
        for vid in sorted(split.videos):
            clip = dataset.load_clip(vid, video_frames(split, vid))
            phrases = split.queried_phrases(vid)
            data = heads_data(predictor, clip["images"], phrases, clip["instance_ids"],
                              np.asarray(clip["category_ids"]), args.match_iou)
            pairs.append((data["pair_x"], data["pair_y"]))
            presence.append((data["presence_x"], data["presence_y"]))
        px = torch.cat([p[0] for p in pairs]).numpy()
        py = torch.cat([p[1] for p in pairs]).numpy().astype(bool)
        sx = torch.cat([p[0] for p in presence])
        sy = torch.cat([p[1] for p in presence]).numpy().astype(bool)
        head = model.association(torch.as_tensor(px)).sigmoid().numpy()
        print(f"\n{Path(path).stem}: {len(py)} pairs ({py.mean():.3f} same object), {len(sy)} (view, phrase) "
              f"pairs ({sy.mean():.3f} present)")
        print("  association   " + "  ".join(f"{n} {_auc(py, s * px[:, i]):.3f}"
                                           for i, (n, s) in enumerate(zip(PAIR_NAMES, PAIR_SIGN))))
        print(f"  association   head AUC {_auc(py, head):.3f}, head accuracy {((head >= 0.5) == py).mean():.3f}, "
              f"rule accuracy {((px[:, 0] < config.rule_distance) == py).mean():.3f}; median 3D distance same "
              f"{np.median(px[py, 0]):.3f}, different {np.median(px[~py, 0]):.3f}")
        learned = model.presence(sx).sigmoid().numpy()
        rule = (sx[:, 0] * (sx[:, 4] > 0)).numpy()
        print(f"  presence      head AUC {_auc(sy, learned):.3f} MCC {matthews_corrcoef(sy, learned >= 0.5):.3f}; "
              f"rule AUC {_auc(sy, rule):.3f} MCC {matthews_corrcoef(sy, rule >= 0.5):.3f}")
        print("  presence      " + "  ".join(f"{n} {_auc(sy, sx[:, i].numpy()):.3f}"
                                           for i, n in enumerate(PRESENCE_NAMES)))


if __name__ == "__main__":
    main()
