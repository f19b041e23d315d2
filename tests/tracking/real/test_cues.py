"""The presence cues (vision.tracking.real.cues): each cue measures what its name says."""

from __future__ import annotations

import numpy as np

from vision.tracking.real.cues import CUES, GEOMETRY_CUES, MemoryView, cue_vector, feature_cosine


def _cues(box, memory=None, box_depth=float("nan")) -> dict[str, float]:
    probability = np.zeros((16, 16), np.float32)
    probability[7:9, 7:9] = 0.9
    values = cue_vector(probability, 0.9, 0.7, np.asarray(box, float), (200, 100), np.array([20.0, 10.0]), 0.8, 0.6,
                        0.95, memory, box_depth)
    assert values.shape == (len(CUES),) and values.dtype == np.float32
    return dict(zip(CUES, values.tolist()))


def test_appearance_and_map_cues() -> None:
    cues = _cues([10, 10, 20, 10])
    assert cues["peak"] == np.float32(0.9) and cues["score"] == np.float32(0.7)
    assert np.isclose(cues["hot_share"], 4 / 256) and np.isclose(cues["mean_probability"], 3.6 / 256)
    assert np.isclose(cues["template_cosine"], 0.8) and np.isclose(cues["recent_cosine"], 0.6)
    assert np.isclose(cues["template_drop"], 0.15)
    assert cues["inside_share"] == 1.0 and cues["size_change"] == 0.0


def test_a_box_leaving_the_frame_and_growing() -> None:
    cues = _cues([190, 10, 40, 20])  # a quarter inside, four times the prompt's area
    assert np.isclose(cues["inside_share"], 0.25) and np.isclose(cues["size_change"], 0.5 * np.log(4))


def test_geometry_cues_without_and_with_a_memory() -> None:
    none = _cues([10, 10, 20, 10])
    assert [none[c] for c in GEOMETRY_CUES] == [0.0, 0.5, 0.0]
    memory = MemoryView(np.array([20.0 + 3 * np.hypot(20, 10), 15.0]), z=2.0, in_view=False)
    cues = _cues([10, 10, 20, 10], memory, box_depth=1.0)  # three diagonals away, something nearer in the box
    assert np.isclose(cues["memory_offset"], 3.0) and cues["memory_in_view"] == 0.0
    assert np.isclose(cues["depth_ratio"], np.log(0.5))
    far = _cues([10, 10, 20, 10], MemoryView(np.array([1000.0, 0.0]), 2.0, True), box_depth=2.0)
    assert far["memory_offset"] == 4.0 and far["memory_in_view"] == 1.0 and far["depth_ratio"] == 0.0


def test_feature_cosine_is_centred() -> None:
    a = np.arange(12, dtype=np.float32).reshape(1, 3, 2, 2)
    assert np.isclose(feature_cosine(a, a + 5), 1.0) and np.isclose(feature_cosine(a, -a), -1.0)
    assert feature_cosine(a, np.ones_like(a)) == 0.0
