"""Training, validating, testing and predicting the forensic detector with Lightning.

``python tools/train.py [fit|validate|test|predict] --config configs/forensics/tiny.yaml [--ckpt_path P]``

Tool features are extracted once per split (cached per tool, :func:`vision.forensics.features.split_features`); an
MLP trains on them. The detector's standardisation and real reference come from the training features (the whole
training split, on every rank). Every validation epoch gathers the validation features of all ranks (one row per
video), re-fits the calibration (logit / real-anomaly standardisation, Platt scaling), the real-calibrated
threshold and the per-tool reliability on them (every rank computes them from the same rows; rank 0's are then
broadcast so they agree bit for bit), then scores the calibrated probabilities with
:func:`vision.evaluation.evaluate.evaluate` through the module's :class:`~vision.training.evaluator.TaskEvaluator`
(whose results hook does the re-fit) (``val/AUC``, ``val/AP``, ``val/EER``, ``val/TPR@5%FPR``,
``val/ACC``, ``val/real_acc``, per generator and ``val/macro/...``). Those buffers belong to the detector, so the
checkpoint written after that validation (ModelCheckpoint saves at the end of validation, after this module's
epoch-end hook) holds the calibration that produced the logged figures. ``test`` scores the test split at the
checkpoint's own threshold and prints the table (:func:`vision.evaluation.forensics.format_forensics`, the
threshold in full); ``predict`` returns ``(video_id, [{video_id, score, verdict}])``
(:func:`vision.forensics.results.results_of`)
pairs for :class:`vision.training.writer.ResultsWriter` and prints the threshold that ``vision evaluate
--task forensics --threshold T`` scores them at (to the figures ``test`` prints).
Results: ``score`` = calibrated probability of generated; ``verdict`` = ``generated`` when ``score >= threshold``,
else ``real`` (the detector's decision; the evidence-graph verdict of a single video is
:meth:`ForensicsPredictor.analyze`'s).

Geometry backbone (``config.geometry``): the module holds the shared geometry backbone frozen (``self.backbone``:
eval mode, no gradients, not in the optimizer), started from ``geometry_checkpoint`` (a ``GeometryModule``
checkpoint of that size); the forensic checkpoint keeps its weights under ``backbone.``. In ``setup`` the module hands
it to the datamodule (:meth:`ForensicFeatureDataModule.set_backbone`), whose ``geometry`` and ``planar`` tools then
measure its cues, so the features of every stage come from the very weights the checkpoint holds (those restored
from ``--ckpt_path`` included: the datamodule shares the module, it does not copy it).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

import lightning as L
import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset

from vision.data.coco import read_json
from vision.data.datamodule import EVAL_STAGES, ResumableDataModule
from vision.errors import DataError, InputError
from vision.evaluation.forensics import format_forensics
from vision.forensics.features import ToolBackbone, backbone_fingerprint, resolve_workers, split_features
from vision.forensics.model import calibrate, feature_matrix, training_loss
from vision.forensics.protocol import footages_of
from vision.forensics.results import results_of
from vision.forensics.task import DEFAULT_TOOLS, ForensicsConfig, build_backbone, build_model, load_geometry_backbone
from vision.forensics.tools import build_tools, feature_names
from vision.training.evaluator import TaskEvaluator, log_losses

__all__ = ["Module", "ForensicFeatureDataModule", "ForensicsModule", "FeatureDataset"]


class FeatureDataset(Dataset):
    """Rows of a feature matrix: ``{"features": float32 [F] (nan = not measured), "label": float32 [] (1 =
    generated), "video_id": int64 []}``; batches stack them to ``[B, F]``, ``[B]``, ``[B]``."""

    def __init__(self, features: np.ndarray, labels: np.ndarray, video_ids: Sequence[int]) -> None:
        if not len(features) == len(labels) == len(video_ids):
            raise InputError(f"features, labels and video ids differ in length: {len(features)}, {len(labels)}, "
                             f"{len(video_ids)}")
        self.features = torch.as_tensor(np.asarray(features, np.float32))
        self.labels = torch.as_tensor(np.asarray(labels), dtype=torch.float32)
        self.video_ids = torch.as_tensor(np.asarray(video_ids, np.int64))

    def __len__(self) -> int:
        return len(self.labels)

    def __getitem__(self, index: int) -> dict[str, torch.Tensor]:
        return {"features": self.features[index], "label": self.labels[index], "video_id": self.video_ids[index]}


class ForensicFeatureDataModule(ResumableDataModule):
    """Tool features of labelled-video splits (batches: see :class:`FeatureDataset`). Every stage reads the videos
    with a ``label`` and a ``file_name`` (:class:`~vision.data.datasets.LabelledVideoDataset`), predict included;
    a single unlabelled video is :meth:`ForensicsPredictor.analyze`'s.

    Args:
        train_split / val_split: split JSON files with labelled videos (both classes needed).
        test_split / predict_split: the splits of ``test`` and ``predict`` (default: the one before).
        tools / image_size / max_frames: the feature list and clip policy; the CLI links them from the model's
            ``config`` (do not set them in ``data:``).
        cache_dir: feature cache folder (None: no cache).
        batch_size: training batch size (validation, test and prediction read their whole split in one batch).
        exclude_generators / exclude_families: videos whose ``generator`` / ``family`` is listed are left out of the
            training and validation splits (leave-one-generator-out, leave-family-out; test and predict splits keep
            every video).
        exclude_footage: the same for videos drawing pixels from a listed footage
            (:func:`vision.forensics.protocol.footages_of`: leave-one-source-out).
        workers: processes measuring a split's videos at once when its features are not cached (0: one per CPU
            core this process may use; :func:`~vision.forensics.features.split_features`); the features are the same
            for every value. Under DDP each rank starts its own.

    Videos labelled ``cgi`` (computer graphics that is not AI-generated) are neither class: training and validation
    (which fits the calibration and threshold) leave them out; test and predict score them, and the evaluation
    reports them apart (``cgi/false_alarm``).

    Geometry backbone: :meth:`set_backbone` (called by :meth:`ForensicsModule.setup` with the module's frozen
    backbone) gives it to the ``geometry`` and ``planar`` tools; ``names`` then include their backbone features, and
    the feature cache and the in-memory features are keyed by the backbone's weights
    (:func:`~vision.forensics.features.backbone_fingerprint`). Features are extracted on first use (the module's
    ``setup`` in ``fit``, else the dataloaders), after the module has handed its backbone over.
    """

    def __init__(self, train_split: str, val_split: str, tools: Sequence[str] = DEFAULT_TOOLS,
                 image_size: int = ForensicsConfig.image_size, max_frames: int = ForensicsConfig.max_frames,
                 cache_dir: str | None = None, batch_size: int = 64, test_split: str | None = None,
                 predict_split: str | None = None, exclude_generators: Sequence[str] = (),
                 exclude_families: Sequence[str] = (), exclude_footage: Sequence[str] = (),
                 workers: int = 1) -> None:
        super().__init__()
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise InputError(f"batch_size must be an integer >= 1, got {batch_size!r}")
        resolve_workers(workers)  # refuses a bad value here, before any video is read
        self.save_hyperparameters()
        self.train_split, self.val_split = train_split, val_split
        self.test_split, self.predict_split = test_split, predict_split
        self.tools, self.image_size, self.max_frames = list(tools), image_size, max_frames
        self.cache_dir, self.batch_size, self.workers = cache_dir, batch_size, workers
        self.exclude_generators, self.exclude_families = set(exclude_generators), set(exclude_families)
        self.exclude_footage = set(exclude_footage)
        self.backbone: torch.nn.Module | None = None
        self.tool_objects = build_tools(self.tools)
        self.names = feature_names(self.tool_objects)
        self._arrays: dict[tuple[str, bool, str | None], tuple[np.ndarray, np.ndarray, list[dict]]] = {}

    def set_backbone(self, backbone: torch.nn.Module | None) -> None:
        """Measure the ``geometry`` and ``planar`` tools' backbone cues with ``backbone`` (a frozen
        :class:`~vision.geometry.model.GeometryBackbone`, shared, not copied; None: classical cues only); ``names``
        follow. Features extracted before are kept, keyed by the backbone they came from."""
        if backbone is self.backbone:
            return
        self.backbone = backbone
        self.tool_objects = build_tools(self.tools, backbone=None if backbone is None else ToolBackbone(backbone))
        self.names = feature_names(self.tool_objects)

    def features(self, split: str, exclude: bool = False) -> tuple[np.ndarray, np.ndarray, list[dict]]:
        """``(features float32 [N, F] (nan = missing), labels int64 [N] (1 generated, 0 real, -1 cgi), videos
        [{video_id, generator, family, source}])`` of a split file's labelled videos; with ``exclude`` (training and
        validation) without the cgi videos and those of ``exclude_generators`` / ``exclude_families`` /
        ``exclude_footage``."""
        key = (split, exclude, None if self.backbone is None else backbone_fingerprint(self.backbone))
        if key not in self._arrays:
            rows, labels, videos = split_features(split, self.tool_objects, self.image_size, self.max_frames,
                                                  self.cache_dir, workers=self.workers)
            x = feature_matrix(rows, self.names)
            if exclude:
                keep = np.array([label >= 0 and not self.excluded(v) for v, label in zip(videos, labels)], bool)
                x, labels, videos = x[keep], labels[keep], [v for v, k in zip(videos, keep) if k]
            self._arrays[key] = (x, labels, videos)
        return self._arrays[key]

    def excluded(self, video: dict) -> bool:
        """Whether a video (``{generator, family, source, ...}``) belongs to an excluded generator, family or
        footage."""
        return (video.get("generator") in self.exclude_generators or video.get("family") in self.exclude_families
                or bool(footages_of(video) & self.exclude_footage))

    def train_features(self) -> tuple[np.ndarray, np.ndarray]:
        """The training split's ``(features [N, F], labels [N])``; both classes required."""
        x, y, _ = self.features(self.train_split, exclude=True)
        if len(np.unique(y)) < 2:
            raise DataError("a forensic training split needs both real and generated videos",
                            file=self.train_split, field="videos[].label", value=sorted(set(y.tolist())))
        return x, y

    def eval_dataset(self, stage: str) -> FeatureDataset:
        """The labelled videos of the split ``stage`` (``validate``, ``test``, ``predict``) reads."""
        if stage not in EVAL_STAGES:
            raise InputError(f"stage must be one of {EVAL_STAGES}, got {stage!r}")
        x, y, videos = self.features(self.split_path(stage), exclude=stage == "validate")
        return FeatureDataset(x, y, [v["video_id"] for v in videos])

    def setup(self, stage: str | None = None) -> None:
        """Nothing to do: the features are extracted on first use, with the backbone the module has handed over
        (Lightning calls this hook before the module's ``setup``)."""

    def train_dataloader(self) -> DataLoader:
        x, y = self.train_features()
        ids = [v["video_id"] for v in self.features(self.train_split, exclude=True)[2]]
        return self.train_loader(FeatureDataset(x, y, ids), self.batch_size, 0, None, with_seeds=False)

    def _eval_loader(self, stage: str) -> DataLoader:
        dataset = self.eval_dataset(stage)
        return self.eval_loader(dataset, len(dataset), 0, None)

    def val_dataloader(self) -> DataLoader:
        return self._eval_loader("validate")

    def test_dataloader(self) -> DataLoader:
        return self._eval_loader("test")

    def predict_dataloader(self) -> DataLoader:
        return self._eval_loader("predict")


class ForensicsModule(L.LightningModule):
    """The detector's LightningModule (``self.model``: :func:`vision.forensics.task.build_model` of ``config``).

    Args:
        config: the model (:class:`ForensicsConfig`, or a mapping of its fields; None: the defaults).
        lr / weight_decay: AdamW. pass_rate: the share of real validation videos below the threshold.
        geometry_checkpoint: a ``GeometryModule`` checkpoint whose backbone (of size ``config.geometry``) the
            ``geometry`` and ``planar`` tools use, frozen (``self.backbone``; see the module docstring). Needed to
            ``fit`` a config with a backbone, unless ``--ckpt_path`` restores a forensic checkpoint (which holds
            the backbone's weights).
    """

    def __init__(self, config: ForensicsConfig = ForensicsConfig(), lr: float = 3e-3, weight_decay: float = 5e-2,
                 pass_rate: float = 0.95, geometry_checkpoint: str | None = None) -> None:
        super().__init__()
        config = ForensicsConfig.from_value(config)
        if not 0.0 < pass_rate < 1.0:
            raise InputError(f"pass_rate must be in (0, 1), got {pass_rate!r}")
        # the geometry checkpoint is not a hyper-parameter: the forensic checkpoint holds the backbone's weights, so
        # load_from_checkpoint must not need that file again (on_save_checkpoint records where they came from)
        self.save_hyperparameters(ignore=["config", "geometry_checkpoint"])
        self.hparams["config"] = config.to_dict()
        self.config = config
        self.model = build_model(config)
        #: the frozen geometry backbone (None without ``config.geometry``); saved under ``backbone.``
        self.backbone = (load_geometry_backbone(config, geometry_checkpoint) if geometry_checkpoint
                         else build_backbone(config))
        self.geometry_checkpoint = str(geometry_checkpoint) if geometry_checkpoint else None
        self.evaluator = TaskEvaluator("forensics", results=self._results, split=self._scored_split,
                                       options=self._score_options)

    def train(self, mode: bool = True) -> "ForensicsModule":
        """Lightning's train / eval switch; the frozen backbone stays in eval mode."""
        super().train(mode)
        if self.backbone is not None:
            self.backbone.eval()
        return self

    def setup(self, stage: str | None = None) -> None:
        """Hand the backbone to the datamodule; before training, the standardisation and the real reference from
        the whole training split (the same on every rank; a resumed run then restores the checkpoint's, which are
        the same). The datamodule's tools and clip policy must be the config's, in every stage (a
        :class:`DataError` naming the field otherwise). Fitting a config with a backbone needs
        ``geometry_checkpoint`` or ``--ckpt_path`` (an :class:`InputError` otherwise: a random backbone's cues are
        noise)."""
        if (stage == "fit" and self.backbone is not None and self.geometry_checkpoint is None
                and self._trainer is not None and self.trainer.ckpt_path is None):
            raise InputError(f"config.geometry={self.config.geometry!r}: fitting needs the trained backbone; set "
                             "model.init_args.geometry_checkpoint to a GeometryModule checkpoint (e.g. "
                             "runs/geometry/tiny/checkpoints/last.ckpt) or resume with --ckpt_path")
        datamodule = self.trainer.datamodule if self._trainer is not None else None
        if datamodule is None:
            return
        if hasattr(datamodule, "set_backbone"):
            datamodule.set_backbone(self.backbone)
        for name in ("tools", "image_size", "max_frames"):  # linked from the config by tools/train.py
            if getattr(datamodule, name, None) != getattr(self.config, name):
                raise DataError(f"the datamodule's {name} differs from the model config's "
                                f"({getattr(self.config, name)!r}); set it once, in model.init_args.config",
                                field=f"data.init_args.{name}", value=getattr(datamodule, name, None))
        if list(getattr(datamodule, "names", self.model.feature_names)) != self.model.feature_names:
            raise DataError("the datamodule's feature names differ from the detector's (its tools were built "
                            f"{'with' if datamodule.backbone is not None else 'without'} a geometry backbone, "
                            f"config.geometry is {self.config.geometry!r})", field="data.init_args.tools",
                            value=getattr(datamodule, "tools", None))
        if stage != "fit":
            return
        x, y = datamodule.train_features()
        self.model.set_normalisation(x)
        self.model.set_reference(x, y)
        if hasattr(datamodule, "features"):  # the footage of each training row (the statistics' null)
            videos = datamodule.features(datamodule.train_split, exclude=True)[2]
            self.model.set_footage_null(x, y, ["+".join(sorted(footages_of(v))) for v in videos])

    def on_save_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        """Record where the backbone's weights came from (``forensics_backbone``: the geometry checkpoint given to
        this module, None after a restore, and the weights' fingerprint); informative only, nothing reads it."""
        checkpoint["task"] = self.evaluator.task  # the task is recorded, never guessed from a name
        if self.backbone is not None:
            checkpoint["forensics_backbone"] = {"geometry_checkpoint": self.geometry_checkpoint,
                                                "fingerprint": backbone_fingerprint(self.backbone)}

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        """Raw features ``[B, F]`` -> calibrated probability of generated ``[B]``."""
        return self.model.probability(features)

    def training_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> torch.Tensor:
        loss = training_loss(self.model, batch["features"], batch["label"])
        log_losses(self, "train", {"loss": loss}, len(batch["label"]))
        return loss

    def validation_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> None:
        """The loss, and each video's feature row and label for the calibration the epoch's end re-fits."""
        loss = training_loss(self.model, batch["features"], batch["label"])
        log_losses(self, "validate", {"loss": loss}, len(batch["label"]))
        rows = batch["features"].detach().cpu().tolist()
        for video_id, row, label in zip(batch["video_id"].tolist(), rows, batch["label"].tolist()):
            self.evaluator.process(int(video_id), (int(video_id), row, int(label)))

    def on_validation_epoch_end(self) -> None:
        """Score the gathered validation rows (:meth:`_results` re-fits the calibration on them) and log
        ``val/...``; Lightning's sanity check only empties the rows (the model is not calibrated on it)."""
        self.evaluator.evaluate(self, "validate")

    def _results(self, stage: str, items: list[Any]) -> list[dict]:
        """The evaluator's results hook. Test: the items are the steps' result lists, concatenated. Validation:
        the items are every rank's ``(video_id, feature row, label)`` (one per video, in video id order); the
        calibration, threshold and reliability are re-fitted on them (identical on every rank), then the results
        are the calibrated probabilities at the new threshold."""
        if stage != "validate":
            return [result for results in items for result in results]
        ids = [video_id for video_id, _, _ in items]
        x = np.asarray([row for _, row, _ in items], np.float32).reshape(len(items), -1)
        y = np.asarray([label for _, _, label in items], np.int64)
        calibrate(self.model, x, y, self.hparams.pass_rate)
        self._fit_score_null(ids, x, y)
        self._broadcast_calibration()
        with torch.no_grad():
            probabilities = self.model.probability(torch.as_tensor(x, device=self.model.threshold.device))
        return results_of(ids, probabilities.cpu().tolist(), float(self.model.threshold))

    def _fit_score_null(self, ids: list[int], x: np.ndarray, y: np.ndarray) -> None:
        """The detector's score null (:meth:`ForensicDetector.set_score_null`) from the real validation rows, grouped
        by the footage their videos draw on (read from the datamodule's validation split; no null without one), and
        its generated-side cut (:meth:`ForensicDetector.set_generated_cut`) from the generated validation rows."""
        datamodule = getattr(self.trainer, "datamodule", None)
        if not hasattr(datamodule, "features") or not getattr(datamodule, "val_split", None):
            return
        footage = {int(v["video_id"]): "+".join(sorted(footages_of(v)))
                   for v in datamodule.features(datamodule.val_split, exclude=True)[2]}
        real = [i for i, label in enumerate(y) if label == 0 and int(ids[i]) in footage]
        with torch.no_grad():
            scores = self.model.decision_score(torch.as_tensor(x, device=self.model.threshold.device)).cpu().numpy()
        self.model.set_score_null(scores[real], [footage[int(ids[i])] for i in real])
        self.model.set_generated_cut(scores[y == 1])

    def _broadcast_calibration(self) -> None:
        """Every rank re-fits the calibration on the same gathered rows; rank 0's buffers are then broadcast so the
        ranks hold them bit for bit (a kernel that differs between devices cannot make them drift)."""
        if self.trainer.world_size <= 1:
            return
        values = self.trainer.strategy.broadcast({name: b.detach().cpu() for name, b in self.model.named_buffers()},
                                                 src=0)
        with torch.no_grad():
            for name, buffer in self.model.named_buffers():
                buffer.copy_(values[name].to(buffer.device))

    def _scored_split(self, stage: str, results: list[dict]) -> str | dict:
        """The evaluator's split hook: the split of ``stage``; in validation only the videos it was given (without
        cgi and excluded generators / families)."""
        path = self.trainer.datamodule.split_path(stage)
        if stage != "validate":
            return path
        gt = read_json(path)
        scored = {int(r["video_id"]) for r in results}
        return dict(gt, videos=[v for v in gt["videos"] if "label" not in v or int(v["id"]) in scored])

    def _score_options(self, stage: str) -> dict[str, Any]:
        """The evaluator's options hook: results are scored at the detector's threshold."""
        return {"threshold": float(self.model.threshold)}

    def _split_name(self, stage: str) -> str:
        return Path(self.trainer.datamodule.split_path(stage)).stem

    def test_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> None:
        threshold = float(self.model.threshold)
        probabilities = self.model.probability(batch["features"]).cpu().tolist()
        for result in results_of(batch["video_id"].tolist(), probabilities, threshold):
            self.evaluator.process(result["video_id"], [result])

    def on_test_epoch_end(self) -> None:
        metrics = self.evaluator.evaluate(self, "test")
        if metrics is not None and self.trainer.is_global_zero:
            print(format_forensics(metrics, self._split_name("test")))

    def predict_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> list[tuple[int, list[dict]]]:
        """``[(video_id, [{video_id, score, verdict}])]`` for :class:`vision.training.writer.ResultsWriter`."""
        probabilities = self.model.probability(batch["features"]).cpu().tolist()
        results = results_of(batch["video_id"].tolist(), probabilities, float(self.model.threshold))
        return [(r["video_id"], [r]) for r in results]

    def on_predict_epoch_end(self) -> None:
        if self.trainer.is_global_zero:
            threshold = float(self.model.threshold)
            print(f"forensics: a score >= {threshold!r} is generated (the checkpoint's threshold, fixed on real "
                  f"validation videos); score the results with vision evaluate --task forensics "
                  f"--threshold {threshold!r}")

    def configure_optimizers(self) -> Any:
        return torch.optim.AdamW(self.model.parameters(), lr=self.hparams.lr,
                                 weight_decay=self.hparams.weight_decay)

#: the task's LightningModule (the registry's fixed name, vision.tasks.PARTS)
Module = ForensicsModule
