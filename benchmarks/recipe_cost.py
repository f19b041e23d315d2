#!/usr/bin/env python
"""Estimated GPU cost of each paper-scale recipe (docs/recipes.md), from the FLOPs of one training step.

No GPU is needed: each recipe's model is built at full size on PyTorch's ``meta`` device (shapes, no storage) from
the recipe's own config (``model.init_args.config``, the per-GPU batch, the views), and
:class:`torch.utils.flop_counter.FlopCounterMode` counts the forward pass of one per-GPU batch:

- geometry (everything trains; gradient checkpointing of the aggregator): step = 3 x forward (forward + backward)
  + 1 x the aggregator's forward (recomputed in the backward pass);
- tracking (the backbone frozen): step = the backbone's forward (``encode``, no gradients) + 3 x the mask decoder's
  forward (``decode`` with the recipe's ``max_objects`` object slots, each with a point, a box and its caption);
- detection (everything trains): step = 3 x the detector's forward on the per-GPU batch of images.

The backward pass is taken as twice the forward (the usual rule for matmul-dominated nets); losses, the optimiser and
the data pipeline are not counted. Time per step = FLOPs / (``--peak`` TFLOP/s x ``--utilisation``), per GPU;
GPU-hours = steps x time per step x GPUs (``--gpus``: data parallel, each GPU takes one per-GPU batch a step).
Memory: weights (fp32), and for the trained parameters their gradients and AdamW's two moments (16 bytes a trained
parameter in all, 4 a frozen one); activations are not estimated (bf16 autocast and checkpointing change them).

``python benchmarks/recipe_cost.py [--peak 989] [--utilisation 0.4] [--gpus 8]``
(about 40 s of CPU; the tracking decoder's CPU run holds the full model's weights, about 5 GB of memory, for a moment.)
(989 TFLOP/s: an H100 SXM's dense bf16 peak; 0.4: a typical share of it for a ViT training step.)
"""

from __future__ import annotations

import argparse

import torch
from torch.utils.flop_counter import FlopCounterMode

from vision.cli.recipe import config_path, load_config


def _flops(run) -> float:
    """FLOPs of ``run()`` (with autograd on: FlopCounterMode's module tracker needs it; on ``meta`` it costs
    nothing)."""
    with FlopCounterMode(display=False) as counter:
        run()
    return float(counter.get_total_flops())


def _params(module: torch.nn.Module, trained: bool) -> tuple[int, int]:
    """(trained, frozen) parameter counts."""
    total = sum(p.numel() for p in module.parameters())
    grad = sum(p.numel() for p in module.parameters() if p.requires_grad) if trained else 0
    return grad, total - grad


def geometry_step(config: dict) -> tuple[float, int, int]:
    from vision.geometry.task import GeometryConfig, build_model

    fields, data = config["model"]["init_args"]["config"], config["data"]["init_args"]
    size = int(fields["image_size"])
    with torch.device("meta"):
        model = build_model(GeometryConfig.from_value(fields))
        images = torch.zeros(int(data["batch_size"]), int(data["views"]), 3, size, size)
    backbone = model.backbone
    backbone.eval()  # the forward once (checkpointing recomputes only in a backward pass)
    forward = _flops(lambda: backbone(images))
    aggregator = _flops(lambda: backbone.aggregate(images))
    frozen = set(config["model"]["init_args"].get("freeze") or [])
    modules = dict(backbone.named_modules())
    for name in frozen:
        modules[name].requires_grad_(False)
    trained, fixed = _params(model, True)
    return 3 * forward + aggregator, trained, fixed


def tracking_step(config: dict) -> tuple[float, int, int]:
    from vision.tracking.prompts import BOX_BR, BOX_TL, POSITIVE, Prompts
    from vision.tracking.task import TrackingConfig, build_model

    init, data = config["model"]["init_args"], config["data"]["init_args"]
    fields = TrackingConfig.from_value(init["config"])
    size, views, batch = fields.image_size, int(data["views"]), int(data["batch_size"])
    objects = int(init["max_objects"])
    with torch.device("meta"):
        model = build_model(fields)
        images = torch.zeros(batch, views, 3, size, size)
    model.eval()
    encode = _flops(lambda: model.encode(images))
    encoded = model.encode(images)
    if init.get("freeze_backbone"):
        model.backbone.requires_grad_(False)
    trained, fixed = _params(model, True)
    # the decoder branches on its prompts' values, which the meta device does not have: it runs on the CPU, at full
    # size, on zero features of the encoder's output shapes (its FLOPs depend on shapes only)
    model.to_empty(device="cpu")
    encoded = {k: torch.zeros(v.shape, dtype=v.dtype) if isinstance(v, torch.Tensor) else v for k, v in encoded.items()}
    prompts = Prompts.empty(batch, objects, (size, size), num_points=3, text_dim=fields.text_dim)
    prompts.valid.fill_(True)
    prompts.view.fill_(0)
    prompts.has_text.fill_(fields.text_encoder is not None)
    prompts.labels[..., 0], prompts.labels[..., 1], prompts.labels[..., 2] = POSITIVE, BOX_TL, BOX_BR
    prompts.points[..., 0, :], prompts.points[..., 1, :], prompts.points[..., 2, :] = size / 2, size / 4, 3 * size / 4
    with torch.no_grad():
        decode = _flops(lambda: model.decode(encoded, prompts))
    return encode + 3 * decode, trained, fixed


def detection_step(config: dict) -> tuple[float, int, int]:
    from vision.detection.task import DetectionConfig, build_model

    fields = DetectionConfig.from_value(config["model"]["init_args"]["config"])
    batch = int(config["data"]["init_args"]["batch_size"])
    with torch.device("meta"):
        model = build_model(fields)
        images = torch.zeros(batch, 3, fields.image_size, fields.image_size)
    model.eval()
    forward = _flops(lambda: model(images))
    trained, fixed = _params(model, True)
    return 3 * forward, trained, fixed


STEPS = {"geometry": geometry_step, "tracking": tracking_step, "detection-voc": detection_step,
         "detection-coco": detection_step}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--peak", type=float, default=989.0, help="the GPU's dense bf16 peak, TFLOP/s")
    parser.add_argument("--utilisation", type=float, default=0.4, help="share of the peak a training step reaches")
    parser.add_argument("--gpus", type=int, default=8, help="data-parallel GPUs (the recipes' node)")
    args = parser.parse_args()
    rate = args.peak * 1e12 * args.utilisation
    print(f"assumed: {args.peak:g} TFLOP/s peak x {args.utilisation:g} utilisation = {rate / 1e12:.0f} TFLOP/s per "
          f"GPU; {args.gpus} GPUs in data parallel\n")
    print("| recipe | per-GPU batch | TFLOP / step / GPU | s / step | steps | GPU-hours | trained params (M) | "
          "frozen params (M) | weights + grads + AdamW (GB) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, count in STEPS.items():
        config = load_config(config_path(name))
        flops, trained, frozen = count(config)
        data = config["data"]["init_args"]
        batch = f"{data['batch_size']} x {data['views']} views" if "views" in data else f"{data['batch_size']} images"
        steps = int(config["trainer"]["max_steps"])
        seconds = flops / rate
        hours = steps * seconds * args.gpus / 3600
        memory = (16 * trained + 4 * frozen) / 1e9
        print(f"| {name} | {batch} | {flops / 1e12:.1f} | {seconds:.3f} | {steps} | {hours:.0f} | {trained / 1e6:.0f} "
              f"| {frozen / 1e6:.0f} | {memory:.1f} |")


if __name__ == "__main__":
    main()
