"""LightningModule training G2TAM (or the memory-bank control) on multi-view clips with random prompts.

Batches: :class:`vision.data.datamodule.MultiViewDataModule` (``collate_clips``). Each step draws prompts with
:func:`vision.tracking.sampling.sample_prompts` (types and views at random; optional negative text prompts).

- ``architecture="g2tam"``: loss = ``geometry_weight`` * geometry losses (:func:`vision.geometry.losses.
  geometry_losses`: cameras, depth, points) + focal x20 + dice + IoU L1 + presence BCE; the mask head reads the
  same backbone pass, so training is end to end. With ``memory_prob`` > 0 some object slots also carry a 3D
  memory (:func:`vision.tracking.sampling.simulate_memory`), as the predictor's windows and second pass give.
- ``architecture="memory_bank"``: :class:`~vision.tracking.baseline.MemoryBankTracker` with the same mask losses,
  prompts, optimiser and schedule (no geometry losses: it has no geometry heads).

``geometry_checkpoint``: a Lightning checkpoint of :class:`vision.geometry.lightning.GeometryModule` (keys
``model.*``) loaded into the backbone before training (for the control, only the aggregator weights).
"""

from __future__ import annotations

from typing import Any, Sequence

import lightning as L
import torch

from vision.errors import InputError
from vision.tracking.baseline import MemoryBankTracker
from vision.tracking.losses import tracking_losses
from vision.tracking.model import G2TAM
from vision.tracking.sampling import PROMPT_TYPES, sample_prompts, simulate_memory
from vision.training.checkpoint_io import load_checkpoint, load_weights
from vision.geometry.losses import geometry_losses
from vision.training.optim import warmup_cosine

__all__ = ["TrackingModule", "build_tracker", "load_geometry_weights", "NEGATIVE_NAMES"]

ARCHITECTURES = ("g2tam", "memory_bank")


def _negative_names() -> tuple[str, ...]:
    from vision.data.synthetic import CATEGORIES

    return tuple(c.replace("_", " ") for c in CATEGORIES)


NEGATIVE_NAMES: tuple[str, ...] = _negative_names()


def build_tracker(architecture: str, **kwargs: Any) -> G2TAM | MemoryBankTracker:
    """``"g2tam"`` -> :class:`G2TAM`, ``"memory_bank"`` -> :class:`MemoryBankTracker` (same keyword arguments;
    ``memory_size`` only for the latter, ``proximity_maps`` only for the former)."""
    if architecture == "g2tam":
        kwargs.pop("memory_size", None)
        return G2TAM(**kwargs)
    if architecture == "memory_bank":
        kwargs.pop("proximity_maps", None)
        return MemoryBankTracker(**kwargs)
    raise InputError(f"unknown architecture {architecture!r}; expected one of {ARCHITECTURES}")


def load_geometry_weights(model: G2TAM | MemoryBankTracker, path: str) -> None:
    """Load a GeometryModule checkpoint (``state_dict`` keys ``model.*``) into ``model.backbone``.

    G2TAM loads every key strictly; the control loads the keys its backbone has (the aggregator)."""
    state = load_checkpoint(path)
    sd = state.get("state_dict", state)
    backbone_sd = {k[len("model."):]: v for k, v in sd.items() if k.startswith("model.")}
    if not backbone_sd:
        raise InputError(f"{path}: no 'model.*' keys; is this a GeometryModule checkpoint?")
    if isinstance(model, G2TAM):
        load_weights(model.backbone, backbone_sd, path)
    else:
        own = model.backbone.state_dict()
        load_weights(model.backbone, {k: v for k, v in backbone_sd.items() if k in own}, path)


class TrackingModule(L.LightningModule):
    """Train a tracker end to end with prompts sampled at random over types and views.

    Args:
        architecture: ``g2tam`` or ``memory_bank``. size / image_size / dim / num_masks / decoder_depth /
            num_heads / memory_size: model sizes. geometry_checkpoint: optional GeometryModule checkpoint path.
        click_maps / proximity_maps / hires_maps: dense prompt maps (see :class:`G2TAM`; the control has no
            proximity maps).
        text_encoder: name for :func:`vision.text.get_text_encoder` (``None`` disables text prompts).
        max_objects: object slots per clip. prompt_types / type_weights: sampled prompt types.
        negative_text: probability of an extra absent-category text prompt per clip.
        lr, backbone_lr_scale, weight_decay, warmup_steps: AdamW (backbone lr = lr * scale), warm-up + cosine.
        geometry_weight, focal_weight, dice_weight, iou_weight, presence_weight: loss weights.
        memory_prob / memory_points: chance that an object slot carries a simulated 3D memory of that many points
            (G2TAM only; 0 disables it).
    """

    def __init__(self, architecture: str = "g2tam", size: str = "tiny", image_size: int = 64, dim: int = 64,
                 num_masks: int = 3, decoder_depth: int = 2, num_heads: int = 4, memory_size: int = 4,
                 geometry_checkpoint: str | None = None, text_encoder: str | None = "minilm",
                 max_objects: int = 4, prompt_types: Sequence[str] = PROMPT_TYPES,
                 type_weights: Sequence[float] | None = None, negative_text: float = 0.2, lr: float = 5e-4,
                 backbone_lr_scale: float = 0.2, weight_decay: float = 0.01, warmup_steps: int = 50,
                 geometry_weight: float = 1.0, focal_weight: float = 20.0, dice_weight: float = 1.0,
                 iou_weight: float = 1.0, presence_weight: float = 1.0, click_maps: bool = True,
                 proximity_maps: bool = True, hires_maps: bool = True, memory_prob: float = 0.0,
                 memory_points: int = 64) -> None:
        super().__init__()
        self.save_hyperparameters()
        prompt_types = tuple(prompt_types)
        if text_encoder is None:
            prompt_types = tuple(t for t in prompt_types if t != "text")
            negative_text = 0.0
        self.prompt_types, self.negative_text = prompt_types, negative_text
        self.model = build_tracker(architecture, backbone=size, image_size=image_size, dim=dim, num_masks=num_masks,
                                   decoder_depth=decoder_depth, num_heads=num_heads, memory_size=memory_size,
                                   click_maps=click_maps, proximity_maps=proximity_maps, hires_maps=hires_maps)
        if geometry_checkpoint:
            load_geometry_weights(self.model, geometry_checkpoint)
        self._text_encoder = None
        self._text_cache: dict[str, torch.Tensor] = {}

    def embed_text(self, texts: list[str]) -> torch.Tensor:
        """Cached TextEncoder embeddings ``[len(texts), text_dim]`` (CPU float32)."""
        missing = sorted({t for t in texts if t not in self._text_cache})
        if missing:
            if self._text_encoder is None:
                from vision.text import get_text_encoder

                self._text_encoder = get_text_encoder(self.hparams.text_encoder)
            for t, e in zip(missing, self._text_encoder(missing)):
                self._text_cache[t] = e.detach().float().cpu()
        return torch.stack([self._text_cache[t] for t in texts])

    def forward(self, images: torch.Tensor, prompts: Any) -> dict[str, Any]:
        return self.model(images, prompts)

    def _step(self, batch: dict[str, Any], stage: str) -> dict[str, torch.Tensor]:
        generator = None
        if stage != "train":  # fixed prompts for validation
            generator = torch.Generator().manual_seed(1234)
        sampled = sample_prompts(batch, max_objects=self.hparams.max_objects, types=self.prompt_types,
                                 type_weights=self.hparams.type_weights,
                                 embed_text=self.embed_text if self.hparams.text_encoder else None,
                                 negative_text=self.negative_text, negative_names=NEGATIVE_NAMES,
                                 text_dim=self.model.text_dim, memory_dim=self.model.dim, generator=generator)
        prompts = sampled.prompts.to(self.device)
        losses: dict[str, torch.Tensor] = {}
        if isinstance(self.model, G2TAM):
            geo, pred = geometry_losses(self.model.backbone, batch)
            encoded = self.model.features_from_geometry(pred)
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
        losses["loss"] = total
        bs = batch["images"].shape[0]
        self.log(f"{stage}/loss", total, prog_bar=True, batch_size=bs)
        self.log_dict({f"{stage}/{k}": v for k, v in losses.items() if k != "loss"}, batch_size=bs)
        return losses

    def training_step(self, batch: dict[str, Any], batch_idx: int) -> dict[str, torch.Tensor]:
        return self._step(batch, "train")

    def validation_step(self, batch: dict[str, Any], batch_idx: int) -> None:
        self._step(batch, "val")

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
