"""Per-view proposals of K phrases at once from the OOV detector, with its rejection of what is outside them.

One detector pass per view serves every phrase: the region embeddings of the L locations are compared with one
table of rows (:meth:`vision.detection.model.OpenVocabClassifier.with_rows`), in this order:

- the K phrases' rows (a phrase's text row, moved towards its positive exemplars' region embeddings when it has
  some, or the exemplars' mean embedding alone for an exemplar-only concept);
- the competitors: the detector's other known names (its training vocabulary without the phrases) and the
  negative exemplars' embeddings;
- the background column and the detector's OOV column.

With ``rejection`` a location counts for phrase k only when k's column wins against every foreground column
(competitors and OOV included): a close cousin ("bowl" for "mug") or an object outside every name is rejected, as
OOVDet rejects out-of-vocabulary objects. Without it (the ablation) only the phrase columns and the background are
compared, so every object goes to its nearest phrase. Scores follow the detector's rule,
``sqrt(sigmoid(objectness) * p_k)`` (:func:`vision.detection.model.location_scores`); proposals above
``score_threshold`` go through per-phrase NMS.

Coordinates: model pixels of the square input (XYXY boxes).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torchvision.ops import batched_nms

from vision.concept.heads import presence_features
from vision.detection.model import OOVDetector

__all__ = ["ViewProposals", "exemplar_embedding", "phrase_rows", "propose"]


@dataclass
class ViewProposals:
    """One view's proposals: ``boxes [n, 4]`` XYXY model pixels, ``scores [n]``, ``phrases [n]`` int64 (index of
    the phrase), ``embeddings [n, D]`` unit region embeddings, and ``presence [K, 6]`` the view's presence
    features (:func:`vision.concept.heads.presence_features`)."""

    boxes: torch.Tensor
    scores: torch.Tensor
    phrases: torch.Tensor
    embeddings: torch.Tensor
    presence: torch.Tensor

    def __len__(self) -> int:
        return int(self.scores.numel())


def exemplar_embedding(outputs: dict[str, torch.Tensor], view: int, box: torch.Tensor) -> torch.Tensor:
    """The unit region embedding ``[D]`` of a box ``[4]`` XYXY on ``view``: the mean of the embeddings of the
    locations whose centres lie in the box, weighted by objectness (the nearest location to its centre when none
    does)."""
    points = outputs["points"]  # [L, 2]
    inside = ((points[:, 0] >= box[0]) & (points[:, 0] <= box[2]) & (points[:, 1] >= box[1])
              & (points[:, 1] <= box[3]))
    emb = outputs["embeddings"][view].float()
    if not bool(inside.any()):
        centre = torch.stack([(box[0] + box[2]) / 2, (box[1] + box[3]) / 2])
        return emb[int(((points - centre) ** 2).sum(-1).argmin())]
    weight = outputs["objectness"][view].float().sigmoid() * inside
    return F.normalize((weight[:, None] * emb).sum(0), dim=-1)


def phrase_rows(detector: OOVDetector, text: torch.Tensor, positives: list[torch.Tensor]) -> torch.Tensor:
    """The K phrase rows ``[K, D]``: ``text [K, D]`` (unit rows; a zero row for an exemplar-only concept) through the
    detector's text table, moved to ``normalize(row + mean(positives[k]))`` where phrase k has positive exemplar
    embeddings (``positives[k]`` ``[E, D]``, possibly empty)."""
    rows = detector.classifier.table(text.float())
    out = []
    for k in range(text.shape[0]):
        row = rows[k] if bool(text[k].abs().sum() > 0) else torch.zeros_like(rows[k])
        if positives[k].numel():
            row = row + F.normalize(positives[k].float().mean(0), dim=-1)
        out.append(F.normalize(row, dim=-1))
    return torch.stack(out)


@torch.no_grad()
def propose(detector: OOVDetector, outputs: dict[str, torch.Tensor], rows: torch.Tensor, competitors: torch.Tensor,
            rejection: bool, score_threshold: float, nms_iou: float, max_per_view: int,
            image_size: int) -> list[ViewProposals]:
    """Proposals of the K phrases on each of the S views of one detector pass.

    Args:
        detector: the OOV detector. outputs: its forward's outputs on ``[S, 3, s, s]`` images.
        rows: the phrase rows ``[K, D]`` (:func:`phrase_rows`). competitors: ``[C, D]`` competitor rows in the
            same space (C may be 0). rejection: see the module docstring.
        score_threshold, nms_iou, max_per_view: kept proposals per view. image_size: ``s`` (boxes are clipped).
    """
    k = rows.shape[0]
    emb = outputs["embeddings"].float()
    table = torch.cat([rows, competitors.float()]) if rejection else rows
    logits = detector.classifier.with_rows(emb, table)  # [S, L, K (+C) + 1 (+1)]
    if not rejection and detector.classifier.use_oov:
        logits = logits[..., :-1]
    probs = logits.softmax(dim=-1)
    background = table.shape[0]
    foreground = torch.cat([probs[..., :background], probs[..., background + 1:]], dim=-1)
    winner = foreground.argmax(dim=-1)  # [S, L]
    objectness = outputs["objectness"].float().sigmoid()
    scores = (objectness[..., None] * probs[..., :k]).clamp_min(0).sqrt()  # [S, L, K]
    wins = winner[..., None] == torch.arange(k, device=winner.device)
    rival = foreground[..., k:].amax(dim=-1) if foreground.shape[-1] > k else torch.zeros_like(objectness)
    cosine = emb @ rows.t()
    boxes = outputs["boxes"].float().clamp(0, image_size)
    views = []
    for s in range(emb.shape[0]):
        loc, phrase = torch.nonzero(wins[s] & (scores[s] > score_threshold), as_tuple=True)
        score = scores[s, loc, phrase]
        box = boxes[s, loc]
        valid = (box[:, 2] > box[:, 0]) & (box[:, 3] > box[:, 1])
        loc, phrase, score, box = loc[valid], phrase[valid], score[valid], box[valid]
        keep = batched_nms(box, score, phrase, nms_iou)[:max_per_view]
        kept = torch.bincount(phrase[keep], minlength=k)
        views.append(ViewProposals(boxes=box[keep], scores=score[keep], phrases=phrase[keep],
                                   embeddings=emb[s, loc[keep]],
                                   presence=presence_features(scores[s], wins[s], objectness[s], cosine[s], rival[s],
                                                              kept)))
    return views
