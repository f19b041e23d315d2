#!/usr/bin/env python
"""Serve the Gradio demo: ``python demo/app.py [--host 127.0.0.1] [--port 7860] [--help]`` (what ``make demo`` runs).

The same as the console script ``vision-demo`` (:mod:`vision.demo.app`); the package must be installed with the
``demo`` extra (``make demo`` or ``pip install -e '.[demo]'``). It binds 127.0.0.1 unless ``--host`` says otherwise.
"""

import sys

from vision.demo.app import main

if __name__ == "__main__":
    sys.exit(main())
