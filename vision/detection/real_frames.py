"""The detection predictor that runs the detector trained on real frames (the demo's ``--real-detection-ckpt``):
the registry's ``real_frames_predictor`` of the detection task (:data:`vision.tasks.PARTS`), the task's own
predictor class."""

from vision.detection.predictor import DetectorPredictor as Predictor

__all__ = ["Predictor"]
