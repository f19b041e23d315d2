"""GeometryBackbone: the shared VGGT-shaped geometry model (aggregator + camera / depth / point heads).

Forward contract
----------------
``GeometryBackbone(...)(images)`` with ``images`` float in [0, 1] of shape ``[B, S, 3, H, W]`` (``[S, 3, H, W]``
or a list of S ``[3, H, W]`` tensors of one size are accepted and get B = 1); H and W multiples of the patch size.
Frame 0 defines the world frame. Returns a dict:

- ``tokens``: list of ``depth`` tensors ``[B, S, P, 2C]``, the aggregator outputs (``None`` where a layer was not
  kept); ``P = 1 + R + (H/p)(W/p)``.
- ``patch_start_idx``: int, index of the first patch token in P (1 camera + R register tokens come first).
- ``images``: ``[B, S, 3, H, W]``, the validated input.
- ``pose_enc``: ``[B, S, 9]`` = [t(3), quaternion xyzw(4), fov_h, fov_w] of the last refinement iteration;
  ``pose_enc_list``: list of ``[B, S, 9]``, every iteration.
- ``extrinsics``: ``[B, S, 3, 4]`` OpenCV camera-from-world; ``intrinsics``: ``[B, S, 3, 3]``, principal point at
  the image centre.
- ``depth``: ``[B, S, H, W, 1]`` z-depth (exp activation); ``depth_conf``: ``[B, S, H, W]`` (1 + exp).
- ``world_points``: ``[B, S, H, W, 3]`` in frame 0's camera frame (sign(y) expm1(|y|)); ``world_points_conf``:
  ``[B, S, H, W]`` (1 + exp).
- ``ray_origins``, ``ray_directions``: ``[B, S, H, W, 3]`` the ray map (Depth Anything 3's camera target,
  :mod:`vision.geometry.rays`): per pixel the camera centre in frame 0's camera frame and the direction
  ``R^T K^{-1} [u, v, 1]^T`` (so ``depth * direction + origin`` is the pixel's world point); both linear (they are
  signed, unbounded coordinates); ``rays_conf``: ``[B, S, H, W]`` (1 + exp). Cameras come back from it with
  :func:`vision.geometry.rays.rays_to_cameras`.

Camera keys are present only with ``enable_camera``, depth keys with ``enable_depth``, point keys with
``enable_points``, ray keys with ``enable_rays``; ``forward(images, heads=(...))`` runs (and returns the keys of)
only the heads it names. Each head can also be run on its own from ``aggregate(images)`` via ``predict_cameras``,
``predict_depth``, ``predict_points`` and ``predict_rays``; ``frame_features(images)`` gives
``[B, S, 2C, H/p, W/p]`` patch-grid features for dense task heads. Sizes come from :func:`create_backbone`
(``"tiny"``, ``"tiny_mobilenet"``: the tiny trunk on a pretrained MobileNetV2 stem, ``"base"``, ``"vggt_1b"``).
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any, Sequence

import torch
from torch import nn

from vision.errors import InputError
from vision.geometry.aggregator import Aggregator
from vision.geometry.camera import pose_encoding_to_cameras
from vision.geometry.heads import CameraHead, DPTHead

__all__ = ["GeometryBackbone", "BACKBONE_CONFIGS", "HEADS", "create_backbone", "validate_images"]

#: The heads a backbone can have; ``backbone(images, heads=(...))`` runs a subset of those it was built with.
HEADS: tuple[str, ...] = ("camera", "depth", "points", "rays")

VALUE_TOLERANCE = 1e-3

BACKBONE_CONFIGS: dict[str, dict[str, Any]] = {
    "tiny": dict(img_size=112, patch_size=8, embed_dim=128, depth=4, num_heads=4, num_register_tokens=4,
                 patch_embed="conv", dpt_features=32, dpt_out_channels=(32, 64, 128, 128), dpt_layers=(0, 1, 2, 3),
                 camera_trunk_depth=1, camera_num_heads=4),
    # "tiny" on ImageNet MobileNetV2 stride-16 features (frozen; patch_embed_weights="mobilenetv2-imagenet")
    "tiny_mobilenet": dict(img_size=160, patch_size=16, embed_dim=128, depth=4, num_heads=4, num_register_tokens=4,
                           patch_embed="mobilenetv2", dpt_features=32, dpt_out_channels=(32, 64, 128, 128),
                           dpt_layers=(0, 1, 2, 3), camera_trunk_depth=1, camera_num_heads=4),
    "base": dict(img_size=224, patch_size=14, embed_dim=384, depth=12, num_heads=6, num_register_tokens=4,
                 patch_embed="conv", dpt_features=128, dpt_out_channels=(96, 192, 384, 384),
                 dpt_layers=(2, 5, 8, 11), camera_trunk_depth=2, camera_num_heads=6),
    "vggt_1b": dict(img_size=518, patch_size=14, embed_dim=1024, depth=24, num_heads=16, num_register_tokens=4,
                    patch_embed="vit_large_patch14_reg4_dinov2", dpt_features=256,
                    dpt_out_channels=(256, 512, 1024, 1024), dpt_layers=(4, 11, 17, 23), camera_trunk_depth=4,
                    camera_num_heads=16),
}


def validate_images(images: Any, patch_size: int) -> torch.Tensor:
    """Check and normalise the input to ``[B, S, 3, H, W]`` float; raise :class:`InputError` naming the problem."""
    if isinstance(images, (list, tuple)):
        if not images:
            raise InputError("images is an empty list")
        for i, view in enumerate(images):
            if not isinstance(view, torch.Tensor) or view.ndim != 3:
                raise InputError(f"images[{i}] must be a [3, H, W] tensor, got "
                                 f"{tuple(view.shape) if isinstance(view, torch.Tensor) else type(view).__name__}")
        sizes = sorted({tuple(v.shape) for v in images})
        if len(sizes) > 1:
            raise InputError(f"images has views of different sizes {sizes}; resize or crop them to one size first")
        images = torch.stack(list(images), dim=0)
    if not isinstance(images, torch.Tensor):
        raise InputError(f"images must be a tensor [B, S, 3, H, W], got {type(images).__name__}")
    if images.ndim == 4:
        images = images[None]
    if images.ndim != 5:
        raise InputError(f"images must have shape [B, S, 3, H, W] or [S, 3, H, W], got shape {tuple(images.shape)}")
    if images.shape[2] != 3:
        raise InputError(f"images must have 3 channels (RGB) at dim 2, got {images.shape[2]} "
                         f"(shape {tuple(images.shape)})")
    if not images.is_floating_point():
        raise InputError(f"images must be a float tensor in [0, 1], got dtype {images.dtype}")
    if images.numel() == 0:
        raise InputError(f"images is empty (shape {tuple(images.shape)})")
    h, w = images.shape[-2:]
    if h % patch_size or w % patch_size:
        raise InputError(f"image size H={h}, W={w} is not a multiple of the patch size {patch_size}")
    if images.device.type != "meta" and not torch.compiler.is_exporting():  # data-dependent: eager runs only
        lo, hi = float(images.min()), float(images.max())
        if not (lo >= -VALUE_TOLERANCE and hi <= 1 + VALUE_TOLERANCE):
            raise InputError(f"images values must be in [0, 1], got min={lo:.4g} max={hi:.4g}"
                             + (" (NaN present)" if images.isnan().any() else ""))
    return images


class GeometryBackbone(nn.Module):
    """Aggregator + optional camera, depth and point heads (see the module docstring for the forward contract).

    Args:
        img_size, patch_size, embed_dim, depth, num_heads, mlp_ratio, num_register_tokens, patch_embed,
        patch_embed_weights, qk_norm, rope_freq, init_values, use_checkpoint: the :class:`Aggregator`'s.
        dpt_features, dpt_out_channels, dpt_layers: DPT head sizes and the aggregator layers they read.
        camera_trunk_depth, camera_num_heads, camera_iterations: camera head sizes.
        frames_chunk_size: frames per DPT chunk (bounded head memory); ``None`` = all at once.
        enable_camera, enable_depth, enable_points, enable_rays: which heads exist (the ray head, off by default,
            is a DPT head of 6 channels + confidence: ray origin and direction per pixel).
        keep_only_needed_layers: keep only the aggregator outputs the heads need (+ the last) to save memory;
            the rest of ``tokens`` is ``None`` and layers after the last needed one are not computed.
    """

    def __init__(self, img_size: int = 518, patch_size: int = 14, embed_dim: int = 1024, depth: int = 24,
                 num_heads: int = 16, mlp_ratio: float = 4.0, num_register_tokens: int = 4,
                 patch_embed: str = "conv", patch_embed_weights: str | Path | None = None, qk_norm: bool = True,
                 rope_freq: float = 100.0, init_values: float = 0.01, use_checkpoint: bool = False,
                 dpt_features: int = 256, dpt_out_channels: Sequence[int] = (256, 512, 1024, 1024),
                 dpt_layers: Sequence[int] = (4, 11, 17, 23), camera_trunk_depth: int = 4,
                 camera_num_heads: int = 16, camera_iterations: int = 4, frames_chunk_size: int | None = 8,
                 enable_camera: bool = True, enable_depth: bool = True, enable_points: bool = True,
                 enable_rays: bool = False, keep_only_needed_layers: bool = False) -> None:
        super().__init__()
        if any(not -depth <= int(i) < depth for i in dpt_layers):
            raise InputError(f"dpt_layers={list(dpt_layers)} out of range for depth={depth}")
        dpt_layers = [int(i) % depth for i in dpt_layers]
        keep = None
        if keep_only_needed_layers:
            keep = {depth - 1}
            if enable_depth or enable_points or enable_rays:
                keep.update(dpt_layers)
        self.aggregator = Aggregator(img_size=img_size, patch_size=patch_size, embed_dim=embed_dim, depth=depth,
                                     num_heads=num_heads, mlp_ratio=mlp_ratio,
                                     num_register_tokens=num_register_tokens, patch_embed=patch_embed,
                                     patch_embed_weights=patch_embed_weights, qk_norm=qk_norm, rope_freq=rope_freq,
                                     init_values=init_values, use_checkpoint=use_checkpoint,
                                     keep_layers=None if keep is None else sorted(keep))
        self.patch_size = self.aggregator.patch_size
        dim = 2 * embed_dim
        dpt = dict(dim_in=dim, patch_size=self.patch_size, features=dpt_features, out_channels=dpt_out_channels,
                   intermediate_layer_idx=dpt_layers, frames_chunk_size=frames_chunk_size)
        self.camera_head = (CameraHead(dim, trunk_depth=camera_trunk_depth, num_heads=camera_num_heads,
                                       mlp_ratio=mlp_ratio, init_values=init_values,
                                       num_iterations=camera_iterations) if enable_camera else None)
        self.depth_head = DPTHead(output_dim=2, activation="exp", **dpt) if enable_depth else None
        self.point_head = DPTHead(output_dim=4, activation="inv_log", **dpt) if enable_points else None
        self.ray_head = DPTHead(output_dim=7, activation="linear", **dpt) if enable_rays else None

    @property
    def embed_dim(self) -> int:
        return self.aggregator.embed_dim

    def validate(self, images: Any) -> torch.Tensor:
        """See :func:`validate_images`."""
        return validate_images(images, self.patch_size)

    def aggregate(self, images: Any) -> tuple[list[torch.Tensor | None], int, torch.Tensor]:
        """Run only the aggregator: ``(tokens list [B, S, P, 2C], patch_start_idx, validated images)``."""
        images = self.validate(images)
        tokens, start = self.aggregator(images)
        return tokens, start, images

    def predict_cameras(self, tokens: list[torch.Tensor | None],
                        image_hw: tuple[int, int]) -> dict[str, torch.Tensor | list[torch.Tensor]]:
        """Camera head on aggregator tokens -> ``pose_enc``, ``pose_enc_list``, ``extrinsics``, ``intrinsics``."""
        if self.camera_head is None:
            raise InputError("this GeometryBackbone was built with enable_camera=False")
        pose_list = self.camera_head(tokens)
        extrinsics, intrinsics = pose_encoding_to_cameras(pose_list[-1], image_hw)
        return {"pose_enc": pose_list[-1], "pose_enc_list": pose_list, "extrinsics": extrinsics,
                "intrinsics": intrinsics}

    def predict_depth(self, tokens: list[torch.Tensor | None], images: torch.Tensor, patch_start_idx: int,
                      frames_chunk_size: int | None = -1) -> dict[str, torch.Tensor]:
        """Depth head -> ``depth [B, S, H, W, 1]``, ``depth_conf [B, S, H, W]``."""
        if self.depth_head is None:
            raise InputError("this GeometryBackbone was built with enable_depth=False")
        depth, conf = self.depth_head(tokens, images, patch_start_idx, frames_chunk_size)
        return {"depth": depth, "depth_conf": conf}

    def predict_points(self, tokens: list[torch.Tensor | None], images: torch.Tensor, patch_start_idx: int,
                       frames_chunk_size: int | None = -1) -> dict[str, torch.Tensor]:
        """Point head -> ``world_points [B, S, H, W, 3]``, ``world_points_conf [B, S, H, W]``."""
        if self.point_head is None:
            raise InputError("this GeometryBackbone was built with enable_points=False")
        points, conf = self.point_head(tokens, images, patch_start_idx, frames_chunk_size)
        return {"world_points": points, "world_points_conf": conf}

    def predict_rays(self, tokens: list[torch.Tensor | None], images: torch.Tensor, patch_start_idx: int,
                     frames_chunk_size: int | None = -1) -> dict[str, torch.Tensor]:
        """Ray head -> ``ray_origins [B, S, H, W, 3]``, ``ray_directions [B, S, H, W, 3]``,
        ``rays_conf [B, S, H, W]``."""
        if self.ray_head is None:
            raise InputError("this GeometryBackbone was built with enable_rays=False")
        rays, conf = self.ray_head(tokens, images, patch_start_idx, frames_chunk_size)
        return {"ray_origins": rays[..., :3], "ray_directions": rays[..., 3:], "rays_conf": conf}

    @property
    def heads(self) -> tuple[str, ...]:
        """Names of the heads this backbone was built with, in :data:`HEADS` order."""
        built = (self.camera_head, self.depth_head, self.point_head, self.ray_head)
        return tuple(name for name, head in zip(HEADS, built) if head is not None)

    def forward(self, images: Any, frames_chunk_size: int | None = -1,
                heads: Sequence[str] | None = None) -> dict[str, Any]:
        """See the module docstring. ``frames_chunk_size=-1`` uses the heads' default. ``heads``: the heads to run
        (names from :data:`HEADS`; default every head the backbone has), e.g. ``("camera", "points")`` when the
        depth map is not read; only their keys are returned."""
        run = self.heads if heads is None else tuple(heads)
        unknown = sorted(set(run) - set(self.heads))
        if unknown:
            raise InputError(f"heads {unknown} are not in this GeometryBackbone; it has {list(self.heads)}")
        tokens, start, images = self.aggregate(images)
        out: dict[str, Any] = {"tokens": tokens, "patch_start_idx": start, "images": images}
        if "camera" in run:
            out.update(self.predict_cameras(tokens, (images.shape[-2], images.shape[-1])))
        if "depth" in run:
            out.update(self.predict_depth(tokens, images, start, frames_chunk_size))
        if "points" in run:
            out.update(self.predict_points(tokens, images, start, frames_chunk_size))
        if "rays" in run:
            out.update(self.predict_rays(tokens, images, start, frames_chunk_size))
        return out

    def tokens_to_feature_map(self, layer_tokens: torch.Tensor, patch_start_idx: int,
                              image_hw: tuple[int, int]) -> torch.Tensor:
        """``[B, S, P, 2C]`` aggregator tokens -> patch-grid feature map ``[B, S, 2C, H/p, W/p]``."""
        b, s, _, c = layer_tokens.shape
        gh, gw = image_hw[0] // self.patch_size, image_hw[1] // self.patch_size
        patches = layer_tokens[:, :, patch_start_idx:]
        return patches.transpose(2, 3).reshape(b, s, c, gh, gw)

    def frame_features(self, images: Any, layer: int = -1) -> torch.Tensor:
        """Dense per-frame features for task heads: aggregator layer ``layer`` (default the last) as a patch-grid
        map ``[B, S, 2C, H/p, W/p]`` (frame-attention and global-attention halves concatenated)."""
        tokens, start, images = self.aggregate(images)
        chosen = tokens[layer]
        if chosen is None:
            raise InputError(f"aggregator layer {layer} was not kept (keep_only_needed_layers=True)")
        return self.tokens_to_feature_map(chosen, start, (images.shape[-2], images.shape[-1]))


def create_backbone(name: str = "tiny", **overrides: Any) -> GeometryBackbone:
    """Build a :class:`GeometryBackbone` from a named size in :data:`BACKBONE_CONFIGS` plus keyword overrides
    (any ``GeometryBackbone`` argument, e.g. ``enable_points=False``, ``enable_rays=True``, ``use_checkpoint=True``)."""
    if name not in BACKBONE_CONFIGS:
        raise InputError(f"unknown backbone size {name!r}; choose one of {sorted(BACKBONE_CONFIGS)}")
    config = copy.deepcopy(BACKBONE_CONFIGS[name])
    config.update(overrides)
    return GeometryBackbone(**config)
