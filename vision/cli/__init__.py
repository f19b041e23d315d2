"""The command-line entry points: :mod:`vision.cli.main` is the ``vision`` command, whose subcommands run the
``main(argv=None) -> int`` of one module each (0 on success, 2 on bad input with one ``error:`` line):

- :mod:`vision.cli.train`: ``vision train`` (also ``python tools/train.py``): fit / validate / test / predict any task.
- :mod:`vision.cli.predict`: ``vision predict``: run a checkpoint on an image, a folder of images or a video (input
  checks in :mod:`vision.cli.inputs`).
- :mod:`vision.cli.evaluate`: ``vision evaluate``: score a results file against a split.
- :mod:`vision.cli.synthetic`: ``vision synthetic``: render a synthetic split.
- :mod:`vision.cli.export`, :mod:`vision.cli.fetch_weights`, :mod:`vision.cli.recipe`: ``vision export``,
  ``vision fetch-weights``, ``vision recipe``.

The dataset converters are ``vision prepare <dataset>`` (:mod:`vision.prepare.converter`) and the Gradio demo
``vision demo`` (:mod:`vision.demo`). The earlier console scripts (``vision-train``, ...) are aliases of the same
``main`` functions (``pyproject.toml``, ``[project.scripts]``).
"""
