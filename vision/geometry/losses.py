"""Geometry losses (VGGT's recipe) and ground-truth scene normalisation.

- :func:`camera_loss`: L1 on translation (weight 1.0), quaternion (1.0) and field of view (0.5) for every
  refinement iteration, iteration i of n weighted ``gamma ** (n - i - 1)`` (gamma 0.6). The task weight (VGGT: 5)
  is applied by the caller. Ground-truth quaternions are standardised (w >= 0), as VGGT does.
- :func:`confidence_regression_loss` (used by :func:`depth_loss` / :func:`point_loss`): per valid pixel
  ``conf * ||gt - pred|| - alpha * log(conf)`` (alpha 0.2), the top ``1 - keep_quantile`` (2%) of these pixel losses
  dropped, plus the plain ``||gt - pred||`` over the kept pixels (as VGGT) and a multi-scale gradient term:
  conf-weighted L1 of the spatial gradients of ``pred - gt`` over 4 scales (strides 1, 2, 4, 8).
- NaN/inf: a non-finite *prediction* or confidence at a valid pixel raises :class:`InputError` naming the tensor
  (silently dropping it would hide a diverging model); non-finite *ground truth* marks that pixel invalid.
- :func:`ray_loss` (the ray head, Depth Anything 3's camera target): :func:`confidence_regression_loss` of the
  predicted 6-vector [origin, direction] per pixel against the rays of the normalised ground-truth cameras
  (:func:`vision.geometry.rays.cameras_to_rays`; origins scale with the scene, directions do not), over every
  pixel of the views with a known camera.
- :func:`normalize_scene`: moves cameras, depth and points into camera 0's frame and divides all lengths by the
  mean norm of the valid 3D points; returns the scale.
- :func:`disparity_ssi_loss` (our addition, the optional real-depth term of
  :class:`vision.geometry.lightning.GeometryModule`): MiDaS's scale-and-shift-invariant loss in disparity space
  against a monocular teacher's relative inverse depth.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, NamedTuple, Sequence

import torch
import torch.nn.functional as F

from vision.errors import InputError
from vision.geometry.camera import (cameras_to_pose_encoding, compose_extrinsics, depth_to_world_points,
                                    invert_extrinsics)
from vision.geometry.rays import cameras_to_rays

if TYPE_CHECKING:
    from vision.geometry.matching import MatchProjection
    from vision.geometry.model import GeometryBackbone

__all__ = ["geometry_losses", "camera_loss", "confidence_regression_loss", "depth_loss", "point_loss", "ray_loss",
           "gradient_loss", "normalize_scene", "NormalizedScene", "direction_loss", "disparity_ssi_loss"]


def _check_finite(name: str, tensor: torch.Tensor, mask: torch.Tensor | None = None) -> None:
    values = tensor if mask is None else tensor[mask]
    if not torch.isfinite(values).all():
        bad = int((~torch.isfinite(values)).sum())
        raise InputError(f"{name} contains {bad} NaN/inf value(s) where a loss is computed")


def camera_loss(pose_enc_list: Sequence[torch.Tensor], gt_extrinsics: torch.Tensor, gt_intrinsics: torch.Tensor,
                image_hw: tuple[int, int], weight_t: float = 1.0, weight_r: float = 1.0, weight_fov: float = 0.5,
                gamma: float = 0.6, valid: torch.Tensor | None = None,
                weight_dir: float = 0.0) -> dict[str, torch.Tensor]:
    """Camera loss over refinement iterations.

    Args:
        pose_enc_list: n predicted encodings ``[B, S, 9]`` (first to last iteration).
        gt_extrinsics ``[B, S, 3, 4]``, gt_intrinsics ``[B, S, 3, 3]``: (normalised) ground truth.
        image_hw: (H, W) for the field-of-view encoding.
        valid: optional ``[B, S]`` bool, frames to include.
        weight_dir: weight of :func:`direction_loss` on the translations (0: VGGT's loss alone).
    Returns: ``{"loss", "loss_t", "loss_r", "loss_fov", "loss_dir"}`` (the components are the gamma-weighted sums).
    """
    gt = cameras_to_pose_encoding(gt_extrinsics, gt_intrinsics, image_hw).detach()
    mask = torch.ones(gt.shape[:-1], dtype=torch.bool, device=gt.device) if valid is None else valid.bool()
    n = len(pose_enc_list)
    zero = pose_enc_list[-1].sum() * 0.0
    parts = {"loss_t": zero, "loss_r": zero, "loss_fov": zero, "loss_dir": zero}
    for i, pred in enumerate(pose_enc_list):
        _check_finite(f"pose_enc_list[{i}]", pred, mask)
        w = gamma ** (n - i - 1)
        if mask.any():
            diff = (pred - gt).abs()[mask]  # [N, 9]
            parts["loss_t"] = parts["loss_t"] + w * diff[:, :3].mean()
            parts["loss_r"] = parts["loss_r"] + w * diff[:, 3:7].mean()
            parts["loss_fov"] = parts["loss_fov"] + w * diff[:, 7:].mean()
            if weight_dir > 0:
                parts["loss_dir"] = parts["loss_dir"] + w * direction_loss(pred[..., :3], gt[..., :3], mask)
    parts["loss"] = (weight_t * parts["loss_t"] + weight_r * parts["loss_r"] + weight_fov * parts["loss_fov"]
                     + weight_dir * parts["loss_dir"])
    return parts


def gradient_loss(pred: torch.Tensor, gt: torch.Tensor, conf: torch.Tensor, valid: torch.Tensor,
                  scales: int = 4) -> torch.Tensor:
    """Multi-scale gradient-matching loss on ``[N, H, W, C]`` maps: at stride 2**k, the conf-weighted L1 of the
    horizontal and vertical differences of ``pred - gt`` over pairs of valid neighbours, averaged over scales."""
    total = pred.sum() * 0.0
    used = 0
    for k in range(scales):
        step = 2 ** k
        d = (pred - gt)[:, ::step, ::step]
        c = conf[:, ::step, ::step]
        m = valid[:, ::step, ::step]
        if d.shape[1] < 2 and d.shape[2] < 2:
            break
        terms = []
        for dim in (1, 2):
            if d.shape[dim] < 2:
                continue
            n = d.shape[dim] - 1
            grad = (d.narrow(dim, 1, n) - d.narrow(dim, 0, n)).abs().sum(-1)
            pair = m.narrow(dim, 1, n) & m.narrow(dim, 0, n)
            weight = 0.5 * (c.narrow(dim, 1, n) + c.narrow(dim, 0, n))
            count = pair.sum()
            if count > 0:
                terms.append((grad * weight)[pair].sum() / count)
        if terms:
            total = total + sum(terms)
            used += 1
    return total / max(used, 1)


def confidence_regression_loss(pred: torch.Tensor, gt: torch.Tensor, conf: torch.Tensor, valid: torch.Tensor,
                               alpha: float = 0.2, keep_quantile: float = 0.98, grad_weight: float = 1.0,
                               reg_weight: float = 1.0, grad_scales: int = 4) -> dict[str, torch.Tensor]:
    """Confidence-weighted regression of a dense map.

    Args:
        pred, gt: ``[B, S, H, W, C]``; conf: ``[B, S, H, W]`` (> 0, e.g. 1 + exp); valid: ``[B, S, H, W]`` bool.
        alpha: weight of ``-log(conf)``; keep_quantile: fraction of pixel losses kept (the largest dropped).
        grad_weight, reg_weight: weights of the gradient term and the plain error term.
    Returns: ``{"loss", "loss_conf", "loss_reg", "loss_grad"}``.
    """
    valid = valid.bool() & torch.isfinite(gt).all(-1)
    _check_finite("pred", pred, valid)
    _check_finite("conf", conf, valid)
    gt = torch.where(valid[..., None], gt, torch.zeros_like(gt))
    zero = pred.sum() * 0.0 + conf.sum() * 0.0
    if not valid.any():
        return {"loss": zero, "loss_conf": zero, "loss_reg": zero, "loss_grad": zero}
    err = (gt - pred)[valid].norm(dim=-1)  # [N]
    c = conf[valid]
    pixel = err * c - alpha * torch.log(c)
    n = pixel.numel()
    k = max(1, int(math.ceil(keep_quantile * n)))
    if k < n:
        threshold = pixel.detach().kthvalue(k).values
        keep = pixel.detach() <= threshold
    else:
        keep = torch.ones_like(pixel, dtype=torch.bool)
    loss_conf = pixel[keep].mean()
    loss_reg = err[keep].mean()
    b, s, h, w, ch = pred.shape
    loss_grad = gradient_loss(pred.reshape(b * s, h, w, ch), gt.reshape(b * s, h, w, ch),
                              torch.where(valid, conf, torch.zeros_like(conf)).reshape(b * s, h, w),
                              valid.reshape(b * s, h, w), scales=grad_scales)
    loss = loss_conf + reg_weight * loss_reg + grad_weight * loss_grad
    return {"loss": loss, "loss_conf": loss_conf, "loss_reg": loss_reg, "loss_grad": loss_grad}


def depth_loss(pred_depth: torch.Tensor, depth_conf: torch.Tensor, gt_depth: torch.Tensor, valid: torch.Tensor,
               **kwargs: float) -> dict[str, torch.Tensor]:
    """Depth loss: ``pred_depth [B, S, H, W, 1]``, ``depth_conf [B, S, H, W]``, ``gt_depth [B, S, H, W]``,
    ``valid [B, S, H, W]`` (see :func:`confidence_regression_loss`)."""
    return confidence_regression_loss(pred_depth, gt_depth[..., None], depth_conf, valid, **kwargs)


def point_loss(pred_points: torch.Tensor, points_conf: torch.Tensor, gt_points: torch.Tensor, valid: torch.Tensor,
               **kwargs: float) -> dict[str, torch.Tensor]:
    """World-point loss: ``pred_points/gt_points [B, S, H, W, 3]``, ``points_conf/valid [B, S, H, W]``."""
    return confidence_regression_loss(pred_points, gt_points, points_conf, valid, **kwargs)


def ray_loss(pred_origins: torch.Tensor, pred_directions: torch.Tensor, rays_conf: torch.Tensor,
             gt_extrinsics: torch.Tensor, gt_intrinsics: torch.Tensor, valid: torch.Tensor | None = None,
             **kwargs: float) -> dict[str, torch.Tensor]:
    """Ray-map loss: ``pred_origins/pred_directions [B, S, H, W, 3]``, ``rays_conf [B, S, H, W]`` against the rays
    of the (normalised) cameras ``gt_extrinsics [B, S, 3, 4]``, ``gt_intrinsics [B, S, 3, 3]``; ``valid``: optional
    ``[B, S]`` bool, the views with a known camera (every pixel of such a view counts). See
    :func:`confidence_regression_loss` (on the 6-vector [origin, direction])."""
    b, s, h, w = rays_conf.shape
    gt_origins, gt_directions = cameras_to_rays(gt_extrinsics.to(pred_origins.dtype),
                                                gt_intrinsics.to(pred_origins.dtype), h, w)
    views = torch.ones((b, s), dtype=torch.bool, device=rays_conf.device) if valid is None else valid.bool()
    pixels = views[:, :, None, None].expand(b, s, h, w)
    return confidence_regression_loss(torch.cat([pred_origins, pred_directions], dim=-1),
                                      torch.cat([gt_origins, gt_directions], dim=-1).detach(), rays_conf, pixels,
                                      **kwargs)


def direction_loss(pred: torch.Tensor, gt: torch.Tensor, valid: torch.Tensor | None = None,
                   eps: float = 1e-6) -> torch.Tensor:
    """Mean ``1 - cos`` between predicted and ground-truth translations ``[B, S, 3]`` (our addition to VGGT's L1).

    In camera 0's frame the relative translation of the pair (0, j) is view j's translation, and the pose metrics
    score its direction alone (RTA, AUC). An L1 loss on small translations (neighbouring video frames) barely
    notices a wrong direction; this term weighs the direction the same at every baseline. Views whose ground-truth
    translation is shorter than ``eps`` (view 0) are left out; ``valid`` ``[B, S]`` bool selects views too.
    Returns 0 (with gradients) when no view counts."""
    keep = gt.norm(dim=-1) > eps
    if valid is not None:
        keep = keep & valid.bool()
    if not keep.any():
        return pred.sum() * 0.0
    cos = F.cosine_similarity(pred[keep], gt[keep], dim=-1, eps=eps)
    return (1.0 - cos).mean()


def disparity_ssi_loss(depth: torch.Tensor, teacher: torch.Tensor, valid: torch.Tensor | None = None,
                       trim: float = 0.2, eps: float = 1e-6, flat: float = 1e-10) -> torch.Tensor:
    """Scale-and-shift-invariant loss of a depth map against a teacher's relative disparity (MiDaS, Ranftl et al.
    2020), per image, averaged over the images that count.

    Args:
        depth: ``[B, H, W]`` the student's z-depth (> 0 at valid pixels; any scale).
        teacher: ``[B, H, W]`` the teacher's relative inverse depth (larger = nearer) up to an unknown positive
            scale and shift, e.g. :func:`vision.weights.nets.tcmonodepth.predict_depth`'s; no gradient.
        valid: ``[B, H, W]`` bool, the pixels that count (None: all); a non-finite teacher value also drops its
            pixel.
        trim: fraction of each image's largest residuals left out (MiDaS's trimmed L1: 0.2).
        eps: the teacher's least spread, relative to its mean magnitude (a flatter teacher image does not count).
        flat: a student image whose disparity variance is at most ``flat`` times its squared mean is flat (fitted
            by ``s = 0``); far above float32's rounding of the variance, far below any real variation.

    Returns: a scalar, 0 (with gradients) when no image counts.

    Per image, over its valid pixels, with ``x = 1 / depth`` and ``y`` the teacher:

    1. the student is aligned to the teacher: ``s, t = argmin sum (s x + t - y)^2`` subject to ``s >= 0``, i.e.
       ``s = max(cov(x, y), 0) / var(x)``, ``t = mean(y) - s mean(x)`` (differentiable: the gradient reaches
       ``depth`` through ``s`` and ``t`` too);
    2. the residual ``|s x + t - y|`` is divided by the teacher's spread ``mean |y - median(y)|``;
    3. the mean of the smallest ``1 - trim`` of these residuals is the image's loss.

    Why the student is aligned to the teacher and not the teacher to the student: the residual is then measured
    in the teacher's units, which step 2 removes, so the loss depends neither on the teacher's arbitrary scale and
    shift nor on the student's, and it is bounded by what a constant student gets (``s = 0``, ``t = mean(y)``: of
    the order of 1). Aligned the other way round the residual is in the student's units, and the student could
    lower it by flattening its own disparity unless divided by its own spread, which vanishes for a flat prediction.
    ``s >= 0`` keeps the ordering: a student whose disparity falls where the teacher's rises is fitted by the
    constant (the constant's loss), not by a negative scale (which would give it 0). The price: on such an image
    the loss is flat in ``depth`` (no gradient) until the synthetic terms turn its ordering round.
    Degenerate images: a flat student (see ``flat``) gets ``s = 0``, no division by zero and a finite gradient (as
    for any scale-invariant loss the gradient grows as the student's disparity flattens: ``1 / std(x)``); an image
    whose teacher is flat (spread at most ``eps`` times its mean magnitude) or with fewer than 2 valid pixels does
    not count.

    Raises:
        InputError: shapes that differ or are not ``[B, H, W]``; a non-finite or non-positive ``depth`` at a valid
            pixel (a diverging model is reported, not hidden).
    """
    if depth.ndim != 3 or teacher.shape != depth.shape or (valid is not None and valid.shape != depth.shape):
        raise InputError(f"disparity_ssi_loss needs depth, teacher (and valid) of one shape [B, H, W]; got depth "
                         f"{tuple(depth.shape)}, teacher {tuple(teacher.shape)}"
                         + (f", valid {tuple(valid.shape)}" if valid is not None else ""))
    if not 0.0 <= trim < 1.0:
        raise InputError(f"trim must be in [0, 1); got {trim}")
    depth = depth.float()
    teacher = teacher.detach().to(device=depth.device, dtype=torch.float32)
    mask = torch.isfinite(teacher) if valid is None else valid.bool() & torch.isfinite(teacher)
    _check_finite("depth", depth, mask)
    if (depth[mask] <= 0).any():
        raise InputError(f"depth has {int((depth[mask] <= 0).sum())} value(s) <= 0 where the loss is computed")
    weight = mask.float()
    n = weight.sum((1, 2))  # [B]
    count = n.clamp(min=1.0)
    x = torch.where(mask, 1.0 / torch.where(mask, depth, torch.ones_like(depth)), torch.zeros_like(depth))
    y = torch.where(mask, teacher, torch.zeros_like(teacher))

    # the teacher's centre and spread (median and mean absolute deviation from it): constants of the loss
    median = torch.nanmedian(torch.where(mask, y, torch.full_like(y, float("nan"))).flatten(1), dim=1).values
    median = torch.nan_to_num(median)
    spread = ((y - median[:, None, None]).abs() * weight).sum((1, 2)) / count
    magnitude = (y.abs() * weight).sum((1, 2)) / count
    counts = (n >= 2) & (spread > eps * magnitude) & (spread > 0)
    spread = torch.where(counts, spread, torch.ones_like(spread))

    # least squares of s x + t onto y with s >= 0
    x_mean = (x * weight).sum((1, 2)) / count
    y_mean = (y * weight).sum((1, 2)) / count
    dx = (x - x_mean[:, None, None]) * weight
    dy = (y - y_mean[:, None, None]) * weight
    cov = (dx * dy).sum((1, 2)) / count
    var = (dx * dx).sum((1, 2)) / count
    varies = var > flat * x_mean.detach() ** 2  # a flat student (within float32's rounding): s = 0
    scale = torch.where(varies, cov.clamp(min=0.0) / torch.where(varies, var, torch.ones_like(var)),
                        torch.zeros_like(var))
    shift = y_mean - scale * x_mean
    residual = (scale[:, None, None] * x + shift[:, None, None] - y).abs() / spread[:, None, None]

    # trimmed L1: the smallest ceil((1 - trim) n) residuals of each image
    ranked = torch.where(mask, residual, torch.full_like(residual, float("inf"))).flatten(1).sort(dim=1).values
    keep = torch.ceil((1.0 - trim) * n).clamp(min=1.0)
    kept = torch.arange(ranked.shape[1], device=ranked.device)[None, :] < keep[:, None]
    per_image = torch.where(kept, ranked, torch.zeros_like(ranked)).sum(1) / keep
    per_image = torch.where(counts, per_image, torch.zeros_like(per_image))
    return per_image.sum() / counts.sum().clamp(min=1)


class NormalizedScene(NamedTuple):
    extrinsics: torch.Tensor  # [B, S, 3, 4], camera 0 = identity
    intrinsics: torch.Tensor  # [B, S, 3, 3], unchanged
    depth: torch.Tensor  # [B, S, H, W]
    world_points: torch.Tensor  # [B, S, H, W, 3], in camera 0's frame
    scale: torch.Tensor  # [B], the divisor applied to all lengths


def normalize_scene(extrinsics: torch.Tensor, intrinsics: torch.Tensor, depth: torch.Tensor,
                    world_points: torch.Tensor | None, valid: torch.Tensor, eps: float = 1e-6) -> NormalizedScene:
    """Express a scene in camera 0's frame and scale it so the mean norm of the valid 3D points is 1.

    Args:
        extrinsics ``[B, S, 3, 4]`` (camera-from-world), intrinsics ``[B, S, 3, 3]``, depth ``[B, S, H, W]``,
        world_points ``[B, S, H, W, 3]`` (``None``: unprojected from depth), valid ``[B, S, H, W]`` bool.
    Returns: :class:`NormalizedScene`. A scene with no valid point keeps scale 1. Invalid pixels are carried
    through unchanged apart from the transform (they are meant to be masked by the caller).
    """
    if world_points is None:
        world_points = depth_to_world_points(depth, extrinsics, intrinsics)
    valid = valid.bool() & torch.isfinite(world_points).all(-1) & torch.isfinite(depth)
    world0 = extrinsics[:, 0]  # camera 0 from old world
    new_extr = compose_extrinsics(extrinsics, invert_extrinsics(world0)[:, None])
    r0 = world0[:, None, None, None, :3, :3]
    t0 = world0[:, None, None, None, :3, 3]
    points = (r0 @ world_points[..., None]).squeeze(-1) + t0
    norms = torch.where(valid, points.norm(dim=-1), torch.zeros_like(depth))
    count = valid.flatten(1).sum(1)
    scale = norms.flatten(1).sum(1) / count.clamp(min=1)
    scale = torch.where(count > 0, scale.clamp(min=eps), torch.ones_like(scale))
    new_extr = torch.cat([new_extr[..., :3], new_extr[..., 3:] / scale[:, None, None, None]], dim=-1)
    return NormalizedScene(new_extr, intrinsics, depth / scale[:, None, None, None],
                           points / scale[:, None, None, None, None], scale)


def geometry_losses(model: "GeometryBackbone", batch: dict[str, Any], camera_weight: float = 5.0,
                    depth_weight: float = 1.0, point_weight: float = 1.0, match: "MatchProjection | None" = None,
                    match_weight: float = 0.0, ray_weight: float = 1.0,
                    direction_weight: float = 0.0) -> tuple[dict[str, torch.Tensor], dict]:
    """Run ``model`` on a batch and return ``(losses, predictions)``; ``losses["loss"]`` is the weighted total.
    ``match`` projects the last aggregator layer's patch tokens for the correspondence loss (used when
    ``match_weight`` > 0). With a ray head (``ray_origins`` in the predictions) ``ray_weight`` * :func:`ray_loss`
    is added, logged as ``loss_rays``. ``direction_weight`` > 0 adds :func:`direction_loss` on the camera head's
    translations (inside the camera loss, logged as ``loss_camera_dir``) and, with a ray head, on the camera
    centres of the ray map (the confidence-weighted mean origins, inside ``loss_rays``)."""
    from vision.geometry.matching import correspondence_loss, patch_correspondences

    images = batch["images"]
    valid = batch["valid_depth"] & (batch["depth"] > 0)
    gt = normalize_scene(batch["extrinsics"], batch["intrinsics"], batch["depth"], None, valid)
    pred = model(images)
    hw = (images.shape[-2], images.shape[-1])
    losses: dict[str, torch.Tensor] = {}
    total = images.new_zeros(())
    cam_valid = batch["has_camera"][:, None].expand(-1, images.shape[1])  # [B, S]: views with a known camera
    if "pose_enc_list" in pred:
        cam = camera_loss(pred["pose_enc_list"], gt.extrinsics, gt.intrinsics, hw, valid=cam_valid,
                          weight_dir=direction_weight)
        losses.update({"loss_camera": cam["loss"], "loss_camera_t": cam["loss_t"], "loss_camera_r": cam["loss_r"]})
        if direction_weight > 0:
            losses["loss_camera_dir"] = cam["loss_dir"]
        total = total + camera_weight * cam["loss"]
    if "depth" in pred:
        dep = depth_loss(pred["depth"], pred["depth_conf"], gt.depth, valid)
        losses.update({"loss_depth": dep["loss"], "loss_depth_grad": dep["loss_grad"]})
        total = total + depth_weight * dep["loss"]
    if "world_points" in pred:
        pts = point_loss(pred["world_points"], pred["world_points_conf"], gt.world_points, valid)
        losses.update({"loss_points": pts["loss"]})
        total = total + point_weight * pts["loss"]
    if "ray_origins" in pred:
        rays = ray_loss(pred["ray_origins"], pred["ray_directions"], pred["rays_conf"], gt.extrinsics, gt.intrinsics,
                        cam_valid)
        if direction_weight > 0:
            conf = pred["rays_conf"][..., None]
            centres = (conf * pred["ray_origins"]).sum((2, 3)) / conf.sum((2, 3))  # [B, S, 3]
            gt_centres = invert_extrinsics(gt.extrinsics)[..., 3]  # camera centres
            rays_dir = direction_loss(centres, gt_centres, cam_valid)
            rays = {**rays, "loss": rays["loss"] + direction_weight * rays_dir}
            losses["loss_rays_dir"] = rays_dir
        losses.update({"loss_rays": rays["loss"]})
        total = total + ray_weight * rays["loss"]
    if match is not None and match_weight > 0:
        target = patch_correspondences(gt.depth, valid, gt.extrinsics, gt.intrinsics, model.patch_size)
        features = match(pred["tokens"][-1][:, :, pred["patch_start_idx"]:])
        cor = correspondence_loss(features, target)
        losses.update({"loss_match": cor["loss"], "match_accuracy": cor["accuracy"]})
        total = total + match_weight * cor["loss"]
    losses["loss"] = total
    return losses, pred
