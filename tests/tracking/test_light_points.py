"""Light point maps for tracking (vision.tracking.light_points): the closed-form fit, the patch head, training either
with the tracker, the model option, the config."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from vision.errors import InputError
from vision.geometry.dpt import invert_activation
from vision.tracking.light_points import PatchPointHead, fit_light_points, light_point_error
from vision.tracking.model import G2TAM
from vision.tracking.task import TrackingConfig, build_model


def _model(tracking_points: str = "light") -> G2TAM:
    torch.manual_seed(0)
    return G2TAM(image_size=32, dim=32, tracking_points=tracking_points).eval()


def _windows(count: int = 3, views: int = 4, size: int = 32) -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(1)
    # smooth random images, so the point maps have structure a linear map can follow
    coarse = torch.rand(count, views, 3, 4, 4, generator=g)
    return [F.interpolate(c, size=(size, size), mode="bilinear", align_corners=False)[None] for c in coarse]


def _pre_activation_error(model: G2TAM, windows: list[torch.Tensor]) -> float:
    """Sum of squared differences between the light head's and the DPT head's pre-activation points."""
    head, dpt = model.light_points, model.backbone.point_head
    total = 0.0
    with torch.no_grad():
        for images in windows:
            tokens, start, images = model.backbone.aggregate(images)
            target = invert_activation(model.backbone.predict_points(tokens, images, start)["world_points"],
                                       dpt.activation).flatten(0, 1).permute(0, 3, 1, 2)
            coarse = dpt.coarse(tokens, images.shape[-2], images.shape[-1], start)
            ours = F.pixel_shuffle(head.proj(head.cells(*coarse)), head.upscale)
            total += float(((ours - target) ** 2).sum())
    return total


def test_the_fit_is_the_least_squares_solution():
    """Fitted without ridge, every perturbation of the weights or the bias makes the pre-activation error larger,
    and the fit beats the best constant map (the bias alone) by far: the rows and the sub-pixel order match."""
    model, windows = _model(), _windows()
    stats = fit_light_points(model, windows, ridge=0.0)
    assert stats["windows"] == 3 and stats["cells"] == 3 * 4 * 16 * 16
    best, fitted_error = _pre_activation_error(model, windows), light_point_error(model, windows)
    assert 0 < fitted_error < 1
    proj = model.light_points.proj
    fitted = (proj.weight.detach().clone(), proj.bias.detach().clone())
    g = torch.Generator().manual_seed(2)
    for _ in range(4):
        with torch.no_grad():
            proj.weight.copy_(fitted[0] + 1e-3 * torch.randn(fitted[0].shape, generator=g))
            proj.bias.copy_(fitted[1] + 1e-3 * torch.randn(fitted[1].shape, generator=g))
        assert _pre_activation_error(model, windows) > best
    with torch.no_grad():
        proj.weight.zero_()
        proj.bias.copy_(fitted[1])
    assert best < 0.5 * _pre_activation_error(model, windows)
    assert light_point_error(model, windows) > fitted_error


def test_ridge_shrinks_the_weights():
    model, windows = _model(), _windows()
    fit_light_points(model, windows, ridge=0.0)
    free = model.light_points.proj.weight.norm()
    fit_light_points(model, windows, ridge=10.0)
    assert model.light_points.proj.weight.norm() < free


def test_tracking_encoding_reads_the_light_points_and_nothing_else_changes():
    light, dpt = _model("light"), _model("dpt")
    dpt.load_state_dict(light.state_dict(), strict=False)  # the same backbone and decoder weights
    fit_light_points(light, _windows())
    images = _windows(1)[0]
    with torch.no_grad():
        ours, reference = light.tracking_encoding(images), dpt.tracking_encoding(images)
        tokens, start, checked = light.backbone.aggregate(images)
        expected = light.light_points(light.backbone.point_head, tokens, checked, start)
    assert set(ours) == set(reference)
    torch.testing.assert_close(ours["world_points"], expected)
    assert ours["world_points"].shape == reference["world_points"].shape == (1, 4, 32, 32, 3)
    assert not torch.equal(ours["world_points"], reference["world_points"])
    for key in ("feats", "hires", "extrinsics", "intrinsics", "images"):
        torch.testing.assert_close(ours[key], reference[key], rtol=0, atol=0)
    # depth is the z of the light points in each camera, as for the DPT's
    assert float(ours["depth"].sub(reference["depth"]).abs().max()) > 0


def test_config_and_training_refuse_what_cannot_work():
    with pytest.raises(InputError, match="tracking_points='fast': must be one of"):
        TrackingConfig(tracking_points="fast")
    with pytest.raises(InputError, match="needs architecture 'g2tam'"):
        TrackingConfig(architecture="memory_bank", tracking_points="light")
    model = build_model(TrackingConfig(image_size=32, dim=32, text_encoder=None, tracking_points="light"))
    assert model.light_points is not None and "light_points.proj.weight" in model.state_dict()
    patch = build_model(TrackingConfig(image_size=32, dim=32, text_encoder=None, tracking_points="patch"))
    assert isinstance(patch.light_points, PatchPointHead)
    assert build_model(TrackingConfig(image_size=32, dim=32, text_encoder=None)).light_points is None
    with pytest.raises(ValueError, match="reads the backbone's point head; it has none"):
        G2TAM(image_size=32, dim=32, tracking_points="patch", backbone_overrides={"enable_points": False})


def test_the_patch_head_maps_each_token_to_the_pixels_of_its_patch():
    """Changing one patch token changes the points of that patch's p x p pixels and of no other pixel."""
    model = _model("patch")
    head, dpt = model.light_points, model.backbone.point_head
    with torch.no_grad():
        tokens, start, images = model.backbone.aggregate(_windows(1)[0])
        before = head(dpt, tokens, images, start)
        changed = [t.clone() if t is not None else None for t in tokens]
        p, grid = model.patch_size, 32 // model.patch_size
        changed[-1][0, 2, start + 1 * grid + 3] += 1.0  # view 2, patch row 1, column 3
        after = head(dpt, changed, images, start)
    assert before.shape == (1, 4, 32, 32, 3)
    moved = (after - before).abs().sum(-1) > 0  # [1, 4, 32, 32]
    expected = torch.zeros_like(moved)
    expected[0, 2, p:2 * p, 3 * p:4 * p] = True
    assert torch.equal(moved, expected)


def _capture_decoded_points(module) -> list[torch.Tensor]:
    """Record the ``world_points`` each ``module.model.decode`` call reads."""
    seen, decode = [], module.model.decode

    def spy(encoded, prompts, *args, **kwargs):
        seen.append(encoded["world_points"])
        return decode(encoded, prompts, *args, **kwargs)

    module.model.decode = spy
    return seen


def _trained(batch: dict, kind: str, teacher: str, **kwargs):
    """A TrackingModule with a ``kind`` light head and ``teacher``, six AdamW steps on ``batch``; checks that the
    first step's decoder read the light head's points (``ground_truth``) or the DPT head's (``point_head``), that
    the light head and the DPT point head get gradients and that the light head's loss falls. Returns ``(module,
    seen)``: the ``world_points`` each decode read."""
    from vision.tracking.lightning import TrackingModule

    torch.manual_seed(0)
    module = TrackingModule(TrackingConfig(image_size=32, dim=32, text_encoder=None, tracking_points=kind),
                            max_objects=2, light_points_teacher=teacher, **kwargs)
    module.log = module.log_dict = lambda *a, **k: None
    seen = _capture_decoded_points(module)
    opt = torch.optim.AdamW(module.model.parameters(), lr=3e-3)
    light = []
    for _ in range(6):
        losses = module.training_step(batch, 0)
        opt.zero_grad()
        losses["loss"].backward()
        if not light:
            assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in module.model.light_points.parameters())
            assert module.model.backbone.point_head.scratch.output_conv2[-1].weight.grad.abs().sum() > 0
            with torch.no_grad():
                geometry = module.model.backbone(batch["images"])
                read = (module.model.tracking_points_from(geometry) if teacher == "ground_truth"
                        else geometry["world_points"])
            torch.testing.assert_close(seen[0].detach(), read)
        opt.step()
        light.append(float(losses["loss_light_points"].detach()))
    assert light[-1] < light[0]
    return module, seen


@pytest.mark.parametrize("kind", ["light", "patch"])
def test_the_tracker_trains_its_light_point_head(clip_batch, kind):
    """With tracking_points light / patch the training step scores the light head against the ground-truth points,
    the decoder reads the light head's points (not the DPT head's), and a few steps on one batch lower the light
    head's loss; the DPT point head still trains through the geometry loss."""
    from vision.tracking.lightning import ground_truth_points

    module, seen = _trained(clip_batch, kind, "ground_truth", memory_prob=0.5)
    with torch.no_grad():
        geometry = module.model.backbone(clip_batch["images"])
        expected = module.model.tracking_points_from(geometry)
        assert not torch.allclose(expected, geometry["world_points"])
        module.decode_batch(clip_batch, _prompts_for(module, clip_batch))
    torch.testing.assert_close(seen[-1], expected)
    assert ground_truth_points(clip_batch).shape == expected.shape


def test_a_light_head_distilled_from_the_point_head(clip_batch):
    """light_points_teacher point_head: the light head learns the backbone's DPT points (its loss falls over a few
    steps on one batch) while the decoder reads the DPT points in training, as the default G2TAM does; tracking
    still reads the light head. An unknown teacher is one clear error."""
    from vision.tracking.lightning import TrackingModule

    module, seen = _trained(clip_batch, "light", "point_head")
    with torch.no_grad():
        geometry = module.model.backbone(clip_batch["images"])
        module.decode_batch(clip_batch, _prompts_for(module, clip_batch))
        torch.testing.assert_close(seen[-1], geometry["world_points"])
        tracked = module.model.tracking_encoding(clip_batch["images"][:1])["world_points"]
        torch.testing.assert_close(tracked, module.model.tracking_points_from(geometry)[:1])
    with pytest.raises(InputError, match="light_points_teacher must be one of"):
        TrackingModule(TrackingConfig(image_size=32, dim=32, text_encoder=None), light_points_teacher="dpt")


def _prompts_for(module, batch):
    from vision.tracking.sampling import sample_prompts

    return sample_prompts(batch, max_objects=2, types=("point",), generator=torch.Generator().manual_seed(0),
                          text_dim=module.model.text_dim, memory_dim=module.model.dim).prompts


def test_a_patch_model_tracks_without_the_point_head():
    """tracking_encoding of a patch model reads the patch head's points; the DPT point head never runs."""
    model = _model("patch")
    calls = []
    model.backbone.point_head.register_forward_hook(lambda *a: calls.append(1))
    images = _windows(1)[0]
    with torch.no_grad():
        encoded = model.tracking_encoding(images)
        geometry = model.backbone(images, heads=("camera",))
    assert not calls
    torch.testing.assert_close(encoded["world_points"], model.tracking_points_from(geometry))
