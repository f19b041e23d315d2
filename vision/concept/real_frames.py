"""The concept predictor that answers from the detector trained on real frames (the demo's
``--real-detection-ckpt``): the registry's ``real_frames_predictor`` of the concept task (:data:`vision.tasks.PARTS`).
"""

from vision.concept.detector_only import DetectorConceptPredictor as Predictor

__all__ = ["Predictor"]
