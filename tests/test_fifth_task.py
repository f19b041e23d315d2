"""Issue 45, item 8, the proof: a fifth task is its folder plus one registry entry.

The toy task of ``tests/toy_task/`` (per-pixel brightness from an image; a model of two 1x1 convolutions) is
registered here (:func:`vision.tasks.register_task`, removed again when the module's tests end) and run, in this
process so that the registration is seen, through every shared tool with no edit anywhere else:

- ``tools/train.py fit`` (2 steps on a four-image COCO-format split, on the CPU) writes a checkpoint that records the
  task and validation figures the toy scorer computed (``val/brightness_mae``);
- ``tools/train.py test`` from that checkpoint prints the toy scorer's table, and ``tools/train.py predict`` writes
  results that score to the same figure;
- ``vision-evaluate --task toy`` scores the results the toy predictor wrote (with the toy task's own flag; that flag
  given to another task is refused);
- ``vision-predict --task toy`` runs the predictor on an image (from the checkpoint and from the model folder);
- ``vision-demo`` shows its tab (``tests/toy_task/demo.py``, its ``demo_tab``), whose handler runs the predictor on
  an uploaded image;
- ``vision-export`` writes the model folder, which the task's ``load`` reads back to the same weights, and the
  task's ``save`` writes one too; ``vision-export --onnx`` writes the graph of its ``onnx.py``, checked with
  onnxruntime.
"""

from __future__ import annotations

import csv
import dataclasses
import json
import runpy
import sys
from collections.abc import Iterator
from pathlib import Path

import cv2
import numpy as np
import pytest
import torch

from vision.checkpoint import load_checkpoint
from vision.data.coco import load_split, write_split
from vision.errors import DataError
from vision.evaluation.evaluate import evaluate
from vision.export.task_detection import task_of_checkpoint
from vision.model_folder import read_model_folder
from vision.tasks import Task, get_task, register_task, task_names, unregister_task
from tests.toy_task.task import ToyConfig, save

pytestmark = pytest.mark.slow  # imports Lightning, trains two steps, runs its test and predict loops: 10-20 s

ROOT = Path(__file__).resolve().parents[1]
PARTS = "tests.toy_task"

#: The one registry entry of the fifth task (what a line of ``vision.tasks.BUILTIN`` would hold).
TOY = Task(name="toy", summary="a toy task: per-pixel brightness from an image", package=PARTS,
           evaluation=f"{PARTS}.evaluation", demo_tab="toy")

#: the split's images: height x width (not square, so a swapped axis shows), and how many
HEIGHT, WIDTH, IMAGES = 12, 16, 4


@dataclasses.dataclass(frozen=True)
class Run:
    """A finished ``tools/train.py fit``: its config file, run folder, split and best checkpoint."""

    config: Path
    root: Path
    split: Path
    checkpoint: Path


def _train(*args: str) -> None:
    """``python tools/train.py ARGS``, run in this process (the registration is seen); it must exit with 0."""
    argv = sys.argv
    sys.argv = [str(ROOT / "tools" / "train.py"), *args]
    try:
        with pytest.raises(SystemExit) as exit_:
            runpy.run_path(str(ROOT / "tools" / "train.py"), run_name="__main__")
    finally:
        sys.argv = argv
    assert exit_.value.code == 0, f"tools/train.py {' '.join(args)} exited with {exit_.value.code}"


def _write_split(folder: Path) -> Path:
    """Four PNG images of different brightness (seeded) and their COCO-format split ``split.json``, each image with
    its true brightness (the mean of R, G, B over its pixels, in [0, 1])."""
    rng = np.random.default_rng(0)
    (folder / "images").mkdir(parents=True)
    images = []
    for k in range(IMAGES):
        low = 40 * k
        rgb = rng.integers(low, low + 100, size=(HEIGHT, WIDTH, 3), dtype=np.uint8)
        name = f"images/{k}.png"
        assert cv2.imwrite(str(folder / name), cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR))  # lossless
        images.append({"id": k + 1, "file_name": name, "width": WIDTH, "height": HEIGHT,
                       "brightness": float(rgb.astype(np.float64).mean() / 255.0)})
    split = folder / "split.json"
    write_split(split, {"images": images, "annotations": [], "categories": []})
    return split


def _write_config(folder: Path, split: Path) -> Path:
    """A training config for the toy task: CPU, 2 steps, a CSV log and the best checkpoint by the toy figure, all
    under ``folder/run``."""
    root = folder / "run"
    config = {
        "seed_everything": 0,
        "trainer": {
            "accelerator": "cpu", "devices": 1, "precision": "32-true", "max_steps": 2, "log_every_n_steps": 1,
            "default_root_dir": str(root), "enable_progress_bar": False, "enable_model_summary": False,
            "logger": {"class_path": "lightning.pytorch.loggers.CSVLogger",
                       "init_args": {"save_dir": str(root), "name": "logs"}},
            "callbacks": [{"class_path": "lightning.pytorch.callbacks.ModelCheckpoint",
                           "init_args": {"dirpath": str(root / "checkpoints"), "filename": "best",
                                         "monitor": "val/brightness_mae", "mode": "min", "save_top_k": 1}}],
        },
        "model": {"class_path": f"{PARTS}.lightning.ToyModule", "init_args": {"config": {"hidden": 4}, "lr": 0.05}},
        "data": {"class_path": f"{PARTS}.lightning.ToyDataModule",
                 "init_args": {"train_split": str(split), "val_split": str(split), "test_split": str(split),
                               "batch_size": 2}},
    }
    path = folder / "toy.yaml"
    path.write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")  # JSON is YAML
    return path


@pytest.fixture(scope="module")
def registered() -> Iterator[Task]:
    """The toy task, registered for this module's tests only."""
    task = register_task(TOY)
    try:
        yield task
    finally:
        unregister_task(task.name)


@pytest.fixture(scope="module")
def run(registered: Task, tmp_path_factory: pytest.TempPathFactory) -> Run:
    """``tools/train.py fit --config toy.yaml``: two steps, then the validation that picks the best checkpoint."""
    folder = tmp_path_factory.mktemp("toy")
    split = _write_split(folder)
    config = _write_config(folder, split)
    _train("fit", "--config", str(config))  # seed_everything: 0
    return Run(config=config, root=folder / "run", split=split, checkpoint=folder / "run" / "checkpoints" / "best.ckpt")


def _weights(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {key: value.detach().cpu().clone() for key, value in model.state_dict().items()}


def _assert_same_weights(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> None:
    assert a.keys() == b.keys()
    for key in a:
        torch.testing.assert_close(a[key], b[key], rtol=0, atol=0, msg=key)


def _predictor_results(run: Run) -> list[dict]:
    """The toy predictor (from the checkpoint) on every image of the split: ``[{image_id, brightness}]``."""
    predictor = get_task("toy").resolve("predictor").from_checkpoint(run.checkpoint, device="cpu")
    split = load_split(run.split)
    return [{"image_id": image_id, "brightness": float(predictor.predict(split.load_image(image)).mean())}
            for image_id, image in sorted(split.images.items())]


def _table_figure(output: str, name: str) -> float:
    """The value of row ``name`` of a printed metrics table (:func:`vision.evaluation.evaluate.format_table`)."""
    rows = [line.split() for line in output.splitlines() if line.split()[:1] == [name]]
    assert len(rows) == 1, f"no single {name!r} row in:\n{output}"
    return float(rows[0][1])


def test_the_registered_task_is_seen_by_the_registry(registered: Task) -> None:
    assert get_task("toy") is registered
    assert "toy" in task_names() and "toy" in task_names(predictor=True)
    assert registered.module == f"{PARTS}.task"  # where build_model / load / save are found
    model = registered.build_model({"hidden": 3})
    assert model(torch.rand(2, 3, 5, 7)).shape == (2, 5, 7)


def test_fit_writes_a_checkpoint_of_the_toy_task(run: Run) -> None:
    checkpoint = load_checkpoint(run.checkpoint)
    assert checkpoint["task"] == "toy"  # recorded by ToyModule.on_save_checkpoint
    assert task_of_checkpoint(checkpoint, run.checkpoint) == "toy"
    assert checkpoint["global_step"] == 2
    assert checkpoint["hyper_parameters"]["config"] == {"hidden": 4}
    # the validation of the run was scored by the toy scorer through the TaskEvaluator and logged as val/...
    monitored = [state for name, state in checkpoint["callbacks"].items() if name.startswith("ModelCheckpoint")]
    assert monitored and monitored[0]["monitor"] == "val/brightness_mae"
    logged = [row for file in run.root.rglob("metrics.csv")
              for row in csv.DictReader(file.open(encoding="utf-8")) if row.get("val/brightness_mae")]
    assert len(logged) == 1
    mae = float(logged[0]["val/brightness_mae"])
    assert 0.0 <= mae < 1.0
    assert float(monitored[0]["best_model_score"]) == pytest.approx(mae)
    model, config = get_task("toy").load(run.checkpoint)
    assert config.hidden == 4 and not model.training


def test_train_test_prints_the_toy_figure_and_predict_scores_to_it(run: Run, tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    _train("test", "--config", str(run.config), "--ckpt_path", str(run.checkpoint))
    printed = _table_figure(capsys.readouterr().out, "brightness_mae")
    # the same model on the same images, one by one through the predictor, scores to the figure test printed
    expected = evaluate(run.split, _predictor_results(run), "toy")["brightness_mae"]
    assert printed == pytest.approx(expected, abs=1e-4)  # the table shows 4 decimals
    predictions = tmp_path / "predictions.json"
    _train("predict", "--config", str(run.config), "--ckpt_path", str(run.checkpoint), "--results",
           str(predictions))
    written = json.loads(predictions.read_text(encoding="utf-8"))
    assert sorted(r["image_id"] for r in written) == list(range(1, IMAGES + 1))
    assert evaluate(run.split, predictions, "toy")["brightness_mae"] == pytest.approx(expected, abs=1e-6)


def test_vision_evaluate_scores_the_predictors_results(run: Run, tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    from vision.cli.evaluate import main

    results, out = tmp_path / "results.json", tmp_path / "metrics.json"
    results.write_text(json.dumps(_predictor_results(run)), encoding="utf-8")
    capsys.readouterr()
    assert main(["--split", str(run.split), "--results", str(results), "--task", "toy", "--out", str(out),
                 "--brightness-tolerance", "10"]) == 0
    metrics = json.loads(out.read_text(encoding="utf-8"))
    assert metrics["num_results"] == IMAGES and metrics["brightness_within"] == 1.0  # every error is below 10
    assert metrics["brightness_mae"] == pytest.approx(evaluate(run.split, results, "toy")["brightness_mae"])
    assert _table_figure(capsys.readouterr().out, "brightness_mae") == pytest.approx(metrics["brightness_mae"],
                                                                                     abs=1e-4)
    # the toy task's flag belongs to it: given with another task it is refused
    with pytest.raises(SystemExit) as refused:
        main(["--split", str(run.split), "--results", str(results), "--task", "detection",
              "--brightness-tolerance", "10"])
    assert refused.value.code == 2
    assert "--brightness-tolerance" in capsys.readouterr().err
    # a result missing for an image of the split is one error line naming the results file, not a figure
    results.write_text(json.dumps(_predictor_results(run)[1:]), encoding="utf-8")
    assert main(["--split", str(run.split), "--results", str(results), "--task", "toy"]) == 2
    error = capsys.readouterr().err
    assert error.startswith("error: ") and "results.json" in error and "have no result" in error


def _predict(ckpt: Path, image: Path, out: Path) -> list[dict]:
    from vision.cli.predict import main

    assert main([str(image), "--task", "toy", "--ckpt", str(ckpt), "--out", str(out), "--device", "cpu",
                 "--brightness-map"]) == 0
    return json.loads((out / "results.json").read_text(encoding="utf-8"))


def test_vision_predict_writes_the_brightness_of_an_image(run: Run, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    from vision.cli.predict import main

    image = run.split.parent / "images" / "2.png"
    results = _predict(run.checkpoint, image, tmp_path / "out")
    maps = np.load(tmp_path / "out" / "brightness.npy")
    assert maps.shape == (1, HEIGHT, WIDTH) and maps.dtype == np.float32
    assert results == [{"image_id": 0, "brightness": pytest.approx(float(maps.mean()), abs=1e-6),
                        "file_name": "2.png"}]
    expected = next(r["brightness"] for r in _predictor_results(run) if r["image_id"] == 3)  # images/2.png is id 3
    assert results[0]["brightness"] == pytest.approx(expected, abs=1e-6)
    # the toy task's flag belongs to it: given with another task it is refused before any model is loaded
    capsys.readouterr()
    assert main([str(image), "--task", "forensics", "--ckpt", str(run.checkpoint), "--out", str(tmp_path / "no"),
                 "--brightness-map"]) == 2
    assert "--brightness-map is an option of --task toy" in capsys.readouterr().err
    assert not (tmp_path / "no").exists()


def test_the_model_folder_round_trip(run: Run, tmp_path: Path) -> None:
    from vision.cli.export import main as export

    folder = tmp_path / "toy-model"
    assert export(["--ckpt", str(run.checkpoint), "--out", str(folder)]) == 0
    content = read_model_folder(folder)
    assert content.task == "toy" and content.config == {"hidden": 4}
    assert content.training["validation"]["monitor"] == "val/brightness_mae"
    assert "val/brightness_mae" in content.training["validation"]["metrics"]  # the run's metrics.csv was found
    card = (folder / "README.md").read_text(encoding="utf-8")
    assert card.startswith("# toy model") and f"from {PARTS}.task import load" in card
    assert "vision-predict --task toy --ckpt path/to/this/folder INPUT" in card
    # the folder loads to the checkpoint's weights, through the registry's load
    task = get_task("toy")
    from_checkpoint, config = task.load(run.checkpoint)
    from_folder, folder_config = task.load(folder)
    assert folder_config == config
    _assert_same_weights(_weights(from_folder), _weights(from_checkpoint))
    # vision-predict takes the folder in place of the checkpoint, to the same results
    image = run.split.parent / "images" / "0.png"
    assert _predict(folder, image, tmp_path / "a") == _predict(run.checkpoint, image, tmp_path / "b")
    # the task's own save writes a folder that load reads back
    saved = save(from_checkpoint, config, tmp_path / "saved")
    assert read_model_folder(saved).task == "toy"
    _assert_same_weights(_weights(task.load(saved)[0]), _weights(from_checkpoint))


def test_vision_export_onnx_writes_the_toy_graph(run: Run, tmp_path: Path) -> None:
    """The toy task declares an ONNX graph (``tests/toy_task/onnx.py``): ``vision-export --onnx`` finds it by the
    registry's fixed name, exports it and checks it with onnxruntime, and the file computes the toy brightness."""
    pytest.importorskip("onnxruntime")
    import onnxruntime

    from vision.cli.export import main as export

    folder = tmp_path / "folder"
    assert export(["--ckpt", str(run.checkpoint), "--out", str(folder), "--onnx"]) == 0
    path = folder / "onnx" / "toy.onnx"
    assert path.is_file()
    images = np.random.default_rng(0).random((1, 3, 5, 9), dtype=np.float32)  # another size: the axes are dynamic
    session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    (onnx_maps,) = session.run(None, {"images": images})
    model, _ = get_task("toy").load(run.checkpoint)
    with torch.no_grad():
        torch_maps = model(torch.from_numpy(images)).numpy()
    assert onnx_maps.shape == (1, 5, 9)
    np.testing.assert_allclose(onnx_maps, torch_maps, atol=1e-5)


def test_a_checkpoint_without_its_task_is_told_by_its_training_module(run: Run, tmp_path: Path) -> None:
    """A checkpoint that does not record ``task`` (an older layout) is the toy task's by its training module's class
    path, ``tests.toy_task.lightning.ToyModule``, not by a ``vision.<task>`` name: its config alone (``hidden``)
    would also fit the forensics config."""
    from vision.checkpoint import read_task_checkpoint
    from vision.cli.export import main as export
    from vision.forensics.task import ForensicsConfig

    checkpoint = load_checkpoint(run.checkpoint)
    del checkpoint["task"]
    assert checkpoint["hyper_parameters"]["_class_path"] == f"{PARTS}.lightning.ToyModule"
    legacy = tmp_path / "legacy.ckpt"
    torch.save(checkpoint, legacy)
    assert task_of_checkpoint(checkpoint, legacy) == "toy"
    assert export(["--ckpt", str(legacy), "--out", str(tmp_path / "folder")]) == 0
    assert read_model_folder(tmp_path / "folder").task == "toy"
    with pytest.raises(DataError, match=r"holds the model of another task's training module \(tests.toy_task.lightning.ToyModule\), not a forensics model"):
        read_task_checkpoint(legacy, ForensicsConfig)
    assert read_task_checkpoint(legacy, ToyConfig)[0] == ToyConfig(hidden=4)


def test_the_toy_config_is_checked_by_the_one_schema(registered: Task) -> None:
    """A registered task's config fields get the package's checks with no code of its own."""
    from vision.task_config import ConfigError

    config = registered.resolve("config")
    for bad in (0, 10**6, True, "4", 2.5):
        with pytest.raises(ConfigError, match="ToyConfig.hidden"):
            config(hidden=bad)


def test_the_demo_shows_the_toy_tab_and_its_handler_runs_the_predictor(run: Run, tmp_path: Path) -> None:
    """The toy declares a tab (``tests/toy_task/demo.py``, ``demo_tab="toy"``): ``vision-demo`` takes its checkpoint
    (``--toy-ckpt``), builds its tab beside the package's, and the tab's handler (the ``/toy`` endpoint) gives the
    predictor's brightness of an uploaded image."""
    pytest.importorskip("gradio")
    from gradio import Tab

    from vision.demo.app import build_app, parse_args, tabs
    from vision.demo.handlers import DemoConfig

    assert tabs()[-1] == "toy" and get_task("toy").has("demo")
    assert parse_args(["--tab", "toy", "--toy-ckpt", str(run.checkpoint)]).toy_ckpt == run.checkpoint
    config = DemoConfig(checkpoints={"toy": run.checkpoint}, work_dir=tmp_path / "runs", device="cpu")
    app = build_app(config, None, tab="toy")
    assert [(b.id, b.label) for b in app.blocks.values() if isinstance(b, Tab)][-1] == ("toy", "Toy")
    assert "/toy" in app.get_api_info()["named_endpoints"]
    handler = next(f.fn for f in app.fns.values() if f.api_name == "toy")
    image = run.split.parent / "images" / "2.png"
    picture, summary = handler(str(image))
    assert picture.shape == (HEIGHT, WIDTH) and picture.dtype == np.uint8
    predictor = get_task("toy").resolve("predictor").from_checkpoint(run.checkpoint, device="cpu")
    rgb = cv2.cvtColor(cv2.imread(str(image)), cv2.COLOR_BGR2RGB)
    assert summary.splitlines()[0] == f"2.png: brightness {float(predictor.predict(rgb).mean()):.4f}"
