"""The input of ``vision predict``: a video, an image or a folder of images, checked before any model is loaded
and decoded once.

Limits (:mod:`vision.data.io`): a frame over ``max_pixels`` is refused from the file's header, before decoding;
only the first ``max_frames`` frames are used (:attr:`Input.note` says so); frames over ``MAX_WORKING_PIXELS`` are
downscaled when they are read for drawing (:meth:`Input.working_frames`).

One pass per input: :func:`load_input` checks the file once (its header, and a video's packets without decoding
them); a predictor then reads :attr:`Input.source`, a :class:`~vision.data.video.FrameSource` that decodes each frame
once into the model's size and the working size, so the frames drawn come from the same pass.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from vision.data.io import IMAGE_SUFFIXES, MAX_INPUT_FRAMES, MAX_INPUT_PIXELS, MAX_WORKING_PIXELS, fit_within
from vision.errors import InputError

if TYPE_CHECKING:
    from vision.data.video import FrameSource

__all__ = ["Input", "load_input", "print_notes", "progress_bar"]


class Input:
    """A checked input: a ``video`` file or ``images`` (the ones used, sorted by name), its frame size ``width`` x
    ``height`` (the pixels of prompts and results), ``fps``, ``frames`` (how many are used; None when a video does
    not say), the limits ``max_frames`` / ``max_pixels`` the readers apply, and a ``note`` for the user when frames
    were left out (else empty)."""

    def __init__(self, video: Path | None, images: list[Path], width: int, height: int, fps: float,
                 frames: int | None, max_frames: int, max_pixels: int, note: str = "") -> None:
        from vision.data.video import FrameSource

        self.video, self.images = video, images
        self.width, self.height, self.fps, self.frames = width, height, fps, frames
        self.max_frames, self.max_pixels, self.note = max_frames, max_pixels, note
        self._frames = FrameSource(video, images, width, height, max_frames, max_pixels, keep=self.working_size)

    @property
    def source(self) -> FrameSource:
        """What the predictors' ``init_state`` reads: the frames, decoded once (at the model's size, and at
        :attr:`working_size` in the same pass)."""
        return self._frames

    @property
    def paths(self) -> Path | list[Path]:
        """The video path or the list of image paths (for a reader that streams the file itself)."""
        return self.video if self.video is not None else self.images

    @property
    def working_size(self) -> tuple[int, int]:
        """``(W, H)`` of the frames that are drawn: the input's, downscaled to at most MAX_WORKING_PIXELS."""
        return fit_within(self.width, self.height, MAX_WORKING_PIXELS)

    def working_frames(self) -> np.ndarray:
        """The frames used, at :attr:`working_size`, uint8 [T, H, W, 3] RGB (from the pass that read
        :attr:`source` for the model, when one did)."""
        return self._frames.kept()


def load_input(path: Path, max_frames: int = MAX_INPUT_FRAMES, max_pixels: int = MAX_INPUT_PIXELS) -> Input:
    """Check ``path`` (a video, an image or a folder of images) without decoding its pixels: the video reading
    policy (vision.data.video.check_video: corrupt, truncated, over ``max_pixels``) or each image's header, and
    that the images of a folder have one size. At most ``max_frames`` frames are used (the first ones)."""
    from vision.data.io import check_pixels, image_size
    from vision.data.video import check_video

    if not path.exists():
        raise InputError(f"input not found: {path}")
    if path.is_dir() or path.suffix.lower() in IMAGE_SUFFIXES:
        images = sorted(p for p in path.iterdir() if p.suffix.lower() in IMAGE_SUFFIXES) if path.is_dir() else [path]
        if not images:
            raise InputError(f"no images ({', '.join(IMAGE_SUFFIXES)}) in folder {path}")
        note = ""
        if len(images) > max_frames:
            note = f"{path.name}: the first {max_frames} of its {len(images)} images (by name) are used (--max-frames)"
            images = images[:max_frames]
        width, height = image_size(images[0])
        for image in images:
            size = image_size(image)
            check_pixels(*size, image, max_pixels)
            if size != (width, height):
                raise InputError(f"{image}: image size {size[0]}x{size[1]} differs from the first image's "
                                 f"{width}x{height}")
        return Input(None, images, width, height, 10.0, len(images), max_frames, max_pixels, note)
    info = check_video(path, max_pixels=max_pixels)
    note = info.note  # a tolerated one-frame shortfall (vision.data.video.MUXER_SLACK), else empty
    if info.num_frames > max_frames:
        used_note = f"{path.name}: the first {max_frames} of its {info.num_frames} frames are used (--max-frames)"
        note = f"{note}; {used_note}" if note else used_note
    used = min(info.num_frames, max_frames) if info.num_frames else None
    return Input(path, [], info.width, info.height, info.fps, used, max_frames, max_pixels, note)


def print_notes(source: Input, drawn: bool = True) -> None:
    """Print what the user should know about how the input was used (``drawn``: the task writes annotated.mp4)."""
    if source.note:
        print(f"note: {source.note}")
    if drawn and source.working_size != (source.width, source.height):
        w, h = source.working_size
        print(f"note: the {source.width}x{source.height} frames are drawn at {w}x{h} in annotated.mp4 (frames over "
              f"{MAX_WORKING_PIXELS} pixels are downscaled); results are in the input's pixels")


def progress_bar(total: int | None, desc: str, unit: str = "frame"):
    """A tqdm bar on stderr (hidden when stderr is not a terminal)."""
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, unit=unit, disable=None)
