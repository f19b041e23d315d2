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

Real depth from a teacher (optional, training only): with ``real_depth`` (the ``.npz`` of
``vision-prepare-real-depth``: real video frames and TCMonoDepth's relative disparity of each) and
``real_depth_weight`` > 0, each training step also draws ``real_depth_batch`` of its frames
(:func:`vision.data.real_depth.draw_indices`: a pure function of the run's seed, the global step and the rank, so a
resumed run draws the same frames and no global generator moves), runs the backbone's depth head on them as
single-view clips ``[B, 1, 3, S, S]`` and adds ``real_depth_weight`` * :func:`vision.geometry.losses.disparity_ssi_loss`
(scale-and-shift-invariant, in disparity space), logged as ``train/loss_real_depth``. Validation and test are
unchanged. Without these options the module trains exactly as before (nothing is read or drawn). The ablation
beside ``make train-geometry``::

    make data-real-depth
    python tools/train.py --config configs/geometry/tiny.yaml --run_dir runs/geometry/realdepth \
        --model.init_args.real_depth datasets/real/real_depth_train.npz --model.init_args.real_depth_weight 0.5

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

import math
from collections.abc import Sequence
from typing import Any

import lightning as L
import torch

from vision.data.real_depth import RealDepthFrames, draw_indices
from vision.errors import DataError, InputError
from vision.evaluation.geometry import format_geometry_table
from vision.geometry.losses import disparity_ssi_loss, geometry_losses
from vision.geometry.results import clip_results
from vision.geometry.task import GeometryConfig, build_model
from vision.geometry.weights import load_backbone
from vision.training.evaluator import TaskEvaluator, log_losses
from vision.training.optim import decay_param_groups, warmup_cosine

__all__ = ["Module", "GeometryModule"]


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
        real_depth: optional ``.npz`` of real frames with a teacher's disparity (``vision-prepare-real-depth``),
            read once when the module is built; its frames must be ``config.image_size`` square.
        real_depth_weight: weight of the real-depth term (0: off, the file is then only checked).
        real_depth_batch: real frames per training step (at most the file's frame count).
    """

    def __init__(self, config: GeometryConfig = GeometryConfig(), lr: float = 1e-3, weight_decay: float = 0.05,
                 warmup_steps: int = 100, camera_weight: float = 5.0, depth_weight: float = 1.0,
                 point_weight: float = 1.0, match_weight: float = 0.0, vggt_weights: str | None = None,
                 freeze: Sequence[str] = (), ray_weight: float = 1.0, direction_weight: float = 0.0,
                 real_depth: str | None = None, real_depth_weight: float = 0.0, real_depth_batch: int = 8) -> None:
        super().__init__()
        config = GeometryConfig.from_value(config)
        if match_weight > 0 and config.match_dim is None:
            raise InputError(f"match_weight={match_weight} trains the matching projection: set config.match_dim "
                             "(e.g. 64)")
        self.real_depth_frames = _real_depth_frames(real_depth, real_depth_weight, real_depth_batch,
                                                    config.image_size)
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
        if stage == "train" and self.real_depth_frames is not None and self.hparams.real_depth_weight > 0:
            real = self.real_depth_loss(self.global_step)
            losses["loss_real_depth"] = real
            losses["loss"] = losses["loss"] + self.hparams.real_depth_weight * real
        log_losses(self, stage, losses, batch["images"].shape[0])
        return losses, outputs

    def real_depth_indices(self, step: int) -> torch.Tensor:
        """The real frames training step ``step`` uses (int64 ``[real_depth_batch]``): drawn from the run's seed
        (``seed_everything``'s, read as ``torch.initial_seed()`` as the datamodule does), ``step`` and this rank."""
        if self.real_depth_frames is None:
            raise InputError("this GeometryModule has no real_depth file")
        return draw_indices(len(self.real_depth_frames), self.hparams.real_depth_batch, int(torch.initial_seed()),
                            step, self.global_rank)

    def real_depth_loss(self, step: int) -> torch.Tensor:
        """:func:`~vision.geometry.losses.disparity_ssi_loss` of the depth head on step ``step``'s real frames
        (each a one-view clip) against the teacher's disparity."""
        images, teacher = self.real_depth_frames.batch(self.real_depth_indices(step), self.device)
        depth = self.model.backbone(images, heads=("depth",))["depth"][:, 0, ..., 0]  # [B, S, S]
        return disparity_ssi_loss(depth, teacher)

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


def _real_depth_frames(path: str | None, weight: float, batch: int, image_size: int) -> RealDepthFrames | None:
    """The checked real-depth options of :class:`GeometryModule`: the file's frames (None without a path)."""
    if isinstance(weight, bool) or not isinstance(weight, (int, float)) or not math.isfinite(weight) or weight < 0:
        raise InputError(f"GeometryModule.real_depth_weight must be a finite number >= 0; got {weight!r}")
    if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
        raise InputError(f"GeometryModule.real_depth_batch must be an integer >= 1; got {batch!r}")
    if not path:
        if weight > 0:
            raise InputError(f"GeometryModule.real_depth_weight={weight} needs real_depth, the .npz of "
                             "vision-prepare-real-depth (make data-real-depth)")
        return None
    try:
        frames = RealDepthFrames(path)
    except DataError as exc:
        raise InputError(f"GeometryModule.real_depth: {exc}") from None
    if frames.size != image_size:
        raise InputError(f"GeometryModule.real_depth: {path} holds frames of {frames.size}x{frames.size}, the "
                         f"model trains at config.image_size={image_size}; write it with vision-prepare-real-depth "
                         f"--size {image_size}")
    if batch > len(frames):
        raise InputError(f"GeometryModule.real_depth_batch={batch} is more than the {len(frames)} frames of {path}")
    return frames

#: the task's LightningModule (the registry's fixed name, vision.tasks.PARTS)
Module = GeometryModule
