"""The package's layers, checked on real imports: every module of ``vision`` is imported on its own in a fresh
interpreter state, and the ``vision`` packages it loaded (and whether it loaded torch or Lightning) must be ones its
layer allows. A lower layer never imports a higher one:

    base         vision.errors, vision.rng                      import nothing of vision
    registry     vision.tasks (the task list; parts imported    base; no torch (nothing heavy)
                 by name only when asked for)
    core         vision.data, vision.text, vision.alignment,    base + registry + core
                 vision.checkpoint, vision.device, vision.model_folder
    evaluation   vision.evaluation                              base + registry + data + alignment; no torch
    synthetic    vision.synthetic                               base + registry + data
    geometry     vision.geometry (the shared backbone)          base + registry + core + evaluation
    tasks        vision.tracking, .detection, .forensics        base + registry + core + evaluation + geometry;
                                                                never each other
    combined     vision.concept (detector + tracker together)   the tasks' layer + the tasks it combines
    training     vision.training (what every task shares)       base + registry + core + evaluation
    fitting      vision.<task>.lightning                        its task's (or combined's) layer + training
    top          vision.training.cli, vision.cli, vision.demo,  everything
                 vision.prepare, vision.export

Inference code (each task's ``task`` and ``predictor``, ``vision.cli.predict`` and ``vision.cli.evaluate``) also
loads no ``vision.training`` and not Lightning, and ``vision.cli.evaluate`` no torch.

How: one subprocess (``python -m tests.test_layering``) forks a child per module, so each import starts from an
interpreter that holds no ``vision`` module. To keep this affordable, the parent first imports the heavy third-party
libraries a module's layer may load (numpy, OpenCV, ... then torch, then Lightning): a module that must not load torch
is imported before torch is, one that must not load Lightning before Lightning is. What the check looks at
(``vision.*``, torch, Lightning) is never preloaded where it is forbidden."""

from __future__ import annotations

import json
import os
import pkgutil
import select
import subprocess
import sys
import time
import traceback
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "vision"

BASE = ("vision.errors", "vision.rng")
CORE = ("vision.data", "vision.text", "vision.alignment", "vision.checkpoint", "vision.device",
        "vision.model_folder")
EVALUATION = ("vision.evaluation",)
GEOMETRY = ("vision.geometry",)
TASKS = ("vision.tracking", "vision.detection", "vision.forensics")
COMBINED = ("vision.concept",)
REGISTRY = ("vision.tasks",)
TRAINING = ("vision.training",)
TOP = ("vision.training.cli", "vision.cli", "vision.demo", "vision.prepare", "vision.export")
FIT_MODULES = tuple(f"{task}.lightning" for task in GEOMETRY + TASKS)
INFERENCE = tuple(f"{task}.{part}" for task in GEOMETRY + TASKS + COMBINED for part in ("task", "predictor")) + (
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
    Layer("core", CORE, BASE + REGISTRY + CORE),
    Layer("evaluation", EVALUATION, BASE + REGISTRY + ("vision.data", "vision.alignment")),
    Layer("synthetic", ("vision.synthetic",), BASE + REGISTRY + ("vision.data",)),
    Layer("geometry", GEOMETRY, BASE + REGISTRY + CORE + EVALUATION),
    Layer("tasks", TASKS, BASE + REGISTRY + CORE + EVALUATION + GEOMETRY),
    Layer("combined", COMBINED, BASE + REGISTRY + CORE + EVALUATION + GEOMETRY + ("vision.detection", "vision.tracking")),
    Layer("training", TRAINING, BASE + REGISTRY + CORE + EVALUATION),
    Layer("fitting", FIT_MODULES, BASE + REGISTRY + CORE + EVALUATION + GEOMETRY + TRAINING),
    Layer("combined fitting", ("vision.concept.lightning",),
          BASE + REGISTRY + CORE + EVALUATION + GEOMETRY + ("vision.detection", "vision.tracking") + TRAINING),
    Layer("top", TOP, ("vision",)),
)
EVERYTHING = ("vision",)  # a prefix of every module: the top layer may load anything


def _matches(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def _longest(module: str, prefixes: tuple[str, ...]) -> str | None:
    found = [p for p in prefixes if _matches(module, p)]
    return max(found, key=len) if found else None


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
    bad = sorted({".".join(m.split(".")[:2]) for m in loaded["vision"] if m != "vision" and _longest(m, ok) is None})
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


# -- the probe: run as a script in a fresh interpreter --------------------------------------------------------------

# third-party libraries preloaded before each group of modules; none of them loads vision, torch or Lightning
# unless listed under that group
PRELOAD = {
    "no torch": ("numpy", "scipy", "scipy.optimize", "cv2", "pycocotools.mask", "PIL.Image", "yaml"),
    "no lightning": ("torch", "torchvision", "timm", "open3d", "albumentations", "av", "sklearn"),
    "anything": ("lightning", "lightning.pytorch", "lightning.pytorch.cli", "jsonargparse", "gradio"),
}
CHILD_TIMEOUT = 120.0  # seconds for one module's import
PARALLEL = 2


def _group(module: str) -> str:
    libraries = forbidden_libraries(module)
    return "no torch" if "torch" in libraries else "no lightning" if "lightning" in libraries else "anything"


def _child(module: str, write_fd: int) -> None:
    """In the forked child: import ``module``, write what it loaded as one JSON line, exit without cleanup."""
    import importlib

    result: dict = {"error": None}
    try:
        importlib.import_module(module)
    except BaseException as exc:  # a module that does not import is reported, whatever the error
        result["error"] = "".join(traceback.format_exception_only(type(exc), exc)).strip().splitlines()[-1]
    names = list(sys.modules)
    result["vision"] = sorted(m for m in names if _matches(m, "vision"))
    result["torch"] = "torch" in sys.modules
    result["lightning"] = any(m in sys.modules for m in ("lightning", "pytorch_lightning", "lightning_fabric"))
    with os.fdopen(write_fd, "w") as out:
        out.write(json.dumps(result))
    os._exit(0)


def probe(modules: list[str]) -> dict[str, dict]:
    """``{module: {"vision": [loaded vision modules], "torch": bool, "lightning": bool, "error": str | None}}``."""
    import importlib

    results: dict[str, dict] = {}
    groups = list(PRELOAD)
    for index, (group, libraries) in enumerate(PRELOAD.items()):
        if not any(_group(m) in groups[index:] for m in modules):
            break  # nothing left to import: the heavier libraries need not be loaded
        for library in libraries:
            try:
                importlib.import_module(library)
            except ImportError:
                pass
        assert not any(_matches(m, "vision") for m in sys.modules), "a preloaded library loaded vision"
        if group == "no torch":
            assert "torch" not in sys.modules, "a preloaded library loaded torch"
        if group != "anything":
            assert "lightning" not in sys.modules, "a preloaded library loaded Lightning"
        queue = [m for m in modules if _group(m) == group]
        running: dict[int, tuple[str, int, float, list[str]]] = {}  # read fd -> (module, pid, start, chunks)
        while queue or running:
            while queue and len(running) < PARALLEL:
                module = queue.pop(0)
                read_fd, write_fd = os.pipe()
                pid = os.fork()
                if pid == 0:
                    os.close(read_fd)
                    _child(module, write_fd)
                os.close(write_fd)
                running[read_fd] = (module, pid, time.monotonic(), [])
            ready, _, _ = select.select(list(running), [], [], 1.0)
            for fd in ready:
                chunk = os.read(fd, 1 << 16)
                if chunk:
                    running[fd][3].append(chunk.decode())
                    continue
                module, pid, _, chunks = running.pop(fd)
                os.close(fd)
                os.waitpid(pid, 0)
                results[module] = json.loads("".join(chunks)) if chunks else {
                    "error": "the import crashed the interpreter", "vision": [], "torch": False, "lightning": False}
            for fd, (module, pid, start, _) in list(running.items()):
                if time.monotonic() - start > CHILD_TIMEOUT:
                    os.kill(pid, 9)
                    os.waitpid(pid, 0)
                    os.close(fd)
                    del running[fd]
                    results[module] = {"error": f"the import took over {CHILD_TIMEOUT:.0f} s", "vision": [],
                                       "torch": False, "lightning": False}
    return results


# -- the tests -----------------------------------------------------------------------------------------------------

MODULES = package_modules()
PLACED = [m for m in MODULES if layer_of(m) is not None]
# the fast subset: the modules that must not load torch or Lightning (inference code, the registry, evaluation,
# base), which are probed before Lightning is preloaded
FAST = [m for m in PLACED if _group(m) != "anything"]
REST = [m for m in PLACED if m not in FAST]


def _run_probe(modules: list[str]) -> dict[str, dict]:
    proc = subprocess.run([sys.executable, "-m", "tests.test_layering"], input=json.dumps(modules),
                          capture_output=True, text=True, cwd=ROOT, timeout=900)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def loaded_fast() -> dict[str, dict]:
    return _run_probe(FAST)


@pytest.fixture(scope="module")
def loaded_all() -> dict[str, dict]:
    return _run_probe(REST)


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


if __name__ == "__main__":
    print(json.dumps(probe(json.loads(sys.stdin.read()))))
