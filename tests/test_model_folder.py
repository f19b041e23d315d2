"""vision.model_folder: every task saves and loads a model folder (config.json + model.safetensors + README.md)
bit-exactly, a checkpoint converts into one with its extras and its run's validation figures, every checkpoint
reader takes a folder, and a folder that is not one (or holds another task's model) is one clear error."""

from __future__ import annotations

import csv
import functools
import importlib
import json
import pickle

import pytest
import torch

from vision.checkpoint import load_checkpoint, read_model
from vision.errors import DataError, InputError
from vision.export.from_checkpoint import folder_of_checkpoint
from vision.export.model_card import model_card
from vision.export.task_detection import registered_config
from vision.model_folder import CARD_FILE, CONFIG_FILE, read_model_folder, write_model_folder
from vision.tasks import get_task, task_names


def bitwise_equal(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Same dtype, shape and bytes (a NaN buffer equals itself, which ``torch.equal`` would deny)."""
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    return torch.equal(a.detach().cpu().contiguous().reshape(-1).view(torch.uint8),
                       b.detach().cpu().contiguous().reshape(-1).view(torch.uint8))


def assert_same_weights(mine: torch.nn.Module, theirs: torch.nn.Module) -> None:
    a, b = mine.state_dict(), theirs.state_dict()
    assert list(a) == list(b)
    for key in a:
        assert bitwise_equal(a[key], b[key]), key


def views(n: int, size: int = 64) -> torch.Tensor:
    return torch.rand(n, 3, size, size, generator=torch.Generator().manual_seed(1))


def predictions(name: str, model: torch.nn.Module) -> list[torch.Tensor]:
    """What each task's model predicts on a fixed input, as a flat list of tensors."""
    with torch.no_grad():
        if name == "geometry":
            out = model(views(1)[None])
            return [out[k] for k in ("depth", "world_points", "extrinsics", "intrinsics")]
        if name == "detection":
            text = torch.randn(3, 384, generator=torch.Generator().manual_seed(2))
            text = torch.nn.functional.normalize(text, dim=-1)
            (result,) = model.postprocess(model(views(1)), text)
            return [result["boxes"], result["scores"], result["labels"]]
        if name == "tracking":
            from vision.tracking.prompts import POSITIVE, Prompts

            prompts = Prompts.empty(1, 1, (64, 64))
            prompts.valid[:] = True
            prompts.view[:] = 0
            prompts.points[0, 0, 0] = torch.tensor([32.0, 32.0])
            prompts.labels[0, 0, 0] = POSITIVE
            out = model(views(1)[None], prompts)
            return [out["masks"], out["iou"], out["presence"]]
        if name == "concept":
            from vision.concept.heads import PAIR_FEATURES, PRESENCE_FEATURES

            generator = torch.Generator().manual_seed(4)
            out = model.detector(views(1))
            return [out["boxes"], out["embeddings"],
                    model.presence(torch.rand(4, PRESENCE_FEATURES, generator=generator)),
                    model.association(torch.rand(4, PAIR_FEATURES, generator=generator))]
        features = torch.randn(4, len(model.feature_names), generator=torch.Generator().manual_seed(3))
        return [model.probability(features)]


def checkpoint_of(name: str, model: torch.nn.Module, config, path, **extra):
    """A checkpoint in the task's LightningModule layout."""
    hparams = {"_class_path": ".".join(get_task(name).where("lightning")), "config": config.to_dict(), "lr": 0.001}
    hparams.update(extra.pop("hyper_parameters", {}))
    state = {f"model.{k}": v for k, v in model.state_dict().items()}
    state.update(extra.pop("state_dict", {}))
    torch.save({"state_dict": state, "hyper_parameters": hparams, "epoch": 2, "global_step": 30, **extra}, path)
    return path


@pytest.mark.slow  # a forward pass per model
@pytest.mark.parametrize("name", task_names())
def test_every_task_saves_and_loads_a_folder_bit_exactly(name, tmp_path):
    task = get_task(name)
    torch.manual_seed(0)
    config = task.resolve("config")()
    model = task.build_model(config).eval()
    save = importlib.import_module(f"vision.{name}.task").save
    folder = save(model, config, tmp_path / name)
    assert {p.name for p in folder.iterdir()} == {CONFIG_FILE, "model.safetensors", CARD_FILE}
    loaded, loaded_config = task.load(folder)
    assert loaded_config == config and not loaded.training
    assert_same_weights(model, loaded)
    for mine, theirs in zip(predictions(name, model), predictions(name, loaded), strict=True):
        assert bitwise_equal(mine, theirs)
    assert "Not recorded" in (folder / CARD_FILE).read_text()


@pytest.mark.parametrize("name", task_names())
def test_a_checkpoint_and_its_folder_load_the_same_model(name, tmp_path):
    task = get_task(name)
    torch.manual_seed(0)
    config = task.resolve("config")()
    model = task.build_model(config)
    path = checkpoint_of(name, model, config, tmp_path / f"{name}.ckpt")
    folder = write_model_folder(folder_of_checkpoint(load_checkpoint(path), path), tmp_path / "folder",
                                card=model_card)
    from_checkpoint, _ = task.load(path)
    from_folder, _ = task.load(folder)
    assert_same_weights(from_checkpoint, from_folder)
    content = json.loads((folder / CONFIG_FILE).read_text())
    assert content["task"] == name and content["hyper_parameters"]["lr"] == 0.001
    assert content["training"]["epoch"] == 2


def test_detection_vocabulary_round_trips(tmp_path):
    from vision.detection.task import DetectionConfig, TrainingVocabulary, build_model, load, save

    config = DetectionConfig()
    model = build_model(config)
    vocabulary = TrainingVocabulary(["mug", "chair"], [3, 7])
    path = checkpoint_of("detection", model, config, tmp_path / "d.ckpt",
                         hyper_parameters={"class_names": vocabulary.class_names,
                                           "category_ids": vocabulary.category_ids})
    exported = write_model_folder(folder_of_checkpoint(load_checkpoint(path), path), tmp_path / "exported",
                                  card=model_card)
    saved = save(model, config, tmp_path / "saved", vocabulary=vocabulary)
    for folder in (exported, saved):
        _, _, trained = load(folder, with_vocabulary=True)
        assert trained == vocabulary
        assert "`mug`, `chair`" in (folder / CARD_FILE).read_text()


@pytest.mark.slow  # builds two geometry backbones
def test_forensics_frozen_backbone_round_trips(tmp_path):
    from vision.forensics.task import BACKBONE_PREFIX, ForensicsConfig, build_backbone, build_model, load, save

    torch.manual_seed(0)
    config = ForensicsConfig(geometry="tiny")
    model, backbone = build_model(config), build_backbone(config)
    fingerprint = {"geometry_checkpoint": "runs/geometry/tiny/checkpoints/last.ckpt", "fingerprint": "abc"}
    path = checkpoint_of("forensics", model, config, tmp_path / "f.ckpt", forensics_backbone=fingerprint,
                         state_dict={f"{BACKBONE_PREFIX}{k}": v for k, v in backbone.state_dict().items()})
    exported = write_model_folder(folder_of_checkpoint(load_checkpoint(path), path), tmp_path / "exported",
                                  card=model_card)
    assert (exported / "backbone.safetensors").is_file()
    assert read_model(exported)["forensics_backbone"] == fingerprint  # the reference to the backbone's source
    saved = save(model, config, tmp_path / "saved", backbone=backbone)
    for folder in (exported, saved):
        detector, loaded_config, loaded_backbone = load(folder, with_backbone=True)
        assert loaded_config == config
        assert_same_weights(model, detector)
        assert_same_weights(backbone, loaded_backbone)
    with pytest.raises(InputError, match="save its frozen backbone"):
        save(model, config, tmp_path / "no_backbone")


@pytest.mark.slow  # builds two geometry backbones
def test_a_geometry_folder_is_backbone_weights_for_every_task(tmp_path):
    """The training configs' geometry checkpoint options (``geometry_checkpoint``, ``vggt_weights``) read through
    :func:`vision.geometry.weights.load_backbone`, which takes a geometry folder as it takes the checkpoint."""
    from vision.geometry.task import GeometryConfig, build_model, save
    from vision.geometry.weights import load_backbone
    from vision.tracking.task import build_model as build_tracker

    torch.manual_seed(0)
    geometry = build_model(GeometryConfig())
    folder = save(geometry, GeometryConfig(), tmp_path / "geometry")
    tracker = build_tracker({})
    report = load_backbone(tracker.backbone, folder)
    assert report.source == "geometry checkpoint" and report.loaded
    for key in report.loaded:
        assert bitwise_equal(tracker.backbone.state_dict()[key], geometry.backbone.state_dict()[key]), key
    detection_folder = tmp_path / "detection"
    from vision.detection.task import DetectionConfig, build_model as build_detector, save as save_detector

    save_detector(build_detector(DetectionConfig()), DetectionConfig(), detection_folder)
    with pytest.raises(DataError, match="holds a detection model, not a geometry model"):
        load_backbone(tracker.backbone, detection_folder)


def test_the_card_reports_the_runs_validation_figures(tmp_path):
    from vision.geometry.task import GeometryConfig, build_model

    config = GeometryConfig()
    run = tmp_path / "run"
    (run / "checkpoints").mkdir(parents=True)
    (run / "logs" / "version_0").mkdir(parents=True)
    with (run / "logs" / "version_0" / "metrics.csv").open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerows([["epoch", "step", "train/loss", "val/abs_rel", "val/delta1"],
                          [1, 10, 0.5, "", ""], [1, 10, "", 0.25, 0.5], [2, 20, "", 0.125, 0.75]])
    score = {"monitor": "val/abs_rel", "best_model_score": torch.tensor(0.125), "current_score": torch.tensor(0.125)}
    path = checkpoint_of("geometry", build_model(config), config, run / "checkpoints" / "best.ckpt",
                         callbacks={"ModelCheckpoint{'monitor': 'val/abs_rel'}": score},
                         datamodule_hyper_parameters={"train_split": "train.json", "val_split": "val.json"})
    folder = write_model_folder(folder_of_checkpoint(load_checkpoint(path), path), tmp_path / "folder",
                                card=model_card)
    card = (folder / CARD_FILE).read_text()
    assert "`val/abs_rel` = 0.125" in card
    assert "| val/delta1 | 0.75 |" in card and "| val/abs_rel | 0.125 |" in card  # the row of epoch 2
    assert 'train_split=`"train.json"`' in card and "epoch: `2`" in card
    # a folder re-saved keeps its record
    again = write_model_folder(read_model_folder(folder), tmp_path / "again", card=model_card)
    assert (again / CARD_FILE).read_text() == card


def test_a_folder_that_is_not_a_model_folder_is_one_clear_error(tmp_path):
    from vision.geometry.task import load

    with pytest.raises(DataError, match="not a model folder"):
        load(tmp_path)
    (tmp_path / CONFIG_FILE).write_text(json.dumps({"architectures": ["VGGT"]}))
    with pytest.raises(DataError, match="not a vision model folder's config.json"):
        load(tmp_path)
    (tmp_path / CONFIG_FILE).write_text("{not json")
    with pytest.raises(DataError, match="invalid JSON at line 1"):
        load(tmp_path)


@pytest.fixture
def geometry_folder(tmp_path):
    from vision.geometry.task import GeometryConfig, build_model, save

    return save(build_model(GeometryConfig()), GeometryConfig(), tmp_path / "geometry")


def _rewrite(folder, **changes):
    content = json.loads((folder / CONFIG_FILE).read_text())
    content.update(changes)
    (folder / CONFIG_FILE).write_text(json.dumps(content))


def test_another_tasks_folder_is_refused_by_name(geometry_folder):
    from vision.tracking.task import load

    with pytest.raises(DataError, match="holds a geometry model, not a tracking model"):
        load(geometry_folder)
    _rewrite(geometry_folder, task="segmentation")
    with pytest.raises(DataError, match="unknown task"):
        read_model_folder(geometry_folder, config_of=registered_config)


@pytest.mark.parametrize("name", ["../model.safetensors", "/etc/passwd.safetensors", "model.pt", "sub/x.safetensors"])
def test_weights_names_outside_the_folder_are_refused(geometry_folder, name):
    _rewrite(geometry_folder, weights={"model": name})
    with pytest.raises(DataError, match="plain \\*.safetensors file name"):
        read_model_folder(geometry_folder)


def test_weights_are_never_unpickled(geometry_folder, tmp_path):
    """A pickle renamed to model.safetensors is refused by the safetensors reader; nothing in it runs."""
    marker = tmp_path / "ran"

    class Payload:
        def __reduce__(self):
            return (marker.touch, ())

    (geometry_folder / "model.safetensors").write_bytes(pickle.dumps(Payload()))
    with pytest.raises(DataError, match="not a readable safetensors file"):
        read_model_folder(geometry_folder)
    assert not marker.exists()
    (geometry_folder / "model.safetensors").unlink()
    with pytest.raises(DataError, match="weights file of the model folder not found"):
        read_model_folder(geometry_folder)


def test_weights_that_do_not_fit_the_config_name_the_folder(geometry_folder):
    from vision.geometry.task import load

    content = json.loads((geometry_folder / CONFIG_FILE).read_text())
    _rewrite(geometry_folder, config={**content["config"], "match_dim": 8})
    with pytest.raises(DataError, match="do not fit") as info:
        load(geometry_folder)
    assert str(geometry_folder) in str(info.value)


def test_writing_never_clobbers_other_files(geometry_folder, tmp_path):
    folder = read_model_folder(geometry_folder)
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "keep.txt").write_text("mine")
    with pytest.raises(InputError, match="not empty and not a model folder"):
        write_model_folder(folder, tmp_path / "notes", card=model_card)
    with pytest.raises(InputError, match="already holds a model folder"):
        write_model_folder(folder, geometry_folder, card=model_card)
    assert write_model_folder(folder, geometry_folder, overwrite=True, card=model_card) == geometry_folder
    assert (tmp_path / "notes" / "keep.txt").read_text() == "mine"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["geometry", "notes"]  # no staging folder left


# ---------------------------------------------------------------------------------------------------- hostile config.json
# A model folder's config.json is untrusted input: each way it can be wrong is one DataError naming config.json,
# the field and the value, before any weights are read or any model is built (the schema: tests/test_checkpoint.py).

DIGITS = "9" * 5000  # past Python's limit for int(); read_json reads it as an infinite float


@pytest.fixture(scope="module")
def saved_folders(tmp_path_factory):
    """An untrained tracking and concept model folder, as ``save`` writes them."""
    root = tmp_path_factory.mktemp("folders")
    folders = {}
    for name in ("tracking", "concept"):
        task = get_task(name)
        config = task.resolve("config")()
        folders[name] = task.resolve("save")(task.build_model(config), config, root / name)
    return folders


def _edited(folders, tmp_path, task, edit):
    """A copy of the task's folder whose config.json text went through ``edit``."""
    import shutil

    folder = shutil.copytree(folders[task], tmp_path / task)
    (folder / CONFIG_FILE).write_text(edit((folder / CONFIG_FILE).read_text()))
    return folder


def _set(path, value):
    """An edit setting ``config.<path>`` (dotted) to ``value``."""
    def edit(text):
        content = json.loads(text)
        *parents, last = ["config", *path.split(".")]
        target = content
        for part in parents:
            target = target[part]
        target[last] = value
        return json.dumps(content)
    return edit


def _deep(levels):
    return "[" * levels + "]" * levels


HOSTILE_FOLDERS = {
    "version 5000 digits": ("tracking", lambda t: t.replace('"version": 1', f'"version": {DIGITS}'), "version=inf"),
    "dim 5000 digits": ("tracking", lambda t: t.replace('"dim": 64', f'"dim": {DIGITS}'),
                        "config.dim=inf: must be an integer"),
    "100000-deep nesting": ("tracking", lambda t: t.replace('"training": {}', f'"training": {_deep(100_000)}'),
                            "JSON nested too deeply"),
    "600-deep nesting": ("tracking", lambda t: t.replace('"hyper_parameters": {}', f'"hyper_parameters": {_deep(600)}'),
                         "hyper_parameters[0][0]"),
    "image_size 10^6": ("tracking", _set("image_size", 10 ** 6), "config.image_size=1000000: must be an integer"),
    "image_size 10^30": ("tracking", _set("image_size", 10 ** 30), f"config.image_size={10 ** 30}"),
    "dim 100000": ("tracking", _set("dim", 100_000), "config.dim=100000"),
    "concept hidden 10^6": ("concept", _set("hidden", 10 ** 6), "config.hidden=1000000"),
    "num_heads 3 of inner dim 32": ("tracking", _set("num_heads", 3), "config.num_heads=3: must divide dim / 2 = 32"),
    "score_threshold '0.5'": ("concept", _set("score_threshold", "0.5"), "config.score_threshold='0.5'"),
    "decoder_depth 10^6": ("tracking", _set("decoder_depth", 10 ** 6), "config.decoder_depth=1000000"),
    "click_maps 'false'": ("tracking", _set("click_maps", "false"), "config.click_maps='false': must be true or false"),
    "competitors 'abc'": ("concept", _set("competitors", "abc"), "config.competitors='abc': must be a list"),
    "nms_iou 2.0": ("concept", _set("nms_iou", 2.0), "config.nms_iou=2.0: must be a number in [0, 1]"),
    "rule_distance -1": ("concept", _set("rule_distance", -1), "config.rule_distance=-1: must be a number in (0, 10]"),
    "concept tracker dim": ("concept", _set("tracker.dim", 100_000), "config.tracker.dim=100000"),
    "concept detector feature layer": ("concept", _set("detector.feature_layers", [1, 7]),
                                       "config.detector.feature_layers[1]=7: must be in [-4, 3]"),
    "unknown field": ("tracking", _set("depth", 3), "config: unknown TrackingConfig field(s) ['depth']"),
    "card's score a text": ("tracking", lambda t: t.replace('"training": {}', '"training": {"validation": '
                                                           '{"monitor": "val/x", "score": "high"}}'),
                            "training.validation.score='high': must be a number"),
    "card's data a list": ("tracking", lambda t: t.replace('"training": {}', '"training": {"data": [1]}'),
                           "training.data: must be a JSON object"),
}


@pytest.mark.timeout(120)
@pytest.mark.parametrize("case", HOSTILE_FOLDERS)
def test_a_hostile_config_json_is_one_error_naming_file_field_and_value(saved_folders, tmp_path, case):
    task, edit, named = HOSTILE_FOLDERS[case]
    folder = _edited(saved_folders, tmp_path, task, edit)
    for read in (functools.partial(read_model_folder, config_of=registered_config), get_task(task).load):
        with pytest.raises(DataError) as info:
            read(folder)
        text = str(info.value)
        assert text.startswith(f"{folder / CONFIG_FILE}: ") and named in text and "\n" not in text, text[:300]


def test_a_huge_integer_where_nothing_reads_it_is_harmless(saved_folders, tmp_path):
    folder = _edited(saved_folders, tmp_path, "tracking",
                     lambda t: t.replace('"training": {}', f'"training": {{"epoch": {DIGITS}}}'))
    model, config = get_task("tracking").load(folder)
    assert config == get_task("tracking").resolve("config")()


@pytest.mark.timeout(300)
@pytest.mark.parametrize("case", ["version 5000 digits", "100000-deep nesting", "num_heads 3 of inner dim 32"])
def test_predict_and_export_refuse_a_hostile_folder_in_one_line(saved_folders, tmp_path, capsys, case):
    """vision-predict and vision-export: one ``error:`` line naming config.json, exit 2, nothing written."""
    import numpy as np
    from PIL import Image

    from vision.cli import export, predict

    _, edit, named = HOSTILE_FOLDERS[case]
    folder = _edited(saved_folders, tmp_path, "tracking", edit)
    image = tmp_path / "view.png"
    Image.fromarray(np.zeros((32, 32, 3), dtype=np.uint8)).save(image)
    capsys.readouterr()
    runs = {"predict": lambda: predict.main(["--task", "tracking", "--ckpt", str(folder), "--points", "10,10",
                                             "--device", "cpu", "--out", str(tmp_path / "out"), str(image)]),
            "export": lambda: export.main(["--ckpt", str(folder), "--out", str(tmp_path / "exported")])}
    for tool, run in runs.items():
        assert run() == 2, tool
        lines = capsys.readouterr().err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"error: {folder / CONFIG_FILE}: ") and named in lines[0], \
            (tool, lines)
    assert not (tmp_path / "out").exists() and not (tmp_path / "exported").exists()
