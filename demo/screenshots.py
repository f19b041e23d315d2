#!/usr/bin/env python
"""Screenshot each tab of a running demo: ``python demo/screenshots.py --url http://127.0.0.1:7860 --out docs``.

The work is :mod:`vision.demo.screenshots` (headless Chromium, Debian package ``chromium``); the package must be
installed (``make setup`` or ``pip install -e .``).
"""

import sys

from vision.demo.screenshots import main

if __name__ == "__main__":
    sys.exit(main())
