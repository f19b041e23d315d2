#!/usr/bin/env python
"""Real frames labelled by the YOLOX-nano teacher, as COCO splits: ``python datasets/prepare_real_detection.py --help``.

The same as the console script ``vision-prepare-real-detection`` (:mod:`vision.prepare.teacher`); the package must
be installed (``make setup`` or ``pip install -e .``).
"""

import sys

from vision.prepare.teacher import main

if __name__ == "__main__":
    sys.exit(main())
