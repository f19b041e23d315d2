"""Regenerate the VGGT parity fixtures in this folder from VGGT's own reference code (see README.md here).

Usage (the reference is NOT part of this repository; check it out somewhere else first):

    PYTHONPATH=/path/to/vggt .venv/bin/python tests/geometry/data/vggt_small/regenerate.py \
        /path/to/vggt --commit <hash of that checkout>

It builds VGGT's ``Aggregator``, ``CameraHead`` and two ``DPTHead`` s (depth and points, as ``VGGT.__init__`` wires
them) at the small configuration :data:`REFERENCE_CONFIG`, re-draws their parameters with a fixed seed, runs them in
eval mode on one fixed input of 2 views and writes, next to this script:

- ``state_dict.safetensors``: the reference model's state dict under VGGT's checkpoint key names
  (``aggregator.*``, ``camera_head.*``, ``depth_head.*``, ``point_head.*``), float32;
- ``io.safetensors``: ``images [1, 2, 3, 42, 56]`` in [0, 1] and the reference outputs ``pose_enc [1, 2, 9]``,
  ``depth [1, 2, 42, 56, 1]``, ``depth_conf [1, 2, 42, 56]``, ``world_points [1, 2, 42, 56, 3]``,
  ``world_points_conf [1, 2, 42, 56]``, float32;
- ``config.json``: the reference configuration, our matching ``create_backbone`` arguments, seed and commit.

Only VGGT's modules are imported from the given path; no reference code is copied here.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import torch
from safetensors.torch import save_file

HERE = Path(__file__).resolve().parent
SEED = 0
WEIGHT_GAIN = 1.5  # weight bound = WEIGHT_GAIN / sqrt(fan_in)
IMAGE_SHAPE = (1, 2, 3, 42, 56)  # B, S, 3, H, W: a 3 x 4 patch grid, not square (checks the aspect-ratio paths)

REFERENCE_CONFIG = {
    "aggregator": dict(img_size=56, patch_size=14, embed_dim=32, depth=2, num_heads=2, mlp_ratio=4.0,
                       num_register_tokens=4, patch_embed="conv", qk_norm=True, rope_freq=100, init_values=0.01),
    "camera_head": dict(dim_in=64, trunk_depth=1, num_heads=2, mlp_ratio=4, init_values=0.01),
    "depth_head": dict(dim_in=64, patch_size=14, output_dim=2, activation="exp", conf_activation="expp1",
                       features=16, out_channels=[8, 16, 32, 32], intermediate_layer_idx=[0, 0, 1, 1]),
    "point_head": dict(dim_in=64, patch_size=14, output_dim=4, activation="inv_log", conf_activation="expp1",
                       features=16, out_channels=[8, 16, 32, 32], intermediate_layer_idx=[0, 0, 1, 1]),
}

# The same network as our GeometryBackbone: create_backbone("tiny", **OURS_CONFIG)
OURS_CONFIG = dict(img_size=56, patch_size=14, embed_dim=32, depth=2, num_heads=2, mlp_ratio=4.0,
                   num_register_tokens=4, patch_embed="conv", qk_norm=True, rope_freq=100.0, init_values=0.01,
                   dpt_features=16, dpt_out_channels=[8, 16, 32, 32], dpt_layers=[0, 0, 1, 1],
                   camera_trunk_depth=1, camera_num_heads=2, camera_iterations=4)


def randomize_(model: torch.nn.Module, generator: torch.Generator) -> None:
    """Re-draw every parameter so that no part of the network is trivial (default init leaves LayerNorms at 1/0,
    LayerScale at 0.01, special tokens at ~1e-6 and the empty pose token at 0):

    - ``*.gamma`` (LayerScale): uniform in [0.2, 0.6];
    - ``camera_token``, ``register_token``, ``empty_pose_tokens``: normal, std 0.5;
    - other 1-D parameters (biases, LayerNorm weights): their default value + normal noise, std 0.1;
    - weight matrices / kernels: uniform in [-b, b], b = WEIGHT_GAIN / sqrt(fan_in) (PyTorch's default bound is
      gain 1, under which the dense outputs hardly vary over pixels; 1.5 makes depth span ~1.1-1.6 and points ~1).
    """
    with torch.no_grad():
        for name, p in model.named_parameters():
            leaf = name.rsplit(".", 1)[-1]
            if leaf == "gamma":
                p.copy_(0.2 + 0.4 * torch.rand(p.shape, generator=generator))
            elif leaf in ("camera_token", "register_token", "empty_pose_tokens"):
                p.copy_(0.5 * torch.randn(p.shape, generator=generator))
            elif p.ndim == 1:
                p.add_(0.1 * torch.randn(p.shape, generator=generator))
            else:
                fan_in = p[0].numel() if p.ndim > 1 else p.numel()
                if isinstance(_owner(model, name), torch.nn.ConvTranspose2d):
                    fan_in = p.shape[0] * p[0, 0].numel()  # ConvTranspose2d weight is [in, out, kh, kw]
                bound = WEIGHT_GAIN / fan_in ** 0.5
                p.copy_((2 * torch.rand(p.shape, generator=generator) - 1) * bound)


def _owner(model: torch.nn.Module, name: str) -> torch.nn.Module:
    return model.get_submodule(name.rsplit(".", 1)[0]) if "." in name else model


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("reference", type=Path, help="checkout of github.com/facebookresearch/vggt (holds vggt/)")
    parser.add_argument("--commit", required=True, help="commit hash of that checkout (recorded in config.json)")
    parser.add_argument("--out", type=Path, default=HERE, help="output folder (default: this folder)")
    args = parser.parse_args(argv)
    if not (args.reference / "vggt" / "models" / "aggregator.py").is_file():
        parser.error(f"{args.reference} does not hold vggt/models/aggregator.py")
    try:  # the checkout comes in through PYTHONPATH (see the usage above)
        from vggt.heads.camera_head import CameraHead
        from vggt.heads.dpt_head import DPTHead
        from vggt.models.aggregator import Aggregator
    except ImportError as exc:
        parser.error(f"cannot import VGGT ({exc}); run with PYTHONPATH={args.reference}")

    torch.manual_seed(SEED)
    model = torch.nn.Module()
    model.aggregator = Aggregator(**REFERENCE_CONFIG["aggregator"])
    model.camera_head = CameraHead(**REFERENCE_CONFIG["camera_head"])
    model.depth_head = DPTHead(**REFERENCE_CONFIG["depth_head"])
    model.point_head = DPTHead(**REFERENCE_CONFIG["point_head"])
    generator = torch.Generator().manual_seed(SEED)
    randomize_(model, generator)
    model.eval()
    images = torch.rand(IMAGE_SHAPE, generator=generator)

    with torch.no_grad():  # the forward of VGGT.forward (vggt/models/vggt.py), without the track head
        tokens, start = model.aggregator(images)
        pose_enc = model.camera_head(tokens)[-1]
        depth, depth_conf = model.depth_head(tokens, images=images, patch_start_idx=start)
        points, points_conf = model.point_head(tokens, images=images, patch_start_idx=start)

    args.out.mkdir(parents=True, exist_ok=True)
    state = {k: v.detach().contiguous().float() for k, v in model.state_dict().items()}
    save_file(state, str(args.out / "state_dict.safetensors"))
    io = {"images": images, "pose_enc": pose_enc, "depth": depth, "depth_conf": depth_conf,
          "world_points": points, "world_points_conf": points_conf}
    save_file({k: v.contiguous().float() for k, v in io.items()}, str(args.out / "io.safetensors"))
    config = {"reference": "https://github.com/facebookresearch/vggt", "commit": args.commit, "seed": SEED,
              "weight_gain": WEIGHT_GAIN,
              "torch": torch.__version__, "image_shape": list(IMAGE_SHAPE), "reference_config": REFERENCE_CONFIG,
              "ours": {"create_backbone": "tiny", "overrides": OURS_CONFIG}}
    (args.out / "config.json").write_text(json.dumps(config, indent=1) + "\n")
    for k, v in io.items():
        print(f"{k}: {tuple(v.shape)} min {float(v.min()):.4g} max {float(v.max()):.4g}")
    print(f"{sum(v.numel() for v in state.values())} parameters, {len(state)} tensors")


if __name__ == "__main__":
    main()
