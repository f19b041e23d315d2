"""Light point maps for tracking (vision.tracking.light_points): the closed-form fit, the model option, the config."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from vision.errors import InputError
from vision.geometry.dpt import invert_activation
from vision.tracking.light_points import fit_light_points, light_point_error
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
    assert build_model(TrackingConfig(image_size=32, dim=32, text_encoder=None)).light_points is None
    from vision.tracking.lightning import TrackingModule

    with pytest.raises(InputError, match="vision-fit-light-points"):
        TrackingModule(TrackingConfig(image_size=32, dim=32, text_encoder=None, tracking_points="light"))
