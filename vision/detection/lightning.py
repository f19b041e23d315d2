"""LightningModule that trains the OOV detector with the three OOVDet mechanisms switched by arguments.

The detector is defined by a :class:`~vision.detection.task.DetectionConfig` (``config``; built with
:func:`~vision.detection.task.build_model`, stored in the checkpoint as ``hyper_parameters["config"]``); the other
arguments are training settings. Batches come from :class:`vision.data.datamodule.DetectionDataModule` (``images``
float [B, 3, H, W] in [0, 1] at the config's ``image_size``, ``targets`` with ``boxes`` XYXY px and
``category_ids``). Annotations whose category is not in the training vocabulary are ignored by the losses (the OOV
split carries none in training anyway).

Loss = objectness focal + ``box_weight`` GIoU + open-vocabulary cross entropy, plus
- ``synthesis``: ``synthesis_weight`` * CE(virtual outliers -> OOV column), from ``synthesis_start`` (fraction of
  training) on, outliers drawn by :class:`~vision.detection.oov_synthesis.ClassGaussianBank`;
- ``mining``: from ``mining_start`` on, pseudo-OOV images by Dirichlet attribution uncertainty, their confident
  unmatched regions labelled OOV (:mod:`vision.detection.attribution`);
- ``kde_prior``: ``kde_weight`` * KDE density of OOV embeddings (mined regions + OOV prompts) under the queued IV
  embeddings (:mod:`vision.detection.kde`).
``config.oov_class=False`` is the closed-vocabulary baseline (no OOV column; every mechanism must be off).

The training vocabulary (``class_names`` / ``category_ids``) comes from the arguments or, when absent, from the
datamodule's training split (categories with ``split: iv``); it is stored in the checkpoint's hyper-parameters.

Evaluation (the task metric inside the loop): ``validation_step`` / ``test_step`` / ``predict_step`` detect with the
vocabulary the evaluated split gives (``info.vocabulary``: iv + novel names on the synthetic OOV splits; novel names
are zero-shot) and turn the detections into COCO results in the split's image pixels exactly as
:class:`~vision.detection.predictor.DetectorPredictor` writes them (:func:`vision.detection.results.image_results`;
OOV-rejected boxes under :data:`~vision.detection.results.UNKNOWN_CATEGORY_ID`), keyed by image id. At the end of the
epoch the module's :class:`~vision.training.evaluator.TaskEvaluator` gathers the results of every rank and scores
them once with :func:`vision.evaluation.evaluate` (COCO AP over the vocabulary, and the open-set figures: ``IV_AP50``,
``U-Recall``, ``WI``, ``A-OSE``, ``H-mean``, ``novel_AP50``), logged as ``val/<name>`` / ``test/<name>``; ``test``
also prints :func:`format_openset`'s table. ``predict_step`` returns ``(image_id, results)`` pairs for
:class:`~vision.training.writer.ResultsWriter`.

Under DDP the OOV bank is synchronised: the embeddings and labels every rank queues in a step are gathered
(in rank order) before :meth:`ClassGaussianBank.push`, so every rank holds the same bank, and the checkpoint (written
by rank 0) holds it too. The text tables are derived from the vocabularies and identical on every rank.
"""

from __future__ import annotations

import random
from typing import Any

import lightning as L
import torch
import torch.nn.functional as F

from vision.detection.attribution import attribution_evidence, dirichlet_uncertainty, mine_pseudo_oov
from vision.detection.kde import low_density_penalty
from vision.detection.losses import assign_by_prediction, assign_targets, detection_losses, drop_vocabulary
from vision.detection.oov_synthesis import ClassGaussianBank
from vision.detection.results import UNKNOWN_CATEGORY_ID, image_results
from vision.detection.task import DetectionConfig, build_model
from vision.geometry.weights import load_backbone
from vision.detection.vocabulary import check_vocabulary, competitor_rows, encode_vocabulary, known_competitors
from vision.errors import DataError, InputError
from vision.training.evaluator import TaskEvaluator, log_losses
from vision.training.optim import decay_param_groups, warmup_cosine

__all__ = ["Module", "OOVDetModule", "format_openset", "OPENSET_ORDER"]

#: The open-set figures :func:`format_openset` prints, in order.
OPENSET_ORDER = ("IV_AP", "IV_AP50", "novel_AP50", "U-Recall", "AP_U", "WI", "A-OSE", "H-mean")


def format_openset(metrics: dict[str, Any]) -> str:
    """A two-column table of :data:`OPENSET_ORDER`; AP / recall figures x100, WI x100 (already), A-OSE a count;
    ``-1`` = undefined."""
    lines = [f"{'metric':12s}{'value':>10s}"]
    for key in OPENSET_ORDER:
        value = float(metrics[key])
        shown = value if key in ("WI", "A-OSE") or value < 0 else 100 * value
        lines.append(f"{key:12s}{shown:10.1f}")
    lines.append(f"(H-mean: {metrics['hmean_definition']}; -1 = undefined)")
    return "\n".join(lines)


class OOVDetModule(L.LightningModule):
    """Train an :class:`~vision.detection.model.OOVDetector`. See the module docstring for the loss and the
    evaluation; the arguments mirror it.

    Args:
        config: the detector (:class:`DetectionConfig`, a mapping of its fields, or None for the defaults).
        class_names / category_ids: the training vocabulary (None: the training split's iv categories).
        geometry_checkpoint: a GeometryModule checkpoint (or VGGT-format weights) whose aggregator initialises the
            backbone (:func:`vision.geometry.weights.load_backbone`; the detector builds no geometry heads).
        synthesis, synthesis_start, synthesis_weight, queue_size, samples_per_class, keep_per_class: the virtual
            outlier synthesis and its bank (``queue_size`` embeddings per class).
        mining, mining_start, mining_fraction, mining_min_objectness, mining_topk: attribution mining.
        kde_prior, kde_weight, kde_reference: the KDE low-density prior.
        box_weight: weight of the GIoU loss. quality_objectness: IoU-valued objectness targets with GFL's quality
            focal loss (:func:`~vision.detection.losses.detection_losses`); False: FCOS's 0 / 1 focal loss. lr, weight_decay, warmup_steps: AdamW with warm-up + cosine.
        flip: random horizontal flips of training batches.
        assignment: which locations learn an object: ``centre`` (FCOS's rule on the location grid,
            :func:`~vision.detection.losses.assign_targets`) or ``prediction`` (the locations whose predicted box
            overlaps it by ``assignment_iou``, :func:`~vision.detection.losses.assign_by_prediction`: for a
            pretrained, frozen box body).
        freeze_embedding: keep the region embeddings' projection fixed (the YOLOX body's starts as the COCO
            names' text rows weighted by YOLOX's class probabilities): only the OOV column (and any unfrozen body
            part) trains.
        background_loss: train the classifier's background column at background locations; False for a
            pretrained body whose frozen objectness separates objects from background
            (:func:`~vision.detection.losses.detection_losses`).
        vocabulary_dropout: the probability that a training class is left out of a training step's vocabulary, its
            objects then trained as out-of-vocabulary (:func:`~vision.detection.losses.drop_vocabulary`); 0 never.
    """

    def __init__(self, config: DetectionConfig = DetectionConfig(), class_names: list[str] | None = None,
                 category_ids: list[int] | None = None, geometry_checkpoint: str | None = None,
                 synthesis: bool = True, synthesis_start: float = 0.5, synthesis_weight: float = 0.1,
                 queue_size: int = 1000, samples_per_class: int = 1000, keep_per_class: int = 2,
                 mining: bool = True, mining_start: float = 0.3, mining_fraction: float = 0.5,
                 mining_min_objectness: float = 0.1, mining_topk: int = 3,
                 kde_prior: bool = True, kde_weight: float = 0.1, kde_reference: int = 512,
                 box_weight: float = 2.0, quality_objectness: bool = False, lr: float = 1e-3,
                 weight_decay: float = 0.05, warmup_steps: int = 50, flip: bool = True,
                 assignment: str = "centre", assignment_iou: float = 0.5, vocabulary_dropout: float = 0.0,
                 background_loss: bool = True, freeze_embedding: bool = False) -> None:
        super().__init__()
        if assignment not in ("centre", "prediction"):
            raise InputError(f"assignment must be 'centre' or 'prediction', got {assignment!r}")
        if not 0.0 <= vocabulary_dropout < 1.0:
            raise InputError(f"vocabulary_dropout is a probability in [0, 1), got {vocabulary_dropout!r}")
        config = DetectionConfig.from_value(config)
        if not config.oov_class and (synthesis or mining or kde_prior):
            raise InputError("config.oov_class=False (closed-vocabulary baseline) needs synthesis, mining and "
                             "kde_prior all set to false")
        self.save_hyperparameters(ignore=["config"])
        self.hparams["config"] = config.to_dict()
        self.config = config
        self.model = build_model(config)
        if geometry_checkpoint:
            if config.body != "vggt":
                raise InputError(f"geometry_checkpoint initialises the vggt body's backbone; this config's body is "
                                 f"{config.body!r}")
            load_backbone(self.model.backbone, geometry_checkpoint)
        if freeze_embedding:
            projection = self.model.body.embed_proj if self.model.body is not None else self.model.head.embed_proj
            projection.requires_grad_(False)
        self.register_buffer("text_embeddings", torch.zeros(0, config.embed_dim), persistent=False)
        self.bank: ClassGaussianBank | None = None
        self._cat_to_index: dict[int, int] = {}
        #: the text encoder of the vocabularies (None: the shared MiniLM); not saved.
        self.text_encoder: Any = None
        self._eval_vocabularies: dict[str, tuple[list[str], list[int], torch.Tensor]] = {}
        self.evaluator = TaskEvaluator("detection", options=self._score_options)
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
            text_embeddings = encode_vocabulary(names, self.config.prompt_template, self.text_encoder)
        if tuple(text_embeddings.shape) != (len(names), self.config.embed_dim):
            raise InputError(f"text_embeddings has shape {tuple(text_embeddings.shape)}, expected "
                             f"({len(names)}, {self.config.embed_dim}) (classes, config.embed_dim)")
        self.hparams["class_names"] = names
        self.hparams["category_ids"] = ids
        self._cat_to_index = {c: i for i, c in enumerate(ids)}
        self.text_embeddings = F.normalize(text_embeddings.float(), dim=-1).to(self.device)
        self.bank = ClassGaussianBank(len(names), self.config.embed_dim, self.hparams.queue_size)

    def setup(self, stage: str) -> None:
        if self.text_embeddings.shape[0] > 0:
            return
        dm = getattr(self.trainer, "datamodule", None) if self._trainer is not None else None
        if dm is None:
            raise InputError("no training vocabulary: give model.class_names or train with a DetectionDataModule")
        dm.setup("fit")
        split = dm.train_dataset.split
        self.set_vocabulary(split.vocabulary(("iv",)), split.category_ids(("iv",)))

    def eval_vocabulary(self, stage: str) -> tuple[list[str], list[int], torch.Tensor]:
        """The vocabulary the split of ``stage`` (``validate``, ``test``, ``predict``) gives the detector:
        ``(names, category ids, unit text rows [K, D] on the module's device)``, encoded once per split."""
        path = self.trainer.datamodule.split_path(stage)
        if path not in self._eval_vocabularies:
            split = self.trainer.datamodule.eval_dataset(stage).split
            names = split.given_vocabulary()
            by_name = {c["name"]: int(cid) for cid, c in split.categories.items()}
            missing = [n for n in names if n not in by_name]
            if missing:
                raise DataError("info.vocabulary names a category the split does not define", file=split.file,
                                field="info.vocabulary", value=missing)
            text = encode_vocabulary(names, self.config.prompt_template, self.text_encoder)
            self._eval_vocabularies[path] = (names, [by_name[n] for n in names], text)
        names, ids, text = self._eval_vocabularies[path]
        return names, ids, text.to(self.device)

    def eval_competitors(self, text: torch.Tensor) -> torch.Tensor | None:
        """The body's known names no row of ``text`` explains (:func:`competitor_rows`), as the predictor computes
        them; None without ``config.competitor_similarity`` or known names."""
        return known_competitors(self.model.known_names, text, self.config.competitor_similarity,
                                 self.config.prompt_template, self.text_encoder)

    # ------------------------------------------------------------------ checkpoint
    def on_save_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        """The OOV bank's queues are training state outside the parameters: they go into the checkpoint."""
        checkpoint["task"] = self.evaluator.task  # the task is recorded, never guessed from a name
        if self.bank is not None:
            checkpoint["oov_bank"] = self.bank.state_dict()

    def on_load_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        saved = (checkpoint.get("hyper_parameters") or {}).get("class_names")
        if saved is not None and self.bank is not None and list(saved) != self.hparams["class_names"]:
            raise InputError(f"the checkpoint was trained with the vocabulary {list(saved)}, this module has "
                             f"{self.hparams['class_names']}")
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
        return self._forward_losses(batch, train)[0]

    def _forward_losses(self, batch: dict[str, Any], train: bool
                        ) -> tuple[dict[str, torch.Tensor], dict[str, torch.Tensor]]:
        """``(losses, the detector's outputs)`` for a batch (outputs of the flipped images when ``train`` flipped
        them)."""
        if self.text_embeddings.shape[0] == 0:
            raise InputError("no training vocabulary: give model.class_names or train with a DetectionDataModule")
        hp = self.hparams
        images = batch["images"].to(self.device)
        flip = bool(train and hp.flip and random.random() < 0.5)
        if flip:
            images = images.flip(-1)
        gt_boxes, gt_labels = self._targets(batch, flip, images.shape[-1])
        out = self.model(images)
        k = self.text_embeddings.shape[0]
        if hp.assignment == "prediction":
            assigned = [assign_by_prediction(out["boxes"][i], b, l, k, hp.assignment_iou)
                        for i, (b, l) in enumerate(zip(gt_boxes, gt_labels))]
        else:
            assigned = [assign_targets(out["points"], out["strides"], b, l, k) for b, l in zip(gt_boxes, gt_labels)]
        labels = torch.stack([a[0] for a in assigned])
        box_targets = torch.stack([a[1] for a in assigned])
        text = self.text_embeddings
        class_index = torch.arange(k, device=self.device)  # a row of ``text`` -> its training class
        competitors = None  # the left-out classes no kept name explains (config.competitor_similarity)
        if train and hp.vocabulary_dropout > 0:
            keep = torch.rand(k) >= hp.vocabulary_dropout
            if not keep.any():
                keep[torch.randint(k, (1,))] = True
            keep = keep.to(self.device)
            labels = drop_vocabulary(labels, keep)
            if self.config.competitor_similarity is not None:
                competitors = competitor_rows(text[~keep], text[keep], self.config.competitor_similarity)
            text, class_index, k = text[keep], class_index[keep], int(keep.sum())
        progress = self._progress()
        stats: dict[str, torch.Tensor] = {}
        if train and hp.mining and progress >= hp.mining_start:
            evidence = attribution_evidence(out["features"], self.model.project,
                                            self.model.classifier.table(text), self.config.temperature)
            uncertainty = dirichlet_uncertainty(evidence)
            labels, mined = mine_pseudo_oov(uncertainty, out["objectness"], out["boxes"], labels, gt_boxes, k,
                                            fraction=hp.mining_fraction, min_objectness=hp.mining_min_objectness,
                                            topk=hp.mining_topk)
            stats["mined_regions"] = (labels == k + 1).sum().float()
            stats["uncertainty"] = uncertainty.mean().detach()
        if not train:
            competitors = self.eval_competitors(text)
        logits = self.model.classify(out["embeddings"], text, competitors)
        losses = detection_losses(out["objectness"], out["boxes"], logits, labels, box_targets, k,
                                  quality=hp.quality_objectness, background=hp.background_loss)
        total = losses["loss_objectness"] + hp.box_weight * losses["loss_box"] + losses["loss_cls"]
        positive = labels < k
        if train and self.bank is not None and (hp.synthesis or hp.kde_prior):
            self._push_bank(out["embeddings"][positive].detach(), class_index[labels[positive]])
        if train and hp.synthesis and progress >= hp.synthesis_start and self.bank.ready_classes().numel() > 0:
            outliers, _ = self.bank.synthesize(hp.samples_per_class, hp.keep_per_class)
            outlier_logits = self.model.classify(F.normalize(outliers.to(self.device), dim=-1), text, competitors)
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
        return losses, out

    def _push_bank(self, embeddings: torch.Tensor, labels: torch.Tensor) -> None:
        """Queue this step's positive embeddings ``[M, D]`` with their class indices ``[M]``; under DDP the rows of
        every rank, in rank order, so that every rank's bank stays the same (a collective: every rank calls it in
        every training step)."""
        world = int(self.trainer.world_size) if self._trainer is not None else 1
        if world > 1:
            counts = self.all_gather(torch.tensor([labels.numel()], device=self.device)).reshape(world)
            most = int(counts.max())
            if most == 0:
                return
            padded = embeddings.new_zeros(most, embeddings.shape[1])
            padded[: labels.numel()] = embeddings
            padded_labels = labels.new_zeros(most)
            padded_labels[: labels.numel()] = labels
            every = self.all_gather(padded).reshape(world, most, -1)
            every_labels = self.all_gather(padded_labels).reshape(world, most)
            embeddings = torch.cat([every[r, : int(counts[r])] for r in range(world)])
            labels = torch.cat([every_labels[r, : int(counts[r])] for r in range(world)])
        if labels.numel() > 0:
            self.bank.push(embeddings, labels)

    # ------------------------------------------------------------------ steps
    def training_step(self, batch: dict[str, Any], batch_idx: int) -> dict[str, torch.Tensor]:
        losses = self.compute_losses(batch, train=True)
        log_losses(self, "train", losses, batch["images"].shape[0])
        return losses

    def detect(self, outputs: dict[str, torch.Tensor], batch: dict[str, Any], stage: str) -> list[tuple[int, list]]:
        """``(image_id, COCO results)`` per image of ``batch`` from the detector's ``outputs``, with the vocabulary
        of the split ``stage`` evaluates (:meth:`eval_vocabulary`), boxes scaled from the model input
        (``batch["image_sizes"]``) to the split's image size (its ``width`` / ``height``)."""
        names, ids, text = self.eval_vocabulary(stage)
        split = self.trainer.datamodule.eval_dataset(stage).split
        sizes = [(int(h), int(w)) for h, w in batch["image_sizes"].tolist()]
        detections = self.model.postprocess(outputs, text, sizes, self.eval_competitors(text))
        return image_results(detections, batch["image_ids"].tolist(), sizes, split.images, names, ids)

    def _evaluation_step(self, batch: dict[str, Any], stage: str) -> None:
        losses, outputs = self._forward_losses(batch, train=False)
        log_losses(self, stage, losses, batch["images"].shape[0])
        for image_id, results in self.detect(outputs, batch, stage):
            self.evaluator.process(image_id, results)

    def validation_step(self, batch: dict[str, Any], batch_idx: int) -> None:
        self._evaluation_step(batch, "validate")

    def test_step(self, batch: dict[str, Any], batch_idx: int) -> None:
        self._evaluation_step(batch, "test")

    def predict_step(self, batch: dict[str, Any], batch_idx: int) -> list[tuple[int, list]]:
        return self.detect(self.model(batch["images"].to(self.device)), batch, "predict")

    def _score_options(self, stage: str) -> dict[str, Any]:
        """The detection options of the split of ``stage``: its vocabulary's ids, and the open-set figures (OOV
        detections under :data:`UNKNOWN_CATEGORY_ID`)."""
        _, ids, _ = self.eval_vocabulary(stage)
        return {"category_ids": ids, "unknown_category_id": UNKNOWN_CATEGORY_ID}

    def score(self, stage: str, results: list[dict]) -> dict[str, Any]:
        """:func:`vision.evaluation.evaluate` of COCO ``results`` on the split of ``stage``, over the vocabulary that
        split gives, with the open-set figures (OOV detections under :data:`UNKNOWN_CATEGORY_ID`)."""
        return self.evaluator.score(self, stage, results)

    def on_validation_epoch_end(self) -> None:
        self.evaluator.evaluate(self, "validate")

    def on_test_epoch_end(self) -> None:
        metrics = self.evaluator.evaluate(self, "test")
        if metrics is not None and self.trainer.is_global_zero:
            names, _, _ = self.eval_vocabulary("test")
            print(f"OOVDet on {self.trainer.datamodule.split_path('test')} (vocabulary: {', '.join(names)}; "
                  f"{metrics['num_unknown_gt']} unknown objects)")
            print(format_openset(metrics))

    def configure_optimizers(self) -> dict[str, Any]:
        groups = decay_param_groups(self.model.named_parameters(), self.hparams.weight_decay,
                                    lambda name, p: "token" in name or "oov_prompts" in name
                                    or "text_projection" in name)
        opt = torch.optim.AdamW(groups, lr=self.hparams.lr)
        return warmup_cosine(opt, self.hparams.lr, self.hparams.warmup_steps, self.trainer.estimated_stepping_batches)

#: the task's LightningModule (the registry's fixed name, vision.tasks.PARTS)
Module = OOVDetModule
