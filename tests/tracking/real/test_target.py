"""A target of the real tracker (vision.tracking.real.target) on camera-path clips over a real photograph, its
decisions teacher-forced: it follows the object, searches while the object is out of view, and takes it back
where the 3D memory's projection (or the grid search, for the 2D control) finds it."""

from __future__ import annotations

import numpy as np
import pytest
from skimage import data

from vision.evaluation.box_tracks import box_iou_xywh
from vision.tracking.nanotrack import NanoTracker
from vision.tracking.real.camera_paths import camera_path_clip
from vision.tracking.real.cues import CUES
from vision.tracking.real.presence import PresenceHead
from vision.tracking.real.target import Target, TargetConfig

BOX = np.array([180.0, 60.0, 300.0, 210.0])  # the astronaut's face


def _run(model, memory: bool, seed: int = 0):
    clip = camera_path_clip(data.astronaut(), BOX, np.random.default_rng(seed), "exit", frames=40, size=(320, 240),
                            twin_share=0.0, turn_share=0.0)
    perception = model.perception
    perception.reset()
    head = PresenceHead("3d" if memory else "2d")
    target = Target(NanoTracker(perception.feature_net), head, TargetConfig(use_memory=memory), clip.frames[0],
                    perception.step(clip.frames[0]), clip.boxes[0])
    answers = []
    for t in range(1, len(clip.frames)):
        truth, visible = clip.boxes[t], clip.visible[t]
        target.oracle = lambda box, truth=truth, visible=visible: float(
            visible > 0.5 and box_iou_xywh(box[None], truth[None])[0] >= 0.5)
        answers.append(target.step(clip.frames[t], perception.step(clip.frames[t])))
    return clip, answers


@pytest.fixture(scope="module")
def model(real_module):
    return real_module.model


@pytest.mark.parametrize("memory", [True, False])
def test_follows_searches_and_takes_the_object_back(model, memory: bool) -> None:
    clip, answers = _run(model, memory)
    visible = clip.visible[1:]
    present = np.array([a.present for a in answers])
    assert not present[visible == 0].any()  # out of view: absent
    back = np.flatnonzero((visible[:-1] <= 0.5) & (visible[1:] > 0.5))[-1] + 1
    assert present[back:].mean() > 0.5  # taken back once it is in view again
    ious = [box_iou_xywh(a.box[None], clip.boxes[t + 1][None])[0] for t, a in enumerate(answers) if a.present]
    assert np.mean(np.array(ious) >= 0.5) == 1.0
    sources = {a.source for a in answers}
    assert sources <= ({"track", "memory", "search"} if memory else {"track", "search"})
    assert len(answers[0].cues) == len(CUES) and all(np.isfinite(a.cues).all() for a in answers)


def test_memory_projects_where_the_camera_sends_the_object(model) -> None:
    """With the camera panned away the 3D memory projects outside the view, and back inside when it returns."""
    clip, answers = _run(model, True)
    in_view = np.array([a.cues[CUES.index("memory_in_view")] for a in answers])
    assert (in_view[clip.visible[1:] == 1.0] == 1.0).mean() > 0.9
    assert (in_view[clip.visible[1:] == 0.0] == 0.0).mean() > 0.5


@pytest.mark.parametrize("memory", [True, False])
def test_the_memory_takes_back_what_the_track_lost(model, memory: bool) -> None:
    """The track is sent astray while the object is out of view; once the object is back where it was, the 3D
    memory's projection is the candidate that finds it (no grid search here). The 2D control has no such candidate
    and stays lost."""
    clip = camera_path_clip(data.astronaut(), BOX, np.random.default_rng(0), "follow", frames=12, size=(320, 240),
                            move_share=0.0, twin_share=0.0, turn_share=0.0)
    perception = model.perception
    perception.reset()
    target = Target(NanoTracker(perception.feature_net), PresenceHead("3d" if memory else "2d"),
                    TargetConfig(use_memory=memory, search_tiles=0), clip.frames[0], perception.step(clip.frames[0]),
                    clip.boxes[0])
    for t in range(1, 6):
        target.step(clip.frames[t], perception.step(clip.frames[t]))
    target.present = False  # lost: the track is sent to the far corner
    target.tracker.centre, target.tracker.size = np.array([10.0, 10.0]), np.array([20.0, 20.0])
    answers = []
    for t in range(6, 12):
        truth = clip.boxes[t]
        target.oracle = lambda box, truth=truth: float(box_iou_xywh(box[None], truth[None])[0] >= 0.5)
        answers.append(target.step(clip.frames[t], perception.step(clip.frames[t])))
    if memory:
        assert answers[0].present and answers[0].source == "memory"
        assert all(a.present for a in answers)
    else:
        assert not any(a.present for a in answers)


def test_a_head_of_the_wrong_memory_is_refused(model) -> None:
    frame = data.astronaut()[:240, :320].copy()
    perception = model.perception
    perception.reset()
    with pytest.raises(Exception, match="use_memory"):
        Target(NanoTracker(perception.feature_net), PresenceHead("2d"), TargetConfig(use_memory=True), frame,
               perception.step(frame), np.array([10.0, 10.0, 50.0, 50.0]))
