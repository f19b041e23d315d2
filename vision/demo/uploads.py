"""Check and read what a user uploads: its kind (by suffix), its size, and how many frames are used.

Only paths handed over by Gradio (its upload temp files) or the demo's own example files reach these functions;
errors are :class:`~vision.errors.InputError` (or :class:`~vision.errors.VideoError` for a file that cannot be
decoded) whose message names the file by its base name and says what is wrong.

Decoded size is bounded whatever the upload (the upload limit bounds only the file's bytes): a video goes through
:func:`vision.data.video.check_video` (truncated or corrupt files and frames over ``max_pixels`` are refused before
anything is decoded), an image's header is checked before it is decoded, at most ``max_frames`` frames are used,
and frames over :data:`vision.data.io.MAX_WORKING_PIXELS` are downscaled as they are read. The demo then shows,
prompts and reports everything in the pixels of those frames; :attr:`Media.note` says when they were downscaled.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

from vision.data.io import (IMAGE_SUFFIXES, MAX_INPUT_PIXELS, MAX_WORKING_PIXELS, VIDEO_SUFFIXES, check_pixels,
                            fit_within, image_size)
from vision.errors import InputError, VideoError

__all__ = ["Media", "check_file", "load_media"]


@dataclass
class Media:
    """Decoded input: ``frames`` uint8 ``[T, H, W, 3]`` RGB (at most :data:`MAX_WORKING_PIXELS` each), ``fps`` (10
    for images), ``name`` (the first file's base name), ``is_video``, and ``note``: sentences for the user when
    frames were left out or downscaled (else empty)."""

    frames: np.ndarray
    fps: float
    name: str
    is_video: bool
    note: str = ""


def check_file(path: str | Path | None, suffixes: Sequence[str], max_mb: float) -> Path:
    """Return ``path`` as a Path if it exists, has one of ``suffixes`` and is at most ``max_mb`` megabytes."""
    if path is None or str(path) == "":
        raise InputError("no file given: upload one first")
    file = Path(path)
    if file.suffix.lower() not in suffixes:
        kind = file.suffix or "file without a suffix"
        raise InputError(f"{file.name!r} is a {kind} file; this input takes {', '.join(suffixes)}")
    if not file.is_file():
        raise InputError(f"{file.name!r} was not received (the upload may have failed); upload it again")
    size_mb = file.stat().st_size / 1e6
    if size_mb > max_mb:
        raise InputError(f"{file.name!r} is {size_mb:.0f} MB, over the {max_mb:g} MB upload limit")
    return file


def _paths(files: str | Path | Sequence[str | Path] | None) -> list[Path]:
    if files is None:
        return []
    if isinstance(files, (str, Path)):
        return [Path(files)]
    return [Path(f) for f in files if f]


def _downscale_note(width: int, height: int, work: tuple[int, int]) -> str:
    if work == (width, height):
        return ""
    return (f"the {width}x{height} frames are shown and processed at {work[0]}x{work[1]} (frames over "
            f"{MAX_WORKING_PIXELS} pixels are downscaled); coordinates and results are in those pixels")


def _joined(*notes: str) -> str:
    return "\n".join(n for n in notes if n)


def load_media(files: str | Path | Sequence[str | Path] | None, max_frames: int, max_mb: float,
               allow_images: bool = True, max_pixels: int = MAX_INPUT_PIXELS) -> Media:
    """Read one video, or one or more images (sorted by file name, all of one size), into :class:`Media` under
    the limits of the module docstring.

    At most ``max_frames`` frames are used (the first ones of a video, the first images by name); ``note`` says
    so when more were given, and when the frames were downscaled. Raises :class:`InputError` for no file, a mix
    of videos and images, several videos, a wrong kind or an oversized file, and :class:`VideoError` for an
    unreadable, truncated video or image, or one with frames over ``max_pixels``."""
    from vision.data.video import check_video, read_frames_from_paths, read_video

    paths = _paths(files)
    if not paths:
        raise InputError("no file given: upload a video or images first")
    videos = [p for p in paths if p.suffix.lower() in VIDEO_SUFFIXES]
    allowed = VIDEO_SUFFIXES + (IMAGE_SUFFIXES if allow_images else ())
    if videos and len(paths) > 1:
        raise InputError("upload either one video or a set of images, not several files with a video among them")
    if videos:
        video = check_file(videos[0], allowed, max_mb)
        info = check_video(video, max_pixels=max_pixels)
        work = fit_within(info.width, info.height, MAX_WORKING_PIXELS)
        frames = read_video(video, max_frames=max_frames, size=work, max_pixels=max_pixels)
        note = ""
        if info.num_frames > len(frames):
            note = (f"{video.name} has about {info.num_frames} frames; the first {len(frames)} are used "
                    f"(limit {max_frames})")
        return Media(frames=frames, fps=float(info.fps), name=video.name, is_video=True,
                     note=_joined(note, _downscale_note(info.width, info.height, work)))
    images = sorted((check_file(p, allowed, max_mb) for p in paths), key=lambda p: p.name)
    note = ""
    if len(images) > max_frames:
        note = f"{len(images)} images were given; the first {max_frames} by name are used"
        images = images[:max_frames]
    width, height = image_size(images[0])
    for image in images:  # headers only: nothing is decoded before every image passes
        size = image_size(image)
        check_pixels(*size, image.name, max_pixels)
        if size != (width, height):
            raise VideoError(f"image size {size[0]}x{size[1]} differs from the first image's {width}x{height}",
                             file=image.name)
    work = fit_within(width, height, MAX_WORKING_PIXELS)
    frames = read_frames_from_paths(images, size=work, max_pixels=max_pixels)
    return Media(frames=frames, fps=10.0, name=images[0].name, is_video=False,
                 note=_joined(note, _downscale_note(width, height, work)))
