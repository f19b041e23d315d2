#!/usr/bin/env python
"""Train any task: ``python tools/train.py --config configs/geometry/tiny.yaml [overrides] [--ckpt_path CKPT]``.

The same as the console script ``vision-train`` (:mod:`vision.cli.train`); the package must be installed
(``make setup`` or ``pip install -e .``).
"""

import sys

from vision.cli.train import main

if __name__ == "__main__":
    sys.exit(main())
