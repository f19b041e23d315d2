"""The Gradio demo: track objects in a video or an image set, detect an open vocabulary, judge whether a video
is AI-generated. ``vision-demo`` (or ``python demo/app.py``, or ``make demo``) serves it on http://127.0.0.1:7860;
it needs the ``demo`` extra (``pip install -e '.[demo]'``: Gradio and scikit-video).

Modules: :mod:`vision.demo.app` builds the interface and serves it, :mod:`vision.demo.handlers` holds the per-tab
logic (callable without Gradio, which is what the tests use), :mod:`vision.demo.uploads` checks and reads uploads,
:mod:`vision.demo.examples` prepares the example inputs on first launch, :mod:`vision.demo.graph` draws the
forensic evidence graph, :mod:`vision.demo.browser` drives headless Chromium and :mod:`vision.demo.screenshots`
captures each tab (``python demo/screenshots.py``).
"""
