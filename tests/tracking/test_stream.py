"""TrackerStream (vision.tracking.stream): frames pushed one by one give, frame for frame, what
TrackerPredictor.propagate gives on the same frames (masks, scores, cameras, depth, clouds), each result no later
than its window's last frame; what it holds stays bounded (frames, carried 3D memory, clouds) however long the
stream; misuse is one clear error."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from vision.errors import InputError
from vision.tracking.predictor import TrackerPredictor
from vision.tracking.stream import TrackerStream
from vision.tracking.task import TrackingConfig, build_model

HEIGHT, WIDTH = 40, 48


def _predictor(architecture: str = "g2tam", **kwargs) -> TrackerPredictor:
    torch.manual_seed(0)
    model = build_model(TrackingConfig(image_size=32, dim=32, text_encoder=None, architecture=architecture))
    return TrackerPredictor(model, text_encoder=None, device="cpu", window_size=4, max_anchors=2,
                            presence_threshold=0.0, **kwargs)


def _frames(count: int) -> np.ndarray:
    return np.random.default_rng(0).integers(0, 256, size=(count, HEIGHT, WIDTH, 3), dtype=np.uint8)


PROMPTS = [dict(view=0, obj_id=1, points=[[20, 20]], labels=[1]), dict(view=2, obj_id=2, box=[4, 6, 30, 34])]


@pytest.mark.parametrize("architecture", ["g2tam", "memory_bank"])
def test_stream_equals_offline_propagation(architecture):
    frames = _frames(11)
    offline = _predictor(architecture)
    state = offline.init_state(frames)
    for prompt in PROMPTS:
        offline.add_prompt(state, **prompt)
    expected = {v: (ids, m, s) for v, ids, m, s in offline.propagate(state)}

    predictor = _predictor(architecture)
    stream = TrackerStream(predictor, HEIGHT, WIDTH)
    for prompt in PROMPTS:
        stream.add_prompt(**prompt)
    steps = []
    for index, frame in enumerate(frames):
        for step in stream.push(frame):
            assert step.view <= index  # causal: nothing about a frame not received yet
            steps.append(step)
    steps += stream.finish()
    assert [s.view for s in steps] == sorted(s.view for s in steps) and len(steps) == 11
    assert steps[0].view == 0 and len(steps) > len(stream.finish())
    for step in steps:
        ids, masks, scores = expected[step.view]
        assert step.obj_ids == ids
        np.testing.assert_array_equal(step.masks, masks)
        np.testing.assert_array_equal(step.scores, scores)
        if architecture == "g2tam":
            np.testing.assert_array_equal(step.extrinsics, state.extrinsics[step.view])
            np.testing.assert_array_equal(step.depth, state.depth[step.view])
        else:
            assert step.extrinsics is None
    for obj_id in (1, 2):
        np.testing.assert_array_equal(stream.clouds[obj_id], state.clouds[obj_id])


def test_memory_stays_bounded_on_a_long_stream():
    predictor = _predictor(memory_points=8, max_cloud_points=50)
    stream = TrackerStream(predictor, HEIGHT, WIDTH)
    for prompt in PROMPTS:
        stream.add_prompt(**prompt)
    rng = np.random.default_rng(1)
    frames = (rng.integers(0, 256, size=(HEIGHT, WIDTH, 3), dtype=np.uint8) for _ in range(24))  # a generator
    kept, views = [], []
    for step in stream.track(frames):
        kept.append(stream.kept_views)
        views.append(step.view)
    assert views == list(range(24))
    assert max(kept) <= predictor.window_size and stream.num_received == 24
    assert all(len(points) <= 8 for points, _ in stream.memory.values()) and stream.memory
    assert all(len(cloud) <= 50 for cloud in stream.clouds.values())


def test_misuse_is_one_clear_error():
    stream = TrackerStream(_predictor(), HEIGHT, WIDTH)
    with pytest.raises(InputError, match="no prompts"):
        stream.push(_frames(1)[0])
    with pytest.raises(InputError, match="off the image|outside|out of"):
        stream.add_prompt(view=0, obj_id=1, points=[[500, 20]])
    stream.add_prompt(view=3, obj_id=1, points=[[20, 20]])
    with pytest.raises(InputError, match=r"frame 0: size 40x48 differs from the stream's 48x40"):
        stream.push(np.zeros((48, 40, 3), np.uint8))
    stream.push(_frames(1)[0])
    with pytest.raises(InputError, match="before the first frame"):
        stream.add_prompt(view=0, obj_id=2, points=[[1, 1]])
    with pytest.raises(InputError, match="the stream ended after 1 frames, before the prompted frame 3"):
        stream.finish()
