"""The COCO-format schema of a split, and its validation.

A split is one COCO JSON file plus the files it names, relative to the JSON's folder:

- Standard COCO: ``images`` ``{id, file_name, width, height}``, ``annotations`` ``{id, image_id, category_id, bbox
  (XYWH pixels), segmentation (RLE with str/list counts, or polygons), area, iscrowd}``, ``categories`` ``{id, name}``.
- Video / multi-view: ``videos`` ``{id, name, width?, height?, ordered?: bool (default true)}``; an image may carry
  ``video_id`` and ``frame_index`` (both or neither); an annotation may carry ``track_id``;
  ``tracks`` ``{id, video_id, category_id, caption?}``. ``ordered: false`` marks an unordered multi-view image set.
  An image may carry ``annotated`` (true or false, default true): ``false`` marks a frame without ground truth
  (e.g. YouTube-VOS's unlabelled frames), which tracking and concept scoring leave out.
- Geometry: an image may carry ``camera: {K: 3x3, extrinsics: 3x4}`` (OpenCV, camera-from-world) and ``depth_file``
  (metric depth: float16 ``.npz`` with key ``"depth"`` in metres, or a 16-bit PNG in millimetres; 0 = invalid).
- Vocabulary: a category may carry ``split`` in ``iv | novel | oov``; ``info.vocabulary`` lists the category names a
  detector may be given.
- Concepts (phrases): a video may carry ``concepts``, the category ids queried on it (present and absent phrases;
  without it, the categories of its tracks); ``info.near_categories`` maps a category name to the names of its
  close-cousin categories (distractors).
- Forensics: a video may carry ``label`` in ``real | generated | cgi`` (``cgi``: computer-generated imagery that
  is not AI-generated, e.g. an animated film or a rendering: scored and reported apart, never a training positive),
  ``generator`` (the method), ``family`` (the group of generators a leave-family-out protocol holds out together),
  ``file_name`` (the video file) and ``source``.

:func:`validate_split` checks all of that and raises :class:`~vision.errors.DataError` naming the file, the field
(e.g. ``annotations[3].bbox``) and the value. It never raises anything else on any JSON-like input.
The helpers below it (:func:`scored_images`, :func:`scored_detection_annotations`, ...) run the same checks on the
fields that scoring one task reads, for each task's split check (``check_split`` of its evaluation module,
:mod:`vision.evaluation.tasks`), leaving the rest alone.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from vision.data.checker import BOX_TOLERANCE_PX, Checker, check_rle
from vision.data.files import regular_file
from vision.data.io import resolve_inside
from vision.data.rle import MAX_IMAGE_PIXELS
from vision.data.schema_columns import (ABSENT, FLOAT_MAX, FLOAT_MAX_INT, INT_TYPES, NUMBER_TYPES, DeferredRle,
                                        Listings, annotations_pass_by_column, polygons_pass, rle_size_is)
from vision.errors import DataError

__all__ = [
    "CATEGORY_SPLITS",
    "VIDEO_LABELS",
    "DEPTH_SUFFIXES",
    "BOX_TOLERANCE_PX",
    "validate_split",
    "scored_images", "scored_detection_annotations", "scored_tracking_annotations", "entries", "top_list",
    "check_provenance",
    "safe_path",
    "Checker",
    "check_rle",
    "check_segmentation",
]

CATEGORY_SPLITS = ("iv", "novel", "oov")
VIDEO_LABELS = ("real", "generated", "cgi")
DEPTH_SUFFIXES = (".npz", ".png")
#: Largest image a split may declare (pixels per side; pixels in all: :data:`MAX_IMAGE_PIXELS`, defined in
#: :mod:`vision.data.rle`): masks are decoded at full size, so a malformed width or height must be refused here
#: rather than exhaust memory later.
MAX_IMAGE_SIDE = 1 << 15


def safe_path(root: Path, relative: Any, *, file: str, field: str) -> Path:
    """``resolve_inside`` plus refusal of names the OS cannot represent (NUL bytes, over-long names)."""
    if isinstance(relative, str) and "\x00" in relative:
        raise DataError("path contains a NUL byte", file=file, field=field, value=relative)
    try:
        return resolve_inside(root, relative, file=file, field=field)
    except (OSError, ValueError) as exc:
        if isinstance(exc, DataError):
            raise
        raise DataError(f"unusable path ({exc.__class__.__name__}: {exc})", file=file, field=field,
                        value=relative) from exc


def _check_file(c: Checker, path: Path, what: str, field: str, value: Any) -> None:
    """The named file must be a regular file (:func:`vision.data.files.regular_file`: not missing, not a FIFO, a
    device, a folder or a link loop); the error names the split, the field and the path."""
    regular_file(path, what=what, file=c.file, field=field, value=value)


def validate_split(dataset: Any, root: str | Path, file: str | Path, check_files: bool = True) -> None:
    """Validate a split dict against the schema of this module.

    Args:
        dataset: the parsed JSON.
        root: the folder the split's relative paths are resolved against (the JSON's folder).
        file: the JSON's name, used in messages.
        check_files: also require every named image, depth and video file to exist.

    Raises:
        DataError: naming the file, the field (e.g. ``annotations[3].bbox``) and the offending value.
    """
    root = Path(root)
    c = Checker(str(file))
    c.dict_(dataset, "<top level>")
    for key in ("images", "annotations", "categories"):
        if key not in dataset:
            raise c.fail(f"missing required key {key!r}", key, sorted(map(str, dataset.keys())))
    categories = _check_categories(c, dataset)
    videos = _check_videos(c, dataset, root, check_files, categories)
    tracks = _check_tracks(c, dataset, videos, categories)
    images = _check_images(c, dataset, videos, root, check_files)
    _check_annotations(c, dataset, images, categories, tracks)
    _check_info(c, dataset, categories)


def _check_categories(c: Checker, dataset: dict) -> dict[int, dict]:
    categories: dict[int, dict] = {}
    names: dict[str, int] = {}
    for i, field, cat, ident in each_entry(c, c.list_(dataset["categories"], "categories"), "categories"):
        name = c.str_(c.key(cat, "name", field), f"{field}.name", nonempty=True)
        if name in names:
            raise c.fail(f"duplicate category name (first used by categories[{names[name]}])", f"{field}.name", name)
        if "split" in cat:
            c.choice(cat["split"], f"{field}.split", CATEGORY_SPLITS)
        if "supercategory" in cat:
            c.str_(cat["supercategory"], f"{field}.supercategory")
        names[name] = i
        categories[ident] = cat
    return categories


def _check_videos(c: Checker, dataset: dict, root: Path, check_files: bool,
                  categories: dict[int, dict]) -> dict[int, dict]:
    videos: dict[int, dict] = {}
    for _, field, video, ident in each_entry(c, c.list_(dataset.get("videos", []), "videos"), "videos"):
        c.str_(c.key(video, "name", field), f"{field}.name")
        for key in ("width", "height"):
            if key in video:
                c.int_(video[key], f"{field}.{key}", minimum=1, maximum=MAX_IMAGE_SIDE)
        if "ordered" in video:
            c.bool_(video["ordered"], f"{field}.ordered")
        check_provenance(c, video, field)
        for key in ("source", "family"):
            if key in video and video[key] is not None:
                c.str_(video[key], f"{field}.{key}")
        if "file_name" in video:
            path = safe_path(root, video["file_name"], file=c.file, field=f"{field}.file_name")
            if check_files:
                _check_file(c, path, "video file", f"{field}.file_name", video["file_name"])
        if "concepts" in video:
            check_concepts(c, video["concepts"], f"{field}.concepts", categories)
        videos[ident] = video
    return videos


def check_concepts(c: Checker, concepts: Any, field: str, categories: Any) -> list[int]:
    """A video's ``concepts``: the category ids queried on it (present and absent phrases), each in
    ``categories`` (ids) and listed once; returns them."""
    seen: dict[int, int] = {}
    for j, category_id in enumerate(c.list_(concepts, field)):
        c.int_(category_id, f"{field}[{j}]")
        if category_id not in categories:
            raise c.fail("concept is not a category id in 'categories'", f"{field}[{j}]", category_id)
        if category_id in seen:
            raise c.fail(f"concept listed twice (first at {field}[{seen[category_id]}])", f"{field}[{j}]",
                         category_id)
        seen[category_id] = j
    return list(seen)


def check_near_categories(c: Checker, near: Any, names: set[str]) -> dict[str, set[str]]:
    """``info.near_categories``: phrase -> the names of its close cousins, every name one of ``names``; returns
    it as sets."""
    out: dict[str, set[str]] = {}
    for name, others in c.dict_(near, "info.near_categories").items():
        field = f"info.near_categories.{name}"
        if name not in names:
            raise c.fail("near_categories key is not a category name", field, name)
        for j, other in enumerate(c.list_(others, field)):
            if c.str_(other, f"{field}[{j}]") not in names:
                raise c.fail("near category is not a category name", f"{field}[{j}]", other)
        out[name] = set(others)
    return out


def check_provenance(c: Checker, video: dict, field: str) -> None:
    """A video's forensic ``label`` (one of :data:`VIDEO_LABELS`) and ``generator`` (a string or null), when
    present."""
    if "label" in video:
        c.choice(video["label"], f"{field}.label", VIDEO_LABELS)
    if video.get("generator") is not None:
        c.str_(video["generator"], f"{field}.generator")


def _check_tracks(c: Checker, dataset: dict, videos: dict[int, dict], categories: dict[int, dict]) -> dict[int, dict]:
    tracks: dict[int, dict] = {}
    for _, field, track, ident in each_entry(c, c.list_(dataset.get("tracks", []), "tracks"), "tracks"):
        video_id = c.int_(c.key(track, "video_id", field), f"{field}.video_id")
        if video_id not in videos:
            raise c.fail("track points to a video id that is not in 'videos'", f"{field}.video_id", video_id)
        category_id = c.int_(c.key(track, "category_id", field), f"{field}.category_id")
        if category_id not in categories:
            raise c.fail("track points to a category id that is not in 'categories'", f"{field}.category_id",
                         category_id)
        if "caption" in track and track["caption"] is not None:
            c.str_(track["caption"], f"{field}.caption")
        tracks[ident] = track
    return tracks


def _check_camera(c: Checker, camera: Any, field: str) -> None:
    c.dict_(camera, field)
    c.matrix(c.key(camera, "K", field), f"{field}.K", 3, 3)
    c.matrix(c.key(camera, "extrinsics", field), f"{field}.extrinsics", 3, 4)


def image_size(c: Checker, img: dict, field: str) -> tuple[int, int]:
    """``(width, height)`` of an image entry: integers in [1, :data:`MAX_IMAGE_SIDE`], at most
    :data:`MAX_IMAGE_PIXELS` pixels in all."""
    width = c.int_(c.key(img, "width", field), f"{field}.width", minimum=1, maximum=MAX_IMAGE_SIDE)
    height = c.int_(c.key(img, "height", field), f"{field}.height", minimum=1, maximum=MAX_IMAGE_SIDE)
    if width * height > MAX_IMAGE_PIXELS:
        raise c.fail(f"image of {width}x{height} pixels exceeds the limit of {MAX_IMAGE_PIXELS} pixels",
                     f"{field}.width", width)
    return width, height


def _check_annotated(c: Checker, img: dict, field: str) -> None:
    """An image's ``annotated``, when present, is true or false: the scorers leave out exactly the images whose
    value is ``False``, so ``"false"``, ``0`` or ``null`` would score an unlabelled frame as labelled."""
    if "annotated" in img:
        c.bool_(img["annotated"], f"{field}.annotated")


def _check_images(c: Checker, dataset: dict, videos: dict[int, dict], root: Path,
                  check_files: bool) -> dict[int, dict]:
    images: dict[int, dict] = {}
    first: dict[int, int] = {}
    frames: dict[tuple[int, int], int] = {}
    listings = Listings(root)
    for i, img in enumerate(c.list_(dataset["images"], "images")):
        # Fast path: a plain image (no video, camera or depth) whose every check below is sure to pass; anything
        # else (including every error) takes the checks below, which decide and word the verdict.
        if type(img) is dict and not ("video_id" in img or "frame_index" in img or "camera" in img
                                      or "depth_file" in img):
            ident, width, height = img.get("id"), img.get("width"), img.get("height")
            if (type(ident) is int and ident not in first and type(width) is int and type(height) is int
                    and 1 <= width <= MAX_IMAGE_SIDE and 1 <= height <= MAX_IMAGE_SIDE
                    and width * height <= MAX_IMAGE_PIXELS and type(img.get("annotated", True)) is bool
                    and listings.plain_file(img.get("file_name"))):
                first[ident] = i
                images[ident] = img
                continue
        field = f"images[{i}]"
        c.dict_(img, field)
        ident = c.unique_id(first, img, field)
        file_name = c.key(img, "file_name", field)
        path = safe_path(root, file_name, file=c.file, field=f"{field}.file_name")
        image_size(c, img, field)
        _check_annotated(c, img, field)
        if check_files:
            _check_file(c, path, "image file", f"{field}.file_name", file_name)
        has_video, has_frame = "video_id" in img, "frame_index" in img
        if has_video != has_frame:
            missing = "frame_index" if has_video else "video_id"
            raise c.fail(f"an image with video_id needs frame_index and vice versa; {missing!r} is missing "
                         "(the entry has keys shown)", f"{field}.{missing}", sorted(map(str, img.keys())))
        if has_video:
            video_id = c.int_(img["video_id"], f"{field}.video_id")
            if video_id not in videos:
                raise c.fail("image points to a video id that is not in 'videos'", f"{field}.video_id", video_id)
            frame = c.int_(img["frame_index"], f"{field}.frame_index", minimum=0)
            if (video_id, frame) in frames:
                raise c.fail(f"two images of video {video_id} share a frame_index "
                             f"(first: images[{frames[(video_id, frame)]}])", f"{field}.frame_index", frame)
            frames[(video_id, frame)] = i
        if "camera" in img:
            _check_camera(c, img["camera"], f"{field}.camera")
        if "depth_file" in img:
            depth_name = img["depth_file"]
            depth_path = safe_path(root, depth_name, file=c.file, field=f"{field}.depth_file")
            if depth_path.suffix.lower() not in DEPTH_SUFFIXES:
                raise c.fail("depth_file must be a float16 .npz (key 'depth', metres) or a 16-bit .png (mm)",
                             f"{field}.depth_file", depth_name)
            if check_files:
                _check_file(c, depth_path, "depth file", f"{field}.depth_file", depth_name)
        first[ident] = i
        images[ident] = img
    return images


def check_segmentation(c: Checker, seg: Any, field: str, height: int, width: int) -> None:
    """An RLE (see :func:`check_rle`) or a list of polygons whose vertices lie on the image (within
    :data:`BOX_TOLERANCE_PX`)."""
    if isinstance(seg, dict):
        check_rle(c, seg, field, height, width)
        return
    if isinstance(seg, list):
        for j, poly in enumerate(seg):
            c.list_(poly, f"{field}[{j}]")
            if len(poly) < 6 or len(poly) % 2:
                raise c.fail("a polygon needs an even number (>= 6) of coordinates x0, y0, x1, y1, ...",
                             f"{field}[{j}]", poly)
            for k, v in enumerate(poly):
                limit = width if k % 2 == 0 else height
                value = c.number(v, f"{field}[{j}][{k}]")
                # pycocotools rasterises a polygon edge by edge, so a vertex far off the image would make it
                # allocate memory in proportion to the edge's length (gigabytes for 1e6, a crash for 1e300).
                if not -BOX_TOLERANCE_PX <= value <= limit + BOX_TOLERANCE_PX:
                    axis = "x" if k % 2 == 0 else "y"
                    raise c.fail(f"polygon {axis} coordinate lies outside its {width}x{height} image (tolerance "
                                 f"{BOX_TOLERANCE_PX:g} px)", f"{field}[{j}][{k}]", v)
        return
    raise c.fail(f"expected an RLE object or a list of polygons, got {type(seg).__name__}", field, seg)


def _check_annotations(c: Checker, dataset: dict, images: dict[int, dict], categories: dict[int, dict],
                       tracks: dict[int, dict]) -> None:
    annotations = c.list_(dataset["annotations"], "annotations")
    if annotations_pass_by_column(annotations, images, categories):
        return
    first: dict[int, int] = {}
    track_frames: dict[tuple[int, int], int] = {}
    with DeferredRle(c) as deferred:
        for i, ann in enumerate(annotations):
            if _surely_valid(i, ann, first, images, categories, deferred):
                first[ann["id"]] = i
            else:
                # raises the first error; leaving the block on it flushes the deferred RLE of earlier annotations
                _check_annotation(c, i, ann, first, track_frames, images, categories, tracks)


def _surely_valid(i: int, ann: Any, first: dict[int, int], images: dict[int, dict], categories: dict[int, dict],
                  deferred: DeferredRle) -> bool:
    """The fast path of :func:`_check_annotations`: True when every check of :func:`_check_annotation` surely
    accepts annotation ``i`` (exact types, values well inside every limit; a compressed RLE is queued on
    ``deferred``, which checks it later); False when those checks must decide, errors included."""
    if type(ann) is not dict or "track_id" in ann or "score" in ann:
        return False
    ident, image_id, category_id = ann.get("id"), ann.get("image_id"), ann.get("category_id")
    bbox, crowd, area = ann.get("bbox"), ann.get("iscrowd", 0), ann.get("area", 0)
    img = images.get(image_id) if type(image_id) is int else None
    if not (img is not None and type(ident) is int and ident not in first and type(category_id) is int
            and category_id in categories and type(crowd) is int and (crowd == 0 or crowd == 1)
            and ((type(area) is float and 0.0 <= area <= FLOAT_MAX)
                 or (type(area) is int and 0 <= area <= FLOAT_MAX_INT))
            and type(bbox) is list and len(bbox) == 4 and NUMBER_TYPES.issuperset(map(type, bbox))):
        return False
    width, height = img["width"], img["height"]
    try:
        x, y, w, h = float(bbox[0]), float(bbox[1]), float(bbox[2]), float(bbox[3])
    except OverflowError:  # an integer beyond float range: the one-by-one checks word it
        return False
    tol = BOX_TOLERANCE_PX
    # NaN fails every comparison, an infinity one of them
    if not (w >= 0 and h >= 0 and x >= -tol and y >= -tol and x + w <= width + tol and y + h <= height + tol):
        return False
    seg = ann.get("segmentation", ABSENT)
    if seg is ABSENT:
        return True
    if type(seg) is list:
        return polygons_pass(seg, width, height)
    if deferred.offer(i, seg, height, width):
        return True
    # uncompressed RLE
    counts = seg.get("counts") if type(seg) is dict else None
    return (type(counts) is list and bool(counts) and rle_size_is(seg, height, width)
            and INT_TYPES.issuperset(map(type, counts)) and min(counts) >= 0 and sum(counts) == height * width)


def _bbox(c: Checker, bbox: Any, field: str) -> tuple[float, float, float, float]:
    """An annotation's ``[x, y, width, height]``: four finite numbers, width and height >= 0."""
    if not isinstance(bbox, list) or len(bbox) != 4:
        raise c.fail("expected bbox as [x, y, width, height] (XYWH pixels)", field, bbox)
    x, y, w, h = (c.number(v, f"{field}[{j}]") for j, v in enumerate(bbox))
    if w < 0 or h < 0:
        raise c.fail("bbox has a negative width or height", field, bbox)
    return x, y, w, h


def _check_crowd(c: Checker, ann: dict, field: str) -> None:
    """``iscrowd``, when present, is 0 or 1."""
    if "iscrowd" in ann:
        crowd = ann["iscrowd"]
        if crowd not in (0, 1) or (not isinstance(crowd, (int, bool))):
            raise c.fail("expected iscrowd 0 or 1", f"{field}.iscrowd", crowd)


def _check_annotation(c: Checker, i: int, ann: Any, first: dict[int, int], track_frames: dict[tuple[int, int], int],
                      images: dict[int, dict], categories: dict[int, dict], tracks: dict[int, dict]) -> None:
    """Every check of ``annotations[i]``, one by one, each error naming the field and the value."""
    field = f"annotations[{i}]"
    c.dict_(ann, field)
    ident = c.unique_id(first, ann, field)
    image_id = c.int_(c.key(ann, "image_id", field), f"{field}.image_id")
    if image_id not in images:
        raise c.fail("annotation points to an image id that is not in 'images'", f"{field}.image_id", image_id)
    img = images[image_id]
    width, height = img["width"], img["height"]
    category_id = c.int_(c.key(ann, "category_id", field), f"{field}.category_id")
    if category_id not in categories:
        raise c.fail("annotation points to a category id that is not in 'categories'", f"{field}.category_id",
                     category_id)
    bbox = c.key(ann, "bbox", field)
    x, y, w, h = _bbox(c, bbox, f"{field}.bbox")
    tol = BOX_TOLERANCE_PX
    if x < -tol or y < -tol or x + w > width + tol or y + h > height + tol:
        raise c.fail(f"bbox lies outside its {width}x{height} image (tolerance {tol:g} px)", f"{field}.bbox", bbox)
    if "segmentation" in ann:
        check_segmentation(c, ann["segmentation"], f"{field}.segmentation", height, width)
    if "area" in ann:
        c.number(ann["area"], f"{field}.area", minimum=0.0)
    _check_crowd(c, ann, field)
    if "score" in ann:
        c.number(ann["score"], f"{field}.score")
    if "track_id" in ann:
        track_id = c.int_(ann["track_id"], f"{field}.track_id")
        if track_id not in tracks:
            raise c.fail("annotation points to a track id that is not in 'tracks'", f"{field}.track_id",
                         track_id)
        track = tracks[track_id]
        if img.get("video_id") != track["video_id"]:
            raise c.fail(f"track {track_id} belongs to video {track['video_id']} but image {image_id} to video "
                         f"{img.get('video_id')}", f"{field}.track_id", track_id)
        if track["category_id"] != category_id:
            raise c.fail(f"annotation category differs from its track's category {track['category_id']}",
                         f"{field}.category_id", category_id)
        if (track_id, image_id) in track_frames:
            raise c.fail(f"track {track_id} has two annotations on image {image_id} "
                         f"(first: annotations[{track_frames[(track_id, image_id)]}])", f"{field}.track_id",
                         track_id)
        track_frames[(track_id, image_id)] = i
    first[ident] = i


def _check_info(c: Checker, dataset: dict, categories: dict[int, dict]) -> None:
    if "info" not in dataset:
        return
    info = c.dict_(dataset["info"], "info")
    if "vocabulary" in info:
        names = {cat["name"] for cat in categories.values()}
        for j, name in enumerate(c.list_(info["vocabulary"], "info.vocabulary")):
            c.str_(name, f"info.vocabulary[{j}]")
            if name not in names:
                raise c.fail("vocabulary name is not a category name", f"info.vocabulary[{j}]", name)
    if "near_categories" in info:
        check_near_categories(c, info["near_categories"], {cat["name"] for cat in categories.values()})


# ---------------------------------------------------------------- the parts of a split that scoring reads

# Each helper below reads the fields scoring reads, with the checks of :func:`validate_split` for those fields (NumPy
# numbers accepted, for splits built in Python); anything else (file names, cameras, extra keys) is left alone, so a
# split scores wherever its read parts are sound. Each raises a DataError naming the checker's file, the entry and
# the field. The tasks' split checks (``check_split`` of :mod:`vision.evaluation.tasks`) are made of them.

def top_list(c: Checker, dataset: dict, key: str, required: bool = True) -> list:
    """``dataset[key]``, a list; a missing key is refused when ``required``, else read as empty (as is null)."""
    if required and key not in dataset:
        raise c.fail(f"missing required key {key!r}", key, sorted(map(str, dataset)))
    if not required and dataset.get(key) is None:
        return []
    return c.list_(dataset[key], key)


def each_entry(c: Checker, items: list, key: str) -> Iterator[tuple[int, str, dict, int]]:
    """``(index, field, entry, id)`` of each object of the list ``items`` (``dataset[key]``), checked as it comes: a
    non-object, a missing or a duplicate id is refused. An entry's id counts as taken once the caller's loop has
    checked the entry, so the first problem in list order is the one reported."""
    first: dict[int, int] = {}
    for i, item in enumerate(items):
        field = f"{key}[{i}]"
        c.dict_(item, field)
        ident = c.unique_id(first, item, field)
        yield i, field, item, ident
        first[ident] = i


def entries(c: Checker, items: list, key: str) -> list[tuple[str, dict, int]]:
    """``(field, entry, id)`` of each object of a top-level list (:func:`each_entry`)."""
    return [(field, item, ident) for _, field, item, ident in each_entry(c, items, key)]


def scored_images(c: Checker, dataset: dict, annotated: bool = False) -> dict[int, dict]:
    """The images by id: unique integer ids, a valid size, an integer video_id (or null) and frame_index >= 0;
    with ``annotated``, also the ``annotated`` flag (true or false) that the scorers of frames read."""
    images: dict[int, dict] = {}
    for field, img, ident in entries(c, top_list(c, dataset, "images"), "images"):
        image_size(c, img, field)
        if annotated:
            _check_annotated(c, img, field)
        if img.get("video_id") is not None:
            c.int_(img["video_id"], f"{field}.video_id")
        if "frame_index" in img:
            c.int_(img["frame_index"], f"{field}.frame_index", minimum=0)
        images[ident] = img
    return images


def _annotation_image(c: Checker, ann: Any, field: str, images: dict[int, dict]) -> dict:
    c.dict_(ann, field)
    image_id = c.int_(c.key(ann, "image_id", field), f"{field}.image_id")
    if image_id not in images:
        raise c.fail("annotation points to an image id that is not in 'images'", f"{field}.image_id", image_id)
    return images[image_id]


def scored_detection_annotations(c: Checker, annotations: list, images: dict[int, dict],
                                  categories: dict[int, dict]) -> None:
    """The fields of each annotation that detection scoring reads. The fast paths of :func:`validate_split` vouch
    for a superset of these checks; whatever they cannot vouch for is checked one by one."""
    if annotations_pass_by_column(annotations, images, categories):
        return
    first: dict[int, int] = {}
    with DeferredRle(c) as deferred:  # compressed RLE counts are decoded in batches
        for i, ann in enumerate(annotations):
            if _surely_valid(i, ann, first, images, categories, deferred):
                first[ann["id"]] = i
                continue
            field = f"annotations[{i}]"
            image = _annotation_image(c, ann, field, images)
            category_id = c.int_(c.key(ann, "category_id", field), f"{field}.category_id")
            if category_id not in categories:
                raise c.fail("annotation points to a category id that is not in 'categories'", f"{field}.category_id",
                             category_id)
            _bbox(c, c.key(ann, "bbox", field), f"{field}.bbox")
            _check_crowd(c, ann, field)
            if "area" in ann:
                c.number(ann["area"], f"{field}.area", minimum=0.0)
            seg = ann.get("segmentation")
            if seg not in (None, []) and not deferred.offer(i, seg, image["height"], image["width"]):
                check_segmentation(c, seg, f"{field}.segmentation", image["height"], image["width"])


def scored_tracking_annotations(c: Checker, dataset: dict, images: dict[int, dict]) -> None:
    """Videos and tracks (integer ids; a track's video_id an integer) and the fields of each annotation that
    tracking scoring reads: its image, its track (of the image's video; one annotation per track and image) and an
    RLE segmentation of the image's size (compressed counts decoded in batches, :class:`DeferredRle`)."""
    entries(c, top_list(c, dataset, "videos", required=False), "videos")
    has_tracks = dataset.get("tracks") is not None
    track_videos: dict[int, int] = {}
    for field, track, ident in entries(c, top_list(c, dataset, "tracks", required=False), "tracks"):
        track_videos[ident] = c.int_(c.key(track, "video_id", field), f"{field}.video_id")
    seen: dict[tuple[int, int], int] = {}
    with DeferredRle(c) as deferred:
        for i, ann in enumerate(top_list(c, dataset, "annotations", required=False)):
            field = f"annotations[{i}]"
            image = _annotation_image(c, ann, field, images)
            if ann.get("track_id") is None:
                continue
            track_id = c.int_(ann["track_id"], f"{field}.track_id")
            if has_tracks and track_id not in track_videos:
                raise c.fail("annotation points to a track id that is not in 'tracks'", f"{field}.track_id",
                             track_id)
            if image.get("video_id") is None:
                raise c.fail(f"image {image['id']} belongs to no video, so it cannot carry a track",
                             f"{field}.track_id", track_id)
            if has_tracks and image["video_id"] != track_videos[track_id]:
                raise c.fail(f"track {track_id} belongs to video {track_videos[track_id]} but image {image['id']} "
                             f"to video {image['video_id']}", f"{field}.track_id", track_id)
            if (track_id, image["id"]) in seen:
                raise c.fail(f"track {track_id} has two annotations on image {image['id']} "
                             f"(first: annotations[{seen[(track_id, image['id'])]}])", f"{field}.track_id", track_id)
            seen[(track_id, image["id"])] = i
            seg = ann.get("segmentation")
            if seg and not deferred.offer(i, seg, image["height"], image["width"]):
                check_rle(c, seg, f"{field}.segmentation", image["height"], image["width"])
