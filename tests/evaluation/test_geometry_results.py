"""Geometry results: scoring them reproduces the figures computed straight from the evaluation loader's batches
(ground truth resized with the model's input), and every malformed entry is a DataError naming file, entry and
field."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from vision.data.coco import load_split
from vision.data.datasets import MultiViewClipDataset, collate_clips
from vision.synthetic.scenes import write_split
from vision.data.transforms import build_multiview_transform
from vision.errors import DataError
from vision.evaluation.evaluate import evaluate
from vision.evaluation.geometry import chamfer_metrics, depth_metrics, format_geometry_table, pose_metrics
from vision.evaluation.results import decode_array, encode_array
from vision.geometry.losses import normalize_scene
from vision.geometry.results import clip_results
from vision.geometry.task import GeometryConfig, build_model


@pytest.fixture(scope="module")
def scored(tmp_path_factory):
    """A 48-px split scored at 32 px by an untrained model: (split path, results, per-clip batches, outputs)."""
    tmp = tmp_path_factory.mktemp("geometry_results")
    split = write_split(tmp, "val", scenes=2, views=6, size=48, mode="unordered", seed=4, threads=1)
    torch.manual_seed(0)
    model = build_model(GeometryConfig(image_size=32)).eval()
    dataset = MultiViewClipDataset(load_split(split), 3, transform=build_multiview_transform(32, train=False))
    batches, outputs, results = [], [], []
    with torch.no_grad():
        for index in range(len(dataset)):
            batch = collate_clips([dataset[index]])
            out = model(batch["images"])
            batches.append(batch)
            outputs.append(out)
            results += [r for _, rs in clip_results(model, out, batch["image_ids"]) for r in rs]
    return split, results, batches, outputs


def test_scores_equal_the_figures_of_the_loader_batches(scored):
    split, results, batches, outputs = scored
    metrics = evaluate(split, results, "geometry")
    assert metrics["clips"] == len(batches) == 4 and metrics["images"] == 12
    rows, rot_pairs, head_pairs = [], [], []
    for index, (batch, out) in enumerate(zip(batches, outputs)):
        gt = batch["depth"][0].numpy()
        valid = batch["valid_depth"][0].numpy() & (gt > 0)
        rows.append(depth_metrics(out["depth"][0, ..., 0].numpy(), gt, valid=valid, max_depth=1e6))
        solved = np.array([r["extrinsics"] for r in results[3 * index:3 * index + 3]])  # the solver's cameras
        rot_pairs.append(pose_metrics(solved, batch["extrinsics"][0].numpy())["RRA@30"])
        head_pairs.append(pose_metrics(out["extrinsics"][0].numpy(), batch["extrinsics"][0].numpy())["RRA@30"])
    # every clip has 3 views, so the clip-weighted mean is the plain mean
    assert metrics["abs_rel"] == pytest.approx(np.mean([r["abs_rel"] for r in rows]), rel=1e-12)
    assert metrics["delta_1.25"] == pytest.approx(np.mean([r["delta_1.25"] for r in rows]), rel=1e-12)
    assert metrics["RRA@30"] == pytest.approx(np.mean(rot_pairs), rel=1e-12)  # 3 pairs per clip
    assert metrics["camera_head/RRA@30"] == pytest.approx(np.mean(head_pairs), rel=1e-12)
    assert "match_pose/AUC@30" not in metrics and 0.0 <= metrics["identity_pose/AUC@30"] <= 1.0
    table = format_geometry_table(metrics).splitlines()
    assert [line.split()[0] for line in table] == ["method", "model", "constant_depth", "identity_pose", "camera_head"]


def test_without_the_solver_the_results_carry_the_camera_heads_cameras(scored):
    split, results, batches, outputs = scored
    torch.manual_seed(0)
    model = build_model(GeometryConfig(image_size=32, camera_solver=False)).eval()
    assert model.solver is None
    entries = clip_results(model, outputs[0], batches[0]["image_ids"])[0][1]
    assert all("head_extrinsics" not in e for e in entries)
    np.testing.assert_array_equal([e["extrinsics"] for e in entries], outputs[0]["extrinsics"][0].numpy())
    # with the solver, the same outputs keep the head's cameras beside the solved ones
    solved = [r for r in results if r["clip"] == entries[0]["clip"]]
    assert [r["head_extrinsics"] for r in solved] == [e["extrinsics"] for e in entries]


def test_chamfer_equals_the_one_of_the_loader_batches_and_the_training_normalisation(scored):
    """Scoring resizes the split's depth and cameras itself and normalises the scene in NumPy: the Chamfer figure
    equals the one from the loader's batches and the torch normalisation of the training losses (every valid
    pixel drawn, so the subsample's order does not matter), to float32 rounding."""
    split, results, batches, _ = scored
    metrics = evaluate(split, results, "geometry", max_points=10 ** 6)
    by_image = {(tuple(r["clip"]), r["image_id"]): r for r in results}
    chamfers = []
    for batch in batches:
        clip = tuple(int(i) for i in batch["image_ids"][0])
        valid = batch["valid_depth"] & (batch["depth"] > 0)
        gt = normalize_scene(batch["extrinsics"], batch["intrinsics"], batch["depth"], None, valid)
        mask = valid[0].numpy()
        pred = np.stack([decode_array(by_image[clip, i]["world_points"], "x") for i in clip])
        chamfers.append(chamfer_metrics(pred[mask], gt.world_points[0].numpy()[mask])["chamfer"])
    assert metrics["chamfer"] == pytest.approx(np.mean(chamfers), rel=1e-6)


def test_array_encoding_round_trips_exactly():
    values = np.random.default_rng(0).normal(size=(4, 5, 3)).astype(np.float32)
    encoded = json.loads(json.dumps(encode_array(values)))
    assert np.array_equal(decode_array(encoded, "x"), values)


def _broken(results: list, index: int, **changes) -> list:
    copy = [dict(r) for r in results]
    copy[index].update(changes)
    return [r for r in copy if r is not None]


@pytest.mark.parametrize("change, field, message", [
    (lambda rs: _broken(rs, 0, image_id=10_000), "results[0].clip", "is not one of its clip's images"),
    (lambda rs: _broken(rs, 0, clip=[rs[0]["image_id"]]), "results[0].clip", "at least 2"),
    (lambda rs: rs[1:], "clip", "has no result for image"),
    (lambda rs: rs + [rs[0]], "results[12].image_id", "duplicate result"),
    (lambda rs: _broken(rs, 2, extrinsics=[[1, 0, 0]]), "results[2].extrinsics", "3x4 matrix"),
    (lambda rs: _broken(rs, 1, depth={"size": [32, 32], "float32": "not base64!"}), "results[1].depth.float32",
     "base64"),
    (lambda rs: _broken(rs, 1, depth=encode_array(np.ones((32, 30)))), "results[1].depth.size", "square"),
    (lambda rs: _broken(rs, 1, depth=encode_array(np.full((32, 32), np.nan))), "results[1].depth.float32",
     "NaN or infinite"),
    (lambda rs: _broken(rs, 1, world_points=encode_array(np.ones((32, 32)))), "results[1].world_points.size",
     "expected size"),
    (lambda rs: _broken(rs, 3, match_extrinsics=np.eye(3, 4).tolist()), "results[3].match_extrinsics",
     "every result or in none"),
])
def test_malformed_results_name_file_entry_and_field(scored, tmp_path, change, field, message):
    split, results, _, _ = scored
    path = tmp_path / "results.json"
    path.write_text(json.dumps(change(results)))
    with pytest.raises(DataError, match=message) as info:
        evaluate(split, path, "geometry")
    assert info.value.file == str(path) and info.value.field == field


def test_a_split_image_without_camera_is_named(scored, tmp_path):
    split, results, _, _ = scored
    gt = json.loads(split.read_text())
    image = next(img for img in gt["images"] if img["id"] == results[0]["image_id"])
    del image["camera"]
    path = tmp_path / "split.json"
    path.write_text(json.dumps(gt))
    with pytest.raises(DataError, match="camera") as info:
        evaluate(path, results, "geometry", split_root=str(split.parent))
    assert info.value.file == str(path) and info.value.field == f"images[id={image['id']}].camera"


@pytest.mark.parametrize("key", ["extrinsics", "match_extrinsics"])
def test_a_camera_that_is_not_a_rotation_is_named_not_a_scipy_error(scored, tmp_path, key):
    """All-zero extrinsics made scipy raise "Non-positive determinant"; a camera's left 3x3 must be a rotation."""
    split, results, _, _ = scored
    broken = [dict(r) for r in results]
    if key == "match_extrinsics":
        for r in broken:
            r[key] = np.eye(3, 4).tolist()
    broken[4][key] = np.zeros((3, 4)).tolist()
    path = tmp_path / "results.json"
    path.write_text(json.dumps(broken))
    with pytest.raises(DataError, match="must be a rotation") as info:
        evaluate(split, path, "geometry")
    assert info.value.file == str(path) and info.value.field == f"results[4].{key}"
    gt = json.loads(split.read_text())
    image = next(img for img in gt["images"] if img["id"] == results[0]["image_id"])
    image["camera"]["extrinsics"] = [[2.0, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0]]
    (tmp_path / "split.json").write_text(json.dumps(gt))
    with pytest.raises(DataError, match="must be a rotation") as info:
        evaluate(tmp_path / "split.json", results, "geometry", split_root=str(split.parent))
    assert info.value.field == f"images[id={image['id']}].camera.extrinsics"


def test_a_depth_that_cannot_be_median_scaled_names_the_result_and_its_image(scored, tmp_path):
    split, results, _, _ = scored
    path = tmp_path / "results.json"
    path.write_text(json.dumps(_broken(results, 4, depth=encode_array(np.zeros((32, 32))))))
    with pytest.raises(DataError) as info:
        evaluate(split, path, "geometry")
    message = str(info.value)
    assert message.startswith(f"{path}: clip [") and "\n" not in message
    assert f"results[4].depth (image {results[4]['image_id']}): the median predicted depth" in message


def test_ground_truth_without_valid_depth_names_the_split_and_its_depth_files(scored, tmp_path):
    """The split's depth files of a clip hold no valid depth: the error names the split, not the results."""
    import re
    import shutil

    import cv2

    split, results, _, _ = scored
    root = tmp_path / "copy"
    shutil.copytree(split.parent, root)
    gt = json.loads(split.read_text())
    clip = results[0]["clip"]
    for img in gt["images"]:
        if img["id"] in clip:  # 16-bit PNG depth in millimetres, all 0 (invalid)
            assert cv2.imwrite(str(root / img["depth_file"]), np.zeros((img["height"], img["width"]), np.uint16))
    (root / "split.json").write_text(json.dumps(gt))
    with pytest.raises(DataError, match=re.escape(f"the depth files of clip {clip} hold no valid depth")) as info:
        evaluate(root / "split.json", results, "geometry")
    assert info.value.file == str(root / "split.json") and info.value.field == "depth_file"


@pytest.mark.parametrize("kind", ["fifo", "loop"])
def test_a_hostile_depth_file_is_one_error_not_a_hang(scored, tmp_path, kind):
    """vision-evaluate --task geometry reads the split's depth files without the split's file checks: a FIFO or
    a symbolic-link loop there is a DataError naming the split and the field."""
    import os
    import shutil

    split, results, _, _ = scored
    root = tmp_path / "copy"
    shutil.copytree(split.parent, root)
    gt = json.loads(split.read_text())
    image = next(img for img in gt["images"] if img["id"] == results[0]["image_id"])
    target = root / image["depth_file"]
    target.unlink()
    if kind == "fifo":
        os.mkfifo(target)
    else:
        os.symlink(target, target)
    (root / "split.json").write_text(json.dumps(gt))
    with pytest.raises(DataError, match="FIFO|symbolic-link loop") as info:
        evaluate(root / "split.json", results, "geometry")
    assert str(root / "split.json") in str(info.value) and "depth_file" in str(info.value)
