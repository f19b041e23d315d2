"""A toy fifth task defined outside ``vision/`` (issue 45, item 8): per-pixel brightness from an image.

It proves that a task is one :class:`vision.tasks.Task` entry plus its folder: ``tests/test_fifth_task.py``
registers it (:func:`vision.tasks.register_task`) and runs it through every shared tool (``tools/train.py fit`` and
``test``, ``vision-evaluate``, ``vision-predict``, the model folder) with no edit anywhere else.

The task's parts, each with the signature :class:`vision.tasks.Task` names:

- :mod:`.task`: :class:`~.task.ToyConfig`, the model (two 1x1 convolutions), ``build_model`` / ``load`` / ``save``.
- :mod:`.lightning`: :class:`~.lightning.ToyModule` (trains it, scores it with a ``TaskEvaluator("toy")``) and
  :class:`~.lightning.ToyDataModule` (the images of COCO-format splits).
- :mod:`.results`: model outputs -> results ``[{image_id, brightness}]``.
- :mod:`.evaluation`: the scorer (mean absolute error of an image's brightness), the split and results checks and
  the ``vision-evaluate`` flag.
- :mod:`.predictor` and :mod:`.cli`: the predictor (``from_checkpoint``) and ``vision-predict --task toy``.

Brightness (the convention of every part): a pixel's is the mean of its R, G, B values scaled to [0, 1]; an image's
is the mean over its pixels. A split's images carry their true brightness as ``images[].brightness``.
"""
