"""Hand-built fixture splits: tiny PNG images, depth (.npz and 16-bit PNG), RLE masks, one ordered video, one
unordered image set, two labelled videos and one stand-alone image."""

from __future__ import annotations

import copy
from pathlib import Path

import cv2
import numpy as np
import pytest

from vision.data.coco import write_split
from vision.data.masks import encode_mask, mask_to_bbox

W, H = 16, 12


def _rect(x0: int, y0: int, x1: int, y1: int) -> np.ndarray:
    mask = np.zeros((H, W), bool)
    mask[y0:y1, x0:x1] = True
    return mask


def _camera(tx: float) -> dict:
    return {"K": [[20.0, 0.0, 8.0], [0.0, 20.0, 6.0], [0.0, 0.0, 1.0]],
            "extrinsics": [[1.0, 0.0, 0.0, tx], [0.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 0.5]]}


def depth_of(image_id: int) -> np.ndarray:
    """The depth (metres) written for an image of video 1: a ramp, with an invalid (0) pixel at (0, 0)."""
    depth = (1.0 + 0.25 * image_id + 0.01 * np.arange(W)[None, :] + 0.0 * np.arange(H)[:, None]).astype(np.float16)
    depth[0, 0] = 0
    return depth


def build_split(root: Path) -> dict:
    """Write the fixture's files under ``root`` and return the split dict (not yet written as JSON).

    - video 1 "walk" (ordered): images 1..5 with frame_index 0..4 listed out of order; depth .npz and cameras on all;
      track 10 (cube, "a red cube", big box) on all frames, track 11 (ball, empty caption, small box inside the cube)
      on frames 1 and 2.
    - video 2 "views" (unordered): images 6, 7, 8 (frame_index 0, 3, 7), camera on image 6 only, 16-bit PNG depth
      on image 6; track 20 (mug) on images 6 and 8.
    - videos 3 / 4: labelled real / generated video files.
    - image 100: no video; one mug annotation (polygon) and one cube annotation without track, iscrowd on the cube.
    """
    (root / "images").mkdir(parents=True, exist_ok=True)
    (root / "depth").mkdir(exist_ok=True)
    (root / "videos").mkdir(exist_ok=True)
    rng = np.random.default_rng(0)
    images, annotations = [], []

    def add_image(image_id: int, **extra) -> dict:
        pixels = rng.integers(0, 256, size=(H, W, 3), dtype=np.uint8)
        name = f"images/{image_id:04d}.png"
        assert cv2.imwrite(str(root / name), pixels)
        img = {"id": image_id, "file_name": name, "width": W, "height": H, **extra}
        images.append(img)
        return img

    def add_ann(image_id: int, category_id: int, mask: np.ndarray, **extra) -> None:
        annotations.append({"id": len(annotations) + 1, "image_id": image_id, "category_id": category_id,
                            "bbox": mask_to_bbox(mask), "segmentation": encode_mask(mask),
                            "area": float(mask.sum()), "iscrowd": 0, **extra})

    for frame, image_id in [(2, 3), (0, 1), (4, 5), (1, 2), (3, 4)]:
        depth_name = f"depth/{image_id:04d}.npz"
        np.savez_compressed(root / depth_name, depth=depth_of(image_id))
        add_image(image_id, video_id=1, frame_index=frame, camera=_camera(0.1 * frame), depth_file=depth_name)
        add_ann(image_id, 1, _rect(2, 2, 12, 10), track_id=10)
        if frame in (1, 2):
            add_ann(image_id, 2, _rect(4, 4, 7, 7), track_id=11)

    png_depth = np.full((H, W), 1500, np.uint16)
    png_depth[:, :4] = 0
    assert cv2.imwrite(str(root / "depth/0006.png"), png_depth)
    add_image(6, video_id=2, frame_index=0, camera=_camera(0.0), depth_file="depth/0006.png")
    add_image(7, video_id=2, frame_index=3)
    add_image(8, video_id=2, frame_index=7)
    add_ann(6, 3, _rect(0, 0, 5, 5), track_id=20)
    add_ann(8, 3, _rect(10, 6, 16, 12), track_id=20)

    for name in ("real.mp4", "fake.mp4"):
        (root / "videos" / name).write_bytes(b"fixture video placeholder; the dataset only returns its path")

    add_image(100)
    annotations.append({"id": len(annotations) + 1, "image_id": 100, "category_id": 3, "bbox": [1.0, 1.0, 4.0, 4.0],
                        "segmentation": [[1.0, 1.0, 5.0, 1.0, 5.0, 5.0, 1.0, 5.0]], "area": 16.0, "iscrowd": 0})
    add_ann(100, 1, _rect(8, 2, 14, 9), iscrowd=1)

    return {
        "info": {"description": "test fixture", "vocabulary": ["cube", "ball"]},
        "categories": [{"id": 1, "name": "cube", "split": "iv"}, {"id": 2, "name": "ball", "split": "novel"},
                       {"id": 3, "name": "mug", "split": "oov"}],
        "videos": [{"id": 1, "name": "walk", "width": W, "height": H, "ordered": True},
                   {"id": 2, "name": "views", "width": W, "height": H, "ordered": False},
                   {"id": 3, "name": "real", "label": "real", "file_name": "videos/real.mp4", "source": "camera",
                    "generator": None},
                   {"id": 4, "name": "fake", "label": "generated", "file_name": "videos/fake.mp4",
                    "generator": "toygen", "source": "synthetic"}],
        "tracks": [{"id": 10, "video_id": 1, "category_id": 1, "caption": "a red cube"},
                   {"id": 11, "video_id": 1, "category_id": 2, "caption": ""},
                   {"id": 20, "video_id": 2, "category_id": 3, "caption": "a blue mug"}],
        "images": images,
        "annotations": annotations,
    }


@pytest.fixture(scope="session")
def fixture_dir(tmp_path_factory) -> Path:
    """A folder holding the fixture's files and ``split.json`` (shared, read-only for tests)."""
    root = tmp_path_factory.mktemp("split")
    dataset = build_split(root)
    write_split(root / "split.json", dataset)
    return root


@pytest.fixture(scope="session")
def split_path(fixture_dir) -> Path:
    return fixture_dir / "split.json"


@pytest.fixture()
def split_dict(split_path) -> dict:
    """A fresh deep copy of the fixture's dict as written."""
    import json

    return copy.deepcopy(json.loads(split_path.read_text()))


def png_claiming(path: Path, width: int, height: int) -> Path:
    """A 100-byte PNG whose header claims ``width x height`` RGB pixels (its pixel data is missing)."""
    import struct
    import zlib

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(b"\0" * 64))
                     + chunk(b"IEND", b""))
    return path
