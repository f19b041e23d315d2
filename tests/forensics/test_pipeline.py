"""One checkpoint through the pipeline: ``tools/train.py test`` prints the table, ``predict`` writes results that
``vision evaluate`` scores to the same figures, and the LightningModule and ``ForensicsPredictor`` agree."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml

from tests.evaluation.conftest import evaluate_cli
from tests.forensics.conftest import FRAMES, SIZE
from vision.forensics.lightning import ForensicsModule
from vision.forensics.predictor import ForensicsPredictor
from vision.forensics.task import DEFAULT_TOOLS, ForensicsConfig, load
from vision.training.cli import main as train_main

pytestmark = pytest.mark.slow  # tools/train.py fit, test and predict


@pytest.fixture(scope="module")
def cli_run(trained_checkpoint: Path, tiny_split: dict[str, Path], tmp_path_factory: pytest.TempPathFactory
            ) -> tuple[Path, Path]:
    """``(config, checkpoint)``: a short ``tools/train.py fit`` on the tiny split (its cached features reused)
    keeping the best checkpoint by ``val/AUC``; the data's tools and clip policy come from the model config."""
    root = tmp_path_factory.mktemp("forensics_cli")
    config = ForensicsConfig(tools=list(DEFAULT_TOOLS), hidden=16, image_size=SIZE, max_frames=FRAMES)
    document = {
        "seed_everything": 0,
        "trainer": {"accelerator": "cpu", "devices": 1, "max_epochs": 10, "check_val_every_n_epoch": 5,
                    "logger": False, "enable_progress_bar": False, "enable_model_summary": False,
                    "default_root_dir": str(root / "run"),
                    "callbacks": [{"class_path": "lightning.pytorch.callbacks.ModelCheckpoint",
                                   "init_args": {"dirpath": str(root / "run" / "checkpoints"), "filename": "best",
                                                 "monitor": "val/AUC", "mode": "max", "save_last": True}}]},
        "model": {"class_path": "vision.forensics.lightning.ForensicsModule",
                  "init_args": {"config": config.to_dict(), "lr": 1e-2}},
        "data": {"class_path": "vision.forensics.lightning.ForensicFeatureDataModule",
                 "init_args": {"train_split": str(tiny_split["train"]), "val_split": str(tiny_split["val"]),
                               "cache_dir": str(trained_checkpoint.parent / "cache"), "batch_size": 8}},
    }
    path = root / "input" / "forensics.yaml"  # not config.yaml in the run folder: the CLI writes that one
    path.parent.mkdir()
    path.write_text(yaml.safe_dump(document))
    train_main(["fit", "--config", str(path)])
    return path, root / "run" / "checkpoints" / "best.ckpt"


def test_test_prints_the_table_and_evaluate_scores_predict_to_the_same_figures(
        cli_run: tuple[Path, Path], tiny_split: dict[str, Path], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    config_file, checkpoint = cli_run
    split = str(tiny_split["val"])
    cli = train_main(["test", "--config", str(config_file), "--ckpt_path", str(checkpoint),
                      "--data.init_args.test_split", split])
    tested = {k: float(v) for k, v in cli.trainer.callback_metrics.items()}
    printed = capsys.readouterr().out
    lines = printed.splitlines()
    for row in ("val", "simA", "simB", "macro", "all"):
        assert any(line.split()[:1] == [row] for line in lines), row
    threshold = re.search(r"threshold (\S+) fixed on real validation videos", printed).group(1)
    assert float(threshold) == float(load(checkpoint)[0].threshold)

    results = tmp_path / "results.json"
    train_main(["predict", "--config", str(config_file), "--ckpt_path", str(checkpoint),
                "--data.init_args.predict_split", split, "--results", str(results)])
    predicted = json.loads(results.read_text())
    assert [r["video_id"] for r in predicted] == sorted(v["id"] for v in json.loads(Path(split).read_text())["videos"])
    assert {r["verdict"] for r in predicted} <= {"generated", "real"}

    metrics_file = tmp_path / "metrics.json"
    assert evaluate_cli.main(["--split", split, "--results", str(results), "--task", "forensics",
                              "--threshold", threshold, "--out", str(metrics_file)]) == 0
    evaluated = json.loads(metrics_file.read_text())
    assert evaluated["threshold_source"] == "given"
    for name in ("AUC", "AP", "ACC", "real_acc", "fake_acc", "EER", "TPR@5%FPR", "macro/AUC", "simA/ACC",
                 "simB/EER", "num_real", "num_generated"):
        assert tested[f"test/{name}"] == pytest.approx(evaluated[name], abs=1e-6), name


def test_the_lightning_module_and_the_predictor_give_identical_outputs(cli_run: tuple[Path, Path],
                                                                       trained_checkpoint: Path,
                                                                       tiny_split: dict[str, Path],
                                                                       tmp_path: Path) -> None:
    config_file, checkpoint = cli_run
    module = ForensicsModule.load_from_checkpoint(checkpoint, map_location="cpu").eval()
    predictor = ForensicsPredictor.from_checkpoint(checkpoint)
    assert predictor.config == module.config
    assert predictor.reliability == module.model.tool_reliability()
    x = torch.as_tensor(np.random.default_rng(0).normal(size=(16, len(module.model.feature_names))),
                        dtype=torch.float32)
    x[::3, 2] = float("nan")
    with torch.no_grad():
        assert torch.equal(module(x), predictor.detector.probability(x))
        assert torch.equal(module.model.threshold, predictor.detector.threshold)

    # the whole path, video file to score: the datamodule's features of a video through the module, and the
    # predictor's own analysis of the file, agree exactly (one video at a time: a batch of several may sum in
    # another order, so the predict results, scored 8 at a time, agree to float32 rounding)
    from vision.forensics.lightning import ForensicFeatureDataModule

    datamodule = ForensicFeatureDataModule(str(tiny_split["train"]), str(tiny_split["val"]),
                                           tools=module.config.tools, image_size=module.config.image_size,
                                           max_frames=module.config.max_frames,
                                           cache_dir=str(trained_checkpoint.parent / "cache"))
    dataset = datamodule.eval_dataset("validate")
    results = tmp_path / "results.json"
    train_main(["predict", "--config", str(config_file), "--ckpt_path", str(checkpoint),
                "--data.init_args.predict_split", str(tiny_split["val"]), "--results", str(results)])
    predicted = {r["video_id"]: r["score"] for r in json.loads(results.read_text())}
    videos = {v["id"]: v for v in json.loads(tiny_split["val"].read_text())["videos"]}
    for i in range(len(dataset)):
        item = dataset[i]
        video_id = int(item["video_id"])
        verdict = predictor.analyze(tiny_split["root"] / videos[video_id]["file_name"])["verdict"]
        with torch.no_grad():
            assert verdict["probability"] == float(module(item["features"][None])[0]), video_id
        assert verdict["probability"] == pytest.approx(predicted[video_id], abs=1e-6), video_id
