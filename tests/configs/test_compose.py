"""Configs compose (vision.training.compose): every shipped config renders through the training CLI byte for byte
as :data:`RENDERED` holds it (the rendered configs of before they were factored onto base files), and the loader's
rule and errors.

The rendered config is ``tools/train.py fit --config C --print_config``: every value LightningCLI resolves, defaults
included, so two configs that render the same train the same model. After an intended change to a config (or to a
class's signature or Lightning's defaults), rewrite the fixtures with ``python -m tests.configs.test_compose
--write`` and review their diff.
"""

from __future__ import annotations

import contextlib
import io
import sys
from pathlib import Path

import pytest
import yaml

from vision.errors import DataError
from vision.training.cli import main
from vision.training.compose import compose, compose_arguments, is_base, merge, needs_composing, shipped_configs

#: the CLI is called with ``args`` while pytest's own arguments are on the command line: LightningCLI warns of that
pytestmark = pytest.mark.filterwarnings("ignore:LightningCLI's args parameter")

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = shipped_configs(ROOT / "configs")
#: the rendered config of each shipped config: ``<task>__<name>.yaml``
RENDERED = Path(__file__).parent / "rendered"


def _fixture(config: Path) -> Path:
    return RENDERED / f"{config.parent.name}__{config.stem}.yaml"


def render(config: Path) -> str:
    """What ``tools/train.py fit --config CONFIG --print_config`` prints."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit) as done:
        main(["fit", "--config", str(config), "--print_config"])
    assert done.value.code in (0, None)
    return out.getvalue()


@pytest.mark.parametrize("config", CONFIGS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_shipped_config_renders_as_before(config):
    assert render(config) == _fixture(config).read_text(encoding="utf-8")


def test_a_fixture_for_every_shipped_config_and_no_other():
    assert sorted(path.name for path in RENDERED.glob("*.yaml")) == sorted(_fixture(c).name for c in CONFIGS)
    assert len(CONFIGS) == 27 and not any(is_base(c) for c in CONFIGS)


def test_shipped_configs_stack_only_on_base_files_and_every_base_is_used():
    """A shipped config is never another's base (the shared parts live in ``_*.yaml``), and no base is orphaned."""
    used = set()
    pending = list(CONFIGS)
    while pending:
        path = pending.pop()
        named = yaml.safe_load(path.read_text(encoding="utf-8")).get("base", [])
        for base in [named] if isinstance(named, str) else named:
            base_path = (path.parent / base).resolve()
            assert is_base(base_path), f"{path} stacks on {base}, a shipped config"
            if base_path not in used:
                used.add(base_path)
                pending.append(base_path)
    assert used == {p.resolve() for p in (ROOT / "configs").rglob("*.yaml") if is_base(p)}


def _write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_mappings_merge_and_everything_else_is_replaced():
    earlier = {"a": {"x": 1, "y": [1, 2]}, "b": 1, "c": {"k": 1}}
    later = {"a": {"y": [3]}, "b": {"new": True}, "c": None, "d": "added"}
    assert merge(earlier, later) == {"a": {"x": 1, "y": [3]}, "b": {"new": True}, "c": None, "d": "added"}
    assert earlier == {"a": {"x": 1, "y": [1, 2]}, "b": 1, "c": {"k": 1}}  # unchanged


def test_bases_merge_in_order_then_the_file_relative_to_each_file(tmp_path):
    _write(tmp_path, "_shared/_root.yaml", "trainer: {max_steps: 1, devices: 1}\nlist: [1, 2]\n")
    _write(tmp_path, "task/_a.yaml", "base: ../_shared/_root.yaml\ntrainer: {max_steps: 2}\nlist: [3]\n")
    _write(tmp_path, "task/_b.yaml", "trainer: {max_steps: 3, precision: 32-true}\n")
    leaf = _write(tmp_path, "task/leaf.yaml", "base: [_a.yaml, _b.yaml]\ntrainer: {devices: 4}\nlr: 1e-3\n")
    assert compose(leaf) == {"trainer": {"max_steps": 3, "devices": 4, "precision": "32-true"}, "list": [3],
                             "lr": 1e-3}
    assert needs_composing(leaf)


def test_references_take_values_of_the_composed_config(tmp_path):
    _write(tmp_path, "_base.yaml", "trainer:\n  logger: {save_dir: '${trainer.default_root_dir}'}\n"
                                   "  callbacks: [{dirpath: '${trainer.default_root_dir}/checkpoints'}]\n"
                                   "  steps: ${model.steps}\n")
    leaf = _write(tmp_path, "leaf.yaml", "base: _base.yaml\ntrainer: {default_root_dir: runs/x}\nmodel: {steps: 7}\n")
    trainer = compose(leaf)["trainer"]
    assert trainer["logger"]["save_dir"] == "runs/x"
    assert trainer["callbacks"] == [{"dirpath": "runs/x/checkpoints"}]
    assert trainer["steps"] == 7  # a whole-string reference keeps the value's type


def test_a_plain_config_is_handed_over_as_its_path(tmp_path):
    plain = _write(tmp_path, "plain.yaml", "trainer: {max_steps: 1}\n")
    composed = _write(tmp_path, "leaf.yaml", "base: plain.yaml\ntrainer: {max_steps: 2}\n")
    assert not needs_composing(plain)
    assert compose_arguments(["fit", "--config", str(plain), "--x", "1"]) == ["fit", "--config", str(plain), "--x", "1"]
    for args in (["--config", str(composed)], [f"--config={composed}"], ["-c", str(composed)]):
        option, text = compose_arguments(args)
        assert option == args[0].split("=")[0] and yaml.safe_load(text) == {"trainer": {"max_steps": 2}}


def test_a_missing_base_names_both_files(tmp_path):
    leaf = _write(tmp_path, "leaf.yaml", "base: _nowhere.yaml\n")
    with pytest.raises(DataError, match="no such config file") as error:
        compose(leaf)
    assert str(tmp_path / "_nowhere.yaml") in str(error.value) and str(leaf.resolve()) in str(error.value)


def test_a_cycle_of_bases_is_named(tmp_path):
    _write(tmp_path, "_a.yaml", "base: _b.yaml\n")
    _write(tmp_path, "_b.yaml", "base: _a.yaml\n")
    leaf = _write(tmp_path, "leaf.yaml", "base: _a.yaml\n")
    with pytest.raises(DataError, match="cycle") as error:
        compose(leaf)
    assert "_a.yaml -> " in str(error.value) and "_b.yaml" in str(error.value)
    own = _write(tmp_path, "self.yaml", "base: self.yaml\n")
    with pytest.raises(DataError, match="cycle"):
        compose(own)


@pytest.mark.parametrize("value", ["3", "[_a.yaml, 3]", "{a: b}", "''", "null"])
def test_base_must_be_a_path_or_a_list_of_paths(tmp_path, value):
    _write(tmp_path, "_a.yaml", "x: 1\n")
    leaf = _write(tmp_path, "leaf.yaml", f"base: {value}\n")
    with pytest.raises(DataError, match="base is a path or a list of paths") as error:
        compose(leaf)
    assert str(leaf) in str(error.value)


@pytest.mark.parametrize("text, message", [("- a\n- b\n", "a config is a YAML mapping"),
                                           ("a: [1\n", "not valid YAML")])
def test_a_base_that_is_not_a_mapping_is_named(tmp_path, text, message):
    bad = _write(tmp_path, "_bad.yaml", text)
    leaf = _write(tmp_path, "leaf.yaml", "base: _bad.yaml\n")
    with pytest.raises(DataError, match=message) as error:
        compose(leaf)
    assert str(bad) in str(error.value)


@pytest.mark.parametrize("text, message", [
    ("a: ${b.c}\nb: {}\n", "names no key"),
    ("a: ${b}\nb: ${c}\nc: 1\n", "holds a reference itself"),
    ("a: x/${b}\nb: [1]\n", "must be a string or a number"),
])
def test_bad_references_are_errors(tmp_path, text, message):
    leaf = _write(tmp_path, "leaf.yaml", text)
    with pytest.raises(DataError, match=message) as error:
        compose(leaf)
    assert str(leaf) in str(error.value)


def test_the_training_cli_reports_a_bad_base_in_one_line(tmp_path, capsys):
    leaf = _write(tmp_path, "leaf.yaml", "base: _nowhere.yaml\n")
    with pytest.raises(SystemExit) as done:
        main(["fit", "--config", str(leaf), "--print_config"])
    assert done.value.code == 2
    errors = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and "_nowhere.yaml" in errors[0]


if __name__ == "__main__":  # python -m tests.configs.test_compose --write: rewrite the fixtures (module docstring)
    if sys.argv[1:] != ["--write"]:
        raise SystemExit("usage: python -m tests.configs.test_compose --write")
    for shipped in CONFIGS:
        _fixture(shipped).write_text(render(shipped), encoding="utf-8")
        print(_fixture(shipped).relative_to(ROOT))
