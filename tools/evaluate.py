#!/usr/bin/env python
"""Score a results file against a split: ``python tools/evaluate.py --split S.json --results R.json --task T``.

The same as the console script ``vision-evaluate`` (:mod:`vision.cli.evaluate`); the package must be installed
(``make setup`` or ``pip install -e .``).
"""

import sys

from vision.cli.evaluate import main

if __name__ == "__main__":
    sys.exit(main())
