"""LightningModule that trains the OOV detector with the three OOVDet mechanisms switched by config.

Batches come from :class:`vision.data.datamodule.DetectionDataModule` (``images`` float [B, 3, H, W] in [0, 1],
``targets`` with ``boxes`` XYXY px and ``category_ids``). Annotations whose category is not in the training
vocabulary are ignored (the OOV split carries none in training anyway).

Loss = objectness focal + ``box_weight`` GIoU + open-vocabulary cross entropy, plus
- ``synthesis``: ``synthesis_weight`` * CE(virtual outliers -> OOV column), from ``synthesis_start`` (fraction of
  training) on, outliers drawn by :class:`~vision.detection.oov_synthesis.ClassGaussianBank`;
- ``mining``: from ``mining_start`` on, pseudo-OOV images by Dirichlet attribution uncertainty, their confident
  unmatched regions labelled OOV (:mod:`vision.detection.attribution`);
- ``kde_prior``: ``kde_weight`` * KDE density of OOV embeddings (mined regions + OOV prompts) under the queued IV
  embeddings (:mod:`vision.detection.kde`).
``oov_class=False`` is the closed-vocabulary baseline (no OOV column; every mechanism must be off).

The training vocabulary (``class_names`` / ``category_ids``) comes from the config or, when absent, from the
datamodule's training split (categories with ``split: iv``); it is stored in the checkpoint's hyper-parameters.
"""

from __future__ import annotations

import random
from typing import Any, Sequence

import lightning as L
import torch
import torch.nn.functional as F

from vision.detection.attribution import attribution_evidence, dirichlet_uncertainty, mine_pseudo_oov
from vision.detection.kde import low_density_penalty
from vision.detection.losses import assign_targets, detection_losses
from vision.detection.model import OOVDetector
from vision.detection.oov_synthesis import ClassGaussianBank
from vision.detection.vocabulary import DEFAULT_TEMPLATE, check_vocabulary, encode_vocabulary
from vision.errors import InputError
from vision.training.optim import decay_param_groups, warmup_cosine

__all__ = ["OOVDetModule"]


class OOVDetModule(L.LightningModule):
    """Train an :class:`OOVDetector`. See the module docstring for the loss; the arguments mirror it."""

    def __init__(self, size: str = "tiny", image_size: int = 64, feature_layers: Sequence[int] = (1, -1),
                 channels: int = 96, temperature: float = 0.05, num_oov_prompts: int = 1, oov_class: bool = True,
                 class_names: list[str] | None = None, category_ids: list[int] | None = None,
                 prompt_template: str = DEFAULT_TEMPLATE, geometry_checkpoint: str | None = None,
                 synthesis: bool = True, synthesis_start: float = 0.5, synthesis_weight: float = 0.1,
                 queue_size: int = 1000, samples_per_class: int = 1000, keep_per_class: int = 2,
                 mining: bool = True, mining_start: float = 0.3, mining_fraction: float = 0.5,
                 mining_min_objectness: float = 0.1, mining_topk: int = 3,
                 kde_prior: bool = True, kde_weight: float = 0.1, kde_reference: int = 512,
                 box_weight: float = 2.0, lr: float = 1e-3, weight_decay: float = 0.05, warmup_steps: int = 50,
                 flip: bool = True, score_threshold: float = 0.05) -> None:
        super().__init__()
        if not oov_class and (synthesis or mining or kde_prior):
            raise InputError("oov_class=False (closed-vocabulary baseline) needs synthesis, mining and kde_prior "
                             "all set to false")
        self.save_hyperparameters()
        self.model = OOVDetector(size, image_size, feature_layers, channels, num_oov_prompts=num_oov_prompts
                                 if oov_class else 0, temperature=temperature, score_threshold=score_threshold)
        if geometry_checkpoint:
            from vision.training.checkpoint_io import load_checkpoint

            self.model.load_geometry_checkpoint(load_checkpoint(geometry_checkpoint)["state_dict"])
        self.register_buffer("text_embeddings", torch.zeros(0, 384), persistent=False)
        self.bank: ClassGaussianBank | None = None
        self._cat_to_index: dict[int, int] = {}
        if class_names is not None:
            self.set_vocabulary(class_names, category_ids)

    # ------------------------------------------------------------------ vocabulary
    def set_vocabulary(self, class_names: list[str], category_ids: list[int] | None = None,
                       text_embeddings: torch.Tensor | None = None) -> None:
        """Fix the training vocabulary (names, COCO ids, and optionally precomputed unit text rows ``[K, D]``)."""
        names = check_vocabulary(class_names, "class_names")
        ids = list(range(1, len(names) + 1)) if category_ids is None else [int(c) for c in category_ids]
        if len(ids) != len(names) or len(set(ids)) != len(ids):
            raise InputError(f"category_ids {ids} must be {len(names)} distinct ids, one per class name")
        if text_embeddings is None:
            text_embeddings = encode_vocabulary(names, self.hparams.prompt_template)
        if text_embeddings.shape[0] != len(names):
            raise InputError(f"text_embeddings has {text_embeddings.shape[0]} rows for {len(names)} classes")
        self.hparams["class_names"] = names
        self.hparams["category_ids"] = ids
        self._cat_to_index = {c: i for i, c in enumerate(ids)}
        self.text_embeddings = F.normalize(text_embeddings.float(), dim=-1).to(self.device)
        self.bank = ClassGaussianBank(len(names), text_embeddings.shape[1], self.hparams.queue_size)

    def setup(self, stage: str) -> None:
        if self.text_embeddings.shape[0] > 0:
            return
        dm = getattr(self.trainer, "datamodule", None) if self._trainer is not None else None
        if dm is None:
            raise InputError("no training vocabulary: give model.class_names or train with a DetectionDataModule")
        dm.setup("fit")
        split = dm.train_dataset.split
        self.set_vocabulary(split.vocabulary(("iv",)), split.category_ids(("iv",)))

    # ------------------------------------------------------------------ checkpoint
    def on_save_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        """The OOV bank's queues are training state outside the parameters: they go into the checkpoint."""
        if self.bank is not None:
            checkpoint["oov_bank"] = self.bank.state_dict()

    def on_load_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        if "oov_bank" not in checkpoint:
            return
        if self.bank is None:  # the vocabulary is set in setup(), which a resumed fit runs before this hook
            raise InputError("the checkpoint holds an OOV bank but this module has no vocabulary yet")
        self.bank.load_state_dict(checkpoint["oov_bank"])

    # ------------------------------------------------------------------ losses
    def _targets(self, batch: dict[str, Any], flip: bool, width: int) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
        boxes, labels = [], []
        for t in batch["targets"]:
            keep = [i for i, c in enumerate(t["category_ids"].tolist()) if c in self._cat_to_index]
            b = t["boxes"][keep].to(self.device).float().reshape(-1, 4)
            if flip:
                b = torch.stack([width - b[:, 2], b[:, 1], width - b[:, 0], b[:, 3]], dim=-1)
            boxes.append(b)
            labels.append(torch.tensor([self._cat_to_index[int(t["category_ids"][i])] for i in keep],
                                       dtype=torch.int64, device=self.device))
        return boxes, labels

    def _progress(self) -> float:
        if self._trainer is None:
            return 0.0
        total = max(1, int(self.trainer.estimated_stepping_batches))
        return self.global_step / total

    def compute_losses(self, batch: dict[str, Any], train: bool) -> dict[str, torch.Tensor]:
        """All loss terms for a batch (``loss`` = weighted total); the mechanisms run only when ``train``."""
        hp = self.hparams
        images = batch["images"].to(self.device)
        flip = bool(train and hp.flip and random.random() < 0.5)
        if flip:
            images = images.flip(-1)
        gt_boxes, gt_labels = self._targets(batch, flip, images.shape[-1])
        out = self.model(images)
        k = self.text_embeddings.shape[0]
        assigned = [assign_targets(out["points"], out["strides"], b, l, k) for b, l in zip(gt_boxes, gt_labels)]
        labels = torch.stack([a[0] for a in assigned])
        box_targets = torch.stack([a[1] for a in assigned])
        text = self.text_embeddings
        progress = self._progress()
        stats: dict[str, torch.Tensor] = {}
        if train and hp.mining and progress >= hp.mining_start:
            evidence = attribution_evidence(out["features"], self.model.head.project, text, hp.temperature)
            uncertainty = dirichlet_uncertainty(evidence)
            labels, mined = mine_pseudo_oov(uncertainty, out["objectness"], out["boxes"], labels, gt_boxes, k,
                                            fraction=hp.mining_fraction, min_objectness=hp.mining_min_objectness,
                                            topk=hp.mining_topk)
            stats["mined_regions"] = (labels == k + 1).sum().float()
            stats["uncertainty"] = uncertainty.mean().detach()
        logits = self.model.classify(out["embeddings"], text)
        losses = detection_losses(out["objectness"], out["boxes"], logits, labels, box_targets, k)
        total = losses["loss_objectness"] + hp.box_weight * losses["loss_box"] + losses["loss_cls"]
        positive = labels < k
        if train and self.bank is not None and positive.any() and (hp.synthesis or hp.kde_prior):
            self.bank.push(out["embeddings"][positive].detach(), labels[positive])
        if train and hp.synthesis and progress >= hp.synthesis_start and self.bank.ready_classes().numel() > 0:
            outliers, _ = self.bank.synthesize(hp.samples_per_class, hp.keep_per_class)
            outlier_logits = self.model.classify(F.normalize(outliers.to(self.device), dim=-1), text)
            target = torch.full((outlier_logits.shape[0],), k + 1, dtype=torch.int64, device=self.device)
            losses["loss_synthesis"] = F.cross_entropy(outlier_logits, target)
            total = total + hp.synthesis_weight * losses["loss_synthesis"]
        if train and hp.kde_prior and self.bank is not None and int(self.bank.filled().sum()) >= 2:
            reference = self.bank.all_entries(hp.kde_reference).to(self.device)
            oov_embeddings = torch.cat([out["embeddings"][labels == k + 1], self.model.classifier.prompts()])
            losses["loss_kde"] = low_density_penalty(oov_embeddings, reference)
            total = total + hp.kde_weight * losses["loss_kde"]
        losses["loss"] = total
        losses.update(stats)
        return losses

    def training_step(self, batch: dict[str, Any], batch_idx: int) -> dict[str, torch.Tensor]:
        losses = self.compute_losses(batch, train=True)
        bs = batch["images"].shape[0]
        self.log("train/loss", losses["loss"], prog_bar=True, batch_size=bs)
        self.log_dict({f"train/{k}": v for k, v in losses.items() if k != "loss"}, batch_size=bs)
        return losses

    def validation_step(self, batch: dict[str, Any], batch_idx: int) -> None:
        losses = self.compute_losses(batch, train=False)
        bs = batch["images"].shape[0]
        self.log("val/loss", losses["loss"], prog_bar=True, batch_size=bs, sync_dist=True)
        self.log_dict({f"val/{k}": v for k, v in losses.items() if k != "loss"}, batch_size=bs, sync_dist=True)

    def configure_optimizers(self) -> dict[str, Any]:
        groups = decay_param_groups(self.model.named_parameters(), self.hparams.weight_decay,
                                    lambda name, p: "token" in name or "oov_prompts" in name)
        opt = torch.optim.AdamW(groups, lr=self.hparams.lr)
        return warmup_cosine(opt, self.hparams.lr, self.hparams.warmup_steps, self.trainer.estimated_stepping_batches)
