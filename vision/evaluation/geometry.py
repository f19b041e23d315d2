"""Geometry metrics: depth (AbsRel, delta < 1.25), relative camera pose (RRA, RTA, AUC@30) and point maps
(accuracy, completeness, Chamfer after similarity alignment), and the geometry task's score of a results file.

Conventions: depth maps ``[H, W]`` (or ``[S, H, W]`` for a sequence) in metres; cameras are OpenCV
camera-from-world extrinsics ``[N, 3, 4]`` (x_cam = R x_world + t); point sets ``[N, 3]``.

The task's score (:func:`evaluate_geometry_results`, ``vision.evaluation.evaluate(split, results, "geometry")``)
reads results of the format of :func:`vision.evaluation.tasks.geometry.validate_geometry_results` (one entry per image of
each predicted clip: cameras, depth and world points). For each clip, in the order of its image ids, the split's
depth and cameras are resized to the predictions' H x W exactly as the evaluation loader does (the multi-view eval
transform: a plain resize), and:

- depth: AbsRel and delta<1.25 with median scaling per image over the valid pixels (:func:`depth_metrics`), per
  clip, then averaged over clips weighted by their images; baseline ``constant_depth``: a constant map (after
  median scaling every pixel gets the image's median GT depth);
- cameras: relative rotation / translation-direction errors over the pairs i < j of each clip, pooled over clips:
  ``RRA@k``, ``RTA@k`` (k = 5, 15, 30) and ``AUC@30``; baseline ``identity_pose``: identity cameras for every view;
  and the same for each optional camera the results carry
  (:data:`~vision.evaluation.results.GEOMETRY_CAMERA_FIELDS`): ``camera_head`` (``head_extrinsics``, the camera
  head's when ``extrinsics`` are solved ones), ``match_pose`` (``match_extrinsics``, registered from learned matches)
  and ``ray_pose`` (``ray_extrinsics``, fitted to a predicted ray map);
- point maps: ``chamfer`` after a Umeyama similarity alignment, in units of the normalised GT scene (in view 0's
  camera frame, mean point norm 1: :func:`vision.alignment.normalize_scene_points`), on at most ``max_points``
  valid pixels per clip drawn by one generator seeded with ``seed`` over the clips in order.

The metrics come back flat: the model's unprefixed (``abs_rel``, ``delta_1.25``, ``AUC@30``, ``RRA@15``,
``RTA@15``, ``chamfer``, ...), each baseline's prefixed by its row (``constant_depth/abs_rel``,
``identity_pose/AUC@30``, ``camera_head/AUC@30``, ``match_pose/AUC@30``, ``ray_pose/AUC@30``), plus ``clips`` and
``images``; :func:`format_geometry_table` prints them as one row per method.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from scipy.spatial import cKDTree
from scipy.spatial.transform import Rotation

from vision.alignment import normalize_scene_points, umeyama
from vision.data.resize import crop_resize_intrinsics, resize_nearest
from vision.errors import DataError, InputError
from vision.evaluation.results import GEOMETRY_CAMERA_FIELDS

__all__ = [
    "depth_metrics", "relative_pose_errors", "pose_auc", "pose_metrics", "chamfer_metrics",
    "evaluate_geometry_results", "format_geometry_table", "GEOMETRY_ROWS",
]

#: The rows of the geometry table besides the model's, in order; their metrics are prefixed ``"<row>/"``.
GEOMETRY_ROWS = ("constant_depth", "identity_pose", *GEOMETRY_CAMERA_FIELDS)


def _depth_errors(pred: np.ndarray, gt: np.ndarray) -> tuple[float, float]:
    abs_rel = float(np.mean(np.abs(pred - gt) / gt))
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.maximum(pred / gt, gt / pred)
    delta = float(np.mean(ratio < 1.25))
    return abs_rel, delta


def depth_metrics(pred: np.ndarray, gt: np.ndarray, *, max_depth: float = 80.0, align: str = "image",
                  valid: np.ndarray | None = None, names: list[str] | None = None) -> dict:
    """AbsRel = mean(|d_hat - d| / d) and delta<1.25 = mean(max(d_hat/d, d/d_hat) < 1.25) over 0 < d < max_depth.

    Args:
        pred, gt: depth ``[H, W]`` or a sequence ``[S, H, W]``.
        align: ``"image"`` median scaling per image (scale = median(d) / median(d_hat) over the valid pixels of
            that image; metrics averaged over images), ``"sequence"`` one median scale for the whole sequence
            (MonST3R video depth; metrics over all valid pixels), ``"none"`` metric depth as given.
        valid: optional extra boolean mask of pixels to use.
        names: what each map of a sequence is (e.g. ``results[3].depth (image 7)``), for error messages.

    Returns:
        ``{"abs_rel", "delta_1.25", "num_pixels"}``.
    """
    pred = np.asarray(pred, dtype=np.float64)
    gt = np.asarray(gt, dtype=np.float64)
    if pred.shape != gt.shape or pred.ndim not in (2, 3):
        raise InputError(f"depth maps must share a shape [H, W] or [S, H, W]; got {pred.shape} and {gt.shape}")
    if align not in ("image", "sequence", "none"):
        raise InputError(f"align must be 'image', 'sequence' or 'none', got {align!r}")
    if pred.ndim == 2:
        pred, gt = pred[None], gt[None]
        valid = None if valid is None else np.asarray(valid, dtype=bool)[None]
    mask = np.isfinite(gt) & (gt > 0) & (gt < max_depth) & np.isfinite(pred)
    if valid is not None:
        mask &= np.asarray(valid, dtype=bool).reshape(mask.shape)
    def name(k: int | None) -> str:
        if names is None:
            return "" if k is None else f"depth map {k}: "
        return f"{', '.join(names)}: " if k is None else f"{names[k]}: "

    if not mask.any():
        raise InputError(f"{name(None)}no valid ground-truth depth in (0, {max_depth})")

    def scale_of(p: np.ndarray, g: np.ndarray, k: int | None) -> float:
        med = float(np.median(p))
        if med <= 0:
            raise InputError(f"{name(k)}the median predicted depth over the valid pixels is {med}; median scaling "
                             "needs a positive depth")
        return float(np.median(g)) / med

    if align == "sequence":
        s = scale_of(pred[mask], gt[mask], None)
        abs_rel, delta = _depth_errors(pred[mask] * s, gt[mask])
    elif align == "none":
        abs_rel, delta = _depth_errors(pred[mask], gt[mask])
    else:
        rels, deltas = [], []
        for k, (p, g, m) in enumerate(zip(pred, gt, mask)):
            if not m.any():
                continue
            a, d = _depth_errors(p[m] * scale_of(p[m], g[m], k), g[m])
            rels.append(a)
            deltas.append(d)
        abs_rel, delta = float(np.mean(rels)), float(np.mean(deltas))
    return {"abs_rel": abs_rel, "delta_1.25": delta, "num_pixels": int(mask.sum())}


def _split_extrinsics(extrinsics: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    e = np.asarray(extrinsics, dtype=np.float64)
    if e.ndim != 3 or e.shape[1:] not in ((3, 4), (4, 4)):
        raise InputError(f"extrinsics must be [N, 3, 4] (or [N, 4, 4]), got {e.shape}")
    return e[:, :3, :3], e[:, :3, 3]


def _angle_between(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Angle in degrees between rows of a and b, folded to [0, 90] (direction up to sign).
    Both zero -> 0; exactly one zero -> 90."""
    na = np.linalg.norm(a, axis=-1)
    nb = np.linalg.norm(b, axis=-1)
    cos = np.abs(np.sum(a * b, axis=-1)) / np.maximum(na * nb, 1e-300)
    angle = np.degrees(np.arccos(np.clip(cos, 0.0, 1.0)))
    angle = np.where((na == 0) ^ (nb == 0), 90.0, angle)
    return np.where((na == 0) & (nb == 0), 0.0, angle)


def relative_pose_errors(pred_extrinsics: np.ndarray, gt_extrinsics: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Relative rotation and translation-direction errors (degrees) for all camera pairs i < j.

    The relative pose from camera i to camera j is R_ij = R_j R_i^T, t_ij = t_j - R_ij t_i. The rotation error is the
    geodesic (quaternion) angle of R_ij_pred^T R_ij_gt; the translation error is the angle between t_ij_pred and
    t_ij_gt folded to min(e, 180 - e).

    Args:
        pred_extrinsics, gt_extrinsics: ``[N, 3, 4]`` camera-from-world, N >= 2.

    Returns:
        (rotation_errors, translation_errors), each ``[N * (N - 1) / 2]`` in pair order (0,1), (0,2), ...
    """
    rp, tp = _split_extrinsics(pred_extrinsics)
    rg, tg = _split_extrinsics(gt_extrinsics)
    if rp.shape != rg.shape or len(rp) < 2:
        raise InputError(f"need the same number (>= 2) of predicted and GT cameras; got {len(rp)} and {len(rg)}")
    i, j = np.triu_indices(len(rp), k=1)

    def relative(r: np.ndarray, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        r_ij = r[j] @ np.transpose(r[i], (0, 2, 1))
        t_ij = t[j] - np.einsum("nab,nb->na", r_ij, t[i])
        return r_ij, t_ij

    rp_ij, tp_ij = relative(rp, tp)
    rg_ij, tg_ij = relative(rg, tg)
    delta = np.transpose(rp_ij, (0, 2, 1)) @ rg_ij
    rot_err = np.degrees(Rotation.from_matrix(delta).magnitude())
    return rot_err, _angle_between(tp_ij, tg_ij)


def pose_auc(rotation_errors: np.ndarray, translation_errors: np.ndarray, max_threshold: int = 30) -> float:
    """AUC@max_threshold: mean over 1-degree bins of the cumulative histogram of max(rotation, translation)
    error, each bin normalised by the number of pairs (VGGT ``test_co3d.py``)."""
    errors = np.maximum(np.asarray(rotation_errors, float), np.asarray(translation_errors, float))
    if errors.size == 0:
        raise InputError("no camera pairs to evaluate")
    histogram, _ = np.histogram(errors, bins=np.arange(max_threshold + 1))
    return float(np.mean(np.cumsum(histogram / float(errors.size))))


def pose_metrics(pred_extrinsics: np.ndarray, gt_extrinsics: np.ndarray,
                 thresholds: tuple[int, ...] = (5, 15, 30)) -> dict:
    """RRA@k, RTA@k (fraction of pairs with error < k degrees), AUC@30 and the mean errors over all pairs i < j."""
    rot, trans = relative_pose_errors(pred_extrinsics, gt_extrinsics)
    out: dict[str, float] = {}
    for k in thresholds:
        out[f"RRA@{k}"] = float(np.mean(rot < k))
        out[f"RTA@{k}"] = float(np.mean(trans < k))
    out["AUC@30"] = pose_auc(rot, trans, 30)
    out["rotation_error_mean"] = float(rot.mean())
    out["translation_error_mean"] = float(trans.mean())
    return out


def chamfer_metrics(pred_points: np.ndarray, gt_points: np.ndarray, *, align: bool = True,
                    correspondences: bool = True) -> dict:
    """Accuracy (mean distance pred -> nearest GT), completeness (GT -> nearest pred) and
    Chamfer = (accuracy + completeness) / 2, in GT units.

    Args:
        pred_points, gt_points: ``[N, 3]`` / ``[M, 3]`` (maps ``[..., 3]`` are flattened; non-finite rows dropped).
        align: first map the prediction onto the GT with a Umeyama similarity.
        correspondences: the two sets correspond row by row (point maps of the same pixels), which the alignment
            uses; required when ``align`` is True.
    """
    p = np.asarray(pred_points, dtype=np.float64).reshape(-1, 3)
    g = np.asarray(gt_points, dtype=np.float64).reshape(-1, 3)
    if align:
        if not correspondences or p.shape != g.shape:
            raise InputError("alignment needs corresponding point sets of the same shape")
        keep = np.isfinite(p).all(axis=1) & np.isfinite(g).all(axis=1)
        p, g = p[keep], g[keep]
        s, r, t = umeyama(p, g)
        p = s * p @ r.T + t
    else:
        p = p[np.isfinite(p).all(axis=1)]
        g = g[np.isfinite(g).all(axis=1)]
    if len(p) == 0 or len(g) == 0:
        raise InputError("empty point set")
    accuracy = float(np.mean(cKDTree(g).query(p)[0]))
    completeness = float(np.mean(cKDTree(p).query(g)[0]))
    return {"accuracy": accuracy, "completeness": completeness, "chamfer": (accuracy + completeness) / 2}


def _pose_summary(rot: np.ndarray, trans: np.ndarray) -> dict[str, float]:
    out = {"AUC@30": pose_auc(rot, trans, 30)}
    for k in (5, 15, 30):
        out[f"RRA@{k}"] = float(np.mean(rot < k))
        out[f"RTA@{k}"] = float(np.mean(trans < k))
    return out


def _depth_summary(rows: list[tuple[dict, int]]) -> dict[str, float]:
    """Per-clip depth metrics weighted by the clip's number of images."""
    n = sum(count for _, count in rows)
    return {k: float(sum(row[k] * count for row, count in rows) / max(n, 1)) for k in ("abs_rel", "delta_1.25")}


def _clip_ground_truth(split: Any, clip: tuple[int, ...], side: int) -> dict[str, np.ndarray]:
    """The split's depth ``[S, side, side]``, valid mask, intrinsics and extrinsics of a clip, resized as the
    evaluation loader resizes them (the eval multi-view transform of :mod:`vision.data.transforms`: depth and its
    valid mask by pixel-centre nearest neighbour, the intrinsics by the pixel-centre rule, the extrinsics kept)."""
    images = [split.images[i] for i in clip]
    depth = np.stack([split.depth(img) for img in images]).astype(np.float32)
    cameras = [split.camera(img) for img in images]
    height, width = depth.shape[1:]
    resized = np.stack([resize_nearest(d, (side, side)) for d in depth])
    valid = np.stack([resize_nearest(d > 0, (side, side)) for d in depth]) & (resized > 0)
    intrinsics = np.stack([crop_resize_intrinsics(k, (0, 0, width, height), (side, side)) for k, _ in cameras])
    return {"depth": resized, "valid_depth": valid, "intrinsics": intrinsics,
            "extrinsics": np.stack([e for _, e in cameras]).astype(np.float32)}


def _clip_poses_and_points(entries: list[dict], truth: dict[str, np.ndarray],
                           errors: dict[str, list[tuple[np.ndarray, np.ndarray]]], chamfers: list[float],
                           rng: np.random.Generator, max_points: int) -> None:
    """Add one clip's relative pose errors (the model's and each baseline's row, to ``errors``) and its Chamfer
    distance (to ``chamfers``, on at most ``max_points`` points drawn with ``rng``)."""
    gt_extr, valid = truth["extrinsics"], truth["valid_depth"]
    errors["model"].append(relative_pose_errors(np.stack([e["extrinsics"] for e in entries]), gt_extr))
    identity = np.tile(np.eye(3, 4), (len(entries), 1, 1))
    errors["identity_pose"].append(relative_pose_errors(identity, gt_extr))
    for row, key in GEOMETRY_CAMERA_FIELDS.items():
        if key in entries[0]:
            errors[row].append(relative_pose_errors(np.stack([e[key] for e in entries]), gt_extr))
    gt_points = normalize_scene_points(gt_extr, truth["intrinsics"], truth["depth"], valid)[0][valid]
    pred_points = np.stack([e["world_points"] for e in entries])[valid]
    if len(gt_points) >= 3:
        pick = rng.choice(len(gt_points), size=min(max_points, len(gt_points)), replace=False)
        chamfers.append(chamfer_metrics(pred_points[pick], gt_points[pick])["chamfer"])


def evaluate_geometry_results(gt: dict, clips: dict[tuple[int, ...], list[dict]], *,
                              split_root: str | Path | None = None, results_file: str | None = None,
                              gt_file: str | None = None, max_points: int = 4000,
                              seed: int = 0) -> dict[str, float | int]:
    """Score geometry results against a split (see the module docstring for the metrics and their names).

    Args:
        gt: the split dict; split_root: the folder its file names are relative to (default: ``gt_file``'s).
        clips: the validated results, as :func:`vision.evaluation.tasks.geometry.validate_geometry_results`
            returns them (``{clip image ids: [decoded entry per view]}``).
        results_file, gt_file: names for messages. max_points, seed: Chamfer's subsample per clip.
    """
    from vision.data.coco import Split

    if split_root is None:
        if gt_file is None:
            raise InputError("geometry scoring reads the split's depth files: give split_root with a split dict")
        split_root = Path(gt_file).parent
    split = Split.from_dict(gt, split_root, check_files=False, file=gt_file)
    rng = np.random.default_rng(seed)
    depth_rows, const_rows, chamfers = [], [], []
    errors: dict[str, list[tuple[np.ndarray, np.ndarray]]] = {row: [] for row in ("model", "identity_pose",
                                                                                  *GEOMETRY_CAMERA_FIELDS)}
    for clip in sorted(clips):
        entries = clips[clip]
        views = len(clip)
        pred_depth = np.stack([e["depth"] for e in entries])
        truth = _clip_ground_truth(split, clip, pred_depth.shape[-1])
        gt_depth, valid = truth["depth"], truth["valid_depth"]
        names = [f"results[{e['index']}].depth (image {e['image_id']})" for e in entries]
        try:  # the baseline first: it fails only on the split's depth, the model's row then only on the results
            const_rows.append((depth_metrics(np.ones_like(gt_depth), gt_depth, valid=valid, max_depth=1e6), views))
        except InputError as exc:
            depth_files = [split.images[m].get("depth_file") for m in clip]
            raise DataError(f"the depth files of clip {list(clip)} hold no valid depth ({exc})", file=gt_file,
                            field="depth_file", value=depth_files) from None
        try:
            depth_rows.append((depth_metrics(pred_depth, gt_depth, valid=valid, max_depth=1e6, names=names), views))
        except InputError as exc:
            raise DataError(f"clip {list(clip)}: {exc}", file=results_file) from None
        try:
            _clip_poses_and_points(entries, truth, errors, chamfers, rng, max_points)
        except InputError as exc:
            first = entries[0]["index"]
            raise DataError(f"clip {list(clip)} (results[{first}] and the rest of its clip): {exc}",
                            file=results_file) from None

    def pooled(name: str) -> dict[str, float]:
        return _pose_summary(np.concatenate([r for r, _ in errors[name]]), np.concatenate([t for _, t in errors[name]]))

    metrics: dict[str, float | int] = {**_depth_summary(depth_rows), **pooled("model"),
                                       "chamfer": float(np.mean(chamfers)) if chamfers else float("nan"),
                                       "clips": len(clips), "images": sum(len(clip) for clip in clips)}
    metrics.update({f"constant_depth/{k}": v for k, v in _depth_summary(const_rows).items()})
    metrics.update({f"identity_pose/{k}": v for k, v in pooled("identity_pose").items()})
    for row in GEOMETRY_CAMERA_FIELDS:
        if errors[row]:
            metrics.update({f"{row}/{k}": v for k, v in pooled(row).items()})
    return metrics


def format_geometry_table(metrics: dict[str, Any]) -> str:
    """The metrics of :func:`evaluate_geometry_results` as a fixed-width table: one row per method (``model`` and
    each row of :data:`GEOMETRY_ROWS` present), one column per metric (``-`` where a method has none)."""
    cols = ["abs_rel", "delta_1.25", "AUC@30", "RRA@15", "RTA@15", "chamfer"]
    rows = {"model": {k: v for k, v in metrics.items() if "/" not in k}}
    for name in GEOMETRY_ROWS:
        row = {k.split("/", 1)[1]: v for k, v in metrics.items() if k.startswith(f"{name}/")}
        if row:
            rows[name] = row
    lines = [f"{'method':<16}" + "".join(f"{c:>12}" for c in cols)]
    for name, row in rows.items():
        cells = "".join(f"{row[c]:>12.4f}" if c in row else f"{'-':>12}" for c in cols)
        lines.append(f"{name:<16}{cells}")
    return "\n".join(lines)
