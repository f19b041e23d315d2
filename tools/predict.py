#!/usr/bin/env python
"""Run a trained model on an image, a folder of images or a video: ``python tools/predict.py --help``.

The same as the console script ``vision-predict`` (:mod:`vision.cli.predict`); the package must be installed
(``make setup`` or ``pip install -e .``).
"""

import sys

from vision.cli.predict import main

if __name__ == "__main__":
    sys.exit(main())
