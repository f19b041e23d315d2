"""``vision`` (vision.cli.main): one command with a subcommand per action, the converters under ``vision prepare``,
and the earlier script names kept as aliases of the same functions."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import tomllib
from collections import Counter
from importlib.metadata import distribution
from pathlib import Path

import pytest

import vision.cli.main
from vision.cli.main import COMMANDS, main, resolve
from vision.prepare.converter import CONVERTERS

ROOT = Path(__file__).resolve().parents[2]
#: pyproject.toml's console scripts: the one command and the aliases.
SCRIPTS: dict[str, str] = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
#: Earlier script names that are not ``vision-<command>`` or ``vision-prepare-<dataset>``.
RENAMED = {"vision-fetch-opencv-samples": ("prepare", "opencv-samples")}
#: The entry files kept beside the ``vision`` script: the README's training command.
WRAPPERS = {"tools/train.py": "train"}


def subcommand_of(alias: str) -> tuple[str, ...]:
    """The ``vision`` subcommand an earlier script name stands for: ``("predict",)``, ``("prepare", "vos")``."""
    if alias in RENAMED:
        return RENAMED[alias]
    name = alias.removeprefix("vision-")
    if name in COMMANDS:
        return (name,)
    dataset = name.removeprefix("prepare-")
    assert name.startswith("prepare-") and dataset in CONVERTERS, f"{alias} is no vision subcommand"
    return ("prepare", dataset)


def target_of(path: tuple[str, ...]) -> str:
    return CONVERTERS[path[1]].target if path[0] == "prepare" else COMMANDS[path[0]].target


def entry_files() -> list[str]:
    """The ways in: every console script, and every file under tools/, datasets/, demo/ with a ``__main__`` guard."""
    files = [p for folder in ("tools", "datasets", "demo") for p in sorted((ROOT / folder).glob("**/*.py"))]
    guarded = [str(p.relative_to(ROOT)) for p in files if '__name__ == "__main__"' in p.read_text()]
    return [*SCRIPTS, *guarded]


def test_help_lists_every_command_and_imports_none(monkeypatch, capsys):
    imported = []
    monkeypatch.setattr(vision.cli.main.importlib, "import_module", imported.append)
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    assert all(f"  {name} " in out for name in COMMANDS) and imported == []


def test_the_command_module_imports_nothing_of_the_package():
    """``vision --help`` is fast: vision/cli/main.py imports the standard library only."""
    tree = ast.parse((ROOT / "vision" / "cli" / "main.py").read_text())
    modules = [a.name for n in tree.body if isinstance(n, ast.Import) for a in n.names]
    modules += [n.module for n in tree.body if isinstance(n, ast.ImportFrom)]
    assert modules and not [m for m in modules if m.split(".")[0] == "vision"], modules


@pytest.mark.parametrize("name", [n for n in COMMANDS if n != "prepare"])
def test_each_command_reaches_its_main(name, capsys):
    if name == "demo":
        pytest.importorskip("gradio")
    with pytest.raises(SystemExit) as done:
        main([name, "--help"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    assert "usage:" in out and "--help" in out
    if not COMMANDS[name].reruns and name != "fetch-weights":  # fetch-weights names its own program
        assert out.startswith(f"usage: vision {name} ")


@pytest.mark.parametrize("dataset", sorted(CONVERTERS))
def test_each_dataset_reaches_its_converter(dataset, capsys):
    with pytest.raises(SystemExit) as done:
        main(["prepare", dataset, "--help"])
    assert done.value.code == 0
    assert capsys.readouterr().out.startswith(f"usage: vision prepare {dataset} ")


#: What :func:`record` was called with: (its argv, sys.argv during the call).
SEEN: list[tuple[list[str], list[str]]] = []


def record(argv):
    SEEN.append((list(argv), list(sys.argv)))
    return 7


def test_a_command_gets_the_rest_of_the_command_line(monkeypatch):
    """Its argv, and its name in sys.argv for the call only; its exit status is vision's."""
    SEEN.clear()
    monkeypatch.setitem(COMMANDS, "evaluate", COMMANDS["evaluate"]._replace(target=f"{__name__}:record"))
    argv = list(sys.argv)
    assert main(["evaluate", "--task", "detection", "--split", "S.json"]) == 7
    assert SEEN == [(["--task", "detection", "--split", "S.json"], ["vision evaluate"])] and sys.argv == argv


def test_a_command_that_reruns_itself_sees_the_real_command_line(monkeypatch):
    """train keeps sys.argv: Lightning's DDP launcher starts each process with it."""
    SEEN.clear()
    monkeypatch.setitem(COMMANDS, "train", COMMANDS["train"]._replace(target=f"{__name__}:record"))
    assert COMMANDS["train"].reruns
    argv = list(sys.argv)
    assert main(["train", "fit", "--config", "c.yaml"]) == 7
    assert SEEN == [(["fit", "--config", "c.yaml"], argv)]


@pytest.mark.parametrize("argv", [["bogus"], ["prepare", "bogus"], [], ["prepare"]])
def test_an_unknown_or_missing_command_is_one_error_line(argv, capsys):
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.startswith("error: ") and captured.err.count("\n") == 1


def test_prepare_help_lists_every_converter(capsys):
    """Every module of vision/prepare with a ``main`` is a dataset of ``vision prepare``, and ``--help`` names it."""
    with_main = set()
    for path in (ROOT / "vision" / "prepare").glob("*.py"):
        tree = ast.parse(path.read_text())
        if path.stem != "converter" and any(isinstance(n, ast.FunctionDef) and n.name == "main" for n in tree.body):
            with_main.add(f"vision.prepare.{path.stem}:main")
    assert {c.target for c in CONVERTERS.values()} == with_main
    assert main(["prepare", "--help"]) == 0
    out = capsys.readouterr().out
    assert all(f"  {name} " in out for name in CONVERTERS)


def test_every_target_is_a_main():
    for command in [*COMMANDS.values(), *CONVERTERS.values()]:
        assert callable(resolve(command.target)) and command.target.endswith(":main"), command.target


def test_each_alias_runs_the_same_function_as_its_subcommand():
    assert SCRIPTS["vision"] == "vision.cli.main:main"
    for alias, target in SCRIPTS.items():
        if alias != "vision":
            assert resolve(target) is resolve(target_of(subcommand_of(alias))), alias


def test_the_installed_scripts_are_pyprojects():
    """The installed entry points match pyproject.toml (`make setup` reinstalls when it changes)."""
    installed = {ep.name: ep.value for ep in distribution("vision").entry_points if ep.group == "console_scripts"}
    assert installed == SCRIPTS


def test_the_kept_wrapper_calls_the_same_main():
    """tools/train.py imports ``main`` from ``vision train``'s module and calls it; nothing else."""
    for relative, name in WRAPPERS.items():
        tree = ast.parse((ROOT / relative).read_text())
        imports = [(n.module, [a.name for a in n.names]) for n in tree.body if isinstance(n, ast.ImportFrom)]
        assert imports == [(COMMANDS[name].target.partition(":")[0], ["main"])]
        assert not [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef, ast.Assign))]
        assert "sys.path" not in (ROOT / relative).read_text()


def test_entry_files_are_at_most_one_per_action_plus_aliases():
    """One door (`vision`), the earlier names as aliases (at most one per action), and the README's tools/train.py."""
    entries = entry_files()
    aliases = [s for s in SCRIPTS if s != "vision"]
    wrappers = [e for e in entries if e.endswith(".py")]
    assert sorted(wrappers) == sorted(WRAPPERS)
    actions = Counter(subcommand_of(a) for a in aliases)
    assert max(actions.values()) == 1, actions
    assert len(entries) == 1 + len(aliases) + len(WRAPPERS) <= 1 + len(actions) + len(WRAPPERS)


def test_the_installed_command_exits_2_on_an_unknown_command(tmp_path):
    """The exit status a shell sees, from any working folder."""
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    env.pop("PYTHONPATH", None)
    done = subprocess.run([str(Path(sys.executable).parent / "vision"), "bogus"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith("error: unknown command 'bogus'") and done.stderr.count("\n") == 1
