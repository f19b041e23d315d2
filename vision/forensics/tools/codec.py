"""Codec tool: what the H.264 bitstream says. PyAV decodes with ``flags2=+export_mvs`` to read the motion
vectors the encoder chose (side data ``MOTION_VECTORS``), the frame types (I / P / B) and the packet sizes.

It needs the encoded file (``Clip.path``); for clips given as decoded frames it is not applicable. Only the
first ``Clip.num_frames`` frames are read, so it describes the same frames as the other tools.
"""

from __future__ import annotations

from typing import Any

import av
import numpy as np

from vision.errors import VideoError
from vision.forensics.tools.base import Clip, ForensicTool

__all__ = ["CodecTool", "motion_vector_sides", "read_codec_trace"]

_PICT_TYPES = {1: "I", 2: "P", 3: "B"}  # FFmpeg AVPictureType values


def motion_vector_sides(frame: Any) -> list[Any]:
    """A decoded frame's motion-vector side data (``to_ndarray()`` gives the vectors). PyAV up to 18.1.0 iterates
    ``frame.side_data`` as side-data objects with a ``type``; later versions make it a mapping from the type."""
    container = frame.side_data
    out = []
    for item in container:
        side = item if hasattr(item, "type") else container[item]
        if "MOTION_VECTORS" in str(getattr(side, "type", item)):
            out.append(side)
    return out


def read_codec_trace(path: str, max_frames: int) -> dict[str, Any]:
    """Decode up to ``max_frames`` frames of ``path``: ``types`` (list of ``I``/``P``/``B``/``?``), ``sizes``
    (packet bytes, decode order), ``mvs`` (per frame an array ``[N, 5]``: dst_x, dst_y, dx, dy, area),
    ``width``, ``height``. Raises :class:`VideoError` naming the file if it cannot be decoded."""
    try:
        container = av.open(str(path))
    except (av.error.FFmpegError, OSError) as exc:
        raise VideoError(f"cannot open video for codec analysis: {exc}", file=path) from exc
    try:
        stream = container.streams.video[0]
        # the deblocking filter changes only pixels, which are not read here: motion vectors, frame types and packet
        # sizes are the same without it, and decoding is faster
        stream.codec_context.options = {"flags2": "+export_mvs", "skip_loop_filter": "all"}
        types: list[str] = []
        sizes: list[int] = []
        mvs: list[np.ndarray] = []
        for packet in container.demux(stream):
            if packet.size:
                sizes.append(int(packet.size))
            for frame in packet.decode():
                if len(types) >= max_frames:
                    break
                kind = frame.pict_type
                kind = _PICT_TYPES.get(int(kind), "?") if isinstance(kind, int) else getattr(kind, "name", "?")
                types.append(kind if kind in ("I", "P", "B") else "?")
                rows = np.zeros((0, 5), np.float64)
                for side in motion_vector_sides(frame):
                    arr = side.to_ndarray()
                    if arr.size:
                        scale = np.maximum(arr["motion_scale"].astype(np.float64), 1.0)
                        rows = np.stack([arr["dst_x"], arr["dst_y"], arr["motion_x"] / scale,
                                         arr["motion_y"] / scale,
                                         arr["w"].astype(np.float64) * arr["h"]], axis=1).astype(np.float64)
                mvs.append(rows)
            if len(types) >= max_frames:
                break
        width, height = int(stream.codec_context.width), int(stream.codec_context.height)
    except (av.error.FFmpegError, OSError) as exc:
        raise VideoError(f"decoding failed during codec analysis: {exc}", file=path) from exc
    finally:
        container.close()
    return {"types": types, "sizes": sizes[: max(len(types), 1)], "mvs": mvs, "width": width, "height": height}


class CodecTool(ForensicTool):
    """Bitstream statistics (see the module docstring)."""

    name = "codec"
    feature_names = ("i_share", "b_share", "bits_per_pixel", "p_size_cv", "i_to_p_size", "mv_coverage",
                     "mv_mag_mean", "mv_mag_std", "mv_roughness")
    descriptions = {
        "i_share": "share of I frames", "b_share": "share of B frames",
        "bits_per_pixel": "mean coded bits per pixel per frame", "p_size_cv": "coefficient of variation of non-I "
        "packet sizes", "i_to_p_size": "mean I-packet size / mean other-packet size",
        "mv_coverage": "share of the frame area covered by non-zero motion vectors",
        "mv_mag_mean": "area-weighted mean motion-vector length (px)", "mv_mag_std": "std of motion-vector length",
        "mv_roughness": "mean |difference| between motion vectors of horizontally adjacent 16 px blocks",
    }
    min_frames = 2

    def check(self, clip: Clip) -> str | None:
        reason = super().check(clip)
        if reason is None and clip.path is None:
            reason = "no encoded bitstream: the clip was given as decoded frames"
        return reason

    def measure(self, clip: Clip) -> tuple[dict[str, float], dict, dict[str, Any]] | str:
        trace = read_codec_trace(str(clip.path), clip.num_frames)
        types, sizes = trace["types"], np.asarray(trace["sizes"], np.float64)
        if len(types) < 2 or sizes.size < 2:
            return f"the bitstream has only {len(types)} decodable frame(s)"
        area = float(trace["width"] * trace["height"])
        is_i = np.array([t == "I" for t in types])
        n = min(len(is_i), sizes.size)
        sizes_n, is_i_n = sizes[:n], is_i[:n]
        other = sizes_n[~is_i_n] if (~is_i_n).any() else sizes_n
        mags, weights, coverage, rough = [], [], [], []
        for rows in trace["mvs"]:
            if rows.shape[0] == 0:
                continue
            mag = np.hypot(rows[:, 2], rows[:, 3])
            mags.append(mag)
            weights.append(rows[:, 4])
            coverage.append(float(rows[mag > 0, 4].sum() / area))
            gx = np.clip(rows[:, 0].astype(np.int64) // 16, 0, trace["width"] // 16 + 1)
            gy = np.clip(rows[:, 1].astype(np.int64) // 16, 0, trace["height"] // 16 + 1)
            grid = np.full((trace["height"] // 16 + 2, trace["width"] // 16 + 2, 2), np.nan)
            grid[gy, gx] = rows[:, 2:4]
            diffs = np.abs(np.diff(grid, axis=1)).sum(axis=2)
            if np.isfinite(diffs).any():
                rough.append(float(np.nanmean(diffs)))
        if mags:
            all_mag, all_w = np.concatenate(mags), np.concatenate(weights)
            mean = float((all_mag * all_w).sum() / all_w.sum())
            std = float(np.sqrt((((all_mag - mean) ** 2) * all_w).sum() / all_w.sum()))
        else:
            mean = std = 0.0
        values = {
            "i_share": float(is_i.mean()), "b_share": float(np.mean([t == "B" for t in types])),
            "bits_per_pixel": float(sizes_n.mean() * 8.0 / area),
            "p_size_cv": float(other.std() / (other.mean() + 1e-9)),
            "i_to_p_size": float(sizes_n[is_i_n].mean() / (other.mean() + 1e-9)) if is_i_n.any() else float("nan"),
            "mv_coverage": float(np.mean(coverage)) if coverage else 0.0,
            "mv_mag_mean": mean, "mv_mag_std": std, "mv_roughness": float(np.mean(rough)) if rough else 0.0,
        }
        frames = list(range(len(types)))
        locations = {k: (frames, None) for k in self.feature_names}
        return values, locations, {"packet_sizes": sizes_n.tolist(), "frame_types": types}
