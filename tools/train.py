#!/usr/bin/env python
"""Train any task: ``python tools/train.py --config configs/geometry/tiny.yaml [overrides] [--ckpt_path CKPT]``."""

import os
import sys
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from vision.training.cli import main  # noqa: E402

if __name__ == "__main__":
    main()
