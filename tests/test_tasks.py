"""Contract tests of the task registry (:mod:`vision.tasks`), parametrised over every registered task (as timm's
tests are over ``list_models()``): each task has the same parts with the same signatures, and every place that lists
tasks takes them from the registry."""

from __future__ import annotations

import importlib.util
import inspect
import re
from pathlib import Path

import pytest
import torch

from vision.checkpoint import TaskConfig
from vision.errors import InputError
from vision.tasks import TASKS, get_task, task_names

ROOT = Path(__file__).resolve().parents[1]
NAMES = [task.name for task in TASKS]


def test_names_are_unique_and_unknown_names_are_refused():
    assert len(set(NAMES)) == len(NAMES) == len(task_names())
    assert set(task_names(predictor=True)) == {t.name for t in TASKS if t.predictor is not None}
    with pytest.raises(InputError, match="unknown task 'segmentation'; expected one of geometry"):
        get_task("segmentation")


@pytest.mark.parametrize("name", NAMES)
def test_every_task_has_its_folder_and_parts(name):
    """The folder of the task's config module holds the same parts as every task's; a package task's tests mirror
    it under ``tests/`` (a task registered from elsewhere has its folder where its config lives)."""
    task = get_task(name)
    folder = Path(importlib.util.find_spec(task.module).origin).parent
    for part in ("task.py", "lightning.py", "results.py"):
        assert (folder / part).is_file(), f"{folder}/{part}"
    assert (task.predictor is not None) == (folder / "predictor.py").is_file()
    if folder.parent == ROOT / "vision":
        assert (ROOT / "tests" / folder.name).is_dir(), f"tests/{folder.name} mirrors vision/{folder.name}"
    assert callable(task.resolve("results"))


@pytest.mark.parametrize("name", NAMES)
def test_config_and_build_model_share_one_signature(name):
    task = get_task(name)
    config_cls = task.resolve("config")
    assert issubclass(config_cls, TaskConfig)
    config = config_cls()
    assert config_cls.from_value(config.to_dict()) == config
    build_model = task.resolve("build_model")
    assert list(inspect.signature(build_model).parameters) == ["config"]
    assert inspect.signature(build_model).parameters["config"].default is None
    model = task.build_model(None)
    assert isinstance(model, torch.nn.Module)
    assert type(task.build_model(config.to_dict())) is type(model)


@pytest.mark.parametrize("name", NAMES)
def test_load_reads_a_checkpoint_onto_a_device(name, tmp_path):
    """``load(checkpoint, device=...)`` on the layout the task's LightningModule writes: config under
    ``hyper_parameters.config``, weights under ``model.``; the model comes back in eval mode with the same weights."""
    task = get_task(name)
    parameters = inspect.signature(task.resolve("load")).parameters
    assert list(parameters)[:2] == ["checkpoint", "device"] and parameters["device"].default == "cpu"
    torch.manual_seed(0)
    config = task.resolve("config")()
    model = task.build_model(config)
    path = tmp_path / f"{name}.ckpt"
    torch.save({"state_dict": {f"model.{k}": v for k, v in model.state_dict().items()},
                "hyper_parameters": {"config": config.to_dict()}}, path)
    loaded, loaded_config = task.load(path, device="cpu")
    assert loaded_config == config and not loaded.training
    mine, theirs = model.state_dict(), loaded.state_dict()
    assert mine.keys() == theirs.keys()
    for key in mine:  # bitwise, nan (an unset reference statistic) equal to nan
        torch.testing.assert_close(theirs[key], mine[key], rtol=0, atol=0, equal_nan=True, msg=key)
    assert {p.device.type for p in loaded.parameters()} <= {"cpu"}


@pytest.mark.parametrize("name", NAMES)
def test_lightning_module_and_predictor_resolve(name):
    import lightning as L

    task = get_task(name)
    assert issubclass(task.resolve("lightning"), L.LightningModule)
    if task.predictor is not None:
        assert callable(getattr(task.resolve("predictor"), "from_checkpoint"))


PARTS = ("config", "lightning", "results", "scorer", "split_check", "results_check", "evaluate_flags",
         "evaluate_args", "predictor", "predict", "predict_flags", "predict_check", "stream", "demo", "export_graphs")


@pytest.mark.parametrize("name", NAMES)
def test_every_named_part_resolves(name):
    """Every ``"module:attribute"`` of the entry imports and is callable (a typo fails here, not in a user's run)."""
    task = get_task(name)
    for part in PARTS:
        if getattr(task, part) is not None:
            assert callable(task.resolve(part)), f"{name}.{part}"
    assert task.resolve("config").task == name  # the name its checkpoints record
    assert task.evaluate_options, "every scorer states its options"
    if task.alias_of is not None:
        assert task.alias_of[0] in task_names(predictor=True)
    if task.demo_tab is not None:
        assert task.predictor is not None


def test_every_list_of_tasks_comes_from_the_registry():
    from vision.cli.evaluate import build_parser as evaluate_parser
    from vision.cli.predict import build_parser

    choices = next(a.choices for a in build_parser()._actions if a.dest == "task")
    assert tuple(choices) == task_names(predictor=True)
    choices = next(a.choices for a in evaluate_parser()._actions if a.dest == "task")
    assert tuple(choices) == task_names()


def test_an_unknown_task_is_an_error_everywhere():
    """No task falls through to another's behaviour: each shared tool refuses a name the registry lacks."""
    from vision.data.schema import validate_scored_parts
    from vision.evaluation.evaluate import evaluate
    from vision.training.evaluator import TaskEvaluator

    for call in (lambda: evaluate({}, [], "depth"), lambda: validate_scored_parts({}, "depth"),
                 lambda: TaskEvaluator("depth")):
        with pytest.raises(InputError, match="unknown task 'depth'"):
            call()


#: a task's name in quotes, compared: ``== "tracking"``, ``!= 'concept'``, ``in ("tracking", "concept")``
_COMPARED = re.compile(r"""(==|!=|\bin)\s*[(\[{]?\s*["'](%s)["']""" % "|".join(map(re.escape, NAMES)))


def test_no_task_name_is_compared_outside_its_folder():
    """Behaviour is chosen through the registry: outside ``vision/<task>/`` and ``vision/tasks.py`` no code compares
    a task (``task``, ``args.task``, ``folder.task``, ...) with a task's name."""
    found = []
    for path in sorted((ROOT / "vision").rglob("*.py")):
        relative = path.relative_to(ROOT).as_posix()
        if relative == "vision/tasks.py":
            continue
        for number, line in enumerate(path.read_text().splitlines(), 1):
            for match in _COMPARED.finditer(line):
                compared_task = "task" in line[:match.start()]  # not a forensic tool or a layer called geometry
                if compared_task and not relative.startswith(f"vision/{match.group(2)}/"):
                    found.append(f"{relative}:{number}: {line.strip()}")
    assert found == []
