"""The ray-map target (Depth Anything 3's camera target): cameras -> rays -> cameras round trip, the ray head's
outputs, its loss, its checkpoint, and the ``ray_pose`` row of the evaluation."""

from __future__ import annotations

import json

import pytest
import torch

from vision.data.coco import load_split
from vision.data.datasets import MultiViewClipDataset, collate_clips
from vision.synthetic.scenes import write_split
from vision.data.transforms import build_multiview_transform
from vision.errors import DataError, InputError
from vision.evaluation.evaluate import evaluate
from vision.evaluation.geometry import format_geometry_table
from vision.geometry.camera import depth_to_world_points, quat_to_matrix
from vision.geometry.results import clip_results, evaluate_geometry
from vision.geometry.lightning import GeometryModule
from vision.geometry.losses import geometry_losses, normalize_scene, ray_loss
from vision.geometry.model import create_backbone
from vision.geometry.rays import cameras_to_rays, rays_to_cameras
from vision.geometry.task import GeometryConfig, load, read_backbone_checkpoint

H, W = 24, 32


def random_cameras(b: int, s: int, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """``[b, s, 3, 4]`` random rigid extrinsics and ``[b, s, 3, 3]`` intrinsics with fx != fy, an off-centre
    principal point and a small skew (float64)."""
    g = torch.Generator().manual_seed(seed)
    rot = quat_to_matrix(torch.randn(b, s, 4, generator=g, dtype=torch.float64))
    t = torch.randn(b, s, 3, 1, generator=g, dtype=torch.float64) * 2
    k = torch.zeros(b, s, 3, 3, dtype=torch.float64)
    k[..., 0, 0] = 20 + 30 * torch.rand(b, s, generator=g, dtype=torch.float64)
    k[..., 1, 1] = 15 + 40 * torch.rand(b, s, generator=g, dtype=torch.float64)
    k[..., 0, 1] = 0.5 * torch.randn(b, s, generator=g, dtype=torch.float64)
    k[..., 0, 2] = W / 2 + 6 * torch.randn(b, s, generator=g, dtype=torch.float64)
    k[..., 1, 2] = H / 2 + 6 * torch.randn(b, s, generator=g, dtype=torch.float64)
    k[..., 2, 2] = 1
    return torch.cat([rot, t], dim=-1), k


def test_rays_follow_the_depth_convention_and_round_trip_exactly():
    extr, intr = random_cameras(2, 3)
    origins, directions = cameras_to_rays(extr, intr, H, W)
    assert origins.shape == directions.shape == (2, 3, H, W, 3)
    depth = 1 + torch.rand(2, 3, H, W, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    # depth * direction + origin is the pixel's world point (the convention of depth_to_world_points, no skew)
    no_skew = intr.clone()
    no_skew[..., 0, 1] = 0
    o, d = cameras_to_rays(extr, no_skew, H, W)
    torch.testing.assert_close(o + depth[..., None] * d, depth_to_world_points(depth, extr, no_skew))
    back_extr, back_intr = rays_to_cameras(origins, directions)
    torch.testing.assert_close(back_extr, extr, atol=1e-9, rtol=0)
    torch.testing.assert_close(back_intr, intr, atol=1e-9, rtol=0)
    assert back_extr.dtype == torch.float64
    # float32 in, float32 out; the fit itself runs in float64
    e32, k32 = rays_to_cameras(origins.float(), directions.float(), torch.ones(2, 3, H, W))
    assert e32.dtype == k32.dtype == torch.float32
    torch.testing.assert_close(e32.double(), extr, atol=1e-4, rtol=0)


def test_confidence_weights_out_corrupted_rays():
    extr, intr = random_cameras(1, 2, seed=2)
    origins, directions = cameras_to_rays(extr, intr, H, W)
    origins, directions = origins.clone(), directions.clone()
    g = torch.Generator().manual_seed(3)
    bad = torch.randperm(H * W, generator=g)[:8]
    ys, xs = bad // W, bad % W
    origins[:, :, ys, xs] += 5 * torch.randn(1, 2, 8, 3, generator=g, dtype=torch.float64)
    directions[:, :, ys, xs] += 5 * torch.randn(1, 2, 8, 3, generator=g, dtype=torch.float64)
    conf = torch.full((1, 2, H, W), 100.0, dtype=torch.float64)
    conf[:, :, ys, xs] = 1e-3
    weighted_extr, weighted_intr = rays_to_cameras(origins, directions, conf)
    plain_extr, _ = rays_to_cameras(origins, directions)
    weighted_err = (weighted_extr - extr).abs().max()
    assert weighted_err < 1e-4
    assert (weighted_intr - intr).abs().max() < 1e-3
    assert (plain_extr - extr).abs().max() > 100 * weighted_err  # without the confidences the outliers pull the fit
    # a rotation and a positive-diagonal K with K[2, 2] = 1 even for rays pointing backwards (M with det < 0)
    flipped_extr, flipped_intr = rays_to_cameras(origins, -directions, conf)
    torch.testing.assert_close(torch.linalg.det(flipped_extr[..., :3]), torch.ones(1, 2, dtype=torch.float64))
    assert (torch.diagonal(flipped_intr, dim1=-2, dim2=-1) > 0).all()
    torch.testing.assert_close(flipped_intr, weighted_intr)


def test_ray_head_output_shapes_and_off_by_default():
    torch.manual_seed(0)
    images = torch.rand(1, 2, 3, 32, 32)
    plain = create_backbone("tiny", img_size=32).eval()
    assert plain.ray_head is None
    with torch.no_grad():
        assert not any(k.startswith("ray") for k in plain(images))
    model = create_backbone("tiny", img_size=32, enable_rays=True).eval()
    model.load_state_dict(plain.state_dict(), strict=False)
    with torch.no_grad():
        out, ref = model(images), plain(images)
    assert out["ray_origins"].shape == out["ray_directions"].shape == (1, 2, 32, 32, 3)
    assert out["rays_conf"].shape == (1, 2, 32, 32) and (out["rays_conf"] > 1).all()
    for key in ("extrinsics", "depth", "world_points"):  # the other heads are unchanged
        assert torch.equal(out[key], ref[key]), key


def _clip_batch(tmp_path, seed: int = 3) -> tuple[str, dict]:
    split = write_split(tmp_path, "rays", scenes=1, views=3, size=32, mode="unordered", seed=seed, threads=1)
    dataset = MultiViewClipDataset(load_split(split), 3, transform=build_multiview_transform(32, train=False))
    return split, collate_clips([dataset[0]])


def test_ray_loss_is_minimal_on_ground_truth_and_falls_when_fitting_one_clip(tmp_path):
    torch.manual_seed(0)
    split, batch = _clip_batch(tmp_path)
    valid = batch["valid_depth"] & (batch["depth"] > 0)
    gt = normalize_scene(batch["extrinsics"], batch["intrinsics"], batch["depth"], None, valid)
    origins, directions = cameras_to_rays(gt.extrinsics, gt.intrinsics, 32, 32)
    # origins are in the normalised scene: camera 0 at the origin
    assert origins[:, 0].abs().max() < 1e-5
    perfect = ray_loss(origins, directions, torch.ones(1, 3, 32, 32), gt.extrinsics, gt.intrinsics)
    assert perfect["loss"].abs() < 1e-5 and perfect["loss_reg"] < 1e-5
    off = ray_loss(origins + 0.1, directions, torch.ones(1, 3, 32, 32), gt.extrinsics, gt.intrinsics)
    assert off["loss"] > 0.1

    module = GeometryModule(config={"size": "tiny", "image_size": 32, "ray_head": True}, ray_weight=1.0)
    backbone = module.model.backbone
    backbone.aggregator.requires_grad_(False)  # fit the ray head alone: a few seconds on a CPU
    optimiser = torch.optim.AdamW(backbone.ray_head.parameters(), lr=1e-3, weight_decay=0.0)
    history = []
    for _ in range(5):
        losses, _ = geometry_losses(backbone, batch, ray_weight=1.0)
        history.append(losses["loss_rays"].item())
        losses["loss"].backward()
        assert module.model.backbone.ray_head.scratch.output_conv2[-1].weight.grad.abs().sum() > 0
        optimiser.step()
        optimiser.zero_grad()
    assert history[-1] < 0.95 * history[0] and history == sorted(history, reverse=True), history
    # without the head the term is absent
    plain = GeometryModule(config={"size": "tiny", "image_size": 32})
    assert "loss_rays" not in geometry_losses(plain.model.backbone, batch)[0]


def test_ray_checkpoint_loads_and_old_checkpoints_load_without_rays(tmp_path):
    torch.manual_seed(0)
    module = GeometryModule(config={"size": "tiny", "image_size": 32, "ray_head": True})
    path = tmp_path / "rays.ckpt"
    torch.save({"state_dict": module.state_dict(), "hyper_parameters": dict(module.hparams)}, path)
    model, config = load(path)
    assert config.ray_head and config == GeometryConfig(size="tiny", image_size=32, ray_head=True)
    images = torch.rand(1, 2, 3, 32, 32)
    with torch.no_grad():
        ours, theirs = module.eval()(images), model(images)
    for key in ("ray_origins", "ray_directions", "rays_conf", "depth"):
        assert torch.equal(ours[key], theirs[key]), key
    # the backbone weights that downstream tasks load leave the ray head out
    assert not any(k.startswith("ray_head.") for k in read_backbone_checkpoint(path)[1])
    # a checkpoint whose config has no ray_head field
    old = GeometryModule(config={"size": "tiny", "image_size": 32})
    hparams = dict(old.hparams)
    hparams["config"] = {k: v for k, v in hparams["config"].items() if k != "ray_head"}
    torch.save({"state_dict": old.state_dict(), "hyper_parameters": hparams}, tmp_path / "old.ckpt")
    model, config = load(tmp_path / "old.ckpt")
    assert config.ray_head is False and model.backbone.ray_head is None
    with pytest.raises(InputError, match="ray_head"):
        GeometryConfig(ray_head="yes")


def test_ray_pose_row_is_scored_printed_and_a_bad_ray_field_is_named(tmp_path):
    torch.manual_seed(0)
    split, batch = _clip_batch(tmp_path, seed=4)
    module = GeometryModule(config={"size": "tiny", "image_size": 32, "ray_head": True}).eval()
    metrics = evaluate_geometry(module.model, split, views=3, image_size=32)
    assert 0.0 <= metrics["ray_pose/AUC@30"] <= 1.0
    assert {"ray_pose/RRA@15", "ray_pose/RTA@15"} <= metrics.keys()
    rows = [line.split()[0] for line in format_geometry_table(metrics).splitlines()]
    assert rows == ["method", "model", "constant_depth", "identity_pose", "camera_head", "ray_pose"]

    with torch.no_grad():
        outputs = module.model(batch["images"])
    results = [r for _, rs in clip_results(module.model, outputs, batch["image_ids"]) for r in rs]
    cameras = rays_to_cameras(outputs["ray_origins"], outputs["ray_directions"], outputs["rays_conf"])[0]
    torch.testing.assert_close(torch.tensor(results[1]["ray_extrinsics"]), cameras[0, 1], atol=1e-6, rtol=0)
    for index, value, message in ((1, [[1, 0, 0]], "3x4 matrix"), (2, None, "every result or in none")):
        broken = [dict(r) for r in results]
        if value is None:
            del broken[index]["ray_extrinsics"]
        else:
            broken[index]["ray_extrinsics"] = value
        path = tmp_path / f"bad{index}.json"
        path.write_text(json.dumps(broken))
        with pytest.raises(DataError, match=message) as info:
            evaluate(split, path, "geometry")
        assert info.value.file == str(path) and info.value.field == f"results[{index}].ray_extrinsics"


def test_vggt_weights_fill_everything_but_the_ray_head(tmp_path):
    from safetensors.torch import save_file

    torch.manual_seed(0)
    source = create_backbone("tiny", img_size=32)
    path = tmp_path / "vggt.safetensors"
    save_file({k: v.contiguous() for k, v in source.state_dict().items()}, str(path))
    module = GeometryModule(config={"size": "tiny", "image_size": 32, "ray_head": True}, vggt_weights=str(path))
    ours = module.model.backbone.state_dict()
    assert all(torch.equal(ours[k], v) for k, v in source.state_dict().items())
    assert any(k.startswith("ray_head.") for k in ours)
    # anything else missing is still an error
    partial = {k: v.contiguous() for k, v in source.state_dict().items() if not k.startswith("depth_head.")}
    save_file(partial, str(tmp_path / "partial.safetensors"))
    with pytest.raises(DataError, match="partial.safetensors.*missing=.*depth_head"):
        GeometryModule(config={"size": "tiny", "image_size": 32, "ray_head": True},
                       vggt_weights=str(tmp_path / "partial.safetensors"))
