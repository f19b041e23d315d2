"""Regenerate the SAM 2.1 head parity fixtures in this folder from SAM 2's own reference code (see README.md here).

Usage (the reference is NOT part of this repository; unpack the PyPI sdist somewhere else first):

    .venv/bin/pip download --no-deps --no-build-isolation --no-binary :all: sam2==1.1.0 -d /tmp/sam2src
    tar xzf /tmp/sam2src/sam2-1.1.0.tar.gz -C /tmp/sam2src
    .venv/bin/python tests/tracking/data/sam2_small/regenerate.py /tmp/sam2src/sam2-1.1.0

It builds SAM 2's ``PromptEncoder`` and ``MaskDecoder`` (with its ``TwoWayTransformer``) as
``SAM2Base._build_sam_heads`` wires them for SAM 2.1 (``iou_prediction_use_sigmoid``, ``pred_obj_scores``,
``pred_obj_scores_mlp``), at the small configuration :data:`REFERENCE_CONFIG` (without ``use_high_res_features``,
which G2TAM does not have), re-draws the parameters with a fixed seed, runs them in eval mode and writes, next to
this script:

- ``state_dict.safetensors``: the two modules' state dicts under SAM 2.1 checkpoint key names
  (``sam_prompt_encoder.*``, ``sam_mask_decoder.*``), float32;
- ``io.safetensors``: the inputs (``image_embedding [1, 32, 6, 8]``, ``points [2, 2, 2]``, ``point_labels [2, 2]``,
  ``boxes [2, 4]``) and, per prompt kind ``point`` / ``box``, the reference ``*_sparse``, ``*_dense``,
  ``*_masks [2, 4, 24, 32]`` (low-resolution logits of all 4 mask tokens: single-mask token first),
  ``*_iou [2, 4]`` and ``*_object_score [2, 1]``, plus ``image_pe [1, 32, 6, 8]``;
- ``sam2_1_head_shapes.json``: key -> shape of the prompt encoder and mask decoder as SAM 2.1 builds them at full
  size (:data:`FULL_CONFIG`: 256-d, 1024 x 1024 input, high-resolution convs), for the key-map check without a
  checkpoint.

Only SAM 2's modules are imported from the given path (its package ``__init__`` files, which pull hydra, are not
run); no reference code is copied here.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
import types
from pathlib import Path

import torch
from safetensors.torch import save_file

HERE = Path(__file__).resolve().parent
SEED = 0
DIM = 32
GRID_HW = (6, 8)  # image embedding size (not square: catches h / w swaps)
IMAGE_HW = (96, 128)  # SAM's input_image_size: 16 x the grid
REFERENCE_CONFIG = {
    "prompt_encoder": dict(embed_dim=DIM, image_embedding_size=GRID_HW, input_image_size=IMAGE_HW, mask_in_chans=16),
    "transformer": dict(depth=2, embedding_dim=DIM, mlp_dim=8 * DIM, num_heads=2),
    "mask_decoder": dict(num_multimask_outputs=3, transformer_dim=DIM, iou_head_depth=3, iou_head_hidden_dim=DIM,
                         use_high_res_features=False, iou_prediction_use_sigmoid=True, pred_obj_scores=True,
                         pred_obj_scores_mlp=True, use_multimask_token_for_obj_ptr=True),
}

#: SAM2Base._build_sam_heads with SAM 2.1's yaml values (sam2.1_hiera_{t,s,b+,l}.yaml share them)
FULL_CONFIG = {
    "prompt_encoder": dict(embed_dim=256, image_embedding_size=(64, 64), input_image_size=(1024, 1024),
                           mask_in_chans=16),
    "transformer": dict(depth=2, embedding_dim=256, mlp_dim=2048, num_heads=8),
    "mask_decoder": dict(num_multimask_outputs=3, transformer_dim=256, iou_head_depth=3, iou_head_hidden_dim=256,
                         use_high_res_features=True, iou_prediction_use_sigmoid=True, pred_obj_scores=True,
                         pred_obj_scores_mlp=True, use_multimask_token_for_obj_ptr=True),
}


def import_reference(root: Path):
    """SAM 2's prompt encoder / mask decoder / transformer modules from an unpacked sdist at ``root``.

    The ``sam2``, ``sam2.modeling``, ``sam2.modeling.sam`` and ``sam2.utils`` packages are registered as empty
    shells pointing at the source folders so that their ``__init__`` (which initialises hydra) is not run."""
    pkg = root / "sam2"
    if not (pkg / "modeling" / "sam" / "mask_decoder.py").is_file():
        raise SystemExit(f"{root} is not an unpacked sam2 sdist (no sam2/modeling/sam/mask_decoder.py)")
    for name, folder in (("sam2", pkg), ("sam2.modeling", pkg / "modeling"),
                         ("sam2.modeling.sam", pkg / "modeling" / "sam"), ("sam2.utils", pkg / "utils")):
        shell = types.ModuleType(name)
        shell.__path__ = [str(folder)]
        sys.modules[name] = shell
    prompt = importlib.import_module("sam2.modeling.sam.prompt_encoder")
    decoder = importlib.import_module("sam2.modeling.sam.mask_decoder")
    transformer = importlib.import_module("sam2.modeling.sam.transformer")
    return prompt.PromptEncoder, decoder.MaskDecoder, transformer.TwoWayTransformer


def randomize_(module: torch.nn.Module, generator: torch.Generator) -> None:
    """Re-draw every parameter so no part is trivial: weights U[-1.5/sqrt(fan_in), +], 1-D parameters (biases,
    norms) their value + N(0, 0.1^2), embeddings N(0, 1)."""
    with torch.no_grad():
        for name, p in module.named_parameters():
            if p.dim() == 1:
                p.add_(0.1 * torch.randn(p.shape, generator=generator))
            elif "embed" in name or "token" in name:
                p.copy_(torch.randn(p.shape, generator=generator))
            else:
                bound = 1.5 / p[0].numel() ** 0.5
                p.copy_((torch.rand(p.shape, generator=generator) * 2 - 1) * bound)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("reference", type=Path, help="unpacked sam2-1.1.0 sdist (the folder holding sam2/)")
    args = parser.parse_args()
    PromptEncoder, MaskDecoder, TwoWayTransformer = import_reference(args.reference)

    torch.manual_seed(SEED)
    cfg = REFERENCE_CONFIG
    prompt_encoder = PromptEncoder(**cfg["prompt_encoder"]).eval()
    mask_decoder = MaskDecoder(transformer=TwoWayTransformer(**cfg["transformer"]), **cfg["mask_decoder"]).eval()
    generator = torch.Generator().manual_seed(SEED)
    randomize_(prompt_encoder, generator)
    randomize_(mask_decoder, generator)

    h, w = IMAGE_HW
    image_embedding = torch.randn(1, DIM, *GRID_HW, generator=generator)
    points = torch.rand(2, 2, 2, generator=generator) * torch.tensor([w - 1.0, h - 1.0])
    point_labels = torch.tensor([[1, 0], [1, 1]])
    corners = torch.rand(2, 2, 2, generator=generator) * torch.tensor([w - 1.0, h - 1.0])
    boxes = torch.cat([corners.amin(1), corners.amax(1)], dim=1)  # XYXY

    io = {"image_embedding": image_embedding, "points": points, "point_labels": point_labels.float(), "boxes": boxes}
    with torch.no_grad():
        io["image_pe"] = prompt_encoder.get_dense_pe()
        for kind, kwargs in (("point", dict(points=(points, point_labels), boxes=None, masks=None)),
                             ("box", dict(points=None, boxes=boxes, masks=None))):
            sparse, dense = prompt_encoder(**kwargs)
            masks, iou, _, object_score = mask_decoder.predict_masks(
                image_embeddings=image_embedding, image_pe=io["image_pe"], sparse_prompt_embeddings=sparse,
                dense_prompt_embeddings=dense, repeat_image=True)
            io.update({f"{kind}_sparse": sparse, f"{kind}_dense": dense, f"{kind}_masks": masks, f"{kind}_iou": iou,
                       f"{kind}_object_score": object_score})

    state = {**{"sam_prompt_encoder." + k: v for k, v in prompt_encoder.state_dict().items()},
             **{"sam_mask_decoder." + k: v for k, v in mask_decoder.state_dict().items()}}
    save_file({k: v.contiguous().float() for k, v in state.items()}, str(HERE / "state_dict.safetensors"))
    save_file({k: v.contiguous().float() for k, v in io.items()}, str(HERE / "io.safetensors"))
    with torch.device("meta"):
        full_pe = PromptEncoder(**FULL_CONFIG["prompt_encoder"])
        full_dec = MaskDecoder(transformer=TwoWayTransformer(**FULL_CONFIG["transformer"]),
                               **FULL_CONFIG["mask_decoder"])
    shapes = {**{"sam_prompt_encoder." + k: list(v.shape) for k, v in full_pe.state_dict().items()},
              **{"sam_mask_decoder." + k: list(v.shape) for k, v in full_dec.state_dict().items()}}
    lines = [f"  {json.dumps(k)}: {json.dumps(v)}" for k, v in shapes.items()]
    (HERE / "sam2_1_head_shapes.json").write_text("{\n" + ",\n".join(lines) + "\n}\n")
    for name, value in io.items():
        print(f"{name:22s} {tuple(value.shape)} std {float(value.detach().float().std()):.3g}")


if __name__ == "__main__":
    main()
