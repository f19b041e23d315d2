"""Patch embeddings: a plain convolutional one, a convolutional stem, a pretrained MobileNetV2 stem, or any timm
ViT by name (DINOv2 included).

Each turns normalised images ``[N, 3, H, W]`` into patch tokens ``[N, (H/p)*(W/p), C]`` (row-major grid).
A timm ViT is always created with ``pretrained=False`` (nothing is ever downloaded); real weights come from a local
file via :func:`load_patch_embed_weights`, which accepts timm-format and original DINOv2-format state dicts. The
MobileNetV2 stem (:class:`MobileNetV2PatchEmbed`) reads the registered ImageNet file ``mobilenetv2-imagenet``
(:mod:`vision.weights.nets.mobilenet`) or a local copy.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

import torch
import torch.nn.functional as F
from torch import nn

from vision.checkpoint import load_failure
from vision.errors import DataError, InputError

__all__ = ["ConvPatchEmbed", "ConvStemPatchEmbed", "MobileNetV2PatchEmbed", "MOBILENETV2_WEIGHTS",
           "build_patch_embed", "embed_patches", "patch_size_of",
           "read_state_dict", "state_dict_of", "dinov2_to_timm", "load_patch_embed_weights"]


class ConvPatchEmbed(nn.Module):
    """Non-overlapping ``patch_size`` convolution (``proj``) followed by flattening to tokens."""

    def __init__(self, patch_size: int, embed_dim: int, in_chans: int = 3) -> None:
        super().__init__()
        self.patch_size = patch_size
        self.proj = nn.Conv2d(in_chans, embed_dim, kernel_size=patch_size, stride=patch_size)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        """``[N, 3, H, W]`` -> ``[N, P, C]``."""
        return self.proj(images).flatten(2).transpose(1, 2)


class ConvStemPatchEmbed(nn.Module):
    """A small convolutional stem in place of the single patchify convolution ("early convolutions", Xiao et al.
    2021): ``log2(patch_size)`` 3x3 stride-2 convolutions (BatchNorm-free: GroupNorm + GELU), widths doubling up to
    ``embed_dim / 2``, then a 1x1 projection to ``embed_dim``. Every output token sees a 15x15+ pixel window with
    overlap between neighbours. ``patch_size`` must be a power of two. On the tiny backbone it speeds up early
    training (depth AbsRel 0.159 vs 0.187 after 100 steps) but ends level with the plain convolution after 400
    (``benchmarks/bench_geometry_ablation.py``), so ``"conv"`` stays the default.
    """

    def __init__(self, patch_size: int, embed_dim: int, in_chans: int = 3) -> None:
        super().__init__()
        if patch_size < 2 or patch_size & (patch_size - 1):
            raise InputError(f"patch_embed='convstem' needs a power-of-two patch size, got {patch_size}")
        self.patch_size = patch_size
        stages = patch_size.bit_length() - 1
        widths = [max(8, embed_dim // 2 ** (stages - i)) for i in range(stages)]
        layers: list[nn.Module] = []
        prev = in_chans
        for width in widths:
            layers += [nn.Conv2d(prev, width, 3, stride=2, padding=1, bias=False), nn.GroupNorm(1, width), nn.GELU()]
            prev = width
        self.stem = nn.Sequential(*layers)
        self.proj = nn.Conv2d(prev, embed_dim, kernel_size=1)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        """``[N, 3, H, W]`` -> ``[N, P, C]``."""
        return self.proj(self.stem(images)).flatten(2).transpose(1, 2)


#: the registry name :class:`MobileNetV2PatchEmbed` accepts as its weights (besides a local file)
MOBILENETV2_WEIGHTS = "mobilenetv2-imagenet"


class MobileNetV2PatchEmbed(nn.Module):
    """ImageNet MobileNetV2 1.0, frozen, read at the patch stride and at its last layer, then trainable 1x1
    projections and a LayerNorm: ``[N, 3, H, W]`` -> ``[N, (H/p)*(W/p), embed_dim]``.

    ``features`` is torchvision's ``mobilenet_v2().features`` cut where its stride reaches the patch size: patch 16
    keeps blocks 0..13 (``features[:14]``, 96 channels), patch 8 blocks 0..6 (``features[:7]``, 32 channels); no
    other patch size. ``context`` is the rest of the network (to its 1280-channel last layer, stride 32): the
    ImageNet-level semantics of each 32-px cell, which the mid-level patch features alone do not carry. A token is
    ``norm(proj(patch features) + context_proj(context features))``, the context upsampled (nearest) to the patch
    grid, as a feature pyramid's top-down path adds its coarse level. Both parts are frozen: ``requires_grad``
    False, and their BatchNorms stay in eval mode (running statistics) whatever :meth:`train` is given; only
    ``proj``, ``context_proj`` and ``norm`` train. Their tensors (BatchNorm statistics included) are part of the
    state dict, so a checkpoint holds them.

    Input: the aggregator's, ``(x - ImageNet mean) / ImageNet std`` of RGB in [0, 1]
    (:mod:`vision.geometry.aggregator`): exactly what the network saw in ImageNet training (the same mean and std as
    :data:`vision.weights.nets.mobilenet.IMAGENET_MEAN` / ``IMAGENET_STD``). It was trained at 224 px; H and W are
    multiples of the patch size (for patch 16 at least 128 px gives an 8x8 grid).

    Args:
        patch_size: 16 or 8 (an :class:`InputError` naming any other value).
        embed_dim: the token width.
        weights: ``"mobilenetv2-imagenet"`` (the registered file, through :func:`vision.weights.store.weights_path`:
            a :class:`~vision.weights.store.WeightsError` naming ``vision-fetch-weights mobilenetv2-imagenet`` when
            it is absent), a local file (the registered file's upstream keys, or torchvision's ``mobilenet_v2``
            state dict; a ``classifier.*`` is ignored), or None: a randomly initialised MobileNetV2, frozen all the
            same (for tests and for a model whose weights come from its own checkpoint afterwards).

    The MobileNetV2 is built under :func:`torch.random.fork_rng` with or without weights, so the global generator
    moves only for ``proj`` and ``norm``: a build with the weights draws exactly what one without them draws.
    """

    #: patch size -> (blocks of ``mobilenet_v2().features`` kept, their output channels)
    STAGES: dict[int, tuple[int, int]] = {16: (14, 96), 8: (7, 32)}

    def __init__(self, patch_size: int, embed_dim: int, weights: str | Path | None = None) -> None:
        super().__init__()
        if patch_size not in self.STAGES:
            raise InputError(f"patch_embed='mobilenetv2' takes patch size 16 or 8 (MobileNetV2's stride-16 or "
                             f"stride-8 features), got {patch_size}")
        blocks, channels = self.STAGES[patch_size]
        self.patch_size = patch_size
        network = _mobilenetv2_features(weights)
        self.features, self.context = network[:blocks], network[blocks:]
        for frozen in (self.features, self.context):
            frozen.requires_grad_(False)
            frozen.eval()
        self.proj = nn.Conv2d(channels, embed_dim, kernel_size=1)
        self.context_proj = nn.Conv2d(self.CONTEXT_CHANNELS, embed_dim, kernel_size=1)
        self.norm = nn.LayerNorm(embed_dim)

    #: channels of MobileNetV2 1.0's last layer (``features[18]``)
    CONTEXT_CHANNELS = 1280

    def train(self, mode: bool = True) -> "MobileNetV2PatchEmbed":
        """Set the projections and ``norm`` to ``mode``; ``features`` and ``context`` stay in eval mode (frozen
        BatchNorm statistics)."""
        super().train(mode)
        self.features.eval()
        self.context.eval()
        return self

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        """``[N, 3, H, W]`` ImageNet-normalised RGB -> ``[N, P, C]``."""
        patches = self.features(images)
        context = F.interpolate(self.context_proj(self.context(patches)), size=patches.shape[-2:], mode="nearest")
        return self.norm((self.proj(patches) + context).flatten(2).transpose(1, 2))


def _mobilenetv2_features(weights: str | Path | None) -> nn.Sequential:
    """The 19 blocks of torchvision's ``mobilenet_v2().features``, with ``weights`` (see
    :class:`MobileNetV2PatchEmbed`) or randomly initialised (None); the global generator does not move."""
    from vision.weights.nets import load_state_strict
    from vision.weights.nets.mobilenet import MobileNetV2Embedding, load_mobilenetv2, upstream_key_map

    if weights is not None and str(weights) == MOBILENETV2_WEIGHTS:
        return load_mobilenetv2().features  # builds under fork_rng itself
    if weights is not None and not Path(weights).is_file():
        raise InputError(f"patch_embed_weights={str(weights)!r} for the 'mobilenetv2' patch embed is neither the "
                         f"registered {MOBILENETV2_WEIGHTS!r} nor an existing file")
    with torch.random.fork_rng(devices=[]):
        net = MobileNetV2Embedding()
    if weights is None:
        return net.features
    state = {k: v for k, v in read_state_dict(weights).items() if not k.startswith("classifier.")}
    names = list(net.state_dict())
    if not set(names) <= set(state):  # not torchvision's names: the upstream file's (the registered one's)
        mapping = upstream_key_map(names)
        sources = set(mapping.values())
        if sources <= set(state):  # renamed; a left-over tensor stays, and the strict load names it
            state = {key: state[source] for key, source in mapping.items()} | {
                k: v for k, v in state.items() if k not in sources}
    return load_state_strict(net, state, "mobilenetv2 patch-embed weights", weights).features


def build_patch_embed(kind: str, img_size: int, patch_size: int, embed_dim: int,
                      weights: str | Path | None = None) -> nn.Module:
    """Create the patch embedding.

    Args:
        kind: ``"conv"``, ``"convstem"`` (:class:`ConvStemPatchEmbed`), ``"mobilenetv2"``
            (:class:`MobileNetV2PatchEmbed`) or the name of a timm ViT (e.g. ``vit_small_patch14_dinov2``,
            ``vit_large_patch14_reg4_dinov2``), created with ``pretrained=False`` and ``dynamic_img_size=True``.
        img_size: nominal square image size (sets the timm absolute position-embedding grid).
        patch_size, embed_dim: must agree with the timm model's own values.
        weights: for a timm ViT, an optional local weights file (safetensors or torch) loaded with
            :func:`load_patch_embed_weights`; for ``"mobilenetv2"``, ``"mobilenetv2-imagenet"`` or a local file
            (:class:`MobileNetV2PatchEmbed`); none for ``"conv"`` / ``"convstem"``.
    """
    if kind in ("conv", "convstem"):
        if weights is not None:
            raise InputError(f"patch_embed_weights={str(weights)!r} given for the {kind!r} patch embed; "
                             "weights are only read by the 'mobilenetv2' and timm ViT patch embeds")
        return (ConvPatchEmbed if kind == "conv" else ConvStemPatchEmbed)(patch_size, embed_dim)
    if kind == "mobilenetv2":
        return MobileNetV2PatchEmbed(patch_size, embed_dim, weights)
    import timm

    if not timm.is_model(kind):
        raise InputError(f"patch_embed={kind!r} is neither 'conv', 'convstem', 'mobilenetv2' nor a known timm model "
                         "name")
    vit = timm.create_model(kind, pretrained=False, img_size=img_size, dynamic_img_size=True, num_classes=0)
    if patch_size_of(vit) != patch_size:
        raise InputError(f"patch_size={patch_size} does not match timm model {kind!r} (patch {patch_size_of(vit)})")
    if vit.embed_dim != embed_dim:
        raise InputError(f"embed_dim={embed_dim} does not match timm model {kind!r} (embed_dim {vit.embed_dim})")
    if weights is not None:
        load_patch_embed_weights(vit, weights)
    return vit


#: the patch embeddings written here (the others are timm ViTs)
_OWN_EMBEDS = (ConvPatchEmbed, ConvStemPatchEmbed, MobileNetV2PatchEmbed)


def patch_size_of(module: nn.Module) -> int:
    """Patch size of a patch embedding of this module or a timm ViT."""
    if isinstance(module, _OWN_EMBEDS):
        return module.patch_size
    size = module.patch_embed.patch_size
    return int(size[0] if isinstance(size, (tuple, list)) else size)


def embed_patches(module: nn.Module, images: torch.Tensor) -> torch.Tensor:
    """Patch tokens ``[N, P, C]`` of normalised images ``[N, 3, H, W]``; for a timm ViT these are the final-norm
    patch tokens (class/register tokens dropped), as VGGT uses DINOv2's ``x_norm_patchtokens``."""
    if isinstance(module, _OWN_EMBEDS):
        return module(images)
    tokens = module.forward_features(images)
    return tokens[:, module.num_prefix_tokens:]


def read_state_dict(path: str | Path) -> dict[str, torch.Tensor]:
    """Read a local weights file: ``.safetensors`` or a torch file (``torch.load(weights_only=True)``); a torch file
    holding ``{"model": sd}`` or ``{"state_dict": sd}`` is unwrapped. A path that is not a file is an
    :class:`InputError`; a file that cannot be read as weights, or holds no state dict, a one-line
    :class:`DataError` naming it."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"weights file {str(path)!r} does not exist")
    try:
        if path.suffix == ".safetensors":
            from safetensors.torch import load_file

            return dict(load_file(str(path)))
        obj = torch.load(str(path), map_location="cpu", weights_only=True)
    except Exception as exc:  # corrupt / truncated / unsafe / not a weights file: the library's reason, one line,
        # without torch's advice to retry with weights_only=False (vision.checkpoint.load_failure)
        raise DataError(f"cannot read weights ({load_failure(exc)[:300]})", file=path) from exc
    return state_dict_of(obj, path)


def state_dict_of(obj: Any, path: str | Path) -> dict[str, torch.Tensor]:
    """The state dict inside a loaded torch file ``obj`` (unwrapping ``{"model": sd}`` / ``{"state_dict": sd}``); a
    :class:`DataError` naming ``path`` when it holds none."""
    for wrapper in ("model", "state_dict"):
        if isinstance(obj, dict) and wrapper in obj and isinstance(obj[wrapper], dict):
            obj = obj[wrapper]
    if not isinstance(obj, dict) or not all(isinstance(v, torch.Tensor) for v in obj.values()):
        raise DataError(f"does not hold a state dict of tensors (got {type(obj).__name__})", file=path)
    return obj


def dinov2_to_timm(state_dict: Mapping[str, torch.Tensor], vit: nn.Module) -> dict[str, torch.Tensor]:
    """Convert an original DINOv2 ViT state dict (as inside VGGT) to timm names and conventions.

    - ``mask_token`` is dropped (only used for masked-image pre-training).
    - ``register_tokens`` -> ``reg_token``; for timm models whose position embedding excludes the prefix tokens
      (``no_embed_class``, all ``*_reg*_dinov2`` models) the class position ``pos_embed[:, 0]`` is folded into
      ``cls_token`` and removed from ``pos_embed`` (mathematically the same network).
    - ``pos_embed`` is resampled (bicubic, antialiased: what DINOv2 does at run time) when its grid differs.
    A state dict already in timm format passes through unchanged (apart from the resampling).
    """
    from timm.layers import resample_abs_pos_embed

    out = {k: v for k, v in state_dict.items() if k != "mask_token"}
    if "register_tokens" in out:
        out["reg_token"] = out.pop("register_tokens")
    no_embed_class = bool(getattr(vit, "no_embed_class", False))
    if "pos_embed" in out:
        pos = out["pos_embed"]
        if no_embed_class:
            side = int(round(pos.shape[1] ** 0.5))
            if side * side != pos.shape[1]:  # DINOv2 format: a class position leads the grid
                if "cls_token" in out:
                    out["cls_token"] = out["cls_token"] + pos[:, :1]
                pos = pos[:, 1:]
            prefix = 0
        else:
            prefix = vit.num_prefix_tokens
        if pos.shape[1] != vit.pos_embed.shape[1]:
            pos = resample_abs_pos_embed(pos, new_size=list(vit.patch_embed.grid_size), num_prefix_tokens=prefix)
        out["pos_embed"] = pos
    return out


def load_patch_embed_weights(vit: nn.Module, path: str | Path, strict: bool = True) -> tuple[list[str], list[str]]:
    """Load a local ViT weights file (timm or DINOv2 format) into a timm ViT patch embed.

    Classifier-head keys (``head.*``) are ignored. A tensor whose shape differs from the model's (e.g. a ViT-B file
    for a ViT-S patch embed) is always a one-line :class:`DataError` naming the file and the first mismatches.
    Returns ``(missing, unexpected)``; with ``strict`` any of either is a :class:`DataError` naming the file.
    """
    state = {k: v for k, v in read_state_dict(path).items() if not k.startswith("head.")}
    ours = vit.state_dict()
    try:
        state = dinov2_to_timm(state, vit)
    except (RuntimeError, ValueError, AssertionError) as exc:  # e.g. a pos_embed that is no square grid
        first = (str(exc).strip().splitlines() or [""])[0][:200]
        raise DataError(f"cannot convert to the timm patch embed ({type(exc).__name__}: {first})", file=path) from exc
    mismatched = [f"{k} {tuple(v.shape)} vs model {tuple(ours[k].shape)}" for k, v in state.items()
                  if k in ours and tuple(v.shape) != tuple(ours[k].shape)]
    if mismatched:
        raise DataError(f"does not fit the patch embed: {len(mismatched)} shape mismatches, e.g. "
                        f"{'; '.join(mismatched[:3])}", file=path)
    result = vit.load_state_dict(state, strict=False)
    missing, unexpected = list(result.missing_keys), list(result.unexpected_keys)
    if strict and (missing or unexpected):
        raise DataError(f"does not match the patch embed: missing={missing[:8]} unexpected={unexpected[:8]}",
                        file=path)
    return missing, unexpected
