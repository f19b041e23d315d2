"""CO3Dv2 category -> multi-view split (vision.prepare.co3d).

The fixture is written here in CO3Dv2's exact layout: ``ROOT/apple/frame_annotations.jgz`` and
``sequence_annotations.jgz`` (gzip JSON lists), ``set_lists/set_lists_*.json``, tiny JPEG frames, 16-bit depth PNGs
holding float16 bits (``.geometric.png``), 8-bit probability masks. Two sequences: one with
``intrinsics_format = "ndc_norm_image_bounds"`` (landscape frames), one with ``"ndc_isotropic"`` (portrait).

The reference projection is written from PyTorch3D's documented conventions, independently of the converter:
``X_cam = X_world @ R + T`` (row vectors; +X left, +Y up, +Z forward), ``PerspectiveCameras`` NDC
``x = fx * X / Z + px``, ``y = fy * Y / Z + py``, then the rasterizer's pixel-centre map (``pix_to_non_square_ndc``:
column j's centre is at NDC ``r / 2 - r (j + 0.5) / W``, r = 2 for image-bounds NDC, 2 W / min(W, H) isotropic)
inverted to an image column / row.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import cv2
import numpy as np
import pytest
from pycocotools import mask as mask_utils
from scipy.spatial.transform import Rotation

from tests.datasets.cameras import mean_distance_from_first_camera, project_with_split_camera
from tests.datasets.staging import add_user_file, assert_left_as_it_was, fail_late, snapshot
from vision.data.coco import load_split
from vision.errors import DataError, InputError
from vision.prepare import co3d as prepare_co3d

CATEGORY = "apple"
POINTS = np.array([[0.0, 0.0, 0.0], [0.3, -0.2, 0.1], [-0.25, 0.3, -0.2], [0.1, 0.35, 0.3]])
# sequence -> (intrinsics_format, W, H, frame numbers in file order (shuffled on purpose))
SEQUENCES = {
    "110_13051_23361": ("ndc_norm_image_bounds", 40, 30, [3, 0, 4, 1, 2]),
    "189_20393_38136": ("ndc_isotropic", 30, 44, [0, 1, 2]),
}
DEPTH_SCALE = 1.7


def _viewpoint(seq: str, number: int) -> dict:
    """A known PyTorch3D camera: random rotation, the points 4-6 units in front, NDC intrinsics."""
    rng = np.random.default_rng(number + (0 if seq.startswith("110") else 1000))
    R = Rotation.random(random_state=int(rng.integers(1 << 30))).as_matrix()
    T = np.array([rng.uniform(-0.3, 0.3), rng.uniform(-0.3, 0.3), rng.uniform(4.0, 6.0)])
    fmt = SEQUENCES[seq][0]
    return {"R": R.tolist(), "T": T.tolist(), "focal_length": [float(rng.uniform(2.0, 3.0)),
                                                                 float(rng.uniform(2.0, 3.0))],
            "principal_point": [float(rng.uniform(-0.1, 0.1)), float(rng.uniform(-0.1, 0.1))],
            "intrinsics_format": fmt}


def pytorch3d_pixels(points: np.ndarray, viewpoint: dict, width: int, height: int) -> np.ndarray:
    """Image (column, row) of world points, pixel centres at integers, from PyTorch3D's conventions (see the
    module docstring); nothing here is shared with the converter."""
    cam = points @ np.asarray(viewpoint["R"]) + np.asarray(viewpoint["T"])
    assert (cam[:, 2] > 0).all()
    fx, fy = viewpoint["focal_length"]
    px, py = viewpoint["principal_point"]
    x_ndc = fx * cam[:, 0] / cam[:, 2] + px
    y_ndc = fy * cam[:, 1] / cam[:, 2] + py
    if viewpoint["intrinsics_format"] == "ndc_norm_image_bounds":
        r_x = r_y = 2.0
    else:
        r_x, r_y = 2.0 * width / min(width, height), 2.0 * height / min(width, height)
    # invert ndc = r / 2 - r (j + 0.5) / S for the column j (width) and the row i (height)
    col = (r_x / 2 - x_ndc) * width / r_x - 0.5
    row = (r_y / 2 - y_ndc) * height / r_y - 0.5
    return np.stack([col, row], axis=1)


def _in_view0_opencv(points: np.ndarray, viewpoint0: dict) -> np.ndarray:
    """World points in view 0's camera frame, OpenCV axes (x right, y down): PyTorch3D's +X left, +Y up flipped."""
    cam = points @ np.asarray(viewpoint0["R"]) + np.asarray(viewpoint0["T"])
    return cam * np.array([-1.0, -1.0, 1.0])


def _mask(width: int, height: int, number: int) -> np.ndarray:
    """Probability * 255: a bright box (fg), a dim box (0.39: bg), and a 128 / 127 column pair at the edge."""
    m = np.zeros((height, width), np.uint8)
    if number == 2:
        return m  # empty: no annotation
    m[4:12, 5 + number:15 + number] = 200
    m[14:18, 2:8] = 100
    m[5:9, 20] = 128
    m[5:9, 21] = 127
    return m


def _depth(width: int, height: int, number: int) -> np.ndarray:
    rng = np.random.default_rng(number)
    d = rng.uniform(0.5, 3.0, (height, width)).astype(np.float16)
    d[0, 0] = 0
    d[1, 1] = np.inf
    return d


def write_co3d(root: Path, drop_mask_of: tuple[str, int] | None = None, half_depth_of: tuple[str, int] | None = None,
               edit=None) -> Path:
    """Write the fixture in CO3Dv2's layout under ``root`` and return ``root``."""
    cat = root / CATEGORY
    frames, seqs = [], []
    for seq, (fmt, width, height, numbers) in SEQUENCES.items():
        seqs.append({"sequence_name": seq, "category": CATEGORY, "video": None, "point_cloud": None,
                     "viewpoint_quality_score": 1.0})
        for number in numbers:
            base = f"{CATEGORY}/{seq}"
            image = f"{base}/images/frame{number + 1:06d}.jpg"
            (root / image).parent.mkdir(parents=True, exist_ok=True)
            rgb = np.full((height, width, 3), 40 + 30 * number, np.uint8)
            cv2.imwrite(str(root / image), rgb)
            depth_path = f"{base}/depths/frame{number + 1:06d}.jpg.geometric.png"
            (root / depth_path).parent.mkdir(parents=True, exist_ok=True)
            d = _depth(width, height, number)
            if (seq, number) == half_depth_of:
                d = d[::2, ::2]
            cv2.imwrite(str(root / depth_path), d.view(np.uint16))
            depth_mask = f"{base}/depth_masks/frame{number + 1:06d}.png"
            (root / depth_mask).parent.mkdir(parents=True, exist_ok=True)
            valid = np.zeros(d.shape, np.uint8)
            valid[:, : d.shape[1] // 2] = 255
            cv2.imwrite(str(root / depth_mask), valid)
            mask_path = f"{base}/masks/frame{number + 1:06d}.png"
            (root / mask_path).parent.mkdir(parents=True, exist_ok=True)
            cv2.imwrite(str(root / mask_path), _mask(width, height, number))
            mask = None if (seq, number) == drop_mask_of else {"path": mask_path, "mass": 100.0}
            frames.append({"sequence_name": seq, "frame_number": number, "frame_timestamp": 0.1 * number,
                           "image": {"path": image, "size": [height, width]},
                           "depth": {"path": depth_path, "scale_adjustment": DEPTH_SCALE, "mask_path": depth_mask},
                           "mask": mask, "viewpoint": _viewpoint(seq, number), "meta": {}})
    if edit is not None:
        edit(frames)
    with gzip.open(cat / "frame_annotations.jgz", "wt", encoding="utf-8") as f:
        json.dump(frames, f)
    with gzip.open(cat / "sequence_annotations.jgz", "wt", encoding="utf-8") as f:
        json.dump(seqs, f)
    (cat / "set_lists").mkdir()
    seq0 = "110_13051_23361"
    lists = {"train": [[seq0, n, f"{CATEGORY}/{seq0}/images/frame{n + 1:06d}.jpg"] for n in (0, 2, 4)],
             "val": [], "test": [[seq0, n, f"{CATEGORY}/{seq0}/images/frame{n + 1:06d}.jpg"] for n in (1, 3)]}
    (cat / "set_lists" / "set_lists_manyview_dev_0.json").write_text(json.dumps(lists))
    return root


def _viewpoints() -> dict[tuple[str, int], dict]:
    return {(s, n): _viewpoint(s, n) for s, (_, _, _, numbers) in SEQUENCES.items() for n in numbers}


@pytest.mark.parametrize("scale", [1.0, "mean"])
def test_every_point_reprojects_to_pytorch3d_pixels_in_both_intrinsics_formats(tmp_path: Path, scale) -> None:
    root = write_co3d(tmp_path / "co3d")
    path = prepare_co3d.convert_co3d(root, CATEGORY, tmp_path / "out", scale=scale)
    split = load_split(path)  # validates the schema and that every file exists
    assert [v["name"] for v in split.dataset["videos"]] == sorted(SEQUENCES)
    views = _viewpoints()
    checked = set()
    for video in split.dataset["videos"]:
        seq = video["name"]
        fmt, width, height, numbers = SEQUENCES[seq]
        assert video["ordered"] is False and (video["width"], video["height"]) == (width, height)
        frames = split.images_by_video[video["id"]]
        assert [f["co3d_frame_number"] for f in frames] == sorted(numbers)
        assert frames[0]["file_name"] == f"{CATEGORY}/{seq}/images/frame000001.jpg"
        np.testing.assert_array_equal(np.asarray(frames[0]["camera"]["extrinsics"]), np.eye(3, 4))
        factor = split.dataset["info"]["co3d"]["scale"][seq]
        points_new = factor * _in_view0_opencv(POINTS, views[(seq, 0)])
        for frame in frames:
            expected = pytorch3d_pixels(POINTS, views[(seq, frame["co3d_frame_number"])], width, height)
            assert (expected > -1).all() and (expected[:, 0] < width).all() and (expected[:, 1] < height).all()
            got = project_with_split_camera(points_new, frame["camera"])
            np.testing.assert_allclose(got, expected, atol=1e-3, rtol=0)
        checked.add(fmt)
        if scale == "mean":
            assert mean_distance_from_first_camera(frames) == pytest.approx(1.0, abs=1e-9)
        else:
            assert factor == 1.0
    assert checked == {"ndc_norm_image_bounds", "ndc_isotropic"}


def test_depth_round_trips_through_float16_png_with_scale_adjustment_and_scale(tmp_path: Path) -> None:
    seq = "110_13051_23361"
    root = write_co3d(tmp_path / "co3d", half_depth_of=(seq, 4))
    split = load_split(prepare_co3d.convert_co3d(root, CATEGORY, tmp_path / "out", sequences=[seq], depth=True,
                                                 scale=0.5))
    _, width, height, _ = SEQUENCES[seq]
    for frame in split.dataset["images"]:
        number = frame["co3d_frame_number"]
        stored = _depth(width, height, number).astype(np.float32)
        if number == 4:  # stored at half size: nearest-neighbour upsampled to the image's size
            stored = np.repeat(np.repeat(stored[::2, ::2], 2, axis=0), 2, axis=1)
        expected = np.where(np.isfinite(stored), stored * DEPTH_SCALE * 0.5, 0.0)
        got = split.depth(frame)
        assert got.shape == (height, width) and got[0, 0] == 0 and got[1, 1] == 0
        np.testing.assert_allclose(got, expected, rtol=1e-3, atol=0)
        assert frame["depth_file"] == f"depth/{frame['file_name']}.npz"
    # the depth mask zeroes the right half
    split = load_split(prepare_co3d.convert_co3d(root, CATEGORY, tmp_path / "out2", sequences=[seq], depth=True,
                                                 depth_mask=True, split="masked"))
    got = split.depth(split.dataset["images"][0])
    assert (got[:, width // 2:] == 0).all() and (got[2:, : width // 2] > 0).all()


def test_masks_become_one_track_per_sequence_thresholded_at_half(tmp_path: Path) -> None:
    seq = "110_13051_23361"
    root = write_co3d(tmp_path / "co3d", drop_mask_of=(seq, 3))
    split = load_split(prepare_co3d.convert_co3d(root, CATEGORY, tmp_path / "out"))
    assert split.dataset["categories"] == [{"id": 1, "name": CATEGORY}]
    tracks = split.dataset["tracks"]
    assert len(tracks) == 2 and all(t["caption"] == CATEGORY and t["category_id"] == 1 for t in tracks)
    by_image = {a["image_id"]: a for a in split.dataset["annotations"]}
    for frame in split.dataset["images"]:
        seq_name = split.videos[frame["video_id"]]["name"]
        number = frame["co3d_frame_number"]
        ann = by_image.get(frame["id"])
        if number == 2 or (seq_name, number) == (seq, 3):  # empty mask / mask: null
            assert ann is None
            assert frame["annotated"] is ((seq_name, number) != (seq, 3))
            continue
        assert frame["annotated"] is True
        assert split.tracks[ann["track_id"]]["video_id"] == frame["video_id"]
        expected = _mask(frame["width"], frame["height"], number) >= 128  # 200 and 128 in, 127 and 100 out
        np.testing.assert_array_equal(mask_utils.decode(ann["segmentation"]).astype(bool), expected)
        assert ann["area"] == expected.sum()


def test_frames_and_set_lists_select_frames(tmp_path: Path) -> None:
    root = write_co3d(tmp_path / "co3d")
    split = load_split(prepare_co3d.convert_co3d(root, CATEGORY, tmp_path / "out", frames=3))
    nums = {split.videos[v]["name"]: [f["co3d_frame_number"] for f in fs] for v, fs in split.images_by_video.items()}
    assert nums == {"110_13051_23361": [0, 2, 4], "189_20393_38136": [0, 1, 2]}
    path = prepare_co3d.convert_co3d(root, CATEGORY, tmp_path / "out", set_list="manyview_dev_0", subset="test")
    assert path.name == "test.json"
    split = load_split(path)
    assert [f["co3d_frame_number"] for f in split.dataset["images"]] == [1, 3]
    # view 0 is the first listed frame: identity; the other is relative to it
    views = _viewpoints()
    _, width, height, _ = SEQUENCES["110_13051_23361"]
    points_new = _in_view0_opencv(POINTS, views[("110_13051_23361", 1)])
    frame = split.dataset["images"][1]
    np.testing.assert_allclose(project_with_split_camera(points_new, frame["camera"]),
                               pytorch3d_pixels(POINTS, views[("110_13051_23361", 3)], width, height), atol=1e-3)
    # a set list whose image path disagrees with frame_annotations.jgz is refused, naming the entry
    lists_file = root / CATEGORY / "set_lists" / "set_lists_manyview_dev_0.json"
    lists = json.loads(lists_file.read_text())
    lists["train"][1][2] = "apple/elsewhere.jpg"
    lists_file.write_text(json.dumps(lists))
    with pytest.raises(DataError, match=r"set_lists_manyview_dev_0\.json: train\[1\]\[2\]=.*differs"):
        prepare_co3d.convert_co3d(root, CATEGORY, tmp_path / "out3", set_list="manyview_dev_0", subset="train")


def _set(index: int, keys: tuple[str, ...], value):
    def edit(frames: list[dict]) -> None:
        target = frames[index]
        for k in keys[:-1]:
            target = target[k]
        target[keys[-1]] = value
    return edit


@pytest.mark.parametrize("edit, pattern", [
    (_set(2, ("viewpoint", "R"), [[1, 0, 0], [0, 1, 0], [0, 0, 2]]), r"\[2\]\.viewpoint\.R=.*not a rotation"),
    (_set(1, ("viewpoint", "focal_length"), [2.0]), r"\[1\]\.viewpoint\.focal_length=.*expected 2 finite"),
    (_set(0, ("viewpoint", "intrinsics_format"), "screen"), r"\[0\]\.viewpoint\.intrinsics_format='screen'"),
    (_set(4, ("viewpoint", "T"), [0.0, "x", 1.0]), r"\[4\]\.viewpoint\.T=.*finite numbers"),
    (_set(3, ("viewpoint",), None), r"\[3\]: missing 'viewpoint'"),
    (_set(1, ("image", "size"), [31, 40]), r"\[1\]\.image\.size=\[31, 40\].*image is 40x30"),
])
def test_malformed_viewpoints_name_the_file_and_field(tmp_path: Path, edit, pattern) -> None:
    root = write_co3d(tmp_path / "co3d", edit=edit)
    with pytest.raises(DataError, match=r"frame_annotations\.jgz: " + pattern):
        prepare_co3d.convert_co3d(root, CATEGORY, tmp_path / "out")


def test_missing_files_and_bad_arguments_are_named(tmp_path: Path) -> None:
    root = write_co3d(tmp_path / "co3d")
    (root / CATEGORY / "110_13051_23361" / "images" / "frame000003.jpg").unlink()
    with pytest.raises(DataError, match=r"frame_annotations\.jgz: \[4\]\.image\.path=.*frame000003\.jpg.*not found"):
        prepare_co3d.convert_co3d(root, CATEGORY, tmp_path / "out")
    (root / CATEGORY / "189_20393_38136" / "depths" / "frame000002.jpg.geometric.png").unlink()
    with pytest.raises(DataError, match=r"\[6\]\.depth\.path=.*not found"):
        prepare_co3d.convert_co3d(root, CATEGORY, tmp_path / "out", sequences=["189_20393_38136"], depth=True)
    with pytest.raises(InputError, match="sequence 'nope'"):
        prepare_co3d.convert_co3d(root, CATEGORY, tmp_path / "out", sequences=["nope"])
    with pytest.raises(DataError, match=r"pear: category=.pear.: category folder not found"):
        prepare_co3d.convert_co3d(root, "pear", tmp_path / "out")
    (root / CATEGORY / "frame_annotations.jgz").write_bytes(b"not gzip")
    with pytest.raises(DataError, match=r"frame_annotations\.jgz: cannot read as gzip"):
        prepare_co3d.convert_co3d(root, CATEGORY, tmp_path / "out")


def test_the_cli_converts_and_reports_errors_in_one_line(tmp_path: Path, capsys) -> None:
    root = write_co3d(tmp_path / "co3d")
    out = tmp_path / "out"
    assert prepare_co3d.main([str(root), "--category", CATEGORY, "--out", str(out), "--sequences",
                              "189_20393_38136", "--frames", "2", "--scale", "mean", "--depth", "--link"]) == 0
    assert capsys.readouterr().out.strip() == str(out / "test.json")
    split = load_split(out / "test.json")
    assert [f["co3d_frame_number"] for f in split.dataset["images"]] == [0, 2]
    assert all("depth_file" in f for f in split.dataset["images"])
    assert prepare_co3d.main([str(root), "--category", CATEGORY, "--out", str(out), "--set-list", "missing"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and "set_lists_missing.json" in err[0]


def test_subsets_share_out_and_a_late_failure_leaves_it_whole(tmp_path: Path, capsys, monkeypatch) -> None:
    """Two subsets into one --out keep each other's frames (the folders are merged, not replaced); a third run
    that fails once every frame and depth map is written leaves all of it as it was."""
    root = write_co3d(tmp_path / "co3d")
    out = tmp_path / "out"
    add_user_file(out)
    argv = [str(root), "--category", CATEGORY, "--out", str(out), "--depth"]
    assert prepare_co3d.main([*argv, "--set-list", "manyview_dev_0", "--subset", "train"]) == 0
    assert prepare_co3d.main([*argv, "--set-list", "manyview_dev_0", "--subset", "test"]) == 0
    assert len(load_split(out / "train.json").dataset["images"]) == 3  # its files are all still there
    assert len(load_split(out / "test.json").dataset["images"]) == 2
    before = snapshot(out)
    written = fail_late(monkeypatch, prepare_co3d, "write_named_split")
    capsys.readouterr()
    assert prepare_co3d.main([*argv, "--scale", "mean"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert written and len(err) == 1 and "injected late failure" in err[0]
    assert_left_as_it_was(out, before, {"co3d", "out"})
