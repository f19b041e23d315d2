"""The OOVDet pipeline under DDP (two CPU processes, gloo) and in one process: the validation figures (COCO AP50
and the open-set figures over the val split's vocabulary, gathered across ranks) of the distributed run equal a
single-process ``validate`` of its checkpoint; the checkpoint folder holds best.ckpt and last.ckpt only; the OOV
bank is the same on every rank and in the checkpoint; ``fit --ckpt_path`` resumes under DDP. Then, from that
checkpoint: the LightningModule's detector and ``DetectorPredictor.from_checkpoint`` give identical outputs, ``test``
prints the open-set table, and ``predict``'s merged results file scores (vision evaluate) to ``test``'s figures.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from tests.training.ddp import (ROOT, checkpoint_files, last_logged, train_cli, training_config,
                                validate_in_process, write_config)

pytestmark = [pytest.mark.slow, pytest.mark.long]  # tools/train.py under DDP (two processes)

MODEL = {"class_path": "vision.detection.lightning.OOVDetModule",
         "init_args": {"config": {"image_size": 32, "channels": 16, "score_threshold": 0.0},
                       "queue_size": 16, "samples_per_class": 32, "synthesis_start": 0.0, "mining_start": 0.0,
                       "mining_min_objectness": 0.0, "warmup_steps": 1, "lr": 2e-3}}
#: logged validation figures compared between the DDP run and a single-process validate
FIGURES = ("val/AP50", "val/AP", "val/IV_AP50", "val/U-Recall", "val/A-OSE", "val/num_results")


@pytest.fixture(scope="module", autouse=True)
def importable_probe():
    """The runs import the probe callback (``tests.detection.bank_probe``) from the repository root."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PYTHONPATH", str(ROOT))
        yield


@pytest.fixture(scope="module")
def run(tmp_path_factory, importable_probe):
    """2 steps of fit under DDP on the OOV training split (2 scenes x 2 views, 32 px), validated at the end on 3
    images (the distributed sampler pads one rank's share with a repeat), every rank's bank written by a probe."""
    from vision.synthetic.detection import write_oov_synthetic

    root = tmp_path_factory.mktemp("det_ddp")
    splits = write_oov_synthetic(root / "data", train_scenes=2, val_scenes=1, test_scenes=1, views=3, size=32,
                                 seed=0)
    data = {"class_path": "vision.data.datamodule.DetectionDataModule",
            "init_args": {"train_split": str(splits["train"]), "val_split": str(splits["val"]), "batch_size": 2,
                          "augment": False}}
    config = training_config(root / "run", MODEL, data, max_steps=2, monitor="val/AP50", mode="max")
    config["trainer"]["callbacks"].append({"class_path": "tests.detection.bank_probe.BankProbe",
                                           "init_args": {"folder": str(root / "banks")}})
    config = write_config(root / "config.yaml", config)
    train_cli("fit", config, ddp=True)
    return {"root": root / "run", "config": config, "splits": splits, "banks": root / "banks"}


def _banks_equal_checkpoint(run) -> dict[str, torch.Tensor]:
    saved = torch.load(run["root"] / "checkpoints" / "last.ckpt", weights_only=True)["oov_bank"]
    for rank in (0, 1):
        held = torch.load(run["banks"] / f"bank_rank{rank}.pt", weights_only=True)
        for key in ("queues", "counts", "heads"):
            assert torch.equal(held[key], saved[key]), (rank, key)
    return saved


def test_ddp_validation_equals_single_process_bank_is_synchronised_and_resumes(run):
    root, config = run["root"], run["config"]
    assert len(json.loads(run["splits"]["val"].read_text())["images"]) == 3
    assert checkpoint_files(root) == ["best.ckpt", "last.ckpt"]
    single = validate_in_process(config, root / "checkpoints" / "last.ckpt")
    for name in FIGURES:
        assert single[name] == pytest.approx(last_logged(root, name), abs=1e-6), name
    assert last_logged(root, "val/num_results") > 0
    # the bank: every rank holds the checkpoint's, and it holds the positives of both ranks' batches
    saved = _banks_equal_checkpoint(run)
    assert int(saved["counts"].sum()) > 0
    # resume from last.ckpt under DDP with a larger budget: the step count continues, the bank stays synchronised
    train_cli("fit", config, "--ckpt_path", str(root / "checkpoints" / "last.ckpt"), "--trainer.max_steps", "3",
              ddp=True)
    assert torch.load(root / "checkpoints" / "last.ckpt", weights_only=True)["global_step"] == 3
    assert checkpoint_files(root) == ["best.ckpt", "last.ckpt"]
    resumed = _banks_equal_checkpoint(run)
    assert int(resumed["counts"].sum()) > int(saved["counts"].sum())


def test_module_and_predictor_give_identical_outputs(run):
    from vision.data.coco import load_split
    from vision.detection.lightning import OOVDetModule
    from vision.detection.predictor import DetectorPredictor

    path = run["root"] / "checkpoints" / "best.ckpt"
    checkpoint = torch.load(path, weights_only=True)
    hparams = checkpoint["hyper_parameters"]
    module = OOVDetModule(config=hparams["config"], queue_size=hparams["queue_size"])
    module.load_state_dict(checkpoint["state_dict"])
    predictor = DetectorPredictor.from_checkpoint(path)
    assert predictor.image_size == 32 and predictor.vocabulary == hparams["class_names"]
    split = load_split(run["splits"]["val"])
    image = split.load_image(split.images[min(split.images)])
    images = torch.from_numpy(image).permute(2, 0, 1)[None].float() / 255
    with torch.no_grad():
        a = module.model.eval()(images)
        b = predictor.model(images)
    for key in ("objectness", "boxes", "embeddings"):
        assert torch.equal(a[key], b[key]), key
    # and the predictor's detections are the module's detector's, postprocessed with the same text table
    expected = module.model.postprocess(a, predictor.text, [(32, 32)])[0]
    got = predictor.predict(image)
    assert torch.equal(torch.from_numpy(got["scores"]), expected["scores"])
    assert len(got["scores"]) > 0


def test_test_prints_the_table_and_predict_scores_to_its_figures(run, tmp_path, capsys):
    from vision.training.cli import main as train_main

    ckpt = str(run["root"] / "checkpoints" / "best.ckpt")
    tested = train_main(["test", "--config", str(run["config"]), "--ckpt_path", ckpt, "--trainer.logger", "false"])
    table = capsys.readouterr().out
    for name in ("IV_AP50", "U-Recall", "WI", "A-OSE", "H-mean", "novel_AP50"):
        assert name in table, name
    figures = {k: float(v) for k, v in tested.trainer.callback_metrics.items()
               if k.startswith("test/") and not k.startswith("test/loss")}
    assert {"test/AP50", "test/IV_AP50", "test/U-Recall", "test/WI", "test/H-mean"} <= set(figures)
    results = tmp_path / "results.json"
    train_main(["predict", "--config", str(run["config"]), "--ckpt_path", ckpt, "--trainer.logger", "false",
                "--results", str(results)])
    entries = json.loads(results.read_text())
    assert entries and all({"image_id", "category_id", "bbox", "score"} <= set(r) for r in entries)
    split = json.loads(run["splits"]["val"].read_text())
    ids = [c["id"] for c in split["categories"] if c["name"] in split["info"]["vocabulary"]]
    out = tmp_path / "metrics.json"
    proc = subprocess.run([str(Path(sys.executable).parent / "vision"), "evaluate", "--split", str(run["splits"]["val"]),
                           "--results", str(results), "--task", "detection", "--category-ids",
                           ",".join(map(str, ids)), "--unknown-category-id", "1000", "--out", str(out)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    scored = json.loads(out.read_text())
    for key, value in figures.items():
        name = key.removeprefix("test/")
        if name.startswith("loss"):
            continue
        assert scored[name] == pytest.approx(value, abs=1e-6), key
