"""The import probe of ``tests/test_layering.py``: ``python -m tests.layering_probe`` reads ``{module: preload
group}`` as JSON on stdin and prints ``{module: {"vision": [loaded vision modules], "torch": bool, "lightning": bool,
"error": str | None}}`` as one JSON line.

It forks a child per module, so each import starts from an interpreter that holds no ``vision`` module; this module
therefore imports nothing of ``vision`` (the caller computes each module's group from the layers, which read the
task registry). To keep this affordable, the heavy third-party libraries a group may load are imported before its
modules (numpy, OpenCV, ... then torch, then Lightning): a module that must not load torch is imported before torch
is, one that must not load Lightning before Lightning is."""

from __future__ import annotations

import json
import os
import select
import sys
import time
import traceback

# third-party libraries preloaded before each group of modules, in this order; none of them loads vision, torch or
# Lightning unless listed under that group
PRELOAD = {
    "no torch": ("numpy", "scipy", "scipy.optimize", "cv2", "pycocotools.mask", "PIL.Image", "yaml"),
    "no lightning": ("torch", "torchvision", "timm", "open3d", "albumentations", "av", "sklearn"),
    "anything": ("lightning", "lightning.pytorch", "lightning.pytorch.cli", "jsonargparse", "gradio"),
}
CHILD_TIMEOUT = 120.0  # seconds for one module's import
PARALLEL = 2


def _matches(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


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


def probe(groups: dict[str, str]) -> dict[str, dict]:
    """What importing each module of ``groups`` (module -> its group of :data:`PRELOAD`) loads."""
    import importlib

    results: dict[str, dict] = {}
    names = list(PRELOAD)
    unknown = sorted(set(groups.values()) - set(names))
    assert not unknown, f"unknown preload groups {unknown}"
    for index, (group, libraries) in enumerate(PRELOAD.items()):
        if not any(g in names[index:] for g in groups.values()):
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
        queue = [m for m, g in groups.items() if g == group]
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


if __name__ == "__main__":
    print(json.dumps(probe(json.loads(sys.stdin.read()))))
