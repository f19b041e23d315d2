"""Every shipped config parses and resolves through the training CLI (classes importable, arguments typed)."""

from pathlib import Path

import pytest

from vision.training.cli import main
from vision.training.compose import shipped_configs

CONFIGS = shipped_configs(Path(__file__).resolve().parents[2] / "configs")  # not the _*.yaml bases


@pytest.mark.parametrize("config", CONFIGS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_config_resolves(config, capsys):
    with pytest.raises(SystemExit) as done:
        main(["fit", "--config", str(config), "--print_config"])
    assert done.value.code in (0, None)
    printed = capsys.readouterr().out
    assert "class_path" in printed and "trainer:" in printed


def test_configs_exist():
    assert any(p.parent.name == "geometry" and p.name == "tiny.yaml" for p in CONFIGS)
