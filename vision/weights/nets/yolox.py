"""YOLOX-nano in PyTorch, with the weights of the registered ONNX file ``yolox-nano``.

The network of Megvii YOLOX (``yolox/models/darknet.py``, ``network_blocks.py``, ``yolo_pafpn.py``, ``yolo_head.py``,
``exps/default/yolox_nano.py``; written anew here): a CSPDarknet backbone (depth 0.33, width 0.25, depthwise
convolutions: a Focus stem, then four stages of a stride-2 convolution and CSP layers, the last with spatial
pyramid pooling), a PAFPN neck (top-down then bottom-up, three levels at strides 8, 16, 32) and YOLOX's decoupled
head (a classification and a box / objectness branch per level). Module and parameter names follow Megvii's.

The weights come from ``yolox_nano.onnx`` (Kazuhito00/YOLOX-ONNX-TFLite-Sample, exported from Megvii's checkpoint
with PyTorch 1.10, opset 11). That graph has every BatchNorm folded into the convolution before it (113 ``Conv``
nodes with a bias, no ``BatchNormalization``), so :class:`BaseConv` here is a convolution with a bias followed by
SiLU, with no BatchNorm: the module computes what the graph computes, and stays trainable (every parameter is a
leaf with ``requires_grad``), but fine-tuning it trains the folded convolutions without BatchNorm's normalisation.
SiLU is ``x * sigmoid(x)`` in the graph (``Sigmoid`` then ``Mul``), the Focus stem is there (eight ``Slice`` nodes
and a ``Concat``), upsampling is nearest-neighbour x2 (``Resize``), and the graph ends as Megvii's head does at
export (``decode_in_inference = False``): per level ``cat(box terms, sigmoid(objectness), sigmoid(class logits))``,
flattened, levels concatenated and transposed to ``[1, 3549, 85]``; the grid decoding is not in the graph.

:meth:`YOLOXNano.from_onnx` maps the graph's initializers to the parameters by walking the graph backwards from its
output along the network's structure (every node is checked to be the operation the module performs, with its
attributes and the tensors it connects), so no tensor is matched by name or order; the letterbox, the grid decoding
and the NMS are those of the onnxruntime class :class:`vision.weights.nets.onnx_models.YOLOXNano`
(:func:`~vision.weights.nets.onnx_models.yolox_letterbox`, :func:`~vision.weights.nets.onnx_models.yolox_anchor_points`,
:func:`~vision.weights.nets.onnx_models.yolox_detections`).

Conventions: the network's input is float [B, 3, H, W] BGR in 0-255 (no normalisation), H and W multiples of 32
(416 x 416 for the registered weights, letterboxed by :func:`~vision.weights.nets.onnx_models.yolox_letterbox`);
:meth:`YOLOXNano.detect` takes uint8 [H, W, 3] RGB images like the rest of the package.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import torch
from torch import Tensor, nn

from vision.errors import InputError
from vision.weights.nets import load_state_strict
from vision.weights.nets.onnx_models import yolox_anchor_points, yolox_detections, yolox_letterbox
from vision.weights.store import WeightsError, weights_path

__all__ = ["BaseConv", "DWConv", "Bottleneck", "CSPLayer", "SPPBottleneck", "Focus", "CSPDarknet", "YOLOPAFPN",
           "YOLOXHead", "YOLOXNano", "load_yolox_nano"]


class BaseConv(nn.Module):
    """Convolution (with a bias: the BatchNorm of Megvii's ``BaseConv`` folded into it) then SiLU; "same" padding.

    Args:
        in_channels, out_channels: channels of the input and the output.
        kernel_size: the square kernel's side (odd).
        stride: the convolution's stride.
        groups: convolution groups (``in_channels`` for a depthwise convolution).
    """

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, stride: int = 1,
                 groups: int = 1) -> None:
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, stride, (kernel_size - 1) // 2, groups=groups,
                              bias=True)
        self.act = nn.SiLU()

    def forward(self, x: Tensor) -> Tensor:
        """[B, in, H, W] -> [B, out, ceil(H / stride), ceil(W / stride)]."""
        return self.act(self.conv(x))


class DWConv(nn.Module):
    """A depthwise :class:`BaseConv` (``kernel_size``, ``stride``) then a pointwise 1x1 :class:`BaseConv`.

    Args:
        in_channels, out_channels: channels of the input and the output.
        kernel_size: the depthwise kernel's side.
        stride: the depthwise convolution's stride.
    """

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, stride: int = 1) -> None:
        super().__init__()
        self.dconv = BaseConv(in_channels, in_channels, kernel_size, stride, groups=in_channels)
        self.pconv = BaseConv(in_channels, out_channels, 1, 1)

    def forward(self, x: Tensor) -> Tensor:
        """[B, in, H, W] -> [B, out, ceil(H / stride), ceil(W / stride)]."""
        return self.pconv(self.dconv(x))


def _conv3x3(in_channels: int, out_channels: int, stride: int, depthwise: bool) -> nn.Module:
    """A 3x3 block: :class:`DWConv` when ``depthwise``, else a dense :class:`BaseConv`."""
    if depthwise:
        return DWConv(in_channels, out_channels, 3, stride)
    return BaseConv(in_channels, out_channels, 3, stride)


class Bottleneck(nn.Module):
    """1x1 :class:`BaseConv` then a 3x3 block, plus the input when ``shortcut`` (CSP layers use expansion 1, so the
    hidden width is ``channels``).

    Args:
        channels: channels of the input, the hidden map and the output.
        shortcut: add the input to the output (a residual).
        depthwise: the 3x3 block is a :class:`DWConv`.
    """

    def __init__(self, channels: int, shortcut: bool = True, depthwise: bool = False) -> None:
        super().__init__()
        self.conv1 = BaseConv(channels, channels, 1, 1)
        self.conv2 = _conv3x3(channels, channels, 1, depthwise)
        self.use_add = shortcut

    def forward(self, x: Tensor) -> Tensor:
        """[B, C, H, W] -> [B, C, H, W]."""
        y = self.conv2(self.conv1(x))
        return y + x if self.use_add else y


class CSPLayer(nn.Module):
    """Cross-stage-partial layer (YOLOv5's C3): two 1x1 branches of ``out_channels / 2`` channels, the first through
    ``depth`` :class:`Bottleneck` blocks, concatenated (first, second) and merged by a 1x1 :class:`BaseConv`.

    Args:
        in_channels, out_channels: channels of the input and the output.
        depth: the number of bottlenecks.
        shortcut: the bottlenecks' residuals.
        depthwise: the bottlenecks' 3x3 blocks are :class:`DWConv`.
    """

    def __init__(self, in_channels: int, out_channels: int, depth: int = 1, shortcut: bool = True,
                 depthwise: bool = False) -> None:
        super().__init__()
        hidden = out_channels // 2
        self.conv1 = BaseConv(in_channels, hidden, 1, 1)
        self.conv2 = BaseConv(in_channels, hidden, 1, 1)
        self.conv3 = BaseConv(2 * hidden, out_channels, 1, 1)
        self.m = nn.Sequential(*[Bottleneck(hidden, shortcut, depthwise) for _ in range(depth)])

    def forward(self, x: Tensor) -> Tensor:
        """[B, in, H, W] -> [B, out, H, W]."""
        return self.conv3(torch.cat([self.m(self.conv1(x)), self.conv2(x)], dim=1))


class SPPBottleneck(nn.Module):
    """Spatial pyramid pooling (YOLOv3-SPP): a 1x1 :class:`BaseConv` to ``in_channels / 2``, the map and its
    stride-1 max-pools over each of ``kernel_sizes`` concatenated, a 1x1 :class:`BaseConv` to ``out_channels``.

    Args:
        in_channels, out_channels: channels of the input and the output.
        kernel_sizes: the max-pool windows (odd; padded to keep the size).
    """

    def __init__(self, in_channels: int, out_channels: int, kernel_sizes: tuple[int, ...] = (5, 9, 13)) -> None:
        super().__init__()
        hidden = in_channels // 2
        self.conv1 = BaseConv(in_channels, hidden, 1, 1)
        self.m = nn.ModuleList([nn.MaxPool2d(size, stride=1, padding=size // 2) for size in kernel_sizes])
        self.conv2 = BaseConv(hidden * (len(kernel_sizes) + 1), out_channels, 1, 1)

    def forward(self, x: Tensor) -> Tensor:
        """[B, in, H, W] -> [B, out, H, W]."""
        x = self.conv1(x)
        return self.conv2(torch.cat([x] + [pool(x) for pool in self.m], dim=1))


class Focus(nn.Module):
    """Space-to-depth then a :class:`BaseConv`: the four pixels of every 2x2 block become channels, in the order
    top-left, bottom-left, top-right, bottom-right (each a block of ``in_channels``).

    Args:
        in_channels, out_channels: channels of the input and the output.
        kernel_size: the convolution's kernel side (stride 1).
    """

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int = 1) -> None:
        super().__init__()
        self.conv = BaseConv(4 * in_channels, out_channels, kernel_size, 1)

    def forward(self, x: Tensor) -> Tensor:
        """[B, in, H, W] (H, W even) -> [B, out, H / 2, W / 2]."""
        top_left, top_right = x[..., ::2, ::2], x[..., ::2, 1::2]
        bottom_left, bottom_right = x[..., 1::2, ::2], x[..., 1::2, 1::2]
        return self.conv(torch.cat([top_left, bottom_left, top_right, bottom_right], dim=1))


class CSPDarknet(nn.Module):
    """CSPDarknet: a Focus stem and four stages (``dark2`` .. ``dark5``), each a stride-2 3x3 block then CSP layers;
    ``dark5`` has spatial pyramid pooling before its CSP layer, which has no residuals.

    With ``c = int(64 * width)`` and ``d = max(round(3 * depth), 1)`` (nano: c = 16, d = 1): the stem gives c channels
    at stride 2, ``dark2`` 2c at stride 4 (d bottlenecks), ``dark3`` 4c at stride 8 (3d), ``dark4`` 8c at stride 16
    (3d), ``dark5`` 16c at stride 32 (d).

    Args:
        depth: the depth multiplier.
        width: the width multiplier.
        depthwise: the 3x3 blocks (except the stem's) are :class:`DWConv`.
    """

    def __init__(self, depth: float = 0.33, width: float = 0.25, depthwise: bool = True) -> None:
        super().__init__()
        c = int(64 * width)
        d = max(round(3 * depth), 1)
        self.stem = Focus(3, c, kernel_size=3)
        self.dark2 = nn.Sequential(_conv3x3(c, 2 * c, 2, depthwise), CSPLayer(2 * c, 2 * c, d, True, depthwise))
        self.dark3 = nn.Sequential(_conv3x3(2 * c, 4 * c, 2, depthwise),
                                   CSPLayer(4 * c, 4 * c, 3 * d, True, depthwise))
        self.dark4 = nn.Sequential(_conv3x3(4 * c, 8 * c, 2, depthwise),
                                   CSPLayer(8 * c, 8 * c, 3 * d, True, depthwise))
        self.dark5 = nn.Sequential(_conv3x3(8 * c, 16 * c, 2, depthwise), SPPBottleneck(16 * c, 16 * c),
                                   CSPLayer(16 * c, 16 * c, d, False, depthwise))

    def forward(self, x: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """[B, 3, H, W] -> the outputs of ``dark3``, ``dark4``, ``dark5``: [B, 4c, H/8, W/8], [B, 8c, H/16, W/16],
        [B, 16c, H/32, W/32] (nano at 416: [B, 64, 52, 52], [B, 128, 26, 26], [B, 256, 13, 13])."""
        dark3 = self.dark3(self.dark2(self.stem(x)))
        dark4 = self.dark4(dark3)
        return dark3, dark4, self.dark5(dark4)


class YOLOPAFPN(nn.Module):
    """The backbone (:class:`CSPDarknet`, attribute ``backbone``) and YOLOX's PAFPN neck: top-down (1x1 lateral
    convolutions, nearest x2 upsampling, concatenation with the finer backbone map, a CSP layer), then bottom-up
    (stride-2 3x3 blocks, concatenation with the top-down maps, a CSP layer); the CSP layers have no residuals.

    Args:
        depth: the depth multiplier (each CSP layer has ``round(3 * depth)`` bottlenecks).
        width: the width multiplier.
        in_channels: the backbone's output channels at width 1 (strides 8, 16, 32), before ``width``.
        depthwise: the 3x3 blocks are :class:`DWConv`.
    """

    def __init__(self, depth: float = 0.33, width: float = 0.25, in_channels: tuple[int, int, int] = (256, 512, 1024),
                 depthwise: bool = True) -> None:
        super().__init__()
        self.backbone = CSPDarknet(depth, width, depthwise)
        c3, c4, c5 = (int(c * width) for c in in_channels)
        n = round(3 * depth)
        self.upsample = nn.Upsample(scale_factor=2, mode="nearest")
        self.lateral_conv0 = BaseConv(c5, c4, 1, 1)
        self.C3_p4 = CSPLayer(2 * c4, c4, n, False, depthwise)
        self.reduce_conv1 = BaseConv(c4, c3, 1, 1)
        self.C3_p3 = CSPLayer(2 * c3, c3, n, False, depthwise)
        self.bu_conv2 = _conv3x3(c3, c3, 2, depthwise)
        self.C3_n3 = CSPLayer(2 * c3, c4, n, False, depthwise)
        self.bu_conv1 = _conv3x3(c4, c4, 2, depthwise)
        self.C3_n4 = CSPLayer(2 * c4, c5, n, False, depthwise)

    def forward(self, x: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """[B, 3, H, W] -> the maps at strides 8, 16, 32: [B, c3, H/8, W/8], [B, c4, H/16, W/16], [B, c5, H/32, W/32]
        (nano at 416: [B, 64, 52, 52], [B, 128, 26, 26], [B, 256, 13, 13])."""
        x2, x1, x0 = self.backbone(x)
        fpn_out0 = self.lateral_conv0(x0)
        f_out0 = self.C3_p4(torch.cat([self.upsample(fpn_out0), x1], dim=1))
        fpn_out1 = self.reduce_conv1(f_out0)
        pan_out2 = self.C3_p3(torch.cat([self.upsample(fpn_out1), x2], dim=1))
        pan_out1 = self.C3_n3(torch.cat([self.bu_conv2(pan_out2), fpn_out1], dim=1))
        pan_out0 = self.C3_n4(torch.cat([self.bu_conv1(pan_out1), fpn_out0], dim=1))
        return pan_out2, pan_out1, pan_out0


class YOLOXHead(nn.Module):
    """YOLOX's decoupled head: per level a 1x1 stem to ``int(256 * width)`` channels, then a classification branch
    (two 3x3 blocks, a 1x1 convolution to ``num_classes`` logits) and a box branch (two 3x3 blocks, 1x1 convolutions
    to the 4 box terms and the objectness logit).

    Args:
        num_classes: the number of classes.
        width: the width multiplier.
        in_channels: the neck's channels at width 1 (strides 8, 16, 32), before ``width``.
        depthwise: the 3x3 blocks are :class:`DWConv`.
    """

    def __init__(self, num_classes: int = 80, width: float = 0.25,
                 in_channels: tuple[int, int, int] = (256, 512, 1024), depthwise: bool = True) -> None:
        super().__init__()
        self.num_classes = num_classes
        hidden = int(256 * width)
        self.stems = nn.ModuleList([BaseConv(int(c * width), hidden, 1, 1) for c in in_channels])
        self.cls_convs = nn.ModuleList([nn.Sequential(_conv3x3(hidden, hidden, 1, depthwise),
                                                      _conv3x3(hidden, hidden, 1, depthwise)) for _ in in_channels])
        self.reg_convs = nn.ModuleList([nn.Sequential(_conv3x3(hidden, hidden, 1, depthwise),
                                                      _conv3x3(hidden, hidden, 1, depthwise)) for _ in in_channels])
        self.cls_preds = nn.ModuleList([nn.Conv2d(hidden, num_classes, 1) for _ in in_channels])
        self.reg_preds = nn.ModuleList([nn.Conv2d(hidden, 4, 1) for _ in in_channels])
        self.obj_preds = nn.ModuleList([nn.Conv2d(hidden, 1, 1) for _ in in_channels])

    def levels(self, features: tuple[Tensor, ...]) -> list[dict[str, Tensor]]:
        """The head's maps per level, for the neck's maps (strides 8, 16, 32): ``features`` [B, hidden, h, w] (the
        classification branch's last features), ``class_logits`` [B, num_classes, h, w], ``box`` [B, 4, h, w] (the
        box terms of :meth:`forward`) and ``objectness`` [B, 1, h, w] (logits)."""
        out = []
        for k, x in enumerate(features):
            x = self.stems[k](x)
            cls_feat = self.cls_convs[k](x)
            reg_feat = self.reg_convs[k](x)
            out.append({"features": cls_feat, "class_logits": self.cls_preds[k](cls_feat),
                        "box": self.reg_preds[k](reg_feat), "objectness": self.obj_preds[k](reg_feat)})
        return out

    def forward(self, features: tuple[Tensor, ...]) -> Tensor:
        """The neck's maps (strides 8, 16, 32) -> logits [B, A, 5 + num_classes]: per anchor point the box terms
        (x, y, log w, log h; relative to the point's grid cell, in units of its stride), the objectness logit and the
        class logits (no sigmoid); A = the maps' pixels, level by level, row-major within a level."""
        levels = [torch.cat([level["box"], level["objectness"], level["class_logits"]], dim=1)
                  for level in self.levels(features)]
        return torch.cat([level.flatten(start_dim=2) for level in levels], dim=2).permute(0, 2, 1)


class YOLOXNano(nn.Module):
    """YOLOX-nano: :class:`YOLOPAFPN` (attribute ``backbone``, holding the :class:`CSPDarknet` as
    ``backbone.backbone``) and :class:`YOLOXHead` (``head``). Megvii's nano configuration by default (depth 0.33,
    width 0.25, depthwise 3x3 blocks, 80 COCO classes, in :data:`~vision.weights.nets.onnx_models.COCO_CLASSES`'
    order); the registered weights come through :meth:`from_onnx` / :func:`load_yolox_nano`.

    There is no BatchNorm (folded into the convolutions, see the module docstring) nor dropout, so ``train()`` and
    ``eval()`` compute the same outputs; both give gradients to every parameter.

    Args:
        num_classes: the number of classes.
        depth: the depth multiplier.
        width: the width multiplier.
        depthwise: the 3x3 blocks (except the stem's) are depthwise-separable.
        input_size: (height, width) that :meth:`detect` letterboxes to (multiples of 32; :meth:`from_onnx` takes
            the graph's, 416 x 416 for the registered weights).
    """

    #: the head's strides
    STRIDES = (8, 16, 32)

    def __init__(self, num_classes: int = 80, depth: float = 0.33, width: float = 0.25, depthwise: bool = True,
                 input_size: tuple[int, int] = (416, 416)) -> None:
        super().__init__()
        if input_size[0] % 32 or input_size[1] % 32:
            raise InputError(f"input_size must be multiples of 32, got {input_size}")
        self.input_size = (int(input_size[0]), int(input_size[1]))
        self.backbone = YOLOPAFPN(depth, width, depthwise=depthwise)
        self.head = YOLOXHead(num_classes, width, depthwise=depthwise)

    def forward(self, images: Tensor) -> dict[str, Tensor | tuple[Tensor, Tensor, Tensor]]:
        """The network on a batch.

        Args:
            images: float [B, 3, H, W], BGR in 0-255 (the ONNX input's convention; H, W multiples of 32, 416 x 416
                for the registered weights, letterboxed by :func:`~vision.weights.nets.onnx_models.yolox_letterbox`).

        Returns:
            ``features``: the PAFPN's maps at strides 8, 16, 32 (nano at 416: [B, 64, 52, 52], [B, 128, 26, 26],
            [B, 256, 13, 13]); ``raw``: [B, A, 5 + num_classes], what the ONNX graph outputs (A = 3549 at 416): per
            anchor point (:func:`~vision.weights.nets.onnx_models.yolox_anchor_points` order) the box terms (x, y,
            log w, log h, relative to its grid cell in units of its stride), the objectness probability and the class
            probabilities; ``logits``: the same with the objectness and class logits before the sigmoid (for losses).
        """
        features = self.backbone(images)
        logits = self.head(features)
        raw = torch.cat([logits[..., :4], logits[..., 4:].sigmoid()], dim=-1)
        return {"features": features, "raw": raw, "logits": logits}

    @torch.no_grad()
    def detect(self, image: np.ndarray, score_threshold: float = 0.3,
               nms_threshold: float = 0.45) -> dict[str, np.ndarray]:
        """COCO objects in ``image`` (uint8 [H, W, 3] RGB): the arguments and the result of
        :meth:`vision.weights.nets.onnx_models.YOLOXNano.detect`, with the same letterbox, grid decoding and NMS (the
        network runs on the module's device, in its current mode)."""
        height, width = self.input_size
        blob, ratio = yolox_letterbox(image, height, width)  # checks the image
        device = next(self.parameters()).device
        rows = self(torch.from_numpy(blob).to(device))["raw"][0].float().cpu().numpy()
        grid, stride = yolox_anchor_points(height, width, self.STRIDES)
        return yolox_detections(rows, grid, stride, ratio, np.shape(image)[:2], score_threshold, nms_threshold)

    @classmethod
    def from_onnx(cls, path: str | Path) -> YOLOXNano:
        """The network with the weights of the YOLOX ONNX graph at ``path`` (on the CPU, in eval mode).

        The graph is walked backwards from its output along this network's structure (:class:`_OnnxReader`): every
        node must be the operation the module performs there (convolution attributes, SiLU as ``Sigmoid`` and
        ``Mul``, the concatenation order, Focus's slices, the pools, the upsampling, the head's layout) and each
        convolution's weight and bias initializers go to that convolution's parameters. Every node of the graph must
        be reached, every weight initializer used exactly once and every parameter set exactly once; the number of
        classes is read from the output's last dimension and ``input_size`` from the input's shape.

        Raises:
            WeightsError: the file cannot be read as ONNX, or its graph is not a YOLOX graph of this configuration
                (the message names the file and the first mismatch).
        """
        path = Path(path)
        try:
            import onnx
        except ImportError as error:  # a core dependency; said plainly where an environment lacks it
            raise WeightsError(f"reading {path} needs the onnx package (pip install 'onnx>=1.17')") from error
        try:
            model = onnx.load(str(path))
        except Exception as error:  # onnx raises DecodeError, OSError, ... for a file that is not a model
            raise WeightsError(f"{path} is not a readable ONNX file: {error}") from error
        graph = model.graph
        constants = {t.name for t in graph.initializer}
        inputs = [i for i in graph.input if i.name not in constants]

        def shapes(values) -> list[list]:
            return [[d.dim_value or d.dim_param for d in v.type.tensor_type.shape.dim] for v in values]

        out_dims = shapes(graph.output)[0] if len(graph.output) == 1 else []
        in_dims = shapes(inputs)[0] if len(inputs) == 1 else []
        if not (len(out_dims) == 3 and isinstance(out_dims[2], int) and out_dims[2] > 5 and len(in_dims) == 4
                and in_dims[1] == 3 and all(isinstance(d, int) and d > 0 and d % 32 == 0 for d in in_dims[2:])):
            raise WeightsError(f"{path} is not a YOLOX graph: one input [B, 3, H, W] (H, W multiples of 32) and one "
                               f"output [B, A, 5 + classes] were expected, its inputs are {shapes(inputs)} and its "
                               f"outputs {shapes(graph.output)}")
        # the random initialisation (overwritten below) must not move the global generator
        with torch.random.fork_rng(devices=[]):
            net = cls(num_classes=out_dims[2] - 5, input_size=(in_dims[2], in_dims[3]))
        state = _OnnxReader(model, path, net).read()
        return load_state_strict(net, state, "yolox", path).eval()


def load_yolox_nano(name: str = "yolox-nano", device: str | torch.device = "cpu") -> YOLOXNano:
    """:class:`YOLOXNano` with the registered weights ``name`` (checked by sha256 through
    :func:`vision.weights.store.weights_path`), read by :meth:`YOLOXNano.from_onnx`, in eval mode on ``device``.

    Raises:
        InputError: ``name`` is not registered.
        WeightsError: the file is missing, not the registered one, or not a YOLOX-nano graph.
    """
    return YOLOXNano.from_onnx(weights_path(name)).to(device)


class _OnnxReader:
    """Reads a YOLOX ONNX graph into a :class:`YOLOXNano`'s state dict by walking it backwards from the output.

    Each ``_read_*`` method takes the name of a tensor the graph computes and the module that computes it here,
    checks that the node producing the tensor (and the nodes before it, down to the module's input) perform the
    module's operations, records the convolutions' initializers under the parameters' names, and returns the name
    of the module's input tensor (several for several inputs). Tensors reached along two paths (a CSP layer's input,
    the neck's maps the head and the bottom-up path share) are compared by name, so the wiring is checked too.
    """

    def __init__(self, model, path: Path, net: YOLOXNano) -> None:
        from onnx import helper, numpy_helper

        self.path, self.net, self.graph = path, net, model.graph
        self.attribute = helper.get_attribute_value
        self.initializers = {t.name: numpy_helper.to_array(t) for t in self.graph.initializer}
        self.producers = {name: node for node in self.graph.node for name in node.output}
        self.names = {id(module): name for name, module in net.named_modules()}
        self.visited: set[int] = set()  # id() of the graph's nodes reached
        self.weight_uses: Counter[str] = Counter()  # initializer -> times used as a convolution's weight or bias
        self.constants: set[str] = set()  # initializers checked as constants (slices, upsampling scales, shapes)
        self.state: dict[str, torch.Tensor] = {}

    def fail(self, message: str) -> WeightsError:
        return WeightsError(f"{self.path} is not a YOLOX graph of {type(self.net).__name__}'s configuration: "
                            f"{message}")

    # --- single nodes ---------------------------------------------------------------------------------------------

    def node(self, tensor: str, op_type: str, what: str):
        """The node producing ``tensor``, which must be an ``op_type`` reached for the first time."""
        node = self.producers.get(tensor)
        if node is None or node.op_type != op_type:
            found = "is a graph input or initializer" if node is None else f"comes from {node.op_type}"
            raise self.fail(f"{what}: tensor {tensor!r} should come from {op_type}, it {found}")
        if id(node) in self.visited:
            raise self.fail(f"{what}: node {node.name or tensor!r} is reached twice")
        self.visited.add(id(node))
        return node

    def attributes(self, node) -> dict:
        return {a.name: self.attribute(a) for a in node.attribute}

    def constant(self, name: str, what: str) -> list:
        if name not in self.initializers:
            raise self.fail(f"{what}: {name!r} should be a constant initializer")
        self.constants.add(name)
        return np.asarray(self.initializers[name]).reshape(-1).tolist()

    def parameter(self, name: str, target: Tensor, qualified: str, what: str) -> None:
        if name not in self.initializers:
            raise self.fail(f"{what}: {name!r} should be an initializer")
        value = self.initializers[name]
        if tuple(value.shape) != tuple(target.shape):
            raise self.fail(f"{what}: {name!r} has shape {list(value.shape)}, {qualified} is {list(target.shape)}")
        if qualified in self.state:
            raise self.fail(f"{what}: {qualified} would be set twice")
        self.weight_uses[name] += 1
        self.state[qualified] = torch.from_numpy(np.array(value, dtype=np.float32))

    def conv(self, tensor: str, conv: nn.Conv2d) -> str:
        """A ``Conv`` node with ``conv``'s attributes, weight and bias; returns its input."""
        name = self.names[id(conv)]
        node = self.node(tensor, "Conv", name)
        attrs = self.attributes(node)
        pad_h, pad_w = conv.padding  # type: ignore[misc]
        expected = {"kernel_shape": list(conv.kernel_size), "strides": list(conv.stride),
                    "pads": [pad_h, pad_w, pad_h, pad_w], "group": conv.groups, "dilations": list(conv.dilation)}
        # an absent kernel_shape is the weight's, whose shape is checked below
        found = {"kernel_shape": list(attrs.get("kernel_shape", conv.kernel_size)),
                 "strides": list(attrs.get("strides", [1, 1])),
                 "pads": list(attrs.get("pads", [0, 0, 0, 0])), "group": attrs.get("group", 1),
                 "dilations": list(attrs.get("dilations", [1, 1]))}
        if found != expected or attrs.get("auto_pad", b"NOTSET") not in (b"NOTSET", "NOTSET"):
            raise self.fail(f"{name}: convolution attributes {found}, expected {expected}")
        if len(node.input) != 3 or conv.bias is None:
            raise self.fail(f"{name}: the convolution should have a weight and a bias, its inputs are "
                            f"{list(node.input)}")
        self.parameter(node.input[1], conv.weight, f"{name}.weight", name)
        self.parameter(node.input[2], conv.bias, f"{name}.bias", name)
        return node.input[0]

    def sigmoid(self, tensor: str, what: str) -> str:
        return self.node(tensor, "Sigmoid", what).input[0]

    def silu(self, tensor: str, what: str) -> str:
        """``Mul(a, Sigmoid(a))`` (either order); returns ``a``."""
        node = self.node(tensor, "Mul", f"{what} (SiLU)")
        for a, s in (node.input, node.input[::-1]):
            sig = self.producers.get(s)
            if sig is not None and sig.op_type == "Sigmoid" and sig.input[0] == a:
                self.node(s, "Sigmoid", f"{what} (SiLU)")
                return a
        raise self.fail(f"{what}: {tensor!r} should be x * sigmoid(x) (SiLU), it multiplies {list(node.input)}")

    def concat(self, tensor: str, count: int, axis: int, what: str) -> list[str]:
        node = self.node(tensor, "Concat", what)
        found_axis = self.attributes(node).get("axis")
        if len(node.input) != count or found_axis != axis:
            raise self.fail(f"{what}: a concatenation of {count} tensors along axis {axis} was expected, got "
                            f"{len(node.input)} along axis {found_axis}")
        return list(node.input)

    def same(self, found: str, expected: str, what: str) -> None:
        if found != expected:
            raise self.fail(f"{what}: reads tensor {found!r} where the network feeds {expected!r}")

    # --- blocks ---------------------------------------------------------------------------------------------------

    def base_conv(self, tensor: str, block: BaseConv) -> str:
        return self.conv(self.silu(tensor, self.names[id(block)]), block.conv)

    def block(self, tensor: str, block: nn.Module) -> str:
        """Any block of the network with one input (dispatched on its type); returns its input."""
        if isinstance(block, BaseConv):
            return self.base_conv(tensor, block)
        if isinstance(block, DWConv):
            return self.base_conv(self.base_conv(tensor, block.pconv), block.dconv)
        if isinstance(block, nn.Sequential):
            for module in reversed(block):
                tensor = self.block(tensor, module)
            return tensor
        if isinstance(block, Bottleneck):
            return self.bottleneck(tensor, block)
        if isinstance(block, CSPLayer):
            return self.csp(tensor, block)
        if isinstance(block, SPPBottleneck):
            return self.spp(tensor, block)
        if isinstance(block, Focus):
            return self.focus(tensor, block)
        raise TypeError(f"no ONNX reading for {type(block).__name__}")

    def bottleneck(self, tensor: str, block: Bottleneck) -> str:
        name = self.names[id(block)]
        if not block.use_add:
            return self.block(self.block(tensor, block.conv2), block.conv1)
        branch, shortcut = self.node(tensor, "Add", f"{name} (residual)").input
        self.same(self.block(self.block(branch, block.conv2), block.conv1), shortcut, f"{name} (residual)")
        return shortcut

    def csp(self, tensor: str, block: CSPLayer) -> str:
        name = self.names[id(block)]
        first, second = self.concat(self.base_conv(tensor, block.conv3), 2, 1, name)
        source = self.base_conv(second, block.conv2)
        self.same(self.base_conv(self.block(first, block.m), block.conv1), source, name)
        return source

    def spp(self, tensor: str, block: SPPBottleneck) -> str:
        name = self.names[id(block)]
        source, *pooled = self.concat(self.base_conv(tensor, block.conv2), 1 + len(block.m), 1, name)
        for branch, pool in zip(pooled, block.m):
            node = self.node(branch, "MaxPool", f"{name} pool")
            size, pad = int(pool.kernel_size), int(pool.padding)  # type: ignore[arg-type]
            expected = {"kernel_shape": [size, size], "pads": [pad] * 4, "strides": [1, 1], "ceil_mode": 0}
            attrs = self.attributes(node)
            found = {"kernel_shape": list(attrs.get("kernel_shape", [])), "pads": list(attrs.get("pads", [0] * 4)),
                     "strides": list(attrs.get("strides", [1, 1])), "ceil_mode": attrs.get("ceil_mode", 0)}
            if found != expected:
                raise self.fail(f"{name}: max-pool attributes {found}, expected {expected}")
            self.same(node.input[0], source, f"{name} pool")
        return self.base_conv(source, block.conv1)

    def focus(self, tensor: str, block: Focus) -> str:
        """Four ``Slice`` pairs (rows then columns, step 2) of one input, concatenated TL, BL, TR, BR."""
        name = self.names[id(block)]
        sources = set()
        for part, (row, col) in zip(self.concat(self.base_conv(tensor, block.conv), 4, 1, name),
                                    ((0, 0), (1, 0), (0, 1), (1, 1))):
            for axis, start in ((3, col), (2, row)):
                node = self.node(part, "Slice", f"{name} slice")
                if len(node.input) != 5:
                    raise self.fail(f"{name}: a Slice with starts, ends, axes and steps was expected")
                starts, ends, axes, steps = (self.constant(x, f"{name} slice") for x in node.input[1:])
                if starts != [start] or axes != [axis] or steps != [2] or ends[0] < 2 ** 31 - 1:
                    raise self.fail(f"{name}: slice {starts}:{ends}:{steps} on axis {axes}, expected {start}::2 on "
                                    f"axis {axis}")
                part = node.input[0]
            sources.add(part)
        if len(sources) != 1:
            raise self.fail(f"{name}: the four slices read different tensors {sorted(sources)}")
        return sources.pop()

    def upsample(self, tensor: str, what: str) -> str:
        """Nearest-neighbour x2 ``Resize`` (opset 11: input, roi, scales)."""
        node = self.node(tensor, "Resize", what)
        attrs = self.attributes(node)
        if attrs.get("mode") not in (b"nearest", "nearest") or len(node.input) != 3:
            raise self.fail(f"{what}: a nearest Resize with scales was expected, got {attrs} {list(node.input)}")
        self.constant(node.input[1], what)  # the roi, unused by the nearest mode
        scales = self.constant(node.input[2], what)
        if scales != [1.0, 1.0, 2.0, 2.0]:
            raise self.fail(f"{what}: upsampling scales {scales}, expected [1, 1, 2, 2]")
        return node.input[0]

    # --- the network ----------------------------------------------------------------------------------------------

    def head(self, tensor: str, batch: int) -> list[str]:
        """``Transpose(Concat(Reshape(level, [B, 5 + C, -1]) for each level))``; returns the three neck maps."""
        head = self.net.head
        node = self.node(tensor, "Transpose", "head output")
        if list(self.attributes(node).get("perm", [])) != [0, 2, 1]:
            raise self.fail("head output: a transposition (0, 2, 1) was expected")
        maps = []
        for k, level in enumerate(self.concat(node.input[0], len(head.stems), 2, "head levels")):
            reshape = self.node(level, "Reshape", f"head level {k}")
            shape = self.constant(reshape.input[1], f"head level {k}")
            if shape != [batch, 5 + head.num_classes, -1]:
                raise self.fail(f"head level {k}: reshape to {shape}, expected [{batch}, {5 + head.num_classes}, -1]")
            box, objectness, classes = self.concat(reshape.input[0], 3, 1, f"head level {k}")
            reg_feat = self.conv(box, head.reg_preds[k])
            self.same(self.conv(self.sigmoid(objectness, f"head level {k}"), head.obj_preds[k]), reg_feat,
                      f"head level {k} objectness")
            stem = self.block(reg_feat, head.reg_convs[k])
            cls_feat = self.conv(self.sigmoid(classes, f"head level {k}"), head.cls_preds[k])
            self.same(self.block(cls_feat, head.cls_convs[k]), stem, f"head level {k} classes")
            maps.append(self.base_conv(stem, head.stems[k]))
        return maps

    def neck(self, pan_out2: str, pan_out1: str, pan_out0: str) -> tuple[str, str, str]:
        """The PAFPN from its outputs back to the backbone's three maps."""
        fpn = self.net.backbone
        p_out0, fpn_out0 = self.concat(self.block(pan_out0, fpn.C3_n4), 2, 1, "C3_n4 input")
        self.same(self.block(p_out0, fpn.bu_conv1), pan_out1, "bu_conv1")
        p_out1, fpn_out1 = self.concat(self.block(pan_out1, fpn.C3_n3), 2, 1, "C3_n3 input")
        self.same(self.block(p_out1, fpn.bu_conv2), pan_out2, "bu_conv2")
        up1, x2 = self.concat(self.block(pan_out2, fpn.C3_p3), 2, 1, "C3_p3 input")
        self.same(self.upsample(up1, "upsample of reduce_conv1"), fpn_out1, "C3_p3 input")
        f_out0 = self.block(fpn_out1, fpn.reduce_conv1)
        up0, x1 = self.concat(self.block(f_out0, fpn.C3_p4), 2, 1, "C3_p4 input")
        self.same(self.upsample(up0, "upsample of lateral_conv0"), fpn_out0, "C3_p4 input")
        return x2, x1, self.block(fpn_out0, fpn.lateral_conv0)

    def read(self) -> dict[str, torch.Tensor]:
        """The state dict; raises :class:`WeightsError` at the first mismatch."""
        graph = self.graph
        inputs = [i for i in graph.input if i.name not in self.initializers]  # one [B, 3, H, W] (from_onnx checks)
        dims = [d.dim_value for d in inputs[0].type.tensor_type.shape.dim]
        darknet = self.net.backbone.backbone
        x2, x1, x0 = self.neck(*self.head(graph.output[0].name, dims[0]))
        self.same(self.block(x0, darknet.dark5), x1, "dark5")
        self.same(self.block(x1, darknet.dark4), x2, "dark4")
        self.same(self.block(self.block(self.block(x2, darknet.dark3), darknet.dark2), darknet.stem),
                  inputs[0].name, "stem")

        unreached = [node.name or node.output[0] for node in graph.node if id(node) not in self.visited]
        if unreached:
            raise self.fail(f"{len(unreached)} nodes are not part of the network: {unreached[:5]}")
        reused = sorted(name for name, uses in self.weight_uses.items() if uses > 1)
        unused = sorted(set(self.initializers) - set(self.weight_uses) - self.constants)
        if reused or unused:
            raise self.fail(f"initializers used more than once {reused[:5]}, unused {unused[:5]}")
        unset = sorted(set(dict(self.net.named_parameters())) - set(self.state))
        if unset:
            raise self.fail(f"parameters not found in the graph: {unset[:5]}")
        return self.state
