"""The concept tracker's two learned parts: the presence head (is the phrase on this view at all?) and the
association head (are these two proposals the same instance?), each a small MLP over features the frozen detector
and tracker already compute, and each with the fixed rule it replaces (the ablation's "off" setting).

Presence features of a (view, phrase) pair, from the detector's dense outputs over its L locations
(:func:`presence_features`, ``[..., VIEW_FEATURES]``): the best and the mean of the three best location scores
of the phrase, the best objectness among the locations the phrase wins, the best cosine between a region embedding
and the phrase's text row, the number of proposals kept (over 4), and the best score of a competing column at the
phrase's best location; then the scene's evidence (:func:`scene_presence_features`, ``[..., PRESENCE_FEATURES]``):
the best and the mean over all views of the phrase's best location score (a phrase absent from the whole scene
scores low everywhere). Rule: the best proposal's score (0 without one).

Association features of a (track, proposal) pair (:func:`pair_features` of their :class:`Descriptors`,
``[..., PAIR_FEATURES]``): the 3D distance of their centroids (in the scene's normalised frame: mean point norm 1),
that distance over the sum of their 3D extents, the cosine of their detector region embeddings, the cosine of their
tracker appearance vectors (the tracker's view features averaged under the mask), the absolute log ratio of their
extents, and the distance of their mean colours (RGB in [0, 1] under the mask: instances of one phrase often differ
by colour alone). Rule: the same instance when the 3D distance is under ``rule_distance``.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

__all__ = ["VIEW_FEATURES", "PRESENCE_FEATURES", "PAIR_FEATURES", "Descriptors", "PresenceHead", "AssociationHead",
           "presence_features", "scene_presence_features", "pair_features"]

VIEW_FEATURES = 6
PRESENCE_FEATURES = VIEW_FEATURES + 2
PAIR_FEATURES = 6


class _MLP(nn.Module):
    def __init__(self, in_features: int, hidden: int) -> None:
        super().__init__()
        # no input normalisation: the features' absolute values (a score, a distance) are the evidence
        self.layers = nn.Sequential(nn.Linear(in_features, hidden), nn.GELU(), nn.Linear(hidden, hidden), nn.GELU(),
                                    nn.Linear(hidden, 1))

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        """``[..., F]`` -> logits ``[...]``."""
        return self.layers(features)[..., 0]


class PresenceHead(_MLP):
    """Presence logit of a (view, phrase) pair from its :func:`scene_presence_features` ``[..., 8]`` -> ``[...]``."""

    def __init__(self, hidden: int = 32) -> None:
        super().__init__(PRESENCE_FEATURES, hidden)


class AssociationHead(_MLP):
    """Same-instance logit of a (track, proposal) pair from its :func:`pair_features` ``[..., 6]`` -> ``[...]``."""

    def __init__(self, hidden: int = 32) -> None:
        super().__init__(PAIR_FEATURES, hidden)


def presence_features(scores: torch.Tensor, wins: torch.Tensor, objectness: torch.Tensor, cosine: torch.Tensor,
                      rival: torch.Tensor, kept: torch.Tensor) -> torch.Tensor:
    """Presence features of K phrases on one view.

    Args:
        scores: ``[L, K]`` the phrase's detection score at each location (``sqrt(sigmoid(objectness) * p_k)``).
        wins: ``[L, K]`` bool, the phrase's column wins the location (with rejection: against every column).
        objectness: ``[L]`` objectness probabilities. cosine: ``[L, K]`` region embedding . phrase row.
        rival: ``[L]`` the best competing column's probability at each location. kept: ``[K]`` proposals kept.

    Returns:
        ``[K, 6]`` float32.
    """
    top = scores.topk(min(3, scores.shape[0]), dim=0).values  # [3, K]
    best_loc = scores.argmax(dim=0)  # [K]
    won_obj = torch.where(wins, objectness[:, None], torch.zeros_like(scores)).amax(dim=0)
    return torch.stack([top[0], top.mean(dim=0), won_obj, cosine.amax(dim=0), kept.float().clamp(max=4.0) / 4.0,
                        rival[best_loc]], dim=-1).float()


def scene_presence_features(views: torch.Tensor) -> torch.Tensor:
    """The presence features of T views and K phrases: ``views [T, K, 6]`` (:func:`presence_features` of each
    view) -> ``[T, K, 8]``, each view's followed by the best and the mean over the T views of feature 0."""
    best = views[..., 0].amax(dim=0, keepdim=True).expand(views.shape[0], -1)
    mean = views[..., 0].mean(dim=0, keepdim=True).expand(views.shape[0], -1)
    return torch.cat([views, best[..., None], mean[..., None]], dim=-1)


@dataclass
class Descriptors:
    """What association compares of N tracks or proposals: ``centroid [N, 3]`` and ``extent [N]`` (positive) in the
    scene's frame, ``embedding [N, D]`` (detector), ``appearance [N, C]`` (tracker), ``colour [N, 3]`` (mean RGB in
    [0, 1])."""

    centroid: torch.Tensor
    extent: torch.Tensor
    embedding: torch.Tensor
    appearance: torch.Tensor
    colour: torch.Tensor


def pair_features(a: Descriptors, b: Descriptors) -> torch.Tensor:
    """Association features of every pair of A tracks and B proposals -> ``[A, B, 6]`` float32."""
    distance = torch.cdist(a.centroid.float()[None], b.centroid.float()[None])[0]
    spread = a.extent.float()[:, None] + b.extent.float()[None, :] + 1e-6
    cos_embed = F.normalize(a.embedding.float(), dim=-1) @ F.normalize(b.embedding.float(), dim=-1).t()
    cos_app = F.normalize(a.appearance.float(), dim=-1) @ F.normalize(b.appearance.float(), dim=-1).t()
    ratio = (torch.log(a.extent.float()[:, None] + 1e-6) - torch.log(b.extent.float()[None, :] + 1e-6)).abs()
    colour = torch.cdist(a.colour.float()[None], b.colour.float()[None])[0]
    return torch.stack([distance, distance / spread, cos_embed, cos_app, ratio, colour], dim=-1)
