"""TCMonoDepth's small network (TCSmallNet): temporally consistent relative inverse depth from one RGB frame.

Architecture (yu-li/TCMonoDepth@128a98c, ``networks/TCSmallNet.py``; Li et al., "Enforcing Temporal Consistency in
Video Depth Estimation", ICCVW 2021):

* encoder: a ShuffleNetV2 0.5x (Megvii's layout, stage widths 24/48/96/192 -- only the first three stages and no
  max-pool are used): ``first_conv`` (3x3 stride 2, 24 channels, H/2) then 16 ShuffleNetV2 units in three stages of
  4 / 8 / 4 units, each stage opening with a stride-2 unit: features r1 (24 ch, H/2), r2 (48, H/4), r3 (96, H/8),
  r4 (192, H/16);
* decoder: three U-Net steps (1x1 skip projection of the finer feature, bilinear upsampling of the coarser one,
  concatenation, depthwise-separable 3x3 conv) back to H/2, a 3x3 conv to one channel, ReLU, bilinear x2 to H.

Input convention (upstream ``demo.py`` and ``networks/transforms.py``): RGB float **0-255** (the network divides by
255 itself; no mean/std normalisation), sides multiples of 32, resized with OpenCV bicubic so the image covers
``size x size`` with its aspect kept ("lower_bound"), each side rounded to a multiple of 32 and never below
``size``. Output: relative inverse depth (disparity-like, larger = nearer), non-negative, up to an unknown scale
and shift; upstream trained on 256-pixel inputs.

Why hand-written and not torchvision's ``shufflenet_v2_x0_5``: torchvision's unit shuffles channels *after* the
concatenation and splits by halves, while this checkpoint's (Megvii) unit concatenates ``[identity, branch]``
unshuffled and splits even/odd channels at the *next* unit's input. The two are the same function only up to a
channel permutation of every stage output, and the decoder reads the stage outputs directly, so torchvision's blocks
would need permuted decoder weights -- a longer and less obvious key map than the ~40 lines below.

Checkpoint (``tcmonodepth_small_ckpt.pt.tar``, a plain ``state_dict``) key map to :class:`TCSmallNet`:

* ``encoder.first_conv.*``, ``encoder.features.{0..15}.*``, ``decoder.decoder{1,2,3}.*``, ``decoder.final.*``:
  identity (module names follow upstream);
* ``encoder.stage{1,2,3}.{i}.*``: dropped -- upstream registers its stages as slices of ``features``, so the file
  holds each unit twice; the copies are checked to be identical to ``encoder.features.{i}.*``;
* ``decoder.final2.*``, ``decoder.final3.*``: dropped -- deep-supervision heads used only in training.
"""

from __future__ import annotations

import cv2
import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from vision.errors import InputError
from vision.weights.nets import load_state_strict
from vision.weights.store import WeightsError, weights_path

__all__ = ["TCSmallNet", "convert_tcmonodepth_state_dict", "load_tcmonodepth", "network_size", "predict_depth"]

#: ShuffleNetV2 0.5x output channels of first_conv and of the three stages used
STAGE_CHANNELS = (24, 48, 96, 192)
#: units per stage
STAGE_REPEATS = (4, 8, 4)
#: checkpoint prefixes that duplicate ``encoder.features`` (upstream's stage slices)
ALIAS_PREFIXES = ("encoder.stage1.", "encoder.stage2.", "encoder.stage3.")
#: checkpoint prefixes of training-only heads
TRAINING_PREFIXES = ("decoder.final2.", "decoder.final3.")
#: the network's input sides must be multiples of this (encoder stride 16, and upstream's transform uses 32)
MULTIPLE = 32


class ShuffleUnit(nn.Module):
    """One ShuffleNetV2 unit in Megvii's layout (the key names of the checkpoint).

    A stride-2 unit (``first=True``) runs two branches on the whole input: ``branch_proj`` (3x3 depthwise stride 2,
    BN, 1x1, BN, ReLU; ``in_channels`` out) and ``branch_main`` (1x1, BN, ReLU, 3x3 depthwise stride 2, BN, 1x1, BN,
    ReLU; ``out_channels - in_channels`` out), and concatenates ``[proj, main]``. A stride-1 unit splits its input
    into even and odd channels (the channel shuffle of the previous unit's ``[proj, main]`` output), passes the even
    half through and runs ``branch_main`` on the odd half: ``[even, main(odd)]``.

    Args:
        in_channels: channels of the input (of the whole input; a stride-1 unit's branch sees half of them).
        out_channels: channels of the output.
        first: True for the stride-2 unit that opens a stage.

    Shapes: ``[B, in, H, W] -> [B, out, H/2, W/2]`` (first) or ``[B, out, H, W]`` (``in == out``).
    """

    def __init__(self, in_channels: int, out_channels: int, first: bool) -> None:
        super().__init__()
        self.first = first
        stride = 2 if first else 1
        branch_in = in_channels if first else in_channels // 2
        mid = out_channels // 2
        branch_out = out_channels - branch_in
        self.branch_main = nn.Sequential(
            nn.Conv2d(branch_in, mid, 1, 1, 0, bias=False),
            nn.BatchNorm2d(mid),
            nn.ReLU(inplace=True),
            nn.Conv2d(mid, mid, 3, stride, 1, groups=mid, bias=False),
            nn.BatchNorm2d(mid),
            nn.Conv2d(mid, branch_out, 1, 1, 0, bias=False),
            nn.BatchNorm2d(branch_out),
            nn.ReLU(inplace=True),
        )
        # the identity path of a stride-1 unit has no weights; a stride-2 unit downsamples it
        self.branch_proj = nn.Sequential(
            nn.Conv2d(in_channels, in_channels, 3, 2, 1, groups=in_channels, bias=False),
            nn.BatchNorm2d(in_channels),
            nn.Conv2d(in_channels, in_channels, 1, 1, 0, bias=False),
            nn.BatchNorm2d(in_channels),
            nn.ReLU(inplace=True),
        ) if first else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.branch_proj is not None:
            return torch.cat((self.branch_proj(x), self.branch_main(x)), dim=1)
        # even channels pass through, odd channels go through the branch (Megvii's channel shuffle)
        return torch.cat((x[:, 0::2], self.branch_main(x[:, 1::2])), dim=1)


class ShuffleNetV2Encoder(nn.Module):
    """ShuffleNetV2 0.5x without max-pool and classifier, returning the four feature maps the decoder reads.

    Args:
        in_channels: image channels (3).
        channels: output channels of ``first_conv`` and of stages 1-3, ``(24, 48, 96, 192)`` for 0.5x.
        repeats: units per stage, ``(4, 8, 4)``.

    Shapes: ``[B, 3, H, W] -> (r1 [B, c0, H/2, W/2], r2 [B, c1, H/4, W/4], r3 [B, c2, H/8, W/8],
    r4 [B, c3, H/16, W/16])``.
    """

    def __init__(self, in_channels: int = 3, channels: tuple[int, int, int, int] = STAGE_CHANNELS,
                 repeats: tuple[int, int, int] = STAGE_REPEATS) -> None:
        super().__init__()
        self.first_conv = nn.Sequential(
            nn.Conv2d(in_channels, channels[0], 3, 2, 1, bias=False),
            nn.BatchNorm2d(channels[0]),
            nn.ReLU(inplace=True),
        )
        units: list[nn.Module] = []
        previous = channels[0]
        for out, count in zip(channels[1:], repeats):
            for i in range(count):
                units.append(ShuffleUnit(previous, out, first=i == 0))
                previous = out
        # one flat Sequential (upstream's ``features``); the stage ends are indices into it
        self.features = nn.Sequential(*units)
        self.stage_ends = tuple(int(e) for e in np.cumsum(repeats))

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        r1 = self.first_conv(x)
        outputs = [r1]
        start, h = 0, r1
        for end in self.stage_ends:
            for unit in self.features[start:end]:
                h = unit(h)
            outputs.append(h)
            start = end
        return outputs[0], outputs[1], outputs[2], outputs[3]


class SepConvBlock(nn.Module):
    """3x3 depthwise conv, BN, ReLU, 1x1 conv (no bias). ``[B, in, H, W] -> [B, out, H, W]``."""

    def __init__(self, in_channels: int, out_channels: int) -> None:
        super().__init__()
        self.conv = nn.Sequential(
            nn.Conv2d(in_channels, in_channels, 3, padding=1, groups=in_channels, bias=False),
            nn.BatchNorm2d(in_channels),
            nn.ReLU(inplace=True),
            nn.Conv2d(in_channels, out_channels, 1, bias=False),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x)


class DecoderBlock(nn.Module):
    """One decoder step: the finer feature projected to ``high // 4`` channels (1x1, BN, ReLU), the coarser one
    upsampled bilinearly (``align_corners=False``) to its size, ``[high_up, low_proj]`` concatenated, then a separable
    conv, BN, ReLU.

    Args:
        low_channels: channels of the finer (skip) feature.
        high_channels: channels of the coarser feature.
        out_channels: channels of the output.

    Shapes: ``x_low [B, low, H, W]``, ``x_high [B, high, h, w] -> [B, out, H, W]``.
    """

    def __init__(self, low_channels: int, high_channels: int, out_channels: int) -> None:
        super().__init__()
        self.skip_conv = nn.Sequential(
            nn.Conv2d(low_channels, high_channels // 4, 1, bias=False),
            nn.BatchNorm2d(high_channels // 4),
            nn.ReLU(inplace=True),
        )
        self.last_conv = nn.Sequential(
            SepConvBlock(high_channels + high_channels // 4, out_channels),
            nn.BatchNorm2d(out_channels),
            nn.ReLU(inplace=True),
        )

    def forward(self, x_low: torch.Tensor, x_high: torch.Tensor) -> torch.Tensor:
        x_low = self.skip_conv(x_low)
        x_high = F.interpolate(x_high, size=x_low.shape[2:], mode="bilinear", align_corners=False)
        return self.last_conv(torch.cat((x_high, x_low), dim=1))


class DepthDecoder(nn.Module):
    """The three decoder steps and the one-channel head (inference path of upstream's ``Decoder``).

    Args:
        channels: the encoder's ``(c0, c1, c2, c3)``.

    Shapes: encoder features (H/2 ... H/16) ``-> [B, 1, H, W]``, non-negative.
    """

    def __init__(self, channels: tuple[int, int, int, int] = STAGE_CHANNELS) -> None:
        super().__init__()
        c0, c1, c2, c3 = channels
        self.decoder3 = DecoderBlock(c2, c3, c2)
        self.decoder2 = DecoderBlock(c1, c2, c1)
        self.decoder1 = DecoderBlock(c0, c1, c0)
        self.final = nn.Conv2d(c0, 1, 3, padding=1)

    def forward(self, features: tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]) -> torch.Tensor:
        r1, r2, r3, r4 = features
        d3 = self.decoder3(r3, r4)
        d2 = self.decoder2(r2, d3)
        d1 = self.decoder1(r1, d2)
        out = F.relu(self.final(d1))
        return F.interpolate(out, scale_factor=2, mode="bilinear", align_corners=False)


class TCSmallNet(nn.Module):
    """TCMonoDepth's small network: ShuffleNetV2 0.5x encoder and U-Net decoder (see the module docstring).

    Args:
        in_channels: image channels (3, RGB).
        channels: encoder widths ``(first_conv, stage1, stage2, stage3)``.
        repeats: units per encoder stage.

    ``forward(image)``: ``image`` float ``[B, 3, H, W]`` RGB in **0-255** (divided by 255 here, as upstream),
    ``H, W`` multiples of 32 -> relative inverse depth ``[B, 1, H, W]`` (larger = nearer, >= 0).
    """

    def __init__(self, in_channels: int = 3, channels: tuple[int, int, int, int] = STAGE_CHANNELS,
                 repeats: tuple[int, int, int] = STAGE_REPEATS) -> None:
        super().__init__()
        self.encoder = ShuffleNetV2Encoder(in_channels, channels, repeats)
        self.decoder = DepthDecoder(channels)

    def forward(self, image: torch.Tensor) -> torch.Tensor:
        return self.decoder(self.encoder(image / 255.0))


def convert_tcmonodepth_state_dict(state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The checkpoint's state dict mapped to :class:`TCSmallNet`'s keys (the map in the module docstring).

    Raises:
        WeightsError: the file is not a state dict of tensors, lacks the training heads or stage aliases upstream's
            file holds, or an alias differs from the unit it duplicates.
    """
    if not isinstance(state, dict) or not all(isinstance(k, str) and isinstance(v, torch.Tensor)
                                              for k, v in state.items()):
        raise WeightsError("tcmonodepth-small: the checkpoint is not a state dict of tensors (a dict name -> tensor)")
    state = {k.removeprefix("module."): v for k, v in state.items()}
    for prefix in ALIAS_PREFIXES + TRAINING_PREFIXES:
        if not any(k.startswith(prefix) for k in state):
            raise WeightsError(f"tcmonodepth-small: the checkpoint has no {prefix}* keys; it is not upstream's "
                               f"TCSmallNet file")
    converted: dict[str, torch.Tensor] = {}
    for key, value in state.items():
        if key.startswith(TRAINING_PREFIXES):
            continue
        if key.startswith(ALIAS_PREFIXES):
            # encoder.stageK.<i>.<rest> duplicates encoder.features.<i>.<rest>
            twin = "encoder.features." + key.split(".", 2)[2]
            if twin not in state or not torch.equal(state[twin], value):
                raise WeightsError(f"tcmonodepth-small: checkpoint key {key} is not an identical copy of {twin}")
            continue
        converted[key] = value
    return converted


def load_tcmonodepth(device: str | torch.device = "cpu") -> TCSmallNet:
    """TCSmallNet with the registered ``tcmonodepth-small`` weights, in eval mode on ``device``.

    The file comes from :func:`vision.weights.store.weights_path` (checked by sha256), is read with
    ``torch.load(weights_only=True)``, mapped by :func:`convert_tcmonodepth_state_dict` and loaded strictly.

    Raises:
        WeightsError: the file is missing, corrupt, or its keys / shapes are not TCSmallNet's.
    """
    path = weights_path("tcmonodepth-small")
    state = torch.load(path, map_location="cpu", weights_only=True)
    converted = convert_tcmonodepth_state_dict(state)
    # the random initialisation (overwritten below) must not move the global generator: a run that loads the
    # network stays reproducible
    with torch.random.fork_rng(devices=[]):
        net = TCSmallNet()
    return load_state_strict(net, converted, "tcmonodepth-small", path).to(device).eval()


def network_size(height: int, width: int, size: int = 128) -> tuple[int, int]:
    """The ``(h, w)`` a ``height x width`` frame is resized to (upstream's ``Resize(size, size,
    keep_aspect_ratio=True, ensure_multiple_of=32, resize_method="lower_bound")``): scaled so the shorter side is
    ``size``, each side rounded to the nearest multiple of 32, rounded up instead where that falls below ``size``."""
    if size < 1 or height < 1 or width < 1:
        raise InputError(f"size and frame sides must be positive, got size={size}, frame {height}x{width}")
    scale = max(size / height, size / width)

    def constrain(x: float) -> int:
        y = int(np.round(x / MULTIPLE) * MULTIPLE)
        return int(np.ceil(x / MULTIPLE) * MULTIPLE) if y < size else y

    return constrain(scale * height), constrain(scale * width)


def predict_depth(net: TCSmallNet, frames: np.ndarray, size: int = 128, batch_size: int = 16) -> np.ndarray:
    """Relative inverse depth of each frame.

    Args:
        net: a :class:`TCSmallNet` (e.g. from :func:`load_tcmonodepth`); it is run in eval mode on its device.
        frames: uint8 ``[T, H, W, 3]`` RGB.
        size: the shorter side the frames are resized to (then both sides rounded to multiples of 32, see
            :func:`network_size`); upstream's demo uses 256 for this network.
        batch_size: frames per forward pass.

    Returns:
        float32 ``[T, h, w]`` relative inverse depth (larger = nearer, >= 0, unknown scale and shift) at the network
        resolution ``(h, w) = network_size(H, W, size)``.

    Frames are resized with OpenCV bicubic interpolation and fed as RGB 0-255 floats, as upstream's demo does.
    """
    frames = np.asarray(frames)
    if frames.ndim != 4 or frames.shape[-1] != 3 or frames.dtype != np.uint8:
        raise InputError(f"frames must be uint8 [T, H, W, 3] RGB, got {frames.dtype} {list(frames.shape)}")
    if batch_size < 1:
        raise InputError(f"batch_size must be >= 1, got {batch_size}")
    t, height, width, _ = frames.shape
    h, w = network_size(height, width, size)
    if t == 0:
        return np.zeros((0, h, w), np.float32)
    device = next(net.parameters()).device
    net.eval()
    out = np.empty((t, h, w), np.float32)
    with torch.no_grad():
        for start in range(0, t, batch_size):
            chunk = frames[start:start + batch_size]
            resized = np.stack([cv2.resize(f, (w, h), interpolation=cv2.INTER_CUBIC) for f in chunk])
            x = torch.from_numpy(resized).to(device=device, dtype=torch.float32).permute(0, 3, 1, 2)
            out[start:start + len(chunk)] = net(x)[:, 0].float().cpu().numpy()
    return out
