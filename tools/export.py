#!/usr/bin/env python
"""Write a checkpoint as a model folder (config.json, model.safetensors, README.md), optionally with ONNX graphs:
``python tools/export.py --help``.

The same as the console script ``vision-export`` (:mod:`vision.cli.export`); the package must be installed
(``make setup`` or ``pip install -e .``).
"""

import sys

from vision.cli.export import main

if __name__ == "__main__":
    sys.exit(main())
