"""Fixtures every test folder may use: the real pretrained weights and footage of ``../shared`` (beside the
repository; ``VISION_SHARED`` overrides), copied the way a user fetches them. Tests that need them skip, with the
reason, where that folder is absent."""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The files marked ``long`` first (those with more tests before those with fewer, as pytest-xdist's own
    reorder ranks files), every file's tests kept together and in order: ``make test`` hands whole files to its
    workers in this order (``--dist loadfile --no-loadscope-reorder``), so the long files start early and the short
    ones fill the gaps, instead of a long file starting last and running alone at the end."""
    long_tests = Counter(item.path for item in items if item.get_closest_marker("long") is not None)
    items.sort(key=lambda item: -long_tests[item.path])


def shared_folder(name: str) -> Path | None:
    """``<shared>/<name>`` when it exists (``<shared>``: ``$VISION_SHARED`` or the repository's sibling ``shared``)."""
    root = Path(os.environ.get("VISION_SHARED") or REPO.parent / "shared")
    folder = root / name
    return folder if folder.is_dir() else None


@pytest.fixture(scope="session")
def shared_footage() -> Path:
    """The folder of real camera clips (``../shared/footage``); the test skips without it."""
    folder = shared_folder("footage")
    if folder is None:
        pytest.skip("real footage folder ../shared/footage is absent (set VISION_SHARED)")
    return folder


@pytest.fixture(scope="session")
def pretrained_weights(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A weights folder holding every registered file, fetched with ``vision-fetch-weights --from
    ../shared/weights`` into a session folder, and ``VISION_WEIGHTS_DIR`` pointing at it for the session; the test
    skips where ``../shared/weights`` is absent."""
    source = shared_folder("weights")
    if source is None:
        pytest.skip("pretrained weights folder ../shared/weights is absent (set VISION_SHARED)")
    from vision.cli.fetch_weights import fetch
    from vision.weights import ENV, weight_names

    out = tmp_path_factory.mktemp("weights")
    fetch(weight_names(), out=out, source=source)
    previous = os.environ.get(ENV)
    os.environ[ENV] = str(out)
    yield out
    if previous is None:
        os.environ.pop(ENV, None)
    else:
        os.environ[ENV] = previous
