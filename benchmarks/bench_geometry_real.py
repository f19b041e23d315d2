#!/usr/bin/env python
"""Two-view depth on real data: the Middlebury 2014 Motorcycle pair that scikit-image ships.

Ground truth: metric depth from the shipped disparity and calibration (down-sampled by 4):
Z = f * B / (d + doffs) with f = 994.978 px, B = 193.001 mm, doffs = 31.086 px.
Rows: our geometry backbone (both views in, depth of the left view, median-scaled as every monocular/feed-forward
model is; and the left view alone: does the model use the second view?), OpenCV StereoSGBM on the same pair (metric, and median-scaled), and a constant-depth baseline.
All metrics are computed at the ground truth's resolution over the pixels with ground truth. Two diagnostics beside
the median-scaled AbsRel: ``rank``, Spearman's correlation of each row's depth with the truth (is the order of near and
far right?), and ``AbsRel ssi``, AbsRel after the least-squares scale and shift of disparity that MiDaS-style
affine-invariant models are scored with (is the error in the order, or in the spread of depths?).

``python benchmarks/bench_geometry_real.py --ckpt runs/geometry/tiny/checkpoints/last.ckpt``
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import cv2
import numpy as np
import torch

from vision.data.resize import resize_image
from vision.evaluation.geometry import depth_metrics
from vision.geometry.task import GeometryModel, load

FOCAL, BASELINE_MM, DOFFS = 994.978, 193.001, 31.086


def middlebury_motorcycle() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Left, right uint8 RGB [H, W, 3] and metric depth in metres [H, W] (0 where there is no ground truth)."""
    from skimage.data import stereo_motorcycle

    left, right, disp = stereo_motorcycle()
    disp = np.asarray(disp, np.float64)
    depth = np.where(np.isfinite(disp), FOCAL * BASELINE_MM / 1000.0 / (np.nan_to_num(disp) + DOFFS), 0.0)
    return left, right, depth.astype(np.float32)


def sgbm_depth(left: np.ndarray, right: np.ndarray) -> np.ndarray:
    gl, gr = cv2.cvtColor(left, cv2.COLOR_RGB2GRAY), cv2.cvtColor(right, cv2.COLOR_RGB2GRAY)
    block = 5
    sgbm = cv2.StereoSGBM_create(minDisparity=0, numDisparities=80, blockSize=block, P1=8 * block * block,
                                 P2=32 * block * block, uniquenessRatio=5, speckleWindowSize=100, speckleRange=2,
                                 mode=cv2.STEREO_SGBM_MODE_SGBM_3WAY)
    disp = sgbm.compute(gl, gr).astype(np.float32) / 16.0
    return np.where(disp > 0, FOCAL * BASELINE_MM / 1000.0 / (disp + DOFFS), 0.0).astype(np.float32)


def ssi_abs_rel(pred: np.ndarray, gt: np.ndarray, valid: np.ndarray) -> float:
    """AbsRel of ``pred`` after the least-squares scale and shift of its disparity ``1 / pred`` to the truth's over
    ``valid`` (a constant prediction gets the best constant disparity)."""
    disparity = 1.0 / np.asarray(pred, np.float64)[valid]
    target = 1.0 / np.asarray(gt, np.float64)[valid]
    (scale, shift), *_ = np.linalg.lstsq(np.stack([disparity, np.ones_like(disparity)], 1), target, rcond=None)
    aligned = 1.0 / np.clip(scale * disparity + shift, 1e-6, None)
    return float(np.mean(np.abs(aligned - gt[valid]) / gt[valid]))


def rank_correlation(pred: np.ndarray, gt: np.ndarray, valid: np.ndarray) -> float:
    """Spearman's correlation of ``pred`` with ``gt`` over ``valid`` (NaN for a constant prediction)."""
    from scipy.stats import spearmanr

    values = np.asarray(pred)[valid]
    return float("nan") if np.ptp(values) == 0 else float(spearmanr(values, gt[valid])[0])


@torch.no_grad()
def model_depth(model: GeometryModel, size: int, left: np.ndarray, right: np.ndarray | None) -> np.ndarray:
    """The backbone's depth of ``left`` (both views in, or ``left`` alone when ``right`` is None), resized to the
    input's size."""
    views = [resize_image(im, (size, size)) for im in ((left, right) if right is not None else (left,))]
    images = torch.from_numpy(np.stack(views)).permute(0, 3, 1, 2).float().div(255)[None]
    depth = model(images)["depth"][0, 0, ..., 0].numpy()
    return cv2.resize(depth, (left.shape[1], left.shape[0]), interpolation=cv2.INTER_LINEAR)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ckpt", default="runs/geometry/tiny/checkpoints/last.ckpt")
    args = parser.parse_args()
    left, right, gt = middlebury_motorcycle()
    valid = gt > 0
    rows = []
    t0 = time.perf_counter()
    sgbm = sgbm_depth(left, right)
    t_sgbm = time.perf_counter() - t0
    has = sgbm > 0
    rows.append(("StereoSGBM (metric)", depth_metrics(sgbm, gt, valid=valid & has, align="none", max_depth=1e3),
                 float((valid & has).sum() / valid.sum()), t_sgbm, sgbm, valid & has))
    rows.append(("StereoSGBM (median)", depth_metrics(sgbm, gt, valid=valid & has, max_depth=1e3),
                 float((valid & has).sum() / valid.sum()), t_sgbm, sgbm, valid & has))
    constant = np.ones_like(gt)
    rows.append(("constant depth", depth_metrics(constant, gt, valid=valid, max_depth=1e3), 1.0, 0.0, constant, valid))
    if Path(args.ckpt).is_file():
        model, config = load(args.ckpt)
        model_depth(model, config.image_size, left, right)  # warm-up
        t0 = time.perf_counter()
        ours = model_depth(model, config.image_size, left, right)
        rows.append((f"ours ({config.size}, {config.image_size}px)",
                     depth_metrics(ours, gt, valid=valid, max_depth=1e3), 1.0, time.perf_counter() - t0, ours, valid))
        t0 = time.perf_counter()
        alone = model_depth(model, config.image_size, left, None)
        rows.append(("ours, left view alone", depth_metrics(alone, gt, valid=valid, max_depth=1e3), 1.0,
                     time.perf_counter() - t0, alone, valid))
    else:
        print(f"(no checkpoint at {args.ckpt}: run `make train` first; our row is omitted)")
    print(f"Middlebury 2014 Motorcycle (scikit-image, {gt.shape[1]}x{gt.shape[0]}), left-view depth, "
          f"{int(valid.sum())} GT pixels")
    print(f"{'method':<26}{'AbsRel':>9}{'d<1.25':>9}{'coverage':>10}{'time s':>9}{'rank':>8}{'AbsRel ssi':>12}")
    for name, m, cov, sec, depth, mask in rows:
        print(f"{name:<26}{m['abs_rel']:>9.4f}{m['delta_1.25']:>9.4f}{cov:>10.3f}{sec:>9.3f}"
              f"{rank_correlation(depth, gt, mask):>8.3f}{ssi_abs_rel(depth, gt, mask):>12.4f}")


if __name__ == "__main__":
    main()
