#!/usr/bin/env python
"""Build the AIGV forensics benchmark: ``python datasets/prepare_aigv.py --out datasets/aigv [--help]``.

The same as the console script ``vision-prepare-aigv`` (:mod:`vision.prepare.aigv`); the package must be
installed (``make setup`` or ``pip install -e .``).
"""

import sys

from vision.prepare.aigv import main

if __name__ == "__main__":
    sys.exit(main())
