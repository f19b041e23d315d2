"""Numeric parity of GeometryBackbone with VGGT's reference code (facebookresearch/vggt) at a small configuration.

The fixtures in data/vggt_small/ were produced by VGGT's own Aggregator, CameraHead and DPTHeads with random
weights (data/vggt_small/README.md says how; regenerate.py rebuilds them). Here the reference state dict goes
through :func:`vision.geometry.weights.load_backbone` into our backbone at the same configuration, and every
output must match the reference's to 1e-4. The full-size VGGT-1B key/shape check is test_vggt_keys.py.
"""

import json
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from vision.geometry.model import create_backbone
from vision.geometry.weights import load_backbone

DATA = Path(__file__).parent / "data" / "vggt_small"
TOLERANCE = 1e-4
OUTPUTS = ("pose_enc", "depth", "depth_conf", "world_points", "world_points_conf")


@pytest.fixture(scope="module")
def parity():
    config = json.loads((DATA / "config.json").read_text())
    ours = config["ours"]
    model = create_backbone(ours["create_backbone"], **ours["overrides"])
    report = load_backbone(model, DATA / "state_dict.safetensors")
    model.eval()
    io = load_file(str(DATA / "io.safetensors"))
    with torch.no_grad():
        out = model(io["images"])
    return report, io, out


def test_reference_state_dict_loads_completely(parity):
    report, _, _ = parity
    assert report.loaded and not report.skipped  # every tensor placed (a missing one raises)


@pytest.mark.parametrize("name", OUTPUTS)
def test_output_matches_vggt_reference(parity, name):
    _, io, out = parity
    expected, got = io[name], out[name]
    assert got.shape == expected.shape, f"{name}: shape {tuple(got.shape)} vs reference {tuple(expected.shape)}"
    diff = float((got - expected).abs().max())
    assert diff <= TOLERANCE, f"{name}: max abs difference to VGGT's reference {diff:.3g} > {TOLERANCE}"


def test_reference_outputs_are_not_degenerate():
    """The comparison means something only if the reference outputs vary over pixels and views."""
    io = load_file(str(DATA / "io.safetensors"))
    for name in OUTPUTS:
        assert torch.isfinite(io[name]).all(), name
        assert float(io[name].std()) > 1e-3, f"{name} is nearly constant (std {float(io[name].std()):.3g})"
    assert float((io["pose_enc"][0, 0] - io["pose_enc"][0, 1]).abs().max()) > 1e-2  # frame 0 differs from frame 1
