"""TrackingModule.oracle_geometry: G2TAM decodes from the batch's ground-truth point maps (scene-normalised), in the
training step and in decode_batch; the memory-bank control, which has no geometry, refuses it."""

from __future__ import annotations

import pytest
import torch

from vision.errors import InputError
from vision.geometry.losses import normalize_scene
from vision.tracking.lightning import TrackingModule, ground_truth_points
from vision.tracking.sampling import sample_prompts

CONFIG = {"image_size": 32, "dim": 32, "text_encoder": None}


def test_ground_truth_points_are_normalised_and_nan_where_depth_is_unknown(clip_batch):
    batch = dict(clip_batch)
    batch["valid_depth"] = batch["valid_depth"].clone()
    batch["valid_depth"][0, 1, :4] = False
    points = ground_truth_points(batch)
    valid = batch["valid_depth"] & (batch["depth"] > 0)
    assert points.shape == (*batch["depth"].shape, 3)
    assert torch.isnan(points[~valid]).all() and torch.isfinite(points[valid]).all()
    expected = normalize_scene(batch["extrinsics"], batch["intrinsics"], batch["depth"], None, valid).world_points
    torch.testing.assert_close(points[valid], expected[valid])
    # the backbone's normalisation: mean norm 1 over each clip's valid points
    for b in range(points.shape[0]):
        assert float(points[b][valid[b]].norm(dim=-1).mean()) == pytest.approx(1.0, abs=1e-4)


@pytest.mark.filterwarnings("ignore:You are trying to `self.log")  # _step outside a Trainer
def test_oracle_decodes_from_ground_truth_points(clip_batch):
    torch.manual_seed(0)
    module = TrackingModule(config=CONFIG, max_objects=2, oracle_geometry=True).eval()
    sampled = sample_prompts(clip_batch, max_objects=2, types=("point",), text_dim=module.model.text_dim,
                             memory_dim=module.model.dim, generator=torch.Generator().manual_seed(0))
    seen = []
    decode = module.model.decode

    def recording_decode(encoded, prompts, views=None):
        seen.append(encoded["world_points"].detach().clone())
        return decode(encoded, prompts, views)

    module.model.decode = recording_decode
    with torch.no_grad():
        out = module.decode_batch(clip_batch, sampled.prompts)
        module._step(clip_batch, "validate")
    gt = ground_truth_points(clip_batch)
    assert len(seen) == 2
    for points in seen:
        torch.testing.assert_close(points, gt, equal_nan=True)
    assert out["masks"].shape[:3] == (*clip_batch["images"].shape[:2], 2)

    module.hparams.oracle_geometry = False  # the same weights decoding from the backbone's point maps
    with torch.no_grad():
        module.decode_batch(clip_batch, sampled.prompts)
    assert len(seen) == 3
    assert not torch.allclose(seen[-1], gt.nan_to_num(), equal_nan=True)


def test_oracle_needs_a_geometry_model():
    with pytest.raises(InputError, match="oracle_geometry"):
        TrackingModule(config={**CONFIG, "architecture": "memory_bank"}, oracle_geometry=True)
