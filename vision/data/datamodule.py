"""LightningDataModules over COCO-format splits, one per task.

Constructor arguments are plain (paths as ``str``, ints, bools) so they can be set from YAML configs.
Augmentation and resizing come from ``vision.data.transforms`` (imported lazily in ``setup``); they apply only
when ``image_size`` is given: with ``image_size=None`` images keep their native size and are not augmented.

Reproducible and exactly resumable training (:class:`ResumableDataModule`, the base of every datamodule here):
the training order and every random draw of the data come from the run's seed (``seed_everything``, read as
``torch.initial_seed()`` when the training loader is built) through :class:`~vision.data.sampler.ResumableSampler`;
the datamodule counts the training batches the loop has taken in the current epoch and saves that position in
each checkpoint, and a resumed run continues the epoch at exactly that sample. The same seed and thread count
give the same batches, however many DataLoader workers.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Sequence

import lightning as L
import torch
from torch.utils.data import DataLoader, Dataset

from vision.data.coco import load_split
from vision.data.datasets import (
    DetectionImageDataset,
    KeyedConcatDataset,
    MultiViewClipDataset,
    collate_clips,
    collate_detection,
)
from vision.data.sampler import ResumableSampler
from vision.errors import InputError

__all__ = ["ResumableDataModule", "SplitDataModule", "MultiViewDataModule", "DetectionDataModule", "EVAL_STAGES"]

#: Lightning stages that read an evaluation split; ``fit`` validates on ``val_split``.
EVAL_STAGES = ("validate", "test", "predict")


def _positive(name: str, value: int, minimum: int = 1) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise InputError(f"{name} must be an integer >= {minimum}, got {value!r}")


class ResumableDataModule(L.LightningDataModule):
    """A LightningDataModule whose training data is reproducible from the run's seed and resumes mid-epoch.

    Subclasses build their loaders with :meth:`train_loader` and :meth:`eval_loader`, and keep the paths of their
    evaluation splits in ``val_split``, ``test_split`` and ``predict_split`` (the latter two default to the one before
    them); :meth:`split_path` says which split a stage reads, so a task scores its results against that split. The datamodule's
    ``state_dict`` (saved by Lightning in every checkpoint) is ``{"epoch", "batches"}``: the epoch and the number
    of training batches this rank's loop has taken in it; ``load_state_dict`` makes the next training loader start
    right after them.
    """

    def __init__(self) -> None:
        super().__init__()
        self._epoch, self._batches = 0, 0
        self._resume_from: dict[str, int] | None = None

    val_split: str
    test_split: str | None = None
    predict_split: str | None = None

    def split_path(self, stage: str) -> str:
        """The split file a Lightning stage evaluates on: ``validate`` (and ``fit``'s validation) ``val_split``,
        ``test`` ``test_split``, ``predict`` ``predict_split``, each defaulting to the one before."""
        if stage == "predict" and self.predict_split:
            return self.predict_split
        if stage in ("test", "predict") and self.test_split:
            return self.test_split
        return self.val_split

    @staticmethod
    def _seed() -> int:
        return int(torch.initial_seed())

    def _world(self) -> tuple[int, int]:
        trainer = self.trainer
        return (int(trainer.world_size), int(trainer.global_rank)) if trainer is not None else (1, 0)

    def _batches_per_epoch(self, dataset: Dataset, batch_size: int) -> int:
        """Training batches one rank takes in an epoch (the sampler pads ranks to equal length; no drop_last)."""
        world, _ = self._world()
        return math.ceil(math.ceil(len(dataset) / world) / batch_size)

    def _resume_position(self, dataset: Dataset, batch_size: int) -> tuple[int, int] | None:
        """The pending resume as ``(epoch, batches taken in it)``, or None. A checkpoint written after the last
        batch of epoch ``e`` (by ``on_train_batch_end``, at that batch's validation, or at a stop) holds epoch ``e``
        with every batch taken: the next batch is the first of epoch ``e + 1``, which is what Lightning runs next."""
        if self._resume_from is None:
            return None
        epoch, batches = self._resume_from["epoch"], self._resume_from["batches"]
        if batches >= self._batches_per_epoch(dataset, batch_size):
            epoch, batches = epoch + 1, 0
        return epoch, batches

    def training_epoch(self, dataset: Dataset, batch_size: int) -> int:
        """The epoch the next training loader over ``dataset`` serves: the resumed one while a resume is pending,
        else the trainer's current epoch. Lightning builds the loader (and starts iterating it) before it tells the
        sampler the epoch, and on resume it does not restart the iterator, so the loader must know it itself."""
        position = self._resume_position(dataset, batch_size)
        if position is not None:
            return position[0]
        trainer = self.trainer
        return int(trainer.current_epoch) if trainer is not None else 0

    def train_loader(self, dataset: Dataset, batch_size: int, num_workers: int, collate: Callable | None,
                     with_seeds: bool = True) -> DataLoader:
        """Shuffled training loader over ``dataset`` (items read with sample keys when ``with_seeds``), set to the
        epoch it serves (:meth:`training_epoch`) and, after a resume, to the position the checkpoint holds."""
        world, rank = self._world()
        sampler = ResumableSampler(len(dataset), self._seed(), shuffle=True, with_seeds=with_seeds,
                                   num_replicas=world, rank=rank)
        position = self._resume_position(dataset, batch_size)
        if position is not None:
            self._epoch, self._batches = position
            sampler.resume(self._epoch, self._batches * batch_size)
            self._resume_from = None
        else:
            sampler.set_epoch(self.training_epoch(dataset, batch_size))
        return self._loader(dataset, batch_size, num_workers, collate, sampler)

    def eval_loader(self, dataset: Dataset, batch_size: int, num_workers: int, collate: Callable | None) -> DataLoader:
        """Loader in dataset order (validation, test, prediction)."""
        return self._loader(dataset, batch_size, num_workers, collate, None)

    def _loader(self, dataset: Dataset, batch_size: int, num_workers: int, collate: Callable | None,
                sampler: ResumableSampler | None) -> DataLoader:
        # its own generator: creating an iterator (which draws the workers' base seed) leaves the global RNG alone
        generator = torch.Generator().manual_seed(self._seed())
        return DataLoader(dataset, batch_size=batch_size, sampler=sampler, shuffle=False, num_workers=num_workers,
                          collate_fn=collate, persistent_workers=num_workers > 0, drop_last=False,
                          generator=generator)

    def on_after_batch_transfer(self, batch: Any, dataloader_idx: int) -> Any:
        """Count the training batches the loop takes (a prefetched batch counts once the loop takes it)."""
        trainer = self.trainer
        if trainer is not None and trainer.training and not trainer.sanity_checking:
            if trainer.current_epoch != self._epoch:
                self._epoch, self._batches = trainer.current_epoch, 0
            self._batches += 1
        return batch

    def state_dict(self) -> dict[str, int]:
        return {"epoch": self._epoch, "batches": self._batches}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        try:
            epoch, batches = int(state_dict["epoch"]), int(state_dict["batches"])
        except (KeyError, TypeError, ValueError) as exc:
            raise InputError(f"the checkpoint's datamodule state is not {{epoch, batches}}: {state_dict!r}") from exc
        self._resume_from = {"epoch": epoch, "batches": batches}


def _eval_stages(stage: str | None) -> tuple[str, ...]:
    """The evaluation stages a ``setup(stage)`` prepares (``fit`` validates; None: all)."""
    if stage is None:
        return EVAL_STAGES
    return ("validate",) if stage == "fit" else (stage,) if stage in EVAL_STAGES else ()


class SplitDataModule(ResumableDataModule):
    """A datamodule over COCO-format split files: one training dataset (``train_dataset``, built by the subclass's
    ``setup``) and one evaluation dataset per split file (``eval_datasets``: path -> dataset, built once through
    :meth:`_setup_eval`), all batched with the class's ``collate`` function."""

    collate: Callable[[list], Any]  # a subclass sets it: ``collate = staticmethod(collate_...)``
    batch_size: int
    num_workers: int

    def __init__(self) -> None:
        super().__init__()
        self.train_dataset: Dataset | None = None
        self.eval_datasets: dict[str, Dataset] = {}

    def _setup_eval(self, stage: str | None, build: Callable[[str], Dataset]) -> None:
        """Build the evaluation dataset of every split ``stage`` reads that is not built yet (``build(path)``)."""
        for which in _eval_stages(stage):
            path = self.split_path(which)
            if path not in self.eval_datasets:
                self.eval_datasets[path] = build(path)

    @property
    def val_dataset(self) -> Dataset:
        return self.eval_dataset("validate")

    def eval_dataset(self, stage: str) -> Dataset:
        """The dataset of the split ``stage`` evaluates on (no augmentation; built on first use)."""
        if self.split_path(stage) not in self.eval_datasets:
            self.setup(stage)
        return self.eval_datasets[self.split_path(stage)]

    def train_dataloader(self) -> DataLoader:
        if self.train_dataset is None:
            self.setup("fit")
        return self.train_loader(self.train_dataset, self.batch_size, self.num_workers, self.collate)

    def val_dataloader(self) -> DataLoader:
        return self.eval_loader(self.eval_dataset("validate"), self.batch_size, self.num_workers, self.collate)

    def test_dataloader(self) -> DataLoader:
        return self.eval_loader(self.eval_dataset("test"), self.batch_size, self.num_workers, self.collate)

    def predict_dataloader(self) -> DataLoader:
        return self.eval_loader(self.eval_dataset("predict"), self.batch_size, self.num_workers, self.collate)


class MultiViewDataModule(SplitDataModule):
    """Multi-view clips for geometry and tracking (batches from :func:`vision.data.datasets.collate_clips`:
    ``images`` float [B, S, 3, H, W] in [0, 1], cameras OpenCV camera-from-world, instance ids 0 = background).

    Args:
        train_split / val_split: paths of split JSON files; ``train_split`` may be a list of paths (their clips are
            concatenated, e.g. a ``video`` and an ``unordered`` split).
        test_split / predict_split: the splits of ``test`` and ``predict`` (default: ``val_split``).
        views: S, images per clip.
        batch_size / num_workers: DataLoader settings.
        image_size: target size handed to ``build_multiview_transform``; None keeps native sizes, no augmentation.
        augment: random augmentation of training clips (when ``image_size`` is given).
        stride: frame step inside windows of ordered videos.
        random_window: training draws one random window per video and epoch instead of enumerating windows.
        max_stride: training windows of ordered videos take every s-th frame, s drawn in ``stride..max_stride``
            (default ``stride``).
        curriculum: the viewpoint-change curriculum of training clips: the largest relative rotation (degrees) of a
            clip's views to its first view, one value per epoch, the last one held (e.g. ``[15, 30, 60, 180]``;
            see :class:`~vision.data.datasets.MultiViewClipDataset`). The training loader is rebuilt every
            epoch for it, so the trainer needs ``reload_dataloaders_every_n_epochs: 1``. None: no limit.
    """

    collate = staticmethod(collate_clips)

    def __init__(self, train_split: str | Sequence[str], val_split: str, views: int = 4, batch_size: int = 1,
                 num_workers: int = 0, image_size: int | None = None, augment: bool = True, stride: int = 1,
                 random_window: bool = True, test_split: str | None = None, predict_split: str | None = None,
                 max_stride: int | None = None, curriculum: Sequence[float] | None = None) -> None:
        super().__init__()
        if isinstance(train_split, str):
            train_split = [train_split]
        train_split = list(train_split)
        if not train_split or not all(isinstance(p, str) for p in train_split):
            raise InputError(f"train_split must be a path or a non-empty list of paths, got {train_split!r}")
        _positive("views", views)
        _positive("batch_size", batch_size)
        _positive("num_workers", num_workers, minimum=0)
        _positive("stride", stride)
        if image_size is not None:
            _positive("image_size", image_size)
        if max_stride is not None:
            _positive("max_stride", max_stride, minimum=stride)
        if curriculum is not None:
            curriculum = [float(a) for a in curriculum]
            if not curriculum or not all(a > 0 for a in curriculum):
                raise InputError(f"curriculum must be a non-empty list of positive angles (degrees), got {curriculum!r}")
            if not random_window:
                raise InputError("curriculum needs random_window=True (it limits the randomly drawn windows)")
        self.save_hyperparameters()
        self.train_split, self.val_split = train_split, val_split
        self.test_split, self.predict_split = test_split, predict_split
        self.views, self.stride = views, stride
        self.batch_size, self.num_workers = batch_size, num_workers
        self.image_size, self.augment, self.random_window = image_size, augment, random_window
        self.max_stride, self.curriculum = max_stride, curriculum

    def _transforms(self) -> tuple[Callable | None, Callable | None]:
        if self.image_size is None:
            return None, None
        from vision.data.transforms import build_multiview_transform

        return (build_multiview_transform(self.image_size, train=self.augment),
                build_multiview_transform(self.image_size, train=False))

    def setup(self, stage: str | None = None) -> None:
        train_tf, val_tf = self._transforms()
        if stage in (None, "fit") and self.train_dataset is None:
            parts = [MultiViewClipDataset(load_split(path), self.views, self.stride, transform=train_tf,
                                          random_window=self.random_window, max_stride=self.max_stride)
                     for path in self.train_split]
            self.train_dataset = parts[0] if len(parts) == 1 else KeyedConcatDataset(parts)
        self._setup_eval(stage, lambda path: MultiViewClipDataset(load_split(path), self.views, self.stride,
                                                                  transform=val_tf, random_window=False))


    def category_names(self) -> tuple[str, ...]:
        """The category names of the splits read so far, in category-id order, underscores as spaces (how text
        prompts name them): the training splits' once :meth:`setup` ran for ``fit``, else the evaluation splits'."""
        built = [self.train_dataset] if self.train_dataset is not None else list(self.eval_datasets.values())
        names: dict[int, str] = {}
        for dataset in built:
            for part in getattr(dataset, "datasets", [dataset]):
                for category_id, category in part.split.categories.items():
                    names.setdefault(category_id, category["name"])
        return tuple(names[key].replace("_", " ") for key in sorted(names))

    def view_angle_limit(self, epoch: int) -> float | None:
        """The curriculum's largest viewpoint change (degrees) in ``epoch`` (0-based), or None without one."""
        if self.curriculum is None:
            return None
        return self.curriculum[min(max(int(epoch), 0), len(self.curriculum) - 1)]

    def train_dataloader(self) -> DataLoader:
        if self.curriculum is not None:
            trainer = self.trainer
            if trainer is None:
                raise InputError("MultiViewDataModule.curriculum: the training loader needs the trainer's epoch")
            if trainer.reload_dataloaders_every_n_epochs != 1:
                raise InputError("MultiViewDataModule.curriculum changes the training clips every epoch: set "
                                 "trainer.reload_dataloaders_every_n_epochs: 1 (it is "
                                 f"{trainer.reload_dataloaders_every_n_epochs})")
            if self.train_dataset is None:
                self.setup("fit")
            limit = self.view_angle_limit(self.training_epoch(self.train_dataset, self.batch_size))
            parts = getattr(self.train_dataset, "datasets", [self.train_dataset])
            for part in parts:
                part.max_view_angle = limit
        return super().train_dataloader()


class DetectionDataModule(SplitDataModule):
    """Single images with boxes / masks for detection (batches from :func:`vision.data.datasets.collate_detection`).

    Args:
        train_split / val_split: paths of split JSON files.
        batch_size / num_workers: DataLoader settings.
        image_size: target size handed to ``build_detection_transform``; None keeps native sizes, no augmentation.
        augment: random augmentation of training images (when ``image_size`` is given).
        train_category_splits: training keeps only annotations of categories whose ``split`` is listed (a category
            without ``split`` counts as ``"iv"``); None keeps all. Validation always keeps all annotations.
        test_split / predict_split: the splits of ``test`` and ``predict`` (default: ``val_split``).
        mosaic: probability that a training sample is a mosaic of four images (:func:`vision.data.mosaic.mosaic`;
            0 never); validation never.
        keep_aspect: resize to the longer side ``image_size`` instead of the square (a pretrained body's letterbox
            geometry, :class:`~vision.data.transforms.DetectionTransform`); the batch is padded at the bottom/right.
    """

    collate = staticmethod(collate_detection)

    def __init__(self, train_split: str, val_split: str, batch_size: int = 2, num_workers: int = 0,
                 image_size: int | None = None, augment: bool = True,
                 train_category_splits: list[str] | None = None, test_split: str | None = None,
                 predict_split: str | None = None, mosaic: float = 0.0, keep_aspect: bool = False) -> None:
        super().__init__()
        _positive("batch_size", batch_size)
        _positive("num_workers", num_workers, minimum=0)
        if image_size is not None:
            _positive("image_size", image_size)
        self.save_hyperparameters()
        self.train_split, self.val_split = train_split, val_split
        self.test_split, self.predict_split = test_split, predict_split
        self.batch_size, self.num_workers = batch_size, num_workers
        self.image_size, self.augment = image_size, augment
        self.mosaic = float(mosaic)
        self.keep_aspect = bool(keep_aspect)
        self.train_category_splits = list(train_category_splits) if train_category_splits is not None else None

    def _transforms(self) -> tuple[Callable | None, Callable | None]:
        if self.image_size is None:
            return None, None
        from vision.data.transforms import build_detection_transform

        return (build_detection_transform(self.image_size, train=self.augment, keep_aspect=self.keep_aspect),
                build_detection_transform(self.image_size, train=False, keep_aspect=self.keep_aspect))

    def setup(self, stage: str | None = None) -> None:
        train_tf, val_tf = self._transforms()
        if stage in (None, "fit") and self.train_dataset is None:
            split = load_split(self.train_split)
            categories = None
            if self.train_category_splits is not None:
                categories = split.category_ids(self.train_category_splits)
            self.train_dataset = DetectionImageDataset(split, transform=train_tf, categories=categories,
                                                       mosaic=self.mosaic)
        self._setup_eval(stage, lambda path: DetectionImageDataset(load_split(path), transform=val_tf))
