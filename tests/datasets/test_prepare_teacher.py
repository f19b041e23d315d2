"""vision.prepare.teacher (vision-prepare-real-detection): real frames labelled by YOLOX-nano as COCO splits.

The splits are built once from a small clip made of scikit-image's coffee photograph (a cup, OOV under the VOC
protocol, on a dining table, a VOC class) and two photographs, with the real teacher (skipped without
``../shared/weights``)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from tests.datasets.staging import add_user_file, assert_left_as_it_was, snapshot
from vision.data.coco import load_split
from vision.errors import InputError
from vision.prepare import teacher as prep
from vision.prepare.aigv import skimage_data_dir
from vision.prepare.oov_coco import VOC_CLASSES

CLIP_FRAMES = 40
STILL = 20  # frames 0..19 of the clip are one still image; 20..39 pan across the photograph


def _clip(path: Path) -> Path:
    from vision.data.io import read_image
    from vision.data.video import write_video

    coffee = read_image(skimage_data_dir() / "coffee.png")  # 600 x 400
    frames = []
    for i in range(CLIP_FRAMES):
        x = 0 if i < STILL else (i - STILL + 1) * 12
        frames.append(coffee[40:340, x:x + 320])
    return write_video(path, np.stack(frames), fps=10.0, crf=18)


def _sources(clip: Path) -> list[prep.Source]:
    photos = skimage_data_dir()
    return [prep.Source("clip", clip, "video", "test clip", "train"),
            prep.Source("astronaut", photos / "astronaut.png", "photo", "scikit-image astronaut.png", "val"),
            prep.Source("coffee", photos / "coffee.png", "photo", "scikit-image coffee.png", "test")]


class CountingTeacher:
    """YOLOX-nano, counting its calls (a cached image is not passed to it)."""

    def __init__(self) -> None:
        from vision.weights.nets.onnx_models import YOLOXNano

        self.net, self.calls = YOLOXNano(threads=1), 0
        self.height, self.width = self.net.height, self.net.width

    def detect(self, image, score_threshold, nms_threshold):
        self.calls += 1
        return self.net.detect(image, score_threshold, nms_threshold)


OPTIONS = {"max_frames": 8, "max_side": 320}


@pytest.fixture(scope="module")
def built(pretrained_weights, tmp_path_factory):
    root = tmp_path_factory.mktemp("real")
    clip = _clip(root / "src" / "clip.mp4")
    out = root / "out"
    logged: list[str] = []
    paths = prep.prepare(out, _sources(clip), **OPTIONS, log=logged.append)
    return out, paths, clip, logged


def _hashes(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _names(split: dict) -> dict[int, str]:
    return {c["id"]: c["name"] for c in split["categories"]}


def test_six_splits_validate_and_record_the_teacher(built):
    from vision.weights.registry import entry

    out, paths, _, logged = built
    assert sorted(paths) == sorted(f"real_{kind}_{role}" for kind in ("coco", "voc") for role in prep.SPLIT_ROLES)
    for name, path in paths.items():
        split = load_split(path)  # validates, every frame file included
        for img in split.dataset["images"]:
            assert split.load_image(img).shape == (img["height"], img["width"], 3)  # the stored size is declared
            assert max(img["width"], img["height"]) <= OPTIONS["max_side"]
        info = split.dataset["info"]
        teacher = info["teacher"]
        assert teacher["name"] == "yolox-nano" and teacher["sha256"] == entry("yolox-nano").sha256
        assert teacher["file"] == "yolox_nano.onnx" and teacher["input_size"] == [416, 416]
        assert (teacher["score_threshold"], teacher["nms_threshold"]) == (0.3, 0.45)
        assert "version" in teacher
        assert info["sampling"]["max_frames"] == 8 and info["sampling"]["max_side"] == 320
        assert info["sampling"]["duplicate_threshold"] == prep.DUPLICATE_THRESHOLD
        assert {s["name"]: s["role"] for s in info["sources"]} == {"clip": "train", "astronaut": "val",
                                                                   "coffee": "test"}
        assert info["split"] == name.rsplit("_", 1)[1]
        for ann in split.dataset["annotations"]:
            x, y, w, h = ann["bbox"]
            assert ann["iscrowd"] == 0 and ann["area"] == pytest.approx(w * h, abs=0.01) and 0 < ann["score"] <= 1
    assert any(line.startswith("train: clip (") for line in logged)


def test_categories_are_coco_2017(built):
    from vision.weights.nets.onnx_models import COCO_CLASSES

    split = json.loads(built[1]["real_coco_train"].read_text())
    assert [c["id"] for c in split["categories"]] == list(prep.COCO_CATEGORY_IDS)
    assert [c["name"] for c in split["categories"]] == list(COCO_CLASSES)
    assert len(set(prep.COCO_CATEGORY_IDS)) == 80 and prep.COCO_CATEGORY_IDS[-1] == 90
    assert _names(split)[1] == "person" and _names(split)[47] == "cup" and _names(split)[67] == "dining table"
    assert all(c["split"] == "iv" for c in split["categories"])
    assert split["info"]["vocabulary"] == list(COCO_CLASSES)


def test_roles_are_disjoint_by_source(built):
    seen = {}
    for role in prep.SPLIT_ROLES:
        images = json.loads(built[1][f"real_coco_{role}"].read_text())["images"]
        seen[role] = {img["video"] for img in images}
        assert all(img["file_name"].startswith("frames/") for img in images)
    assert seen == {"train": {"clip"}, "val": {"astronaut"}, "test": {"coffee"}}


def test_voc_train_holds_only_voc_boxes_and_test_annotates_oov(built):
    paths = built[1]
    coco_train = json.loads(paths["real_coco_train"].read_text())
    voc_train = json.loads(paths["real_voc_train"].read_text())
    voc_test = json.loads(paths["real_voc_test"].read_text())
    names = _names(coco_train)
    assert "cup" in {names[a["category_id"]] for a in coco_train["annotations"]}  # an OOV object in training frames
    assert {names[a["category_id"]] for a in voc_train["annotations"]} <= set(VOC_CLASSES)
    assert len(voc_train["images"]) == len(coco_train["images"])  # OOV objects stay in the images, unannotated
    assert voc_train["info"]["vocabulary"] == voc_test["info"]["vocabulary"]
    assert set(voc_test["info"]["vocabulary"]) == set(VOC_CLASSES)
    split_of = {c["id"]: c["split"] for c in voc_test["categories"]}
    assert {split_of[a["category_id"]] for a in voc_test["annotations"]} == {"iv", "oov"}  # the table, the cup
    assert sum(s == "iv" for s in split_of.values()) == 20 and sum(s == "oov" for s in split_of.values()) == 60


def test_sampling_respects_max_frames_and_drops_duplicates(built):
    split = json.loads(built[1]["real_coco_train"].read_text())
    clip = next(s for s in split["info"]["sources"] if s["name"] == "clip")
    # stride ceil(40 / 8) = 5: frames 0, 5, ..., 35; 5, 10 and 15 repeat frame 0 (the still part)
    assert (clip["stride"], clip["frames_sampled"], clip["duplicates_dropped"]) == (5, 8, 3)
    assert [img["frame"] for img in split["images"]] == [0, 20, 25, 30, 35]
    assert [img["file_name"] for img in split["images"]][:2] == ["frames/clip/000000.jpg", "frames/clip/000020.jpg"]
    frames = [i for i, _ in prep.sample_video(built[2], CLIP_FRAMES, 8, None, 0.0)]
    assert frames == [0, 5, 10, 15, 20, 25, 30, 35]  # threshold 0: nothing dropped, spread over the clip


def test_rerun_is_byte_identical_and_cached(built, tmp_path):
    out = tmp_path / "out"
    shutil.copytree(built[0], out)
    before = _hashes(out)
    teacher = CountingTeacher()
    prep.prepare(out, _sources(built[2]), **OPTIONS, teacher=teacher, log=lambda _: None)
    assert teacher.calls == 0
    assert _hashes(out) == before
    assert _hashes(out) == _hashes(built[0])


def test_failure_leaves_the_output_as_it_was(built, tmp_path):
    out = tmp_path / "out"
    shutil.copytree(built[0], out)
    add_user_file(out)
    before = snapshot(out)

    images = sum(len(json.loads((out / f"real_coco_{role}.json").read_text())["images"]) for role in prep.SPLIT_ROLES)

    class Failing(CountingTeacher):
        """Fails on the last image: every other frame has been written by then."""

        def detect(self, image, score_threshold, nms_threshold):
            if self.calls == images - 1:
                raise InputError("teacher failed")
            return super().detect(image, score_threshold, nms_threshold)

    with pytest.raises(InputError, match="teacher failed"):  # a new threshold: nothing cached, the teacher runs
        prep.prepare(out, _sources(built[2]), **OPTIONS, score_threshold=0.5, teacher=Failing(), log=print)
    assert_left_as_it_was(out, before, {"out"})


def test_an_unreadable_video_is_refused_before_anything_is_written(tmp_path):
    bad = tmp_path / "bad.mp4"
    bad.write_bytes(b"\x00not a video" * 100)
    with pytest.raises(InputError, match="bad.mp4 cannot be read"):
        prep.prepare(tmp_path / "out", [prep.Source("bad", bad, "video", "x", "train")], teacher=object())
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("argv, words", [
    (["--max-frames", "0"], "--max-frames"), (["--max-side", "-5"], "--max-side"),
    (["--threads", "0"], "--threads"), (["--score-threshold", "1.5"], "--score-threshold"),
    (["--footage", "{missing}"], "is not a folder"), (["--opencv-samples", "{missing}"], "lacks vtest.avi"),
])
def test_cli_bad_input_is_one_error_line(argv, words, tmp_path, capsys):
    argv = [a.format(missing=tmp_path / "missing") for a in argv]
    assert prep.main(["--out", str(tmp_path / "out"), *argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and words in err[0]
    assert not (tmp_path / "out").exists()


def test_cli_unreadable_footage_names_the_file(tmp_path, capsys):
    footage = tmp_path / "footage"
    footage.mkdir()
    (footage / "broken.mp4").write_bytes(b"junk" * 1000)
    assert prep.main(["--out", str(tmp_path / "out"), "--footage", str(footage)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and "broken.mp4" in err[0]
    assert not (tmp_path / "out").exists()


def test_default_sources_and_roles(tmp_path):
    logged: list[str] = []
    sources = prep.default_sources(tmp_path / "no_samples", [tmp_path / "no_footage"], if_present=True,
                                   log=logged.append)
    names = [s.name for s in sources]
    assert names[:2] == ["bikes", "carphone_pristine"] and "bigbuckbunny" not in names  # no animated film
    assert [s.name for s in sources if s.kind == "photo"] == [Path(p).stem for p in prep.PHOTOS]
    assert all(s.role == "train" for s in sources)
    assert len(logged) == 2 and "OpenCV" in logged[0] and "no_footage" in logged[1]
    with pytest.raises(InputError, match="not a folder"):
        prep.default_sources(None, [tmp_path / "no_footage"], log=lambda _: None)
    held_out = {name for name, role in prep.ROLES.items() if role == "test"}
    from vision.prepare.real_checked import LABELS  # its photographs are held out too (never read here)

    checked = {Path(n).stem for n, s in json.loads(LABELS.read_text())["sources"].items() if s["kind"] == "photo"}
    assert held_out == {"cup", "mmaction2_basketball", "mmaction2_two_people"} | checked
    assert {name for name, role in prep.ROLES.items() if role == "val"} == {"mmaction2_pool"}


def test_real_footage_roles(shared_footage):
    sources = prep.default_sources(None, [shared_footage], if_present=True, log=lambda _: None)
    roles = {s.name: s.role for s in sources if s.origin.startswith("footage")}
    assert roles == {"mmaction2_basketball": "test", "mmaction2_makeup": "train", "mmaction2_pool": "val",
                     "mmaction2_two_people": "test"}
