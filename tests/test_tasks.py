"""Contract tests of the task registry (:mod:`vision.tasks`), parametrised over every registered task (as timm's
tests are over ``list_models()``): each task has the same parts with the same signatures, and every place that lists
tasks takes them from the registry."""

from __future__ import annotations

import ast
import dataclasses
import importlib.util
import inspect
from pathlib import Path

import pytest
import torch

from vision.task_config import TaskConfig
from vision.errors import InputError
from vision.tasks import PARTS, REQUIRED, TASKS, get_task, task_names

ROOT = Path(__file__).resolve().parents[1]
NAMES = [task.name for task in TASKS]


def test_names_are_unique_and_unknown_names_are_refused():
    assert len(set(NAMES)) == len(NAMES) == len(task_names())
    assert set(task_names(predictor=True)) == {t.name for t in TASKS if t.has("predictor")}
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
    assert task.has("predictor") == (folder / "predictor.py").is_file()
    assert task.has("predict") == (folder / "cli.py").is_file() == task.has("predictor")
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
    if task.has("predictor"):
        assert callable(getattr(task.resolve("predictor"), "from_checkpoint"))


@pytest.mark.parametrize("name", NAMES)
def test_every_part_is_found_by_its_fixed_name(name):
    """The registry's convention (:data:`vision.tasks.PARTS`): every task has the required parts; a part it has
    resolves to a callable (or its data); a module that is one part's alone defines that part; a part the task
    lacks is a ``KeyError`` naming it. An entry holds its name, summary, folders and presentation only."""
    task = get_task(name)
    for part in REQUIRED:
        assert task.has(part), f"{name} lacks {part} ({task.where(part)})"
    for part, (module, attribute) in PARTS.items():
        if not task.has(part):
            with pytest.raises(KeyError, match=f"has no {part}"):
                task.resolve(part)
            continue
        value = task.resolve(part)
        if attribute.isupper():  # data: the scorer's options, the folder's extra keys, the usage line
            assert isinstance(value, (str, tuple, frozenset)), f"{name}.{part}"
        else:
            assert callable(value), f"{name}.{part}"
    assert task.resolve("config").task == name  # the name its checkpoints record
    assert task.evaluate_options, "every scorer states its options"
    assert task.has("evaluate_flags") == task.has("evaluate_args")
    if task.alias_of is not None:
        assert task.alias_of[0] in task_names(predictor=True)
    if task.demo_tab is not None:
        assert task.has("predictor")
    assert [f.name for f in dataclasses.fields(task)] == ["name", "summary", "package", "evaluation", "alias_of",
                                                           "demo_tab", "demo_options", "shared_flags"]


#: Each built-in task's behaviour: its folder and its evaluation file, nothing else (issue 60's target). The shared
#: layers (data, geometry's backbone, training, the CLIs' entrances, the demo's frame) hold no task's behaviour: they
#: iterate the registry.
TASK_FILES = {name: (f"vision/{name}/", f"vision/evaluation/tasks/{name}.py") for name in NAMES}


@pytest.mark.parametrize("name", NAMES)
def test_each_task_lives_in_its_folder_and_its_evaluation_file(name):
    """Every part the registry finds for a built-in task is defined in one of the task's two homes."""
    task = get_task(name)
    homes = TASK_FILES[name]
    for part in PARTS:
        if not task.has(part) or PARTS[part][1].isupper():
            continue
        value = task.resolve(part)
        source = Path(inspect.getsourcefile(inspect.unwrap(value))).resolve().relative_to(ROOT).as_posix()
        assert source.startswith(homes), f"{name}.{part} is defined in {source}, outside {homes}"
    files = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "vision" / name).rglob("*.py"))
    files.append(homes[1])
    print(f"{name}: {len(files)} files: " + ", ".join(files))
    assert (ROOT / homes[1]).is_file()


def test_every_list_of_tasks_comes_from_the_registry():
    from vision.cli.evaluate import build_parser as evaluate_parser
    from vision.cli.predict import build_parser

    choices = next(a.choices for a in build_parser()._actions if a.dest == "task")
    assert tuple(choices) == task_names(predictor=True)
    choices = next(a.choices for a in evaluate_parser()._actions if a.dest == "task")
    assert tuple(choices) == task_names()


def test_an_unknown_task_is_an_error_everywhere():
    """No task falls through to another's behaviour: each shared tool refuses a name the registry lacks."""
    from vision.evaluation.evaluate import validate_scored_parts
    from vision.evaluation.evaluate import evaluate
    from vision.training.evaluator import TaskEvaluator

    for call in (lambda: evaluate({}, [], "depth"), lambda: validate_scored_parts({}, "depth"),
                 lambda: TaskEvaluator("depth")):
        with pytest.raises(InputError, match="unknown task 'depth'"):
            call()


def _name_literals(node: ast.AST) -> set[str]:
    """The string constants of ``node``, also inside a tuple, list or set display (``in ("a", "b")``)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return {node.value}
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return set().union(*(_name_literals(e) for e in node.elts))
    return set()


def _compared_names(tree: ast.AST, names: set[str]) -> list[tuple[int, str]]:
    """``(line, name)`` of every comparison (``==``, ``!=``, ``in``, ``is``, on either side, whatever the left-hand
    side and the quote style) and every ``case`` pattern that involves a task's name as a string constant."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            literals = set().union(*(_name_literals(part) for part in (node.left, *node.comparators)))
        elif isinstance(node, ast.match_case):
            literals = set().union(*(_name_literals(p.value) for p in ast.walk(node.pattern)
                                     if isinstance(p, ast.MatchValue)))
        else:
            continue
        line = node.pattern.lineno if isinstance(node, ast.match_case) else node.lineno
        found += [(line, name) for name in sorted(literals & names)]
    return found


def test_no_task_name_is_compared_outside_its_folder():
    """Behaviour is chosen through the registry: outside a task's two homes (``vision/<task>/``,
    ``vision/evaluation/tasks/<task>.py``) and ``vision/tasks.py``, no code compares anything with a task's name."""
    names = set(NAMES)
    homes = tuple(home for pair in TASK_FILES.values() for home in pair) + ("vision/tasks.py",)
    found = []
    for path in sorted((ROOT / "vision").rglob("*.py")):
        relative = path.relative_to(ROOT).as_posix()
        if relative.startswith(homes):
            continue
        found += [f"{relative}:{line}: {name!r}" for line, name in _compared_names(ast.parse(path.read_text()), names)]
    assert found == []


@pytest.mark.parametrize("source", ["task == 'tracking'", "'tracking' == task", 'x.value == """detection"""',
                                    "kind in ('geometry', 'other')", "name != \"concept\"", "a is 'forensics'",
                                    "match t:\n    case 'tracking':\n        pass"])
def test_the_name_guard_sees_every_form(source):
    """The guard of :func:`test_no_task_name_is_compared_outside_its_folder` catches any quote style and any
    left-hand side (the comparison that hid as ``exc.value == "detection"``)."""
    assert _compared_names(ast.parse(source), set(NAMES))
    assert not _compared_names(ast.parse("task == 'segmentation'; print('tracking')"), set(NAMES))
