"""Read and write COCO-format splits (see :mod:`vision.data.schema` for the format).

``load_split`` parses and validates a split JSON and returns a :class:`Split`: the dict, the folder its relative
paths resolve against, and indexes. ``write_split`` normalises (numpy values -> plain Python, RLE ``counts`` ->
``str``), validates, and writes deterministic bytes atomically.
"""

from __future__ import annotations

import copy
import io
import zipfile
from pathlib import Path
from typing import Any, Iterable

import cv2
import numpy as np
from pycocotools import mask as mask_utils

from vision.data.files import read_json, regular_file
from vision.data.io import atomic_write_bytes, atomic_write_json, image_size
from vision.data.masks import decode_rle
from vision.data.schema import CATEGORY_SPLITS, safe_path, validate_split
from vision.errors import DataError, InputError

__all__ = ["Split", "load_split", "write_split", "validate_split", "read_json", "write_depth_npz"]


def load_split(path: str | Path, check_files: bool = True) -> Split:
    """Read and validate the split JSON at ``path``; its relative file names resolve against its folder.

    Raises:
        DataError: for any problem, naming file, field and value.
    """
    path = Path(path)
    dataset = read_json(path, what="split")
    validate_split(dataset, path.parent, str(path), check_files=check_files)
    return Split(dataset, path.parent, file=str(path))


def _plain(value: Any, field: str, file: str) -> Any:
    """Convert numpy arrays/scalars, tuples and bytes RLE counts into JSON-serialisable plain Python."""
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if not isinstance(k, str):
                raise DataError("JSON object keys must be strings", file=file, field=field, value=k)
            if k == "counts" and isinstance(v, (bytes, bytearray)):
                out[k] = bytes(v).decode("ascii")
            else:
                out[k] = _plain(v, f"{field}.{k}" if field else k, file)
        return out
    if isinstance(value, (list, tuple)):
        return [_plain(v, f"{field}[{i}]", file) for i, v in enumerate(value)]
    if isinstance(value, np.ndarray):
        return _plain(value.tolist(), field, file)
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    if isinstance(value, Path):
        return value.as_posix()
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise DataError(f"cannot be written as JSON ({type(value).__name__})", file=file, field=field or None,
                    value=value)


def write_split(path: str | Path, dataset: dict, check_files: bool = True) -> None:
    """Validate ``dataset`` (file names relative to ``path``'s folder) and write it to ``path`` atomically.

    numpy values become plain numbers/lists and RLE ``counts`` bytes become ``str``; the bytes written are
    deterministic (sorted keys, compact separators). The caller's dict is not modified.

    Raises:
        DataError: if the split is invalid (nothing is written then).
    """
    path = Path(path)
    plain = _plain(dataset, "", str(path))
    validate_split(plain, path.parent, str(path), check_files=check_files)
    atomic_write_json(path, plain)


def write_depth_npz(path: str | Path, depth: np.ndarray) -> None:
    """Write a ``depth_file`` as this format reads it: z-depth ``[H, W]`` (0 = invalid) as a float16 ``.npz`` with
    key ``depth`` (compressed), atomically; the folders are made."""
    buffer = io.BytesIO()
    np.savez_compressed(buffer, depth=np.asarray(depth).astype(np.float16))
    atomic_write_bytes(path, buffer.getvalue())


def _npz_depth_header(path: Path, field: str) -> tuple[tuple[int, ...], np.dtype]:
    """Shape and dtype of the ``depth`` array of an ``.npz``, read from its ``.npy`` header without decompressing
    the data."""
    with zipfile.ZipFile(path) as archive:
        names = archive.namelist()
        if "depth.npy" not in names:
            keys = [n[:-4] for n in names if n.endswith(".npy")]
            raise DataError(f"depth .npz has no key 'depth' (keys: {keys})", file=path, field=field)
        with archive.open("depth.npy") as member:
            version = np.lib.format.read_magic(member)
            if version == (1, 0):
                shape, _, dtype = np.lib.format.read_array_header_1_0(member)
            else:
                shape, _, dtype = np.lib.format.read_array_header_2_0(member)
    return tuple(shape), np.dtype(dtype)


def _check_depth_size(path: Path, shape: tuple[int, ...], height: int, width: int, file: str, field: str) -> None:
    if tuple(shape) != (height, width):
        raise DataError(f"depth has shape {tuple(shape)}, its image is [{height}, {width}] (split {file})",
                        file=path, field=field, value=list(shape))


def _read_depth_file(path: Path, height: int, width: int, file: str, field: str) -> np.ndarray:
    """Metric depth float32 ``[height, width]`` (0 = invalid) from a depth file. The file must be a regular file,
    and its size (the ``.npy`` header inside an ``.npz``, a PNG's header) must be ``height x width`` before any
    pixel is decoded, so a file that claims a huge array is refused without allocating it."""
    regular_file(path, what="depth file", file=file, field=field)
    if path.suffix.lower() == ".npz":
        try:
            shape, dtype = _npz_depth_header(path, field)
            _check_depth_size(path, shape, height, width, file, field)
            if dtype.kind not in "fiu":
                raise DataError(f"depth must be a float array (float16 metres), got dtype {dtype}", file=path,
                                field=field)
            with np.load(path, allow_pickle=False) as data:
                depth = np.asarray(data["depth"], dtype=np.float32)
        except DataError:
            raise
        except Exception as exc:  # zipfile / numpy errors on a corrupt file
            raise DataError(f"cannot read depth file ({exc.__class__.__name__}: {exc})", file=path,
                            field=field) from exc
    else:
        png_width, png_height = image_size(path)
        _check_depth_size(path, (png_height, png_width), height, width, file, field)
        raw = cv2.imread(str(path), cv2.IMREAD_UNCHANGED)
        if raw is None:
            raise DataError("cannot read depth PNG", file=path, field=field)
        if raw.dtype != np.uint16 or raw.ndim != 2:
            raise DataError(f"depth PNG must be single-channel 16-bit (millimetres), got {raw.dtype} "
                            f"with shape {raw.shape}", file=path, field=field)
        depth = raw.astype(np.float32) / 1000.0
    if depth.shape != (height, width):
        raise DataError(f"depth has shape {depth.shape}, its image is [{height}, {width}] (split {file})",
                        file=path, field=field, value=list(depth.shape))
    depth = np.where(np.isfinite(depth) & (depth > 0), depth, 0.0).astype(np.float32)
    return depth


class Split:
    """A validated split (build it with :func:`load_split` or :meth:`from_dict`): the dict, the folder its paths resolve against, and indexes.

    Attributes:
        dataset: the split dict (as read).
        root: folder that file names are relative to.
        file: the JSON's path (for messages).
        images: image id -> image dict.
        annotations_by_image: image id -> list of annotation dicts (in file order).
        tracks: track id -> track dict.
        videos: video id -> video dict.
        images_by_video: video id -> image dicts sorted by ``frame_index``.
        categories: category id -> category dict.
        category_by_name: name -> category dict.
    """

    def __init__(self, dataset: dict, root: str | Path, file: str | None = None) -> None:
        self.dataset = dataset
        self.root = Path(root)
        self.file = file if file is not None else str(self.root / "<in memory>")
        self.images: dict[int, dict] = {img["id"]: img for img in dataset["images"]}
        self.annotations_by_image: dict[int, list[dict]] = {i: [] for i in self.images}
        for ann in dataset["annotations"]:
            self.annotations_by_image[ann["image_id"]].append(ann)
        self.tracks: dict[int, dict] = {t["id"]: t for t in dataset.get("tracks", [])}
        self.videos: dict[int, dict] = {v["id"]: v for v in dataset.get("videos", [])}
        self.images_by_video: dict[int, list[dict]] = {v: [] for v in self.videos}
        for img in dataset["images"]:
            if "video_id" in img:
                self.images_by_video[img["video_id"]].append(img)
        for frames in self.images_by_video.values():
            frames.sort(key=lambda im: im["frame_index"])
        self.categories: dict[int, dict] = {c["id"]: c for c in dataset["categories"]}
        self.category_by_name: dict[str, dict] = {c["name"]: c for c in dataset["categories"]}

    @classmethod
    def from_dict(cls, dataset: dict, root: str | Path, check_files: bool = True, file: str | None = None) -> Split:
        """Validate an in-memory split dict (file names relative to ``root``) and index it."""
        file = file if file is not None else str(Path(root) / "<in memory>")
        validate_split(dataset, root, file, check_files=check_files)
        return cls(dataset, root, file)

    def __repr__(self) -> str:
        return (f"Split({self.file!r}: {len(self.images)} images, {len(self.dataset['annotations'])} annotations, "
                f"{len(self.videos)} videos, {len(self.tracks)} tracks, {len(self.categories)} categories)")

    def _field(self, collection: str, obj: dict) -> str:
        return f"{collection}[id={obj.get('id')}]"

    def image_path(self, img: dict) -> Path:
        """Absolute path of an image's file."""
        return safe_path(self.root, img["file_name"], file=self.file, field=f"{self._field('images', img)}.file_name")

    def load_image(self, img: dict) -> np.ndarray:
        """The image as uint8 RGB [H, W, 3]; checks its size against the split's ``width``/``height``."""
        path = self.image_path(img)
        regular_file(path, what="image file", file=self.file, field=f"{self._field('images', img)}.file_name",
                     value=img["file_name"])
        bgr = cv2.imread(str(path), cv2.IMREAD_COLOR)
        if bgr is None:
            raise DataError("cannot read image (missing, empty or not an image)", file=path,
                            field=f"{self._field('images', img)}.file_name", value=img["file_name"])
        if bgr.shape[:2] != (img["height"], img["width"]):
            raise DataError(f"image is {bgr.shape[1]}x{bgr.shape[0]} but the split says {img['width']}x{img['height']}",
                            file=path, field=self._field("images", img), value=[img["width"], img["height"]])
        return cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB)

    def depth(self, img: dict) -> np.ndarray:
        """Metric depth float32 [H, W] in metres; 0 marks invalid pixels, all zeros if the image has no depth."""
        height, width = img["height"], img["width"]
        if "depth_file" not in img:
            return np.zeros((height, width), np.float32)
        field = f"{self._field('images', img)}.depth_file"
        path = safe_path(self.root, img["depth_file"], file=self.file, field=field)
        return _read_depth_file(path, height, width, self.file, field)

    def camera(self, img: dict) -> tuple[np.ndarray, np.ndarray] | None:
        """(K float32 [3, 3], extrinsics float32 [3, 4] camera-from-world, OpenCV) or None without a camera."""
        cam = img.get("camera")
        if cam is None:
            return None
        return np.asarray(cam["K"], np.float32), np.asarray(cam["extrinsics"], np.float32)

    def video_path(self, video: dict) -> Path:
        """Absolute path of a video's file (``file_name``)."""
        field = f"{self._field('videos', video)}.file_name"
        if "file_name" not in video:
            raise DataError("video has no file_name", file=self.file, field=field)
        return safe_path(self.root, video["file_name"], file=self.file, field=field)

    def annotation_mask(self, ann: dict) -> np.ndarray:
        """bool [H, W] mask of an annotation: its RLE or polygons, or its box when it has no segmentation."""
        img = self.images[ann["image_id"]]
        height, width = img["height"], img["width"]
        seg = ann.get("segmentation")
        if isinstance(seg, dict):
            return decode_rle(seg)
        if isinstance(seg, list) and seg:
            rles = mask_utils.frPyObjects([[float(v) for v in poly] for poly in seg], height, width)
            return mask_utils.decode(mask_utils.merge(rles)).astype(bool)
        mask = np.zeros((height, width), bool)
        x, y, w, h = ann["bbox"]
        x0, y0 = max(int(np.floor(x)), 0), max(int(np.floor(y)), 0)
        x1, y1 = min(int(np.ceil(x + w)), width), min(int(np.ceil(y + h)), height)
        mask[y0:y1, x0:x1] = True
        return mask

    def queried_phrases(self, video_id: int) -> dict[int, str]:
        """``{category id: phrase}`` queried on video ``video_id`` (concept prompts), in category-id order: the
        video's ``concepts`` when it has them (absent phrases included), else the categories of its tracks ({} for a
        video with neither)."""
        if video_id not in self.videos:
            raise InputError(f"video {video_id} is not in split {self.file}")
        video = self.videos[video_id]
        if "concepts" in video:
            ids = {int(c) for c in video["concepts"]}
            field = f"videos[id={video_id}].concepts"
        else:
            ids = {int(t["category_id"]) for t in self.tracks.values() if int(t["video_id"]) == video_id}
            field = f"tracks[video_id={video_id}].category_id"
        unknown = sorted(ids - set(self.categories))
        if unknown:
            raise DataError("names a category the split does not have", file=self.file, field=field,
                            value=unknown[0])
        return {c: str(self.categories[c]["name"]) for c in sorted(ids)}

    def vocabulary(self, splits: Iterable[str] = ("iv",)) -> list[str]:
        """Names of the categories whose ``split`` is in ``splits`` (a category without ``split`` counts as
        ``"iv"``), ordered by category id."""
        splits = tuple(splits)
        for s in splits:
            if s not in CATEGORY_SPLITS:
                raise DataError(f"unknown vocabulary split; expected one of {', '.join(CATEGORY_SPLITS)}",
                                file=self.file, field="splits", value=s)
        return [c["name"] for _, c in sorted(self.categories.items()) if c.get("split", "iv") in splits]

    def given_vocabulary(self) -> list[str]:
        """The names a detector may be given: ``info.vocabulary`` if present, else :meth:`vocabulary` ``("iv",)``."""
        info = self.dataset.get("info", {})
        if "vocabulary" in info:
            return list(info["vocabulary"])
        return self.vocabulary(("iv",))

    def category_ids(self, splits: Iterable[str] = ("iv",)) -> list[int]:
        """Ids of the categories whose ``split`` is in ``splits`` (missing ``split`` = ``"iv"``), sorted."""
        names = set(self.vocabulary(splits))
        return [cid for cid, c in sorted(self.categories.items()) if c["name"] in names]

    def copy(self) -> Split:
        """A deep copy (the dict and the indexes)."""
        return Split(copy.deepcopy(self.dataset), self.root, self.file)
