"""The Gradio demo: track objects in a video or an image set, detect an open vocabulary, judge whether a video
is AI-generated. ``vision-demo`` (or ``python demo/app.py``, or ``make demo``) serves it on http://127.0.0.1:7860;
it needs the ``demo`` extra (``pip install -e '.[demo]'``: Gradio and scikit-video).

Each tab lives in its task's folder: ``vision/<task>/demo.py`` builds it (``tab(models, examples)``, the registry's
``demo`` part) and ``vision/<task>/demo_handlers.py`` holds its logic (callable without Gradio, which is what the
tests use). This package holds what the tabs share: :mod:`vision.demo.app` puts the registered tabs together and
serves them, :mod:`vision.demo.handlers` holds the configuration, the models and the run locks,
:mod:`vision.demo.ui` the errors and progress of the Gradio handlers, :mod:`vision.demo.uploads` checks and reads
uploads, :mod:`vision.demo.examples` prepares the example inputs on first launch, :mod:`vision.demo.graph` draws the
forensic evidence graph, :mod:`vision.demo.browser` drives headless Chromium and :mod:`vision.demo.screenshots`
captures each tab (``python demo/screenshots.py``).
"""
