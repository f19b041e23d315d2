import json
from pathlib import Path

import pytest
import torch
from safetensors.torch import save_file

from vision.errors import DataError, InputError
from vision.geometry.model import create_backbone
from vision.geometry.vggt_keys import convert_vggt_state_dict
from vision.geometry.weights import load_backbone

REFERENCE = Path(__file__).parent / "data" / "vggt_1b_params.json"


def test_every_vggt_1b_tensor_maps_to_ours_on_meta_device():
    params = json.loads(REFERENCE.read_text())["params"]
    with torch.device("meta"):
        model = create_backbone("vggt_1b")
        reference = {k: torch.empty(shape) for k, shape in params.items()}
    ours = {k: tuple(v.shape) for k, v in model.state_dict().items()}
    converted, skipped = convert_vggt_state_dict(reference, model)
    assert skipped == ["aggregator.patch_embed.mask_token"]  # documented; track_head.* is not in the reference
    assert sorted(k for k in converted if k not in ours) == []
    assert [(k, tuple(v.shape), ours[k]) for k, v in converted.items() if tuple(v.shape) != ours[k]] == []
    # none of ours is left unmapped: the VGGT-1B config is complete
    assert sorted(k for k in ours if k not in converted) == []
    assert converted["aggregator.patch_embed.pos_embed"].shape == (1, 37 * 37, 1024)
    assert sum(torch.Size(s).numel() for s in ours.values()) == pytest.approx(1.19e9, rel=0.01)


def _vggt_format(model):
    """Write our (timm-format) state dict the way the VGGT checkpoint stores it."""
    state = {k: v.clone() for k, v in model.state_dict().items()}
    pre = "aggregator.patch_embed."
    cls_pos = torch.randn(1, 1, state[pre + "pos_embed"].shape[-1])
    state[pre + "register_tokens"] = state.pop(pre + "reg_token")
    state[pre + "cls_token"] = state[pre + "cls_token"] - cls_pos
    state[pre + "pos_embed"] = torch.cat([cls_pos, state[pre + "pos_embed"]], dim=1)
    state[pre + "mask_token"] = torch.zeros(1, cls_pos.shape[-1])
    state["track_head.feature_extractor.norm.weight"] = torch.ones(4)
    return state


def test_vggt_weights_round_trip(tmp_path):
    kwargs = dict(img_size=56, patch_size=14, embed_dim=384, depth=1, num_heads=6,
                  patch_embed="vit_small_patch14_reg4_dinov2", dpt_layers=(0, 0, 0, 0), camera_num_heads=6)
    torch.manual_seed(0)
    source = create_backbone("tiny", **kwargs).eval()
    path = tmp_path / "vggt.safetensors"
    save_file(_vggt_format(source), str(path))
    torch.manual_seed(1)
    target = create_backbone("tiny", **kwargs).eval()
    report = load_backbone(target, path)
    assert report.source == "VGGT-format" and report.loaded == sorted(target.state_dict())
    assert report.skipped == ["aggregator.patch_embed.mask_token", "track_head.feature_extractor.norm.weight"]
    x = torch.rand(1, 2, 3, 56, 56)
    with torch.no_grad():
        a, b = source(x), target(x)
    for key in ("pose_enc", "depth", "world_points"):
        torch.testing.assert_close(a[key], b[key])
    # a model without a point head skips point_head.* keys; a conv patch embed cannot take DINOv2 weights
    no_points = create_backbone("tiny", enable_points=False, **kwargs)
    assert any(k.startswith("point_head.") for k in load_backbone(no_points, path).skipped)
    torch.save({"model": _vggt_format(source)}, tmp_path / "vggt.pt")
    with pytest.raises(InputError, match="conv"):
        load_backbone(create_backbone("tiny", **{**kwargs, "patch_embed": "conv"}), tmp_path / "vggt.pt")
    with pytest.raises(DataError, match="missing.pt: weights file not found"):
        load_backbone(target, tmp_path / "missing.pt")
