"""The optional real-depth term of the geometry backbone: the scale-and-shift-invariant disparity loss
(vision.geometry.losses.disparity_ssi_loss), the real-depth file reader and its draw (vision.data.real_depth), and
GeometryModule's hook (real_depth, real_depth_weight, real_depth_batch) on a tiny backbone with a 6-frame file."""

from __future__ import annotations

import math
import os
from pathlib import Path

import numpy as np
import pytest
import torch

from vision.data import real_depth as real
from vision.data.real_depth import RealDepthFrames, draw_indices
from vision.errors import DataError, InputError
from vision.geometry.lightning import GeometryModule
from vision.geometry.losses import disparity_ssi_loss

SIZE = 32
FRAMES = 6


def _teacher(b: int = 3, h: int = 12, w: int = 14, seed: int = 0) -> torch.Tensor:
    """A relative disparity with structure (a ramp plus noise), strictly positive."""
    g = torch.Generator().manual_seed(seed)
    ramp = torch.linspace(0.2, 1.0, w)[None, None, :].expand(b, h, w)
    return ramp + 0.3 * torch.rand(b, h, w, generator=g)


# ----------------------------------------------------------------------------------------------------------------
# the loss


@pytest.mark.parametrize("scale, shift", [(1.0, 0.0), (2.5, 0.7), (0.01, 3.0), (40.0, 0.001)])
def test_zero_for_any_positive_scale_and_shift_of_the_teachers_inverse(scale, shift):
    teacher = _teacher()
    depth = 1.0 / (scale * teacher + shift)
    assert disparity_ssi_loss(depth, teacher).item() < 1e-4


def test_invariant_to_the_teachers_scale_and_shift():
    teacher = _teacher()
    depth = torch.rand(teacher.shape, generator=torch.Generator().manual_seed(1)) + 0.5 + 1.0 / teacher
    base = disparity_ssi_loss(depth, teacher).item()
    assert base > 0.05
    for scale, shift in ((1e-3, 0.0), (7.0, 3.0), (250.0, -40.0)):
        assert disparity_ssi_loss(depth, scale * teacher + shift).item() == pytest.approx(base, rel=1e-4)


def test_a_reversed_ordering_costs_as_much_as_a_constant():
    """Nearer in the teacher is farther in the student: the non-negative scale fits it by a constant, so it gets
    the constant's loss (about 1 in the teacher's spread), never the 0 a negative scale would give."""
    teacher = _teacher()
    constant = disparity_ssi_loss(torch.ones_like(teacher), teacher).item()
    reversed_ = disparity_ssi_loss(teacher + 1.0, teacher).item()  # depth rises with the teacher's disparity
    assert reversed_ > 0.5 and reversed_ == pytest.approx(constant, rel=1e-5)
    assert disparity_ssi_loss(1.0 / (teacher + 1.0), teacher).item() < 1e-4


@pytest.mark.parametrize("which", ["student", "teacher", "both"])
def test_constant_images_give_finite_gradients(which):
    teacher = torch.full((2, 8, 8), 0.5) if which in ("teacher", "both") else _teacher(2, 8, 8)
    depth = torch.full((2, 8, 8), 2.0) if which in ("student", "both") else 1.0 / _teacher(2, 8, 8, seed=3)
    depth.requires_grad_(True)
    loss = disparity_ssi_loss(depth, teacher)
    loss.backward()
    assert torch.isfinite(loss) and torch.isfinite(depth.grad).all()
    if which != "student":
        assert loss.item() == 0.0  # a flat teacher says nothing: the image does not count


def test_gradient_reaches_the_depth_and_skips_invalid_pixels():
    teacher = _teacher()
    valid = torch.ones_like(teacher, dtype=torch.bool)
    valid[:, :, :3] = False
    depth = (1.0 / teacher + 0.3 * torch.rand(teacher.shape, generator=torch.Generator().manual_seed(2)))
    depth[~valid] = float("nan")  # invalid pixels are never read
    depth.requires_grad_(True)
    loss = disparity_ssi_loss(depth, teacher, valid)
    loss.backward()
    assert loss.item() > 0 and depth.grad[valid].abs().sum() > 0
    assert (depth.grad[~valid] == 0).all()


def test_trimming_drops_the_worst_residuals():
    teacher = _teacher(1, 10, 10)
    depth = 1.0 / teacher
    depth[0, 0, 0] = 1e3  # one wild pixel of 100
    assert disparity_ssi_loss(depth, teacher, trim=0.2).item() < disparity_ssi_loss(depth, teacher, trim=0.0).item()


def test_bad_inputs_are_named():
    teacher = _teacher()
    with pytest.raises(InputError, match="one shape"):
        disparity_ssi_loss(torch.ones(3, 12, 13), teacher)
    with pytest.raises(InputError, match="depth contains"):
        disparity_ssi_loss(torch.full_like(teacher, float("inf")), teacher)
    with pytest.raises(InputError, match="<= 0"):
        disparity_ssi_loss(torch.zeros_like(teacher), teacher)


# ----------------------------------------------------------------------------------------------------------------
# the file and the draw


def _write(path: Path, frames: int = FRAMES, size: int = SIZE, seed: int = 0,
           replace: dict[str, np.ndarray] | None = None) -> Path:
    """A real-depth file of ``frames`` random frames whose disparity is a left-to-right ramp (nearer to the right),
    with the arrays of ``replace`` instead."""
    rng = np.random.default_rng(seed)
    arrays = {"frames": rng.integers(0, 256, (frames, size, size, 3), dtype=np.uint8),
              "disparity": np.broadcast_to(np.linspace(0.1, 1.0, size, dtype=np.float16),
                                           (frames, size, size)).copy()}
    arrays.update(replace or {})
    np.savez_compressed(path, **arrays)
    return path


def test_the_file_is_read_as_single_view_clips(tmp_path):
    data = RealDepthFrames(_write(tmp_path / "r.npz"))
    assert len(data) == FRAMES and data.size == SIZE
    with np.load(tmp_path / "r.npz") as raw:
        frames = raw["frames"]
    images, disparity = data.batch(torch.tensor([4, 1]))
    assert images.shape == (2, 1, 3, SIZE, SIZE) and images.dtype == torch.float32
    assert torch.equal(images[0, 0], torch.from_numpy(frames[4]).permute(2, 0, 1).float() / 255.0)
    assert disparity.shape == (2, SIZE, SIZE) and disparity.dtype == torch.float32


@pytest.mark.parametrize("replace, field", [
    ({"frames": np.zeros((FRAMES, SIZE, SIZE, 3), np.float32)}, "frames.dtype"),
    ({"frames": np.zeros((FRAMES, SIZE, SIZE + 2, 3), np.uint8)}, "frames.shape"),
    ({"frames": np.zeros((0, SIZE, SIZE, 3), np.uint8), "disparity": np.zeros((0, SIZE, SIZE), np.float16)},
     "frames.shape"),
    ({"disparity": np.zeros((FRAMES, SIZE, SIZE), np.float32)}, "disparity.dtype"),
    ({"disparity": np.zeros((FRAMES - 1, SIZE, SIZE), np.float16)}, "disparity.shape"),
    ({"disparity": np.full((FRAMES, SIZE, SIZE), np.nan, np.float16)}, "disparity"),
])
def test_a_malformed_file_is_refused_naming_the_field(tmp_path, replace, field):
    path = _write(tmp_path / "r.npz", replace=replace)
    with pytest.raises(DataError) as caught:
        RealDepthFrames(path)
    assert caught.value.file == str(path) and caught.value.field == field


def test_missing_arrays_unreadable_and_oversized_files_are_refused(tmp_path, monkeypatch):
    np.savez_compressed(tmp_path / "one.npz", frames=np.zeros((1, 4, 4, 3), np.uint8))
    with pytest.raises(DataError, match="no array 'disparity'"):
        RealDepthFrames(tmp_path / "one.npz")
    (tmp_path / "junk.npz").write_bytes(b"not a zip" * 10)
    with pytest.raises(DataError, match="cannot read the real-depth file"):
        RealDepthFrames(tmp_path / "junk.npz")
    with pytest.raises(DataError, match="not found"):
        RealDepthFrames(tmp_path / "missing.npz")
    os.mkfifo(tmp_path / "fifo.npz")
    with pytest.raises(DataError, match="FIFO"):
        RealDepthFrames(tmp_path / "fifo.npz")
    monkeypatch.setattr(real, "MAX_ARRAY_BYTES", 1000)  # the headers say more: refused before decompressing
    with pytest.raises(DataError, match="over the limit"):
        RealDepthFrames(_write(tmp_path / "r.npz"))


def test_the_draw_is_a_pure_function_of_seed_step_and_rank():
    before = torch.get_rng_state()
    first = draw_indices(100, 8, seed=3, step=5)
    assert torch.equal(torch.get_rng_state(), before)  # no global generator moves
    torch.rand(10)  # whatever the global generator did meanwhile
    assert torch.equal(draw_indices(100, 8, seed=3, step=5), first)
    assert len(set(first.tolist())) == 8 and 0 <= int(first.min()) and int(first.max()) < 100
    others = [draw_indices(100, 8, 3, 6), draw_indices(100, 8, 4, 5), draw_indices(100, 8, 3, 5, rank=1)]
    assert all(not torch.equal(first, other) for other in others)
    assert sorted(draw_indices(6, 6, 0, 0).tolist()) == list(range(6))
    with pytest.raises(InputError, match="7 distinct frames from 6"):
        draw_indices(6, 7, 0, 0)


# ----------------------------------------------------------------------------------------------------------------
# the module's hook


def _module(path: Path | None, weight: float = 0.5, batch: int = 4) -> GeometryModule:
    return GeometryModule(config={"size": "tiny", "image_size": SIZE}, real_depth=None if path is None else str(path),
                          real_depth_weight=weight, real_depth_batch=batch)


def _batch(seed: int = 0) -> dict[str, torch.Tensor]:
    """A 2-view multi-view batch of the datamodule's layout (random images, depth 1-3 m, two cameras)."""
    g = torch.Generator().manual_seed(seed)
    intrinsics = torch.tensor([[30.0, 0, SIZE / 2], [0, 30.0, SIZE / 2], [0, 0, 1]]).expand(1, 2, 3, 3)
    extrinsics = torch.cat([torch.eye(3).expand(1, 2, 3, 3), torch.tensor([[0.0, 0, 0], [0.2, 0, 0]])[None, :, :,
                                                                                                     None]], -1)
    return {"images": torch.rand(1, 2, 3, SIZE, SIZE, generator=g),
            "depth": 1.0 + 2.0 * torch.rand(1, 2, SIZE, SIZE, generator=g),
            "valid_depth": torch.ones(1, 2, SIZE, SIZE, dtype=torch.bool), "intrinsics": intrinsics.clone(),
            "extrinsics": extrinsics, "has_camera": torch.tensor([True]), "image_ids": torch.tensor([[1, 2]])}


def _logged(module: GeometryModule, monkeypatch) -> dict[str, float]:
    seen: dict[str, float] = {}
    monkeypatch.setattr(module, "log", lambda name, value, **_: seen.__setitem__(name, value.item()))
    monkeypatch.setattr(module, "log_dict", lambda values, **_: seen.update({k: v.item() for k, v in values.items()}))
    return seen


def test_a_training_step_adds_and_logs_the_term_and_it_trains_the_depth_head(tmp_path, monkeypatch):
    torch.manual_seed(0)
    module = _module(_write(tmp_path / "r.npz"))
    seen = _logged(module, monkeypatch)
    loss = module.training_step(_batch(), 0)
    assert "train/loss_real_depth" in seen and 0 < seen["train/loss_real_depth"] < 10
    synthetic = loss.item() - 0.5 * seen["train/loss_real_depth"]
    off = _module(None, weight=0.0)
    off.load_state_dict(module.state_dict())
    _logged(off, monkeypatch)
    assert off.training_step(_batch(), 0).item() == pytest.approx(synthetic, rel=1e-5)  # weight * term is added

    module.zero_grad()
    module.real_depth_loss(0).backward()  # the term alone reaches the depth head (and the trunk), not the others
    head = [p.grad for p in module.model.backbone.depth_head.parameters()]
    assert all(g is not None for g in head) and sum(float(g.abs().sum()) for g in head) > 0
    assert all(p.grad is None for p in module.model.backbone.camera_head.parameters())
    assert all(p.grad is None for p in module.model.backbone.point_head.parameters())


def test_validation_and_a_module_without_the_options_are_unchanged(tmp_path, monkeypatch):
    module = _module(_write(tmp_path / "r.npz"))
    seen = _logged(module, monkeypatch)
    module.eval()
    with torch.no_grad():
        module._losses(_batch(), "validate")
    assert "val/loss_real_depth" not in seen and "val/loss" in seen
    off = _module(None, weight=0.0)
    assert off.real_depth_frames is None
    seen = _logged(off, monkeypatch)
    before = torch.get_rng_state()
    off.training_step(_batch(), 0)
    assert not any("real_depth" in name for name in seen)
    assert torch.equal(torch.get_rng_state(), before)
    checked = _module(tmp_path / "r.npz", weight=0.0)  # a file with weight 0 is checked, never drawn from
    assert len(checked.real_depth_frames) == FRAMES
    seen = _logged(checked, monkeypatch)
    checked.training_step(_batch(), 0)
    assert not any("real_depth" in name for name in seen)


def test_the_frames_of_step_k_are_the_same_in_a_fresh_module(tmp_path):
    """Resume exactness: what step k draws and its loss depend on the seed, k and the weights alone."""
    path = _write(tmp_path / "r.npz")
    torch.manual_seed(11)
    first = _module(path)
    drawn = first.real_depth_indices(5)
    loss = first.real_depth_loss(5)
    torch.manual_seed(11)  # the resumed run's seed_everything
    torch.rand(1000)  # its global generator elsewhere: restored from the checkpoint, not read by the draw
    fresh = _module(path)
    fresh.load_state_dict(first.state_dict())
    assert torch.equal(fresh.real_depth_indices(5), drawn)
    assert torch.equal(fresh.real_depth_loss(5), loss)
    assert not torch.equal(fresh.real_depth_indices(6), drawn)
    torch.manual_seed(12)
    assert not torch.equal(_module(path).real_depth_indices(5), drawn)  # another seed, another draw


@pytest.mark.parametrize("kwargs, words", [
    ({"real_depth_weight": -1.0}, "real_depth_weight must be a finite number >= 0"),
    ({"real_depth_weight": math.nan}, "real_depth_weight must be a finite number >= 0"),
    ({"real_depth_batch": 0}, "real_depth_batch must be an integer >= 1"),
    ({"real_depth": None, "real_depth_weight": 0.5}, "real_depth_weight=0.5 needs real_depth"),
    ({"real_depth": "{tmp}/missing.npz"}, "real_depth: {tmp}/missing.npz: real-depth file not found"),
    ({"real_depth": "{tmp}/small.npz"}, "holds frames of 16x16, the model trains at config.image_size=32"),
    ({"real_depth_batch": 7}, "real_depth_batch=7 is more than the 6 frames"),
])
def test_bad_options_are_refused_naming_the_option(tmp_path, kwargs, words):
    _write(tmp_path / "r.npz")
    _write(tmp_path / "small.npz", size=16)
    options = {"real_depth": str(tmp_path / "r.npz"), "real_depth_weight": 0.5, "real_depth_batch": 4}
    options.update({k: v.format(tmp=tmp_path) if isinstance(v, str) else v for k, v in kwargs.items()})
    with pytest.raises(InputError, match="GeometryModule") as caught:
        GeometryModule(config={"size": "tiny", "image_size": SIZE}, **options)
    assert words.format(tmp=tmp_path) in str(caught.value)
