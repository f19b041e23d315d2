"""Shared fixtures for the detection tests: a tiny rendered OOV split and a deterministic fake text encoder."""

from __future__ import annotations

import os
import zlib

import pytest
import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")


class FakeTextEncoder:
    """Deterministic unit rows from a hash of each text; counts how many texts it encoded."""

    dim = 384

    def __init__(self) -> None:
        self.num_encoded = 0

    def __call__(self, texts: list[str]) -> torch.Tensor:
        rows = []
        for text in texts:
            gen = torch.Generator().manual_seed(zlib.crc32(text.encode()))
            rows.append(torch.randn(self.dim, generator=gen))
        self.num_encoded += len(texts)
        return torch.nn.functional.normalize(torch.stack(rows), dim=-1)


@pytest.fixture(scope="session")
def fake_encoder() -> FakeTextEncoder:
    return FakeTextEncoder()


@pytest.fixture(scope="session")
def oov_splits(tmp_path_factory):
    """Tiny synthetic OOV splits (64 px): train 3 scenes x 2 views, val 1 x 2, test 2 x 2."""
    from vision.detection.data import write_oov_synthetic

    torch.set_num_threads(1)
    out = tmp_path_factory.mktemp("oov")
    return write_oov_synthetic(out, train_scenes=3, val_scenes=1, test_scenes=2, views=2, size=64, seed=0)
