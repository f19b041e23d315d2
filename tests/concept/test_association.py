"""3D association: the same instance seen from views in any order keeps one id; two proposals of one view never
share one; split tracks are merged; the learned head and the rule are both usable."""

import numpy as np
import torch

from vision.concept.association import Associator, lift_observation, window_to_global
from vision.concept.heads import AssociationHead


def _observation(view: int, centre: tuple[float, float, float], phrase: int = 0, score: float = 0.9, seed: int = 0):
    rng = np.random.default_rng(seed + 100 * view)
    s = 16
    points = np.full((s, s, 3), np.nan, np.float32)
    mask = np.zeros((s, s), bool)
    mask[4:8, 4:8] = True
    points[mask] = np.asarray(centre, np.float32) + rng.normal(0, 0.01, (16, 3)).astype(np.float32)
    features = torch.ones(8, 4, 4)
    image = np.full((s, s, 3), 128, np.uint8)
    return lift_observation(view, phrase, np.array([4, 4, 8, 8]), score, mask, points, features, torch.ones(4), image)


def _tracks(order: list[int], centres: dict[int, list]) -> list[set]:
    associator = Associator(None, rule_distance=0.15)
    for view in order:
        associator.add_view([_observation(view, c, seed=i) for i, c in enumerate(centres[view])])
    associator.merge()
    return sorted([{(o.view, tuple(np.round(o.centroid, 1))) for o in t.observations} for t in associator.tracks],
                  key=lambda x: sorted(x))


def test_instances_keep_one_id_whatever_the_view_order():
    a, b = (0.0, 0.0, 0.0), (0.5, 0.0, 0.0)
    centres = {0: [a, b], 1: [b], 2: [a], 3: [a, b]}  # b leaves on view 2 and comes back on view 3
    forward = _tracks([0, 1, 2, 3], centres)
    shuffled = _tracks([2, 0, 3, 1], centres)
    assert len(forward) == 2 and forward == shuffled
    assert all(len({v for v, _ in t}) == len(t) for t in forward)  # one observation per view per track


def test_two_proposals_of_one_view_never_share_an_id():
    associator = Associator(None, rule_distance=10.0)  # the rule would call everything the same instance
    ids = associator.add_view([_observation(0, (0, 0, 0)), _observation(0, (0.01, 0, 0), seed=1)])
    assert len(set(ids)) == 2


def test_phrases_are_associated_apart():
    associator = Associator(None, rule_distance=0.15)
    associator.add_view([_observation(0, (0, 0, 0), phrase=0)])
    ids = associator.add_view([_observation(1, (0, 0, 0), phrase=1)])
    assert ids == [2] and len(associator.tracks) == 2


def test_merge_joins_a_track_split_by_an_early_view():
    associator = Associator(None, rule_distance=0.15)
    associator.add_view([_observation(0, (0, 0, 0))])
    associator.add_view([_observation(1, (0.3, 0, 0))])  # too far from the first: a second track
    associator.rule_distance = 0.5
    associator.merge()
    assert len(associator.tracks) == 1 and associator.tracks[0].track_id == 1


def test_learned_head_gives_probabilities():
    torch.manual_seed(0)
    associator = Associator(AssociationHead(8), threshold=0.5)
    associator.add_view([_observation(0, (0, 0, 0))])
    prob = associator.probabilities(associator.tracks, [_observation(1, (0, 0, 0))])
    assert prob.shape == (1, 1) and 0.0 < prob[0, 0] < 1.0


def test_window_to_global_recovers_a_similarity():
    rng = np.random.default_rng(0)
    window = rng.normal(size=(8, 8, 3)).astype(np.float32)
    angle = 0.3
    rot = np.array([[np.cos(angle), -np.sin(angle), 0], [np.sin(angle), np.cos(angle), 0], [0, 0, 1]])
    global_points = (2.0 * window @ rot.T + np.array([1.0, 0.0, -1.0])).astype(np.float32)
    global_points[0, 0] = np.nan  # unknown pixels are left out of the fit
    scale, r, t = window_to_global(window, global_points)
    assert abs(scale - 2.0) < 1e-4 and np.allclose(r, rot, atol=1e-4) and np.allclose(t, [1, 0, -1], atol=1e-4)
