"""The networks that read the registered pretrained files (:mod:`vision.weights.registry`), written in the package:
one module per network (``tcmonodepth``, ``alike``, ``mobilenet``) and the ONNX ones run with onnxruntime
(``onnx_models``). Each loads its file through :func:`vision.weights.store.weights_path`, which checks it."""
