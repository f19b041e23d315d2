#!/usr/bin/env python
"""Write a synthetic COCO-format split: ``python tools/make_synthetic.py --out DIR --split NAME [...]``.

The same as the console script ``vision-synthetic`` (:mod:`vision.cli.synthetic`); the package must be installed
(``make setup`` or ``pip install -e .``).
"""

import sys

from vision.cli.synthetic import main

if __name__ == "__main__":
    sys.exit(main())
