"""G2TAM: promptable instance tracking in 3D on the shared geometry backbone (geometry as implicit memory).

Modules: ``prompts`` (SAM-style prompt encoder), ``spatial_encoder`` (lifts prompts and view tokens into the shared
3D space), ``decoder`` (per-view two-way mask decoder), ``model`` (:class:`G2TAM`), ``losses``, ``lightning``
(training, validation, test, predict), ``task`` (the config, ``build_model``, ``load``), ``inference`` (the
evaluation protocol), ``predictor`` (:class:`TrackerPredictor`) with ``interface`` (the model interface it uses),
``session`` (its state and prompts), ``propagation`` (windows and the second pass), ``memory3d`` (the 3D memory)
and ``export`` (files a user downloads), ``baseline`` (the 2D appearance-memory control) and ``splits`` (the
long-occlusion split builder). Apart from G2TAM: ``nanotrack`` (NanoTracker, a 2D single-object tracker on the
pretrained NanoTrack networks) and ``nanotrack_opencv`` (OpenCV's own TrackerNano, its control).
"""
