"""LightningModule that trains the geometry model (cameras, depth, world points) on multi-view clips, and scores it.

Batches come from :class:`vision.data.datamodule.MultiViewDataModule`: ``images`` float [B, S, 3, H, W] in [0, 1],
``depth`` [B, S, H, W] metres (0 = invalid), ``valid_depth``, ``intrinsics`` [B, S, 3, 3], ``extrinsics``
[B, S, 3, 4] (OpenCV camera-from-world), ``image_ids`` [B, S]. Ground truth is normalised as VGGT does: moved into
camera 0's frame and divided by the mean norm of the valid 3D points (:func:`vision.geometry.losses.normalize_scene`).

Loss = ``camera_weight`` * camera loss (summed over refinement iterations) + ``depth_weight`` * depth loss
+ ``point_weight`` * point loss (+ ``match_weight`` * the cross-view patch correspondence loss of
:mod:`vision.geometry.matching`, which needs the matching projection: ``GeometryConfig.match_dim``) (+ ``ray_weight``
* the ray-map loss ``loss_rays`` when ``GeometryConfig.ray_head`` is on). Every term is logged under ``train/`` and
``val/``.

The task metric: ``validation_step`` / ``test_step`` hand each clip's results
(:func:`vision.geometry.results.clip_results`) keyed by the clip's image ids to the module's
:class:`~vision.training.evaluator.TaskEvaluator`; at the end of the epoch it gathers them from every rank (one copy
per clip) and scores them against the stage's split with ``vision.evaluation.evaluate(split, results, "geometry")``,
logged as ``val/abs_rel``, ``val/delta_1.25``,
``val/AUC@30``, ``val/RRA@15``, ``val/chamfer``, ``val/constant_depth/abs_rel``, ``val/match_pose/AUC@30``,
``val/ray_pose/AUC@30`` (with the ray head), ...
(``test/...`` in ``test``, which also prints the table on rank 0). ``predict_step`` returns the same results for
:class:`~vision.training.writer.ResultsWriter`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import lightning as L
import torch

from vision.errors import InputError
from vision.evaluation.geometry import format_geometry_table
from vision.geometry.losses import geometry_losses
from vision.geometry.results import clip_results
from vision.geometry.task import GeometryConfig, build_model
from vision.geometry.weights import load_backbone
from vision.training.evaluator import TaskEvaluator, log_losses
from vision.training.optim import decay_param_groups, warmup_cosine

__all__ = ["GeometryModule"]


class GeometryModule(L.LightningModule):
    """Train a geometry model built by :func:`vision.geometry.task.build_model` from ``config``.

    Args:
        config: the model (:class:`~vision.geometry.task.GeometryConfig`, a mapping of its fields, or None for the
            defaults).
        lr, weight_decay, warmup_steps: AdamW with linear warm-up then cosine decay over the run.
        camera_weight, depth_weight, point_weight: loss weights (VGGT: camera 5, depth 1, points 1).
        match_weight: weight of the cross-view patch correspondence loss (0: off; > 0 needs ``config.match_dim``).
        ray_weight: weight of the ray-map loss (used only with ``config.ray_head``).
        direction_weight: weight of the translation-direction term (``1 - cos`` between predicted and true camera
            translations, :func:`vision.geometry.losses.direction_loss`) added to the camera loss and, with a ray
            head, to the ray loss; 0: off (VGGT's losses alone).
        vggt_weights: optional local VGGT checkpoint (``model.safetensors`` / ``model.pt`` of VGGT-1B) or geometry
            checkpoint loaded into the backbone (``size: vggt_1b``) with :func:`vision.geometry.weights.load_backbone`
            before training: fine-tuning from VGGT (a ray head, which VGGT has not, keeps its initialisation). Read once
            when the module is built; checkpoints hold the weights.
        freeze: backbone submodules kept fixed (no gradients), by name: e.g. ``["aggregator.patch_embed"]`` keeps
            the DINOv2 patch embedding frozen while the rest fine-tunes (as VGGT's training does). A name that is
            not a submodule of the backbone is an error.
    """

    def __init__(self, config: GeometryConfig = GeometryConfig(), lr: float = 1e-3, weight_decay: float = 0.05,
                 warmup_steps: int = 100, camera_weight: float = 5.0, depth_weight: float = 1.0,
                 point_weight: float = 1.0, match_weight: float = 0.0, vggt_weights: str | None = None,
                 freeze: Sequence[str] = (), ray_weight: float = 1.0, direction_weight: float = 0.0) -> None:
        super().__init__()
        config = GeometryConfig.from_value(config)
        if match_weight > 0 and config.match_dim is None:
            raise InputError(f"match_weight={match_weight} trains the matching projection: set config.match_dim "
                             "(e.g. 64)")
        self.save_hyperparameters(ignore=["config"])
        self.hparams["config"] = config.to_dict()
        self.config = config
        self.model = build_model(config)
        if vggt_weights:
            load_backbone(self.model.backbone, vggt_weights, fresh=("ray_head",) if config.ray_head else ())
        modules = dict(self.model.backbone.named_modules())
        for name in freeze:
            if not name or name not in modules:
                raise InputError(f"GeometryModule.freeze: {name!r} is not a submodule of the backbone (e.g. "
                                 "'aggregator.patch_embed', 'camera_head')")
            modules[name].requires_grad_(False)
        self.evaluator = TaskEvaluator("geometry")

    def on_save_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        """Record the task's name in the checkpoint (read by every loader, never guessed from a class name)."""
        checkpoint["task"] = self.evaluator.task

    def forward(self, images: torch.Tensor) -> dict[str, Any]:
        return self.model(images)

    def _losses(self, batch: dict[str, Any], stage: str) -> tuple[dict[str, torch.Tensor], dict[str, Any]]:
        losses, outputs = geometry_losses(self.model.backbone, batch, self.hparams.camera_weight,
                                          self.hparams.depth_weight, self.hparams.point_weight, self.model.match,
                                          self.hparams.match_weight, self.hparams.ray_weight,
                                          self.hparams.direction_weight)
        log_losses(self, stage, losses, batch["images"].shape[0])
        return losses, outputs

    def training_step(self, batch: dict[str, Any], batch_idx: int) -> torch.Tensor:
        return self._losses(batch, "train")[0]["loss"]

    def _evaluation_step(self, batch: dict[str, Any], stage: str) -> None:
        _, outputs = self._losses(batch, stage)
        for key, results in clip_results(self.model, outputs, batch["image_ids"]):
            self.evaluator.process(key, results)

    def validation_step(self, batch: dict[str, Any], batch_idx: int) -> None:
        self._evaluation_step(batch, "validate")

    def test_step(self, batch: dict[str, Any], batch_idx: int) -> None:
        self._evaluation_step(batch, "test")

    def predict_step(self, batch: dict[str, Any], batch_idx: int,
                     dataloader_idx: int = 0) -> list[tuple[tuple[int, ...], list[dict]]]:
        return clip_results(self.model, self.model(batch["images"]), batch["image_ids"])

    def on_validation_epoch_end(self) -> None:
        self.evaluator.evaluate(self, "validate")

    def on_test_epoch_end(self) -> None:
        metrics = self.evaluator.evaluate(self, "test")
        if metrics is not None and self.trainer.is_global_zero:
            print(format_geometry_table(metrics))

    def param_groups(self) -> list[dict[str, Any]]:
        """AdamW groups over the model (backbone and matching projection): weight decay except on 1-d tensors,
        camera / register tokens and position embeddings."""
        return decay_param_groups(self.named_parameters(), self.hparams.weight_decay,
                                  lambda name, p: "token" in name or "pos_embed" in name)

    def configure_optimizers(self) -> dict[str, Any]:
        opt = torch.optim.AdamW(self.param_groups(), lr=self.hparams.lr)
        return warmup_cosine(opt, self.hparams.lr, self.hparams.warmup_steps, self.trainer.estimated_stepping_batches)
