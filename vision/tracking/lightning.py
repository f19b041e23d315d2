"""LightningModule training G2TAM (or the memory-bank control) on multi-view clips with random prompts, and scoring
it with the task's metric inside the loop.

Batches: :class:`vision.data.datamodule.MultiViewDataModule` (``collate_clips``). Each training step draws prompts
with :func:`vision.tracking.sampling.sample_prompts` (types and views at random; optional negative text prompts).

- ``architecture="g2tam"``: loss = ``geometry_weight`` * geometry losses (:func:`vision.geometry.losses.
  geometry_losses`: cameras, depth, points) + focal x20 + dice + IoU L1 + presence BCE; the mask head reads the
  same backbone pass, so training is end to end. With ``memory_prob`` > 0 some object slots also carry a 3D
  memory (:func:`vision.tracking.sampling.simulate_memory`), as the predictor's windows and second pass give.
- ``architecture="memory_bank"``: :class:`~vision.tracking.baseline.MemoryBankTracker` with the same mask losses,
  prompts, optimiser and schedule (no geometry losses: it has no geometry heads).

Validation, test and predict follow the protocol of :mod:`vision.tracking.inference` (the one
``benchmarks/bench_tracking.py`` reports): every video of the stage's split is tracked whole by the predictor,
each track prompted once on its first visible view, for each of ``eval_prompt_types``. A batch's clip starts the
video's tracking when it is the video's first window (later windows of the same video add nothing), so each video is
tracked once whatever the batches and ranks. The COCO-video results are handed per (video, prompt type) to the
module's :class:`~vision.training.evaluator.TaskEvaluator`, gathered across ranks at the end of the epoch and scored
with the protocol's options (:func:`vision.tracking.inference.tracking_options`, the figures of
:func:`~vision.tracking.inference.score_tracking`) against ``datamodule.split_path(stage)``: ``val/J&F`` (the mean
over prompt types), ``val/point/J&F``..., presence accuracy and, on splits with cameras and depth, 3D IoU. ``val/loss``
(random prompts with a fixed seed on each clip) is logged too. ``test`` prints the table; ``predict_step`` returns
the ``(key, results)`` pairs that :class:`~vision.training.writer.ResultsWriter` merges into one results file.

``geometry_checkpoint``: a geometry checkpoint (weights under ``model.``) loaded into the backbone before training
(for the control, only the aggregator weights), :func:`vision.geometry.weights.load_backbone`.

Per-rank state: the text-embedding cache (``embed_text``) is filled on each rank from the same deterministic
encoder; it holds no training state.
"""

from __future__ import annotations

from typing import Any, Sequence

import lightning as L
import torch

from vision.errors import DataError, InputError
from vision.geometry.losses import confidence_regression_loss, geometry_losses, normalize_scene
from vision.geometry.weights import load_backbone
from vision.tracking.inference import protocol_predictor, track_video, tracking_options, video_frames
from vision.tracking.losses import tracking_losses
from vision.tracking.sampling import PROMPT_TYPES, sample_prompts, simulate_memory
from vision.tracking.task import TrackingConfig, build_model
from vision.training.evaluator import TaskEvaluator, log_losses
from vision.training.optim import warmup_cosine

__all__ = ["Module", "TrackingModule", "EVAL_PROMPT_TYPES", "ground_truth_points"]

#: the prompt types validation and test report (the figures of benchmarks/bench_tracking.py)
EVAL_PROMPT_TYPES: tuple[str, ...] = ("point", "box", "text")


def ground_truth_points(batch: dict[str, Any]) -> torch.Tensor:
    """The ground-truth point maps ``[B, S, H, W, 3]`` of a clip batch in the frame and scale of the backbone's
    predicted ones (camera 0's frame, mean norm 1 over the valid points: :func:`~vision.geometry.losses.
    normalize_scene`, as the geometry losses normalise their targets); NaN where the depth is unknown (``valid_depth``
    false or depth <= 0)."""
    valid = batch["valid_depth"] & (batch["depth"] > 0)
    points = normalize_scene(batch["extrinsics"], batch["intrinsics"], batch["depth"], None, valid).world_points
    return torch.where(valid[..., None], points, torch.full_like(points, float("nan")))


#: what a light point head learns from in training (``TrackingModule.light_points_teacher``)
LIGHT_POINTS_TEACHERS: tuple[str, ...] = ("ground_truth", "point_head")


class TrackingModule(L.LightningModule):
    """Train a tracker end to end with prompts sampled at random over types and views; validate, test and predict
    with the tracking protocol (module docstring).

    Args:
        config: the model (:class:`~vision.tracking.task.TrackingConfig`, a mapping of its fields, or None for the
            defaults). geometry_checkpoint: optional geometry checkpoint the backbone starts from.
        vggt_weights: optional local VGGT checkpoint (``model.safetensors`` / ``model.pt`` of VGGT-1B) loaded into a
            ``backbone: vggt_1b`` with :func:`vision.geometry.weights.load_backbone`.
        sam2_weights: optional local SAM 2.1 checkpoint (``sam2.1_hiera_*.pt``) whose prompt encoder and mask
            decoder go into a ``decoder_style: sam2`` model (:func:`vision.tracking.sam2_keys.load_sam2_heads`).
        freeze_backbone: keep the backbone's weights fixed (no gradients; set ``geometry_weight`` to 0 then).
        oracle_geometry: a diagnostic upper bound, G2TAM only: the masks are decoded from the batch's ground-truth
            point maps (:func:`ground_truth_points`) instead of the backbone's predicted ones, in training and in
            the validation loss (:meth:`decode_batch` too), and validation / test / predict track with the split's
            ground-truth geometry (``known_geometry`` of :func:`~vision.tracking.inference.track_video`): what the
            geometry memory gives with a perfect backbone. The geometry losses still score the backbone's own
            predictions.
        max_objects: object slots per clip. prompt_types / type_weights: sampled prompt types.
        negative_text: probability of an extra absent-category text prompt per clip.
        negative_names: the category names absent-category text prompts are drawn from; None: the categories of the
            splits the datamodule reads (:meth:`~vision.data.datamodule.MultiViewDataModule.category_names`: the
            training splits' when fitting).
        lr, backbone_lr_scale, weight_decay, warmup_steps: AdamW (backbone lr = lr * scale), warm-up + cosine.
        geometry_weight, focal_weight, dice_weight, iou_weight, presence_weight: loss weights.
        light_points_weight, light_points_teacher: with ``config.tracking_points`` ``light`` or ``patch``, the
            weight of the light point head's loss (:func:`~vision.geometry.losses.confidence_regression_loss` at
            unit confidence, logged as ``loss_light_points``) and its target: ``ground_truth``, the batch's point
            maps, and the decoder reads the light head's points in training, as it does in tracking
            (:meth:`G2TAM.tracking_points_from`); ``point_head``, the backbone's own (detached) DPT points at every
            pixel, and the decoder reads the DPT points in training, as the default G2TAM does (the light head
            learns to stand in for the point head, as ``vision-fit-light-points`` fits it afterwards).
        memory_prob / memory_points: chance that an object slot carries a simulated 3D memory of that many points
            (G2TAM only; 0 disables it).
        eval_prompt_types: the prompt types validation / test / predict track every video with (``text`` is
            dropped without a text encoder). refine: the predictor's second pass (G2TAM) in evaluation (None: the
            model's ``second_pass``).
    """

    def __init__(self, config: TrackingConfig = TrackingConfig(), geometry_checkpoint: str | None = None,
                 max_objects: int = 4, prompt_types: Sequence[str] = PROMPT_TYPES,
                 type_weights: Sequence[float] | None = None, negative_text: float = 0.2, lr: float = 5e-4,
                 backbone_lr_scale: float = 0.2, weight_decay: float = 0.01, warmup_steps: int = 50,
                 geometry_weight: float = 1.0, focal_weight: float = 20.0, dice_weight: float = 1.0,
                 iou_weight: float = 1.0, presence_weight: float = 1.0, memory_prob: float = 0.0,
                 memory_points: int = 64, eval_prompt_types: Sequence[str] = EVAL_PROMPT_TYPES,
                 refine: bool | None = None, vggt_weights: str | None = None, sam2_weights: str | None = None,
                 freeze_backbone: bool = False, negative_names: Sequence[str] | None = None,
                 oracle_geometry: bool = False, light_points_weight: float = 1.0,
                 light_points_teacher: str = "ground_truth") -> None:
        super().__init__()
        config = TrackingConfig.from_value(config)
        self.save_hyperparameters(ignore=["config"])
        self.hparams["config"] = config.to_dict()
        self.config = config
        prompt_types, eval_types = tuple(prompt_types), tuple(eval_prompt_types)
        for name, types in (("prompt_types", prompt_types), ("eval_prompt_types", eval_types)):
            unknown = [t for t in types if t not in PROMPT_TYPES]
            if unknown or not types:
                raise InputError(f"TrackingModule.{name} must be a non-empty list of {PROMPT_TYPES}, got {list(types)}")
        if config.text_encoder is None:
            prompt_types = tuple(t for t in prompt_types if t != "text")
            eval_types = tuple(t for t in eval_types if t != "text")
            negative_text = 0.0
        if light_points_teacher not in LIGHT_POINTS_TEACHERS:
            raise InputError(f"TrackingModule.light_points_teacher must be one of {LIGHT_POINTS_TEACHERS}, got "
                             f"{light_points_teacher!r}")
        self.prompt_types, self.eval_prompt_types, self.negative_text = prompt_types, eval_types, negative_text
        self.model = build_model(config)
        if oracle_geometry and not self.model.uses_geometry_memory:
            raise InputError(f"TrackingModule.oracle_geometry replaces the model's point maps; the "
                             f"{config.architecture!r} tracker has none (only G2TAM decodes from geometry)")
        for weights in (geometry_checkpoint, vggt_weights):
            if weights:
                load_backbone(self.model.backbone, weights)
        if sam2_weights:
            from vision.tracking.sam2_keys import load_sam2_heads

            load_sam2_heads(self.model, sam2_weights)
        if freeze_backbone:
            if geometry_weight > 0:
                raise InputError("freeze_backbone: the geometry losses cannot train a frozen backbone; set "
                                 "geometry_weight to 0")
            self.model.backbone.requires_grad_(False)
        self._text_encoder = None
        self._text_cache: dict[str, torch.Tensor] = {}
        self._negative_names = None if negative_names is None else tuple(negative_names)
        self.evaluator = TaskEvaluator("tracking", split=self._scored_split, options=self._score_options)

    def on_save_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        """Record the task's name in the checkpoint (read by every loader, never guessed from a class name)."""
        checkpoint["task"] = self.evaluator.task

    def negative_names(self) -> tuple[str, ...]:
        """The names absent-category text prompts are drawn from (the ``negative_names`` argument, else the
        datamodule's category names, read once)."""
        if self._negative_names is None:
            datamodule = self._trainer.datamodule if self._trainer is not None else None
            names = datamodule.category_names() if hasattr(datamodule, "category_names") else ()
            if not names:
                raise InputError("TrackingModule.negative_names is not set and there is no datamodule with category "
                                 "names to read them from; pass negative_names (or negative_text=0)")
            self._negative_names = tuple(names)
        return self._negative_names

    def embed_text(self, texts: list[str]) -> torch.Tensor:
        """Cached TextEncoder embeddings ``[len(texts), text_dim]`` (CPU float32)."""
        missing = sorted({t for t in texts if t not in self._text_cache})
        if missing:
            if self._text_encoder is None:
                from vision.text import get_text_encoder

                self._text_encoder = get_text_encoder(self.config.text_encoder)
            for t, e in zip(missing, self._text_encoder(missing)):
                self._text_cache[t] = e.detach().float().cpu()
        return torch.stack([self._text_cache[t] for t in texts])

    def forward(self, images: torch.Tensor, prompts: Any) -> dict[str, Any]:
        return self.model(images, prompts)

    def decode_batch(self, batch: dict[str, Any], prompts: Any) -> dict[str, Any]:
        """The tracker's outputs (``masks``, ``iou``, ``presence``: :meth:`forward`'s) for a clip batch and its
        prompts, decoded as the training step decodes them: from the batch's ground-truth point maps with
        ``oracle_geometry``, else from the backbone's (no simulated memory, no losses)."""
        light = self._decoder_reads_light_points()
        if not (self.hparams.oracle_geometry or light):
            return self.model(batch["images"], prompts)
        encoded = self.model.encode(batch["images"])
        encoded["world_points"] = (ground_truth_points(batch) if self.hparams.oracle_geometry
                                   else self.model.tracking_points_from(encoded))
        return self.model.decode(encoded, prompts)

    def _decoder_reads_light_points(self) -> bool:
        """Whether training decodes from the light point head's points (else from the DPT point head's)."""
        return self.config.tracking_points != "dpt" and self.hparams.light_points_teacher == "ground_truth"

    def _step(self, batch: dict[str, Any], stage: str) -> dict[str, torch.Tensor]:
        generator = None
        if stage != "train":  # fixed prompts for validation
            generator = torch.Generator().manual_seed(1234)
        negatives = self.negative_names() if self.negative_text > 0 else ()
        sampled = sample_prompts(batch, max_objects=self.hparams.max_objects, types=self.prompt_types,
                                 type_weights=self.hparams.type_weights,
                                 embed_text=self.embed_text if self.config.text_encoder else None,
                                 negative_text=self.negative_text, negative_names=negatives,
                                 text_dim=self.model.text_dim, memory_dim=self.model.dim, generator=generator)
        prompts = sampled.prompts.to(self.device)
        losses: dict[str, torch.Tensor] = {}
        if self.model.uses_geometry_memory:
            geo, pred = geometry_losses(self.model.backbone, batch)
            encoded = self.model.features_from_geometry(pred)
            if self.config.tracking_points != "dpt":
                light = self.model.tracking_points_from(pred)
                if self._decoder_reads_light_points():
                    target = ground_truth_points(batch)  # NaN where the depth is unknown: left out by the loss
                    encoded["world_points"] = light
                else:
                    target = pred["world_points"].detach()
                ones = torch.ones_like(light[..., 0])
                fit = confidence_regression_loss(light, target, ones, ones.bool())
                losses["loss_light_points"] = fit["loss"]
            if self.hparams.oracle_geometry:
                encoded["world_points"] = ground_truth_points(batch)
            if self.hparams.memory_prob > 0:
                prompts = simulate_memory(sampled, encoded["world_points"], encoded["feats"],
                                          self.hparams.memory_prob, self.hparams.memory_points, generator)
            out = self.model.decode(encoded, prompts)
            losses.update({k: v for k, v in geo.items() if k != "loss"})
            losses["loss_geometry"] = geo["loss"]
        else:
            out = self.model(batch["images"], prompts)
        trk = tracking_losses(out, sampled.gt_masks.to(self.device), sampled.gt_presence.to(self.device),
                              prompts.valid, self.hparams.focal_weight, self.hparams.dice_weight,
                              self.hparams.iou_weight, self.hparams.presence_weight)
        losses.update({k: v for k, v in trk.items() if k != "loss"})
        losses["loss_tracking"] = trk["loss"]
        total = trk["loss"]
        if "loss_geometry" in losses:
            total = total + self.hparams.geometry_weight * losses["loss_geometry"]
        if "loss_light_points" in losses:
            total = total + self.hparams.light_points_weight * losses["loss_light_points"]
        losses["loss"] = total
        log_losses(self, stage, losses, batch["images"].shape[0])
        return losses

    def training_step(self, batch: dict[str, Any], batch_idx: int) -> dict[str, torch.Tensor]:
        return self._step(batch, "train")

    def validation_step(self, batch: dict[str, Any], batch_idx: int) -> None:
        self._step(batch, "validate")
        for key, results in self._track_batch(batch, "validate"):
            self.evaluator.process(key, results)

    def test_step(self, batch: dict[str, Any], batch_idx: int) -> None:
        for key, results in self._track_batch(batch, "test"):
            self.evaluator.process(key, results)

    def predict_step(self, batch: dict[str, Any], batch_idx: int) -> list[tuple[tuple[int, str], list[dict]]]:
        """``[((video_id, prompt_type), results)]`` for the videos this batch starts (see the module docstring)."""
        return self._track_batch(batch, "predict")

    def on_validation_epoch_end(self) -> None:
        self.evaluator.evaluate(self, "validate")

    def on_test_epoch_end(self) -> None:
        metrics = self.evaluator.evaluate(self, "test")
        self.evaluator.print_table(self, metrics, f"tracking, {self.trainer.datamodule.split_path('test')} (prompt "
                                                  f"types {', '.join(self.eval_prompt_types)})")

    def _eval_dataset(self, stage: str) -> Any:
        datamodule = getattr(self.trainer, "datamodule", None)
        if datamodule is None or not hasattr(datamodule, "eval_dataset"):
            raise InputError("TrackingModule evaluates on a MultiViewDataModule's split (trainer.validate / test / "
                             "predict with datamodule=...); it got no datamodule")
        return datamodule.eval_dataset(stage)

    def _track_batch(self, batch: dict[str, Any], stage: str) -> list[tuple[tuple[int, str], list[dict]]]:
        """Track whole every video whose first window is in ``batch``, with each of ``eval_prompt_types``."""
        split = self._eval_dataset(stage).split
        predictor = protocol_predictor(self.model, self.embed_text if self.config.text_encoder else None,
                                       refine=self.hparams.refine, device=self.device)
        out = []
        for video_id, image_ids in zip(batch["video_id"].tolist(), batch["image_ids"].tolist()):
            if image_ids[0] != video_frames(split, video_id)[0]["id"]:
                continue
            for kind in self.eval_prompt_types:
                out.append(((int(video_id), kind), track_video(predictor, split, video_id, kind,
                                                                known_geometry=self.hparams.oracle_geometry)))
        return out

    def _scored_split(self, stage: str, results: list[dict]) -> str:
        """The evaluator's split hook: the split file of ``stage``, once every one of its videos was tracked (a
        :class:`DataError` when the datamodule's clips miss a video)."""
        dataset = self._eval_dataset(stage)
        untracked = sorted(set(dataset.split.videos) - set(dataset.videos))
        if untracked:
            raise DataError(f"videos {untracked[:10]} have fewer frames than the datamodule's views: the tracking "
                            "evaluation tracks whole videos from their first clip, so lower data.views",
                            file=dataset.split.file, field="videos")
        return self.trainer.datamodule.split_path(stage)

    def _score_options(self, stage: str) -> dict[str, Any]:
        """The evaluator's options hook: the protocol's (:func:`vision.tracking.inference.tracking_options`)."""
        return tracking_options(self.trainer.datamodule.split_path(stage))

    def configure_optimizers(self) -> dict[str, Any]:
        groups: dict[tuple[bool, bool], list] = {}
        for name, p in self.model.named_parameters():
            if not p.requires_grad:
                continue
            key = (name.startswith("backbone."), p.ndim >= 2)
            groups.setdefault(key, []).append(p)
        lr = self.hparams.lr
        param_groups = [{"params": ps, "lr": lr * (self.hparams.backbone_lr_scale if bb else 1.0),
                         "weight_decay": self.hparams.weight_decay if decay else 0.0}
                        for (bb, decay), ps in groups.items()]
        opt = torch.optim.AdamW(param_groups, lr=lr)
        total = int(self.trainer.estimated_stepping_batches) if self._trainer is not None else 1000
        return warmup_cosine(opt, lr, self.hparams.warmup_steps, total)

#: the task's LightningModule (the registry's fixed name, vision.tasks.PARTS)
Module = TrackingModule
