"""LightningModule training the concept tracker's two learned heads on top of the trained detector and tracker, and
scoring it with the concept protocol inside the loop.

The detector and the tracker come trained (``detector_checkpoint``, ``tracker_checkpoint``) and stay frozen; what is
learned here is what the two of them cannot know alone (:mod:`vision.concept.heads`):

- the presence head, on each (view, phrase) pair of a clip: BCE against "the phrase has a visible instance on the
  view", for the phrases queried on the clip's video (:meth:`vision.data.coco.Split.queried_phrases`: its
  ``concepts``, absent phrases included), as inference queries them;
- the association head, on each pair of proposals of one phrase on two different views: BCE against "both
  proposals cover the same object" (each proposal is matched to the object whose ground-truth mask it overlaps
  most, at mask IoU >= ``match_iou``; proposals that match no object take no part).

Their inputs come from the frozen networks through the predictor's own steps (:class:`~vision.concept.predictor.
ConceptPredictor` with the heads' fixed rules and no presence gate), so training sees the features inference sees.
They depend on the clip only, so they are computed once per clip and kept in memory for the later epochs (the
cache holds no training state: a resumed run recomputes the same values).

Validation and test follow :mod:`vision.concept.inference`: every video of the stage's split is queried whole with
its phrases; the results are scored with ``evaluate(split, results, "concept")`` (``val/HOTA``...). A batch's clip
starts its video's tracking when it is the video's first window, so each video is tracked once.
"""

from __future__ import annotations

from typing import Any

import lightning as L
import numpy as np
import torch
import torch.nn.functional as F

from vision.concept.association import labelled_pairs, match_objects
from vision.concept.heads import PAIR_FEATURES
from vision.concept.inference import track_video, video_frames
from vision.concept.predictor import ConceptPredictor
from vision.concept.task import ConceptConfig, build_model, from_parts
from vision.errors import InputError
from vision.training.evaluator import TaskEvaluator, log_losses
from vision.training.optim import warmup_cosine

__all__ = ["Module", "ConceptModule", "heads_data", "rule_predictor"]


def rule_predictor(model: Any, config: ConceptConfig, device: Any = None) -> ConceptPredictor:
    """The predictor whose steps give the heads' inputs: the heads' fixed rules and no presence gate."""
    config = config.replace(learned_presence=False, learned_association=False, presence_threshold=0.0)
    return ConceptPredictor(model, config, device=device)


@torch.no_grad()
def heads_data(predictor: ConceptPredictor, frames: np.ndarray, phrases: dict[int, str], instance_ids: np.ndarray,
               categories: np.ndarray, match_iou: float) -> dict[str, torch.Tensor]:
    """The two heads' inputs and targets on one clip: ``frames`` uint8 ``[S, s, s, 3]``, the queried ``phrases``
    (category id -> name), ``instance_ids [S, s, s]`` (track slot + 1, 0 background) and each slot's category
    ``[T]`` (-1 padding). ``predictor`` must use the heads' rules and no presence gate (what
    :func:`rule_predictor`), so the inputs do not depend on the heads being trained.

    Returns ``presence_x [S*K, 8]`` / ``presence_y [S*K]`` (the phrase has a visible instance on the view) and
    ``pair_x [P, 6]`` / ``pair_y [P]`` (:func:`vision.concept.association.labelled_pairs`)."""
    state = predictor.init_state(frames)
    for name in phrases.values():
        predictor.add_concept(state, name)
    views, _, features = predictor._proposals(state)
    features = features.cpu()  # [S, K, 8]
    labels = torch.zeros(features.shape[:2])
    for k, c in enumerate(phrases):
        slots = [t + 1 for t in range(len(categories)) if categories[t] == c]
        for s in range(len(views)):
            labels[s, k] = float(np.isin(instance_ids[s], slots).any())
    tracks, _, _ = predictor._associate(state, views, np.ones(features.shape[:2]))
    observations = [o for t in tracks for o in t.observations]
    pairs_x, pairs_y = labelled_pairs(observations, match_objects(observations, instance_ids, match_iou))
    return {"presence_x": features.reshape(-1, features.shape[-1]), "presence_y": labels.reshape(-1),
            "pair_x": pairs_x, "pair_y": pairs_y}


class ConceptModule(L.LightningModule):
    """Train the presence and association heads (module docstring).

    Args:
        config: the concept config (:class:`~vision.concept.task.ConceptConfig`); its ``detector`` / ``tracker``
            fields are replaced by those of the checkpoints when they are given.
        detector_checkpoint / tracker_checkpoint: the trained detector and tracker (checkpoints or model folders).
        match_iou: proposal-to-object matching.
        lr / weight_decay / warmup_steps: AdamW with warmup and cosine decay.
    """

    def __init__(self, config: ConceptConfig = ConceptConfig(), detector_checkpoint: str | None = None,
                 tracker_checkpoint: str | None = None, match_iou: float = 0.3,
                 lr: float = 3e-3, weight_decay: float = 0.01, warmup_steps: int = 20) -> None:
        super().__init__()
        config = ConceptConfig.from_value(config)
        if (detector_checkpoint is None) != (tracker_checkpoint is None):
            raise InputError("ConceptModule needs both detector_checkpoint and tracker_checkpoint, or neither")
        if detector_checkpoint is not None:
            fields = {k: v for k, v in config.to_dict().items() if k not in ("detector", "tracker")}
            if not config.competitors:
                fields.pop("competitors")
            self.model, config = from_parts(detector_checkpoint, tracker_checkpoint, **fields)
        else:
            self.model = build_model(config)
        for network in (self.model.detector, self.model.tracker):
            network.requires_grad_(False)
        self.save_hyperparameters(ignore=["config"])
        self.hparams["config"] = config.to_dict()
        self.config = config
        self._features: dict[tuple, dict[str, torch.Tensor]] = {}
        self.evaluator = TaskEvaluator("concept", split=self._scored_split)

    def on_save_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        """Record the task's name in the checkpoint (read by every loader, never guessed from a class name)."""
        checkpoint["task"] = self.evaluator.task

    @staticmethod
    def check_datamodule(datamodule: Any) -> None:
        """The heads' inputs are cached per clip, so training clips must not be augmented (each would be cached as
        first drawn): an :class:`~vision.errors.InputError` when ``datamodule`` augments its training clips."""
        hparams = getattr(datamodule, "hparams", {}) or {}
        if hparams.get("augment") and hparams.get("image_size") is not None:
            raise InputError("ConceptModule caches the heads' inputs per training clip, so its clips must not be "
                             "augmented: set data.init_args.augment: false")

    def on_fit_start(self) -> None:
        self.check_datamodule(getattr(self.trainer, "datamodule", None))

    def train(self, mode: bool = True) -> "ConceptModule":
        super().train(mode)
        self.model.detector.eval()  # frozen: their normalisation and dropout stay in inference mode
        self.model.tracker.eval()
        return self

    # ------------------------------------------------------------------ features of a clip

    def _names(self) -> dict[int, str]:
        """Category id -> name of the training splits."""
        names: dict[int, str] = {}
        for part in getattr(self.trainer.datamodule.train_dataset, "datasets", [self.trainer.datamodule.train_dataset]):
            for category_id, category in part.split.categories.items():
                names.setdefault(int(category_id), category["name"])
        return names

    @torch.no_grad()
    def clip_features(self, batch: dict[str, Any], b: int) -> dict[str, torch.Tensor]:
        """The heads' inputs and targets of clip ``b`` of ``batch`` (computed once per clip, then cached)."""
        key = (int(batch["video_id"][b]), tuple(int(i) for i in batch["image_ids"][b].tolist()))
        if key in self._features:
            return self._features[key]
        names = self._names()
        phrases = {c: name for c, name in sorted(names.items()) if name in set(batch["concepts"][b])}
        frames = (batch["images"][b].permute(0, 2, 3, 1).clamp(0, 1) * 255 + 0.5).to(torch.uint8).cpu().numpy()
        entry = heads_data(rule_predictor(self.model, self.config, self.device), frames, phrases, batch["instance_ids"][b].cpu().numpy(),
                           batch["category_ids"][b].cpu().numpy(), self.hparams.match_iou)
        self._features[key] = entry
        return entry

    # ------------------------------------------------------------------ training

    def training_step(self, batch: dict[str, Any], batch_idx: int) -> torch.Tensor:
        entries = [self.clip_features(batch, b) for b in range(len(batch["video_id"]))]
        presence_x = torch.cat([e["presence_x"] for e in entries]).to(self.device)
        presence_y = torch.cat([e["presence_y"] for e in entries]).to(self.device)
        pair_x = torch.cat([e["pair_x"] for e in entries]).to(self.device)
        pair_y = torch.cat([e["pair_y"] for e in entries]).to(self.device)
        presence = F.binary_cross_entropy_with_logits(self.model.presence(presence_x), presence_y)
        if len(pair_y):
            association = F.binary_cross_entropy_with_logits(self.model.association(pair_x), pair_y)
        else:  # no pair in these clips: a zero that still reaches every parameter
            association = self.model.association(pair_x.new_zeros(1, PAIR_FEATURES)).sum() * 0
        loss = presence + association
        log_losses(self, "train", {"loss": loss, "presence": presence, "association": association},
                   batch_size=len(entries))
        return loss

    def configure_optimizers(self) -> dict[str, Any]:
        params = list(self.model.presence.parameters()) + list(self.model.association.parameters())
        optimizer = torch.optim.AdamW(params, lr=self.hparams.lr, weight_decay=self.hparams.weight_decay)
        return warmup_cosine(optimizer, self.hparams.lr, self.hparams.warmup_steps,
                             self.trainer.estimated_stepping_batches)

    # ------------------------------------------------------------------ evaluation

    def _track_batch(self, batch: dict[str, Any], stage: str) -> list[tuple[int, list[dict]]]:
        datamodule = getattr(self.trainer, "datamodule", None)
        if datamodule is None or not hasattr(datamodule, "eval_dataset"):
            raise InputError("ConceptModule evaluates on a MultiViewDataModule's split; it got no datamodule")
        split = datamodule.eval_dataset(stage).split
        predictor = ConceptPredictor(self.model, self.config, device=self.device)
        out = []
        for video_id, image_ids in zip(batch["video_id"].tolist(), batch["image_ids"].tolist()):
            if image_ids[0] == video_frames(split, video_id)[0]["id"]:
                out.append((int(video_id), track_video(predictor, split, video_id)))
        return out

    def validation_step(self, batch: dict[str, Any], batch_idx: int) -> None:
        for key, results in self._track_batch(batch, "validate"):
            self.evaluator.process(key, results)

    def test_step(self, batch: dict[str, Any], batch_idx: int) -> None:
        for key, results in self._track_batch(batch, "test"):
            self.evaluator.process(key, results)

    def predict_step(self, batch: dict[str, Any], batch_idx: int) -> list[tuple[int, list[dict]]]:
        return self._track_batch(batch, "predict")

    def on_validation_epoch_end(self) -> None:
        self.evaluator.evaluate(self, "validate")

    def on_test_epoch_end(self) -> None:
        metrics = self.evaluator.evaluate(self, "test")
        self.evaluator.print_table(self, metrics, f"concept, {self.trainer.datamodule.split_path('test')}")

    def _scored_split(self, stage: str, results: list[dict]) -> str:
        return self.trainer.datamodule.split_path(stage)

#: the task's LightningModule (the registry's fixed name, vision.tasks.PARTS)
Module = ConceptModule
