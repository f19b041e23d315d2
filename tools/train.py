#!/usr/bin/env python
"""Train any task: ``python tools/train.py --config configs/geometry/tiny.yaml [overrides] [--ckpt_path CKPT]``.

The same as ``vision train`` (:mod:`vision.cli.train`), kept as the README's command; the package must be installed
(``make setup`` or ``pip install -e .``).
"""

import sys

from vision.cli.train import main

if __name__ == "__main__":
    sys.exit(main())
