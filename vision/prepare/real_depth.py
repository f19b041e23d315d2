"""Real frames with a monocular teacher's relative disparity, for the geometry backbone's optional real-depth term
(``vision prepare real-depth``; ``make data-real-depth``).

``vision prepare real-depth [--out datasets/real/real_depth_train.npz] [--footage DIR ...] [--opencv-samples DIR]
[--if-present] [--size 64] [--teacher-size 128] [--max-frames 120] [--duplicate-threshold 0.5] [--threads 1]``

Sources: the *training-role* sources of the detection teacher's converter (:mod:`vision.prepare.teacher`:
:func:`~vision.prepare.teacher.default_sources` with its roles; ``--footage`` and ``--opencv-samples`` as there).
Sources of another role (held-out and validation videos) are left out, and so is every :data:`HELD_OUT` source
whatever its role: scikit-image's ``motorcycle_left`` photograph is the left view of the Middlebury 2014
Motorcycle pair that ``benchmarks/bench_geometry_real.py`` scores depth on, so nothing of Middlebury is trained on.
What is left out is printed and recorded. :func:`prepare` itself refuses such a source.

Frames: a video is sampled as the teacher's converter samples it (:func:`vision.prepare.teacher.sample_video`:
stride ``ceil(frames declared / max_frames)``, at most ``--max-frames`` frames, near-duplicates dropped); a
photograph is one frame. Each frame is centre-cropped to a square (its shorter side), and the crop is resized
(area) twice: to ``--size`` for the stored frame, and to ``--teacher-size`` for the teacher.

Teacher: TCMonoDepth's small network (:func:`vision.weights.nets.tcmonodepth.load_tcmonodepth`, registry name
``tcmonodepth-small``) on the ``--teacher-size`` crop (a multiple of 32, so the network sees it unchanged), its
relative inverse depth (larger = nearer, unknown scale and shift) resized (area) to ``--size``. The teacher sees the
crop at its own, larger size rather than the ``--size`` frame enlarged: it resolves more of the scene, and both
images come from the same crop, so the disparity map lies on the stored frame's pixels.

Output: ``--out`` (default :data:`DEFAULT_OUT`), one compressed ``.npz`` with ``frames`` uint8 ``[N, S, S, 3]``
(RGB) and ``disparity`` float16 ``[N, S, S]``, read by :class:`vision.data.real_depth.RealDepthFrames`; beside it a
JSON manifest (same name, ``.json``) with the provenance: the teacher (name, file, sha256 from the registry, input
size), the sizes, the sampling rule, each source (origin in words, frames declared / sampled / kept, its frame
indices and its rows in the arrays), the sources left out and the ``.npz``'s sha256. Both are built beside their
folder and moved in together (:func:`vision.prepare.files.staged_output`), so a failure leaves the old pair whole.
Sources and frames are in a fixed order and the archive has fixed timestamps, so a rerun with the same inputs and
``--threads`` writes byte-identical files.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import zipfile
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import numpy as np
import torch

from vision.data.files import output_file
from vision.data.io import atomic_write_bytes, atomic_write_json, read_image, resize_frame
from vision.errors import InputError, VisionError
from vision.prepare.converter import add_out, converter_parser, run
from vision.prepare.files import staged_output
from vision.prepare.teacher import DUPLICATE_THRESHOLD, Source, check_options, default_sources, sample_video

__all__ = ["DEFAULT_OUT", "HELD_OUT", "TEACHER", "held_out", "training_sources", "square_crop", "prepare", "main"]

DEFAULT_OUT = "datasets/real/real_depth_train.npz"
#: Name prefixes (lower case) of sources never used, whatever their role: scikit-image's ``motorcycle_left`` /
#: ``motorcycle_right`` are the Middlebury 2014 Motorcycle pair, the real-depth benchmark's test image.
HELD_OUT = ("motorcycle", "middlebury")
TEACHER = "tcmonodepth-small"
#: Frames per teacher forward pass.
TEACHER_BATCH = 16
#: The ``.npz`` members' timestamp (zip's earliest), so the archive's bytes depend on its content alone.
ZIP_TIME = (1980, 1, 1, 0, 0, 0)


def held_out(source: Source) -> bool:
    """True for a source of :data:`HELD_OUT` (by its name or its file's name, case-insensitive)."""
    names = (source.name.lower(), Path(source.path).name.lower())
    return any(prefix in name for name in names for prefix in HELD_OUT)


def training_sources(sources: Sequence[Source], log: Callable[[str], None] = print) -> tuple[list[Source], list[dict]]:
    """``(kept, left out)``: the sources of role ``train`` that are not :func:`held_out`, in order, and a record
    (``name``, ``origin``, ``reason``) of each other one, each said through ``log``."""
    kept, dropped = [], []
    for source in sources:
        if held_out(source):
            reason = "held out: the Middlebury Motorcycle test image of benchmarks/bench_geometry_real.py"
        elif source.role != "train":
            reason = f"role {source.role}"
        else:
            kept.append(source)
            continue
        dropped.append({"name": source.name, "origin": source.origin, "reason": reason})
        log(f"note: {source.name} left out ({reason})")
    return kept, dropped


def square_crop(rgb: np.ndarray) -> np.ndarray:
    """The centred square of ``rgb`` ``[H, W, 3]`` whose side is its shorter side (a view, not a copy)."""
    height, width = rgb.shape[:2]
    side = min(height, width)
    top, left = (height - side) // 2, (width - side) // 2
    return rgb[top:top + side, left:left + side]


def _check_arguments(size: int, teacher_size: int, max_frames: int, duplicate_threshold: float, threads: int) -> None:
    checks = [("--size", size, 8 <= size <= 1024, "an integer in [8, 1024]"),
              ("--teacher-size", teacher_size, 32 <= teacher_size <= 1024 and teacher_size % 32 == 0,
               "a multiple of 32 in [32, 1024]"),
              ("--max-frames", max_frames, max_frames >= 1, "a positive integer"),
              ("--duplicate-threshold", duplicate_threshold, 0.0 <= duplicate_threshold < 255.0, "in [0, 255)"),
              ("--threads", threads, threads >= 1, "a positive integer")]
    check_options(checks)


def _check_sources(sources: Sequence[Source]) -> dict[str, object]:
    """Training sources only, unique names, every video checked before the teacher runs (header and packets:
    :func:`vision.data.video.check_video`). Returns ``{name: VideoInfo}`` of the videos."""
    from vision.data.video import check_video

    infos: dict[str, object] = {}
    seen: set[str] = set()
    for source in sources:
        if held_out(source):
            raise InputError(f"source {source.name!r} ({source.origin}) is held out: the Middlebury Motorcycle pair "
                             "is the real-depth test image and is never trained on")
        if source.role != "train":
            raise InputError(f"source {source.name!r}: only training sources may be used; its role is "
                             f"{source.role!r}")
        if source.kind not in ("video", "photo"):
            raise InputError(f"source {source.name!r}: kind must be video or photo; got {source.kind!r}")
        if source.name in seen:
            raise InputError(f"two sources are named {source.name!r} (a source is named by its file stem)")
        seen.add(source.name)
        if source.kind == "video":
            try:
                info = check_video(source.path)
            except VisionError as exc:
                raise InputError(f"source {source.path} cannot be read: {' '.join(str(exc).split())}") from exc
            if info.num_frames < 1:
                raise InputError(f"source {source.path} cannot be read: it declares no frames")
            infos[source.name] = info
    return infos


def _frames_of(source: Source, info, max_frames: int, duplicate_threshold: float,
               stats: dict) -> Iterator[tuple[int, np.ndarray]]:
    """``(frame index, RGB frame as stored)`` of one source."""
    if source.kind == "photo":
        stats.update(frames_sampled=1, duplicates_dropped=0)
        yield 0, read_image(source.path)
        return
    yield from sample_video(source.path, info.num_frames, max_frames, None, duplicate_threshold, stats)


def _teacher_disparity(net, crops: np.ndarray, size: int, teacher_size: int) -> np.ndarray:
    """float16 ``[n, size, size]``: the teacher's disparity of ``crops`` uint8 ``[n, T, T, 3]`` (T the teacher's
    size), resized (area) to ``size``."""
    from vision.data.resize import resize_image
    from vision.weights.nets.tcmonodepth import predict_depth

    raw = predict_depth(net, crops, size=teacher_size, batch_size=TEACHER_BATCH)  # [n, T, T]
    out = np.stack([resize_image(np.ascontiguousarray(d), (size, size)) for d in raw]).astype(np.float16)
    if not np.isfinite(out).all():
        raise InputError("the teacher gave non-finite disparity (or values beyond float16)")
    return out


def _npz_bytes(arrays: dict[str, np.ndarray]) -> bytes:
    """A compressed ``.npz`` of ``arrays`` whose bytes depend on the arrays alone (``np.savez_compressed`` stamps
    each member with the current time)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, array in arrays.items():
            member = zipfile.ZipInfo(f"{name}.npy", date_time=ZIP_TIME)
            member.compress_type = zipfile.ZIP_DEFLATED
            member.external_attr = 0o644 << 16
            with archive.open(member, "w", force_zip64=True) as handle:
                np.lib.format.write_array(handle, np.ascontiguousarray(array), allow_pickle=False)
    return buffer.getvalue()


def _teacher_info(teacher_size: int) -> dict:
    from vision import __version__
    from vision.weights.registry import entry

    item = entry(TEACHER)
    return {"name": TEACHER, "file": item.file, "sha256": item.sha256, "input_size": [teacher_size, teacher_size],
            "output": "relative inverse depth (larger = nearer), unknown scale and shift per frame",
            "version": __version__}


def prepare(out: str | Path, sources: Sequence[Source], size: int = 64, teacher_size: int = 128,
            max_frames: int = 120, duplicate_threshold: float = DUPLICATE_THRESHOLD, teacher=None,
            left_out: Sequence[dict] = (), log: Callable[[str], None] = print) -> tuple[Path, Path]:
    """Sample ``sources``, run the teacher and write the ``.npz`` and its manifest (see the module docstring);
    returns ``(npz path, manifest path)``.

    Args:
        sources: training sources only (:func:`training_sources` picks them from
            :func:`vision.prepare.teacher.default_sources`); read in name order.
        teacher: a :class:`~vision.weights.nets.tcmonodepth.TCSmallNet` (None: :func:`load_tcmonodepth`); the
            manifest records the registered ``tcmonodepth-small`` either way.
        left_out: records of the sources left out (``training_sources``'s second value), for the manifest.

    Raises:
        InputError: bad numbers or ``--out``, a source that is not for training or is held out, an unreadable
            source, no frame at all (nothing written then); WeightsError: the teacher's file is missing (with the
            command that fetches it).
    """
    _check_arguments(size, teacher_size, max_frames, duplicate_threshold, 1)
    out = output_file(out, flag="--out")
    if out.suffix.lower() != ".npz":
        raise InputError(f"--out must name an .npz file; got {out}")
    manifest_path = out.with_suffix(".json")
    infos = _check_sources(sources)
    if teacher is None:
        from vision.weights.nets.tcmonodepth import load_tcmonodepth

        teacher = load_tcmonodepth()
    teacher_info = _teacher_info(teacher_size)
    frames, disparity, entries = [], [], []
    for source in sorted(sources, key=lambda s: s.name):
        stats: dict = {}
        indices, small, large = [], [], []
        try:
            for index, rgb in _frames_of(source, infos.get(source.name), max_frames, duplicate_threshold, stats):
                crop = square_crop(rgb)
                indices.append(index)
                small.append(resize_frame(crop, (size, size)))
                large.append(resize_frame(crop, (teacher_size, teacher_size)))
        except VisionError as exc:
            raise InputError(f"source {source.path} cannot be read: {' '.join(str(exc).split())}") from exc
        entry = {"name": source.name, "kind": source.kind, "origin": source.origin, "role": source.role,
                 "first": sum(len(f) for f in frames), "frames_kept": len(indices), "frame_indices": indices,
                 **stats}
        if source.kind == "video":
            entry["frames_declared"] = infos[source.name].num_frames
        entries.append(entry)
        if indices:
            frames.append(np.stack(small))
            disparity.append(_teacher_disparity(teacher, np.stack(large), size, teacher_size))
        log(f"{source.name}: {len(indices)} frames")
    if not frames:
        raise InputError("no frame to write: every source is empty")
    arrays = {"frames": np.concatenate(frames), "disparity": np.concatenate(disparity)}
    data = _npz_bytes(arrays)
    manifest = {
        "description": "real frames with the relative disparity of a monocular teacher (vision-prepare-real-depth)",
        "file": out.name, "sha256": hashlib.sha256(data).hexdigest(), "frames": int(arrays["frames"].shape[0]),
        "arrays": {name: {"dtype": str(a.dtype), "shape": list(a.shape)} for name, a in arrays.items()},
        "teacher": teacher_info,
        "size": size, "teacher_size": teacher_size,
        "crop": "centred square of the shorter side, resized (area) to size (frames) and teacher_size (teacher)",
        "sampling": {"stride": "ceil(frames declared / max_frames), from frame 0", "max_frames": max_frames,
                     "duplicate_threshold": duplicate_threshold,
                     "duplicate_rule": "mean absolute difference of 32x32 grey thumbnails (0-255) to the last kept "
                                       "frame below duplicate_threshold: dropped"},
        "sources": entries,
        "left_out": list(left_out),
    }
    with staged_output(out.parent) as stage:  # the two files replace their namesakes together; the rest stays
        atomic_write_bytes(stage / out.name, data)
        atomic_write_json(stage / manifest_path.name, manifest, indent=1)
    log(f"wrote {manifest['frames']} frames of {size}x{size} from {sum(e['frames_kept'] > 0 for e in entries)} "
        f"sources to {out} (manifest {manifest_path})")
    return out, manifest_path


def main(argv: Sequence[str] | None = None) -> int:
    """Parse ``argv`` (None: ``sys.argv[1:]``) and write the file; 0 on success, 2 with one ``error:`` line on bad
    arguments, unreadable sources or missing weights."""
    parser = converter_parser(__doc__)
    add_out(parser, default=DEFAULT_OUT,
            help=f"the .npz to write (default {DEFAULT_OUT}); the manifest goes beside it as .json")
    parser.add_argument("--footage", action="append", default=[], metavar="DIR",
                        help="a folder of real camera videos (as vision prepare real-detection); repeatable")
    parser.add_argument("--opencv-samples", default=None, metavar="DIR",
                        help="OpenCV's sample videos (vision prepare opencv-samples; default datasets/opencv_samples, "
                             "skipped with a note when absent)")
    parser.add_argument("--if-present", action="store_true",
                        help="skip an absent --opencv-samples / --footage folder with a note instead of an error")
    parser.add_argument("--size", type=int, default=64, help="side of the stored square frames (default 64)")
    parser.add_argument("--teacher-size", type=int, default=128,
                        help="side of the square crop the teacher sees, a multiple of 32 (default 128)")
    parser.add_argument("--max-frames", type=int, default=120, help="frames per video at most (default 120)")
    parser.add_argument("--duplicate-threshold", type=float, default=DUPLICATE_THRESHOLD,
                        help="a frame whose 32x32 grey thumbnail differs from the last kept one's by less (mean "
                             "absolute difference, 0-255) is dropped")
    parser.add_argument("--threads", type=int, default=1, help="torch threads of the teacher (default 1)")
    return run(parser, argv, _prepare, one_line=True)


def _prepare(args: argparse.Namespace) -> Iterator[str]:
    """The file and its manifest, one line; an ``OSError`` becomes the one-line error naming the file
    (:func:`vision.data.files.write_failure`)."""
    try:
        _check_arguments(args.size, args.teacher_size, args.max_frames, args.duplicate_threshold, args.threads)
        torch.set_num_threads(args.threads)
        sources, left_out = training_sources(default_sources(args.opencv_samples, args.footage, args.if_present))
        npz, manifest = prepare(args.out, sources, size=args.size, teacher_size=args.teacher_size,
                                max_frames=args.max_frames, duplicate_threshold=args.duplicate_threshold,
                                left_out=left_out)
    except OSError as exc:
        from vision.data.files import write_failure

        raise write_failure(exc) from exc
    counts = json.loads(manifest.read_text())["frames"]
    yield f"{npz}: {counts} frames; manifest {manifest}"
