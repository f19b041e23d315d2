"""The detector's predictor refuses what its model cannot take, in one line, before running anything."""

from __future__ import annotations

import pytest

from vision.detection.predictor import DetectorPredictor
from vision.detection.task import DetectionConfig, build_model
from vision.errors import InputError


def test_a_text_encoder_of_another_width_is_one_input_error(fake_encoder):
    """A config whose embed_dim is not the text encoder's width (a model folder edited, or trained with another
    encoder) is refused by name, not a shape mismatch inside the classifier."""
    config = DetectionConfig(embed_dim=8)
    model = build_model(config)
    with pytest.raises(InputError, match="384-d embeddings but this detector's embed_dim is 8"):
        DetectorPredictor(model, ["cube"], config.image_size, encoder=fake_encoder)
