"""The geometry task's one definition: a checkpoint written by ``tools/train.py fit`` rebuilds the same model through
``load``; ``test`` prints the table and ``predict`` writes results that ``evaluate`` scores to the test figures."""

from __future__ import annotations

import pytest
import torch

from tests.training.ddp import training_config, write_config
from vision.synthetic.scenes import write_split
from vision.errors import DataError, InputError
from vision.evaluation.evaluate import evaluate
from vision.geometry.lightning import GeometryModule
from vision.geometry.task import GeometryConfig, build_model, load, read_backbone_checkpoint
from vision.training.cli import main

pytestmark = pytest.mark.slow  # tools/train.py fit, test and predict


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A 2-step fit of a tiny model with a matching projection: (config path, last checkpoint, val split)."""
    tmp = tmp_path_factory.mktemp("geometry_task")
    train = write_split(tmp / "data", "train", scenes=2, views=4, size=32, mode="unordered", seed=1, threads=1)
    val = write_split(tmp / "data", "val", scenes=2, views=4, size=32, mode="unordered", seed=2, threads=1)
    model = {"class_path": "vision.geometry.lightning.GeometryModule",
             "init_args": {"config": {"size": "tiny", "image_size": 32, "match_dim": 8}, "warmup_steps": 1,
                           "match_weight": 1.0}}
    data = {"class_path": "vision.data.datamodule.MultiViewDataModule",
            "init_args": {"train_split": str(train), "val_split": str(val), "views": 4, "batch_size": 2,
                          "num_workers": 0, "augment": False}}
    config = write_config(tmp / "fit.yaml", training_config(tmp / "run", model, data, max_steps=2,
                                                            monitor="val/abs_rel", mode="min"))
    main(["fit", "--config", str(config)])
    return config, tmp / "run" / "checkpoints" / "last.ckpt", val


def test_module_and_load_give_identical_outputs(trained):
    _, ckpt, _ = trained
    loaded, config = load(ckpt)
    assert config == GeometryConfig(size="tiny", image_size=32, match_dim=8)
    module = GeometryModule.load_from_checkpoint(ckpt, weights_only=True).eval()
    images = torch.rand(1, 3, 3, 32, 32, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        ours, theirs = module(images), loaded(images)
        for key in ("extrinsics", "depth", "world_points"):
            assert torch.equal(ours[key], theirs[key]), key
        assert torch.equal(module.model.match_features(ours), loaded.match_features(theirs))
    backbone = read_backbone_checkpoint(ckpt)[1]
    assert backbone.keys() == loaded.backbone.state_dict().keys()
    assert all(torch.equal(backbone[k], v) for k, v in loaded.backbone.state_dict().items())


def test_test_prints_the_table_and_predict_scores_the_same(trained, tmp_path, capsys):
    config, ckpt, val = trained
    cli = main(["test", "--config", str(config), "--ckpt_path", str(ckpt), "--trainer.logger", "false"])
    lines = capsys.readouterr().out.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("method"))
    assert [line.split()[0] for line in lines[header + 1:header + 6]] == ["model", "constant_depth",
                                                                         "identity_pose", "camera_head", "match_pose"]
    logged = {k: float(v) for k, v in cli.trainer.callback_metrics.items()}
    assert logged["test/clips"] == 2

    out = tmp_path / "predictions.json"
    main(["predict", "--config", str(config), "--ckpt_path", str(ckpt), "--results", str(out)])
    scored = evaluate(val, out, "geometry")
    for name in ("abs_rel", "delta_1.25", "AUC@30", "RRA@15", "RTA@15", "chamfer", "constant_depth/abs_rel",
                 "identity_pose/AUC@30", "camera_head/AUC@30", "match_pose/AUC@30", "match_pose/RRA@15"):
        assert scored[name] == pytest.approx(logged[f"test/{name}"], abs=1e-6), name


def test_config_errors_are_named(tmp_path):
    with pytest.raises(InputError, match="match_dim"):
        GeometryModule(config={"image_size": 32}, match_weight=1.0)
    with pytest.raises(InputError, match="patch size"):
        build_model(GeometryConfig(image_size=36))
    with pytest.raises(InputError, match="size='huge': must be one of"):
        GeometryConfig(size="huge")
    other = tmp_path / "other.ckpt"
    torch.save({"state_dict": {"model.w": torch.ones(1)}, "hyper_parameters": {"config": {"size": "tiny"}}}, other)
    with pytest.raises(DataError, match="other.ckpt"):
        load(other)
    with pytest.raises(DataError, match="model.backbone"):
        read_backbone_checkpoint(other)
