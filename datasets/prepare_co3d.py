#!/usr/bin/env python
"""CO3Dv2 category -> a multi-view split (one video per sequence, cameras, optional depth, mask tracks):
``python datasets/prepare_co3d.py ROOT --category apple --out OUT [--sequences S1,S2 | --set-list NAME]
[--frames N] [--scale 1|mean] [--depth] [--link] [--help]``.

The same as :func:`vision.prepare.co3d.main`; the package must be installed (``make setup`` or
``pip install -e .``).
"""

import sys

from vision.prepare.co3d import main

if __name__ == "__main__":
    sys.exit(main())
