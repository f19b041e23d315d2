#!/usr/bin/env python
"""BURST (TAO) annotation file -> one COCO-video split:
``python datasets/prepare_burst.py ANNOTATIONS.json --frames TAO_FRAMES --out OUT [--name N] [--link] [--help]``.

The same as the console script ``vision-prepare-burst`` (:mod:`vision.prepare.burst`); the package must be
installed (``make setup`` or ``pip install -e .``).
"""

import sys

from vision.prepare.burst import main

if __name__ == "__main__":
    sys.exit(main())
