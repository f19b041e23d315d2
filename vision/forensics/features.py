"""Loading clips for analysis and extracting tool features, with an on-disk cache for training.

A clip for the detector is the first ``max_frames`` frames of a video, resized so that the shorter side is
``size`` (the config's ``image_size``) and centre-cropped to ``size x size`` (the training clips of
``datasets/prepare_aigv.py`` are square).

Tools that take the geometry backbone (``geometry``, ``planar``) are given it wrapped in :class:`ToolBackbone` (CPU
images in, CPU float32 outputs out, whatever device the backbone sits on); the feature cache of such a tool is keyed
by the backbone's weights too (:func:`backbone_fingerprint`), so features of another backbone are never read.
"""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import os
import weakref
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Sequence

import numpy as np
import torch
from torch import nn

from vision.data.io import MAX_INPUT_PIXELS, atomic_write_json
from vision.data.video import probe_video, read_video
from vision.errors import InputError
from vision.forensics.tools import ForensicTool, ToolResult, run_tools
from vision.forensics.tools.base import Clip

__all__ = ["load_clip", "frames_to_clip", "clip_features", "split_features", "ToolBackbone",
           "backbone_fingerprint", "resolve_workers"]


class ToolBackbone(nn.Module):
    """A frozen geometry backbone as the forensic tools call it.

    ``forward(images)``: ``float [B, S, 3, H, W]`` in [0, 1] on any device (the tools make them on the CPU) -> the
    backbone's output dict (:class:`vision.geometry.model.GeometryBackbone`: ``extrinsics [B, S, 3, 4]``,
    ``intrinsics``, ``depth [B, S, H, W, 1]``, ``depth_conf``, ``world_points``, ``pose_enc`` ...) with every tensor
    detached, float32 (floating ones) and on the CPU, computed without gradients on the backbone's own device and
    dtype. The tools read ``aggregator.img_size`` and ``patch_size`` (the backbone's). The wrapped backbone is
    shared, not copied: weights loaded into it later (a checkpoint restore) are the ones used.
    """

    def __init__(self, backbone: nn.Module) -> None:
        super().__init__()
        self.inner = backbone

    @property
    def aggregator(self) -> nn.Module:
        return self.inner.aggregator

    @property
    def patch_size(self) -> int:
        return int(self.inner.patch_size)

    def train(self, mode: bool = True) -> "ToolBackbone":
        """The backbone stays in eval mode (it is frozen)."""
        return super().train(False)

    @torch.no_grad()
    def forward(self, images: torch.Tensor) -> dict:
        param = next(self.inner.parameters(), None)
        if param is not None:  # the backbone's device and dtype (a bf16-true run converts the weights)
            images = images.to(device=param.device, dtype=param.dtype)
        return _to_cpu(self.inner(images))


def _to_cpu(value: object) -> object:
    if isinstance(value, torch.Tensor):
        value = value.detach()
        return (value.float() if value.is_floating_point() else value).cpu()
    if isinstance(value, dict):
        return {k: _to_cpu(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_to_cpu(v) for v in value)
    return value


#: backbone -> (the state's stamp, its fingerprint); entries go with their module
_FINGERPRINTS: "weakref.WeakKeyDictionary[nn.Module, tuple[tuple, str]]" = weakref.WeakKeyDictionary()


def _stamp(state: dict[str, torch.Tensor]) -> tuple | None:
    """Which storage and version every tensor has (None for inference tensors, which have no version counter)."""
    try:
        return tuple((name, t.data_ptr(), t._version, str(t.device)) for name, t in state.items())
    except RuntimeError:
        return None


def backbone_fingerprint(backbone: nn.Module) -> str:
    """A 16-hex-digit SHA-1 of a module's state (every tensor's name, dtype, shape and bytes, in state-dict order;
    a :class:`ToolBackbone` hashes the backbone it wraps). Recomputed only when a tensor was replaced or changed in
    place since the last call (its storage or version counter differs)."""
    if isinstance(backbone, ToolBackbone):
        backbone = backbone.inner
    state = backbone.state_dict(keep_vars=True)
    stamp = _stamp(state)
    memo = _FINGERPRINTS.get(backbone)
    if stamp is not None and memo is not None and memo[0] == stamp:
        return memo[1]
    digest = hashlib.sha1()
    for name, tensor in state.items():
        tensor = tensor.detach().cpu().contiguous()
        digest.update(json.dumps([name, str(tensor.dtype), list(tensor.shape)]).encode())
        digest.update(tensor.reshape(-1).view(torch.uint8).numpy().tobytes())
    fingerprint = digest.hexdigest()[:16]
    if stamp is not None:
        _FINGERPRINTS[backbone] = (stamp, fingerprint)
    return fingerprint


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
    from vision.data.resize import resize_image

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
            frames = np.stack([resize_image(f, (out[1], out[0])) for f in frames])
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
                   cache_dir: str | Path | None = None,
                   workers: int = 1) -> tuple[list[dict[str, float]], np.ndarray, list[dict]]:
    """Features of every labelled video of a split (:class:`~vision.data.datasets.LabelledVideoDataset`, in video id
    order): (feature dicts, nan = not measured; labels ``int64 [N]``, 1 = generated, 0 = real, -1 = cgi; the videos
    as ``{video_id, generator, family, source, donor, footage}``, None where the split lacks the field).

    With ``cache_dir``, each tool's features are cached in their own JSON file, keyed by the split file's content,
    the tool, its feature names and ``version``, ``size`` and ``max_frames``, and, for a tool holding a geometry
    backbone (``tool.backbone``), the backbone's :func:`backbone_fingerprint`; only the tools without a cache are
    run (each video decoded once for all of them), so any subset of cached tools is read without decoding.

    ``workers`` (:func:`resolve_workers`: 0 = one per CPU core this process may use) processes measure the videos
    of the tools that hold no backbone, several videos at once; the tools with a backbone (which may sit on a GPU)
    measure every video in this process meanwhile. Every tool runs on one torch thread wherever it runs
    (:func:`vision.forensics.tools.one_thread`), so the features do not depend on ``workers`` or on the machine.
    """
    from vision.data.coco import load_split
    from vision.data.datasets import LabelledVideoDataset

    split = load_split(split_file)
    dataset = LabelledVideoDataset(split)
    samples = [dataset[i] for i in range(len(dataset))]
    labels = np.asarray([int(s["label"]) for s in samples], np.int64)
    videos = [{"video_id": int(s["video_id"]), "generator": s["generator"], "family": s["family"],
               **{k: split.videos[s["video_id"]].get(k) for k in ("source", "donor", "footage")}} for s in samples]
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
        fresh = _measure_videos([str(s["video_path"]) for s in samples], missing, size, max_frames,
                                resolve_workers(workers))
        for tool in missing:
            path = _cache_path(cache_dir, split_file, content, tool, size, max_frames)
            if path is not None:
                record = {"tool": tool.name, "video_ids": [v["video_id"] for v in videos],
                          "features": fresh[tool.name]}
                if getattr(tool, "backbone", None) is not None:
                    record["backbone"] = backbone_fingerprint(tool.backbone)
                atomic_write_json(path, record)
        per_tool.update(fresh)
    rows: list[dict[str, float]] = [{} for _ in samples]
    for tool in tools:
        for row, features in zip(rows, per_tool[tool.name]):
            row.update({k: (float("nan") if v is None else float(v)) for k, v in features.items()})
    return rows, labels, videos


def resolve_workers(workers: int) -> int:
    """The processes ``workers`` asks for: itself when >= 1, 0 -> one per CPU core this process may use.

    Raises:
        InputError: ``workers`` is not an integer >= 0.
    """
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 0:
        raise InputError(f"workers must be an integer >= 0 (0: one per CPU core), got {workers!r}")
    if workers:
        return workers
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


FeatureRow = dict[str, float | None]  # one tool's features of one video (None = not measured)

#: the tools, clip size and frames of a measuring process (set once by its initializer)
_WORKER: dict[str, object] = {}


def _rows(results: dict[str, ToolResult]) -> dict[str, FeatureRow]:
    return {name: {k: (float(v) if np.isfinite(v) else None) for k, v in result.features.items()}
            for name, result in results.items()}


def _measure_one(path: str, tools: Sequence[ForensicTool], size: int, max_frames: int) -> dict[str, FeatureRow]:
    return _rows(run_tools(load_clip(path, size=size, max_frames=max_frames), tools))


def _init_worker(tools: list[ForensicTool], size: int, max_frames: int) -> None:
    _WORKER.update(tools=tools, size=size, max_frames=max_frames)


def _measure_in_worker(path: str) -> dict[str, FeatureRow]:
    return _measure_one(path, _WORKER["tools"], _WORKER["size"], _WORKER["max_frames"])  # type: ignore[arg-type]


def _measure_videos(paths: list[str], tools: Sequence[ForensicTool], size: int, max_frames: int,
                    workers: int) -> dict[str, list[FeatureRow]]:
    """``{tool name: [features of each video, in the order of paths]}``; see :func:`split_features` for
    ``workers``. A failing video stops the rest (queued videos are dropped) and raises its error here."""
    pooled = [t for t in tools if getattr(t, "backbone", None) is None] if workers > 1 and len(paths) > 1 else []
    local = [t for t in tools if t not in pooled]
    fresh: dict[str, list[FeatureRow]] = {tool.name: [] for tool in tools}

    def add(rows: dict[str, FeatureRow]) -> None:
        for name, row in rows.items():
            fresh[name].append(row)

    if not pooled:
        for path in paths:
            add(_measure_one(path, local, size, max_frames))
        return fresh
    # fork where the platform has it (no re-import, the networks already loaded are shared); the pooled tools
    # are CPU-only, so a parent that holds a GPU context passes nothing of it on
    method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
    pool = ProcessPoolExecutor(max_workers=min(workers, len(paths)), mp_context=multiprocessing.get_context(method),
                               initializer=_init_worker, initargs=(pooled, size, max_frames))
    try:
        measured = pool.map(_measure_in_worker, paths)
        if local:
            for path in paths:
                add(_measure_one(path, local, size, max_frames))
        for rows in measured:
            add(rows)
    except BaseException:
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    pool.shutdown(wait=True)
    return fresh


def _cache_path(cache_dir: str | Path | None, split_file: str | Path, content: bytes, tool: ForensicTool, size: int,
                max_frames: int) -> Path | None:
    if cache_dir is None:
        return None
    key = [tool.name, list(tool.feature_names), size, max_frames]
    if tool.version != 1:  # a version-1 key carries no version: the key format of a tool without one
        key.append(tool.version)
    if getattr(tool, "backbone", None) is not None:  # features of another backbone are other features
        key.append(backbone_fingerprint(tool.backbone))
    key_src = content + json.dumps(key).encode()
    return Path(cache_dir) / f"{Path(split_file).stem}_{tool.name}_{hashlib.sha1(key_src).hexdigest()[:16]}.json"
