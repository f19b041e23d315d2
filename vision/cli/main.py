"""``vision``: the one command, with a subcommand per action.

    vision train --config configs/detection/tiny.yaml          (vision.cli.train)
    vision predict --task detection --ckpt CKPT INPUT ...      (vision.cli.predict)
    vision prepare vos DAVIS --out datasets/davis2017          (vision.prepare.converter: one per dataset)

Each subcommand hands the rest of the command line to an existing ``main(argv) -> int`` and returns its exit status,
so ``vision predict --help`` is ``vision-predict --help``. A subcommand's module is imported only when it runs:
``vision --help`` loads nothing of the package. An unknown subcommand is one ``error:`` line and exit status 2.
"""

from __future__ import annotations

import importlib
import sys
import warnings
from collections.abc import Mapping, Sequence
from typing import NamedTuple

__all__ = ["COMMANDS", "Command", "dispatch", "main", "resolve"]


class Command(NamedTuple):
    """A subcommand: the ``"module:function"`` it runs (a ``main(argv) -> int``), its one-line summary, and whether
    it starts copies of its own process from ``sys.argv`` (``reruns``: Lightning's DDP launcher does)."""

    target: str
    summary: str
    reruns: bool = False


#: The subcommands of ``vision``, in the order ``vision --help`` lists them.
COMMANDS: dict[str, Command] = {
    "train": Command("vision.cli.train:main", "train, validate, test or predict any task from a YAML config",
                     reruns=True),
    "predict": Command("vision.cli.predict:main", "run a trained model on images, a video or a live stream"),
    "evaluate": Command("vision.cli.evaluate:main", "score a results file against a split"),
    "export": Command("vision.cli.export:main", "write a checkpoint as a model folder (--onnx: ONNX graphs too)"),
    "demo": Command("vision.demo.app:main", "serve the Gradio demo (the demo extra)"),
    "screenshots": Command("vision.demo.screenshots:main", "screenshot each tab of a running demo"),
    "synthetic": Command("vision.cli.synthetic:main", "render a synthetic split"),
    "prepare": Command("vision.prepare.converter:main", "convert or build a dataset: vision prepare <dataset>"),
    "fetch-weights": Command("vision.cli.fetch_weights:main", "bring the registered pretrained weight files"),
    "fit-light-points": Command("vision.tracking.fit_light_points:main",
                                "fit G2TAM's light point head (a model folder)"),
    "recipe": Command("vision.cli.recipe:main", "check a paper-scale recipe's inputs; print or run its training"),
}


def resolve(target: str):
    """The function ``target`` (``"module:function"``) names, importing its module."""
    module, _, attr = target.partition(":")
    return getattr(importlib.import_module(module), attr)


def _help(prog: str, commands: Mapping[str, Command], what: str) -> str:
    width = max(len(name) for name in commands) + 2
    lines = [f"usage: {prog} <{what}> [arguments]", "",
             f"{prog} <{what}> --help shows that {what}'s own arguments.", "", f"{what}s:"]
    lines += [f"  {name:<{width}}{command.summary}" for name, command in commands.items()]
    return "\n".join(lines)


def dispatch(prog: str, commands: Mapping[str, Command], argv: Sequence[str], what: str = "command") -> int:
    """Run the subcommand ``argv[0]`` of ``commands`` on ``argv[1:]``; ``-h`` / ``--help`` lists the subcommands.

    For the call, ``sys.argv`` is ``["<prog> <name>"]`` (restored after it), as argparse names the program in its
    usage line after ``sys.argv[0]``. A command that ``reruns`` keeps the real command line instead, so each process
    it starts runs the same command (its usage line then names ``prog`` alone); LightningCLI's warning that it was
    given arguments beside ``sys.argv``'s is silenced, as they are the same arguments.
    """
    if argv and argv[0] in ("-h", "--help"):
        print(_help(prog, commands, what))
        return 0
    if not argv:
        print(f"error: give a {what}: {', '.join(commands)} ({prog} --help)", file=sys.stderr)
        return 2
    name, rest = argv[0], list(argv[1:])
    if name not in commands:
        print(f"error: unknown {what} {name!r}; one of {', '.join(commands)} ({prog} --help)", file=sys.stderr)
        return 2
    command = commands[name]
    function = resolve(command.target)
    if command.reruns:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="LightningCLI's args parameter is intended")
            return function(rest)
    saved, sys.argv = sys.argv, [f"{prog} {name}"]
    try:
        return function(rest)
    finally:
        sys.argv = saved


def main(argv: Sequence[str] | None = None) -> int:
    """``vision <command> [arguments]``: run ``command`` on ``argv`` (None: ``sys.argv[1:]``); its exit status."""
    return dispatch("vision", COMMANDS, list(sys.argv[1:] if argv is None else argv))
