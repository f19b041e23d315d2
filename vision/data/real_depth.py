"""Real frames with a teacher's relative disparity (the file ``vision-prepare-real-depth`` writes), and the draw of
a training step's frames from it.

The file: one ``.npz`` with ``frames`` uint8 ``[N, S, S, 3]`` (RGB) and ``disparity`` float16 ``[N, S, S]``
(relative inverse depth, larger = nearer, unknown scale and shift per frame). It is read once, whole: it must be a
regular file of at most :data:`MAX_FILE_BYTES` bytes, and the two arrays' ``.npy`` headers (shape, dtype) are
checked before anything is decompressed, so a file that claims more than :data:`MAX_ARRAY_BYTES` is refused
without allocating it. Every problem is a :class:`~vision.errors.DataError` naming the file and the field.

:func:`draw_indices` gives the frames of one training step as a pure function of the run's seed, the step and the
rank: a resumed run draws what the uninterrupted one drew, and no global generator moves.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

import numpy as np
import torch

from vision.data.files import regular_file
from vision.errors import DataError, InputError

__all__ = ["MAX_FILE_BYTES", "MAX_ARRAY_BYTES", "RealDepthFrames", "draw_indices"]

#: Largest real-depth file read (compressed bytes on disk).
MAX_FILE_BYTES = 2 << 30
#: Largest decompressed size of the two arrays together: 4 GiB (about 200 000 frames of 64 x 64).
MAX_ARRAY_BYTES = 4 << 30
#: The arrays of the file: name -> (dtype, number of dimensions, trailing shape after N).
ARRAYS = {"frames": (np.dtype(np.uint8), 4), "disparity": (np.dtype(np.float16), 3)}


def _header(archive: zipfile.ZipFile, name: str, path: Path) -> tuple[tuple[int, ...], np.dtype]:
    """Shape and dtype of the array ``name`` of an open ``.npz``, from its ``.npy`` header alone."""
    member = f"{name}.npy"
    if member not in archive.namelist():
        keys = sorted(n[:-4] for n in archive.namelist() if n.endswith(".npy"))
        raise DataError(f"no array {name!r} (arrays: {keys}); write the file with vision-prepare-real-depth",
                        file=path, field=name)
    with archive.open(member) as handle:
        version = np.lib.format.read_magic(handle)
        read = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
        shape, fortran, dtype = read(handle)
    if fortran:
        raise DataError("array is stored in Fortran order; write the file with vision-prepare-real-depth",
                        file=path, field=name)
    return tuple(int(v) for v in shape), np.dtype(dtype)


def _check_layout(path: Path, shapes: dict[str, tuple[int, ...]], dtypes: dict[str, np.dtype]) -> None:
    for name, (dtype, ndim) in ARRAYS.items():
        if dtypes[name] != dtype:
            raise DataError(f"must be {dtype}, got {dtypes[name]}", file=path, field=f"{name}.dtype",
                            value=str(dtypes[name]))
        if len(shapes[name]) != ndim:
            raise DataError(f"must have {ndim} dimensions", file=path, field=f"{name}.shape", value=list(shapes[name]))
    frames, disparity = shapes["frames"], shapes["disparity"]
    if frames[3] != 3 or frames[1] != frames[2] or frames[1] < 1:
        raise DataError("must be [N, S, S, 3] (square RGB frames)", file=path, field="frames.shape",
                        value=list(frames))
    if frames[0] < 1:
        raise DataError("holds no frame", file=path, field="frames.shape", value=list(frames))
    if disparity != frames[:3]:
        raise DataError(f"must be [N, S, S] = {list(frames[:3])} (one map per frame)", file=path,
                        field="disparity.shape", value=list(disparity))
    size = sum(int(np.prod(shapes[name], dtype=np.int64)) * dtypes[name].itemsize for name in ARRAYS)
    if size > MAX_ARRAY_BYTES:
        raise DataError(f"its arrays hold {size} bytes, over the limit of {MAX_ARRAY_BYTES} bytes", file=path,
                        field="frames.shape", value=list(frames))


class RealDepthFrames:
    """The frames and teacher disparity of a real-depth file, held in memory as tensors.

    Args:
        path: the ``.npz`` (see the module docstring).

    Attributes:
        frames: uint8 ``[N, S, S, 3]``; disparity: float32 ``[N, S, S]`` (CPU tensors); size: ``S``.

    ``batch(indices, device)`` -> ``(images [B, 1, 3, S, S] float in [0, 1], disparity [B, S, S] float32)``: the
    frames as single-view clips, normalised as the multi-view batches are (uint8 / 255).

    Raises:
        DataError: naming the file and field: not a regular file within :data:`MAX_FILE_BYTES`, not an ``.npz``,
            an array missing or of another dtype or shape, too large, or a non-finite disparity.
    """

    def __init__(self, path: str | Path) -> None:
        path = regular_file(path, what="real-depth file", max_bytes=MAX_FILE_BYTES)
        self.path = path
        try:
            with zipfile.ZipFile(path) as archive:
                headers = {name: _header(archive, name, path) for name in ARRAYS}
            _check_layout(path, {k: v[0] for k, v in headers.items()}, {k: v[1] for k, v in headers.items()})
            with np.load(path, allow_pickle=False) as data:
                frames, disparity = np.asarray(data["frames"]), np.asarray(data["disparity"], np.float32)
        except DataError:
            raise
        except Exception as exc:  # zipfile / numpy errors on a corrupt file
            raise DataError(f"cannot read the real-depth file ({exc.__class__.__name__}: {exc})",
                            file=path) from None
        bad = ~np.isfinite(disparity)
        if bad.any():
            frame = int(np.argwhere(bad)[0][0])
            raise DataError(f"{int(bad.sum())} non-finite value(s), the first in frame {frame}", file=path,
                            field="disparity")
        self.frames = torch.from_numpy(np.ascontiguousarray(frames))
        self.disparity = torch.from_numpy(disparity)
        self.size = int(frames.shape[1])

    def __len__(self) -> int:
        return int(self.frames.shape[0])

    def __repr__(self) -> str:
        return f"RealDepthFrames({str(self.path)!r}: {len(self)} frames of {self.size}x{self.size})"

    def batch(self, indices: torch.Tensor, device: torch.device | str = "cpu") -> tuple[torch.Tensor, torch.Tensor]:
        """See the class docstring; ``indices`` int64 ``[B]``."""
        images = self.frames[indices].to(device).permute(0, 3, 1, 2).float().div_(255.0)[:, None]
        return images, self.disparity[indices].to(device)


def draw_indices(count: int, batch: int, seed: int, step: int, rank: int = 0) -> torch.Tensor:
    """``batch`` distinct frame indices in ``[0, count)`` (int64 ``[batch]``), a pure function of ``(seed, step,
    rank)``: a generator of its own is seeded from the three (numpy's ``SeedSequence``, so neighbouring steps
    are unrelated draws), and no global generator is read or moved.

    Raises:
        InputError: ``batch`` outside ``[1, count]`` or a negative ``seed`` / ``step`` / ``rank``.
    """
    if not 1 <= batch <= count:
        raise InputError(f"cannot draw {batch} distinct frames from {count}")
    if min(seed, step, rank) < 0:
        raise InputError(f"seed, step and rank must be >= 0; got {seed}, {step}, {rank}")
    state = np.random.SeedSequence([int(seed), int(step), int(rank)]).generate_state(2, np.uint32)
    generator = torch.Generator().manual_seed(int(state[0]) << 32 | int(state[1]))
    return torch.randperm(count, generator=generator)[:batch]
