"""Write coloured 3D points as a binary glTF (``.glb``) that web viewers (gradio's ``gr.Model3D``, Babylon.js,
three.js) display.

Each point becomes a small cube (8 vertices, 12 triangles) so that it stays visible at any zoom; colours are
stored per vertex (``COLOR_0``, linear RGB as glTF requires, converted from the sRGB input) under an unlit
material (``KHR_materials_unlit``), so they show as given, without shading.

Axes: the input is in the OpenCV convention (x right, y down, z forward, as our cameras and point maps); glTF is
y up and looks down -z, so points are written as ``(x, -y, -z)``: the scene appears upright, seen from the first
camera.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np

from vision.data.io import atomic_write_bytes
from vision.errors import InputError

__all__ = ["write_points_glb", "srgb_to_linear"]

# Cube corners (unit cube centred at 0) and its 12 triangles, counter-clockwise seen from outside.
_CORNERS = np.array([[-1, -1, -1], [1, -1, -1], [1, 1, -1], [-1, 1, -1],
                     [-1, -1, 1], [1, -1, 1], [1, 1, 1], [-1, 1, 1]], np.float32) * 0.5
_FACES = np.array([[0, 2, 1], [0, 3, 2], [4, 5, 6], [4, 6, 7], [0, 1, 5], [0, 5, 4],
                   [2, 3, 7], [2, 7, 6], [1, 2, 6], [1, 6, 5], [0, 4, 7], [0, 7, 3]], np.uint32)

_FLOAT, _UINT32 = 5126, 5125
_ARRAY_BUFFER, _ELEMENT_ARRAY_BUFFER = 34962, 34963


def srgb_to_linear(rgb: np.ndarray) -> np.ndarray:
    """sRGB values in [0, 1] -> linear RGB in [0, 1] (the IEC 61966-2-1 transfer function)."""
    rgb = np.clip(np.asarray(rgb, np.float32), 0.0, 1.0)
    return np.where(rgb <= 0.04045, rgb / 12.92, ((rgb + 0.055) / 1.055) ** 2.4).astype(np.float32)


def _pad(data: bytes, fill: bytes) -> bytes:
    return data + fill * (-len(data) % 4)


def write_points_glb(path: str | Path, points: np.ndarray, colors: np.ndarray, size: float | None = None) -> Path:
    """Write ``points [N, 3]`` (OpenCV axes) with ``colors [N, 3]`` as cubes in a ``.glb`` file; returns the path.

    Args:
        path: target file (``.glb``); written atomically, its folder created.
        points: float positions; rows with a non-finite coordinate are dropped.
        colors: sRGB, either uint8 in [0, 255] or float in [0, 1].
        size: cube edge length in the points' units (default: 1/150 of the bounding-box diagonal).

    Raises:
        InputError: shapes do not match, the path is not ``.glb``, or no finite point is left.
    """
    path = Path(path)
    if path.suffix.lower() != ".glb":
        raise InputError(f"write_points_glb writes .glb files; got {str(path)!r}")
    pts = np.asarray(points, np.float64)
    col = np.asarray(colors)
    if pts.ndim != 2 or pts.shape[1] != 3 or col.shape != pts.shape:
        raise InputError(f"points and colors must both be [N, 3]; got {pts.shape} and {col.shape}")
    col = col.astype(np.float32) / 255.0 if col.dtype == np.uint8 else col.astype(np.float32)
    finite = np.isfinite(pts).all(axis=1)
    pts, col = pts[finite], col[finite]
    if len(pts) == 0:
        raise InputError("write_points_glb got no finite point")
    pts = pts * np.array([1.0, -1.0, -1.0])
    if size is None:
        diagonal = float(np.linalg.norm(pts.max(axis=0) - pts.min(axis=0)))
        size = diagonal / 150.0 if diagonal > 0 else 0.01
    n = len(pts)
    vertices = (pts[:, None, :] + _CORNERS[None] * float(size)).reshape(-1, 3).astype(np.float32)
    vertex_colors = np.repeat(srgb_to_linear(col), len(_CORNERS), axis=0)
    indices = (_FACES[None] + (np.arange(n, dtype=np.uint32) * len(_CORNERS))[:, None, None]).reshape(-1)

    blobs = [vertices.tobytes(), vertex_colors.tobytes(), indices.astype(np.uint32).tobytes()]
    offsets = np.cumsum([0] + [len(_pad(b, b"\0")) for b in blobs])
    binary = b"".join(_pad(b, b"\0") for b in blobs)
    gltf = {
        "asset": {"version": "2.0", "generator": "vision.data.glb"},
        "extensionsUsed": ["KHR_materials_unlit"],
        "scene": 0,
        "scenes": [{"nodes": [0]}],
        "nodes": [{"mesh": 0}],
        "meshes": [{"primitives": [{"attributes": {"POSITION": 0, "COLOR_0": 1}, "indices": 2, "material": 0}]}],
        "materials": [{"pbrMetallicRoughness": {"baseColorFactor": [1, 1, 1, 1], "metallicFactor": 0.0,
                                                "roughnessFactor": 1.0},
                       "extensions": {"KHR_materials_unlit": {}}, "doubleSided": True}],
        "buffers": [{"byteLength": len(binary)}],
        "bufferViews": [
            {"buffer": 0, "byteOffset": int(offsets[0]), "byteLength": len(blobs[0]), "target": _ARRAY_BUFFER},
            {"buffer": 0, "byteOffset": int(offsets[1]), "byteLength": len(blobs[1]), "target": _ARRAY_BUFFER},
            {"buffer": 0, "byteOffset": int(offsets[2]), "byteLength": len(blobs[2]),
             "target": _ELEMENT_ARRAY_BUFFER},
        ],
        "accessors": [
            {"bufferView": 0, "componentType": _FLOAT, "count": len(vertices), "type": "VEC3",
             "min": vertices.min(axis=0).tolist(), "max": vertices.max(axis=0).tolist()},
            {"bufferView": 1, "componentType": _FLOAT, "count": len(vertex_colors), "type": "VEC3"},
            {"bufferView": 2, "componentType": _UINT32, "count": len(indices), "type": "SCALAR"},
        ],
    }
    text = _pad(json.dumps(gltf, separators=(",", ":")).encode("utf-8"), b" ")
    body = (struct.pack("<I4s", len(text), b"JSON") + text + struct.pack("<I4s", len(binary), b"BIN\0") + binary)
    atomic_write_bytes(path, struct.pack("<4sII", b"glTF", 2, 12 + len(body)) + body)
    return path
