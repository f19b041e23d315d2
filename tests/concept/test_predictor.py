"""ConceptPredictor on an untrained tiny model: the interface, the ids, the exemplars, a correction click and the
errors a user meets."""

import numpy as np
import pytest

from tests.concept.conftest import hashed_text
from vision.concept.predictor import ConceptPredictor
from vision.errors import InputError


@pytest.fixture()
def predictor(concept_model):
    model, config = concept_model
    return ConceptPredictor(model, config, text_encoder=hashed_text, window_size=4)


@pytest.mark.slow
def test_every_view_every_instance_with_one_id_per_concept(predictor, scene_frames):
    state = predictor.init_state(scene_frames, ordered=False)
    predictor.add_concept(state, "mug")
    predictor.add_concept(state, "chair")
    out = list(predictor.propagate(state))
    assert [v for v, *_ in out] == list(range(len(scene_frames)))
    assert state.presence.shape == (len(scene_frames), 2)
    for view, ids, concepts, masks, scores in out:
        assert masks.shape == (len(ids), 64, 64) and masks.dtype == bool and scores.shape == (len(ids),)
        assert [state.instances[o] for o in ids] == concepts
        assert np.all(scores[~masks.any((1, 2))] == 0)
    assert set(state.instances.values()) <= {0, 1}
    assert len(state.instances) == len(set(state.instances))  # one id space across concepts
    # a second propagation decodes again and gives the same ids and masks
    again = list(predictor.propagate(state))
    assert all(np.array_equal(a[3], b[3]) and a[1] == b[1] for a, b in zip(out, again))


@pytest.mark.slow
def test_exemplar_box_is_an_instance_and_a_correction_replaces_its_masks(predictor, scene_frames):
    state = predictor.init_state(scene_frames, ordered=False)
    predictor.add_concept(state, None, exemplars=[(1, [10, 12, 30, 40], True)])
    out = {v: rest for v, *rest in predictor.propagate(state)}
    ids, _, masks, scores = out[1]
    assert ids and masks.any() and state.presence[1, 0] == 1.0
    obj = ids[int(np.argmax(scores))]
    predictor.correct(state, obj, 2, points=[[50, 50]], labels=[1])
    corrected = {v: rest for v, *rest in predictor.propagate(state)}
    assert corrected[2][0] == ids  # the same instances; only the corrected one is decoded from the click
    with pytest.raises(InputError, match="unknown instance id 999"):
        predictor.correct(state, 999, 0, points=[[1, 1]])


def test_negative_exemplar_removes_the_proposals_it_covers(predictor, scene_frames):
    plain = predictor.init_state(scene_frames[:2], ordered=False)
    predictor.add_concept(plain, "mug")
    views, _, _ = predictor._proposals(plain)
    box = views[0].boxes[0].tolist()
    negative = predictor.init_state(scene_frames[:2], ordered=False)
    predictor.add_concept(negative, "mug", exemplars=[(0, box, False)])
    after, _, _ = predictor._proposals(negative)
    assert len(after[0]) < len(views[0])


@pytest.mark.parametrize("phrase, exemplars, message", [
    ("", (), "a concept phrase '' is empty"),
    ("   ", (), "nothing visible"),
    ("\u200b\u200d", (), "nothing visible"),
    (None, (), "a phrase or at least one positive exemplar"),
    (None, [(0, [10, 10, 20, 20], False)], "a phrase or at least one positive exemplar"),
    ("mug", [(9, [0, 0, 5, 5], True)], "view 9, but the input has views 0..4"),
    ("mug", [(0, [0, 0, 70, 5], True)], "off the image"),
    ("mug", [(0, [20, 0, 10, 5], True)], "off the image or empty"),
    ("mug", [(0, [0, 0, 5], True)], "4 finite numbers"),
    ("mug", [(0,)], r"\(view, box\)"),
])
def test_bad_concepts_are_refused(predictor, scene_frames, phrase, exemplars, message):
    state = predictor.init_state(scene_frames, ordered=False)
    with pytest.raises(InputError, match=message):
        predictor.add_concept(state, phrase, exemplars=exemplars)
    assert state.concepts == []  # nothing added on error


def test_phrase_limits(predictor, scene_frames):
    state = predictor.init_state(scene_frames, ordered=False)
    with pytest.raises(InputError, match="no concept"):
        next(predictor.propagate(state))
    predictor.add_concept(state, "mug")
    with pytest.raises(InputError, match="already a concept"):
        predictor.add_concept(state, " Mug ")
    for i in range(predictor.config.max_phrases - 1):
        predictor.add_concept(state, f"thing {i}")
    with pytest.raises(InputError, match="at most 16 concepts"):
        predictor.add_concept(state, "one too many")


@pytest.mark.slow
def test_solved_cameras_give_the_association_the_solver_point_maps(concept_model, scene_frames):
    import torch

    model, config = concept_model
    solved = ConceptPredictor(model, config, text_encoder=hashed_text, window_size=4, solve_cameras=True)
    state = solved.init_state(scene_frames, ordered=False)
    window = [0, 1, 2, 3]
    images = torch.from_numpy(state.tracker.frames[window]).permute(0, 3, 1, 2).float()[None] / 255
    with torch.no_grad():
        _, points = solved._encode(state, window)
        want = model.tracker.solved_tracking_encoding(images, solved.tracker.solver)["world_points"][0]
    np.testing.assert_allclose(points, want.numpy(), atol=1e-6)
    solved.add_concept(state, "mug")
    assert [v for v, *_ in solved.propagate(state)] == list(range(len(scene_frames)))
