"""OOV detector inference speed: images per second at the tiny size, vocabulary embeddings cached.

Measures (1) the model alone (forward + postprocess on a [B, 3, S, S] batch, text table precomputed) and
(2) the whole predictor on uint8 frames (resize + forward + postprocess + conversion), after warm-up, and the
cost of a vocabulary change (first encode vs cached). Ratios are against (1) in the same run.

``--config C`` adds a row for the detector a training config defines (its module as the training CLI,
:class:`vision.training.cli.VisionCLI`, builds it, at ``--size``; random weights), so a change of architecture is
timed against the default ``DetectionConfig`` in the same run.

    .venv/bin/python benchmarks/bench_oovdet_speed.py --size 64 --batch 16 --threads 1 \
        --config configs/detection/tiny.yaml
"""

from __future__ import annotations

import argparse
import os
import time
import warnings

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402

from vision.detection.predictor import DetectorPredictor  # noqa: E402
from vision.detection.task import DetectionConfig, build_model  # noqa: E402
from vision.detection.vocabulary import shared_text_encoder  # noqa: E402


def _rate(fn, images: int, repeats: int) -> float:
    fn()  # warm-up
    start = time.perf_counter()
    for _ in range(repeats):
        fn()
    return images * repeats / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=64)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--checkpoint", default=None, help="an OOVDetModule checkpoint (default: random weights)")
    parser.add_argument("--config", default=None, help="also time the detector of this training config (YAML)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    vocabulary = ["cube", "sphere", "cylinder", "cone", "torus", "bowl", "bottle", "mug", "table", "chair", "lamp",
                  "tree", "capsule", "vase", "snowman", "bench"]
    encoder = shared_text_encoder()
    start = time.perf_counter()
    if args.checkpoint:
        predictor = DetectorPredictor.from_checkpoint(args.checkpoint, vocabulary=vocabulary, batch_size=args.batch)
    else:
        config = DetectionConfig(image_size=args.size)
        predictor = DetectorPredictor(build_model(config), vocabulary, config.image_size, encoder=encoder,
                                      prompt_template=config.prompt_template, batch_size=args.batch)
    first_s = time.perf_counter() - start
    start = time.perf_counter()
    predictor.set_vocabulary(vocabulary)
    cached_s = time.perf_counter() - start
    model, size = predictor.model, predictor.image_size  # a checkpoint's input size, else --size
    images = torch.rand(args.batch, 3, size, size)
    frames = (np.random.default_rng(0).random((args.batch, size, size, 3)) * 255).astype(np.uint8)

    @torch.no_grad()
    def model_only() -> None:
        model.postprocess(model(images), predictor.text, [(size, size)] * args.batch)

    model_ips = _rate(model_only, args.batch, args.repeats)
    extra = None
    if args.config:
        from vision.training.cli import VisionCLI

        with warnings.catch_warnings():  # the CLI parses these args, not this script's own command line
            warnings.filterwarnings("ignore", message="LightningCLI's args parameter")
            cli = VisionCLI(args=["--config", args.config, "--model.init_args.config.image_size", str(size)],
                            run=False)
        other = cli.model.model.eval()

        @torch.no_grad()
        def config_model() -> None:
            other.postprocess(other(images), predictor.text, [(size, size)] * args.batch)

        extra = (f"{args.config} model", _rate(config_model, args.batch, args.repeats))
    predictor_ips = _rate(lambda: predictor.predict(list(frames)), args.batch, args.repeats)
    model_name = args.checkpoint or "random tiny model"
    print(f"OOVDet speed: {model_name}, {size}px, batch {args.batch}, {args.threads} thread(s), "
          f"{len(vocabulary)}-class vocabulary")
    print(f"{'path':34s}{'images/s':>10s}{'ratio':>8s}")
    print(f"{'model (forward + NMS)':34s}{model_ips:10.1f}{1.0:8.2f}")
    if extra is not None:
        print(f"{extra[0]:34s}{extra[1]:10.1f}{extra[1] / model_ips:8.2f}")
    print(f"{'predictor (uint8 frames)':34s}{predictor_ips:10.1f}{predictor_ips / model_ips:8.2f}")
    print(f"vocabulary: first build incl. text encoding {first_s:.2f} s, cached re-set {cached_s * 1000:.2f} ms")


if __name__ == "__main__":
    main()
