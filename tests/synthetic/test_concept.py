"""Tests of the concept-prompt splits (vision.synthetic.concept): scene composition per mode, the entries, exits,
returns and long occlusions seen in the rendered visibility, the written split, determinism, the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from vision.cli.synthetic import main as synthetic_main
from vision.data.coco import read_json
from vision.errors import InputError
from vision.synthetic.concept import (CONCEPT_MODES, NEAR_CATEGORIES, OCCLUDER_CATEGORY, OUTSIDE_CATEGORIES,
                                      TARGET_PHRASES, generate_concept_scene, sample_concept_spec, visibility_events,
                                      write_concept_split)
from vision.synthetic.objects import CATEGORIES, NOMINAL_SIZE
from vision.synthetic.scenes import DEFAULT_VOCAB, scene_seed


def _spec(mode: str, index: int, views: int = 16, size: int = 32):
    return sample_concept_spec(np.random.default_rng(scene_seed(0, "test", index)), views, size, mode)


def _target_events(concept, scene) -> dict[str, np.ndarray]:
    events = visibility_events(scene.visible_area, scene.amodal_area)
    targets = np.array([r == "target" for r in concept.roles])
    return {key: value[targets] for key, value in events.items()}


def test_phrases_near_and_outside_categories_are_disjoint():
    assert 4 <= len(TARGET_PHRASES) <= 6 and set(TARGET_PHRASES) <= set(DEFAULT_VOCAB["iv"])
    near = {c for cousins in NEAR_CATEGORIES.values() for c in cousins}
    assert near <= set(CATEGORIES) and not near & set(TARGET_PHRASES)  # a distractor is never a phrase
    assert all(len(cousins) >= 2 for cousins in NEAR_CATEGORIES.values())
    assert not set(OUTSIDE_CATEGORIES) & (near | set(TARGET_PHRASES)) and OCCLUDER_CATEGORY in OUTSIDE_CATEGORIES
    assert set(OUTSIDE_CATEGORIES) | near | set(TARGET_PHRASES) == set(CATEGORIES)


@pytest.mark.parametrize("mode", CONCEPT_MODES)
def test_scene_composition(mode):
    for index in range(8):
        concept = _spec(mode, index)
        objects, roles = concept.spec.objects, concept.roles
        assert len(roles) == len(objects) and 1 <= len(concept.targets) <= 2
        for phrase in concept.targets:
            same = [o for o, r in zip(objects, roles) if r == "target" and o.category == phrase]
            assert 2 <= len(same) <= 6
            assert len({o.colour_name for o in same}) == len(same)  # same category, different looks
        assert {o.category for o, r in zip(objects, roles) if r == "target"} == set(concept.targets)
        near = [o.category for o, r in zip(objects, roles) if r == "near"]
        assert (2 <= len(near) <= 4) if mode == "near" else (1 <= len(near) <= 2)
        cousins = {c for t in concept.targets for c in NEAR_CATEGORIES[t]}
        assert set(near) <= cousins
        outside = [o.category for o, r in zip(objects, roles) if r == "outside"]
        assert len(outside) <= 2 and set(outside) <= set(OUTSIDE_CATEGORIES)
        occluders = [o for o, r in zip(objects, roles) if r == "occluder"]
        assert len(occluders) == (1 if mode == "occlusion" else 0)
        for o in occluders:
            assert o.category == OCCLUDER_CATEGORY and 1.0 <= o.scale * NOMINAL_SIZE[o.category] <= 1.3
        assert concept.negative in TARGET_PHRASES and concept.negative not in {o.category for o in objects}
        assert concept.spec.mode == ("unordered" if mode == "unordered" else "video")


def test_instances_are_a_few_pixels_to_twenty_at_64px():
    concept, scene = generate_concept_scene(scene_seed(0, "test", 1), 8, 64, "video", threads=1)
    sides = []
    for view in scene.instance_ids:
        for k, role in enumerate(concept.roles):
            ys, xs = np.nonzero(view == k + 1)
            if role == "target" and len(ys):
                sides.append(max(np.ptp(ys), np.ptp(xs)) + 1)
    assert sides and 5 <= np.median(sides) <= 20


def test_video_mode_has_late_entries_and_returns():
    events = _target_events(*generate_concept_scene(scene_seed(0, "test", 1), 16, 32, "video", threads=1))
    entering = np.flatnonzero(events["late_entry"])
    assert len(entering) and (events["first"][entering] > 0).all()
    assert events["exit_return"].any()
    both = 0
    for index in range(6):  # most video scenes have both, in the visibility rendered at a tiny size
        events = _target_events(*generate_concept_scene(scene_seed(0, "test", index), 16, 24, "video", threads=1))
        both += bool(events["late_entry"].any() and events["exit_return"].any())
    assert both >= 4


def test_occlusion_mode_hides_a_target_for_a_long_run_then_shows_it():
    concept, scene = generate_concept_scene(scene_seed(0, "test", 2), 16, 32, "occlusion", threads=1)
    events = _target_events(concept, scene)
    k = int(np.argmax(events["occluded_run"]))
    assert events["occluded_run"][k] >= 4
    column = [i for i, r in enumerate(concept.roles) if r == "target"][k]
    visible = scene.visible_area[:, column] > 0
    starts = np.flatnonzero(np.diff(visible.astype(int)) == -1) + 1  # first view of each hidden run
    runs = [(start, int(np.argmax(visible[start:]))) for start in starts if visible[start:].any()]
    start, length = max(runs, key=lambda run: run[1])  # hidden on views start .. start + length - 1
    assert length >= 4 and visible[start - 1] and visible[start + length]
    assert (scene.amodal_area[start:start + length, column] > 0).all()  # in the image all along: occluded
    long = sum(_target_events(*generate_concept_scene(scene_seed(0, "test", i), 16, 24, "occlusion",
                                                      threads=1))["occluded_run"].max() >= 4 for i in range(6))
    assert long >= 5


def test_unordered_mode_spreads_views_in_random_order():
    concept = _spec("unordered", 0, views=8)
    centres = np.stack([-e[:, :3].T @ e[:, 3] for e in concept.spec.extrinsics])
    az = np.degrees(np.arctan2(centres[:, 1], centres[:, 0]))
    spread = np.ptp(np.degrees(np.unwrap(np.radians(np.sort(az)))))
    assert spread >= 85.0
    steps = np.abs((np.diff(az) + 180.0) % 360.0 - 180.0)
    assert steps.max() > 20.0  # not a smooth path


def test_visibility_events_on_hand_made_areas():
    visible = np.array([[5, 0, 3, 0], [0, 0, 3, 2], [0, 4, 0, 2], [0, 4, 0, 0], [0, 4, 3, 2]])
    amodal = np.array([[5, 0, 3, 0], [5, 0, 3, 2], [5, 4, 0, 2], [5, 4, 3, 2], [5, 4, 3, 2]])
    events = visibility_events(visible, amodal)
    assert events["late_entry"].tolist() == [False, True, False, True]
    assert events["first"].tolist() == [0, 2, 0, 1]
    assert events["exit_return"].tolist() == [False, False, True, True]
    # instance 2 left the image on view 2 (amodal 0): an exit, not an occlusion; instance 3 was occluded
    assert events["occluded_run"].tolist() == [0, 0, 0, 1]


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_written_split_is_deterministic_and_carries_concepts(tmp_path):
    a = write_concept_split(tmp_path / "a", "cval", 2, 4, 32, "near", seed=5, threads=1)
    write_concept_split(tmp_path / "b", "cval", 2, 4, 32, "near", seed=5, threads=1)
    assert _files(tmp_path / "a") == _files(tmp_path / "b")
    data = read_json(a)
    names = {c["id"]: c["name"] for c in data["categories"]}
    assert set(data["info"]["near_categories"]) == {names[i] for v in data["videos"] for i in v["concepts"]}
    for phrase, near in data["info"]["near_categories"].items():
        assert near == list(NEAR_CATEGORIES[phrase])
    for video in data["videos"]:
        assert video["ordered"] is True
        tracks = [t for t in data["tracks"] if t["video_id"] == video["id"]]
        present = {t["category_id"] for t in tracks}
        queried = set(video["concepts"])
        absent = queried - present
        assert len(absent) == 1 and len(queried) >= 2  # the negative phrase has no track, the targets do
        targets = queried - absent
        for cid in targets:
            assert 2 <= sum(t["category_id"] == cid for t in tracks) <= 6
        cousins = {c for cid in targets for c in NEAR_CATEGORIES[names[cid]]}
        assert sum(names[t["category_id"]] in cousins for t in tracks) >= 2  # near mode: at least 2 distractors
        images = [i for i in data["images"] if i["video_id"] == video["id"]]
        assert [i["frame_index"] for i in images] == list(range(4))
        assert all("camera" in i and (a.parent / i["depth_file"]).is_file() for i in images)
    track_ids = {t["id"] for t in data["tracks"]}
    assert all(ann["track_id"] in track_ids and ann["category_id"] == next(
        t["category_id"] for t in data["tracks"] if t["id"] == ann["track_id"]) for ann in data["annotations"])


def test_bad_arguments_raise_one_clear_error(tmp_path):
    rng = np.random.default_rng(0)
    with pytest.raises(InputError, match="mode"):
        sample_concept_spec(rng, 4, 32, "sideways")
    with pytest.raises(InputError, match="at least 2"):
        sample_concept_spec(rng, 4, 32, "video", phrases=["mug"])
    with pytest.raises(InputError, match="unknown phrase 'cup'"):
        sample_concept_spec(rng, 4, 32, "video", phrases=["mug", "cup"])
    with pytest.raises(InputError, match="split name"):
        write_concept_split(tmp_path, "../x", 1, 4, 32, "video")
    assert not any(tmp_path.iterdir())


def test_cli_writes_a_concept_split_and_rejects_misuse(tmp_path, capsys):
    args = ["--out", str(tmp_path), "--split", "cocc", "--scenes", "1", "--views", "3", "--size", "16",
            "--seed", "2", "--no-progress", "--threads", "1"]
    assert synthetic_main(args + ["--mode", "occlusion", "--concept"]) == 0
    data = json.loads((tmp_path / "cocc.json").read_text())
    assert data["info"]["arguments"]["mode"] == "occlusion" and "concepts" in data["videos"][0]
    assert synthetic_main(args + ["--mode", "near"]) == 2
    assert "needs --concept" in capsys.readouterr().err
    assert synthetic_main(args + ["--concept", "--vocab", "iv=cube"]) == 2
    assert "--vocab" in capsys.readouterr().err


def test_two_phrase_pool_gives_one_target_and_the_other_as_negative():
    for index in range(6):
        concept = sample_concept_spec(np.random.default_rng(index), 4, 32, "video", phrases=["chair", "mug"])
        assert len(concept.targets) == 1 and {*concept.targets, concept.negative} == {"chair", "mug"}
