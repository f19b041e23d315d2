#!/usr/bin/env python
"""OOV-COCO / OOV-VOC-style splits from a COCO file: ``python datasets/prepare_oov_coco.py --help``.

The same as the console script ``vision-prepare-oov-coco`` (:mod:`vision.prepare.oov_coco`); the package must be
installed (``make setup`` or ``pip install -e .``).
"""

import sys

from vision.prepare.oov_coco import main

if __name__ == "__main__":
    sys.exit(main())
