"""Every paper-scale recipe (vision.cli.recipe.RECIPES) runs on the CPU as it ships, at reduced size, on fixtures in
the upstream dataset layouts, so a recipe cannot rot.

For each recipe, in the test's own folder: the raw fixture is written where the recipe's prepare commands read it
(``datasets/DAVIS``, ``datasets/CO3D``, ...; the builders of tests/datasets), the checker lists what is missing and
each command it prints is run (the console script's ``main``, in this process), the checker then finds everything,
and the recipe's config trains through ``vision-train fit``:

- two optimisation steps, each followed by a validation that logs the config's checkpoint metric (``val/AP50``,
  ``val/J&F``, ``val/AUC@30``, ``val/AUC``);
- the same run stopped after one step and resumed from its ``last.ckpt`` to step two ends with every tensor of the
  uninterrupted run's state dict equal (``torch.equal``).

:data:`OVERRIDES` is the whole difference between a recipe as shipped and what runs here.
"""

from __future__ import annotations

import json
import math
import shlex
from importlib.metadata import entry_points
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from tests.datasets.test_converted_split_pipeline import _davis
from tests.datasets.test_prepare_co3d import CATEGORY, write_co3d
from tests.datasets.test_prepare_genvideo import layout  # noqa: F401  (a fixture)
from tests.datasets.test_prepare_oov_coco import coco, lvis  # noqa: F401  (fixtures)
from tests.datasets.test_prepare_vos import _youtube
from vision.cli import recipe
from vision.data.video import write_video
from vision.training.checkpoint_io import load_checkpoint
from vision.training.cli import main as train_main

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore")]  # trains every recipe three times

#: Every change made to a shipped recipe here, and why; nothing else differs.
#: - no GPU: the CPU, one device, no DDP (``accelerator``, ``devices``, ``strategy``);
#: - two steps, a validation after each, no sanity pass (``max_steps``, ``val_check_interval``,
#:   ``check_val_every_n_epoch``, ``num_sanity_val_steps``); batches of one, loaded in this process;
#: - reduced width and resolution: the tiny backbone at 32 px (``size`` / ``backbone``, ``image_size``, and the
#:   detector's ``feature_layers`` within the tiny backbone's 4 blocks), narrower heads;
#: - no weight files (``vggt_weights``, ``sam2_weights``, ``geometry_checkpoint`` null);
#: - data paths: the fixtures hold one CO3D category (apple), so the lists of ten are cut to it; 2 views per clip.
COMMON = ["--trainer.accelerator", "cpu", "--trainer.devices", "1", "--trainer.strategy", "auto",
          "--trainer.max_steps", "2", "--trainer.val_check_interval", "1", "--trainer.check_val_every_n_epoch", "null",
          "--trainer.num_sanity_val_steps", "0", "--trainer.enable_progress_bar", "false",
          "--data.init_args.batch_size", "1"]
_LOADER = ["--data.init_args.num_workers", "0"]
_CO3D = "datasets/co3d/apple/train.json"
OVERRIDES: dict[str, list[str]] = {
    "detection-voc": [*_LOADER, "--model.init_args.config.size", "tiny", "--model.init_args.config.image_size", "32",
                      "--model.init_args.config.feature_layers", "[1, -1]", "--model.init_args.config.channels", "32",
                      "--model.init_args.geometry_checkpoint", "null"],
    "tracking": [*_LOADER, "--model.init_args.config.backbone", "tiny", "--model.init_args.config.image_size", "32",
                 "--model.init_args.config.dim", "32", "--model.init_args.vggt_weights", "null",
                 "--model.init_args.sam2_weights", "null", "--data.init_args.views", "2",
                 "--data.init_args.train_split",
                 f"[datasets/ytvos/train.json, datasets/mose/train.json, datasets/davis2017/train.json, {_CO3D}]"],
    "geometry": [*_LOADER, "--model.init_args.config.size", "tiny", "--model.init_args.config.image_size", "32",
                 "--model.init_args.vggt_weights", "null", "--data.init_args.views", "2",
                 "--data.init_args.train_split", f"[{_CO3D}]"],
    "forensics": ["--model.init_args.config.image_size", "32", "--model.init_args.config.max_frames", "3",
                  "--model.init_args.config.hidden", "16"],
}
OVERRIDES["detection-coco"] = OVERRIDES["detection-voc"]


def _image(path: Path, width: int, height: int, seed: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    pixels = np.random.default_rng(seed).integers(0, 255, (height, width, 3), dtype=np.uint8)
    Image.fromarray(pixels).save(path, quality=95)


def _coco_images(doc: dict, folder: str) -> None:
    for img in doc["images"]:
        name = img.get("file_name") or "/".join(img["coco_url"].split("/")[-2:])
        _image(Path("datasets/coco") / (f"{folder}/{name}" if "file_name" in img else name), img["width"],
               img["height"], int(img["id"]))


def _raw_data(name: str, request: pytest.FixtureRequest) -> None:
    """The recipe's raw downloads, in the upstream layouts, where its prepare commands read them (cwd-relative)."""
    annotations = Path("datasets/coco/annotations")
    if name == "detection-voc":
        doc = request.getfixturevalue("coco")
        annotations.mkdir(parents=True)
        for side in ("train", "val"):
            (annotations / f"instances_{side}2017.json").write_text(json.dumps(doc))
            _coco_images(doc, f"{side}2017")
    elif name == "detection-coco":
        doc = request.getfixturevalue("lvis")
        annotations.mkdir(parents=True)
        for side in ("train", "val"):
            (annotations / f"lvis_v1_{side}.json").write_text(json.dumps(doc))
        _coco_images(doc, "")
    elif name in ("tracking", "geometry"):
        root = write_co3d(Path("datasets/CO3D"))
        lists = json.loads((root / CATEGORY / "set_lists" / "set_lists_manyview_dev_0.json").read_text())
        lists["val"] = lists["test"]  # the fixture's val list is empty; fewview_dev's is not
        (root / CATEGORY / "set_lists" / "set_lists_fewview_dev.json").write_text(json.dumps(lists))
        if name == "tracking":
            _davis(Path("datasets/DAVIS"))
            _youtube(Path("datasets/youtube-vos"), split="train")
            _youtube(Path("datasets/MOSE"), split="train")
    elif name == "forensics":
        request.getfixturevalue("pretrained_weights")  # the config's pretrained tools read registered files
        root = request.getfixturevalue("layout")
        clip = np.random.default_rng(1).integers(0, 255, (3, 16, 16, 3), dtype=np.uint8)
        for i in (8, 11):  # two more real videos, which the path hash puts on the val side beside two generated
            write_video(root / "real" / f"r{i}.mp4", clip, preset="ultrafast")
        Path("datasets").mkdir()
        Path("datasets/GenVideo").symlink_to(root)


def _run(command: str) -> None:
    """Run a printed prepare command through its console script's ``main``, in this process."""
    program, *args = shlex.split(command)
    (script,) = [e for e in entry_points(group="console_scripts") if e.name == program]
    assert script.load()(args) == 0, command


def _same(a: torch.Tensor, b: torch.Tensor) -> bool:
    """``torch.equal``, with NaN equal to NaN in the same places (the forensic detector keeps nan for unknown
    reference statistics)."""
    if a.is_floating_point() and b.is_floating_point():
        nan = a.isnan()
        return torch.equal(nan, b.isnan()) and torch.equal(a[~nan], b[~nan])
    return torch.equal(a, b)


def _monitor(config: dict) -> str:
    (metric,) = [c["init_args"]["monitor"] for c in config["trainer"]["callbacks"]
                 if c["init_args"].get("filename") == "best"]
    return metric


@pytest.mark.timeout(300)
@pytest.mark.parametrize("name", list(recipe.RECIPES))
def test_recipe_prepares_trains_validates_and_resumes_exactly(name, tmp_path, monkeypatch, request):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    config = recipe.config_path(name).resolve()
    overrides = [*COMMON, *OVERRIDES[name]]
    _raw_data(name, request)

    missing = [item for item in recipe.check(recipe.load_config(config, overrides)) if not item.present]
    assert missing and all(item.problem == "split not found" for item in missing)
    for command in dict.fromkeys(item.remedy for item in missing):
        _run(command)
    assert all(item.present for item in recipe.check(recipe.load_config(config, overrides)))

    args = ["fit", "--config", str(config), *overrides]
    whole = train_main([*args, "--run_dir", "runs/whole"])
    metric = _monitor(recipe.load_config(config))
    assert whole.trainer.global_step == 2
    assert math.isfinite(float(whole.trainer.callback_metrics[metric])), metric

    train_main([*args, "--run_dir", "runs/cut", "--trainer.max_steps", "1"])
    last = Path("runs/cut/checkpoints/last.ckpt")
    first = load_checkpoint(last)
    assert first["global_step"] == 1
    resumed = train_main([*args, "--run_dir", "runs/cut", "--ckpt_path", str(last)])
    assert resumed.trainer.global_step == 2

    expected = load_checkpoint("runs/whole/checkpoints/last.ckpt")["state_dict"]
    got = load_checkpoint(last)["state_dict"]
    assert expected.keys() == got.keys()
    differ = [key for key in expected if not _same(expected[key], got[key])]
    assert not differ, f"{len(differ)} of {len(expected)} tensors differ after resuming, e.g. {differ[:3]}"
    assert any(not _same(first["state_dict"][key], got[key]) for key in got), "the second step changed nothing"
