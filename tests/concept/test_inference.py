"""The concept protocol end to end on a rendered concept split: every video queried with its phrases (absent ones
included), results that validate, scored by the one evaluation pipeline; the known-geometry oracle runs too."""

import pytest

from tests.concept.conftest import hashed_text
from vision.concept.inference import score_concept, track_split
from vision.concept.predictor import ConceptPredictor
from vision.data.coco import load_split
from vision.synthetic.concept import write_concept_split


@pytest.mark.slow
def test_protocol_results_validate_and_score(concept_model, tmp_path):
    path = write_concept_split(tmp_path, "concept_val", scenes=1, views=4, size=64, mode="unordered", seed=0,
                               threads=1)
    split = load_split(path)
    model, config = concept_model
    predictor = ConceptPredictor(model, config, text_encoder=hashed_text, window_size=4)
    results = track_split(predictor, split)
    phrases = split.queried_phrases(1)
    presence = [r for r in results if "presence" in r]
    assert len(presence) == len(phrases) * len(split.images)  # one per (phrase, view), absent phrases included
    assert {r["category_id"] for r in results} <= set(phrases)
    metrics = score_concept(path, results)
    for key in ("HOTA", "DetA", "AssA", "LocA", "IDSW", "AP", "cgF1", "IL_MCC", "presence_MCC", "near_accepted"):
        assert key in metrics
    oracle = track_split(predictor, split, known_geometry=True)
    assert score_concept(path, oracle)["HOTA"] >= 0.0
