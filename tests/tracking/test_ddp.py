"""The tracking pipeline under DDP (two CPU processes, gloo) and in one process: the validation figure (val/J&F,
the protocol of vision.tracking.inference, gathered across ranks) of the distributed run equals a single-process
``validate`` of its checkpoint; the checkpoint folder holds best.ckpt and last.ckpt only; ``fit --ckpt_path``
resumes under DDP. Then, from that checkpoint: the LightningModule's model and ``TrackerPredictor.from_checkpoint``
give identical outputs, and ``predict``'s merged results file scores (vision evaluate) to ``test``'s figures.
"""

from __future__ import annotations

import json

import pytest
import torch

from tests.training.ddp import (checkpoint_files, last_logged, train_cli, training_config, validate_in_process,
                                write_config)

pytestmark = [pytest.mark.slow, pytest.mark.long]  # tools/train.py under DDP (two processes)

MODEL = {"class_path": "vision.tracking.lightning.TrackingModule",
         "init_args": {"config": {"image_size": 32, "dim": 32, "text_encoder": "minilm"}, "max_objects": 2,
                       "negative_text": 0.5, "memory_prob": 0.5, "warmup_steps": 1, "lr": 2e-3,
                       "eval_prompt_types": ["point", "text"]}}


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """2 steps of fit under DDP on a 2-scene video split, validated at the end on 3 unordered sets (3 clips: the
    distributed sampler pads one rank's share with a repeat)."""
    from vision.synthetic.scenes import write_split

    root = tmp_path_factory.mktemp("trk_ddp")
    train = write_split(root / "data", "train", scenes=2, views=4, size=32, mode="video", seed=0, threads=1,
                        min_objects=2, max_objects=3)
    val = write_split(root / "data", "val", scenes=3, views=4, size=32, mode="unordered", seed=1, threads=1,
                      min_objects=2, max_objects=3)
    data = {"class_path": "vision.data.datamodule.MultiViewDataModule",
            "init_args": {"train_split": str(train), "val_split": str(val), "views": 4, "batch_size": 1,
                          "augment": False}}
    config = write_config(root / "config.yaml",
                          training_config(root / "run", MODEL, data, max_steps=2, monitor="val/J&F", mode="max"))
    train_cli("fit", config, ddp=True)
    return {"root": root / "run", "config": config, "val": val}


def test_ddp_validation_equals_single_process_and_resumes(run):
    root, config = run["root"], run["config"]
    assert checkpoint_files(root) == ["best.ckpt", "last.ckpt"]
    ddp_jf = last_logged(root, "val/J&F")
    single = validate_in_process(config, root / "checkpoints" / "last.ckpt")
    assert single["val/num_tracks"] > 0 and single["val/J&F"] == pytest.approx(ddp_jf, abs=1e-6)
    assert single["val/point/J&F"] == pytest.approx(last_logged(root, "val/point/J&F"), abs=1e-6)
    assert single["val/text/presence_accuracy"] == pytest.approx(last_logged(root, "val/text/presence_accuracy"),
                                                                 abs=1e-6)
    # resume from last.ckpt under DDP with a larger budget: the step count continues
    train_cli("fit", config, "--ckpt_path", str(root / "checkpoints" / "last.ckpt"), "--trainer.max_steps", "3",
              ddp=True)
    assert torch.load(root / "checkpoints" / "last.ckpt", weights_only=True)["global_step"] == 3
    assert checkpoint_files(root) == ["best.ckpt", "last.ckpt"]


def test_module_and_predictor_give_identical_outputs(run):
    from vision.tracking.lightning import TrackingModule
    from vision.tracking.predictor import TrackerPredictor
    from vision.tracking.prompts import Prompts

    path = run["root"] / "checkpoints" / "best.ckpt"
    checkpoint = torch.load(path, weights_only=True)
    module = TrackingModule(config=checkpoint["hyper_parameters"]["config"])
    module.load_state_dict(checkpoint["state_dict"])
    predictor = TrackerPredictor.from_checkpoint(path)
    assert predictor.image_size == 32 and predictor.model.text_dim == module.model.text_dim
    torch.manual_seed(0)
    images = torch.rand(1, 3, 3, 32, 32)
    prompts = Prompts.empty(1, 2, (32, 32), num_points=1, text_dim=module.model.text_dim)
    prompts.valid[:] = True
    prompts.view[0] = torch.tensor([0, 1])
    prompts.points[0, :, 0] = torch.tensor([[10.0, 12.0], [20.0, 5.0]])
    prompts.labels[0, :, 0] = 1
    with torch.no_grad():
        a = module.model.eval()(images, prompts)
        b = predictor.model(images, prompts)
    for key in ("masks", "iou", "presence"):
        assert torch.equal(a[key], b[key]), key


def test_predict_results_score_to_the_test_figures(run, tmp_path):
    from vision.cli.evaluate import main as evaluate_main
    from vision.training.cli import main as train_main

    ckpt = str(run["root"] / "checkpoints" / "best.ckpt")
    tested = train_main(["test", "--config", str(run["config"]), "--ckpt_path", ckpt, "--trainer.logger", "false"])
    figures = {k: float(v) for k, v in tested.trainer.callback_metrics.items() if k.startswith("test/")}
    assert "test/J&F" in figures and "test/point/presence_accuracy" in figures
    results = tmp_path / "results.json"
    train_main(["predict", "--config", str(run["config"]), "--ckpt_path", ckpt, "--trainer.logger", "false",
                "--results", str(results)])
    entries = json.loads(results.read_text())
    assert {r["prompt_type"] for r in entries} == {"point", "text"}
    assert len({(r["track_id"], r["image_id"], r["prompt_type"]) for r in entries}) == len(entries)
    out = tmp_path / "metrics.json"
    assert evaluate_main(["--split", str(run["val"]), "--results", str(results), "--task", "tracking",
                          "--out", str(out)]) == 0
    scored = json.loads(out.read_text())
    for key, value in figures.items():
        assert scored[key.removeprefix("test/")] == pytest.approx(value, abs=1e-6), key
