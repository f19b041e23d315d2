"""vision.rng: the global random state survives a weights_only checkpoint and is restored exactly."""

import io
import random

import numpy as np
import torch

from vision.rng import get_rng_state, preserved_rng_state, set_rng_state


def _draw() -> tuple:
    return torch.rand(3).tolist(), np.random.rand(3).tolist(), [random.random() for _ in range(3)]


def test_state_round_trips_through_a_weights_only_checkpoint():
    torch.manual_seed(0)
    np.random.seed(0)
    random.seed(0)
    np.random.randn()  # leaves a cached Gaussian in numpy's state
    buffer = io.BytesIO()
    torch.save({"rng": get_rng_state()}, buffer)
    expected = _draw()
    _draw()
    buffer.seek(0)
    set_rng_state(torch.load(buffer, weights_only=True)["rng"])
    assert _draw() == expected


def _seed_all(seed: int) -> None:
    torch.manual_seed(seed)
    np.random.seed(seed)
    random.seed(seed)


def test_preserved_block_does_not_move_the_generators():
    _seed_all(1)
    expected = _draw()
    _seed_all(1)
    with preserved_rng_state():
        _draw()
    assert _draw() == expected
