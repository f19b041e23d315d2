"""OOVDetector: a body that finds regions (the geometry backbone (S = 1) + feature pyramid + dense head, or a
pretrained body such as :class:`~vision.detection.yolox_body.YOLOXBody`) + the open-vocabulary classifier.

Classification (RegionCLIP / OpenDet2 style): for region embeddings ``e`` (unit norm, ``[.., D]``) and a text table
``T`` (unit rows, ``[K, D]``, the vocabulary given at inference), the logits are

    [ e . T_k / tau  (k = 1..K),   0  (background: a zero vector),   max_m e . P_m / tau  (OOV prompts) ]

where ``P`` are the learnable OOV prompt vectors (normalised) and, when competitor rows ``C`` are given (the names
the body knows that no vocabulary name explains, :func:`~vision.detection.vocabulary.competitor_rows`), the OOV
column is ``max(max_m e . P_m, max_c e . C_c) / tau``: a region a known but unnamed class fits better than any
given name is unknown. ``use_oov=False`` drops the OOV column (the
closed-vocabulary baseline). Column order: ``0..K-1`` vocabulary, ``K`` background, ``K + 1`` OOV.

Inference: per location, the label is the arg-max over the foreground columns (vocabulary + OOV); the score is
``sqrt(sigmoid(objectness) * p_label)`` with ``p`` the softmax over all columns; boxes above ``score_threshold``
go through class-aware NMS (torchvision). A box is "unknown" (label ``-1``) when the OOV column wins.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

import torch
import torch.nn.functional as F
from torch import nn
from torchvision.ops import batched_nms

from vision.detection.head import DenseDetectionHead, FeaturePyramid, PixelStem
from vision.errors import InputError
from vision.geometry.model import create_backbone

__all__ = ["OOVDetector", "OpenVocabClassifier", "UNKNOWN_LABEL", "location_scores"]

#: Label index of an out-of-vocabulary ("unknown") detection in :meth:`OOVDetector.postprocess` output.
UNKNOWN_LABEL = -1


def location_scores(logits: torch.Tensor, objectness: torch.Tensor, num_classes: int, exponent: float = 0.5
                    ) -> tuple[torch.Tensor, torch.Tensor]:
    """The detection score and foreground column of every location (the module docstring's inference rule).

    Args:
        logits: :class:`OpenVocabClassifier` logits ``[..., K + 2]`` (``[..., K + 1]`` without the OOV column),
            columns ``0..K-1`` vocabulary, ``K`` background, ``K + 1`` OOV.
        objectness: the head's objectness logits ``[...]``.
        num_classes: ``K``, the vocabulary's size.
        exponent: the power of the product, 0.5 (the geometric mean) for the trained dense head; 1 for a
            pretrained body whose objectness is already a calibrated detection confidence (YOLOX's), so that the
            scores keep its scale (a box at 0.3 is one its own detector shows at 0.3). The order of the scores,
            hence AP, does not depend on it.

    Returns:
        ``scores`` ``[...]``: ``(sigmoid(objectness) * p) ** exponent`` with ``p`` the softmax probability (over all columns)
        of the best foreground column; ``index`` ``[...]`` int64: that column among the foreground ones,
        ``0..K-1`` a vocabulary row, ``K`` the OOV column.
    """
    probs = logits.softmax(dim=-1)
    foreground = torch.cat([probs[..., :num_classes], probs[..., num_classes + 1:]], dim=-1)  # vocabulary (+ OOV)
    best, index = foreground.max(dim=-1)
    product = (objectness.sigmoid() * best).clamp_min(0)
    return (product.sqrt() if exponent == 0.5 else product.pow(exponent)), index


class OpenVocabClassifier(nn.Module):
    """Cosine classifier against a text table, a zero background vector and learnable OOV prompt vectors.

    Args:
        embed_dim: ``D`` (the text space's, :data:`vision.text.TEXT_DIM`). num_oov_prompts: ``M`` OOV prompt
        vectors (0 = no OOV column). temperature: ``tau``. text_projection: a learned linear map of the text
        rows (initialised to the identity, re-normalised after it) applied to every vocabulary, the zero-shot
        names included; False: the frozen text embeddings as they are.
    """

    def __init__(self, embed_dim: int, num_oov_prompts: int, temperature: float,
                 text_projection: bool = False) -> None:
        super().__init__()
        if temperature <= 0:
            raise InputError(f"temperature must be > 0, got {temperature}")
        self.temperature = float(temperature)
        self.num_oov_prompts = int(num_oov_prompts)
        self.oov_prompts = nn.Parameter(F.normalize(torch.randn(max(1, num_oov_prompts), embed_dim), dim=-1)
                                        if num_oov_prompts > 0 else torch.zeros(0, embed_dim))
        self.text_projection = nn.Linear(embed_dim, embed_dim) if text_projection else None
        if self.text_projection is not None:
            nn.init.eye_(self.text_projection.weight)
            nn.init.zeros_(self.text_projection.bias)

    @property
    def use_oov(self) -> bool:
        return self.num_oov_prompts > 0

    def prompts(self) -> torch.Tensor:
        """Unit-norm OOV prompt vectors ``[M, D]``."""
        return F.normalize(self.oov_prompts, dim=-1)

    def table(self, text: torch.Tensor) -> torch.Tensor:
        """The text rows the region embeddings are compared with: ``text [K, D]`` itself, or its learned projection
        (unit rows) when ``text_projection``."""
        if self.text_projection is None:
            return text
        return F.normalize(self.text_projection(text), dim=-1)

    def forward(self, embeddings: torch.Tensor, text: torch.Tensor,
                competitors: torch.Tensor | None = None) -> torch.Tensor:
        """``embeddings [.., D]`` (unit norm), ``text [K, D]`` (unit rows), optional ``competitors [C, D]`` (unit
        text rows) -> logits ``[.., K + 1 (+1)]``."""
        return self.with_rows(embeddings, self.table(text),
                              None if competitors is None or competitors.numel() == 0 else self.table(competitors))

    def with_rows(self, embeddings: torch.Tensor, rows: torch.Tensor,
                  competitors: torch.Tensor | None = None) -> torch.Tensor:
        """The logits against rows already in the region-embedding space (:meth:`table` of a text table, or
        region embeddings themselves, as exemplars are): ``rows [K, D]`` -> ``[.., K + 1 (+1)]``; ``competitors``
        ``[C, D]`` (same space) join the OOV column (the module docstring)."""
        iv = embeddings @ rows.t() / self.temperature
        columns = [iv, iv.new_zeros(iv.shape[:-1] + (1,))]
        if self.use_oov:
            oov = (embeddings @ self.prompts().t()).amax(dim=-1, keepdim=True)
            if competitors is not None and competitors.numel() > 0:
                oov = torch.maximum(oov, (embeddings @ competitors.t()).amax(dim=-1, keepdim=True))
            columns.append(oov / self.temperature)
        return torch.cat(columns, dim=-1)


class OOVDetector(nn.Module):
    """The detector. Build it with :func:`vision.detection.task.build_model` (the defaults of every argument are
    :class:`~vision.detection.task.DetectionConfig`'s).

    Args:
        body: a pretrained region body (:class:`~vision.detection.yolox_body.YOLOXBody`) giving the head's outputs
            from images; None: the geometry-backbone body the arguments ``size`` to ``pixel_stem`` and
            ``patch_embed_weights`` define (unused with a ``body``).
        size: backbone size (:func:`vision.geometry.model.create_backbone`); image_size: its ``img_size``.
        feature_layers: aggregator layers whose patch maps feed the pyramid (negative = from the end).
        channels: pyramid / head width. embed_dim: text space dimension (:data:`vision.text.TEXT_DIM`).
        num_oov_prompts: OOV prompt vectors (0 = closed-vocabulary baseline). temperature: cosine temperature.
        score_threshold, nms_iou, max_detections, pre_nms_topk: inference settings.
        text_projection: learn a linear map of the text rows (:class:`OpenVocabClassifier`).
        pixel_stem: add a :class:`~vision.detection.head.PixelStem` (image detail below the patch size) to the
            pyramid.
        patch_embed_weights: the backbone's patch-embed weights (:func:`vision.geometry.model.create_backbone`),
            None for none.
    """

    def __init__(self, *, embed_dim: int, num_oov_prompts: int, temperature: float, score_threshold: float,
                 nms_iou: float, max_detections: int, pre_nms_topk: int, text_projection: bool,
                 body: nn.Module | None = None, size: str = "tiny", image_size: int = 64,
                 feature_layers: Sequence[int] = (1, -1), channels: int = 96, pixel_stem: bool = False,
                 patch_embed_weights: str | Path | None = None) -> None:
        super().__init__()
        self.score_threshold = float(score_threshold)
        self.nms_iou = float(nms_iou)
        self.max_detections = int(max_detections)
        self.pre_nms_topk = int(pre_nms_topk)
        self.body = body
        if body is None:  # the geometry-backbone body, built before the classifier (the order of seeded random draws)
            self._build_dense_body(size, image_size, feature_layers, channels, embed_dim, pixel_stem,
                                   patch_embed_weights)
        self.classifier = OpenVocabClassifier(embed_dim, num_oov_prompts, temperature, text_projection)

    def _build_dense_body(self, size: str, image_size: int, feature_layers: Sequence[int], channels: int,
                          embed_dim: int, pixel_stem: bool, patch_embed_weights: str | Path | None) -> None:
        """The geometry backbone (S = 1), the feature pyramid, the optional pixel stem and the dense head."""
        self.backbone = create_backbone(size, img_size=image_size, enable_camera=False, enable_depth=False,
                                        enable_points=False, patch_embed_weights=patch_embed_weights)
        depth = int(self.backbone.aggregator.depth)
        self.feature_layers = [int(i) for i in feature_layers]
        if not self.feature_layers or any(not -depth <= i < depth for i in self.feature_layers):
            raise InputError(f"feature_layers={self.feature_layers} out of range for a depth-{depth} backbone")
        patch = self.backbone.patch_size
        self.strides = [patch / 2.0, float(patch), patch * 2.0]
        self.pyramid = FeaturePyramid(2 * self.backbone.embed_dim, len(self.feature_layers), channels)
        self.pixel_stem = PixelStem(channels, patch) if pixel_stem else None
        self.head = DenseDetectionHead(channels, embed_dim, tower_depth=2, num_levels=3)

    @property
    def patch_size(self) -> int:
        """The input sides must be multiples of this."""
        return int(self.body.patch_size) if self.body is not None else self.backbone.patch_size

    @property
    def score_exponent(self) -> float:
        """The power of ``sigmoid(objectness) * p`` that scores a detection (:func:`location_scores`): the body's
        own (``score_exponent``) or 0.5."""
        return float(getattr(self.body, "score_exponent", 0.5))

    @property
    def keeps_aspect(self) -> bool:
        """Whether the input is letterboxed (the body's training geometry) rather than stretched to the square."""
        return bool(getattr(self.body, "keeps_aspect", False))

    def project(self, features: torch.Tensor) -> torch.Tensor:
        """Region features ``[..., C]`` (the outputs' ``features``) -> unit embeddings ``[..., D]``."""
        return (self.body if self.body is not None else self.head).project(features)

    def forward(self, images: Any) -> dict[str, torch.Tensor]:
        """``images`` float [0, 1] ``[B, 3, H, W]`` or ``[B, 1, 3, H, W]`` (S = 1), H, W multiples of the patch size.

        Returns the head's outputs (see :class:`DenseDetectionHead`), flattened over levels.
        """
        if isinstance(images, torch.Tensor) and images.ndim == 4:
            images = images[:, None]
        if isinstance(images, torch.Tensor) and images.ndim == 5 and images.shape[1] != 1:
            raise InputError(f"the detector takes single images (S = 1); got S = {images.shape[1]} "
                             f"(shape {tuple(images.shape)})")
        if self.body is not None:
            return self.body(images[:, 0])
        tokens, start, images = self.backbone.aggregate(images)
        hw = (images.shape[-2], images.shape[-1])
        maps = [self.backbone.tokens_to_feature_map(tokens[i], start, hw)[:, 0] for i in self.feature_layers]
        pixel_levels = self.pixel_stem(images[:, 0]) if self.pixel_stem is not None else None
        return self.head(self.pyramid(maps, pixel_levels), self.strides)

    def classify(self, embeddings: torch.Tensor, text: torch.Tensor,
                 competitors: torch.Tensor | None = None) -> torch.Tensor:
        """See :class:`OpenVocabClassifier`."""
        return self.classifier(embeddings, text, competitors)

    @property
    def known_names(self) -> tuple[str, ...]:
        """The names the body itself knows (YOLOX-nano's 80 COCO classes), whose text rows compete for the OOV
        column when a vocabulary does not explain them; empty for the geometry-backbone body."""
        return tuple(getattr(self.body, "known_names", ()))

    @torch.no_grad()
    def postprocess(self, outputs: dict[str, torch.Tensor], text: torch.Tensor,
                    image_sizes: Sequence[tuple[int, int]] | None = None,
                    competitors: torch.Tensor | None = None) -> list[dict[str, torch.Tensor]]:
        """Detections per image: ``{"boxes" [n, 4] XYXY px, "scores" [n], "labels" [n] int64}`` with labels
        indexing the rows of ``text`` and :data:`UNKNOWN_LABEL` (-1) for OOV; sorted by score, at most
        ``max_detections``. ``image_sizes``: (H, W) per image to clip boxes (default: no clipping).
        ``competitors``: unit text rows ``[C, D]`` that join the OOV column (:class:`OpenVocabClassifier`)."""
        k = text.shape[0]
        scores, index = location_scores(self.classify(outputs["embeddings"], text, competitors),
                                        outputs["objectness"], k, self.score_exponent)
        labels = torch.where(index >= k, torch.full_like(index, UNKNOWN_LABEL), index)
        results = []
        for b in range(scores.shape[0]):
            s, lab, box = scores[b], labels[b], outputs["boxes"][b]
            if image_sizes is not None:
                h, w = image_sizes[b]
                box = torch.stack([box[:, 0].clamp(0, w), box[:, 1].clamp(0, h), box[:, 2].clamp(0, w),
                                   box[:, 3].clamp(0, h)], dim=-1)
            keep = (s > self.score_threshold) & (box[:, 2] > box[:, 0]) & (box[:, 3] > box[:, 1])
            s, lab, box = s[keep], lab[keep], box[keep]
            if s.numel() > self.pre_nms_topk:
                top = s.topk(self.pre_nms_topk).indices
                s, lab, box = s[top], lab[top], box[top]
            kept = batched_nms(box.float(), s.float(), lab, self.nms_iou)[: self.max_detections]
            results.append({"boxes": box[kept], "scores": s[kept], "labels": lab[kept]})
        return results
