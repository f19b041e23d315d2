import torch
from safetensors.torch import save_file

from vision.geometry.model import create_backbone
from vision.geometry.patch_embed import build_patch_embed, dinov2_to_timm, embed_patches

NAME = "vit_small_patch14_dinov2"
REG_NAME = "vit_small_patch14_reg4_dinov2"


def test_timm_patch_embed_backbone_and_local_weights(tmp_path):
    torch.manual_seed(0)
    source = build_patch_embed(NAME, img_size=56, patch_size=14, embed_dim=384)
    # original DINOv2 format: same names for this model plus a mask token
    state = {k: v.clone() for k, v in source.state_dict().items()}
    state["mask_token"] = torch.zeros(1, 384)
    path = tmp_path / "dinov2_small.pth"
    torch.save(state, path)
    model = create_backbone("tiny", img_size=56, patch_size=14, embed_dim=384, depth=1, num_heads=6,
                            patch_embed=NAME, patch_embed_weights=str(path), dpt_layers=(0, 0, 0, 0),
                            camera_num_heads=6).eval()
    x = torch.rand(1, 2, 3, 56, 70)
    with torch.no_grad():
        out = model(x)
        torch.testing.assert_close(embed_patches(model.aggregator.patch_embed, x[0]), embed_patches(source, x[0]))
    assert out["depth"].shape == (1, 2, 56, 70, 1)
    assert out["tokens"][0].shape == (1, 2, 5 + 4 * 5, 768)


def test_dinov2_register_checkpoint_converts_to_timm(tmp_path):
    torch.manual_seed(1)
    vit = build_patch_embed(REG_NAME, img_size=56, patch_size=14, embed_dim=384)
    with torch.no_grad():
        for p in vit.parameters():
            p.normal_(0, 0.02)
    ref = vit.state_dict()
    cls_pos = torch.randn(1, 1, 384)
    dino = {k: v.clone() for k, v in ref.items() if k not in ("reg_token", "cls_token", "pos_embed")}
    dino["register_tokens"] = ref["reg_token"].clone()
    dino["cls_token"] = ref["cls_token"] - cls_pos
    dino["pos_embed"] = torch.cat([cls_pos, ref["pos_embed"]], dim=1)
    dino["mask_token"] = torch.zeros(1, 384)
    converted = dinov2_to_timm(dino, vit)
    assert converted.keys() == ref.keys()
    for key in ref:
        torch.testing.assert_close(converted[key], ref[key])
    path = tmp_path / "dinov2_reg.safetensors"
    save_file(dino, str(path))
    fresh = build_patch_embed(REG_NAME, img_size=56, patch_size=14, embed_dim=384, weights=path)
    x = torch.rand(2, 3, 56, 56)
    with torch.no_grad():
        torch.testing.assert_close(embed_patches(fresh, x), embed_patches(vit, x))


def test_conv_stem_patch_embed_grid_and_receptive_field():
    import pytest

    from vision.errors import InputError

    torch.manual_seed(0)
    stem = build_patch_embed("convstem", img_size=64, patch_size=8, embed_dim=32).eval()
    x = torch.rand(2, 3, 64, 48)
    tokens = embed_patches(stem, x)
    assert tokens.shape == (2, 8 * 6, 32)
    # unlike the patchify convolution, a token also sees the pixels of its neighbouring patch
    y = x.clone()
    y[:, :, 0:8, 8] += 1.0  # first column of patch (0, 1)
    with torch.no_grad():
        changed = (embed_patches(stem, y) - tokens).abs().sum(-1)[0].reshape(8, 6)
    assert changed[0, 0] > 0 and changed[0, 1] > 0
    model = create_backbone("tiny", img_size=64, patch_embed="convstem")
    assert model(torch.rand(1, 2, 3, 64, 64))["depth"].shape == (1, 2, 64, 64, 1)
    with pytest.raises(InputError, match="power-of-two"):
        build_patch_embed("convstem", img_size=56, patch_size=14, embed_dim=32)
    with pytest.raises(InputError, match="only read by the .mobilenetv2. and timm ViT"):
        build_patch_embed("convstem", img_size=64, patch_size=8, embed_dim=32, weights="w.safetensors")


def test_an_unsafe_weights_file_is_refused_without_advice_to_unpickle_it(tmp_path):
    """torch's message ends by advising ``weights_only=False``, which would run the payload: the one-line error
    names the file and the refused global instead."""
    import pytest

    from vision.errors import DataError
    from vision.geometry.patch_embed import read_state_dict

    class Payload:
        def __reduce__(self):
            return (print, ("this must never run",))

    path = tmp_path / "unsafe.pt"
    torch.save({"model": {"w": torch.zeros(1)}, "extra": Payload()}, path)
    with pytest.raises(DataError) as info:
        read_state_dict(path)
    message = str(info.value)
    assert "\n" not in message and str(path) in message and "print" in message
    assert "weights_only=False" not in message and "weights_only` set to `False" not in message
