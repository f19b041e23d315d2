"""G2TAM and the control: shapes, slot independence, prompt sampling, training steps, checkpoints."""

from __future__ import annotations

import lightning as L
import pytest
import torch

from vision.errors import DataError, InputError
from vision.tracking.baseline import MemoryBankTracker
from vision.tracking.lightning import TrackingModule
from vision.tracking.model import G2TAM
from vision.tracking.predictor import TrackerPredictor
from vision.tracking.prompts import Prompts
from vision.tracking.sampling import sample_prompts, simulate_memory
from vision.text import TEXT_DIM

TINY = {"image_size": 32, "dim": 32, "text_encoder": None}


def _prompts(n: int = 3) -> Prompts:
    p = Prompts.empty(1, n, (32, 32), num_points=2, num_memory=2, text_dim=TEXT_DIM, memory_dim=32)
    p.valid[:] = True
    p.view[0, 0], p.points[0, 0, 0], p.labels[0, 0, 0] = 1, torch.tensor([5.0, 6.0]), 1
    p.view[0, 1] = 0
    p.points[0, 1] = torch.tensor([[2.0, 3.0], [20.0, 25.0]])
    p.labels[0, 1] = torch.tensor([2, 3])
    p.view[0, 2], p.has_mask[0, 2] = 2, True
    p.masks[0, 2, 4:12, 8:20] = 1
    p.memory_points[0, 2] = torch.randn(2, 3)
    p.memory_valid[0, 2] = True
    return p


def test_g2tam_shapes_and_slot_independence():
    torch.manual_seed(0)
    model = G2TAM(image_size=32, dim=32).eval()
    images = torch.rand(1, 3, 3, 32, 32)
    p = _prompts()
    with torch.no_grad():
        enc = model.encode(images)
        out = model.decode(enc, p)
        assert out["masks"].shape == (1, 3, 3, 3, 32, 32)
        assert out["iou"].shape == (1, 3, 3, 3) and out["presence"].shape == (1, 3, 3)
        assert enc["world_points"].shape == (1, 3, 32, 32, 3)
        # permuting object slots permutes the outputs: objects do not interact
        perm = [2, 0, 1]
        q = Prompts(**{k: getattr(p, k)[:, perm] for k in p.__dataclass_fields__})
        out2 = model.decode(enc, q)
    assert torch.allclose(out2["masks"], out["masks"][:, :, perm], atol=1e-4)


def test_g2tam_decodes_a_subset_of_views_as_the_full_decode_does():
    """decode(views=...) gives each listed view the outputs of decoding every view: prompts on views left out
    (object 0 on view 1, a text prompt that attends over every view) still reach the listed ones."""
    torch.manual_seed(0)
    model = G2TAM(image_size=32, dim=32).eval()
    p = _prompts()
    p.text[0, 1], p.has_text[0, 1] = torch.randn(TEXT_DIM), True
    with torch.no_grad():
        enc = model.encode(torch.rand(1, 3, 3, 32, 32))
        full = model.decode(enc, p)
        for views in ([0], [2, 0], [0, 1, 2]):
            part = model.decode(enc, p, views)
            for key in ("masks", "iou", "presence", "view_pos"):
                torch.testing.assert_close(part[key], full[key][:, views], atol=1e-5, rtol=1e-5)


def test_baseline_shapes_and_bounded_bank():
    torch.manual_seed(0)
    model = MemoryBankTracker(image_size=32, dim=32, memory_size=2).eval()
    with torch.no_grad():
        out = model(torch.rand(1, 5, 3, 32, 32), _prompts())
    assert out["masks"].shape == (1, 5, 3, 3, 32, 32) and out["presence"].shape == (1, 5, 3)
    assert model.slot_embed.shape[0] == 3  # prompted frame + 2 recent frames


def test_sample_prompts_types(clip_batch):
    g = torch.Generator().manual_seed(0)
    for kind in ("point", "box", "mask"):
        s = sample_prompts(clip_batch, max_objects=2, types=[kind], generator=g)
        b, n = s.prompts.valid.shape
        for bi in range(b):
            for j in range(n):
                if not s.prompts.valid[bi, j]:
                    continue
                v = int(s.prompts.view[bi, j])
                assert s.gt_presence[bi, v, j]  # the prompt view shows the object
                if kind == "point":
                    x, y = s.prompts.points[bi, j, 0].long().tolist()
                    assert s.gt_masks[bi, v, j, y, x]
                if kind == "mask":
                    assert torch.equal(s.prompts.masks[bi, j].bool(), s.gt_masks[bi, v, j])


def test_training_steps_reduce_loss_and_checkpoint_roundtrip(clip_batch, tmp_path):
    torch.manual_seed(0)
    module = TrackingModule(config=TINY, max_objects=2, lr=2e-3, warmup_steps=1)
    opt = torch.optim.AdamW(module.model.parameters(), lr=2e-3)
    losses = []
    for _ in range(8):
        loss = _fixed_step(module, clip_batch)  # same prompts each step: the loss must fall on a fixed problem
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0]
    # a Lightning checkpoint loads into the predictor
    trainer = L.Trainer(max_steps=1, logger=False, enable_checkpointing=False, enable_progress_bar=False,
                        enable_model_summary=False, limit_val_batches=0)
    loader = torch.utils.data.DataLoader([clip_batch], batch_size=None)
    trainer.fit(module, loader)
    path = tmp_path / "t.ckpt"
    trainer.save_checkpoint(path)
    pred = TrackerPredictor.from_checkpoint(path, text_encoder=None)
    assert pred.image_size == 32 and isinstance(pred.model, G2TAM)
    assert pred.model.prompt_encoder.click_maps and pred.model.spatial_encoder.proximity
    # weights that do not fit the model the hyper-parameters describe: a clear error naming the file
    ckpt = torch.load(path, weights_only=True)
    ckpt["state_dict"] = {k: v for k, v in ckpt["state_dict"].items() if "proximity_embed" not in k}
    torch.save(ckpt, tmp_path / "old.ckpt")
    with pytest.raises(DataError, match="retrain") as info:
        TrackerPredictor.from_checkpoint(tmp_path / "old.ckpt", text_encoder=None)
    assert "old.ckpt" in str(info.value)
    # a checkpoint of the earlier layout (no hyper_parameters.config): one error naming the file and the field
    del ckpt["hyper_parameters"]["config"]
    torch.save(ckpt, tmp_path / "older.ckpt")
    with pytest.raises(DataError, match="hyper_parameters.config") as info:
        TrackerPredictor.from_checkpoint(tmp_path / "older.ckpt", text_encoder=None)
    assert "older.ckpt" in str(info.value)


def test_dense_prompt_switches_reach_the_model():
    off = TrackingModule(config={**TINY, "click_maps": False, "proximity_maps": False})
    assert not off.model.prompt_encoder.click_maps and not off.model.spatial_encoder.proximity
    control = TrackingModule(config={**TINY, "architecture": "memory_bank", "click_maps": False,
                                     "proximity_maps": True})
    assert not control.model.prompt_encoder.click_maps
    prompts = _prompts()
    images = torch.rand(1, 3, 3, 32, 32)
    for module in (off, control):
        out = module.model(images, prompts)
        assert out["masks"].shape == (1, 3, 3, 3, 32, 32) and torch.isfinite(out["masks"]).all()


def _fixed_step(module: TrackingModule, batch: dict) -> torch.Tensor:
    import vision.tracking.lightning as lt

    generator = torch.Generator().manual_seed(5)
    original = lt.sample_prompts
    lt.sample_prompts = lambda *a, **k: original(*a, **{**k, "generator": generator})
    try:
        module.log = lambda *a, **k: None
        module.log_dict = lambda *a, **k: None
        return module._step(batch, "train")["loss"]
    finally:
        lt.sample_prompts = original


def test_memory_bank_module_step(clip_batch):
    module = TrackingModule(config={**TINY, "architecture": "memory_bank"}, max_objects=2)
    module.log = lambda *a, **k: None
    module.log_dict = lambda *a, **k: None
    losses = module._step(clip_batch, "train")
    assert torch.isfinite(losses["loss"]) and "loss_geometry" not in losses
    losses["loss"].backward()


def test_simulate_memory_lifts_a_visible_mask_through_the_point_maps(clip_batch):
    g = torch.Generator().manual_seed(0)
    sampled = sample_prompts(clip_batch, max_objects=2, types=["point"], generator=g)
    b, s, n, h, w = sampled.gt_masks.shape
    # world points that encode their own (view, y, x): a lifted point tells where it was read
    ys, xs = torch.meshgrid(torch.arange(h).float(), torch.arange(w).float(), indexing="ij")
    wp = torch.stack([xs.expand(b, s, h, w), ys.expand(b, s, h, w),
                      torch.arange(s).float().view(1, s, 1, 1).expand(b, s, h, w)], -1)
    feats = torch.randn(b, s, 8, 4, 4)
    none = simulate_memory(sampled, wp, feats, prob=0.0, generator=g)
    assert not none.memory_valid.any() and torch.equal(none.points, sampled.prompts.points)
    full = simulate_memory(sampled, wp, feats, prob=1.0, num_points=16, generator=g)
    assert full.memory_points.shape == (b, n, 16, 3) and full.memory_feat.shape == (b, n, 8)
    for bi in range(b):
        for j in range(n):
            if not sampled.prompts.valid[bi, j]:
                assert not full.memory_valid[bi, j].any()
                continue
            pts = full.memory_points[bi, j][full.memory_valid[bi, j]]
            assert len(pts) > 0
            view = int(pts[0, 2])
            assert (pts[:, 2] == view).all()  # all from one view, where the object's mask is
            assert sampled.gt_masks[bi, view, j, pts[:, 1].long(), pts[:, 0].long()].all()
            assert full.memory_feat[bi, j].abs().sum() > 0
    assert sampled.prompts.memory_points.shape[2] == 1  # the sampled prompts are left as they were
    sampled.types[0][0] = "text"  # text slots never get memory
    assert not simulate_memory(sampled, wp, feats, prob=1.0, generator=g).memory_valid[0, 0].any()


def test_memory_training_step_reaches_the_memory_tokens(clip_batch):
    torch.manual_seed(0)
    module = TrackingModule(config=TINY, max_objects=2, memory_prob=1.0, memory_points=16)
    loss = module.training_step(clip_batch, 0)["loss"]
    loss.backward()
    assert module.model.spatial_encoder.memory_embed.grad.abs().sum() > 0
    off = TrackingModule(config=TINY, max_objects=2)
    off.training_step(clip_batch, 0)["loss"].backward()
    assert off.model.spatial_encoder.memory_embed.grad is None or off.model.spatial_encoder.memory_embed.grad.abs().sum() == 0


def test_a_tracker_without_names_or_a_datamodule_says_what_to_pass():
    module = TrackingModule(config={"image_size": 32, "dim": 32, "text_encoder": None})
    assert module.negative_text == 0.0  # no text encoder: no text prompts, no names needed
    named = TrackingModule(config={"image_size": 32, "dim": 32}, negative_names=["cube", "mug"])
    assert named.negative_names() == ("cube", "mug")
    unnamed = TrackingModule(config={"image_size": 32, "dim": 32})
    with pytest.raises(InputError, match="negative_names is not set"):
        unnamed.negative_names()
