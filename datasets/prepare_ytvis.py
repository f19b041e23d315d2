#!/usr/bin/env python
"""YouTube-VIS 2019 / 2021 / LV-VIS annotation file -> one COCO-video split:
``python datasets/prepare_ytvis.py ANNOTATIONS.json --frames JPEGImages --out OUT [--name N] [--link] [--help]``.

The same as the console script ``vision-prepare-ytvis`` (:mod:`vision.prepare.ytvis`); the package must be
installed (``make setup`` or ``pip install -e .``).
"""

import sys

from vision.prepare.ytvis import main

if __name__ == "__main__":
    sys.exit(main())
