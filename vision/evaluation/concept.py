"""The ``concept`` scorer: every instance of a phrase, found, segmented and tracked across a video or a set of
unordered views (issue 29).

Ground truth: a COCO-video split. Phrases are ``categories`` (``name``); each ground-truth track has a category (its
``tracks`` entry's ``category_id``, else its annotations'); a video queries ``videos[i].concepts`` (category ids,
present and absent phrases), by default the categories of its tracks. A track is *present* on an image where its
annotation has a non-empty mask. Images with ``annotated: false`` carry no ground truth: they are not scored, and
records on them are ignored. Crowd flags are not read (concept splits are instance-exhaustive).

Results (validated by :func:`vision.evaluation.tasks.concept.validate_concept_results`): instance records
``{video_id, image_id, track_id, category_id, phrase, segmentation, bbox, score}`` and presence records
``{video_id, image_id, category_id, presence}``. A *predicted instance* is a (video, track) pair: its records on the
scored images, one score (the mean of those records' scores). A record whose mask is empty is still a record of its
instance, as sam3 counts it (a prediction with a high score and an empty mask is a false positive in its
``CGF1Eval``): it counts for cgF1 / pmF1 / IL_MCC, their video forms and video AP (a detection of IoU 0 on its image,
its score in its instance's mean), but not for HOTA and phrase-HOTA, which, like sam3's phrase-HOTA evaluator (a
mask of area 0 set to ``None``), see only non-empty masks.

Mask IoU is computed on the run-length encodings (pycocotools' ``rleIou``, exact pixel counts), never on decoded
masks.

Figures (0-1 scale; ``-1.0`` where undefined, as in COCO). The per-frame figures (``cgF1, pmF1, IL_MCC``) score each
(image, phrase) pair as sam3's *image* evaluator does; the ``video_`` ones score each (video, phrase) pair as sam3's
*video* evaluator (SA-Co/VEval) does; ``HOTA`` averages per phrase (trackeval), ``phrase_HOTA`` pools every (video,
phrase) pair into one class (sam3's phrase-HOTA):

- ``HOTA, DetA, AssA, LocA, DetRe, DetPr, AssRe, AssPr`` and ``IDSW``: trackeval's HOTA and CLEAR
  (:mod:`vision.evaluation.hota`) on mask IoU; sequences are the videos that query a phrase, classes the phrases;
  each class combines its sequences, then the queried phrases with at least one ground-truth or predicted
  detection are averaged: trackeval's ``HOTA.combine_classes_class_averaged`` with ``ignore_empty_classes=True``.
  A queried phrase without ground truth but with records scores 0, so false positives on an absent phrase lower
  ``HOTA``; a queried phrase with neither is left out (trackeval's ``Evaluator`` passes
  ``ignore_empty_classes=False`` and would average it as 0, so that perfect results on a split that queries
  absent phrases would score below 1). ``IDSW`` is the sum of CLEAR's id switches; ``HOTA/<phrase>`` per averaged
  phrase. Every record counts whatever its score (trackeval's HOTA reads no score); ``-1`` when no phrase is
  averaged.
- ``phrase_HOTA, phrase_DetA, phrase_AssA, phrase_LocA, phrase_DetRe, phrase_DetPr, phrase_AssRe, phrase_AssPr``:
  facebookresearch/sam3's phrase-HOTA (``saco_veval_evaluators.VideoPhraseHotaEvaluator``): the predicted
  instances of score > ``score_threshold`` (strictly, as sam3's ``prob_thresh``), every (video, queried phrase)
  pair one sequence of a single class, the sequences combined by trackeval's ``combine_sequences``; ``-1`` when no
  pair has a ground-truth or predicted detection.
- ``AP, AP50, AP75``: YouTube-VIS video mask AP (youtubevos/cocoapi ``ytvoseval.py``): per (video, phrase) a
  predicted instance is its sequence of masks with its one score; sequence IoU = sum over frames of intersections /
  sum over frames of unions (0 when the union is empty); COCOeval's greedy matching by score at IoU
  0.50:0.05:0.95, 101-point interpolated precision, area all, at most 100 instances per video and phrase; the mean
  over phrases with ground truth.
- ``cgF1, pmF1, IL_MCC``: SA-Co's, as facebookresearch/sam3 ``sam3/eval/cgf1_eval.py`` (``CGF1Eval.evaluateImg``
  and ``CGF1Eval.accumulate``) defines them, on each (image, phrase) pair of the images of the videos that query
  the phrase: records with score >= ``score_threshold`` are matched one-to-one to the ground truth by the Hungarian
  algorithm on mask IoU (records and ground truth in track-id order); at each IoU threshold t of 0.50:0.05:0.95 a
  matched pair with IoU >= t is a TP, other predictions FPs, other ground truth FNs. A pair is image-level TP
  (ground truth and predictions), FP (predictions only), FN (ground truth only) or TN (neither). ``pmF1``
  (positive micro F1) sums TP, FN over the pairs and FP over the pairs with ground truth: P = TP / (TP + FP + 1e-4),
  R = TP / (TP + FN + 1e-4), F1 = 2PR / (P + R + 1e-4); ``IL_MCC`` = (TP TN - FP FN) / (sqrt((TP+FP)(TP+FN)(TN+FP)
  (TN+FN)) + 1e-6) over the pairs (0 when a margin is empty); ``cgF1`` = the mean over t of pmF1(t) x IL_MCC,
  ``pmF1`` the mean over t of pmF1(t).
- ``video_cgF1, video_pmF1, video_IL_MCC``: SA-Co/VEval's, as sam3's ``saco_veval_evaluators.VideoCGF1Evaluator``
  (``ytvis_eval.VideoDemoF1Eval``: ``CGF1Eval`` on (video, phrase) pairs) defines them: the same counts and
  formulas on each (video, queried phrase) pair, its ground truth the tracks of the phrase present on a scored
  image of the video, its predictions the predicted instances of the phrase with score >= ``score_threshold``,
  matched on sequence IoU (as for AP).
- ``presence_MCC``: the same MCC over the presence records (of scored images; pairs without a record are not
  counted), a record being positive at presence >= 0.5 and its pair positive when the phrase has a present
  annotation on that image (-1 without presence records).
- ``outside_accepted``: the fraction of ground-truth tracks whose category is not queried on their video (and that
  are present on a scored image) that some predicted instance of the video covers: mask IoU >= 0.5 on at least
  half of the images where the track is present. ``near_accepted``: the same over those of them whose category is
  a near category (``info.near_categories``) of a phrase queried on the video.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from scipy.optimize import linear_sum_assignment

from vision.data.checker import ScalarChecker
from vision.data.masks import rle_intersections
from vision.data.schema import check_concepts, check_near_categories
from vision.errors import InputError
from vision.evaluation import hota

__all__ = ["IOU_THRESHOLDS", "ConceptSplit", "concept_split", "evaluate_concept", "mcc"]

#: COCO's IoU thresholds 0.50:0.05:0.95 (pycocotools ``Params``), used by video AP and cgF1.
IOU_THRESHOLDS: np.ndarray = np.linspace(.5, 0.95, int(np.round((0.95 - .5) / .05)) + 1)
_RECALLS = np.linspace(.0, 1.00, int(np.round((1.00 - .0) / .01)) + 1)  # COCO's 101 recall points
_MAX_DETS = 100


@dataclass
class ConceptSplit:
    """What the concept scorer reads of a split: ``phrases`` (category id -> name), ``frames`` (video id -> its
    scored images in ``frame_index`` order), ``video_images`` (video id -> all its image ids), ``queried`` (video
    id -> queried category ids), ``tracks`` (ground-truth track id -> (video id, category id)), ``masks``
    ((track id, image id) -> RLE of each annotation), ``near`` (phrase -> its near category names)."""

    phrases: dict[int, str]
    frames: dict[int, list[dict]]
    video_images: dict[int, set[int]]
    queried: dict[int, set[int]]
    tracks: dict[int, tuple[int, int]]
    masks: dict[tuple[int, int], dict]
    near: dict[str, set[str]]


def concept_split(split: dict, file: str | None = None) -> ConceptSplit:
    """Check and index the concept parts of ``split`` (whose images, videos, tracks and annotations passed
    :func:`vision.evaluation.evaluate.validate_scored_parts` for tracking): categories (integer id, name), every track's
    category (of ``categories``; a track's annotations agree with it), ``videos[i].concepts`` (category ids, each
    once) and ``info.near_categories`` (category name -> list of category names). Raises
    :class:`~vision.errors.DataError` naming ``file`` and the field."""
    c = ScalarChecker(file)
    phrases: dict[int, str] = {}
    for i, cat in enumerate(c.list_(c.key(split, "categories", "<top level>"), "categories")):
        ident = c.int_(c.key(c.dict_(cat, f"categories[{i}]"), "id", f"categories[{i}]"), f"categories[{i}].id")
        phrases[ident] = c.str_(c.key(cat, "name", f"categories[{i}]"), f"categories[{i}].name", nonempty=True)
    images = {int(img["id"]): img for img in split["images"]}
    frames: dict[int, list[dict]] = defaultdict(list)
    video_images: dict[int, set[int]] = defaultdict(set)
    for img in images.values():
        if img.get("video_id") is not None:
            video_images[int(img["video_id"])].add(int(img["id"]))
            if img.get("annotated", True) is not False:
                frames[int(img["video_id"])].append(img)
    for images_of in frames.values():
        images_of.sort(key=lambda im: (im.get("frame_index", 0), im["id"]))
    tracks: dict[int, tuple[int, int]] = {}
    for i, track in enumerate(split.get("tracks") or []):
        category = c.int_(c.key(track, "category_id", f"tracks[{i}]"), f"tracks[{i}].category_id")
        if category not in phrases:
            raise c.fail("category_id is not in the split's categories", f"tracks[{i}].category_id", category)
        tracks[int(track["id"])] = (int(track["video_id"]), category)
    masks: dict[tuple[int, int], dict] = {}
    for i, ann in enumerate(split.get("annotations") or []):
        if ann.get("track_id") is None:
            continue
        where = f"annotations[{i}]"
        track_id, image_id = int(ann["track_id"]), int(ann["image_id"])
        if "category_id" in ann or track_id not in tracks:
            category = c.int_(c.key(ann, "category_id", where), f"{where}.category_id")
            known = tracks.setdefault(track_id, (int(images[image_id]["video_id"]), category))[1]
            if category != known:
                raise c.fail(f"track {track_id} has category {known}", f"{where}.category_id", category)
            if category not in phrases:
                raise c.fail("category_id is not in the split's categories", f"{where}.category_id", category)
        if isinstance(ann.get("segmentation"), dict):
            masks[(track_id, image_id)] = ann["segmentation"]
    listed = {int(video["id"]) for video in split.get("videos") or []}
    for video_id in listed | set(video_images) | {v for v, _ in tracks.values()}:
        video_images.setdefault(video_id, set())
        frames.setdefault(video_id, [])
    queried: dict[int, set[int]] = {v: set() for v in video_images}
    for video_id, category in tracks.values():
        queried[video_id].add(category)
    for i, video in enumerate(split.get("videos") or []):
        if "concepts" not in video:
            continue
        queried[int(video["id"])] = set(check_concepts(c, video["concepts"], f"videos[{i}].concepts", phrases))
    near: dict[str, set[str]] = {}
    info = split.get("info")
    if isinstance(info, dict) and "near_categories" in info:
        near = check_near_categories(c, info["near_categories"], set(phrases.values()))
    return ConceptSplit(phrases, dict(frames), dict(video_images), queried, tracks, masks, near)


def _ranked_ids(gt: ConceptSplit, results: list) -> tuple[ConceptSplit, list[dict]]:
    """``gt`` and ``results`` with every track id replaced by its rank among all track ids (the split's and the
    results') and every category id by its rank among the split's categories: 0, 1, ... in sorted order.

    Any JSON integer is a valid id, but the scorer keeps ids in int64 arrays: a ``track_id`` of 2**63 ended in an
    OverflowError. Ranks keep every order and equality the figures depend on (sorting, grouping, matching), and no
    figure names an id (per-phrase figures are keyed by the phrase), so the figures are those of the original ids.
    ``results`` must have passed :func:`vision.evaluation.tasks.concept.validate_concept_results`."""
    track_ids = set(gt.tracks) | {int(r["track_id"]) for r in results if "presence" not in r}
    track = {t: rank for rank, t in enumerate(sorted(track_ids))}
    category = {c: rank for rank, c in enumerate(sorted(gt.phrases))}
    ranked = []
    for r in results:
        r = {**r, "category_id": category[int(r["category_id"])]}
        if "presence" not in r:
            r["track_id"] = track[int(r["track_id"])]
        ranked.append(r)
    return replace(gt, phrases={category[c]: name for c, name in gt.phrases.items()},
                   queried={v: {category[c] for c in cats} for v, cats in gt.queried.items()},
                   tracks={track[t]: (v, category[c]) for t, (v, c) in gt.tracks.items()},
                   masks={(track[t], image): rle for (t, image), rle in gt.masks.items()}), ranked


class _Frame:
    """One scored image of a video: its present ground-truth tracks (``gt``, ``gt_cat``) and its records (``pred``,
    ``pred_cat``, ``pred_score``; empty masks included) in track-id order, their pixel counts (``gt_area``,
    ``pred_area``) and intersections ``inter [G, P]``."""

    def __init__(self, gt: list[tuple[int, int]], pred: list[tuple[int, int, float]], gt_area: np.ndarray,
                 pred_area: np.ndarray, inter: np.ndarray):
        self.gt = np.array([g[0] for g in gt], np.int64)
        self.gt_cat = np.array([g[1] for g in gt], np.int64)
        self.pred = np.array([p[0] for p in pred], np.int64)
        self.pred_cat = np.array([p[1] for p in pred], np.int64)
        self.pred_score = np.array([p[2] for p in pred], float)
        self.gt_area, self.pred_area = gt_area.astype(float), pred_area.astype(float)
        self.inter = inter.astype(float)

        self.instance_score = np.zeros(len(pred))  # each record's instance score, set once all are read
        self.categories = set(self.gt_cat.tolist()) | set(self.pred_cat.tolist())

    def iou(self, gi: np.ndarray, pi: np.ndarray) -> np.ndarray:
        """Mask IoU ``[len(gi), len(pi)]`` of ground-truth rows ``gi`` and record columns ``pi`` (a ground-truth
        mask is never empty, so the union is never 0)."""
        inter = self.inter[gi[:, None], pi[None, :]]
        return inter / (self.gt_area[gi][:, None] + self.pred_area[pi][None, :] - inter)


def _frames(gt: ConceptSplit, results: list[dict]) -> tuple[dict[int, list[_Frame]], dict, dict]:
    """Per video its :class:`_Frame` list; (video, track) -> (category, mean record score) of each predicted
    instance (every record on a scored image, empty masks included); (image id, category id) -> presence of each
    presence record on a scored image."""
    scored = {int(im["id"]): v for v, images in gt.frames.items() for im in images}
    records: dict[int, list[tuple[int, int, float, dict]]] = defaultdict(list)
    presence: dict[tuple[int, int], float] = {}
    for r in results:
        image_id = int(r["image_id"])
        if image_id not in scored:
            continue
        if "presence" in r:
            presence[(image_id, int(r["category_id"]))] = float(r["presence"])
        else:
            records[image_id].append((int(r["track_id"]), int(r["category_id"]), float(r["score"]),
                                      r["segmentation"]))
    gt_by_image: dict[int, list[tuple[int, int, dict]]] = defaultdict(list)
    for (track_id, image_id), rle in gt.masks.items():
        if image_id in scored:
            gt_by_image[image_id].append((track_id, gt.tracks[track_id][1], rle))
    frames: dict[int, list[_Frame]] = {}
    scores: dict[tuple[int, int], list] = defaultdict(list)
    for video_id, images in gt.frames.items():
        frames[video_id] = []
        for im in images:
            iid = int(im["id"])
            g = sorted(gt_by_image[iid], key=lambda x: x[0])
            p = sorted(records[iid], key=lambda x: x[0])
            gt_area, pred_area, inter = rle_intersections([x[2] for x in g], [x[3] for x in p])
            present = np.flatnonzero(gt_area > 0)  # a track is present where its mask is not empty
            for t, cat, sc, _ in p:
                scores[(video_id, t)].append((cat, sc))
            frames[video_id].append(_Frame([g[i][:2] for i in present], [x[:3] for x in p], gt_area[present],
                                           pred_area, inter[present]))
    instances = {key: (vals[0][0], float(np.mean([s for _, s in vals]))) for key, vals in scores.items()}
    for video_id, video_frames in frames.items():
        for f in video_frames:
            f.instance_score = np.array([instances[(video_id, int(t))][1] for t in f.pred], float)
    return frames, instances, presence


def _queried_categories(gt: ConceptSplit) -> list[int]:
    """The categories queried on at least one video, sorted."""
    return sorted({cat for cats in gt.queried.values() for cat in cats})


def _videos_of(gt: ConceptSplit, category: int) -> list[int]:
    """The videos that query ``category``, sorted."""
    return sorted(v for v, cats in gt.queried.items() if category in cats)


def _sequence(frames: list[_Frame], category: int, above: float | None = None) -> dict[str, Any]:
    """trackeval's data of one phrase on one video from its present ground truth and non-empty records of
    ``category`` (of the instances whose score is above ``above`` only, when given). Images where the phrase has
    neither are left out: HOTA and CLEAR's id switches pass over such a timestep without a change."""
    gt_ids, tracker_ids, similarity = [], [], []
    for f in frames:
        if category not in f.categories:
            continue
        keep = (f.pred_cat == category) & (f.pred_area > 0)
        if above is not None:
            keep &= f.instance_score > above
        gi, pi = np.nonzero(f.gt_cat == category)[0], np.nonzero(keep)[0]
        gt_ids.append(f.gt[gi])
        tracker_ids.append(f.pred[pi])
        similarity.append(f.iou(gi, pi))
    return hota.sequence_data(gt_ids, tracker_ids, similarity)


def _hota(gt: ConceptSplit, frames: dict[int, list[_Frame]],
          score_threshold: float) -> tuple[dict[str, Any], dict[str, float]]:
    """trackeval's HOTA figures averaged over the queried phrases with a detection and IDSW, sam3's ``phrase_``
    figures, and ``HOTA/<phrase>`` for each averaged phrase."""
    classes, per_phrase, pooled, switches = [], {}, [], 0
    for category in _queried_categories(gt):
        sequences, detections = [], 0
        for video_id in _videos_of(gt, category):
            video_frames = frames[video_id]
            data = _sequence(video_frames, category)
            detections += data["num_gt_dets"] + data["num_tracker_dets"]
            result = {**hota.hota_sequence(data), "IDSW": hota.id_switches(data)}
            sequences.append(result)
            if any(((f.pred_cat == category) & (f.pred_area > 0) & (f.instance_score <= score_threshold)).any()
                   for f in video_frames):  # phrase-HOTA sees only the instances above the threshold
                data = _sequence(video_frames, category, score_threshold)
                result = hota.hota_sequence(data)
            pooled.append((result, data["num_gt_dets"] + data["num_tracker_dets"]))
        combined = hota.combine_sequences(sequences)
        switches += combined["IDSW"]
        if detections:  # trackeval's ignore_empty_classes: a phrase with neither ground truth nor record is left out
            classes.append(combined)
            per_phrase[f"HOTA/{gt.phrases[category]}"] = hota.summary(combined)["HOTA"]
    if classes:
        tracking: dict[str, Any] = {**hota.summary(hota.combine_classes(classes)), "IDSW": switches}
    else:
        tracking = {**{k: -1.0 for k in hota.HOTA_FIELDS}, "IDSW": 0}
    if any(dets for _, dets in pooled):
        phrase = hota.summary(hota.combine_sequences([r for r, _ in pooled]))
    else:
        phrase = {k: -1.0 for k in hota.HOTA_FIELDS}
    return {**tracking, **{f"phrase_{k}": v for k, v in phrase.items()}}, per_phrase


class _VideoPairs:
    """Sequence IoU of every (video, queried phrase) pair: ``pairs[(video, category)] = (ground-truth track ids,
    predicted track ids, scores [D], IoU [D, G])``, tracks in id order. Over a video's scored images the
    intersections of every (record track, ground-truth track) and the pixels of every track are summed; a pair's
    union is the sum of its two tracks' pixels less its intersection (the sum of the per-image unions)."""

    def __init__(self, gt: ConceptSplit, frames: dict[int, list[_Frame]], instances: dict):
        self.pairs: dict[tuple[int, int], tuple[list[int], list[int], np.ndarray, np.ndarray]] = {}
        for video_id, cats in gt.queried.items():
            video_frames = frames[video_id]
            gt_ids = sorted({int(t) for f in video_frames for t in f.gt})
            pred_ids = sorted({int(t) for f in video_frames for t in f.pred})
            gt_col = {t: j for j, t in enumerate(gt_ids)}
            pred_row = {t: j for j, t in enumerate(pred_ids)}
            inter = np.zeros((len(pred_ids), len(gt_ids)))
            gt_pixels, pred_pixels = np.zeros(len(gt_ids)), np.zeros(len(pred_ids))
            gt_cat = {int(t): int(c) for f in video_frames for t, c in zip(f.gt, f.gt_cat)}
            for f in video_frames:
                cols = np.array([gt_col[int(t)] for t in f.gt], np.int64)
                rows = np.array([pred_row[int(t)] for t in f.pred], np.int64)
                gt_pixels[cols] += f.gt_area
                pred_pixels[rows] += f.pred_area
                inter[np.ix_(rows, cols)] += f.inter.T
            for category in cats:
                gi = np.array([j for j, t in enumerate(gt_ids) if gt_cat[t] == category], np.int64)
                pi = np.array([j for j, t in enumerate(pred_ids) if instances[(video_id, t)][0] == category],
                              np.int64)
                both = inter[np.ix_(pi, gi)]
                union = pred_pixels[pi][:, None] + gt_pixels[gi][None, :] - both
                ious = np.where(union > 0, both / np.maximum(union, 1), 0.0)
                scores = np.array([instances[(video_id, pred_ids[j])][1] for j in pi], float)
                self.pairs[(video_id, category)] = ([gt_ids[j] for j in gi], [pred_ids[j] for j in pi], scores,
                                                    ious)


def _coco_match(scores: np.ndarray, ious: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """COCOeval.evaluateImg without ignored ground truth: the first 100 predictions by score (stable sort), each
    matched at every IoU threshold to the unmatched ground truth of highest IoU >= the threshold (ties: the last).
    Returns (sorted scores [D], matched [T, D])."""
    order = np.argsort(-scores, kind="mergesort")[:_MAX_DETS]
    ious = ious[order]
    matched = np.zeros((len(IOU_THRESHOLDS), len(order)), bool)
    if not ious.size:
        return scores[order], matched
    for t, threshold in enumerate(IOU_THRESHOLDS):
        taken = np.zeros(ious.shape[1], bool)
        for d in range(len(order)):
            best, m = min(threshold, 1 - 1e-10), -1
            for g in range(ious.shape[1]):
                if not taken[g] and ious[d, g] >= best:
                    best, m = ious[d, g], g
            if m >= 0:
                taken[m], matched[t, d] = True, True
    return scores[order], matched


def _video_ap(gt: ConceptSplit, pairs: _VideoPairs) -> dict[str, float]:
    """YouTube-VIS AP, AP50, AP75 (COCOeval.accumulate and summarize at area all, 100 detections)."""
    precision = []
    for category in _queried_categories(gt):
        all_scores, all_matched, num_gt = [], [], 0
        for video_id in _videos_of(gt, category):
            gt_ids, _, scores, ious = pairs.pairs[(video_id, category)]
            s, m = _coco_match(scores, ious)
            all_scores.append(s)
            all_matched.append(m)
            num_gt += len(gt_ids)
        if num_gt == 0:
            continue
        scores = np.concatenate(all_scores)
        order = np.argsort(-scores, kind="mergesort")
        matched = np.concatenate(all_matched, axis=1)[:, order]
        tp = np.cumsum(matched, axis=1).astype(float)
        fp = np.cumsum(~matched, axis=1).astype(float)
        q = np.zeros((len(IOU_THRESHOLDS), len(_RECALLS)))
        for t in range(len(IOU_THRESHOLDS)):
            recall = tp[t] / num_gt
            prec = np.maximum.accumulate((tp[t] / (fp[t] + tp[t] + np.spacing(1)))[::-1])[::-1]
            at = np.searchsorted(recall, _RECALLS, side="left")
            q[t, at < len(prec)] = prec[at[at < len(prec)]]
        precision.append(q)
    if not precision:
        return {"AP": -1.0, "AP50": -1.0, "AP75": -1.0}
    p = np.stack(precision)  # [K, T, R]
    return {"AP": float(p.mean()), "AP50": float(p[:, 0].mean()), "AP75": float(p[:, 5].mean())}


def mcc(tp: float, tn: float, fp: float, fn: float) -> float:
    """sam3's IL_MCC: (TP TN - FP FN) / (sqrt((TP+FP)(TP+FN)(TN+FP)(TN+FN)) + 1e-6); 0 when a margin is empty."""
    return float(tp * tn - fp * fn) / ((float(tp + fp) * float(tp + fn) * float(tn + fp) * float(tn + fn)) ** 0.5
                                       + 1e-6)


class _CGF1Counts:
    """sam3's ``CGF1Eval`` counts over (image or video, phrase) pairs: per IoU threshold TP, FN and the FPs of the
    pairs with ground truth, and the image-level TP, TN, FP, FN of the pairs."""

    def __init__(self) -> None:
        n = len(IOU_THRESHOLDS)
        self.tps, self.pm_fps, self.fns = np.zeros(n), np.zeros(n), np.zeros(n)
        self.il = {"TP": 0, "TN": 0, "FP": 0, "FN": 0}

    def add(self, ious: np.ndarray) -> None:
        """One pair: the IoU ``[D, G]`` of its predictions (above the score threshold) and its ground truth."""
        num_dt, num_gt = ious.shape
        self.il[_outcome(num_dt > 0, num_gt > 0)] += 1
        if not num_gt:  # a pair without ground truth adds no TP, FN or counted FP
            return
        if num_dt:
            rows, cols = linear_sum_assignment(-ious)
            tp = (ious[rows, cols][None, :] >= IOU_THRESHOLDS[:, None]).sum(axis=1)
        else:
            tp = np.zeros(len(IOU_THRESHOLDS), np.int64)
        self.tps += tp
        self.pm_fps += num_dt - tp
        self.fns += num_gt - tp

    def figures(self) -> tuple[float, float, float]:
        """(cgF1, pmF1, IL_MCC): CGF1Eval.accumulate and summarize over the IoU thresholds."""
        precision = self.tps / (self.tps + self.pm_fps + 1e-4)
        recall = self.tps / (self.tps + self.fns + 1e-4)
        pm_f1 = 2 * precision * recall / (precision + recall + 1e-4)
        il_mcc = mcc(self.il["TP"], self.il["TN"], self.il["FP"], self.il["FN"])
        return float(np.mean(pm_f1 * il_mcc)), float(np.mean(pm_f1)), il_mcc


def _cgf1(gt: ConceptSplit, frames: dict[int, list[_Frame]], score_threshold: float) -> dict[str, float]:
    """sam3 CGF1Eval over every (image, queried phrase) pair: cgF1, pmF1 and IL_MCC."""
    counts = _CGF1Counts()
    for video_id, cats in gt.queried.items():
        for f in frames[video_id]:
            above = f.pred_score >= score_threshold
            seen = set(f.gt_cat.tolist()) | set(f.pred_cat[above].tolist())
            for category in cats:
                if category not in seen:
                    counts.il["TN"] += 1  # neither ground truth nor prediction: an image-level TN, nothing else
                    continue
                gi = np.nonzero(f.gt_cat == category)[0]
                pi = np.nonzero((f.pred_cat == category) & above)[0]
                counts.add(f.iou(gi, pi).T)
    cg, pm, il = counts.figures()
    return {"cgF1": cg, "pmF1": pm, "IL_MCC": il}


def _video_cgf1(pairs: _VideoPairs, score_threshold: float) -> dict[str, float]:
    """sam3 VideoCGF1Evaluator over every (video, queried phrase) pair: video_cgF1, video_pmF1, video_IL_MCC."""
    counts = _CGF1Counts()
    for _, _, scores, ious in pairs.pairs.values():
        counts.add(ious[scores >= score_threshold])
    cg, pm, il = counts.figures()
    return {"video_cgF1": cg, "video_pmF1": pm, "video_IL_MCC": il}


def _presence_mcc(gt: ConceptSplit, frames: dict[int, list[_Frame]], presence: dict,
                  threshold: float) -> float:
    """MCC (sam3's formula) of presence >= ``threshold`` against "the phrase is present on the image"."""
    if not presence:
        return -1.0
    present = {(int(im["id"]), int(cat)) for v, images in gt.frames.items()
               for im, f in zip(images, frames[v]) for cat in f.gt_cat}
    counts = {"TP": 0, "TN": 0, "FP": 0, "FN": 0}
    for key, value in presence.items():
        counts[_outcome(value >= threshold, key in present)] += 1
    return mcc(counts["TP"], counts["TN"], counts["FP"], counts["FN"])


def _outcome(predicted: bool, actual: bool) -> str:
    """``"TP"``, ``"FP"``, ``"FN"`` or ``"TN"`` of one image-level decision."""
    return ("T" if predicted == actual else "F") + ("P" if predicted else "N")


def _accepted(gt: ConceptSplit, frames: dict[int, list[_Frame]], accept_iou: float) -> dict[str, float]:
    """``outside_accepted`` and ``near_accepted`` (fractions of tracks; -1 where there is none)."""
    outside, near = [], []
    for video_id, video_frames in frames.items():
        near_names = set().union(*(gt.near.get(gt.phrases[q], set()) for q in gt.queried[video_id]))
        visible: dict[int, int] = defaultdict(int)
        hits: dict[tuple[int, int], int] = defaultdict(int)
        queried = gt.queried[video_id]
        for f in video_frames:
            rows = np.array([i for i, c in enumerate(f.gt_cat.tolist()) if c not in queried], np.int64)
            if not len(rows):
                continue
            ious = f.iou(rows, np.arange(len(f.pred)))
            for r, row in zip(rows, ious):
                visible[int(f.gt[r])] += 1
                for p in np.flatnonzero(row >= accept_iou):
                    hits[(int(f.gt[r]), int(f.pred[p]))] += 1
        for track_id, count in visible.items():
            covered = any(2 * h >= count for (t, _), h in hits.items() if t == track_id)
            outside.append(covered)
            if gt.phrases[gt.tracks[track_id][1]] in near_names:
                near.append(covered)
    return {"outside_accepted": float(np.mean(outside)) if outside else -1.0,
            "near_accepted": float(np.mean(near)) if near else -1.0}


def evaluate_concept(split: dict, results: list, *, score_threshold: float = 0.5, presence_threshold: float = 0.5,
                     accept_iou: float = 0.5, gt_file: str | None = None) -> dict[str, Any]:
    """Score concept ``results`` (already validated by :func:`vision.evaluation.tasks.concept.validate_concept_results`)
    against ``split``: every figure of the module docstring, in its order, then ``HOTA/<phrase>``.

    Args:
        score_threshold: the score at which a record counts for cgF1 / pmF1 / IL_MCC and an instance for their
            video forms (>=), and above which an instance counts for phrase-HOTA (>); sam3: 0.5.
        presence_threshold: a presence record at or above it says "present" (0.5).
        accept_iou: the mask IoU at which a predicted instance covers an outside track on a view (0.5).
        gt_file: the split's name for messages.

    Raises:
        InputError: a threshold that is not a number in [0, 1] (``accept_iou`` in (0, 1]).
    """
    for name, value in (("score_threshold", score_threshold), ("presence_threshold", presence_threshold),
                        ("accept_iou", accept_iou)):
        if (isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1
                or (name == "accept_iou" and value == 0)):
            raise InputError(f"{name} must be a number in {'(0, 1]' if name == 'accept_iou' else '[0, 1]'}, "
                             f"got {value!r}")
    gt, results = _ranked_ids(concept_split(split, gt_file), results)  # ids of any size fit int64 arrays
    frames, instances, presence = _frames(gt, results)
    tracking, per_phrase = _hota(gt, frames, score_threshold)
    pairs = _VideoPairs(gt, frames, instances)
    metrics: dict[str, Any] = {**tracking, **_video_ap(gt, pairs), **_cgf1(gt, frames, score_threshold),
                               **_video_cgf1(pairs, score_threshold),
                               "presence_MCC": _presence_mcc(gt, frames, presence, presence_threshold),
                               **_accepted(gt, frames, accept_iou)}
    return {**metrics, **per_phrase}
