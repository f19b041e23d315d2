"""OOVDet: zero-shot detection that rejects out-of-vocabulary objects (see ``docs`` methods section 3)."""

from vision.detection.model import UNKNOWN_LABEL, OOVDetector, OpenVocabClassifier

__all__ = ["OOVDetector", "OpenVocabClassifier", "UNKNOWN_LABEL"]
