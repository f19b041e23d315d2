"""COLMAP text model -> one unordered multi-view split (vision.prepare.colmap).

The fixture is written here in COLMAP's exact text layout: four cameras (PINHOLE, SIMPLE_PINHOLE, OPENCV,
SIMPLE_RADIAL) looking at a few 3D points from around them, tiny PNG images. The reference projection below is
COLMAP's own model written independently of the converter (scipy for the quaternion, COLMAP's pixel convention with
the top-left pixel centre at (0.5, 0.5)).
"""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from tests.datasets.cameras import mean_distance_from_first_camera, project_with_split_camera
from tests.datasets.staging import add_user_file, assert_left_as_it_was, fail_late, snapshot
from vision.data.coco import load_split
from vision.errors import DataError
from vision.prepare import colmap as prepare_colmap

W, H = 96, 72
POINTS = 4.0 * np.array([[0.0, 0.0, 0.0], [0.4, -0.2, 0.1], [-0.3, 0.3, -0.2], [0.1, 0.35, 0.3], [-0.25, -0.3, 0.25]])
# (camera id, model, params); OPENCV and SIMPLE_RADIAL carry real distortion
CAMERAS = [
    (1, "PINHOLE", [70.0, 66.0, 47.0, 37.0]),
    (2, "SIMPLE_PINHOLE", [60.0, 48.5, 35.5]),
    (3, "OPENCV", [65.0, 63.0, 49.0, 34.0, -0.3, 0.08, 0.004, -0.003]),
    (4, "SIMPLE_RADIAL", [62.0, 48.0, 36.0, 0.2]),
]
# camera centres in COLMAP's (arbitrary) world, all looking at the origin; names out of id order on purpose
VIEWS = [(7, 3, "c_opencv.png", [0.5, -3.0, 4.0]), (3, 1, "a_pinhole.png", [3.5, 0.4, 2.0]),
         (5, 2, "b_simple.png", [-3.0, 1.0, 3.0]), (9, 4, "d_radial.png", [0.2, 3.2, -3.4])]


def _look_at(centre: np.ndarray) -> np.ndarray:
    """World-to-camera rotation (rows: camera x right, y down, z forward) looking at the origin."""
    forward = -centre / np.linalg.norm(centre)
    right = np.cross(forward, [0.0, 0.0, 1.0])
    right /= np.linalg.norm(right)
    down = np.cross(forward, right)
    return np.stack([right, down, forward])


def _colmap_params(model: str, params: list[float]) -> tuple[float, float, float, float, list[float]]:
    if model == "PINHOLE":
        return (*params, [0.0] * 4)
    if model == "SIMPLE_PINHOLE":
        return params[0], params[0], params[1], params[2], [0.0] * 4
    if model == "SIMPLE_RADIAL":
        return params[0], params[0], params[1], params[2], [params[3], 0.0, 0.0, 0.0]
    return (*params[:4], params[4:])


def colmap_project(points: np.ndarray, qvec: list[float], tvec: np.ndarray, model: str, params: list[float],
                   distort: bool) -> np.ndarray:
    """COLMAP pixels (top-left pixel centre at (0.5, 0.5)) of world points; ``distort=False`` drops the lens
    distortion (the pinhole part only)."""
    rot = Rotation.from_quat([qvec[1], qvec[2], qvec[3], qvec[0]]).as_matrix()  # scipy is scalar-last
    cam = points @ rot.T + tvec
    x, y = cam[:, 0] / cam[:, 2], cam[:, 1] / cam[:, 2]
    fx, fy, cx, cy, (k1, k2, p1, p2) = _colmap_params(model, params)
    if distort:
        r2 = x * x + y * y
        radial = 1 + k1 * r2 + k2 * r2 * r2
        x, y = (x * radial + 2 * p1 * x * y + p2 * (r2 + 2 * x * x),
                y * radial + p1 * (r2 + 2 * y * y) + 2 * p2 * x * y)
    return np.stack([fx * x + cx, fy * y + cy], axis=1)


def _poses() -> dict[int, tuple[list[float], np.ndarray]]:
    poses = {}
    for image_id, _, _, centre in VIEWS:
        rot = _look_at(np.asarray(centre))
        x, y, z, w = Rotation.from_matrix(rot).as_quat()
        poses[image_id] = ([w, x, y, z], -rot @ np.asarray(centre))
    return poses


def _dot_image(pixel_cv: np.ndarray) -> np.ndarray:
    """A dark image with a soft bright blob centred at an OpenCV pixel position (for locating after resampling)."""
    v, u = np.mgrid[0:H, 0:W].astype(np.float64)
    blob = np.exp(-((u - pixel_cv[0]) ** 2 + (v - pixel_cv[1]) ** 2) / (2 * 1.5 ** 2))
    gray = np.round(blob * 250).astype(np.uint8)
    return np.stack([gray] * 3, axis=-1)


def write_model(root: Path, cameras: list | None = None, views: list | None = None,
                extra_image_line: str | None = None) -> tuple[Path, Path]:
    """Write ``root/sparse/{cameras,images,points3D}.txt`` and ``root/images/*.png`` in COLMAP's text layout."""
    model, images = root / "sparse", root / "images"
    model.mkdir(parents=True)
    images.mkdir(parents=True)
    cams = cameras or CAMERAS
    lines = ["# Camera list with one line of data per camera:", "#   CAMERA_ID, MODEL, WIDTH, HEIGHT, PARAMS[]",
             f"# Number of cameras: {len(cams)}"]
    lines += [f"{cid} {model_name} {W} {H} " + " ".join(repr(p) for p in params) for cid, model_name, params in cams]
    (model / "cameras.txt").write_text("\n".join(lines) + "\n")
    poses = _poses()
    by_id = {cid: (m, p) for cid, m, p in cams}
    lines = ["# Image list with two lines of data per image:",
             "#   IMAGE_ID, QW, QX, QY, QZ, TX, TY, TZ, CAMERA_ID, NAME", "#   POINTS2D[] as (X, Y, POINT3D_ID)"]
    for image_id, cid, name, _ in views or VIEWS:
        q, t = poses[image_id]
        m, p = by_id[cid]
        pix = colmap_project(POINTS, q, t, m, p, distort=True)
        assert (pix > 1).all() and (pix[:, 0] < W - 1).all() and (pix[:, 1] < H - 1).all()
        lines.append(f"{image_id} " + " ".join(repr(float(v)) for v in [*q, *t]) + f" {cid} {name}")
        lines.append(" ".join(f"{u!r} {v!r} {j + 1}" for j, (u, v) in enumerate(pix.tolist())) if image_id != 5
                     else "")  # an image with no 2D points has an empty second line
        # the blob sits where COLMAP's full (distorted) model puts point 1, in OpenCV pixels
        cv2.imwrite(str(images / name), cv2.cvtColor(_dot_image(pix[1] - 0.5), cv2.COLOR_RGB2BGR))
    if extra_image_line is not None:
        lines += [extra_image_line, ""]
    (model / "images.txt").write_text("\n".join(lines) + "\n")
    lines = ["# 3D point list with one line of data per point:",
             "#   POINT3D_ID, X, Y, Z, R, G, B, ERROR, TRACK[] as (IMAGE_ID, POINT2D_IDX)"]
    for j, p in enumerate(POINTS):
        x, y, z = (float(c) for c in p)
        lines.append(f"{j + 1} {x!r} {y!r} {z!r} 200 100 {j * 10} 0.5 3 {j} 5 {j} 7 {j} 9 {j}")
    (model / "points3D.txt").write_text("\n".join(lines) + "\n")
    return model, images


@pytest.mark.parametrize("scale", [1.0, "mean"])
def test_every_point_reprojects_to_colmap_pixels_in_every_view(tmp_path: Path, scale) -> None:
    model, images = write_model(tmp_path)
    path = prepare_colmap.convert_colmap(model, images, tmp_path / "out", scale=scale)
    split = load_split(path)  # validates the schema and that every file exists
    (video,) = split.videos.values()
    assert video["ordered"] is False and (video["width"], video["height"]) == (W, H)
    frames = split.images_by_video[video["id"]]
    assert [f["file_name"] for f in frames] == ["images/a_pinhole.png", "images/b_simple.png",
                                                "images/c_opencv.png", "images/d_radial.png"]
    np.testing.assert_array_equal(np.asarray(frames[0]["camera"]["extrinsics"]), np.eye(3, 4))
    with np.load(tmp_path / "out" / "points3D.npz") as data:
        points_new, ids, rgb = data["xyz"], data["ids"], data["rgb"]
    np.testing.assert_array_equal(ids, np.arange(1, 6))
    assert rgb[2].tolist() == [200, 100, 20]
    factor = split.dataset["info"]["colmap"]["scale"]
    poses = _poses()
    # the new world frame is camera 3's (a_pinhole) frame, scaled: check the points file against it independently
    q0, t0 = poses[3]
    np.testing.assert_allclose(points_new, factor * (POINTS @ Rotation.from_quat([*q0[1:], q0[0]]).as_matrix().T
                                                     + t0), atol=1e-9)
    cams = {cid: (m, p) for cid, m, p in CAMERAS}
    for frame in frames:
        image_id = frame["colmap_image_id"]
        cid = next(c for i, c, _, _ in VIEWS if i == image_id)
        m, p = cams[cid]
        expected = colmap_project(POINTS, *poses[image_id], m, p, distort=False) - 0.5  # COLMAP -> OpenCV pixels
        np.testing.assert_allclose(project_with_split_camera(points_new, frame["camera"]), expected, atol=1e-3, rtol=0)
    if scale == "mean":
        assert mean_distance_from_first_camera(frames) == pytest.approx(1.0, abs=1e-9)
    else:
        assert factor == 1.0


def test_distorted_images_are_undistorted_to_the_pinhole_k(tmp_path: Path) -> None:
    model, images = write_model(tmp_path)
    split = load_split(prepare_colmap.convert_colmap(model, images, tmp_path / "out"))
    with np.load(tmp_path / "out" / "points3D.npz") as data:
        points_new = data["xyz"]
    for frame in split.dataset["images"]:
        # the bright blob (drawn at point 1's distorted pixel) must now sit at its pinhole-K projection
        target = project_with_split_camera(points_new[1:2], frame["camera"])[0]
        centroid = _blob_centre(split.load_image(frame))
        assert np.linalg.norm(centroid - target) < 0.35, (frame["file_name"], centroid, target)
        assert "distortion" not in frame["camera"]
        if frame["file_name"] == "images/c_opencv.png":  # not vacuous: in the input the blob is > 1 px away
            original = cv2.imread(str(images / "c_opencv.png"))
            assert np.linalg.norm(_blob_centre(original) - target) > 0.9


def _blob_centre(image: np.ndarray) -> np.ndarray:
    gray = image[..., 0].astype(np.float64)
    weights = np.where(gray > 0.3 * gray.max(), gray, 0.0)
    v, u = np.mgrid[0:gray.shape[0], 0:gray.shape[1]]
    return np.array([(weights * u).sum(), (weights * v).sum()]) / weights.sum()


def test_distortion_ignore_records_it_and_warns_and_error_refuses(tmp_path: Path) -> None:
    model, images = write_model(tmp_path)
    with pytest.warns(UserWarning, match="only approximate"):
        split = load_split(prepare_colmap.convert_colmap(model, images, tmp_path / "out", distortion="ignore",
                                                         link=True))
    by_name = {f["file_name"]: f for f in split.dataset["images"]}
    assert by_name["images/c_opencv.png"]["camera"]["distortion"] == {
        "model": "opencv", "coeffs": [-0.3, 0.08, 0.004, -0.003]}
    assert "distortion" not in by_name["images/a_pinhole.png"]["camera"]
    assert (tmp_path / "out" / "images" / "c_opencv.png").read_bytes() == (images / "c_opencv.png").read_bytes()
    with pytest.raises(DataError, match=r"cameras\.txt: line 6.*non-zero distortion"):
        prepare_colmap.convert_colmap(model, images, tmp_path / "out2", distortion="error")


def test_depth_maps_in_colmap_and_npy_format_are_scaled_and_written(tmp_path: Path) -> None:
    pinhole = [c for c in CAMERAS if c[1] in ("PINHOLE", "SIMPLE_PINHOLE")]
    model, images = write_model(tmp_path, cameras=pinhole, views=[v for v in VIEWS if v[1] in (1, 2)])
    depth_dir = tmp_path / "depth_maps"
    depth_dir.mkdir()
    rng = np.random.default_rng(0)
    d_bin = rng.uniform(1.0, 5.0, (H, W)).astype(np.float32)
    d_bin[0, 0] = 0.0  # invalid stays invalid
    (depth_dir / "a_pinhole.png.geometric.bin").write_bytes(f"{W}&{H}&1&".encode() + d_bin.astype("<f4").tobytes())
    d_npy = rng.uniform(1.0, 5.0, (H, W)).astype(np.float32)
    np.save(depth_dir / "b_simple.png.npy", d_npy)
    path = prepare_colmap.convert_colmap(model, images, tmp_path / "out", depth_dir=depth_dir, scale=0.5,
                                         require_depth=True)
    split = load_split(path)
    frames = split.images_by_video[1]
    np.testing.assert_allclose(split.depth(frames[0]), 0.5 * d_bin, rtol=1e-3)
    np.testing.assert_allclose(split.depth(frames[1]), 0.5 * d_npy, rtol=1e-3)
    np.testing.assert_allclose(np.asarray(frames[1]["camera"]["extrinsics"])[:, 3],
                               0.5 * _relative_t(saved_ids=(3, 5)), atol=1e-9)
    # a map of the wrong size is refused, naming the file
    (depth_dir / "b_simple.png.npy").unlink()
    np.save(depth_dir / "b_simple.png.npy", d_npy[:-1])
    with pytest.raises(DataError, match=r"b_simple\.png\.npy.*depth map is \[71, 96\]"):
        prepare_colmap.convert_colmap(model, images, tmp_path / "out2", depth_dir=depth_dir)


def _relative_t(saved_ids: tuple[int, int]) -> np.ndarray:
    """Translation of view ``saved_ids[1]`` relative to view ``saved_ids[0]`` in COLMAP units (independent maths)."""
    poses = _poses()
    (q0, t0), (q1, t1) = poses[saved_ids[0]], poses[saved_ids[1]]
    r0 = Rotation.from_quat([*q0[1:], q0[0]]).as_matrix()
    r1 = Rotation.from_quat([*q1[1:], q1[0]]).as_matrix()
    return t1 - r1 @ r0.T @ t0


@pytest.mark.parametrize("edit, file, pattern", [
    (("cameras.txt", "2 SIMPLE_PINHOLE 96 72 60.0", "2 SIMPLE_PINHOLE 96 72 sixty"), "cameras.txt",
     r"cameras\.txt: line 5.*expected 3 numeric parameters"),
    (("cameras.txt", "4 SIMPLE_RADIAL", "4 OPENCV_FISHEYE"), "cameras.txt",
     r"cameras\.txt: line 7=.*unsupported camera model 'OPENCV_FISHEYE'"),
    (("images.txt", "3 0.", "3 zero."), "images.txt", r"images\.txt: line \d+.*QW QX QY QZ"),
    (("points3D.txt", "3 -1.2", "3 -1.2 oops"), "points3D.txt", r"points3D\.txt: line 5"),
])
def test_malformed_files_name_the_file_and_line(tmp_path: Path, edit, file, pattern) -> None:
    model, images = write_model(tmp_path)
    name, old, new = edit
    text = (model / name).read_text()
    assert old in text
    (model / name).write_text(text.replace(old, new, 1))
    with pytest.raises(DataError, match=pattern):
        prepare_colmap.convert_colmap(model, images, tmp_path / "out")


def test_an_image_listed_but_missing_on_disk_names_the_line(tmp_path: Path) -> None:
    model, images = write_model(tmp_path, extra_image_line="11 1.0 0.0 0.0 0.0 0.0 0.0 0.0 1 gone.png")
    with pytest.raises(DataError, match=r"images\.txt: line 12=.*'gone\.png'.*not found on disk"):
        prepare_colmap.convert_colmap(model, images, tmp_path / "out")
    (model / "images.txt").write_text((model / "images.txt").read_text().replace("gone.png", "../escape.png"))
    with pytest.raises(DataError, match="escapes"):
        prepare_colmap.convert_colmap(model, images, tmp_path / "out")


def test_the_cli_converts_and_reports_errors_in_one_line(tmp_path: Path, capsys) -> None:
    model, images = write_model(tmp_path)
    out = tmp_path / "out"
    assert prepare_colmap.main([str(model), "--images", str(images), "--out", str(out), "--scale", "mean",
                                "--reference", "d_radial.png", "--split", "scene"]) == 0
    split = load_split(out / "scene.json")
    assert split.images_by_video[1][0]["file_name"] == "images/d_radial.png"
    assert capsys.readouterr().out.strip() == str(out / "scene.json")
    (model / "cameras.txt").write_text("1 PINHOLE 96 72 1 2 3\n")
    assert prepare_colmap.main([str(model), "--images", str(images), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and "cameras.txt: line 1" in err[0]


def test_a_late_failure_leaves_the_old_output_whole(tmp_path: Path, capsys, monkeypatch) -> None:
    model, images = write_model(tmp_path)
    out = tmp_path / "out"
    add_user_file(out)
    assert prepare_colmap.main([str(model), "--images", str(images), "--out", str(out)]) == 0
    before, siblings = snapshot(out), {p.name for p in tmp_path.iterdir()}
    written = fail_late(monkeypatch, prepare_colmap, "write_named_split")  # after the images and points3D.npz
    capsys.readouterr()
    assert prepare_colmap.main([str(model), "--images", str(images), "--out", str(out), "--scale", "mean",
                                "--distortion", "ignore"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert written and len(err) == 1 and "injected late failure" in err[0]
    assert_left_as_it_was(out, before, siblings)
