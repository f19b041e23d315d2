"""The weights registry (vision/weights/registry.py): every entry well-formed (a 64-hex sha256, a known format, an
https URL at a pinned commit or a pinned PyPI wheel with the member inside it, unique plain file names), its sha256s
those of ``../shared/weights/README.md`` where that folder is present, and the name lookups."""

from __future__ import annotations

import re
from pathlib import Path, PurePosixPath

import pytest

from tests.conftest import shared_folder
from vision.errors import InputError
from vision.weights import REGISTRY, WeightsEntry, entry, weight_names

#: a GitHub raw URL at a commit (7 to 40 hex digits): owner, repository, commit, path
GITHUB_RAW = re.compile(r"https://github\.com/([\w.-]+)/([\w.-]+)/raw/([0-9a-f]{7,40})/(\S+)")
#: a PyPI wheel: distribution, version
PYPI_WHEEL = re.compile(r"https://files\.pythonhosted\.org/packages/[0-9a-f]{2}/[0-9a-f]{2}/[0-9a-f]{60}/"
                        r"([A-Za-z0-9_.]+)-([0-9][A-Za-z0-9.]*)-[\w.]+-[\w.]+-[\w.]+\.whl")


@pytest.mark.parametrize("name", list(REGISTRY))
def test_entry_is_well_formed(name):
    item = REGISTRY[name]
    assert isinstance(item, WeightsEntry) and item.name == name
    assert re.fullmatch(r"[a-z0-9][a-z0-9.-]*", name), "names are lower case, digits, dots and dashes"
    assert name != "all", "'all' means every entry to vision-fetch-weights"
    assert re.fullmatch(r"[0-9a-f]{64}", item.sha256)
    assert item.format in {"torch", "onnx"}
    assert item.file == PurePosixPath(item.file).name and not item.file.startswith("."), "a plain file name"
    assert item.licence and item.purpose and item.upstream
    assert re.fullmatch(r"[A-Za-z0-9.+-]+", item.licence), "an SPDX identifier"
    if item.member is None:
        match = GITHUB_RAW.fullmatch(item.url)
        assert match, f"{item.url} is not a GitHub URL at a pinned commit"
        owner, repository, commit, _ = match.groups()
        assert item.upstream.startswith(f"{owner}/{repository}@{commit[:7]}")
    else:
        match = PYPI_WHEEL.fullmatch(item.url)
        assert match, f"{item.url} is not a pinned PyPI wheel"
        distribution, version = match.groups()
        assert PurePosixPath(item.member).name == item.file
        assert f"=={version}" in item.upstream and distribution.replace("_", "-") in item.upstream


def test_file_names_are_unique():
    files = [item.file for item in REGISTRY.values()]
    assert len(set(files)) == len(files)


def test_sha256_equal_to_shared_readme():
    shared = shared_folder("weights")
    if shared is None or not (shared / "README.md").is_file():
        pytest.skip("../shared/weights/README.md is absent (set VISION_SHARED)")
    listed = dict(reversed(m.groups()) for m in re.finditer(r"^\s+([0-9a-f]{64})\s+(\S+)\s*$",
                                                            (shared / "README.md").read_text(), re.MULTILINE))
    assert listed, "the README lists no sha256"
    assert {item.file: item.sha256 for item in REGISTRY.values()} == listed


def test_lookups():
    assert weight_names() == list(REGISTRY)
    assert entry("alike-t") is REGISTRY["alike-t"]
    with pytest.raises(InputError, match=r"unknown weights 'nope'; known: tcmonodepth-small, alike-t"):
        entry("nope")


def test_docs_table_is_the_registry():
    text = (Path(__file__).resolve().parents[2] / "docs" / "weights.md").read_text()
    text = text.split("## The registry", 1)[1].split("\n## ", 1)[0]  # that section's table
    rows = [[cell.strip().strip("`") for cell in line.strip("|").split("|")]
            for line in text.splitlines() if line.startswith("| `")]
    assert [row[:5] for row in rows] == [[i.name, i.file, i.licence, i.format, i.purpose] for i in REGISTRY.values()]
