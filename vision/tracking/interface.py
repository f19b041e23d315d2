"""What :class:`~vision.tracking.predictor.TrackerPredictor` needs of a tracking model.

Both :class:`~vision.tracking.model.G2TAM` and the memory-bank control
(:class:`~vision.tracking.baseline.MemoryBankTracker`) implement :class:`TrackingModel`; the predictor reads the
capability attribute instead of the model's class.
"""

from __future__ import annotations

from typing import Any, Iterator, Protocol, Sequence

import torch

from vision.tracking.prompts import Prompts

__all__ = ["TrackingModel"]


class TrackingModel(Protocol):
    """A promptable multi-view tracker.

    Attributes:
        uses_geometry_memory: the model predicts a point map and a camera for every view
            (:meth:`tracking_encoding` returns ``world_points``, ``extrinsics``, ``intrinsics`` and ``depth``) and
            takes 3D memory prompts: the predictor then carries each object's 3D points between windows, can
            decode a window twice (``refine``), records cameras, depth and point clouds, and replaces the point
            maps by known geometry. Without it the predictor only decodes masks, window by window.
        dim: width of the view features (the carried memory feature's width).
        text_dim: width of the text embeddings the prompts take.
    """

    uses_geometry_memory: bool
    dim: int
    text_dim: int

    @property
    def image_size(self) -> int:
        """The square input size (pixels) the backbone is built for."""
        ...

    def tracking_encoding(self, images: torch.Tensor) -> dict[str, Any]:
        """The encoding of one window ``images [1, S, 3, s, s]`` (float in [0, 1]) that :meth:`decode` reads:
        ``images``, ``feats``, ``hires``, plus ``world_points [1, S, s, s, 3]``, ``extrinsics [1, S, 3, 4]``,
        ``intrinsics [1, S, 3, 3]`` and ``depth [1, S, s, s, 1]`` when :attr:`uses_geometry_memory`."""
        ...

    def decode(self, encoded: dict[str, Any], prompts: Prompts,
               views: Sequence[int] | None = None, full_size: bool = True) -> dict[str, torch.Tensor]:
        """``masks [B, V, N, M, s, s]`` logits, ``iou [B, V, N, M]`` and ``presence [B, V, N]`` logits on the
        encoded views (V = S), or on the ``views`` listed only (indices into them), each listed view's outputs
        being those of decoding every view. ``full_size=False``: the masks at the decoder's resolution (``s / 2``),
        which bilinear upsampling takes to ``s`` exactly as with ``full_size``."""
        ...

    def eval(self) -> Any:
        ...

    def to(self, device: torch.device) -> Any:
        ...

    def parameters(self) -> Iterator[torch.nn.Parameter]:
        ...
