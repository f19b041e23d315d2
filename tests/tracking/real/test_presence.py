"""The presence head (vision.tracking.real.presence): standardisation by the training cues, and the 2D-memory
control blind to the geometry cues."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from vision.errors import InputError
from vision.tracking.real.cues import CUES, GEOMETRY_CUES
from vision.tracking.real.presence import PresenceHead


def test_two_d_control_ignores_geometry_cues() -> None:
    torch.manual_seed(0)
    head3, head2 = PresenceHead("3d"), PresenceHead("2d")
    head2.load_state_dict(head3.state_dict() | {"mask": head2.mask})
    cues = torch.randn(5, len(CUES))
    moved = cues.clone()
    for name in GEOMETRY_CUES:
        moved[:, CUES.index(name)] += 10.0
    assert torch.equal(head2(cues), head2(moved))
    assert not torch.allclose(head3(cues), head3(moved))


def test_standardisation_and_probability() -> None:
    head = PresenceHead()
    cues = torch.randn(100, len(CUES)) * 3 + 7
    cues[:, 0] = 1.0  # a constant cue keeps a spread of 1
    head.set_normalisation(cues)
    assert torch.allclose(head.mean, cues.mean(0)) and head.std[0] == 1.0
    p = head.probability(cues[:4].numpy())
    assert p.shape == (4,) and ((p > 0) & (p < 1)).all()
    assert np.allclose(p, torch.sigmoid(head(cues[:4])).detach().numpy())


def test_bad_settings() -> None:
    with pytest.raises(InputError, match="memory"):
        PresenceHead("1d")
    with pytest.raises(InputError, match="hidden"):
        PresenceHead("3d", hidden=0)
