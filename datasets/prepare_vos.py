#!/usr/bin/env python
"""DAVIS 2017 / YouTube-VOS / MOSE folders -> one COCO-video split:
``python datasets/prepare_vos.py ROOT --out OUT [--layout davis|youtube|mose] [--subset S] [--link] [--help]``.

The same as the console script ``vision-prepare-vos`` (:mod:`vision.prepare.vos`); the package must be
installed (``make setup`` or ``pip install -e .``).
"""

import sys

from vision.prepare.vos import main

if __name__ == "__main__":
    sys.exit(main())
