"""Values that must agree between ``model:`` and ``data:`` are set once, in the model's config, and linked."""

from __future__ import annotations

import dataclasses

import lightning as L

from vision.task_config import TaskConfig
from vision.training.cli import VisionCLI


@dataclasses.dataclass
class LinkedConfig(TaskConfig):
    image_size: int = 64
    tools: list[str] = dataclasses.field(default_factory=lambda: ["spectrum"])
    max_frames: int = 16


class LinkedModule(L.LightningModule):
    def __init__(self, config: LinkedConfig = LinkedConfig(), lr: float = 1e-3) -> None:
        super().__init__()
        self.config = LinkedConfig.from_value(config)


class ImageData(L.LightningDataModule):
    def __init__(self, image_size: int | None = None, batch_size: int = 1) -> None:
        super().__init__()
        self.image_size = image_size


class ToolData(L.LightningDataModule):
    def __init__(self, tools: list[str] | None = None, image_size: int = 32, max_frames: int = 8) -> None:
        super().__init__()
        self.tools, self.image_size, self.max_frames = tools, image_size, max_frames


class PlainModule(L.LightningModule):
    def __init__(self, width: int = 3) -> None:
        super().__init__()


def _cli(*args: str) -> VisionCLI:
    return VisionCLI(args=["--trainer.logger", "false", *args], run=False)


def test_data_image_size_comes_from_the_model_config():
    cli = _cli("--model", f"{__name__}.LinkedModule", "--model.config.image_size", "96",
               "--data", f"{__name__}.ImageData")
    assert cli.model.config.image_size == 96 and cli.datamodule.image_size == 96


def test_tools_and_max_frames_are_linked_too():
    cli = _cli("--model", f"{__name__}.LinkedModule", "--model.config.tools", "[npr, codec]",
               "--model.config.max_frames", "4", "--data", f"{__name__}.ToolData")
    assert cli.datamodule.tools == ["npr", "codec"] and cli.datamodule.max_frames == 4
    assert cli.datamodule.image_size == 64


def test_classes_without_the_linked_fields_are_left_alone():
    cli = _cli("--model", f"{__name__}.PlainModule", "--data", f"{__name__}.ImageData", "--data.image_size", "40")
    assert cli.datamodule.image_size == 40


@dataclasses.dataclass
class OptionalConfig(TaskConfig):
    encoder: str | None = "minilm"
    name: str = "x"


class OptionalModule(L.LightningModule):
    def __init__(self, config: OptionalConfig = OptionalConfig()) -> None:
        super().__init__()
        self.config = OptionalConfig.from_value(config)


def test_a_dotted_null_override_gives_none_not_the_string_none():
    # jsonargparse turns --model.init_args.config.<field> null into "None" in subclass mode; the CLI restores None
    # for fields whose type admits it, and leaves a plain str field's value alone
    for args in (["--model.init_args.config.encoder", "null"], ["--model.init_args.config.encoder=null"],
                 ["--model.init_args.config", '{"encoder": null}']):
        cli = _cli("--model", f"{__name__}.OptionalModule", *args, "--data", f"{__name__}.ImageData")
        assert cli.model.config.encoder is None, args
    cli = _cli("--model", f"{__name__}.OptionalModule", "--model.init_args.config.name", "None",
               "--data", f"{__name__}.ImageData")
    assert cli.model.config.name == "None" and cli.model.config.encoder == "minilm"


def test_run_dir_moves_every_path_under_the_run(tmp_path):
    """``--run_dir`` rebases default_root_dir, the logger's save_dir and the checkpoint dirpaths of a real config
    (two ModelCheckpoints), leaving everything else as the config has it."""
    cli = VisionCLI(args=["--config", "configs/detection/tiny.yaml", "--run_dir", str(tmp_path / "long"),
                          "--trainer.max_steps", "5"], run=False)
    trainer = cli.trainer
    assert trainer.default_root_dir == str(tmp_path / "long")
    assert trainer.logger.save_dir == str(tmp_path / "long")
    dirpaths = [c.dirpath for c in trainer.callbacks if hasattr(c, "dirpath") and hasattr(c, "monitor")]
    assert dirpaths and all(d == str(tmp_path / "long" / "checkpoints") for d in dirpaths)
    assert trainer.max_steps == 5
