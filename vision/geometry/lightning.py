"""LightningModule that trains the shared geometry backbone (cameras, depth, world points) on multi-view clips.

Batches come from :class:`vision.data.datamodule.MultiViewDataModule`: ``images`` float [B, S, 3, H, W] in [0, 1],
``depth`` [B, S, H, W] metres (0 = invalid), ``valid_depth``, ``intrinsics`` [B, S, 3, 3], ``extrinsics``
[B, S, 3, 4] (OpenCV camera-from-world). Ground truth is normalised as VGGT does: moved into camera 0's frame and
divided by the mean norm of the valid 3D points (:func:`vision.geometry.losses.normalize_scene`).

Loss = ``camera_weight`` * camera loss (summed over refinement iterations) + ``depth_weight`` * depth loss
+ ``point_weight`` * point loss (+ ``match_weight`` * the cross-view patch correspondence loss of
:mod:`vision.geometry.matching` when it is > 0). Every term is logged under ``train/`` and ``val/``.
"""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

import lightning as L
import torch

from vision.geometry.losses import geometry_losses
from vision.geometry.matching import MatchProjection
from vision.errors import DataError
from vision.geometry.model import GeometryBackbone, create_backbone
from vision.training.checkpoint_io import load_checkpoint, load_weights
from vision.training.optim import decay_param_groups, warmup_cosine

__all__ = ["GeometryModule"]


class GeometryModule(L.LightningModule):
    """Train a :class:`GeometryBackbone` built by :func:`create_backbone`.

    Args:
        size: backbone size name (``tiny``, ``base``, ``vggt_1b``).
        image_size: training resolution (square); must be a multiple of the patch size.
        patch_embed_weights: optional local file of patch-embed weights (timm / DINOv2); never downloaded.
        use_checkpoint: gradient checkpointing in the aggregator.
        lr, weight_decay, warmup_steps: AdamW with linear warm-up then cosine decay over the run.
        camera_weight, depth_weight, point_weight: loss weights (VGGT: camera 5, depth 1, points 1).
        match_weight: weight of the cross-view patch correspondence loss (0: off, and no projection is built);
            match_dim: width of its matching features.
    """

    def __init__(self, size: str = "tiny", image_size: int = 64, patch_embed_weights: str | None = None,
                 use_checkpoint: bool = False, lr: float = 1e-3, weight_decay: float = 0.05,
                 warmup_steps: int = 100, camera_weight: float = 5.0, depth_weight: float = 1.0,
                 point_weight: float = 1.0, match_weight: float = 0.0, match_dim: int = 64) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.model = create_backbone(size, img_size=image_size, patch_embed_weights=patch_embed_weights,
                                     use_checkpoint=use_checkpoint)
        self.match = MatchProjection(2 * self.model.embed_dim, match_dim) if match_weight > 0 else None

    @classmethod
    def from_checkpoint(cls, path: str | Path, map_location: Any = "cpu") -> "GeometryModule":
        """Rebuild the module from a Lightning checkpoint read with ``weights_only=True``."""
        ckpt = load_checkpoint(path, map_location=map_location)
        if "state_dict" not in ckpt or "hyper_parameters" not in ckpt:
            raise DataError("not a GeometryModule checkpoint (no state_dict / hyper_parameters)", file=path)
        known = inspect.signature(cls.__init__).parameters
        hparams = {k: v for k, v in ckpt["hyper_parameters"].items() if k in known}
        module = cls(**hparams)
        load_weights(module, ckpt["state_dict"], path)
        return module

    def forward(self, images: torch.Tensor) -> dict[str, Any]:
        return self.model(images)

    def _step(self, batch: dict[str, Any], stage: str) -> dict[str, torch.Tensor]:
        losses, _ = geometry_losses(self.model, batch, self.hparams.camera_weight, self.hparams.depth_weight,
                                    self.hparams.point_weight, self.match, self.hparams.match_weight)
        bs = batch["images"].shape[0]
        self.log(f"{stage}/loss", losses["loss"], prog_bar=True, batch_size=bs, sync_dist=stage != "train")
        self.log_dict({f"{stage}/{k}": v for k, v in losses.items() if k != "loss"}, batch_size=bs,
                      sync_dist=stage != "train")
        return losses

    def training_step(self, batch: dict[str, Any], batch_idx: int) -> dict[str, torch.Tensor]:
        return self._step(batch, "train")

    def validation_step(self, batch: dict[str, Any], batch_idx: int) -> None:
        self._step(batch, "val")

    def param_groups(self) -> list[dict[str, Any]]:
        """AdamW groups over the backbone (and the matching projection): weight decay except on 1-d tensors,
        camera / register tokens and position embeddings."""
        return decay_param_groups(self.named_parameters(), self.hparams.weight_decay,
                                  lambda name, p: "token" in name or "pos_embed" in name)

    def configure_optimizers(self) -> dict[str, Any]:
        opt = torch.optim.AdamW(self.param_groups(), lr=self.hparams.lr)
        return warmup_cosine(opt, self.hparams.lr, self.hparams.warmup_steps, self.trainer.estimated_stepping_batches)
