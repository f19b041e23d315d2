"""Fixtures of the concept tests: an untrained tiny concept model and a rendered scene, built once per session."""

import hashlib

import numpy as np
import pytest
import torch

from vision.concept.task import ConceptConfig, ConceptModel
from vision.detection.task import build_model as build_detector
from vision.text import TEXT_DIM
from vision.tracking.task import build_model as build_tracker


def hashed_text(texts: list[str]) -> torch.Tensor:
    """A deterministic stand-in text encoder (unit rows seeded by each string's hash) so that the fast tests need
    not load MiniLM; the real encoder is exercised by the slow tests and the CLI tests."""
    rows = []
    for text in texts:
        seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "little")
        rows.append(torch.randn(TEXT_DIM, generator=torch.Generator().manual_seed(seed)))
    return torch.nn.functional.normalize(torch.stack(rows), dim=-1)


@pytest.fixture(scope="session")
def concept_model() -> tuple[ConceptModel, ConceptConfig]:
    torch.manual_seed(0)
    config = ConceptConfig(competitors=["cube", "sphere"], score_threshold=0.0, learned_presence=False, max_per_view=3)
    model = ConceptModel(build_detector(config.detector), build_tracker(config.tracker), hidden=config.hidden)
    return model.eval(), config


@pytest.fixture(scope="session")
def scene_frames() -> np.ndarray:
    from vision.synthetic.scenes import generate_scene

    scene = generate_scene(np.random.default_rng(5), views=5, size=64, mode="unordered", min_objects=3,
                           max_objects=3, threads=1)
    return scene.rgb
