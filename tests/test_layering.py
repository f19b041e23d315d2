"""The package's layers, checked on real imports: every module of ``vision`` is imported on its own in a fresh
interpreter state, and the ``vision`` packages it loaded (and whether it loaded torch or Lightning) must be ones its
layer allows. A lower layer never imports a higher one:

    base         vision.errors, vision.rng                      import nothing of vision
    registry     vision.tasks (the task list; parts imported    base; no torch (nothing heavy)
                 by name only when asked for)
    core         vision.data, vision.text, vision.alignment,    base + core (never the registry)
                 vision.task_config, vision.checkpoint,
                 vision.provenance, vision.device, vision.model_folder,
                 vision.weights (the pretrained files and their networks)
    card         vision.export.model_card (a model folder's     base + registry + core
                 README, as the registry describes its task)
    evaluation   vision.evaluation                              base + registry + data + alignment; no torch
    synthetic    vision.synthetic                               base + registry + data
    geometry     vision.geometry (the shared backbone)          base + registry + core + card + evaluation
    tasks        every other registered task (vision.tasks.     base + registry + core + card + evaluation +
                 TASKS) but those that combine tasks            geometry; never each other
    combined     each task that combines others (COMBINES:      the tasks' layer + the tasks it combines
                 vision.concept, detector + tracker together)
    training     vision.training (what every task shares)       base + registry + core + evaluation
    fitting      vision.<task>.lightning (the registry's        its task's (or combined's) layer + training
                 ``lightning`` modules)
    top          vision.training.cli, vision.cli, vision.demo,  everything
                 vision.prepare, vision.export, each task's
                 entrances (cli, demo, demo_handlers, onnx,
                 fit_light_points in its folder)

A package whose module a layer may load may itself be loaded (Python imports a module's parents first: a task's
``save`` loads ``vision.export`` for its card). The task packages come from the registry (``vision/<name>/`` of each
:data:`vision.tasks.TASKS` entry); only the roles of the backbone and of the combining tasks are named here, so a new
task falls in the tasks' layer.

Inference code (each task's ``task`` and ``predictor``, ``vision.cli.predict`` and ``vision.cli.evaluate``) also
loads no ``vision.training`` and not Lightning, and ``vision.cli.evaluate`` no torch.

How: one subprocess (``python -m tests.layering_probe``, which imports nothing of ``vision``) forks a child per
module, so each import starts from an interpreter that holds no ``vision`` module; see that module for how the heavy
third-party libraries are preloaded without hiding what the check looks at."""

from __future__ import annotations

import json
import pkgutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from vision.tasks import TASKS as REGISTERED

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "vision"

#: Each registered task's package (``vision/<name>/``) and its LightningModule's module, in registry order.
TASK_PACKAGES: dict[str, str] = {f"vision.{task.name}": task.where("lightning")[0] for task in REGISTERED}
#: The shared backbone: the registered task every other task may build on.
BACKBONE = "vision.geometry"
#: The registered tasks that combine others, with the tasks each combines.
COMBINES: dict[str, tuple[str, ...]] = {"vision.concept": ("vision.detection", "vision.tracking")}

BASE = ("vision.errors", "vision.rng")
CORE = ("vision.data", "vision.text", "vision.alignment", "vision.task_config", "vision.checkpoint",
        "vision.provenance", "vision.device", "vision.model_folder", "vision.weights")
CARD = ("vision.export.model_card",)
EVALUATION = ("vision.evaluation",)
GEOMETRY = (BACKBONE,)
TASKS = tuple(p for p in TASK_PACKAGES if p != BACKBONE and p not in COMBINES)
REGISTRY = ("vision.tasks",)
TRAINING = ("vision.training",)
#: Each task's entrances, kept in its folder: its command-line parts (``cli.py``, ``fit_light_points.py``), its demo
#: tab and its logic (``demo.py``, ``demo_handlers.py``) and its ONNX graphs (``onnx.py``). They belong to the layer
#: of the CLIs, the demo and the export (the Track tab hosts the concept prompts; every tab uses :mod:`vision.demo`,
#: every graph :mod:`vision.export.graphs`).
ENTRANCE_PARTS = ("cli", "demo", "demo_handlers", "onnx", "fit_light_points")
ENTRANCES = tuple(f"{task}.{part}" for task in TASK_PACKAGES for part in ENTRANCE_PARTS)
TOP = ("vision.training.cli", "vision.cli", "vision.demo", "vision.prepare", "vision.export") + ENTRANCES
FIT_MODULES = tuple(TASK_PACKAGES[p] for p in GEOMETRY + TASKS)
INFERENCE = tuple(f"{task}.{part}" for task in TASK_PACKAGES for part in ("task", "predictor")) + (
    "vision.cli.predict", "vision.cli.evaluate")
NO_TORCH = EVALUATION + REGISTRY + ("vision.cli.evaluate",)


@dataclass(frozen=True)
class Layer:
    """A layer: the packages / modules it holds (name prefixes) and what they may load besides their own package."""

    name: str
    members: tuple[str, ...]
    may_import: tuple[str, ...]


LAYERS = (
    Layer("base", BASE + ("vision",), ()),
    Layer("registry", REGISTRY, BASE),
    Layer("core", CORE, BASE + CORE),
    Layer("card", CARD, BASE + REGISTRY + CORE),
    Layer("evaluation", EVALUATION, BASE + REGISTRY + ("vision.data", "vision.alignment")),
    Layer("synthetic", ("vision.synthetic",), BASE + REGISTRY + ("vision.data",)),
    Layer("geometry", GEOMETRY, BASE + REGISTRY + CORE + CARD + EVALUATION),
    Layer("tasks", TASKS, BASE + REGISTRY + CORE + CARD + EVALUATION + GEOMETRY),
    *(Layer(f"combined ({package})", (package,), BASE + REGISTRY + CORE + CARD + EVALUATION + GEOMETRY + parts)
      for package, parts in COMBINES.items()),
    Layer("training", TRAINING, BASE + REGISTRY + CORE + EVALUATION),
    Layer("fitting", FIT_MODULES, BASE + REGISTRY + CORE + CARD + EVALUATION + GEOMETRY + TRAINING),
    *(Layer(f"combined fitting ({package})", (TASK_PACKAGES[package],),
            BASE + REGISTRY + CORE + CARD + EVALUATION + GEOMETRY + parts + TRAINING)
      for package, parts in COMBINES.items()),
    Layer("top", TOP, ("vision",)),
)
EVERYTHING = ("vision",)  # a prefix of every module: the top layer may load anything


def _matches(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def _longest(module: str, prefixes: tuple[str, ...]) -> str | None:
    found = [p for p in prefixes if _matches(module, p)]
    return max(found, key=len) if found else None


def _parent_of(module: str, prefixes: tuple[str, ...]) -> bool:
    """Whether ``module`` is a package above one of ``prefixes`` (loaded because Python imports parents first)."""
    return any(p.startswith(module + ".") for p in prefixes)


def layer_of(module: str) -> Layer | None:
    """The layer whose most specific member holds ``module`` (``vision.tracking.lightning`` is fitting, not tasks)."""
    best = None
    for layer in LAYERS:
        prefix = _longest(module, layer.members)
        if prefix is not None and (best is None or len(prefix) > len(best[0])):
            best = (prefix, layer)
    return None if best is None else best[1]


def allowed(module: str) -> tuple[str, ...]:
    """Prefixes of the ``vision`` modules ``module`` may load besides the root package: its layer's and its own
    top-level package's."""
    layer = layer_of(module)
    assert layer is not None, module
    own = ".".join(module.split(".")[:2])
    return EVERYTHING if layer.name == "top" else layer.may_import + (own,)


def forbidden_libraries(module: str) -> tuple[str, ...]:
    """The heavy libraries ``module`` must not load: ``"torch"`` and/or ``"lightning"``."""
    if _longest(module, NO_TORCH):
        return ("torch", "lightning")
    if _longest(module, INFERENCE) or _longest(module, BASE):
        return ("lightning",)
    return ()


def violations(module: str, loaded: dict) -> list[str]:
    """What ``module`` loaded against its layer: one line per rule broken."""
    layer = layer_of(module)
    if loaded.get("error"):
        return [f"{module} does not import: {loaded['error']}"]
    problems = []
    ok = allowed(module)
    bad = sorted({".".join(m.split(".")[:2]) for m in loaded["vision"]
                  if m != "vision" and _longest(m, ok) is None and not _parent_of(m, ok)})
    if bad:
        problems.append(f"{module} ({layer.name}: may load {', '.join(ok)}) loads {', '.join(bad)}")
    if _longest(module, INFERENCE) and any(_matches(m, "vision.training") for m in loaded["vision"]):
        problems.append(f"{module} is inference code and loads vision.training")
    for library in forbidden_libraries(module):
        if loaded[library]:
            problems.append(f"{module} ({layer.name}) loads {library}")
    return problems


def package_modules() -> list[str]:
    """Every module and package under ``vision/``, found on disk (nothing is imported); ``__main__`` left out."""
    found = ["vision"]

    def walk(path: Path, prefix: str) -> None:
        for info in pkgutil.iter_modules([str(path)]):
            if info.name == "__main__":
                continue
            name = f"{prefix}.{info.name}"
            found.append(name)
            if info.ispkg:
                walk(path / info.name, name)

    walk(PACKAGE, "vision")
    return sorted(found)


def _group(module: str) -> str:
    """The preload group of ``module`` in the probe (:data:`tests.layering_probe.PRELOAD`): the heaviest libraries
    it may load."""
    libraries = forbidden_libraries(module)
    return "no torch" if "torch" in libraries else "no lightning" if "lightning" in libraries else "anything"


# -- the tests -----------------------------------------------------------------------------------------------------

MODULES = package_modules()
PLACED = [m for m in MODULES if layer_of(m) is not None]
# the fast subset: the modules that must not load torch or Lightning (inference code, the registry, evaluation,
# base), which are probed before Lightning is preloaded
FAST = [m for m in PLACED if _group(m) != "anything"]
REST = [m for m in PLACED if m not in FAST]


def _run_probe(modules: list[str]) -> dict[str, dict]:
    proc = subprocess.run([sys.executable, "-m", "tests.layering_probe"],
                          input=json.dumps({m: _group(m) for m in modules}), capture_output=True, text=True, cwd=ROOT,
                          timeout=900)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def loaded_fast() -> dict[str, dict]:
    return _run_probe(FAST)


@pytest.fixture(scope="module")
def loaded_all() -> dict[str, dict]:
    return _run_probe(REST)


def test_the_named_roles_are_registered_tasks():
    """The backbone and the combining tasks are tasks of the registry, each a package of ``vision``; every other
    registered task is in the tasks' layer."""
    named = {BACKBONE, *COMBINES, *(p for parts in COMBINES.values() for p in parts)}
    assert named <= set(TASK_PACKAGES), sorted(named - set(TASK_PACKAGES))
    assert all((PACKAGE / p.split(".")[1] / "__init__.py").is_file() for p in TASK_PACKAGES)
    assert set(GEOMETRY + TASKS + tuple(COMBINES)) == set(TASK_PACKAGES)


def test_every_module_has_a_layer():
    assert not [m for m in MODULES if layer_of(m) is None], "place these modules in a layer of tests/test_layering.py"


@pytest.mark.timeout(900)
@pytest.mark.parametrize("module", FAST)
def test_inference_and_light_modules_keep_to_their_layer(module, loaded_fast):
    problems = violations(module, loaded_fast[module])
    assert not problems, "\n".join(problems)


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.parametrize("module", REST)
def test_every_module_keeps_to_its_layer(module, loaded_all):
    problems = violations(module, loaded_all[module])
    assert not problems, "\n".join(problems)
