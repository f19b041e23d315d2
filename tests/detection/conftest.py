"""Shared fixtures for the detection tests: a tiny rendered OOV split and a deterministic fake text encoder."""

from __future__ import annotations

import os
import zlib

import pytest
import torch

from vision.text import TEXT_DIM

os.environ.setdefault("HF_HUB_OFFLINE", "1")


class FakeTextEncoder:
    """Deterministic unit rows from a hash of each text; counts how many texts it encoded."""

    dim = TEXT_DIM

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
    from vision.synthetic.detection import write_oov_synthetic

    torch.set_num_threads(1)
    out = tmp_path_factory.mktemp("oov")
    return write_oov_synthetic(out, train_scenes=3, val_scenes=1, test_scenes=2, views=2, size=64, seed=0)


#: Small OOVDet settings for the tests: every mechanism on from the first step.
SMALL = dict(config={"channels": 32}, queue_size=64, samples_per_class=64, synthesis_start=0.0, mining_start=0.0,
             mining_min_objectness=0.0, lr=2e-3, warmup_steps=1)


def tiny_module(splits, encoder, **kwargs):
    """An OOVDetModule (:data:`SMALL` settings) with the training split's iv vocabulary embedded by ``encoder``."""
    from vision.data.coco import load_split
    from vision.detection.lightning import OOVDetModule

    train = load_split(splits["train"])
    names, ids = train.vocabulary(("iv",)), train.category_ids(("iv",))
    module = OOVDetModule(**{**SMALL, **kwargs})
    module.text_encoder = encoder  # the evaluated splits' vocabularies too
    module.set_vocabulary(names, ids, text_embeddings=encoder([f"a {n}" for n in names]))
    return module


def train_tiny_checkpoint(splits, encoder, path, steps: int = 3):
    """Train :func:`tiny_module` for ``steps`` steps on ``splits`` and save a Lightning checkpoint at ``path``;
    returns the trainer (also used by the demo tests)."""
    import lightning as L

    from vision.data.datamodule import DetectionDataModule

    torch.manual_seed(0)
    module = tiny_module(splits, encoder)
    dm = DetectionDataModule(str(splits["train"]), str(splits["val"]), batch_size=4)
    trainer = L.Trainer(max_steps=steps, logger=False, enable_checkpointing=False, enable_progress_bar=False,
                        enable_model_summary=False, limit_val_batches=1, num_sanity_val_steps=0,
                        accelerator="cpu")
    trainer.fit(module, dm)
    trainer.save_checkpoint(path)
    return trainer
