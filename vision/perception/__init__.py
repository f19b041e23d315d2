"""Real perception: the geometry backbone's interface (per-view features, depth, cameras, world points,
confidences) assembled from registered pretrained networks, for real video (:mod:`vision.perception.backbone`)."""

from vision.perception.backbone import FrameGeometry, RealPerception, RealPerceptionConfig

__all__ = ["FrameGeometry", "RealPerception", "RealPerceptionConfig"]
