#!/usr/bin/env python
"""Fetch OpenCV's real sample videos from Debian's opencv-doc: ``python datasets/fetch_opencv_samples.py --out
datasets/opencv_samples``.

The same as the console script ``vision-fetch-opencv-samples`` (:mod:`vision.prepare.opencv_samples`); the package
must be installed (``make setup`` or ``pip install -e .``).
"""

import sys

from vision.prepare.opencv_samples import main

if __name__ == "__main__":
    sys.exit(main())
