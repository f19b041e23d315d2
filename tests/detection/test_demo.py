"""The Detect tab's logic (vision/detection/demo_handlers.py): it reads a vocabulary by the package's one rule."""

import pytest

from vision.detection import demo_handlers
from vision.errors import InputError
from vision.text.vocabulary import parse_vocabulary


def test_the_detect_tab_reads_the_vocabulary_by_the_one_rule():
    assert demo_handlers.parse_vocabulary is parse_vocabulary
    assert parse_vocabulary(" mug, chair;lamp\n") == ["mug", "chair", "lamp"]
    with pytest.raises(InputError, match="vocabulary is empty"):
        parse_vocabulary(" \n ")
