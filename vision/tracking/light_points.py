"""Light point maps for tracking: the DPT point head's coarse stages and a linear map (or a patch-token MLP), instead
of its finest fusion and output convolutions.

The tracker reads the backbone's world points at every pixel of every view (its proximity maps, prompt lifting and
3D memory). At the tiny size the point head's finest stages (one fusion block and two convolutions at full
resolution) cost about half of what the aggregator does. :class:`LightPointHead` stops the DPT head before them
(:meth:`vision.geometry.dpt.DPTHead.coarse`: the fused map and the first level's features at 4x the patch grid) and
maps each cell's ``2 * features`` values linearly to the pre-activation points of the ``upscale x upscale`` pixels
it covers (a sub-pixel convolution), resized to the input size where the two differ, then applies the point head's
activation.

After training, :func:`fit_light_points` fits the map to the model's own DPT point head in closed
form (ridge regression in the pre-activation space, accumulated over windows of views), so the decoder, trained on
the DPT's points, reads an approximation of them. ``vision-fit-light-points`` writes the result as a model folder
whose config says ``tracking_points: light``; what it costs in accuracy is measured, not assumed
(``docs/speed.md``). A G2TAM trained with ``tracking_points: light`` trains the same map with the tracker instead
(:class:`~vision.tracking.lightning.TrackingModule`: a point loss against the ground truth, and the decoder reads
its points in training as in tracking).

:class:`PatchPointHead` skips the DPT head altogether: a small MLP maps each patch token of the aggregator's last
layer to the points of the ``p x p`` pixels of its patch (a sub-pixel layer at the patch grid). It has no closed-
form fit: it is trained with the tracker (``tracking_points: patch``).
"""

from __future__ import annotations

from typing import Iterable, Protocol, Sequence

import torch
import torch.nn.functional as F
from torch import nn

from vision.geometry.dpt import DPTHead, apply_activation, invert_activation
from vision.geometry.model import GeometryBackbone

__all__ = ["LightPointHead", "LightPointModel", "PatchPointHead", "fit_light_points", "light_point_error"]


class LightPointHead(nn.Module):
    """World points ``[B, S, H, W, 3]`` from a DPT point head's coarse stages (see the module docstring).

    Args:
        features: the DPT head's fusion width (its ``features``).
        upscale: pixels per cell of the coarse map along each axis (a sub-pixel convolution's factor).
    """

    def __init__(self, features: int, upscale: int = 2) -> None:
        super().__init__()
        self.upscale = upscale
        self.proj = nn.Conv2d(2 * features, 3 * upscale ** 2, 1)

    @staticmethod
    def cells(fused: torch.Tensor, level1: torch.Tensor) -> torch.Tensor:
        """The linear map's input from :meth:`~vision.geometry.dpt.DPTHead.coarse`'s two maps: ``[N, 2 * features,
        h1, w1]``."""
        return torch.cat([fused, level1], dim=1)

    def from_coarse(self, fused: torch.Tensor, level1: torch.Tensor, size: tuple[int, int],
                    activation: str) -> torch.Tensor:
        """Points ``[N, H, W, 3]`` at ``size`` (H, W) from the coarse maps of N frames, after the point head's
        ``activation``."""
        y = F.pixel_shuffle(self.proj(self.cells(fused, level1)), self.upscale)
        if y.shape[-2:] != tuple(size):
            y = F.interpolate(y, size=tuple(size), mode="bilinear", align_corners=True)
        return apply_activation(y.permute(0, 2, 3, 1), activation)

    def forward(self, dpt: DPTHead, tokens_list: Sequence[torch.Tensor | None], images: torch.Tensor,
                patch_start_idx: int) -> torch.Tensor:
        """``dpt``: the backbone's point head (its coarse stages run here); ``tokens_list``: the aggregator's
        outputs; ``images [B, S, 3, H, W]`` (the shape is used). Returns ``world_points [B, S, H, W, 3]``."""
        b, s, _, h, w = images.shape
        coarse = dpt.coarse(tokens_list, h, w, patch_start_idx)
        return self.from_coarse(*coarse, (h, w), dpt.activation).reshape(b, s, h, w, 3)


class PatchPointHead(nn.Module):
    """World points ``[B, S, H, W, 3]`` from the aggregator's last-layer patch tokens (see the module docstring).

    Each patch token ``[2C]`` goes through LayerNorm, ``Linear(2C, hidden)``, GELU and ``Linear(hidden, 3 p^2)``:
    the pre-activation points of its ``p x p`` pixels in :func:`torch.nn.functional.pixel_shuffle`'s order, then
    the point head's activation. No convolution and nothing at pixel resolution but the output.

    Args:
        token_dim: the aggregator's token width (2C). patch_size: pixels per patch along each axis (p).
        hidden: the MLP's width.
    """

    def __init__(self, token_dim: int, patch_size: int, hidden: int = 128) -> None:
        super().__init__()
        self.patch_size = patch_size
        self.mlp = nn.Sequential(nn.LayerNorm(token_dim), nn.Linear(token_dim, hidden), nn.GELU(),
                                 nn.Linear(hidden, 3 * patch_size ** 2))

    def forward(self, dpt: DPTHead, tokens_list: Sequence[torch.Tensor | None], images: torch.Tensor,
                patch_start_idx: int) -> torch.Tensor:
        """As :meth:`LightPointHead.forward` (of ``dpt``, the backbone's point head, only its activation is read):
        ``tokens_list``: the aggregator's outputs (the last is read); ``images [B, S, 3, H, W]`` (the shape is
        used). Returns ``world_points [B, S, H, W, 3]``."""
        b, s, _, h, w = images.shape
        p = self.patch_size
        gh, gw = h // p, w // p
        tokens = tokens_list[-1][:, :, patch_start_idx:]  # [B, S, gh*gw, 2C]
        y = self.mlp(tokens).reshape(b * s, gh, gw, -1).permute(0, 3, 1, 2)  # [B*S, 3p^2, gh, gw]
        y = F.pixel_shuffle(y, p)
        if y.shape[-2:] != (h, w):
            y = F.interpolate(y, size=(h, w), mode="bilinear", align_corners=True)
        return apply_activation(y.permute(0, 2, 3, 1), dpt.activation).reshape(b, s, h, w, 3)


class LightPointModel(Protocol):
    """What :func:`fit_light_points` and :func:`light_point_error` read of a
    :class:`~vision.tracking.model.G2TAM` built with ``tracking_points="light"`` (the model imports this module, so
    it is named by what it holds): the geometry ``backbone`` (its aggregator and DPT point head) and the
    ``light_points`` head (None on a model built without it)."""

    backbone: GeometryBackbone
    light_points: LightPointHead | PatchPointHead | None


def _light_head(model: LightPointModel) -> LightPointHead:
    """``model.light_points``; a model without one is a ValueError."""
    if not isinstance(model.light_points, LightPointHead):
        raise ValueError("the model has no light point head: build it with tracking_points='light'")
    return model.light_points


def _targets(dpt: DPTHead, points: torch.Tensor, size: tuple[int, int], upscale: int) -> torch.Tensor:
    """The DPT's pre-activation points ``[N, H, W, 3]`` -> per cell ``[N, 3 * upscale^2, h1, w1]`` in
    :func:`torch.nn.functional.pixel_shuffle`'s channel order (resized to the cells' pixels first if needed)."""
    y = invert_activation(points, dpt.activation).permute(0, 3, 1, 2)
    if y.shape[-2:] != size:
        y = F.interpolate(y, size=size, mode="bilinear", align_corners=True)
    return F.pixel_unshuffle(y, upscale)


def _coarse_and_reference(model: LightPointModel, images: torch.Tensor
                          ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """One window ``[1, S, 3, H, W]`` through the aggregator and the point head's coarse stages, run once for both
    heads: ``(fused, level1, points [S, H, W, 3])``, the points the DPT head finishes from those maps."""
    backbone = model.backbone
    tokens, start, images = backbone.aggregate(images)
    h, w = images.shape[-2:]
    fused, level1 = backbone.point_head.coarse(tokens, h, w, start)
    return fused, level1, backbone.point_head.finish(fused, level1, h, w)[0]


@torch.no_grad()
def fit_light_points(model: LightPointModel, windows: Iterable[torch.Tensor], ridge: float = 1e-4
                     ) -> dict[str, int]:
    """Fit ``model.light_points`` to ``model``'s DPT point head in closed form.

    Args:
        model: a G2TAM built with ``tracking_points="light"``; its backbone and point head are read, not changed.
        windows: float ``[1, S, 3, H, W]`` views in [0, 1], as the predictor encodes them.
        ridge: the ridge penalty, relative to the mean of the normal matrix's diagonal (the bias is not penalised).

    The normal equations are accumulated in float64 on the CPU, one window at a time (memory: one window's
    cells). Returns ``{"cells": rows fitted, "windows": windows read}``.
    """
    head, dpt = _light_head(model), model.backbone.point_head
    r = head.upscale
    gram = rhs = None
    count = windows_read = 0
    for images in windows:
        fused, level1, points = _coarse_and_reference(model, images)
        x = head.cells(fused, level1)  # [S, C, h1, w1]
        y = _targets(dpt, points, (r * x.shape[-2], r * x.shape[-1]), r)
        xs = x.permute(0, 2, 3, 1).reshape(-1, x.shape[1]).double().cpu()
        xs = torch.cat([xs, xs.new_ones(len(xs), 1)], 1)
        ys = y.permute(0, 2, 3, 1).reshape(-1, y.shape[1]).double().cpu()
        gram = xs.T @ xs if gram is None else gram + xs.T @ xs
        rhs = xs.T @ ys if rhs is None else rhs + xs.T @ ys
        count += len(xs)
        windows_read += 1
    if gram is None:
        raise ValueError("fit_light_points needs at least one window")
    penalty = ridge * gram.diagonal()[:-1].mean()
    eye = torch.eye(len(gram), dtype=gram.dtype)
    eye[-1, -1] = 0
    solution = torch.linalg.solve(gram + penalty * eye, rhs)  # [C + 1, 3 r^2]
    head.proj.weight.copy_(solution[:-1].T.reshape(head.proj.weight.shape).to(head.proj.weight))
    head.proj.bias.copy_(solution[-1].to(head.proj.bias))
    return {"cells": count, "windows": windows_read}


@torch.no_grad()
def light_point_error(model: LightPointModel, windows: Iterable[torch.Tensor]) -> float:
    """Mean relative error of ``model.light_points`` against its DPT point head over ``windows`` (as for
    :func:`fit_light_points`): the sum over pixels of ``|p - p_dpt|`` over the sum of ``|p_dpt|``."""
    error = norm = 0.0
    for images in windows:
        fused, level1, reference = _coarse_and_reference(model, images)
        points = _light_head(model).from_coarse(fused, level1, reference.shape[1:3],
                                                model.backbone.point_head.activation)
        error += float((points - reference).norm(dim=-1).sum())
        norm += float(reference.norm(dim=-1).sum())
    if norm == 0:
        raise ValueError("light_point_error needs at least one window with a point off the origin")
    return error / norm
