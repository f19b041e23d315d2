"""The training entry point for every task, built on :class:`lightning.pytorch.cli.LightningCLI`.

``python tools/train.py --config configs/<task>/<size>.yaml [--trainer.max_epochs 3 ...] [--ckpt_path last.ckpt]``

- YAML configs name the LightningModule and LightningDataModule by class path; any field can be overridden on the
  command line (``--model.init_args.lr 1e-3``).
- The resolved config is written to the run folder (``config.yaml`` beside the logs).
- ``fit`` validates with the task's own metric (``val/AP50``, ``val/J&F``, ``val/AUC``, ``val/abs_rel``, ... gathered
  across ranks, :mod:`vision.training.evaluator`); ``test --config C --ckpt_path P`` prints the test split's table;
  ``predict --config C --ckpt_path P [--results out.json]`` writes one merged COCO-format results file
  (:class:`~vision.training.writer.ResultsWriter`; default ``<default_root_dir>/predictions.json``) that
  ``vision evaluate`` scores to the same figures.
- Values that must agree between ``model:`` and ``data:`` are linked, not repeated: the data's ``image_size``
  (and, for forensics, ``tools`` and ``max_frames``) come from the model's ``config``.
- Checkpoints: the configs keep the best (by the task metric) and the last one; every write is atomic
  (:class:`~vision.training.checkpoint_io.AtomicCheckpointIO`) and reads use ``weights_only=True``.
- A SIGTERM (a scheduler's pre-emption) stops after the running batch, writes ``last.ckpt`` of that step and
  exits with status 143 (:class:`~vision.training.callbacks.StopCheckpoint`).
- Resume with ``--ckpt_path path/to/last.ckpt``: step count, optimizer and scheduler state, the random state and
  the data position continue exactly; on the CPU the resumed run ends with the weights of an uninterrupted one, bit
  for bit, and the same seed and thread count give the same model (``vision.data.sampler``).
- ``--run_dir DIR`` moves a run elsewhere: the config's ``trainer.default_root_dir`` and every path under it (the
  logger's ``save_dir``, the checkpoint callbacks' ``dirpath``) are rebased onto ``DIR``, so one config trains
  several runs side by side (``make train-long``: the same config, more steps, ``runs/<task>/long``).
- A config may stack on shared base files with a top-level ``base:`` key (:mod:`vision.training.compose` states
  the rule); such a ``--config`` is composed before LightningCLI reads it.
- Multi-GPU / multi-node scale comes from Lightning's strategies: ``--trainer.strategy ddp --trainer.devices 8
  --trainer.num_nodes 2`` (see ``configs/geometry/base_ddp.yaml``).
"""

from __future__ import annotations

import dataclasses
import importlib
import signal
import sys
import typing
from collections.abc import Sequence
from typing import Any, Optional

from jsonargparse import Namespace
from lightning.pytorch import LightningDataModule, LightningModule, Trainer
from lightning.pytorch.cli import LightningCLI
from lightning.pytorch.plugins.io import CheckpointIO
from lightning.pytorch.utilities.exceptions import SIGTERMException

from vision.data.files import environment_error, writable_folder
from vision.errors import DataError, VisionError
from vision.training.callbacks import FiniteLossGuard, RandomStateCheckpoint, StopCheckpoint
from vision.training.checkpoint_io import AtomicCheckpointIO, check_checkpoint_io, first_mismatch, load_checkpoint
from vision.training.compose import compose_arguments
from vision.training.writer import ResultsWriter

__all__ = ["VisionCLI", "main", "LINKS", "move_run"]

_SUBCOMMANDS = {"fit", "validate", "test", "predict"}

#: ``model.init_args.config.<field>`` -> ``data.init_args.<field>``: set once, in the model's config. A link whose
#: source or target a task's classes do not have is skipped for that task.
LINKS: tuple[str, ...] = ("image_size", "tools", "max_frames")


class VisionCLI(LightningCLI):
    """LightningCLI with our defaults: atomic checkpoints, a NaN guard, the random state in every checkpoint (exact
    resume, :class:`~vision.training.callbacks.RandomStateCheckpoint`) and the config saved in the run folder."""

    def __init__(self, args: Sequence[str] | None = None, run: bool = True) -> None:
        super().__init__(
            model_class=LightningModule,
            datamodule_class=LightningDataModule,
            subclass_mode_model=True,
            subclass_mode_data=True,
            save_config_kwargs={"overwrite": True},
            trainer_defaults={"callbacks": [FiniteLossGuard(), RandomStateCheckpoint(), StopCheckpoint(),
                                                        ResultsWriter()]},
            args=args,
            run=run,
        )

    def add_arguments_to_parser(self, parser: Any) -> None:
        for name in LINKS:
            parser.link_arguments(f"model.init_args.config.{name}", f"data.init_args.{name}", apply_on="parse")
        parser.add_argument("--results", type=Optional[str], default=None,
                            help="predict: the merged COCO-format results file to write "
                                 "(default <trainer.default_root_dir>/predictions.json)")
        parser.add_argument("--run_dir", type=Optional[str], default=None,
                            help="rebase trainer.default_root_dir and every path under it (logger save_dir, "
                                 "checkpoint dirpath) onto this folder")

    def parse_arguments(self, parser: Any, args: Any) -> None:
        """Compose each ``--config`` that names bases (:func:`~vision.training.compose.compose_arguments`), then
        parse as LightningCLI does (a dict or Namespace ``args`` as it is)."""
        if args is None:  # the command line; handed on as ``args`` it would make LightningCLI warn that both are given
            self.config = parser.parse_args(compose_arguments(sys.argv[1:]))
        else:
            super().parse_arguments(parser, args if isinstance(args, (dict, Namespace)) else compose_arguments(args))

    def before_instantiate_classes(self) -> None:
        """Restore ``None`` in the model's config: jsonargparse (4.x, subclass mode) turns a dotted override such as
        ``--model.init_args.config.text_encoder null`` into the string ``"None"``; a field whose type admits None
        and that holds that string gets None back (no such field takes the word "None" as a name)."""
        config = self.config[self.subcommand] if self.subcommand else self.config
        if config.get("run_dir"):
            writable_folder(str(config["run_dir"]), flag="--run_dir")  # one line now, not a traceback later
            move_run(config, str(config["run_dir"]))
        model = config.get("model")
        fields = model.get("init_args", {}).get("config") if model is not None else None
        if fields is None or not hasattr(fields, "items"):
            return
        try:
            module_name, _, class_name = str(model["class_path"]).rpartition(".")
            module_class = getattr(importlib.import_module(module_name), class_name)
            cls = typing.get_type_hints(module_class.__init__)["config"]
            hints = typing.get_type_hints(cls) if dataclasses.is_dataclass(cls) else {}
        except (ImportError, AttributeError, KeyError, TypeError, ValueError, NameError):
            return
        for name, value in list(fields.items()):
            if value == "None" and type(None) in typing.get_args(hints.get(name)):
                fields[name] = None

    def before_predict(self) -> None:
        results = self.config.get("predict", {}).get("results") if self.subcommand == "predict" else None
        for callback in self.trainer.callbacks:
            if isinstance(callback, ResultsWriter) and results:
                callback.output = results

    def _parse_ckpt_path(self) -> None:
        """Lightning reads ``--ckpt_path`` here with a bare ``torch.load``; an unreadable checkpoint is reported as
        :func:`load_checkpoint` reports it (a :class:`DataError` naming the file). A missing one is skipped here and
        refused by :class:`AtomicCheckpointIO` when ``fit`` restores it."""
        try:
            super()._parse_ckpt_path()
        except Exception:
            load_checkpoint(self.config[self.config["subcommand"]]["ckpt_path"])
            raise

    def instantiate_trainer(self, **kwargs: Any) -> Trainer:
        """Add :class:`AtomicCheckpointIO` unless the config already names a checkpoint I/O plugin."""
        plugins = self._get(self.config_init, "trainer.plugins", default=None) or []
        plugins = list(plugins) if isinstance(plugins, (list, tuple)) else [plugins]
        config = self.config[self.subcommand] if self.subcommand else self.config
        check_checkpoint_io(plugins, config.get("weights_only"))  # no plain torch.load of a checkpoint
        if not any(isinstance(p, CheckpointIO) for p in plugins):
            plugins.append(AtomicCheckpointIO())
        return super().instantiate_trainer(plugins=plugins, **kwargs)


def move_run(config: Any, run_dir: str) -> None:
    """Rebase ``trainer.default_root_dir`` of a parsed config, and every trainer path under it (logger
    ``init_args.save_dir``, callback ``init_args.dirpath``), onto ``run_dir`` (in place). A path outside the old root
    is left as it is; without an old root only ``default_root_dir`` is set."""
    trainer = config["trainer"]
    old = str(trainer.get("default_root_dir") or "").rstrip("/")

    def rebase(path: Any) -> Any:
        if not old or path is None or not isinstance(path, str):
            return path
        if path.rstrip("/") == old:
            return run_dir
        return run_dir.rstrip("/") + path[len(old):] if path.startswith(old + "/") else path

    trainer["default_root_dir"] = run_dir
    loggers = trainer.get("logger")
    callbacks = trainer.get("callbacks")
    for item in [*(loggers if isinstance(loggers, list) else [loggers]), *(callbacks or [])]:
        init_args = item.get("init_args") if hasattr(item, "get") else None  # a parsed Namespace or a plain dict
        if init_args is None:
            continue
        for key in ("save_dir", "dirpath"):
            if init_args.get(key) is not None:
                init_args[key] = rebase(init_args[key])


def main(argv: Sequence[str] | None = None) -> VisionCLI:
    """Run the CLI; ``fit`` is the default subcommand so ``train.py --config X.yaml`` trains. Bad input (a
    :class:`VisionError`, e.g. a missing or corrupt checkpoint) prints one ``error:`` line and exits with status 2."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] not in _SUBCOMMANDS and args[0] not in {"-h", "--help"}:
        args = ["fit", *args]
    try:
        if argv is None:  # LightningCLI reads sys.argv itself; passing args too would make it warn
            sys.argv[1:] = args
            return VisionCLI()
        return VisionCLI(args=args)
    except SIGTERMException:  # the stop checkpoint is written (StopCheckpoint); exit as a terminated process does
        raise SystemExit(128 + signal.SIGTERM) from None
    except Exception as exc:
        error = _vision_error(exc) or _weights_error(exc, args) or environment_error(exc)
        if error is None:
            raise
        print(f"error: {' '.join(str(error).split())}", file=sys.stderr)
        raise SystemExit(2) from None


def _weights_error(exc: BaseException, args: Sequence[str]) -> DataError | None:
    """A resumed checkpoint whose weights do not fit the model: Lightning loads them itself and raises torch's
    multi-line RuntimeError; say it in one line, naming the checkpoint and the first mismatch."""
    if not isinstance(exc, RuntimeError) or "Error(s) in loading state_dict" not in str(exc):
        return None
    path = _option(args, "--ckpt_path")
    return DataError(f"the checkpoint's weights do not fit the model ({first_mismatch(exc)})",
                     file=path, field=None if path else "ckpt_path")


def _vision_error(exc: BaseException | None) -> VisionError | None:
    """The :class:`VisionError` behind ``exc``, if any (jsonargparse wraps an error raised by a model's
    ``__init__``, e.g. a bad ``geometry_checkpoint``, in its own ValueError)."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, VisionError):
            return exc
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return None


def _option(args: Sequence[str], name: str) -> str | None:
    """The value of ``name`` on the command line (``name VALUE`` or ``name=VALUE``), or None."""
    for i, arg in enumerate(args):
        if arg == name and i + 1 < len(args):
            return args[i + 1]
        if arg.startswith(name + "="):
            return arg.split("=", 1)[1]
    return None
