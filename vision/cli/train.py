"""``vision-train`` (and ``python tools/train.py``): train, validate, test or predict any task from a YAML config.

    vision-train --config configs/geometry/tiny.yaml [overrides] [--ckpt_path CKPT]
    vision-train test --config configs/detection/tiny.yaml --ckpt_path CKPT

The work is :func:`vision.training.cli.main` (``fit`` is the default subcommand); this wrapper gives it the
``main(argv) -> int`` shape of a console script and keeps the Hugging Face hub offline unless the environment
says otherwise (the text encoder's weights are installed as a package).
"""

from __future__ import annotations

import os
from collections.abc import Sequence

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the training CLI on ``argv`` (None: ``sys.argv[1:]``); 0 when it finishes. Bad input exits with status
    2 and one ``error:`` line (raised as ``SystemExit`` by :func:`vision.training.cli.main`)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    from vision.training.cli import main as run_cli

    run_cli(argv)
    return 0
