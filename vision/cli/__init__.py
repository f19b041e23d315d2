"""The command-line entry points, installed as console scripts (``pyproject.toml``, ``[project.scripts]``).

Each module has one job and a ``main(argv=None) -> int`` (0 on success, 2 on bad input with one ``error:`` line):

- :mod:`vision.cli.train`: ``vision-train`` (``tools/train.py``): fit / validate / test / predict any task.
- :mod:`vision.cli.predict`: ``vision-predict`` (``tools/predict.py``): run a checkpoint on an image, a folder of
  images or a video (input checks in :mod:`vision.cli.inputs`).
- :mod:`vision.cli.evaluate`: ``vision-evaluate`` (``tools/evaluate.py``): score a results file against a split.
- :mod:`vision.cli.synthetic`: ``vision-synthetic`` (``tools/make_synthetic.py``): render a synthetic split.

The dataset converters are in :mod:`vision.prepare` and the Gradio demo in :mod:`vision.demo`. The scripts under
``tools/``, ``datasets/`` and ``demo/`` are thin wrappers that call these ``main`` functions.
"""
