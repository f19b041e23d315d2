"""The weights folder and the check of a file in it (vision/weights/store.py): ``$VISION_WEIGHTS_DIR``, else
``$XDG_CACHE_HOME/vision/weights``, else ``~/.cache/vision/weights``; a missing, corrupt or truncated file is a
``WeightsError`` naming the file and the command that fetches it; the registered file passes (a stand-in entry, and
a real file where ``../shared/weights`` is present)."""

from __future__ import annotations

import dataclasses
import hashlib
import os
import shutil

import pytest

from tests.conftest import shared_folder
from vision.errors import InputError
from vision.weights import ENV, REGISTRY, WeightsError, sha256_of, weights_dir, weights_path
from vision.weights import registry as registry_module

DATA = b"stand-in weights " * 200


@pytest.fixture
def stand_in(monkeypatch):
    """The registry with one more entry, ``stand-in`` (file ``stand_in.pt``, the sha256 of :data:`DATA`)."""
    item = dataclasses.replace(REGISTRY["alike-t"], name="stand-in", file="stand_in.pt",
                               sha256=hashlib.sha256(DATA).hexdigest())
    monkeypatch.setattr(registry_module, "REGISTRY", {**REGISTRY, item.name: item})
    return item


def test_env_overrides(monkeypatch, tmp_path):
    monkeypatch.setenv(ENV, str(tmp_path / "mine"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert weights_dir() == tmp_path / "mine"


def test_xdg_fallback(monkeypatch, tmp_path):
    monkeypatch.delenv(ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert weights_dir() == tmp_path / "xdg" / "vision" / "weights"
    monkeypatch.setenv(ENV, "")  # an empty override is no override
    assert weights_dir() == tmp_path / "xdg" / "vision" / "weights"


def test_home_fallback(monkeypatch, tmp_path):
    monkeypatch.delenv(ENV, raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert weights_dir() == tmp_path / ".cache" / "vision" / "weights"


def test_folder_is_not_created(monkeypatch, tmp_path):
    monkeypatch.setenv(ENV, str(tmp_path / "new"))
    weights_dir()
    assert not (tmp_path / "new").exists()


def test_missing_file_names_the_command(stand_in, tmp_path):
    with pytest.raises(WeightsError) as info:
        weights_path("stand-in", tmp_path)
    message = str(info.value)
    assert "\n" not in message and str(tmp_path / "stand_in.pt") in message
    assert "vision-fetch-weights stand-in" in message and "--from DIR" in message


def test_missing_file_in_default_folder(stand_in, monkeypatch, tmp_path):
    monkeypatch.setenv(ENV, str(tmp_path))
    with pytest.raises(WeightsError, match="vision-fetch-weights stand-in"):
        weights_path("stand-in")


@pytest.mark.parametrize("content", [b"another file", DATA[:-1], b""], ids=["corrupt", "truncated", "empty"])
def test_wrong_file(stand_in, tmp_path, content):
    (tmp_path / "stand_in.pt").write_bytes(content)
    with pytest.raises(WeightsError, match=r"sha256 .*not the registered .*vision-fetch-weights stand-in"):
        weights_path("stand-in", tmp_path)
    assert weights_path("stand-in", tmp_path, verify=False) == tmp_path / "stand_in.pt"


def test_good_file_passes_and_a_later_change_is_seen(stand_in, tmp_path):
    path = tmp_path / "stand_in.pt"
    path.write_bytes(DATA)
    assert weights_path("stand-in", tmp_path) == path
    assert weights_path("stand-in", tmp_path) == path  # the remembered sha256
    path.write_bytes(DATA[:-5])  # another size: hashed again
    with pytest.raises(WeightsError, match="sha256"):
        weights_path("stand-in", tmp_path)


def test_a_folder_in_place_of_the_file(stand_in, tmp_path):
    (tmp_path / "stand_in.pt").mkdir()
    with pytest.raises(WeightsError, match="not found"):
        weights_path("stand-in", tmp_path)


def test_unknown_name(tmp_path):
    with pytest.raises(InputError, match="unknown weights 'nope'"):
        weights_path("nope", tmp_path)


def test_sha256_of(tmp_path):
    path = tmp_path / "f"
    path.write_bytes(DATA)
    assert sha256_of(path, chunk=7) == hashlib.sha256(DATA).hexdigest()


def test_real_file(tmp_path):
    shared = shared_folder("weights")
    if shared is None:
        pytest.skip("pretrained weights folder ../shared/weights is absent (set VISION_SHARED)")
    item = REGISTRY["alike-t"]
    shutil.copyfile(shared / item.file, tmp_path / item.file)
    assert weights_path("alike-t", tmp_path) == tmp_path / item.file
    with open(tmp_path / item.file, "r+b") as f:  # truncated
        f.truncate(os.path.getsize(tmp_path / item.file) // 2)
    with pytest.raises(WeightsError, match="alike-t"):
        weights_path("alike-t", tmp_path)


def test_loading_a_network_leaves_the_global_generator_alone(pretrained_weights):
    """A network built to receive pretrained weights draws no random numbers from the global generator, so a
    training run that loads one (a forensic tool's first feature pass) is the same as one that found it loaded."""
    import torch

    from vision.weights.nets.alike import load_alike
    from vision.weights.nets.mobilenet import load_mobilenetv2
    from vision.weights.nets.tcmonodepth import load_tcmonodepth

    torch.manual_seed(3)
    expected = torch.rand(4)
    for load in (load_tcmonodepth, load_alike, load_mobilenetv2):
        torch.manual_seed(3)
        load()
        assert torch.equal(torch.rand(4), expected), load.__name__
