"""The toy predictor: a trained toy model on the user's images.

``ToyPredictor.from_checkpoint(path)`` reads a checkpoint of :class:`~.lightning.ToyModule` or a model folder
(through the task's own ``load``, :func:`vision.device.load_for_inference`); ``predict(image)`` gives
the per-pixel brightness of one image.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from vision.device import autocast, load_for_inference
from vision.errors import InputError

from .task import ToyConfig, ToyModel, load

__all__ = ["ToyPredictor"]


class ToyPredictor:
    """A toy model on ``device`` run in ``precision`` (the compute dtype).

    Args:
        model: the model, in eval mode on ``device``. config: its config.
    """

    def __init__(self, model: ToyModel, config: ToyConfig, device: str | torch.device = "cpu",
                 precision: torch.dtype = torch.float32) -> None:
        self.model, self.config = model.eval(), config
        self.device, self.precision = torch.device(device), precision

    @classmethod
    def from_checkpoint(cls, path: str | Path, device: str | torch.device = "cpu",
                        precision: str | torch.dtype = "32") -> ToyPredictor:
        """Load a toy checkpoint or model folder on ``device`` (``"auto"`` and the names of
        :func:`vision.device.resolve_device`); a missing, unreadable or foreign file is a ``DataError`` naming it."""
        (model, config), device, dtype = load_for_inference(load, path, device, precision)
        return cls(model, config, device=device, precision=dtype)

    @torch.no_grad()
    def predict(self, image: np.ndarray) -> np.ndarray:
        """An image, uint8 ``[H, W, 3]`` RGB -> its predicted brightness, float32 ``[H, W]``."""
        if image.ndim != 3 or image.shape[2] != 3 or image.dtype != np.uint8:
            raise InputError(f"expected a uint8 [H, W, 3] RGB image, got {image.dtype} {list(image.shape)}")
        batch = torch.from_numpy(np.ascontiguousarray(image)).permute(2, 0, 1)[None].float().div(255.0)
        with autocast(self.device, self.precision):
            maps = self.model(batch.to(self.device))
        return maps[0].float().cpu().numpy()

#: the registry's fixed name (vision.tasks.PARTS)
Predictor = ToyPredictor
