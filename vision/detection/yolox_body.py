"""The OOV detector's pretrained body for real frames: YOLOX-nano's boxes and objectness, region embeddings in the
text space.

:class:`YOLOXBody` runs :class:`vision.weights.nets.yolox.YOLOXNano` (frozen by default: the boxes and the
objectness are the pretrained network's) and adds the one part OOVDet needs that YOLOX lacks, a region embedding
in the text space per anchor point, from which :class:`~vision.detection.model.OpenVocabClassifier` scores any
vocabulary given at inference and the OOV column rejects what no name explains.

The embedding of anchor point ``a`` is ``normalize(W [f_a ; p_a] + b)`` with ``f_a`` the classification branch's
features (``int(256 * width)`` channels, 64 for nano) and ``p_a`` YOLOX's 80 COCO class probabilities. With
``text_init`` (the text rows of the 80 COCO names, :data:`~vision.weights.nets.onnx_models.COCO_CLASSES`) the
linear map starts as ``W = [0 ; T^T]``, ``b = 0``: the embedding is the probability-weighted mean of the COCO names'
text rows, so the untrained body already answers synonyms of COCO names by text; training moves it from there (the
features part starts at zero).

Conventions: input float ``[B, 3, H, W]`` RGB in [0, 1] (the detector's), padded at the bottom/right to multiples of
32 with YOLOX's grey, letterboxed as YOLOX was trained (:func:`vision.weights.nets.onnx_models.letterbox`; the predictor does this, see
:attr:`YOLOXBody.keeps_aspect`); the network reads BGR in 0-255. Outputs are those of
:class:`~vision.detection.head.DenseDetectionHead`, over YOLOX's anchor points in its order (level by level,
row-major): ``points [N, 2]`` (the cell centres, px), ``strides [N]``, ``objectness [B, N]``, ``boxes [B, N, 4]``
XYXY px (YOLOX's grid decoding), ``features [B, N, C + 80]`` and ``embeddings [B, N, D]`` (unit norm).

``objectness`` is the logit of YOLOX's own detection confidence, objectness x the highest class probability: YOLOX
trains its class probabilities towards the box's IoU, so this product, not the objectness alone, ranks its boxes
by how well they are localised; the detector's score then keeps YOLOX's ranking of the boxes of an object and adds the vocabulary's verdict. The body scores a detection
``sigmoid(objectness) * p_name`` (:attr:`YOLOXBody.score_exponent` 1), on the scale of YOLOX's own scores.
``agnostic_objectness [B, N]`` is YOLOX's object head alone (logits, before any class): the class-agnostic proposals
of exemplar prompts (:mod:`vision.detection.visual_exemplars`), which must reach objects outside COCO-80.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from vision.weights.nets.onnx_models import COCO_CLASSES, YOLOX_PAD_VALUE, yolox_anchor_points, yolox_boxes
from vision.weights.nets.yolox import YOLOXNano

__all__ = ["YOLOXBody"]


class YOLOXBody(nn.Module):
    """YOLOX-nano with a text-space embedding branch (see the module docstring).

    Args:
        embed_dim: ``D``, the text space's dimension.
        freeze: keep YOLOX's parameters fixed (no gradient; the embedding projection alone trains).
        text_init: ``[80, D]`` unit text rows of the COCO names to start the projection from (None: zeros, for a
            body whose weights a checkpoint will replace).
        net: the YOLOX-nano network to build on (None: a new one, whose weights a checkpoint or
            :func:`~vision.weights.nets.yolox.load_yolox_nano` gives): the real-perception backbone's
            (:attr:`vision.geometry.real_backbone.RealPerception.detector`) to share it.
    """

    #: the predictor letterboxes this body's input (YOLOX's training geometry) instead of stretching it
    keeps_aspect = True
    #: the input sides must be multiples of this
    patch_size = 32
    #: the names YOLOX itself knows (its classes, in its order)
    known_names = COCO_CLASSES
    #: a detection's score is ``confidence x p_name`` (YOLOX's scale), not its square root
    score_exponent = 1.0

    def __init__(self, embed_dim: int, freeze: bool = True, text_init: Tensor | None = None,
                 net: YOLOXNano | None = None) -> None:
        super().__init__()
        self.net = YOLOXNano() if net is None else net
        self.freeze = bool(freeze)
        if self.freeze:
            self.net.requires_grad_(False)
        hidden = self.net.head.reg_preds[0].in_channels
        classes = self.net.head.num_classes
        self.feature_dim = hidden + classes
        self.embed_proj = nn.Linear(self.feature_dim, embed_dim)
        with torch.no_grad():
            self.embed_proj.weight.zero_()
            self.embed_proj.bias.zero_()
            if text_init is not None:
                if tuple(text_init.shape) != (classes, embed_dim):
                    raise ValueError(f"text_init must be [{classes}, {embed_dim}], got {tuple(text_init.shape)}")
                self.embed_proj.weight[:, hidden:] = text_init.t()
        self._anchors: dict[tuple[int, int, str], tuple[Tensor, Tensor]] = {}

    def train(self, mode: bool = True) -> "YOLOXBody":
        super().train(mode)
        if self.freeze:
            self.net.eval()  # a frozen network stays in inference mode
        return self

    def anchors(self, height: int, width: int, device: torch.device) -> tuple[Tensor, Tensor]:
        """``(grid [N, 2], stride [N, 1])`` of the anchor points for an input of ``height x width`` (cached)."""
        key = (height, width, str(device))
        if key not in self._anchors:
            grid, stride = yolox_anchor_points(height, width, tuple(self.net.STRIDES))
            self._anchors[key] = (torch.from_numpy(grid).to(device), torch.from_numpy(stride).to(device))
        return self._anchors[key]

    def project(self, features: Tensor) -> Tensor:
        """Region features ``[..., C + 80]`` -> L2-normalised embeddings ``[..., D]``."""
        return F.normalize(self.embed_proj(features), dim=-1)

    def forward(self, images: Tensor) -> dict[str, Tensor]:
        """``images`` ``[B, 3, H, W]`` RGB in [0, 1] -> the outputs of the module docstring."""
        height, width = images.shape[-2:]
        pad_bottom, pad_right = -height % self.patch_size, -width % self.patch_size
        if pad_bottom or pad_right:  # YOLOX's grey letterbox canvas, so any size runs (boxes are top-left anchored)
            images = F.pad(images, (0, pad_right, 0, pad_bottom), value=YOLOX_PAD_VALUE / 255.0)
            height, width = images.shape[-2:]
        bgr = images.flip(1) * 255.0
        with torch.set_grad_enabled(torch.is_grad_enabled() and not self.freeze):
            levels = self.net.head.levels(self.net.backbone(bgr))
        terms = torch.cat([level["box"].flatten(2) for level in levels], dim=2).transpose(1, 2)       # [B, N, 4]
        objectness = torch.cat([level["objectness"].flatten(1) for level in levels], dim=1)           # [B, N]
        probabilities = torch.cat([level["class_logits"].flatten(2) for level in levels], dim=2).transpose(1, 2)
        probabilities = probabilities.sigmoid()                                                        # [B, N, 80]
        branch = torch.cat([level["features"].flatten(2) for level in levels], dim=2).transpose(1, 2)  # [B, N, C]
        features = torch.cat([branch, probabilities], dim=-1)                                          # [B, N, C+80]
        confidence = objectness.sigmoid() * probabilities.amax(dim=-1)
        grid, stride = self.anchors(int(height), int(width), images.device)
        return {"points": (grid + 0.5) * stride, "strides": stride[:, 0],
                "objectness": torch.logit(confidence, eps=1e-7), "agnostic_objectness": objectness,
                "boxes": yolox_boxes(terms, grid, stride), "features": features,
                "embeddings": self.project(features)}
