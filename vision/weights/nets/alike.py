"""ALIKE local features: keypoints with sub-pixel positions, scores and L2-normalised descriptors for matching.

Architecture (Shiaoming/ALIKE@4e61fc7, ``alnet.py``, ``soft_detect.py``, ``alike.py``; Zhao et al., "ALIKE:
Accurate and Lightweight Keypoint Detection and Descriptor Extraction", IEEE TMM 2022):

* backbone (ALNet): ``block1`` (two 3x3 conv-BN-ReLU, c1, full resolution), max-pool 2, ``block2`` (residual, c2,
  H/2), max-pool 4, ``block3`` (residual, c3, H/8), max-pool 4, ``block4`` (residual, c4, H/32);
* aggregation: each level projected by a 1x1 conv (no bias) to ``dim // 4`` channels, ReLU, bilinearly upsampled
  (``align_corners=True``) to full resolution and concatenated (``dim`` channels);
* head: (``alike-l`` only: a 1x1 conv + ReLU) a 1x1 conv to ``dim + 1`` channels: ``dim`` descriptor channels and
  one score channel through a sigmoid.

Input convention (upstream ``ALike.forward``): RGB float in **[0, 1]** (uint8 / 255, no mean/std), zero-padded at
the bottom / right to multiples of 32 and the maps cropped back. Detection (upstream ``DKD``, as its demo runs it:
threshold mode, ``sub_pixel=True``):

1. non-maximum suppression in a 5x5 window (SuperPoint's iterative ``simple_nms``, radius 2), and the ``radius + 1``
   top / left and ``radius`` bottom / right rows and columns zeroed;
2. candidates: the NMS peaks with score above ``score_threshold``; when more than ``top_k`` remain, the ``top_k``
   highest (upstream's ``n_limit``). Upstream falls back to the mean score when no peak passes the threshold; here
   the result is then empty;
3. sub-pixel refinement: a soft-argmax (temperature 0.1) over the 5x5 score patch (zero padded) around each peak;
4. score and descriptor bilinearly sampled at the refined position (``grid_sample``, ``align_corners=True``), the
   descriptor L2-normalised again. The threshold applies to the peak, so a returned (sampled) score can be lower.

Pixel convention: ``x`` is the column and ``y`` the row, in pixels of the input image, with pixel centres at
integers (``(0, 0)`` is the centre of the top-left pixel). Results are sorted by score, highest first.

Checkpoint (``alike-{t,n}.pth``, a plain ``state_dict``): module names follow upstream, so the key map is the
identity (``block{1..4}.*``, ``conv{1..4}.weight``, ``convhead2.weight``; ``convhead1.weight`` for two-head
configurations).
"""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from vision.errors import InputError
from vision.weights.nets import load_state_strict
from vision.weights.store import WeightsError, weights_path

__all__ = ["ALIKE_CONFIGS", "ALike", "load_alike", "mutual_matches"]

#: widths of the registered ALIKE variants (upstream ``configs``); all use detection radius 2
ALIKE_CONFIGS: dict[str, dict[str, int | bool]] = {
    "alike-t": {"c1": 8, "c2": 16, "c3": 32, "c4": 64, "dim": 64, "single_head": True},
    "alike-n": {"c1": 16, "c2": 32, "c3": 64, "c4": 128, "dim": 128, "single_head": True},
}
#: the softmax temperature of the sub-pixel soft-argmax (upstream's tuned value)
SOFT_ARGMAX_TEMPERATURE = 0.1
#: the backbone's total stride; input sides are padded to a multiple of it
STRIDE = 32


def _conv3x3(in_channels: int, out_channels: int) -> nn.Conv2d:
    return nn.Conv2d(in_channels, out_channels, 3, padding=1, bias=False)


class ConvBlock(nn.Module):
    """Two 3x3 conv-BN-ReLU layers. ``[B, in, H, W] -> [B, out, H, W]``.

    Args:
        in_channels: input channels.
        out_channels: output channels.
    """

    def __init__(self, in_channels: int, out_channels: int) -> None:
        super().__init__()
        self.conv1 = _conv3x3(in_channels, out_channels)
        self.bn1 = nn.BatchNorm2d(out_channels)
        self.conv2 = _conv3x3(out_channels, out_channels)
        self.bn2 = nn.BatchNorm2d(out_channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.relu(self.bn1(self.conv1(x)))
        return F.relu(self.bn2(self.conv2(x)))


class ResBlock(ConvBlock):
    """A ResNet basic block (stride 1): :class:`ConvBlock`'s two 3x3 conv-BN layers, the second's ReLU after the
    shortcut, a 1x1 conv with bias (``downsample``, upstream's name). ``[B, in, H, W] -> [B, out, H, W]``.

    Args:
        in_channels: input channels.
        out_channels: output channels.
    """

    def __init__(self, in_channels: int, out_channels: int) -> None:
        super().__init__(in_channels, out_channels)
        self.downsample = nn.Conv2d(in_channels, out_channels, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + self.downsample(x))


def simple_nms(scores: torch.Tensor, radius: int) -> torch.Tensor:
    """Scores kept only at local maxima of a ``(2 radius + 1)`` square window, zero elsewhere (SuperPoint's NMS:
    maxima, then two rounds that admit maxima outside the windows of those already kept). ``[B, 1, H, W]``."""

    def max_pool(x: torch.Tensor) -> torch.Tensor:
        return F.max_pool2d(x, kernel_size=2 * radius + 1, stride=1, padding=radius)

    zeros = torch.zeros_like(scores)
    keep = scores == max_pool(scores)
    for _ in range(2):
        suppressed = max_pool(keep.float()) > 0
        rest = torch.where(suppressed, zeros, scores)
        keep = keep | ((rest == max_pool(rest)) & ~suppressed)
    return torch.where(keep, scores, zeros)


class ALike(nn.Module):
    """ALIKE: the ALNet backbone and its soft keypoint detection (see the module docstring).

    Args:
        c1, c2, c3, c4: widths of the four backbone blocks.
        dim: descriptor dimension (``c4`` must equal it: ``conv4`` projects the ``c4``-channel block4 output, which
            upstream declares with ``dim`` input channels).
        single_head: True for one 1x1 head conv; False adds ``convhead1`` (1x1 + ReLU) before it.
        radius: the detection radius (NMS window and soft-argmax patch ``2 radius + 1``).

    ``forward(image)``: float ``[B, 3, H, W]`` RGB in [0, 1], ``H, W`` multiples of 32 -> ``(scores [B, 1, H, W]``
    in (0, 1), ``descriptors [B, dim, H, W]`` not normalised``)``. :meth:`dense_maps` pads any size and normalises;
    :meth:`detect` runs on one uint8 image.
    """

    def __init__(self, c1: int, c2: int, c3: int, c4: int, dim: int, single_head: bool = True,
                 radius: int = 2) -> None:
        super().__init__()
        if c4 != dim:
            raise InputError(f"ALike needs c4 == dim (block4 feeds conv4), got c4={c4}, dim={dim}")
        if dim % 4 != 0:
            raise InputError(f"ALike needs dim divisible by 4, got {dim}")
        self.dim = dim
        self.radius = radius
        self.block1 = ConvBlock(3, c1)
        self.block2 = ResBlock(c1, c2)
        self.block3 = ResBlock(c2, c3)
        self.block4 = ResBlock(c3, c4)
        self.conv1 = nn.Conv2d(c1, dim // 4, 1, bias=False)
        self.conv2 = nn.Conv2d(c2, dim // 4, 1, bias=False)
        self.conv3 = nn.Conv2d(c3, dim // 4, 1, bias=False)
        self.conv4 = nn.Conv2d(c4, dim // 4, 1, bias=False)
        self.convhead1 = None if single_head else nn.Conv2d(dim, dim, 1, bias=False)
        self.convhead2 = nn.Conv2d(dim, dim + 1, 1, bias=False)
        # soft-argmax offsets of the (2r+1)^2 patch, in unfold's row-major order, as (dx, dy)
        offsets = torch.arange(-radius, radius + 1, dtype=torch.float32)
        dy, dx = torch.meshgrid(offsets, offsets, indexing="ij")
        self.register_buffer("patch_offsets", torch.stack([dx.reshape(-1), dy.reshape(-1)], dim=1), persistent=False)

    def forward(self, image: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        x1 = self.block1(image)  # [B, c1, H, W]
        x2 = self.block2(F.max_pool2d(x1, 2))  # [B, c2, H/2, W/2]
        x3 = self.block3(F.max_pool2d(x2, 4))  # [B, c3, H/8, W/8]
        x4 = self.block4(F.max_pool2d(x3, 4))  # [B, c4, H/32, W/32]

        def up(x: torch.Tensor, factor: int) -> torch.Tensor:
            return F.interpolate(x, scale_factor=factor, mode="bilinear", align_corners=True)

        merged = torch.cat([F.relu(self.conv1(x1)), up(F.relu(self.conv2(x2)), 2), up(F.relu(self.conv3(x3)), 8),
                            up(F.relu(self.conv4(x4)), 32)], dim=1)  # [B, dim, H, W]
        if self.convhead1 is not None:
            merged = F.relu(self.convhead1(merged))
        head = self.convhead2(merged)
        return torch.sigmoid(head[:, -1:]), head[:, :-1]

    def dense_maps(self, image: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Score and L2-normalised descriptor maps of ``image`` float ``[B, 3, H, W]`` in [0, 1], any ``H, W``
        (zero-padded at the bottom / right to multiples of 32, the maps cropped back): ``([B, 1, H, W],
        [B, dim, H, W])``."""
        h, w = image.shape[-2:]
        pad_h, pad_w = math.ceil(h / STRIDE) * STRIDE - h, math.ceil(w / STRIDE) * STRIDE - w
        scores, descriptors = self(F.pad(image, (0, pad_w, 0, pad_h)))
        scores, descriptors = scores[:, :, :h, :w], descriptors[:, :, :h, :w]
        return scores, F.normalize(descriptors, p=2, dim=1)

    def detect(self, image: np.ndarray, top_k: int = 512, score_threshold: float = 0.2) -> dict[str, np.ndarray]:
        """Keypoints, descriptors and scores of one image.

        Args:
            image: uint8 ``[H, W, 3]`` RGB.
            top_k: at most this many keypoints, the highest-scoring NMS peaks; ``<= 0``: no limit.
            score_threshold: only NMS peaks whose score map value is above it are kept.

        Returns:
            ``keypoints`` float32 ``[N, 2]`` (x, y) pixels (centres at integers), ``descriptors`` float32
            ``[N, dim]`` L2-normalised, ``scores`` float32 ``[N]`` (the score map at the refined position, which
            can be below ``score_threshold``), sorted by score, highest first.
        """
        image = np.asarray(image)
        if image.ndim != 3 or image.shape[-1] != 3 or image.dtype != np.uint8:
            raise InputError(f"image must be uint8 [H, W, 3] RGB, got {image.dtype} {list(image.shape)}")
        h, w = image.shape[:2]
        r = self.radius
        if h <= 2 * r + 1 or w <= 2 * r + 1:
            raise InputError(f"image {h}x{w} is too small for ALIKE (each side must exceed {2 * r + 1} pixels)")
        device = self.patch_offsets.device
        self.eval()
        with torch.no_grad():
            x = torch.from_numpy(np.ascontiguousarray(image)).to(device=device, dtype=torch.float32)
            scores_map, descriptor_map = self.dense_maps(x.permute(2, 0, 1)[None] / 255.0)

            # 1. NMS and the border
            peaks = simple_nms(scores_map, r)
            peaks[:, :, :r + 1, :] = 0
            peaks[:, :, :, :r + 1] = 0
            peaks[:, :, h - r:, :] = 0
            peaks[:, :, :, w - r:] = 0
            # 2. peaks above the threshold, the top_k highest
            flat = peaks.reshape(-1)
            indices = torch.nonzero(flat > score_threshold)[:, 0]
            if top_k > 0 and len(indices) > top_k:
                indices = indices[torch.argsort(flat[indices], descending=True)[:top_k]]
            # 3. soft-argmax over the score patch around each peak
            patches = F.unfold(scores_map, kernel_size=2 * r + 1, padding=r)[0].t()[indices]  # [N, (2r+1)^2]
            weights = ((patches - patches.max(dim=1, keepdim=True).values) / SOFT_ARGMAX_TEMPERATURE).exp()
            residual = weights @ self.patch_offsets / weights.sum(dim=1, keepdim=True)  # [N, 2] (dx, dy)
            xy = torch.stack([indices % w, torch.div(indices, w, rounding_mode="floor")], dim=1).float() + residual
            # 4. score and descriptor sampled bilinearly at the refined position
            grid = (xy / xy.new_tensor([w - 1, h - 1]) * 2 - 1).view(1, 1, -1, 2)
            scores = F.grid_sample(scores_map, grid, mode="bilinear", align_corners=True)[0, 0, 0]
            descriptors = F.grid_sample(descriptor_map, grid, mode="bilinear", align_corners=True)[0, :, 0].t()
            descriptors = F.normalize(descriptors, p=2, dim=1)

            order = torch.argsort(scores, descending=True)
            return {"keypoints": xy[order].cpu().numpy().astype(np.float32),
                    "descriptors": descriptors[order].cpu().numpy().astype(np.float32),
                    "scores": scores[order].cpu().numpy().astype(np.float32)}


def load_alike(name: str = "alike-t", device: str | torch.device = "cpu") -> ALike:
    """ALIKE with the registered weights ``name`` (``alike-t`` or ``alike-n``), in eval mode on ``device``.

    The file comes from :func:`vision.weights.store.weights_path` (checked by sha256), is read with
    ``torch.load(weights_only=True)`` and loaded strictly (identity key map).

    Raises:
        InputError: ``name`` is not an ALIKE variant of the registry.
        WeightsError: the file is missing, corrupt, or its keys / shapes are not this variant's.
    """
    if name not in ALIKE_CONFIGS:
        raise InputError(f"unknown ALIKE weights {name!r}; known: {', '.join(ALIKE_CONFIGS)}")
    path = weights_path(name)
    state = torch.load(path, map_location="cpu", weights_only=True)
    if not isinstance(state, dict) or not all(isinstance(k, str) and isinstance(v, torch.Tensor)
                                              for k, v in state.items()):
        raise WeightsError(f"{name} at {path}: the checkpoint is not a state dict of tensors (a dict name -> tensor)")
    # the random initialisation (overwritten below) must not move the global generator: a run that loads the
    # network stays reproducible
    with torch.random.fork_rng(devices=[]):
        net = ALike(**ALIKE_CONFIGS[name])  # type: ignore[arg-type]
    return load_state_strict(net, state, name, path).to(device).eval()


def mutual_matches(desc_a: np.ndarray, desc_b: np.ndarray, min_similarity: float = 0.0) -> np.ndarray:
    """Mutual nearest neighbours by cosine similarity.

    Args:
        desc_a: ``[Na, D]`` descriptors (normalised here, so any non-zero scale works).
        desc_b: ``[Nb, D]`` descriptors.
        min_similarity: pairs whose cosine similarity is below it are dropped.

    Returns:
        int64 ``[M, 2]``: ``(index in a, index in b)`` of each pair where b's descriptor is a's nearest and a's is
        b's nearest, in increasing order of the index in a.
    """
    a = np.asarray(desc_a, dtype=np.float32)
    b = np.asarray(desc_b, dtype=np.float32)
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[1]:
        raise InputError(f"descriptors must be [N, D] with the same D, got {list(a.shape)} and {list(b.shape)}")
    if len(a) == 0 or len(b) == 0:
        return np.zeros((0, 2), np.int64)
    a = a / np.maximum(np.linalg.norm(a, axis=1, keepdims=True), 1e-12)
    b = b / np.maximum(np.linalg.norm(b, axis=1, keepdims=True), 1e-12)
    similarity = a @ b.T
    nearest_ab = similarity.argmax(axis=1)
    nearest_ba = similarity.argmax(axis=0)
    ia = np.arange(len(a))
    keep = (nearest_ba[nearest_ab] == ia) & (similarity[ia, nearest_ab] >= min_similarity)
    return np.stack([ia[keep], nearest_ab[keep]], axis=1).astype(np.int64)
