"""The Gradio demo: track objects in a video or an image set, detect an open vocabulary, judge whether a video
is AI-generated. ``python demo/app.py`` (or ``make demo``) serves it on http://127.0.0.1:7860.

Modules: :mod:`demo.app` builds the interface, :mod:`demo.handlers` holds the per-tab logic (callable without
Gradio, which is what the tests use), :mod:`demo.uploads` checks and reads uploads, :mod:`demo.examples`
prepares the example inputs on first launch, :mod:`demo.graph` draws the forensic evidence graph.
"""
