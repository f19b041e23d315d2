"""NanoTrack v2 and v3: the Siamese networks of a single-object tracker (registry names ``nanotrack-v2``,
``nanotrack-v3``); :mod:`vision.tracking.nanotrack` tracks with them.

Architecture (HonglinChu/SiamTrackers@248663f, ``NanoTrack/nanotrack/models/``: ``backbone/mobile_v3.py``,
``neck/neck.py``, ``head/ban_v2.py``, ``head/ban_v3.py``, ``model_builder.py``; module names follow upstream, so the
checkpoint's ``state_dict`` loads with the identity key map):

* ``backbone``: a truncated MobileNetV3-Small, total stride 16 -- a 3x3 stride-2 conv-BN-hard-swish stem and the
  inverted-residual stages of :data:`MOBILENETV3_STAGES` (v2: 8 stages, 48 channels out; v3: one more stage, 96
  channels, at stride 1). A 127 x 127 template crop gives ``[B, C, 8, 8]``, a 255 x 255 search crop
  ``[B, C, 16, 16]``.
* ``neck``: upstream's ``AdjustLayer`` (a 1x1 conv and a BatchNorm). Upstream's ``ModelBuilder.template`` and
  ``track`` never call it; it is here only so that the checkpoint loads strictly.
* ``ban_head``: the classification and box-regression head on the two feature maps. Both versions correlate every
  template cell with every search cell (pixel-wise correlation: 64 = 8 x 8 channels, re-weighted by a channel
  attention). v2 then runs two towers of six depthwise-separable layers (ReLU6) on the 16 x 16 correlation; v3 also
  correlates the centre 4 x 4 of the template depthwise (per channel, padding 1), reduces the pixel-wise map by a 2 x
  2 depthwise conv, concatenates both and reduces them by a 1x1 conv before its towers: its maps are 15 x 15.

``head`` returns the classification logits ``[B, 2, S, S]`` (channel 1 is the object; a softmax over the two channels
gives its probability) and the box distances ``[B, 4, S, S]`` (``exp`` of the regression: left, top, right, bottom
distances from each cell's point to the box sides, in search-crop pixels).

Input convention: float ``[B, 3, H, W]`` with values 0-255 (no mean / std). Channel order: OpenCV's ``TrackerNano``
(the parity target) feeds **RGB** (``blobFromImage(..., swapRB=true)`` on its BGR frames); upstream's own Python
tracker and its training feed BGR (``cv2.imread``). :class:`vision.tracking.nanotrack.NanoTracker` chooses.

Checkpoint: ``{"epoch", "state_dict", "optimizer"}`` saved with NumPy scalars in it, so ``torch.load(...,
weights_only=True)`` refuses it until ``numpy.core.multiarray.scalar``, ``numpy.dtype`` and the float64 dtype's class
are allow-listed; :func:`load_nanotrack` allow-lists exactly those, and nothing is ever unpickled as code.
"""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import torch
from torch import nn

from vision.errors import InputError
from vision.weights.nets import load_state_strict
from vision.weights.store import WeightsError, weights_path

__all__ = ["MOBILENETV3_STAGES", "NANOTRACK_VERSIONS", "NanoTrack", "checkpoint_safe_globals", "load_nanotrack"]

#: MobileNetV3-Small's inverted-residual stages as NanoTrack truncates them: (kernel, expanded width, output width,
#: squeeze-excite, hard-swish (else ReLU), stride). Upstream computes the expanded widths as
#: ``_make_divisible(in * t, 8)``; they are written out here. v3 adds the last row (stride 1: the total stride stays
#: 16).
MOBILENETV3_STAGES: dict[str, tuple[tuple[int, int, int, bool, bool, int], ...]] = {
    "v2": (
        (3, 16, 16, True, False, 2),
        (3, 72, 24, False, False, 2),
        (3, 88, 24, False, False, 1),
        (5, 96, 40, True, True, 2),
        (5, 240, 40, True, True, 1),
        (5, 240, 40, True, True, 1),
        (5, 120, 48, True, True, 1),
        (5, 144, 48, True, True, 1),
    ),
}
MOBILENETV3_STAGES["v3"] = MOBILENETV3_STAGES["v2"] + ((5, 288, 96, True, True, 1),)

#: the versions this module builds
NANOTRACK_VERSIONS = ("v2", "v3")
#: template-feature cells the pixel-wise correlation turns into channels (8 x 8 from a 127 x 127 template)
TEMPLATE_CELLS = 64


def _se_width(channels: int) -> int:
    """The squeeze-excite bottleneck width: ``channels // 4`` rounded to a multiple of 8, at least 8, never more than
    10% below (upstream's ``_make_divisible(channels // 4, 8)``)."""
    value = channels // 4
    width = max(8, (value + 4) // 8 * 8)
    return width + 8 if width < 0.9 * value else width


class SqueezeExcite(nn.Module):
    """Channel re-weighting: global average, ``fc`` (Linear, ReLU, Linear, hard sigmoid), product.
    ``[B, C, H, W] -> [B, C, H, W]``.

    Args:
        channels: ``C``.
        hidden: the bottleneck width.
    """

    def __init__(self, channels: int, hidden: int) -> None:
        super().__init__()
        self.fc = nn.Sequential(nn.Linear(channels, hidden), nn.ReLU(), nn.Linear(hidden, channels), nn.Hardsigmoid())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.fc(x.mean(dim=(2, 3)))[:, :, None, None]


class InvertedResidual(nn.Module):
    """A MobileNetV3 block in upstream's flat ``conv`` Sequential (its indices are the checkpoint's keys): 1x1
    expansion (omitted when ``expanded == in_channels``), depthwise ``kernel`` conv with ``stride``, squeeze-excite
    (or an identity placeholder), activation, 1x1 projection; a residual when the shapes allow.
    ``[B, in, H, W] -> [B, out, H / stride, W / stride]``.

    Args:
        in_channels: input width.
        expanded: width of the depthwise conv.
        out_channels: output width.
        kernel: depthwise kernel side (3 or 5).
        squeeze_excite: add a :class:`SqueezeExcite` after the depthwise conv.
        hard_swish: hard-swish activations, else ReLU.
        stride: 1 or 2.
    """

    def __init__(self, in_channels: int, expanded: int, out_channels: int, kernel: int, squeeze_excite: bool,
                 hard_swish: bool, stride: int) -> None:
        super().__init__()
        self.residual = stride == 1 and in_channels == out_channels
        se: nn.Module = SqueezeExcite(expanded, _se_width(expanded)) if squeeze_excite else nn.Identity()
        depthwise = nn.Conv2d(expanded, expanded, kernel, stride, (kernel - 1) // 2, groups=expanded, bias=False)
        project = [nn.Conv2d(expanded, out_channels, 1, bias=False), nn.BatchNorm2d(out_channels)]

        def act() -> nn.Module:
            return nn.Hardswish() if hard_swish else nn.ReLU()

        if expanded == in_channels:  # upstream's order without expansion: activation before the squeeze-excite
            self.conv = nn.Sequential(depthwise, nn.BatchNorm2d(expanded), act(), se, *project)
        else:
            self.conv = nn.Sequential(nn.Conv2d(in_channels, expanded, 1, bias=False), nn.BatchNorm2d(expanded), act(),
                                      depthwise, nn.BatchNorm2d(expanded), se, act(), *project)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.conv(x) if self.residual else self.conv(x)


class MobileNetV3Backbone(nn.Module):
    """NanoTrack's truncated MobileNetV3-Small (total stride 16). ``[B, 3, H, W]`` (0-255) ``-> [B, C, H', W']``
    with ``H' = ceil(H / 16)`` (127 -> 8, 255 -> 16).

    Args:
        stages: rows of :data:`MOBILENETV3_STAGES`.
    """

    def __init__(self, stages: tuple[tuple[int, int, int, bool, bool, int], ...]) -> None:
        super().__init__()
        layers: list[nn.Module] = [nn.Sequential(nn.Conv2d(3, 16, 3, 2, 1, bias=False), nn.BatchNorm2d(16),
                                                 nn.Hardswish())]
        width = 16
        for kernel, expanded, out, squeeze_excite, hard_swish, stride in stages:
            layers.append(InvertedResidual(width, expanded, out, kernel, squeeze_excite, hard_swish, stride))
            width = out
        self.out_channels = width
        self.features = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.features(x)


class AdjustLayer(nn.Module):
    """Upstream's neck: a 1x1 conv and a BatchNorm (``downsample``). NanoTrack never runs it (see the module
    docstring); it exists so the checkpoint loads strictly.

    Args:
        channels: its input and output width.
    """

    def __init__(self, channels: int) -> None:
        super().__init__()
        self.downsample = nn.Sequential(nn.Conv2d(channels, channels, 1, bias=False), nn.BatchNorm2d(channels))


def _conv_bn(in_channels: int, out_channels: int) -> nn.Sequential:
    """A 1x1 conv (with bias) and a BatchNorm."""
    return nn.Sequential(nn.Conv2d(in_channels, out_channels, 1), nn.BatchNorm2d(out_channels))


class ChannelAttention(nn.Module):
    """Upstream's ``CAModule``: the input times sigmoid(fc2(relu(fc1(global average)))), 1x1 convs.
    ``[B, C, H, W] -> [B, C, H, W]``.

    Args:
        channels: ``C``.
    """

    def __init__(self, channels: int) -> None:
        super().__init__()
        self.fc1 = nn.Conv2d(channels, channels, 1)
        self.fc2 = nn.Conv2d(channels, channels, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        weights = torch.sigmoid(self.fc2(torch.relu(self.fc1(x.mean(dim=(2, 3), keepdim=True)))))
        return x * weights


class PixelwiseXCorr(nn.Module):
    """Pixel-wise correlation: both maps through a 1x1 conv-BN, then for every template cell ``k`` (row-major) and
    search cell, the dot product of their features (channel ``k`` of the output), channel attention, and (v3) a
    2 x 2 depthwise conv-BN-ReLU6 and a 1x1 conv-BN (``conv``, which makes the map one cell smaller).
    ``([B, C, 8, 8], [B, C, Hx, Wx]) -> [B, 64, Hx, Wx]`` (v3: ``Hx - 1, Wx - 1``).

    Args:
        channels: feature width ``C``.
        reduce: add v3's ``conv``.
    """

    def __init__(self, channels: int, reduce: bool) -> None:
        super().__init__()
        self.CA_layer = ChannelAttention(TEMPLATE_CELLS)
        self.conv_kernel = _conv_bn(channels, channels)
        self.conv_search = _conv_bn(channels, channels)
        self.conv = (nn.Sequential(nn.Conv2d(TEMPLATE_CELLS, TEMPLATE_CELLS, 2, groups=TEMPLATE_CELLS, bias=False),
                                   nn.BatchNorm2d(TEMPLATE_CELLS), nn.ReLU6(),
                                   nn.Conv2d(TEMPLATE_CELLS, TEMPLATE_CELLS, 1), nn.BatchNorm2d(TEMPLATE_CELLS))
                     if reduce else None)

    def forward(self, template: torch.Tensor, search: torch.Tensor) -> torch.Tensor:
        kernel = self.conv_kernel(template).flatten(2)  # [B, C, 64]
        search = self.conv_search(search)
        b, c, h, w = search.shape
        corr = torch.matmul(kernel.transpose(1, 2), search.reshape(b, c, h * w)).reshape(b, -1, h, w)
        corr = self.CA_layer(corr)
        return self.conv(corr) if self.conv is not None else corr


class DepthwiseXCorr(nn.Module):
    """Depthwise correlation (v3): both maps through a 1x1 conv-BN, then each search channel correlated with the same
    template channel (the template is the kernel; zero padding 1). ``([B, C, 4, 4], [B, C, Hx, Wx]) -> [B, C, Hx - 1,
    Wx - 1]``.

    Args:
        channels: feature width ``C``.
    """

    def __init__(self, channels: int) -> None:
        super().__init__()
        self.conv_kernel = _conv_bn(channels, channels)
        self.conv_search = _conv_bn(channels, channels)

    def forward(self, template: torch.Tensor, search: torch.Tensor) -> torch.Tensor:
        kernel = self.conv_kernel(template)
        search = self.conv_search(search)
        b, c, h, w = search.shape
        # one group per (batch, channel): the batch folds into the channels so each sample uses its own template
        out = torch.nn.functional.conv2d(search.reshape(1, b * c, h, w), kernel.reshape(b * c, 1, *kernel.shape[2:]),
                                         padding=1, groups=b * c)
        return out.reshape(b, c, *out.shape[2:])


def _separable_tower(in_channels: int, width: int, layers: int, version: str) -> nn.Sequential:
    """Six depthwise-separable 3x3 layers in upstream's flat order. v2: depthwise conv, 1x1 conv, BN, ReLU6 (the first
    layer widens ``in_channels`` to ``width``). v3: depthwise conv, BN, ReLU6, 1x1 conv, BN (no activation after)."""
    modules: list[nn.Module] = []
    for i in range(layers):
        c = in_channels if i == 0 else width
        depthwise = nn.Conv2d(c, c, 3, padding=1, groups=c, bias=False)
        pointwise = nn.Conv2d(c, width, 1, bias=False)
        if version == "v2":
            modules += [depthwise, pointwise, nn.BatchNorm2d(width), nn.ReLU6()]
        else:
            modules += [depthwise, nn.BatchNorm2d(c), nn.ReLU6(), pointwise, nn.BatchNorm2d(width)]
    return nn.Sequential(*modules)


class BANHeadV2(nn.Module):
    """NanoTrack v2's head (upstream ``ban_v2.DepthwiseBAN``). ``([B, 48, 8, 8], [B, 48, 16, 16]) -> (logits [B, 2,
    16, 16], distances [B, 4, 16, 16])``.

    Args:
        channels: backbone feature width (48).
        width: tower width (96).
    """

    def __init__(self, channels: int = 48, width: int = 96) -> None:
        super().__init__()
        self.corr_pw_reg = PixelwiseXCorr(channels, reduce=False)
        self.corr_pw_cls = PixelwiseXCorr(channels, reduce=False)
        self.cls_pw_tower = _separable_tower(TEMPLATE_CELLS, width, 6, "v2")
        self.bbox_pw_tower = _separable_tower(TEMPLATE_CELLS, width, 6, "v2")
        self.cls_pred = nn.Sequential(nn.Conv2d(width, 2, 1))
        self.bbox_pred = nn.Sequential(nn.Conv2d(width, 4, 1))

    def forward(self, template: torch.Tensor, search: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        logits = self.cls_pred(self.cls_pw_tower(self.corr_pw_cls(template, search)))
        distances = torch.exp(self.bbox_pred(self.bbox_pw_tower(self.corr_pw_reg(template, search))))
        return logits, distances


class BANHeadV3(nn.Module):
    """NanoTrack v3's head (upstream ``ban_v3.DepthwiseBAN``). ``([B, 96, 8, 8], [B, 96, 16, 16]) -> (logits [B, 2,
    15, 15], distances [B, 4, 15, 15])``.

    Args:
        channels: backbone feature width and tower width (96).
    """

    def __init__(self, channels: int = 96) -> None:
        super().__init__()
        self.corr_dw_reg = DepthwiseXCorr(channels)
        self.corr_pw_reg = PixelwiseXCorr(channels, reduce=True)
        self.corr_dw_cls = DepthwiseXCorr(channels)
        self.corr_pw_cls = PixelwiseXCorr(channels, reduce=True)
        self.cls_tower = _separable_tower(channels, channels, 6, "v3")
        self.bbox_tower = _separable_tower(channels, channels, 6, "v3")
        self.cls_logits = nn.Sequential(nn.Conv2d(channels, 2, 1))
        self.bbox_pred = nn.Sequential(nn.Conv2d(channels, 4, 1))
        self.down_reg = nn.Sequential(nn.Conv2d(channels + TEMPLATE_CELLS, channels, 1))
        self.down_cls = nn.Sequential(nn.Conv2d(channels + TEMPLATE_CELLS, channels, 1))

    def forward(self, template: torch.Tensor, search: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        centre = template[:, :, 2:6, 2:6]  # upstream's crop: the middle 4 x 4 of the 8 x 8 template features
        reg = self.down_reg(torch.cat((self.corr_pw_reg(template, search), self.corr_dw_reg(centre, search)), 1))
        cls = self.down_cls(torch.cat((self.corr_pw_cls(template, search), self.corr_dw_cls(centre, search)), 1))
        logits = self.cls_logits(self.cls_tower(cls))
        distances = torch.exp(self.bbox_pred(self.bbox_tower(reg)))
        return logits, distances


class NanoTrack(nn.Module):
    """The NanoTrack network of ``version`` (see the module docstring).

    Args:
        version: ``"v2"`` or ``"v3"``.

    ``features(crop)``: float ``[B, 3, H, W]`` 0-255 -> ``[B, C, H/16, W/16]`` (a 127 template: 8 x 8; a 255 search
    region: 16 x 16). ``head(template_features, search_features)``: ``[B, C, 8, 8], [B, C, 16, 16] -> (logits [B, 2, S,
    S], distances [B, 4, S, S])`` with ``S`` 16 (v2) or 15 (v3). ``forward(template, search)`` runs both.
    """

    def __init__(self, version: str) -> None:
        super().__init__()
        if version not in NANOTRACK_VERSIONS:
            raise InputError(f"unknown NanoTrack version {version!r}; known: {', '.join(NANOTRACK_VERSIONS)}")
        self.version = version
        self.backbone = MobileNetV3Backbone(MOBILENETV3_STAGES[version])
        channels = self.backbone.out_channels
        # upstream's configs declare the neck at the head's input width (64 for v2, 96 for v3)
        self.neck = AdjustLayer(TEMPLATE_CELLS if version == "v2" else channels)
        self.ban_head: nn.Module = BANHeadV2(channels) if version == "v2" else BANHeadV3(channels)
        #: the side of the score map of a 255 x 255 search crop (v3's head makes it one cell smaller)
        self.score_size = 16 if version == "v2" else 15

    def features(self, crop: torch.Tensor) -> torch.Tensor:
        return self.backbone(crop)

    def head(self, template_features: torch.Tensor, search_features: torch.Tensor
             ) -> tuple[torch.Tensor, torch.Tensor]:
        return self.ban_head(template_features, search_features)

    def forward(self, template: torch.Tensor, search: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.head(self.features(template), self.features(search))


def checkpoint_safe_globals() -> list:
    """The globals a NanoTrack checkpoint's pickle may name, for ``torch.serialization.safe_globals``: NumPy's scalar
    reconstructor (pickled as ``numpy.core.multiarray.scalar``, which NumPy 2 moved to ``numpy._core``), ``numpy.dtype``
    and the class of the float64 dtype it rebuilds. Nothing else: any other global is refused."""
    try:
        from numpy._core.multiarray import scalar  # NumPy >= 2
    except ImportError:  # NumPy 1.x
        from numpy.core.multiarray import scalar
    return [(scalar, "numpy.core.multiarray.scalar"), np.dtype, type(np.dtype(np.float64))]


def load_nanotrack(version: str, path: str | Path | None = None, device: str | torch.device = "cpu") -> NanoTrack:
    """NanoTrack ``version`` (``"v2"``, ``"v3"``) with its pretrained weights, in eval mode on ``device``.

    Args:
        version: ``"v2"`` or ``"v3"``.
        path: the checkpoint; None: the registered ``nanotrack-<version>`` file of
            :func:`vision.weights.store.weights_path` (checked by sha256).
        device: where the network goes.

    The file is read with ``torch.load(path, map_location="cpu", weights_only=True)`` inside
    ``torch.serialization.safe_globals(checkpoint_safe_globals())`` and its ``state_dict`` loaded strictly.

    Raises:
        InputError: unknown ``version``.
        WeightsError: the file is missing or not the registered one, its pickle names a global outside the
            allow-list (it is not unpickled), it holds no ``state_dict`` of tensors, or its keys / shapes are not this
            version's; the message names the file.
    """
    if version not in NANOTRACK_VERSIONS:
        raise InputError(f"unknown NanoTrack version {version!r}; known: {', '.join(NANOTRACK_VERSIONS)}")
    name = f"nanotrack-{version}"
    path = weights_path(name) if path is None else Path(path)
    if not path.is_file():
        raise WeightsError(f"{name}: no checkpoint at {path}")
    try:
        with torch.serialization.safe_globals(checkpoint_safe_globals()):
            checkpoint = torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as exc:
        # torch's message goes on to suggest allow-listing the global; only its first clause is kept
        reason = str(exc).split("WeightsUnpickler error:")[-1].strip().splitlines()[0].split(" was not an")[0]
        raise WeightsError(f"{name} at {path}: refused to unpickle it with weights_only=True and the NumPy "
                           f"allow-list ({reason}); it is not loaded") from None
    except (RuntimeError, EOFError, OSError) as exc:
        raise WeightsError(f"{name} at {path}: not a readable torch checkpoint ({exc})") from None
    state = checkpoint.get("state_dict") if isinstance(checkpoint, dict) else None
    if not isinstance(state, dict) or not all(isinstance(k, str) and isinstance(v, torch.Tensor)
                                              for k, v in state.items()):
        raise WeightsError(f"{name} at {path}: no 'state_dict' of tensors (a dict name -> tensor) in the checkpoint")
    # the random initialisation (overwritten below) must not move the global generator: a run that loads the
    # network stays reproducible
    with torch.random.fork_rng(devices=[]):
        net = NanoTrack(version)
    return load_state_strict(net, state, name, path).to(device).eval()
