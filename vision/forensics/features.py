"""Loading clips for analysis and extracting tool features, with an on-disk cache for training.

A clip for the detector is the first ``max_frames`` frames of a video, resized so that the shorter side is
``size`` (the config's ``image_size``) and centre-cropped to ``size x size`` (the training clips of
``datasets/prepare_aigv.py`` are square).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Sequence

import numpy as np

from vision.data.io import MAX_INPUT_PIXELS, atomic_write_json
from vision.data.video import probe_video, read_video
from vision.errors import InputError
from vision.forensics.tools import ForensicTool, ToolResult, run_tools
from vision.forensics.tools.base import Clip

__all__ = ["load_clip", "frames_to_clip", "clip_features", "split_features"]


def _centre_square(frames: np.ndarray, size: int) -> np.ndarray:
    h, w = frames.shape[1:3]
    y0, x0 = max(0, (h - size) // 2), max(0, (w - size) // 2)
    return np.ascontiguousarray(frames[:, y0:y0 + size, x0:x0 + size])


def load_clip(path: str | Path, size: int | None = 64, max_frames: int = 16,
              max_pixels: int | None = MAX_INPUT_PIXELS) -> Clip:
    """Read a video into a :class:`Clip` (see the module docstring); ``size=None`` keeps the frame size.

    The file is read by :func:`vision.data.video.read_video` under the package's one reading policy: though only
    the first ``max_frames`` frames are decoded, a truncated file is refused, and frames over ``max_pixels`` are
    refused before decoding.

    Raises:
        VideoError: the file is missing, corrupt, truncated, has no decodable frame or frames over ``max_pixels``
            (names the file).
    """
    info = probe_video(path)
    frames = read_video(path, max_frames=max_frames, size=size, max_pixels=max_pixels)
    if size is not None:
        frames = _centre_square(frames, size)
    return Clip(frames=frames, fps=info.fps, path=Path(path), name=Path(path).name)


def frames_to_clip(frames: np.ndarray, size: int | None = 64, max_frames: int = 16, fps: float = 25.0,
                   name: str = "frames") -> Clip:
    """Decoded frames ``uint8 [T, H, W, 3]`` (or float [0, 1]) -> :class:`Clip` under the same size policy."""
    import cv2

    frames = np.asarray(frames)
    if frames.ndim == 3 and frames.shape[-1] == 3:
        frames = frames[None]
    if frames.ndim != 4 or frames.shape[-1] != 3:
        raise InputError(f"frames must be [T, H, W, 3]; got shape {tuple(frames.shape)}")
    if frames.dtype != np.uint8:
        if not np.issubdtype(frames.dtype, np.floating):
            raise InputError(f"frames must be uint8 or float in [0, 1]; got dtype {frames.dtype}")
        frames = (np.clip(frames, 0.0, 1.0) * 255.0).round().astype(np.uint8)
    frames = frames[:max_frames]
    if size is not None:
        h, w = frames.shape[1:3]
        scale = size / min(h, w)
        out = (max(size, int(round(w * scale))), max(size, int(round(h * scale))))
        if out != (w, h):
            interp = cv2.INTER_AREA if scale < 1 else cv2.INTER_LINEAR
            frames = np.stack([cv2.resize(f, out, interpolation=interp) for f in frames])
        frames = _centre_square(frames, size)
    return Clip(frames=frames, fps=fps, path=None, name=name)


def clip_features(clip: Clip, tools: Sequence[ForensicTool],
                  reference: dict | None = None) -> tuple[dict[str, float], dict[str, ToolResult]]:
    """Run ``tools``: (flat feature dict of the applicable tools, per-tool results)."""
    results = run_tools(clip, tools, reference)
    features: dict[str, float] = {}
    for result in results.values():
        features.update(result.features)
    return features, results


def split_features(split_file: str | Path, tools: Sequence[ForensicTool], size: int, max_frames: int,
                   cache_dir: str | Path | None = None) -> tuple[list[dict[str, float]], np.ndarray, list[dict]]:
    """Features of every labelled video of a split (:class:`~vision.data.datasets.LabelledVideoDataset`, in video id
    order): (feature dicts, nan = not measured; labels ``int64 [N]``, 1 = generated, 0 = real, -1 = cgi; the videos
    as ``{video_id, generator, family, source}``).

    With ``cache_dir``, each tool's features are cached in their own JSON file, keyed by the split file's content,
    the tool and its feature names, ``size`` and ``max_frames``; only the tools without a cache are run (each video
    decoded once for all of them), so any subset of cached tools is read without decoding.
    """
    from vision.data.coco import load_split
    from vision.data.datasets import LabelledVideoDataset

    split = load_split(split_file)
    dataset = LabelledVideoDataset(split)
    samples = [dataset[i] for i in range(len(dataset))]
    labels = np.asarray([int(s["label"]) for s in samples], np.int64)
    videos = [{"video_id": int(s["video_id"]), "generator": s["generator"], "family": s["family"],
               "source": split.videos[s["video_id"]].get("source")} for s in samples]
    content = Path(split_file).read_bytes()
    per_tool: dict[str, list[dict[str, float | None]]] = {}
    missing: list[ForensicTool] = []
    for tool in tools:
        path = _cache_path(cache_dir, split_file, content, tool, size, max_frames)
        if path is not None and path.is_file():
            per_tool[tool.name] = json.loads(path.read_text())["features"]
        else:
            missing.append(tool)
    if missing:
        fresh: dict[str, list[dict[str, float | None]]] = {tool.name: [] for tool in missing}
        for sample in samples:
            clip = load_clip(sample["video_path"], size=size, max_frames=max_frames)
            for name, result in run_tools(clip, missing).items():
                fresh[name].append({k: (float(v) if np.isfinite(v) else None) for k, v in result.features.items()})
        for tool in missing:
            path = _cache_path(cache_dir, split_file, content, tool, size, max_frames)
            if path is not None:
                atomic_write_json(path, {"tool": tool.name, "video_ids": [v["video_id"] for v in videos],
                                         "features": fresh[tool.name]})
        per_tool.update(fresh)
    rows: list[dict[str, float]] = [{} for _ in samples]
    for tool in tools:
        for row, features in zip(rows, per_tool[tool.name]):
            row.update({k: (float("nan") if v is None else float(v)) for k, v in features.items()})
    return rows, labels, videos


def _cache_path(cache_dir: str | Path | None, split_file: str | Path, content: bytes, tool: ForensicTool, size: int,
                max_frames: int) -> Path | None:
    if cache_dir is None:
        return None
    key_src = content + json.dumps([tool.name, list(tool.feature_names), size, max_frames]).encode()
    return Path(cache_dir) / f"{Path(split_file).stem}_{tool.name}_{hashlib.sha1(key_src).hexdigest()[:16]}.json"
