"""The flags each registered task adds to a command line, and the rule both ``vision-predict`` and
``vision-evaluate`` apply to them: a flag of another task than the one asked for is refused, not ignored.

A flag counts as given when its parsed value differs from its default (every task flag's default is what "not
given" means: None, False, or the value the task would use anyway).
"""

from __future__ import annotations

import argparse

from vision.tasks import TASKS

__all__ = ["add_task_flags", "foreign_flags"]


def add_task_flags(parser: argparse.ArgumentParser, part: str, title: str = "{name} (--task {name})") -> None:
    """One argument group per registered task that has ``part`` (``"predict_flags"`` or ``"evaluate_flags"``),
    titled ``title`` (formatted with the task's ``name`` and ``alias``: `` or <task>`` for an alias, else empty);
    the groups' actions are kept on the parser's defaults for :func:`foreign_flags`."""
    flags: dict[str, list[argparse.Action]] = {}
    for task in TASKS:
        if task.has(part):
            alias = f" or {task.alias_of[0]}" if task.alias_of else ""
            group = parser.add_argument_group(title.format(name=task.name, alias=alias))
            task.resolve(part)(group)
            flags[task.name] = list(group._group_actions)
    parser.set_defaults(_task_flags=flags)


def foreign_flags(parser: argparse.ArgumentParser, args: argparse.Namespace,
                  allowed: tuple[str, ...], shared: tuple[str, ...] = ()) -> dict[str, list[argparse.Action]]:
    """The flags given on the command line that belong to tasks other than ``allowed``, but for those whose ``dest``
    is in ``shared``: task name -> actions."""
    foreign: dict[str, list[argparse.Action]] = {}
    for name, actions in args._task_flags.items():
        if name in allowed:
            continue
        given = [a for a in actions
                 if a.dest not in shared and getattr(args, a.dest, None) != parser.get_default(a.dest)]
        if given:
            foreign[name] = given
    return foreign
