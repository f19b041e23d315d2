"""The shared geometry backbone in forensics: the config's backbone adds the geometry and planar tools' backbone
features; the module holds it frozen and saves it in the forensic checkpoint, which alone rebuilds the predictor; the
feature cache is keyed by the backbone's weights; a backbone of another size is refused by name; without a backbone
nothing changes. The backbones are tiny GeometryModules (32 px) written by the tests as checkpoints of the layout
``vision.checkpoint.read_task_checkpoint`` reads."""

from __future__ import annotations

import json
import math
from pathlib import Path

import lightning as L
import numpy as np
import pytest
import torch

from tests.forensics.conftest import FRAMES, SIZE
from vision.checkpoint import load_checkpoint
from vision.errors import DataError, InputError
from vision.forensics.features import ToolBackbone, backbone_fingerprint, load_clip
from vision.forensics.lightning import ForensicFeatureDataModule, ForensicsModule
from vision.forensics.predictor import ForensicsPredictor
from vision.forensics.task import DEFAULT_TOOLS, ForensicsConfig, build_backbone, load, load_geometry_backbone
from vision.forensics.tools import build_tools, feature_names, run_tools
from vision.forensics.tools.geometry import BACKBONE as GEOMETRY_BACKBONE
from vision.forensics.tools.planar import BACKBONE as PLANAR_BACKBONE

GEOMETRY_SIZE = 32
VIEWS = 5  # frames analysed in the training and cache tests (fewer backbone views: a faster test)
BACKBONE_FEATURES = [f"geometry.{f}" for f in GEOMETRY_BACKBONE] + [f"planar.{f}" for f in PLANAR_BACKBONE]
TOOLS = ["spectrum", "geometry", "planar"]


def write_geometry_checkpoint(path: Path, seed: int) -> Path:
    """A tiny ``GeometryModule`` (32 px, weights drawn with ``seed``) saved as ``{hyper_parameters: {config},
    state_dict: {model.backbone.*, ...}}``, the layout of its Lightning checkpoints."""
    from vision.geometry.lightning import GeometryModule

    torch.manual_seed(seed)
    module = GeometryModule(config={"size": "tiny", "image_size": GEOMETRY_SIZE})
    torch.save({"hyper_parameters": dict(module.hparams), "state_dict": module.state_dict()}, path)
    return path


@pytest.fixture(scope="module")
def geometry_checkpoints(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("geometry")
    return write_geometry_checkpoint(root / "a.ckpt", 0), write_geometry_checkpoint(root / "b.ckpt", 1)


def _config(**changes) -> ForensicsConfig:
    fields = dict(tools=TOOLS, hidden=16, image_size=SIZE, max_frames=VIEWS, geometry="tiny",
                  geometry_image_size=GEOMETRY_SIZE)
    fields.update(changes)
    return ForensicsConfig(**fields)


def _datamodule(split: dict[str, Path], config: ForensicsConfig, cache: Path | None) -> ForensicFeatureDataModule:
    return ForensicFeatureDataModule(str(split["train"]), str(split["val"]), tools=config.tools,
                                     image_size=config.image_size, max_frames=config.max_frames,
                                     cache_dir=None if cache is None else str(cache), batch_size=8)


def test_backbone_features_are_named_and_finite_on_a_real_clip(tiny_split, geometry_checkpoints) -> None:
    config = _config(tools=list(DEFAULT_TOOLS), max_frames=FRAMES)
    plain = ForensicsConfig(tools=list(DEFAULT_TOOLS))
    assert [n for n in config.feature_names if n not in plain.feature_names] == BACKBONE_FEATURES
    assert [n for n in config.feature_names if n in plain.feature_names] == plain.feature_names

    backbone = load_geometry_backbone(config, geometry_checkpoints[0])
    assert not backbone.training and not any(p.requires_grad for p in backbone.parameters())
    tools = build_tools(["geometry", "planar"], backbone=ToolBackbone(backbone))
    clip = load_clip(tiny_split["root"] / "videos/train/real_0.mp4", size=SIZE, max_frames=FRAMES)  # bikes.mp4
    results = run_tools(clip, tools)
    values = {k: v for r in results.values() for k, v in r.features.items()}
    assert all(r.applicable for r in results.values())
    for name in BACKBONE_FEATURES:
        assert math.isfinite(values[name]), (name, values[name])
    assert values["geometry.depth_conf_mean"] > 0 and values["planar.depth_cv"] >= 0
    assert values["planar.planar_depth"] == pytest.approx(values["planar.explained"] * values["planar.depth_cv"])


@pytest.mark.slow
def test_trained_checkpoint_holds_the_frozen_backbone_and_alone_rebuilds_the_predictor(
        tiny_split, geometry_checkpoints, tmp_path: Path) -> None:
    config = _config()
    torch.manual_seed(0)
    dm = _datamodule(tiny_split, config, tmp_path / "cache")
    model = ForensicsModule(config=config, lr=1e-2, geometry_checkpoint=str(geometry_checkpoints[0]))
    start = {k: v.clone() for k, v in model.backbone.state_dict().items()}
    trainer = L.Trainer(max_epochs=5, accelerator="cpu", devices=1, logger=False, enable_checkpointing=False,
                        enable_progress_bar=False, enable_model_summary=False, check_val_every_n_epoch=5,
                        default_root_dir=str(tmp_path))
    trainer.fit(model, datamodule=dm)
    # the datamodule measured with the module's own backbone, which training neither changed nor optimised
    assert dm.backbone is model.backbone and dm.names == model.model.feature_names == config.feature_names
    assert not model.backbone.training
    optimised = {id(p) for group in trainer.optimizers[0].param_groups for p in group["params"]}
    assert not optimised & {id(p) for p in model.backbone.parameters()}
    assert all(torch.equal(start[k], v) for k, v in model.backbone.state_dict().items())

    path = tmp_path / "forensics.ckpt"
    trainer.save_checkpoint(path)
    geometry_file = geometry_checkpoints[0].rename(tmp_path / "moved.ckpt")  # the forensic checkpoint suffices
    try:
        state = load_checkpoint(path)["state_dict"]
        assert all(torch.equal(state[f"backbone.{k}"], v) for k, v in start.items())
        detector, loaded_config, backbone = load(path, with_backbone=True)
        assert loaded_config == config and backbone is not None
        assert backbone_fingerprint(backbone) == backbone_fingerprint(model.backbone)
        assert load(path)[1] == config  # the detector alone, as before
        restored = ForensicsModule.load_from_checkpoint(path, map_location="cpu")
        assert backbone_fingerprint(restored.backbone) == backbone_fingerprint(model.backbone)
        assert load_checkpoint(path)["forensics_backbone"] == {
            "geometry_checkpoint": str(geometry_checkpoints[0]), "fingerprint": backbone_fingerprint(backbone)}
        predictor = ForensicsPredictor.from_checkpoint(path)
        dataset = dm.eval_dataset("validate")
        videos = {v["id"]: v for v in json.loads(tiny_split["val"].read_text())["videos"]}
        model.eval()
        for i in (0, len(dataset) - 1):  # a real and a generated video
            item = dataset[i]
            file = tiny_split["root"] / videos[int(item["video_id"])]["file_name"]
            report = predictor.analyze(file)
            assert report["tools"]["planar"]["features"]["planar.depth_cv"] is not None
            with torch.no_grad():
                assert report["verdict"]["probability"] == pytest.approx(float(model(item["features"][None])[0]),
                                                                         abs=1e-6)
    finally:
        geometry_file.rename(geometry_checkpoints[0])


def test_the_cache_does_not_mix_backbones(tiny_split, geometry_checkpoints, tmp_path: Path) -> None:
    config = _config(tools=["spectrum", "planar"])
    a, b = (load_geometry_backbone(config, path) for path in geometry_checkpoints)
    assert backbone_fingerprint(a) != backbone_fingerprint(b)
    columns = [config.feature_names.index(f"planar.{f}") for f in PLANAR_BACKBONE]

    def features(backbone: torch.nn.Module) -> np.ndarray:
        dm = _datamodule(tiny_split, config, tmp_path)
        dm.set_backbone(backbone)
        assert dm.names == config.feature_names
        return dm.train_features()[0]

    xa = features(a)
    xb = features(b)
    assert not np.allclose(xa[:, columns], xb[:, columns], equal_nan=True)  # b's features, not a's cache
    spectrum = [i for i, n in enumerate(config.feature_names) if n.startswith("spectrum.")]
    np.testing.assert_array_equal(xa[:, spectrum], xb[:, spectrum])
    files = sorted(p.name for p in tmp_path.glob("train_*.json"))
    assert len([f for f in files if "_planar_" in f]) == 2 and len([f for f in files if "_spectrum_" in f]) == 1
    assert {json.loads((tmp_path / f).read_text()).get("backbone") for f in files if "_planar_" in f} == \
        {backbone_fingerprint(a), backbone_fingerprint(b)}
    np.testing.assert_array_equal(features(a), xa)  # a's cache is read back
    assert len(list(tmp_path.glob("train_*.json"))) == 3

    # weights loaded into the same module (a checkpoint restore) make other features, not a stale cache hit
    dm = _datamodule(tiny_split, config, tmp_path)
    dm.set_backbone(a)
    before = dm.train_features()[0]
    with torch.no_grad():
        a.load_state_dict(b.state_dict())
    np.testing.assert_array_equal(dm.train_features()[0], xb)
    np.testing.assert_array_equal(before, xa)


def test_a_backbone_of_another_size_is_refused_by_name(geometry_checkpoints, tmp_path: Path) -> None:
    with pytest.raises(DataError, match=r"backbone is 'tiny', but ForensicsConfig.geometry is 'base'") as info:
        ForensicsModule(config=_config(geometry="base", geometry_image_size=28),
                        geometry_checkpoint=str(geometry_checkpoints[0]))
    assert str(geometry_checkpoints[0]) in str(info.value)
    with pytest.raises(InputError, match="needs ForensicsConfig.geometry"):
        ForensicsModule(config=_config(geometry=None), geometry_checkpoint=str(geometry_checkpoints[0]))
    with pytest.raises(InputError, match="geometry='huge': must be one of"):
        _config(geometry="huge")
    with pytest.raises(InputError, match="not a multiple of the tiny backbone's patch size 8"):
        _config(geometry_image_size=36)
    # a forensic checkpoint whose config names a backbone it does not hold
    model = ForensicsModule(config=_config(), geometry_checkpoint=str(geometry_checkpoints[0]))
    state = {k: v for k, v in model.state_dict().items() if not k.startswith("backbone.")}
    torch.save({"hyper_parameters": dict(model.hparams), "state_dict": state}, tmp_path / "no_backbone.ckpt")
    with pytest.raises(DataError, match="holds no weights under 'backbone.'"):
        ForensicsPredictor.from_checkpoint(tmp_path / "no_backbone.ckpt")


def test_fitting_a_backbone_config_without_its_weights_is_refused(tiny_split) -> None:
    trainer = L.Trainer(max_epochs=1, accelerator="cpu", devices=1, logger=False, enable_checkpointing=False,
                        enable_progress_bar=False, enable_model_summary=False)
    with pytest.raises(InputError, match="geometry_checkpoint"):
        trainer.fit(ForensicsModule(config=_config()), datamodule=_datamodule(tiny_split, _config(), None))


def test_without_a_backbone_nothing_changes(tiny_split, tmp_path: Path) -> None:
    config = ForensicsConfig()
    assert config.geometry is None and config.feature_names == feature_names(build_tools(DEFAULT_TOOLS))
    assert not set(BACKBONE_FEATURES) & set(config.feature_names)
    module = ForensicsModule()
    assert module.backbone is None and not any(k.startswith("backbone.") for k in module.state_dict())
    plain = _config(geometry=None, tools=["spectrum", "planar"])
    dm = _datamodule(tiny_split, plain, tmp_path)
    x = dm.train_features()[0]
    dm.set_backbone(None)
    assert dm.names == plain.feature_names
    np.testing.assert_array_equal(dm.train_features()[0], x)
    assert all("backbone" not in json.loads(p.read_text()) for p in tmp_path.glob("train_*.json"))


@pytest.mark.slow
def test_cli_fits_with_a_geometry_checkpoint_and_predicts_from_the_forensic_checkpoint_alone(
        tiny_split, geometry_checkpoints, tmp_path: Path) -> None:
    """``tools/train.py fit --model.init_args.geometry_checkpoint G``, then ``predict --ckpt_path`` without G: the
    backbone is restored from the forensic checkpoint before the features are extracted, so the predicted scores are
    the predictor's."""
    import yaml

    from vision.training.cli import main as train_main

    config = _config()
    run = tmp_path / "run"
    document = {
        "seed_everything": 0,
        "trainer": {"accelerator": "cpu", "devices": 1, "max_epochs": 5, "check_val_every_n_epoch": 5,
                    "logger": False, "enable_progress_bar": False, "enable_model_summary": False,
                    "default_root_dir": str(run),
                    "callbacks": [{"class_path": "lightning.pytorch.callbacks.ModelCheckpoint",
                                   "init_args": {"dirpath": str(run / "checkpoints"), "filename": "last"}}]},
        "model": {"class_path": "vision.forensics.lightning.ForensicsModule",
                  "init_args": {"config": dict(config.to_dict(), geometry=None), "lr": 1e-2}},
        "data": {"class_path": "vision.forensics.lightning.ForensicFeatureDataModule",
                 "init_args": {"train_split": str(tiny_split["train"]), "val_split": str(tiny_split["val"]),
                               "batch_size": 8}},
    }
    path = tmp_path / "forensics.yaml"
    path.write_text(yaml.safe_dump(document))
    train_main(["fit", "--config", str(path), "--model.init_args.config.geometry", "tiny",
                "--model.init_args.geometry_checkpoint", str(geometry_checkpoints[0])])
    checkpoint = run / "checkpoints" / "last.ckpt"
    assert load(checkpoint, with_backbone=True)[1] == config
    results = tmp_path / "results.json"
    train_main(["predict", "--config", str(path), "--ckpt_path", str(checkpoint),
                "--model.init_args.config.geometry", "tiny", "--data.init_args.predict_split",
                str(tiny_split["val"]), "--results", str(results)])
    predicted = {r["video_id"]: r["score"] for r in json.loads(results.read_text())}
    predictor = ForensicsPredictor.from_checkpoint(checkpoint)
    videos = json.loads(tiny_split["val"].read_text())["videos"]
    torch.manual_seed(123)
    control = ForensicsPredictor(predictor.detector, config, build_backbone(config))  # the untrained backbone
    differ = []
    for video in (videos[0], videos[-1]):
        probability = predictor.score(tiny_split["root"] / video["file_name"])
        assert probability == pytest.approx(predicted[video["id"]], abs=1e-6), video["id"]
        differ.append(abs(control.score(tiny_split["root"] / video["file_name"]) - probability) > 1e-4)
    assert any(differ)  # so the agreement above says the predict stage measured with the restored weights
