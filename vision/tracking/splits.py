"""Build a long-occlusion split from a generated video split (dropping and reordering views).

For every video, the pivot track is the track visible in the first frame that is visible in the most frames.
The new frame order is: the first frame; then every frame where the pivot is not visible (a long stretch in
which it is occluded or out of view); then the frames from ``resume_fraction`` of the original video onwards
where the pivot is visible again (the frames in between are dropped, so the camera has moved far while the pivot
was hidden). ``frame_index`` is renumbered 0..n-1; dropped images and their annotations are removed. Videos that
have no frame without the pivot keep only the jump (first frame, then the resumed frames). File names are kept,
so the new split lives beside the source split (same root folder).
"""

from __future__ import annotations

import copy
import math
from collections import defaultdict

from vision.errors import InputError

__all__ = ["long_occlusion_split"]


def long_occlusion_split(gt: dict, resume_fraction: float = 0.5) -> dict:
    """Return a new split dict (see the module docstring); ``gt`` is not modified."""
    if not 0 < resume_fraction < 1:
        raise InputError(f"resume_fraction must be in (0, 1), got {resume_fraction!r}")
    out = copy.deepcopy(gt)
    frames_by_video: dict[int, list[dict]] = defaultdict(list)
    for img in out["images"]:
        if img.get("video_id") is not None:
            frames_by_video[int(img["video_id"])].append(img)
    visible: dict[int, set[int]] = defaultdict(set)  # image id -> visible track ids
    for a in out["annotations"]:
        if a.get("track_id") is not None and a.get("area", 1) > 0:
            visible[int(a["image_id"])].add(int(a["track_id"]))
    keep: set[int] = set()
    for vid, frames in frames_by_video.items():
        frames.sort(key=lambda im: (im.get("frame_index", 0), im["id"]))
        first = frames[0]
        candidates = visible[int(first["id"])]
        if not candidates:
            new = frames
        else:
            pivot = max(sorted(candidates), key=lambda t: sum(t in visible[int(f["id"])] for f in frames))
            hidden = [f for f in frames[1:] if pivot not in visible[int(f["id"])]]
            start = max(1, math.ceil(resume_fraction * len(frames)))
            resumed = [f for f in frames[start:] if pivot in visible[int(f["id"])]]
            new = [first] + hidden + resumed
        for i, f in enumerate(new):
            f["frame_index"] = i
            keep.add(int(f["id"]))
    out["images"] = [im for im in out["images"] if im.get("video_id") is None or int(im["id"]) in keep]
    kept = {int(im["id"]) for im in out["images"]}
    out["annotations"] = [a for a in out["annotations"] if int(a["image_id"]) in kept]
    out.setdefault("info", {})["long_occlusion"] = {"resume_fraction": resume_fraction}
    return out
