"""The one definition of the OOV detector: its config, how to build it, how to load it from a checkpoint.

:class:`DetectionConfig` holds every field that defines an :class:`~vision.detection.model.OOVDetector` (and the
prompt template its text table is built with), with the one copy of their defaults. :class:`OOVDetModule`
(``vision.detection.lightning``) stores it in its checkpoints as ``hyper_parameters["config"]`` (a plain dict) and
the detector's weights under ``model.``; :func:`load` rebuilds the detector from such a checkpoint
(``torch.load(weights_only=True)``). The predictor, the benchmarks and the demo build and load through here.

The training vocabulary (``class_names`` / ``category_ids``) is not part of the config: the detector itself is
vocabulary-free (its text table is an input), and the vocabulary is fixed by the training data, possibly only when
training starts. It is stored beside the config in the checkpoint's hyper-parameters and read by
``load(..., with_vocabulary=True)`` (the predictor's default vocabulary).

This module is inference code: it never imports :mod:`vision.training`.
"""

from __future__ import annotations

import dataclasses
import string
from pathlib import Path
from typing import ClassVar, Literal, NamedTuple, overload

import torch

from vision.checkpoint import load_weights, read_task_checkpoint
from vision.detection.model import OOVDetector
from vision.detection.vocabulary import DEFAULT_TEMPLATE
from vision.errors import DataError
from vision.export.model_card import model_card
from vision.geometry.model import BACKBONE_CONFIGS
from vision.geometry.task import MAX_IMAGE_SIZE, check_image_size, check_patch_embed_weights
from vision.model_folder import ModelFolder, write_model_folder
from vision.task_config import TaskConfig, checked
from vision.text import TEXT_DIM

__all__ = ["Config", "DetectionConfig", "TrainingVocabulary", "build_model", "load", "save"]


@dataclasses.dataclass
class DetectionConfig(TaskConfig):
    """What defines an OOV detector.

    Args:
        body: what finds the boxes: ``vggt`` (the geometry backbone (S = 1) + feature pyramid + dense head, trained
            here; the fields ``size`` to ``pixel_stem`` and ``patch_embed_weights`` are its) or ``yolox-nano``
            (:class:`~vision.detection.yolox_body.YOLOXBody`: the pretrained YOLOX-nano's boxes and objectness,
            region embeddings in the text space trained here; ``image_size`` a multiple of 32, its input side).
        body_weights: the ``yolox-nano`` body's pretrained weights, read when the detector is first built: the
            registered name ``yolox-nano`` (``vision fetch-weights``); None: a random body (for tests). Not read
            again by :func:`load` (the checkpoint holds the weights).
        freeze_body: keep the ``yolox-nano`` body's network fixed (only its embedding projection trains).
        competitor_similarity: with a body that knows names of its own (``yolox-nano``: COCO-80), those names
            that no vocabulary name explains (text cosine under this) compete for the OOV column, so an object of
            a known class the vocabulary does not name is unknown
            (:func:`~vision.detection.vocabulary.competitor_rows`); None: no competitors.
        size: backbone size (a key of :data:`vision.geometry.model.BACKBONE_CONFIGS`: ``tiny``, ``tiny_mobilenet``,
            ``base``, ``vggt_1b``).
        image_size: the square model input side in pixels (a multiple of the patch size); the data's
            ``image_size`` is linked to it by the CLI.
        feature_layers: aggregator layers whose patch maps feed the pyramid (negative = from the end), each within
            the backbone's depth.
        channels: pyramid / head width (a multiple of 8: its group norms take 8 groups; with ``pixel_stem`` 8 or
            a multiple of 16, as the stem's width is half of it, at least 8).
        embed_dim: region embedding dimension ``D``, the text encoder's (:data:`vision.text.TEXT_DIM`).
        temperature: cosine-classifier temperature ``tau``.
        num_oov_prompts: learnable OOV prompt vectors ``M`` (used when ``oov_class``).
        oov_class: False builds the closed-vocabulary baseline (no OOV column, no prompts).
        score_threshold: detections at or under this score are dropped before NMS.
        nms_iou: class-aware NMS IoU. max_detections: per image, after NMS. pre_nms_topk: boxes kept before NMS.
        prompt_template: text prompt per class name (``template.format(name)``), for the text table: one ``{}``
            and no other replacement field (a literal brace is written ``{{`` or ``}}``).
        pixel_stem: a small conv stem on the pixels added to the feature pyramid
            (:class:`~vision.detection.head.PixelStem`; a backbone whose patch size is a power of two); False: the
            backbone's patch maps alone.
        text_projection: learn a linear map (identity at start) of the text rows, applied to every vocabulary
            including zero-shot names; False: the frozen text embeddings.
        patch_embed_weights: weights of the backbone's patch embedding, read when the detector is first built
            (:attr:`vision.geometry.task.GeometryConfig.patch_embed_weights`): for ``tiny_mobilenet``
            ``mobilenetv2-imagenet`` (the registered ImageNet MobileNetV2) or a local file; None: a random stem
            (for tests). Not read again by :func:`load` (the checkpoint holds the weights); refused for a size
            whose patch embedding reads none (``tiny``, ``base``).
    """

    task: ClassVar[str] = "detection"  # the registry name its checkpoints and model folders record

    body: str = checked("vggt", choices=("vggt", "yolox-nano"))
    body_weights: str | None = checked(None, choices=("yolox-nano",))
    freeze_body: bool = True
    competitor_similarity: float | None = checked(None, low=-1.0, high=1.0)
    size: str = checked("tiny", choices=BACKBONE_CONFIGS)
    image_size: int = checked(64, low=8, high=MAX_IMAGE_SIZE)
    feature_layers: list[int] = checked(factory=lambda: [1, -1], low=-64, high=63, items=(1, 8))
    channels: int = checked(96, low=8, high=1024, multiple_of=8)
    embed_dim: int = checked(TEXT_DIM, low=1, high=4096)
    temperature: float = checked(0.05, low=0.001, high=10.0)
    num_oov_prompts: int = checked(1, low=1, high=64)
    oov_class: bool = True
    score_threshold: float = checked(0.05, low=0.0, high=1.0)
    nms_iou: float = checked(0.5, low=0.0, high=1.0)
    max_detections: int = checked(100, low=1, high=10_000)
    pre_nms_topk: int = checked(1000, low=1, high=100_000)
    prompt_template: str = checked(DEFAULT_TEMPLATE, max_chars=1000)
    pixel_stem: bool = False
    text_projection: bool = False
    patch_embed_weights: str | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.body == "yolox-nano":
            if self.image_size % 32:
                raise self.field_error("image_size", "must be a multiple of 32 for the yolox-nano body")
        else:
            check_image_size(self, self.size)
            if self.body_weights is not None:
                raise self.field_error("body_weights", "is for the yolox-nano body; the vggt body reads "
                                                       "patch_embed_weights")
        check_patch_embed_weights(self, BACKBONE_CONFIGS[self.size]["patch_embed"])
        depth = int(BACKBONE_CONFIGS[self.size]["depth"])
        for index, layer in enumerate(self.feature_layers):
            if not -depth <= layer < depth:
                raise self.field_error(f"feature_layers[{index}]", f"must be in [-{depth}, {depth - 1}], the layers "
                                                                   f"of the {self.size} backbone", layer)
        patch = int(BACKBONE_CONFIGS[self.size]["patch_size"])
        if self.pixel_stem and (patch < 4 or patch & (patch - 1)):
            raise self.field_error("pixel_stem", f"needs a power-of-two patch size; the {self.size} backbone's is "
                                                 f"{patch}")
        if self.pixel_stem and self.channels % 16 and self.channels != 8:
            raise self.field_error("channels", "must be 8 or a multiple of 16 with pixel_stem (the stem's width is "
                                               "half of it)")
        if not _one_name_field(self.prompt_template):
            raise self.field_error("prompt_template", "must hold one '{}' (the class name) and no other replacement "
                                                      "field; write a literal brace as '{{' or '}}'")


def _one_name_field(template: str) -> bool:
    """Whether ``template.format(name)`` puts the name in its one ``{}`` (no other field, no attribute or index)."""
    try:
        fields = [name for _, name, _, _ in string.Formatter().parse(template) if name is not None]
        template.format("name")
    except (ValueError, IndexError, KeyError):
        return False
    return fields == [""]


def build_model(config: DetectionConfig | dict | None = None) -> OOVDetector:
    """A freshly initialised :class:`OOVDetector` for ``config`` (a config, a mapping of its fields, or None for
    the defaults). ``config.patch_embed_weights`` is read here."""
    config = DetectionConfig.from_value(config)
    if config.body == "yolox-nano":
        return _yolox_detector(config)
    return OOVDetector(
        size=config.size, image_size=config.image_size, feature_layers=config.feature_layers,
        channels=config.channels, embed_dim=config.embed_dim,
        num_oov_prompts=config.num_oov_prompts if config.oov_class else 0, temperature=config.temperature,
        score_threshold=config.score_threshold, nms_iou=config.nms_iou, max_detections=config.max_detections,
        pre_nms_topk=config.pre_nms_topk, pixel_stem=config.pixel_stem,
        text_projection=config.text_projection, patch_embed_weights=config.patch_embed_weights)


def _yolox_detector(config: DetectionConfig) -> OOVDetector:
    """The detector on the YOLOX-nano body; with ``config.body_weights`` the network's pretrained weights and the
    embedding projection started from the COCO names' text rows (:class:`~vision.detection.yolox_body.YOLOXBody`)."""
    from vision.detection.yolox_body import YOLOXBody

    text_init = None
    pretrained = None
    if config.body_weights is not None:
        from vision.detection.vocabulary import encode_vocabulary
        from vision.weights.nets.onnx_models import COCO_CLASSES
        from vision.weights.nets.yolox import load_yolox_nano

        with torch.device("cpu"):  # the file's tensors, whatever the default device the detector is built on
            pretrained = load_yolox_nano(config.body_weights)
            text_init = encode_vocabulary(list(COCO_CLASSES), config.prompt_template)
    body = YOLOXBody(config.embed_dim, freeze=config.freeze_body, text_init=text_init)
    if pretrained is not None:
        body.net.load_state_dict(pretrained.state_dict())
    return OOVDetector(
        body=body, embed_dim=config.embed_dim,
        num_oov_prompts=config.num_oov_prompts if config.oov_class else 0, temperature=config.temperature,
        score_threshold=config.score_threshold, nms_iou=config.nms_iou, max_detections=config.max_detections,
        pre_nms_topk=config.pre_nms_topk, text_projection=config.text_projection)


class TrainingVocabulary(NamedTuple):
    """The class names a checkpoint was trained with and their COCO category ids (one per name)."""

    class_names: list[str]
    category_ids: list[int]


@overload
def load(checkpoint: str | Path, device: str | torch.device = "cpu", *,
         with_vocabulary: Literal[False] = False) -> tuple[OOVDetector, DetectionConfig]: ...


@overload
def load(checkpoint: str | Path, device: str | torch.device = "cpu", *,
         with_vocabulary: Literal[True]) -> tuple[OOVDetector, DetectionConfig, TrainingVocabulary | None]: ...


def load(checkpoint: str | Path, device: str | torch.device = "cpu", *, with_vocabulary: bool = False
         ) -> tuple[OOVDetector, DetectionConfig] | tuple[OOVDetector, DetectionConfig, TrainingVocabulary | None]:
    """The detector of an :class:`~vision.detection.lightning.OOVDetModule` checkpoint (read with
    ``weights_only=True``) or of a detection model folder (:func:`save`, ``vision-export``), in eval mode, on
    ``device``, and its config: ``(model, config)``. The detector is built without ``patch_embed_weights`` (the
    file is not needed: the checkpoint holds the weights). With ``with_vocabulary``, also the training vocabulary
    stored beside the config (None when it holds none, e.g. a module saved before it saw its training data):
    ``(model, config, vocabulary)``, from the same one read of the file.

    Raises:
        DataError: the file is missing, unreadable, not a detection checkpoint, its weights do not fit the config,
            or its training vocabulary is not a list of names with one category id each (names the file).
    """
    config, weights, ckpt = read_task_checkpoint(checkpoint, DetectionConfig, prefix="model.", map_location=device)
    model = build_model(config.replace(patch_embed_weights=None, body_weights=None))  # the checkpoint's replace them
    load_weights(model, weights, checkpoint)
    model = model.to(device).eval()
    vocabulary = _training_vocabulary(ckpt["hyper_parameters"], checkpoint)
    return (model, config, vocabulary) if with_vocabulary else (model, config)


def _training_vocabulary(hparams: dict, checkpoint: str | Path) -> TrainingVocabulary | None:
    """The ``class_names`` / ``category_ids`` of a checkpoint's hyper-parameters, checked (None without names)."""
    names, ids = hparams.get("class_names"), hparams.get("category_ids")
    if names is None:
        return None
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise DataError("the training vocabulary must be a list of names", file=checkpoint,
                        field="hyper_parameters.class_names")
    if not isinstance(ids, list) or len(ids) != len(names) or \
            not all(isinstance(i, int) and not isinstance(i, bool) for i in ids):
        raise DataError("the training vocabulary must have one integer category id per name", file=checkpoint,
                        field="hyper_parameters.category_ids")
    return TrainingVocabulary(list(names), list(ids))


def save(model: OOVDetector, config: DetectionConfig | dict | None, folder: str | Path,
         vocabulary: TrainingVocabulary | None = None, overwrite: bool = False) -> Path:
    """Write ``model`` as a model folder (``config.json``, ``model.safetensors``, ``README.md``) that :func:`load`
    reads, with the training ``vocabulary`` that ``load(..., with_vocabulary=True)`` returns (None: none); see
    :func:`vision.model_folder.write_model_folder` for ``folder`` and ``overwrite``."""
    config = DetectionConfig.from_value(config)
    hparams = {} if vocabulary is None else {"class_names": list(vocabulary.class_names),
                                             "category_ids": list(vocabulary.category_ids)}
    return write_model_folder(ModelFolder("detection", config.to_dict(), {"model": model.state_dict()}, hparams),
                              folder, overwrite=overwrite, card=model_card)

#: the task's config class (the registry's fixed name, vision.tasks.PARTS)
Config = DetectionConfig
