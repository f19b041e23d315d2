"""ONNX export of the models' graphs, each checked with onnxruntime against PyTorch.

- :mod:`vision.export.graphs`: the exported modules, plain tensors in and out: the detector (images + text
  embeddings -> dense boxes, scores, labels with the OOV decision, region embeddings), the geometry backbone (views
  -> depth, points, cameras), the tracker's per-view image encoder and its mask decoder; each task names its
  graphs in the registry (``Task.export_graphs``).
- :mod:`vision.export.onnx`: :func:`export_graph` (``torch.onnx.export``, the dynamo exporter, with dynamic batch /
  view / class counts) and :func:`check_graph` (onnxruntime against PyTorch on given inputs: the largest absolute
  difference per output, against the graph's stated tolerance).

``vision-export --onnx`` (:mod:`vision.cli.export`) writes them into a model folder's ``onnx/``; the benchmark is
``benchmarks/bench_onnx.py``. Needs the ``export`` extra (onnx, onnxruntime, onnxscript).
"""
