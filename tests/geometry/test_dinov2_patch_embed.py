"""A timm DINOv2 ViT as the geometry backbone's patch embed, loaded from a local file, checked against timm itself.

Random weights stand in for the real ones (nothing is downloaded); what is proven is that a weights file, in
timm format (torch / safetensors) or in the original DINOv2 format, reaches the backbone built through
``GeometryConfig`` unchanged: its patch tokens equal timm's own ``forward_features`` (final norm applied, class
token dropped) for the same input, to 1e-5.
"""

import pytest
import timm
import torch

from vision.errors import DataError
from vision.geometry.patch_embed import embed_patches
from vision.geometry.task import GeometryConfig, build_model

NAME = "vit_small_patch14_dinov2"  # the "base" size has patch 14 / width 384, as ViT-S/14
IMG = 56  # 4 x 4 patches


def _reference(img_size: int = IMG, seed: int = 0) -> torch.nn.Module:
    """timm's own model with every parameter random (LayerScale too, so every block changes the tokens)."""
    torch.manual_seed(seed)
    vit = timm.create_model(NAME, pretrained=False, img_size=img_size, num_classes=0, dynamic_img_size=True)
    with torch.no_grad():
        for p in vit.parameters():
            p.normal_(0, 0.05)
    return vit.eval()


def _timm_to_dinov2(state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Inverse of ``dinov2_to_timm`` for the register-free ViT-S/14: the original DINOv2 checkpoint uses the same
    names (``blocks.N.ls1.gamma`` ...), its ``pos_embed`` includes the class position (timm's too for this model:
    ``no_embed_class`` is False), plus a ``mask_token`` [1, C] that timm has no use for."""
    out = {k: v.clone() for k, v in state.items()}
    out["mask_token"] = torch.randn(1, state["cls_token"].shape[-1])
    return out


def _backbone_tokens(path, x: torch.Tensor) -> torch.Tensor:
    model = build_model(GeometryConfig(size="base", image_size=IMG, patch_embed=NAME, patch_embed_weights=str(path)))
    patch_embed = model.backbone.aggregator.patch_embed.eval()
    with torch.no_grad():
        return embed_patches(patch_embed, x)


def _timm_tokens(vit: torch.nn.Module, x: torch.Tensor) -> torch.Tensor:
    with torch.no_grad():
        return vit.forward_features(x)[:, vit.num_prefix_tokens:]


def _assert_equal_tokens(ours: torch.Tensor, ref: torch.Tensor, what: str) -> None:
    assert ours.shape == ref.shape, f"{what}: shape {tuple(ours.shape)} vs timm {tuple(ref.shape)}"
    diff = (ours - ref).abs().max().item()
    assert diff <= 1e-5, f"{what}: max abs difference to timm's forward_features = {diff:.3g}"


@pytest.mark.slow
def test_timm_and_dinov2_weight_files_give_timms_patch_tokens(tmp_path):
    vit = _reference()
    state = vit.state_dict()
    torch.manual_seed(1)
    x = torch.randn(2, 3, IMG, IMG)
    ref = _timm_tokens(vit, x)
    assert ref.shape == (2, (IMG // 14) ** 2, 384)
    files = {"timm .pth": tmp_path / "vits14_timm.pth", "DINOv2 .pth": tmp_path / "dinov2_vits14.pth"}
    torch.save(state, files["timm .pth"])
    torch.save(_timm_to_dinov2(state), files["DINOv2 .pth"])
    try:
        from safetensors.torch import save_file
    except ImportError:  # safetensors is optional
        pass
    else:
        files["timm .safetensors"] = tmp_path / "vits14_timm.safetensors"
        save_file({k: v.contiguous() for k, v in state.items()}, str(files["timm .safetensors"]))
    for what, path in files.items():
        _assert_equal_tokens(_backbone_tokens(path, x), ref, what)
    # without the file the backbone's patch embed is a different (freshly initialised) network
    fresh = build_model(GeometryConfig(size="base", image_size=IMG, patch_embed=NAME))
    with torch.no_grad():
        assert (embed_patches(fresh.backbone.aggregator.patch_embed.eval(), x) - ref).abs().max() > 1e-2


def test_dinov2_file_at_its_own_resolution_is_resampled_like_timm(tmp_path):
    """A DINOv2 checkpoint is trained at 518 px (37 x 37 grid); here one at 112 px (8 x 8) is loaded into the 56 px
    backbone: its position embedding is resampled once at load time, and the tokens equal those of timm's own
    112 px model run on the 56 px input with ``dynamic_img_size`` (timm resamples at run time)."""
    vit = _reference(img_size=112, seed=2)
    path = tmp_path / "dinov2_vits14_112.pth"
    torch.save(_timm_to_dinov2(vit.state_dict()), path)
    x = torch.randn(1, 3, IMG, IMG)
    _assert_equal_tokens(_backbone_tokens(path, x), _timm_tokens(vit, x), "DINOv2 .pth at 112 px")


def test_weights_that_do_not_fit_are_a_one_line_data_error_naming_the_file(tmp_path):
    wrong = tmp_path / "vitb14.pth"  # a ViT-B/14 file for the ViT-S/14 patch embed
    torch.save(timm.create_model("vit_base_patch14_dinov2", pretrained=False, img_size=IMG,
                                 num_classes=0).state_dict(), wrong)
    partial = tmp_path / "partial.pth"  # a ViT-S/14 file with blocks missing
    torch.save({k: v for k, v in _reference().state_dict().items() if not k.startswith("blocks.11.")}, partial)
    garbage = tmp_path / "garbage.safetensors"
    garbage.write_bytes(b"not a safetensors file at all")
    for path, match in ((wrong, "shape mismatches"), (partial, "missing="), (garbage, "cannot read weights")):
        with pytest.raises(DataError, match=match) as info:
            build_model(GeometryConfig(size="base", image_size=IMG, patch_embed=NAME, patch_embed_weights=str(path)))
        message = str(info.value)
        assert "\n" not in message and len(message) < 600, message
        assert info.value.file == str(path) and str(path) in message
