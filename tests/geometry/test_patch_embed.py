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
