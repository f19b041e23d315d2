"""The README's "bring your own data" path, end to end: a DAVIS 2017 folder (written here in the upstream layout) is
converted by vision-prepare-vos, G2TAM trains on it with configs/tracking/tiny.yaml (no depth, no cameras, no text
encoder), predicts a results file and vision-evaluate scores it."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from tests.datasets.test_prepare_vos import _mask
from vision.cli.evaluate import main as evaluate_main
from vision.prepare import vos
from vision.training.cli import main as train_main

pytestmark = pytest.mark.slow  # trains, predicts and evaluates

ROOT = Path(__file__).resolve().parents[2]
W, H, FRAMES = 64, 48, 5


def _davis(root):
    rng = np.random.default_rng(0)
    for name, shift in (("bear", 0), ("dog", 6)):
        for t in range(FRAMES):
            image = rng.integers(0, 60, (H, W, 3), dtype=np.uint8)
            x0 = 8 + 4 * t + shift
            image[10:30, x0:x0 + 20] = 200
            path = root / "JPEGImages" / "480p" / name / f"{t:05d}.jpg"
            path.parent.mkdir(parents=True, exist_ok=True)
            Image.fromarray(image).save(path, quality=95)
            ids = np.zeros((H, W), np.uint8)
            ids[10:30, x0:x0 + 20] = 1
            _mask(root / "Annotations" / "480p" / name / f"{t:05d}.png", ids)
    (root / "ImageSets" / "2017").mkdir(parents=True)
    (root / "ImageSets" / "2017" / "train.txt").write_text("bear\n")
    (root / "ImageSets" / "2017" / "val.txt").write_text("dog\n")


@pytest.mark.filterwarnings("ignore")
def test_convert_train_predict_evaluate_on_a_davis_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the config's run folder (runs/tracking/tiny) lands in tmp_path
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    _davis(tmp_path / "DAVIS")
    assert vos.main(["DAVIS", "--layout", "davis", "--subset", "train", "val", "--out", "davis"]) == 0
    common = ["--config", str(ROOT / "configs" / "tracking" / "tiny.yaml"),
              "--model.init_args.config.text_encoder", "null", "--model.init_args.config.dim", "32",
              "--data.init_args.train_split", "davis/train.json", "--data.init_args.val_split", "davis/val.json",
              "--data.init_args.num_workers", "0", "--data.init_args.batch_size", "1", "--data.init_args.views", "2"]
    train_main(["fit", *common, "--trainer.max_steps", "2", "--trainer.val_check_interval", "1",
                "--trainer.limit_val_batches", "1"])
    ckpt = tmp_path / "runs" / "tracking" / "tiny" / "checkpoints" / "last.ckpt"
    assert ckpt.is_file()
    train_main(["predict", *common, "--ckpt_path", str(ckpt), "--data.init_args.predict_split", "davis/val.json",
                "--results", "davis_val.json"])
    results = json.loads((tmp_path / "davis_val.json").read_text())
    assert {r["prompt_type"] for r in results} == {"point", "box"}  # text is dropped without a text encoder
    assert len(results) == 2 * FRAMES  # every frame of the one track, once per prompt type
    assert evaluate_main(["--task", "tracking", "--split", "davis/val.json", "--results", "davis_val.json",
                          "--out", "metrics.json"]) == 0
    metrics = json.loads((tmp_path / "metrics.json").read_text())
    # the one track, scored once per prompt type
    assert metrics["num_tracks"] == 2 and sorted(metrics["prompt_types"]) == ["box", "point"]
    assert 0.0 <= metrics["J&F"] <= 1.0 and np.isfinite(metrics["point/J&F"])
