#!/usr/bin/env python
"""COLMAP text model -> one unordered multi-view split:
``python datasets/prepare_colmap.py MODEL --images IMAGES --out OUT [--scale 1|mean] [--depth DIR] [--help]``.

The same as :func:`vision.prepare.colmap.main`; the package must be installed (``make setup`` or
``pip install -e .``).
"""

import sys

from vision.prepare.colmap import main

if __name__ == "__main__":
    sys.exit(main())
