"""vision.prepare.vos (vision-prepare-vos): DAVIS 2017 / YouTube-VOS / MOSE folders -> one COCO-video split.

The fixtures are written by the tests in the upstream layouts: 8x6 JPEG frames and palette PNG masks (pixel value =
object id, 0 background, 255 void).
"""

import json

import numpy as np
import pytest
from PIL import Image
from pycocotools import mask as mask_utils

from tests.datasets.staging import add_user_file, assert_left_as_it_was, fail_late, snapshot
from vision.data.coco import load_split
from vision.errors import DataError, InputError
from vision.evaluation.evaluate import evaluate
from vision.prepare import vos

W, H = 8, 6
PALETTE = [0, 0, 0, 128, 0, 0, 0, 128, 0, 128, 128, 0] + [0, 0, 0] * 251 + [224, 224, 192]  # DAVIS-like


def _frame(path, value=100, size=(W, H)):
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(np.full((size[1], size[0], 3), value, np.uint8)).save(path, quality=95)


def _mask(path, ids, mode="P"):
    path.parent.mkdir(parents=True, exist_ok=True)
    image = Image.fromarray(np.asarray(ids, np.uint8), mode="L")
    if mode == "P":
        image = image.convert("P")
        image.putpalette(PALETTE)
    elif mode == "RGB":
        image = image.convert("RGB")
    image.save(path)


def _ids(boxes):
    """[H, W] ids with each ``object id -> (x0, y0, x1, y1)`` box filled (later ids drawn over earlier ones)."""
    ids = np.zeros((H, W), np.uint8)
    for object_id, (x0, y0, x1, y1) in boxes.items():
        ids[y0:y1, x0:x1] = object_id
    return ids


def _davis(root):
    """Two videos of 3 frames; in ``bear`` object 2 enters on frame 2; void pixels in ``bear`` frame 0."""
    videos = {
        "bear": [{1: (0, 0, 3, 3)}, {1: (1, 0, 4, 3)}, {1: (2, 0, 5, 3), 2: (5, 3, 8, 6)}],
        "dog": [{1: (2, 2, 6, 5)}, {1: (2, 2, 6, 6)}, {}],
    }
    for name, frames in videos.items():
        for t, boxes in enumerate(frames):
            _frame(root / "JPEGImages" / "480p" / name / f"{t:05d}.jpg", 40 * t)
            ids = _ids(boxes)
            if name == "bear" and t == 0:
                ids[5, 0] = vos.VOID
            _mask(root / "Annotations" / "480p" / name / f"{t:05d}.png", ids)
    (root / "ImageSets" / "2017").mkdir(parents=True)
    (root / "ImageSets" / "2017" / "train.txt").write_text("bear\n")
    (root / "ImageSets" / "2017" / "val.txt").write_text("dog\nbear\n")
    return videos


def _youtube(root, split="valid"):
    """One video, frames 00000/00005/00010/00015; masks only on 00000 (object 1) and 00010 (object 2 enters)."""
    base = root / split
    for name in ("00000", "00005", "00010", "00015"):
        _frame(base / "JPEGImages" / "abc123" / f"{name}.jpg")
    _mask(base / "Annotations" / "abc123" / "00000.png", _ids({1: (0, 0, 2, 2)}))
    _mask(base / "Annotations" / "abc123" / "00010.png", _ids({2: (4, 2, 7, 5)}))
    meta = {"videos": {"abc123": {"objects": {"1": {"category": "person", "frames": ["00000"]},
                                              "2": {"category": "dog", "frames": ["00010"]}}}}}
    (base / "meta.json").write_text(json.dumps(meta))
    return base


def _results_from_ground_truth(split):
    image_video = {img["id"]: img["video_id"] for img in split["images"]}
    return [{"video_id": image_video[a["image_id"]], "track_id": a["track_id"], "image_id": a["image_id"],
             "segmentation": a["segmentation"], "score": 1.0} for a in split["annotations"]]


def test_davis_round_trip_scores_perfectly(tmp_path):
    videos = _davis(tmp_path / "DAVIS")
    path = vos.convert_vos(tmp_path / "DAVIS", tmp_path / "out", "davis", subset="val")
    assert path == tmp_path / "out" / "val.json"
    split = load_split(path)  # validates, and checks every frame file exists under out/
    assert [v["name"] for v in split.dataset["videos"]] == ["dog", "bear"]  # the list's order
    assert all(v["ordered"] and (v["width"], v["height"]) == (W, H) for v in split.dataset["videos"])
    assert [c["name"] for c in split.dataset["categories"]] == ["object"]
    assert len(split.dataset["images"]) == 6 and len(split.tracks) == 3
    for video in split.dataset["videos"]:
        frames = split.images_by_video[video["id"]]
        assert [im["frame_index"] for im in frames] == [0, 1, 2]
        assert all(im["annotated"] for im in frames)
        assert (split.root / frames[0]["file_name"]).read_bytes() == \
            (tmp_path / "DAVIS" / "JPEGImages" / "480p" / video["name"] / "00000.jpg").read_bytes()
        # every mask pixel of every object comes back, and the void pixel belongs to no object
        for t, im in enumerate(frames):
            expected = _ids(videos[video["name"]][t])
            got = np.zeros((H, W), np.uint8)
            for ann in split.annotations_by_image[im["id"]]:
                m = mask_utils.decode(ann["segmentation"]).astype(bool)
                ys, xs = np.nonzero(m)
                assert ann["area"] == m.sum()
                assert ann["bbox"] == [xs.min(), ys.min(), xs.max() - xs.min() + 1, ys.max() - ys.min() + 1]
                assert isinstance(ann["segmentation"]["counts"], str)
                got[m] = split.tracks[ann["track_id"]]["object_id"]
            np.testing.assert_array_equal(got, expected)
    # the dog's empty last frame has no annotation; bbox of bear object 1 on frame 0 is XYWH
    bear = next(v["id"] for v in split.dataset["videos"] if v["name"] == "bear")
    first = split.annotations_by_image[split.images_by_video[bear][0]["id"]]
    assert [a["bbox"] for a in first] == [[0.0, 0.0, 3.0, 3.0]]
    results = tmp_path / "results.json"
    results.write_text(json.dumps(_results_from_ground_truth(split.dataset)))
    metrics = evaluate(path, results, "tracking")
    assert metrics["J&F"] == pytest.approx(1.0) and metrics["J"] == pytest.approx(1.0)
    assert metrics["num_tracks"] == 3
    # a wrong result scores below 1 (the round trip is not trivially 1)
    wrong = _results_from_ground_truth(split.dataset)[1:]
    assert evaluate(path, wrong, "tracking")["J&F"] < 1.0


def test_an_object_entering_late_starts_on_its_first_frame(tmp_path):
    _davis(tmp_path / "DAVIS")
    split = load_split(vos.convert_vos(tmp_path / "DAVIS", tmp_path / "out", "davis", subset="train", link=True))
    assert [v["name"] for v in split.dataset["videos"]] == ["bear"]
    late = next(t for t in split.tracks.values() if t["object_id"] == 2)
    frame_of = {im["id"]: im["frame_index"] for im in split.dataset["images"]}
    frames = sorted(frame_of[a["image_id"]] for a in split.dataset["annotations"] if a["track_id"] == late["id"])
    assert frames == [2]
    early = next(t for t in split.tracks.values() if t["object_id"] == 1)
    assert sorted(frame_of[a["image_id"]] for a in split.dataset["annotations"]
                  if a["track_id"] == early["id"]) == [0, 1, 2]
    # link=True hard-links the frames
    src = tmp_path / "DAVIS" / "JPEGImages" / "480p" / "bear" / "00000.jpg"
    assert (split.root / "train" / "bear" / "00000.jpg").stat().st_ino == src.stat().st_ino
    # without a subset every video folder is converted, into all.json
    assert load_split(vos.convert_vos(tmp_path / "DAVIS", tmp_path / "out", "davis")).file.endswith("all.json")


def test_the_cli_converts_davis_train_and_val_in_one_run(tmp_path, capsys):
    """``--subset train val`` writes ``OUT/train.json`` and ``OUT/val.json`` (the README's DAVIS example), each
    with the videos of its ImageSets/2017 list; ``--name`` goes with one subset only."""
    _davis(tmp_path / "DAVIS")
    out = tmp_path / "davis2017"
    assert vos.main([str(tmp_path / "DAVIS"), "--layout", "davis", "--subset", "train", "val", "--out", str(out)]) == 0
    assert capsys.readouterr().out.split() == [str(out / "train.json"), str(out / "val.json")]
    train, val = load_split(out / "train.json"), load_split(out / "val.json")
    assert [v["name"] for v in train.dataset["videos"]] == ["bear"]
    assert [v["name"] for v in val.dataset["videos"]] == ["dog", "bear"]
    assert (out / "train" / "bear" / "00000.jpg").is_file() and (out / "val" / "dog" / "00000.jpg").is_file()
    with pytest.raises(SystemExit):
        vos.main([str(tmp_path / "DAVIS"), "--subset", "train", "val", "--name", "x", "--out", str(out)])
    assert "one --subset" in capsys.readouterr().err


def test_an_existing_file_as_out_is_refused(tmp_path, capsys):
    _davis(tmp_path / "DAVIS")
    existing = tmp_path / "davis.json"
    existing.write_text("{}")
    with pytest.raises(InputError, match=r"--out is a folder.*davis\.json is a file"):
        vos.convert_vos(tmp_path / "DAVIS", existing, "davis", subset="val")
    assert vos.main([str(tmp_path / "DAVIS"), "--subset", "val", "--out", str(existing)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: --out is a folder") and existing.read_text() == "{}"


def test_youtube_sparse_annotations_and_meta_categories(tmp_path):
    _youtube(tmp_path / "ytvos")
    path = vos.convert_vos(tmp_path / "ytvos", tmp_path / "out", "youtube", subset="valid")
    split = load_split(path)
    frames = split.images_by_video[1]
    assert [im["file_name"] for im in frames] == [f"valid/abc123/{n}.jpg" for n in ("00000", "00005", "00010",
                                                                                     "00015")]
    assert [im["frame_index"] for im in frames] == [0, 1, 2, 3]
    assert [im["annotated"] for im in frames] == [True, False, True, False]
    annotated = {frames[0]["id"], frames[2]["id"]}
    assert {a["image_id"] for a in split.dataset["annotations"]} == annotated
    assert len(split.dataset["annotations"]) == 2
    names = {split.categories[t["category_id"]]["name"]: t["object_id"] for t in split.tracks.values()}
    assert names == {"person": 1, "dog": 2}
    second = next(a for a in split.dataset["annotations"] if a["image_id"] == frames[2]["id"])
    assert split.tracks[second["track_id"]]["object_id"] == 2 and second["bbox"] == [4.0, 2.0, 3.0, 3.0]
    # MOSE: the same layout; meta.json optional (every object is "object")
    (tmp_path / "ytvos" / "valid" / "meta.json").unlink()
    with pytest.raises(DataError, match="meta.json"):
        vos.convert_vos(tmp_path / "ytvos", tmp_path / "out", "youtube", subset="valid")
    mose = load_split(vos.convert_vos(tmp_path / "ytvos", tmp_path / "mose", "mose", subset="valid"))
    assert [c["name"] for c in mose.dataset["categories"]] == ["object"] and len(mose.tracks) == 2


def test_malformed_inputs_name_the_file(tmp_path, capsys):
    root = tmp_path / "DAVIS"
    _davis(root)
    bad_size = root / "Annotations" / "480p" / "dog" / "00001.png"
    _mask(bad_size, np.zeros((H + 1, W), np.uint8))
    with pytest.raises(DataError, match=r"00001\.png.*mask is 8x7 but its frame is 8x6"):
        vos.convert_vos(root, tmp_path / "out", "davis", subset="val")
    _mask(bad_size, _ids({1: (0, 0, 2, 2)}), mode="RGB")
    with pytest.raises(DataError, match=r"00001\.png.*palette.*'RGB'"):
        vos.convert_vos(root, tmp_path / "out", "davis", subset="val")
    _mask(bad_size, _ids({1: (0, 0, 2, 2)}), mode="L")  # single-channel ids are accepted
    assert load_split(vos.convert_vos(root, tmp_path / "out", "davis", subset="val")).tracks
    (root / "Annotations" / "480p" / "dog" / "00009.png").write_bytes(bad_size.read_bytes())
    with pytest.raises(DataError, match=r"00009\.png.*no frame"):
        vos.convert_vos(root, tmp_path / "out", "davis")
    with pytest.raises(DataError, match=r"ImageSets.*test\.txt.*not found"):
        vos.convert_vos(root, tmp_path / "out", "davis", subset="test")
    with pytest.raises(InputError, match="split name"):
        vos.convert_vos(root, tmp_path / "out", "davis", name="../x")
    with pytest.raises(DataError, match="escapes"):
        vos.convert_vos(root, tmp_path / "out", "youtube", subset="../..")
    # the CLI: a missing Annotations folder -> status 2, one error line naming the folder
    youtube = _youtube(tmp_path / "yt")
    for p in sorted((youtube / "Annotations").rglob("*"), reverse=True):
        p.unlink() if p.is_file() else p.rmdir()
    (youtube / "Annotations").rmdir()
    capsys.readouterr()
    assert vos.main([str(tmp_path / "yt"), "--out", str(tmp_path / "o"), "--layout", "youtube",
                     "--subset", "valid"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error:") and "valid/Annotations" in err[0]
    assert vos.main([str(root), "--out", str(tmp_path / "o2"), "--subset", "train"]) == 0
    assert capsys.readouterr().out.strip() == str(tmp_path / "o2" / "train.json")


def test_a_late_failure_leaves_the_old_output_whole(tmp_path, capsys, monkeypatch):
    """The second subset fails as its split is written: the first one is not put in place either."""
    _davis(tmp_path / "DAVIS")
    out = tmp_path / "out"
    add_user_file(out)
    argv = [str(tmp_path / "DAVIS"), "--layout", "davis", "--subset", "train", "val", "--out", str(out)]
    assert vos.main(argv) == 0
    before = snapshot(out)
    (tmp_path / "DAVIS" / "ImageSets" / "2017" / "train.txt").write_text("dog\n")
    written = fail_late(monkeypatch, vos, "write_named_split", call=2)
    capsys.readouterr()
    assert vos.main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(written) == 2 and len(err) == 1 and "injected late failure" in err[0]
    assert_left_as_it_was(out, before, {"DAVIS", "out"})
