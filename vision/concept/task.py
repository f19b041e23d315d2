"""The concept task's one definition: its config, the model it builds, how to load and save it.

:class:`ConceptModel` is the trained detector and the trained tracker, on the shared backbone family, plus the two
small learned heads of :mod:`vision.concept.heads`. :class:`ConceptConfig` holds the detector's and the tracker's
configs (their fields, as their checkpoints store them), the detector's other known names (the competitors of
:mod:`vision.concept.proposals`) and the inference settings; :func:`load` rebuilds the whole model from a
:class:`~vision.concept.lightning.ConceptModule` checkpoint or a model folder (``weights_only=True`` /
safetensors). Inference code imports this module, never :mod:`vision.training`.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, ClassVar

import torch
from torch import nn

from vision.checkpoint import load_weights, read_task_checkpoint
from vision.concept.heads import AssociationHead, PresenceHead
from vision.detection.model import OOVDetector
from vision.detection.task import DetectionConfig
from vision.detection.task import build_model as build_detector
from vision.export.model_card import model_card
from vision.geometry.task import MAX_IMAGE_SIZE
from vision.model_folder import ModelFolder, write_model_folder
from vision.task_config import TaskConfig, checked
from vision.tracking.model import G2TAM
from vision.tracking.task import TrackingConfig
from vision.tracking.task import build_model as build_tracker

__all__ = ["Config", "ConceptConfig", "ConceptModel", "build_model", "load", "save"]

#: what a checkpoint whose weights do not fit its config should do
RETRAIN_HINT = "retrain it (make train-concept after deleting runs/concept)"


@dataclasses.dataclass
class ConceptConfig(TaskConfig):
    """What defines a concept tracker.

    Args:
        image_size: the square input size of both networks (the data is resized to it; the CLI links it).
        detector: the :class:`~vision.detection.task.DetectionConfig` fields of its detector.
        tracker: the :class:`~vision.tracking.task.TrackingConfig` fields of its tracker (a G2TAM).
        competitors: the detector's other known names, which compete with the phrases under ``rejection``.
        hidden: width of the two heads.
        rejection: proposals must win against the competitors and the OOV column (False: the ablation).
        learned_presence / learned_association: use the learned heads (False: their fixed rules).
        score_threshold: proposals at or under this score are dropped. nms_iou: per-phrase NMS.
        max_per_view: proposals kept per view. association_threshold: see :class:`~vision.concept.association.
            Associator`. rule_distance: the association rule's 3D distance (in the normalised scene frame).
        presence_threshold: a phrase's instances are dropped on views whose presence is under it.
        max_phrases: phrases (and exemplar-only concepts) per call.
    """

    task: ClassVar[str] = "concept"  # the registry name its checkpoints and model folders record

    image_size: int = checked(64, low=8, high=MAX_IMAGE_SIZE)
    detector: dict = dataclasses.field(default_factory=dict)
    tracker: dict = dataclasses.field(default_factory=dict)
    competitors: list[str] = checked(factory=list, items=(0, 10_000), max_chars=1000)
    hidden: int = checked(32, low=1, high=4096)
    rejection: bool = True
    learned_presence: bool = True
    learned_association: bool = True
    score_threshold: float = checked(0.3, low=0.0, high=1.0)
    nms_iou: float = checked(0.5, low=0.0, high=1.0)
    max_per_view: int = checked(16, low=1, high=1000)
    association_threshold: float = checked(0.5, low=0.0, high=1.0)
    rule_distance: float = checked(0.15, low=0.0, high=10.0, open_low=True)
    presence_threshold: float = checked(0.5, low=0.0, high=1.0)
    max_phrases: int = checked(16, low=1, high=1024)

    def __post_init__(self) -> None:
        super().__post_init__()
        self.detector = self.nested("detector", DetectionConfig).to_dict()
        self.tracker = self.nested("tracker", TrackingConfig).to_dict()
        if self.tracker["architecture"] != "g2tam":
            raise self.field_error("tracker.architecture", "must be 'g2tam': the concept tracker is a G2TAM",
                                   self.tracker["architecture"])
        for name, part in (("detector", self.detector), ("tracker", self.tracker)):
            if part["image_size"] != self.image_size:
                raise self.field_error(f"{name}.image_size", f"must be the concept image_size {self.image_size}",
                                       part["image_size"])
        for index, name in enumerate(self.competitors):
            if not name.strip():
                raise self.field_error(f"competitors[{index}]", "must be a name, not empty or blank", name)


class ConceptModel(nn.Module):
    """The detector, the tracker and the two learned heads.

    Args:
        detector: an :class:`~vision.detection.model.OOVDetector`. tracker: a :class:`~vision.tracking.model.G2TAM`.
        hidden: width of :class:`~vision.concept.heads.PresenceHead` and
            :class:`~vision.concept.heads.AssociationHead`.
    """

    def __init__(self, detector: OOVDetector, tracker: G2TAM, hidden: int = 32) -> None:
        super().__init__()
        self.detector = detector
        self.tracker = tracker
        self.presence = PresenceHead(hidden)
        self.association = AssociationHead(hidden)

    @property
    def image_size(self) -> int:
        return self.tracker.image_size


def build_model(config: ConceptConfig | dict | None = None) -> ConceptModel:
    """The concept tracker ``config`` describes (untrained weights)."""
    config = ConceptConfig.from_value(config)
    tracker = build_tracker(config.tracker)
    return ConceptModel(build_detector(config.detector), tracker, hidden=config.hidden)


def load(checkpoint: str | Path, device: str | torch.device = "cpu") -> tuple[ConceptModel, ConceptConfig]:
    """``(model in eval mode on device, config)`` of a :class:`~vision.concept.lightning.ConceptModule`
    checkpoint or a concept model folder (:func:`save`); a file that is not one, or whose weights do not fit its
    config, is a :class:`~vision.errors.DataError` naming it."""
    config, weights, _ = read_task_checkpoint(checkpoint, ConceptConfig, prefix="model.", map_location=device)
    # the checkpoint holds the backbones' weights: their patch-embed weights files are not read again
    unweighted = {part: {**getattr(config, part), "patch_embed_weights": None} for part in ("detector", "tracker")}
    model = build_model(config.replace(**unweighted))
    load_weights(model, weights, checkpoint, hint=RETRAIN_HINT)
    return model.to(device).eval(), config


def save(model: ConceptModel, config: ConceptConfig | dict | None, folder: str | Path,
         overwrite: bool = False) -> Path:
    """Write ``model`` as a model folder that :func:`load` reads (:func:`vision.model_folder.write_model_folder`)."""
    config = ConceptConfig.from_value(config)
    return write_model_folder(ModelFolder("concept", config.to_dict(), {"model": model.state_dict()}), folder,
                              overwrite=overwrite, card=model_card)


def from_parts(detector_checkpoint: str | Path, tracker_checkpoint: str | Path,
               **fields: Any) -> tuple[ConceptModel, ConceptConfig]:
    """A concept model whose detector and tracker come from their trained checkpoints (or model folders), the heads
    untrained; the detector's training vocabulary becomes the competitors. ``fields``: other config fields."""
    from vision.detection.task import load as load_detector
    from vision.tracking.task import load as load_tracker

    detector, detector_config, vocabulary = load_detector(detector_checkpoint, with_vocabulary=True)
    tracker, tracker_config = load_tracker(tracker_checkpoint)
    fields.setdefault("competitors", list(vocabulary.class_names) if vocabulary is not None else [])
    config = ConceptConfig(detector=detector_config.to_dict(), tracker=tracker_config.to_dict(), **fields)
    model = ConceptModel(detector, tracker, hidden=config.hidden)
    return model, config

#: the task's config class (the registry's fixed name, vision.tasks.PARTS)
Config = ConceptConfig
