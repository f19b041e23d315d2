"""``vision-predict --task forensics``: the forensic detector on a video (or images as frames), with its evidence
graph (the registry's ``run`` of the forensics task, :data:`vision.tasks.PARTS`).

  vision-predict --task forensics [--ckpt CKPT] VIDEO [--out DIR]
      -> DIR/report.json + DIR/report.html

Without ``--ckpt`` it runs :data:`DEFAULT_CKPT`, the detector of real generators' video that
``make train-forensics-public`` trains (configs/forensics/public.yaml).
"""

from __future__ import annotations

import argparse
from pathlib import Path

__all__ = ["DEFAULT_CKPT", "run"]

#: ``(checkpoint, what writes it)`` run when ``--ckpt`` is not given (the registry part ``default_ckpt``)
DEFAULT_CKPT = ("runs/forensics/public/checkpoints/last.ckpt", "make train-forensics-public MIRRORS=DIR")


def run(args: argparse.Namespace, out: Path) -> None:
    from vision.cli.batch import loaded
    from vision.cli.inputs import load_input, print_notes
    from vision.forensics.predictor import ForensicsPredictor, analyze_to_report

    source = load_input(args.input, args.max_frames, args.max_pixels)
    # a video is analysed from its file (the codec tool reads the bitstream); images as frames at the working size
    video = source.video if source.video is not None else source.working_frames()
    predictor = loaded(args, "forensics", lambda: ForensicsPredictor.from_checkpoint(
        args.ckpt, device=args.device, precision=args.precision))
    report = analyze_to_report(predictor, video, out, max_pixels=source.max_pixels)
    print_notes(source, drawn=False)
    probability = report["probability"]
    shown = "n/a" if probability is None else f"{probability:.3f}"
    print(f"verdict: {report['verdict']} (p_generated={shown}); wrote {report['json']} and {report['html']}")
