#!/usr/bin/env python
"""GenVideo-style folders -> splits: ``python datasets/prepare_genvideo.py ROOT --out OUT [--help]``.

The same as the console script ``vision-prepare-genvideo`` (:mod:`vision.prepare.genvideo`); the package must be
installed (``make setup`` or ``pip install -e .``).
"""

import sys

from vision.prepare.genvideo import main

if __name__ == "__main__":
    sys.exit(main())
