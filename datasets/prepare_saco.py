#!/usr/bin/env python
"""SA-Co (Gold / Silver images, VEval videos) annotation file -> one COCO-video split:
``python datasets/prepare_saco.py ANNOTATIONS.json --media MEDIA --out OUT [--name N] [--link] [--help]``.

The same as the console script ``vision-prepare-saco`` (:mod:`vision.prepare.saco`); the package must be
installed (``make setup`` or ``pip install -e .``).
"""

import sys

from vision.prepare.saco import main

if __name__ == "__main__":
    sys.exit(main())
