"""write_points_glb: a valid binary glTF that open3d reads back, with the OpenCV -> glTF axis flip."""

import json
import struct

import numpy as np
import pytest

from vision.data.glb import srgb_to_linear, write_points_glb
from vision.errors import InputError


def test_glb_reads_back_as_coloured_cubes(tmp_path):
    import open3d as o3d

    points = np.array([[0, 0, 1], [1, 2, 3], [np.nan, 0, 0], [-1, 0.5, 2]], np.float64)
    colours = np.array([[255, 0, 0], [0, 255, 0], [0, 0, 255], [128, 128, 128]], np.uint8)
    path = write_points_glb(tmp_path / "cloud.glb", points, colours, size=0.1)
    raw = path.read_bytes()
    magic, version, length = struct.unpack("<4sII", raw[:12])
    assert magic == b"glTF" and version == 2 and length == len(raw)
    json_len, kind = struct.unpack("<I4s", raw[12:20])
    gltf = json.loads(raw[20:20 + json_len])
    assert kind == b"JSON" and gltf["accessors"][0]["count"] == 3 * 8  # the NaN point is dropped
    mesh = o3d.io.read_triangle_mesh(str(path))
    assert len(mesh.vertices) == 24 and len(mesh.triangles) == 36 and mesh.has_vertex_colors()
    centres = np.asarray(mesh.vertices).reshape(3, 8, 3).mean(axis=1)
    np.testing.assert_allclose(centres, [[0, 0, -1], [1, -2, -3], [-1, -0.5, -2]], atol=1e-6)  # (x, -y, -z)
    np.testing.assert_allclose(np.asarray(mesh.vertex_colors)[0], srgb_to_linear(np.array([1.0, 0, 0])), atol=1e-3)


def test_bad_inputs_are_refused(tmp_path):
    with pytest.raises(InputError, match=".glb"):
        write_points_glb(tmp_path / "x.ply", np.zeros((1, 3)), np.zeros((1, 3)))
    with pytest.raises(InputError, match=r"\[N, 3\]"):
        write_points_glb(tmp_path / "x.glb", np.zeros((2, 3)), np.zeros((3, 3)))
    with pytest.raises(InputError, match="no finite point"):
        write_points_glb(tmp_path / "x.glb", np.full((2, 3), np.inf), np.zeros((2, 3)))
