"""Pretrained weights: the registry (:mod:`vision.weights.registry`), the folder they live in and their check
(:mod:`vision.weights.store`), and the networks that read them (:mod:`vision.weights.nets`)."""

from vision.weights.registry import REGISTRY, WeightsEntry, entry, weight_names
from vision.weights.store import ENV, WeightsError, sha256_of, weights_dir, weights_path

__all__ = ["REGISTRY", "WeightsEntry", "entry", "weight_names", "ENV", "WeightsError", "sha256_of", "weights_dir",
           "weights_path"]
