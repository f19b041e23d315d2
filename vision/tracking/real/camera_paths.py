"""Training clips for the real tracker's presence head: a virtual camera moving over a real photograph, with the
object leaving the view and coming back, or hidden by an occluder that slides across it.

:func:`camera_path_clip` renders one clip: a window of the photograph (4:3, a share ``zoom`` of its width, kept
inside the photograph) whose centre follows a path, each window resized to ``size``. Events:

- ``exit``: the window starts with the object inside, pans away (along the direction with the most room) until the
  object is wholly out of view, stays away for a few frames, and pans back;
- ``occlusion``: the window drifts slowly while a patch of another photograph, larger than the object, slides
  across it and hides it wholly for a few frames;
- ``follow``: the window drifts and zooms around the object (the frames a tracker must keep; only the object's own
  move, below, can take it out of view);
- ``walk_out``: the window drifts slowly while the object moves out of it, stays out for a few frames and comes
  back.

In ``follow`` and ``occlusion`` clips the object also moves by itself with probability ``move_share`` (real
objects walk, roll and are carried): its box is cut out of the photograph, the hole filled (OpenCV's Telea
inpainting), and the cut-out pasted along a smooth path of up to ``max_move`` box sides. The light and focus drift
over every clip (gain 0.7-1.3, offset -20 to 20 grey levels, Gaussian blur up to 1.5 px), so that the object's look
changes as it does in real footage; the object may turn (``turn_share``) and have a still twin elsewhere
(``twin_share``), a look-alike the tracker must not take for it. Each frame carries the object's box in the frame (``x, y, w, h`` of its part inside the view) and its visible
share (the part of its box inside the view and not under the occluder).
"""

from __future__ import annotations

import dataclasses

import cv2
import numpy as np

from vision.errors import InputError

__all__ = ["EVENTS", "CameraPathClip", "camera_path_clip"]

EVENTS = ("exit", "occlusion", "follow", "walk_out")


@dataclasses.dataclass
class CameraPathClip:
    """``frames`` uint8 ``[T, h, w, 3]`` RGB; ``boxes`` float64 ``[T, 4]`` (x, y, w, h) of the object's visible
    part of the view (nan where none); ``visible`` float64 ``[T]`` share of the object's box seen; ``event``."""

    frames: np.ndarray
    boxes: np.ndarray
    visible: np.ndarray
    event: str


def _smooth(n: int, a: float, b: float) -> np.ndarray:
    t = np.linspace(0.0, 1.0, n)
    return a + (b - a) * (3 * t ** 2 - 2 * t ** 3)


def camera_path_clip(photo: np.ndarray, box_xyxy: np.ndarray, rng: np.random.Generator, event: str,
                     frames: int = 48, size: tuple[int, int] = (320, 240), occluder: np.ndarray | None = None,
                     move_share: float = 0.5, max_move: float = 1.5, twin_share: float = 0.5,
                     turn_share: float = 0.5) -> CameraPathClip:
    """One clip over ``photo`` (uint8 ``[H, W, 3]`` RGB) with the object ``box_xyxy`` (photo pixels).

    Args:
        rng: the clip's random generator (the window's size and start, the path's timing, the occluder's run).
        event: one of :data:`EVENTS`.
        frames: the clip's length (at least 12).
        size: the frames' ``(width, height)``.
        occluder: uint8 ``[h, w, 3]`` RGB, the patch that slides over the object (``occlusion`` only; None: a
            flipped patch of ``photo`` away from the object).
        move_share: the probability that the object moves by itself in a ``follow`` or ``occlusion`` clip.
        max_move: the longest such move, in box sides.
        twin_share: the probability of a twin: a copy of the object (its colours scaled by 0.85-1.15 per channel)
            left still elsewhere in the photograph, at least 1.5 box sides away: a look-alike that is not it.
        turn_share: the probability that the object turns as the clip runs (its cut-out rotated by up to 25 degrees
            and stretched by up to 20%), so that its look drifts from the prompt's.
    """
    if event not in EVENTS:
        raise InputError(f"event must be one of {EVENTS}, got {event!r}")
    if frames < 12:
        raise InputError(f"frames must be >= 12, got {frames}")
    ph, pw = photo.shape[:2]
    x0, y0, x1, y1 = (float(v) for v in box_xyxy)
    bw, bh = x1 - x0, y1 - y0
    if not (0 <= x0 < x1 <= pw and 0 <= y0 < y1 <= ph):
        raise InputError(f"box {list(box_xyxy)} must lie inside the {pw}x{ph} photo")
    aspect = size[0] / size[1]
    # the window: large enough to hold the object with a margin, small enough to pan inside the photo
    low = max(1.6 * bw, 1.6 * bh * aspect, 0.3 * pw)
    high = min(pw, ph * aspect)
    if low > high:
        raise InputError("the object is too large in this photo for a window to leave it")
    win_w = float(rng.uniform(low, min(high, max(low, 0.75 * pw))))
    win_h = win_w / aspect
    cx, cy = (x0 + x1) / 2, (y0 + y1) / 2

    def clamp(centre: np.ndarray) -> np.ndarray:
        return np.stack([np.clip(centre[..., 0], win_w / 2, pw - win_w / 2),
                         np.clip(centre[..., 1], win_h / 2, ph - win_h / 2)], -1)

    # the start: the object inside the window, off its centre by up to a quarter of the window
    start = clamp(np.array([cx + rng.uniform(-0.25, 0.25) * max(win_w - bw, 0),
                            cy + rng.uniform(-0.25, 0.25) * max(win_h - bh, 0)]))
    path = np.repeat(start[None], frames, 0)
    zoom = np.ones(frames)
    patch_path = None
    if event == "exit":
        # the window centre that puts the object wholly out of view, per direction (within the photo)
        targets = {"left": np.array([x1 + win_w / 2 + 2, start[1]]), "right": np.array([x0 - win_w / 2 - 2, start[1]]),
                   "up": np.array([start[0], y1 + win_h / 2 + 2]), "down": np.array([start[0], y0 - win_h / 2 - 2])}
        room = {k: (clamp(v) == v).all() for k, v in targets.items()}
        options = [k for k, ok in room.items() if ok]
        if not options:
            raise InputError("no direction lets the window leave the object inside this photo")
        away = targets[options[int(rng.integers(len(options)))]]
        t_out = int(rng.integers(frames // 6, frames // 3))
        t_gone = int(rng.integers(4, max(5, frames // 4)))
        t_back = min(frames - 2, t_out + max(6, frames // 6) + t_gone)
        n_out = max(6, frames // 6)
        path[t_out:t_out + n_out] = np.stack([_smooth(n_out, start[0], away[0]), _smooth(n_out, start[1], away[1])], 1)
        path[t_out + n_out:t_back] = away
        n_back = frames - t_back
        path[t_back:] = np.stack([_smooth(n_back, away[0], start[0]), _smooth(n_back, away[1], start[1])], 1)
    else:
        drift = rng.uniform(-0.15, 0.15, 2) * np.array([win_w, win_h])
        path = clamp(np.stack([_smooth(frames, start[0], start[0] + drift[0]),
                               _smooth(frames, start[1], start[1] + drift[1])], 1))
        zoom = _smooth(frames, 1.0, float(np.exp(rng.uniform(np.log(0.6), np.log(1.6)))))
        if event == "occlusion":
            side = 1.3 * max(bw, bh)
            if occluder is None:
                occluder = np.ascontiguousarray(photo[::-1, ::-1])
            ow, oh = int(round(side * float(rng.uniform(1.0, 1.4)))), int(round(side * float(rng.uniform(1.0, 1.4))))
            patch = cv2.resize(occluder, (max(ow, 2), max(oh, 2)), interpolation=cv2.INTER_AREA)
            t_in = int(rng.integers(frames // 6, frames // 3))
            t_cover = int(rng.integers(4, max(5, frames // 4)))
            n_move = max(4, frames // 8)
            direction = 1.0 if rng.random() < 0.5 else -1.0
            far = cx - direction * (bw / 2 + ow / 2 + 4)
            over, beyond = cx, cx + direction * (bw / 2 + ow / 2 + 4)
            px = np.full(frames, far)
            px[t_in:t_in + n_move] = _smooth(n_move, far, over)
            px[t_in + n_move:t_in + n_move + t_cover] = over
            rest = frames - (t_in + n_move + t_cover)
            if rest > 0:
                px[t_in + n_move + t_cover:] = _smooth(rest, over, beyond)
            patch_path = (patch, px, cy)
    # the object's own motion (photo pixels added to its box), and the photograph without it where it moves
    motion = np.zeros((frames, 2))
    if event == "walk_out":
        # out through the window's nearest side (its box wholly outside), back to where it started
        wx0, wy0 = start[0] - win_w / 2, start[1] - win_h / 2
        sides = {"left": np.array([wx0 - x1 - 2, 0.0]), "right": np.array([wx0 + win_w - x0 + 2, 0.0]),
                 "up": np.array([0.0, wy0 - y1 - 2]), "down": np.array([0.0, wy0 + win_h - y0 + 2])}
        side = min(sides, key=lambda k: np.abs(sides[k]).sum())
        away = sides[side]
        t_out = int(rng.integers(frames // 8, frames // 4))
        n_out = max(6, frames // 4)
        t_gone = int(rng.integers(4, max(5, frames // 5)))
        t_back = min(frames - 4, t_out + n_out + t_gone)
        motion[t_out:t_out + n_out] = np.stack([_smooth(n_out, 0, away[0]), _smooth(n_out, 0, away[1])], 1)
        motion[t_out + n_out:t_back] = away
        n_back = frames - t_back
        motion[t_back:] = np.stack([_smooth(n_back, away[0], 0), _smooth(n_back, away[1], 0)], 1)
    elif event != "exit" and rng.random() < move_share:
        target = rng.uniform(-1, 1, 2) * max_move * np.array([bw, bh])
        motion = np.stack([_smooth(frames, 0, target[0]), _smooth(frames, 0, target[1])], 1)
    turn = np.zeros(frames)
    stretch = np.ones(frames)
    if rng.random() < turn_share:
        turn = _smooth(frames, 0.0, float(rng.uniform(-25, 25)))
        stretch = _smooth(frames, 1.0, float(rng.uniform(0.8, 1.2)))
    twin = None
    if rng.random() < twin_share:
        for _ in range(20):
            tx, ty = rng.uniform(0, pw - bw), rng.uniform(0, ph - bh)
            if np.hypot(tx - x0, ty - y0) >= 1.5 * max(bw, bh):
                twin = (int(tx), int(ty))
                break
    base = photo
    sprite = None
    if np.abs(motion).max() > 0 or np.abs(turn).max() > 0 or twin is not None:
        hole = np.zeros(photo.shape[:2], np.uint8)
        hole[int(y0):int(np.ceil(y1)), int(x0):int(np.ceil(x1))] = 255
        base = cv2.inpaint(np.ascontiguousarray(photo), hole, 5, cv2.INPAINT_TELEA)
        sprite = photo[int(y0):int(np.ceil(y1)), int(x0):int(np.ceil(x1))]
        if twin is not None:
            tint = rng.uniform(0.85, 1.15, 3)
            copy = np.clip(sprite.astype(np.float32) * tint, 0, 255).astype(np.uint8)
            h_, w_ = copy.shape[:2]
            h_, w_ = min(h_, ph - twin[1]), min(w_, pw - twin[0])
            base[twin[1]:twin[1] + h_, twin[0]:twin[0] + w_] = copy[:h_, :w_]
    gain = _smooth(frames, 1.0, float(rng.uniform(0.7, 1.3)))
    offset = _smooth(frames, 0.0, float(rng.uniform(-20, 20)))
    blur = _smooth(frames, float(rng.uniform(0, 1.5)), float(rng.uniform(0, 1.5)))
    out = np.empty((frames, size[1], size[0], 3), np.uint8)
    boxes = np.full((frames, 4), np.nan)
    visible = np.zeros(frames)
    for t in range(frames):
        canvas = base
        ox, oy = motion[t]
        if sprite is not None:
            canvas = base.copy()
            look, cover = sprite, None
            if turn[t] != 0 or stretch[t] != 1:
                sh, sw = sprite.shape[:2]
                affine = cv2.getRotationMatrix2D((sw / 2, sh / 2), float(turn[t]), 1.0)
                affine[0, :] *= stretch[t]
                affine[0, 2] += sw / 2 * (1 - stretch[t])
                look = cv2.warpAffine(sprite, affine, (sw, sh), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_REFLECT)
                cover = cv2.warpAffine(np.ones((sh, sw), np.uint8), affine, (sw, sh), flags=cv2.INTER_NEAREST) > 0
            sx0, sy0 = int(x0) + int(round(ox)), int(y0) + int(round(oy))
            cx0, cy0 = max(sx0, 0), max(sy0, 0)
            cx1, cy1 = min(sx0 + sprite.shape[1], pw), min(sy0 + sprite.shape[0], ph)
            if cx1 > cx0 and cy1 > cy0:
                part = look[cy0 - sy0:cy1 - sy0, cx0 - sx0:cx1 - sx0]
                if cover is None:
                    canvas[cy0:cy1, cx0:cx1] = part
                else:
                    keep = cover[cy0 - sy0:cy1 - sy0, cx0 - sx0:cx1 - sx0]
                    canvas[cy0:cy1, cx0:cx1][keep] = part[keep]
        if patch_path is not None:
            patch, px, py = patch_path
            canvas = canvas.copy() if sprite is None else canvas
            oh, ow = patch.shape[:2]
            ox0, oy0 = int(round(px[t] + ox - ow / 2)), int(round(py + oy - oh / 2))  # it follows the object
            sx0, sy0 = max(ox0, 0), max(oy0, 0)
            sx1, sy1 = min(ox0 + ow, pw), min(oy0 + oh, ph)
            if sx1 > sx0 and sy1 > sy0:
                canvas[sy0:sy1, sx0:sx1] = patch[sy0 - oy0:sy1 - oy0, sx0 - ox0:sx1 - ox0]
        ww, wh = win_w * zoom[t], win_h * zoom[t]
        wx0, wy0 = path[t, 0] - ww / 2, path[t, 1] - wh / 2
        s = size[0] / ww
        affine = np.array([[s, 0, -wx0 * s], [0, s, -wy0 * s]])
        view = cv2.warpAffine(canvas, affine, size, flags=cv2.INTER_AREA, borderMode=cv2.BORDER_REFLECT_101)
        if blur[t] > 0.3:
            view = cv2.GaussianBlur(view, (0, 0), float(blur[t]))
        out[t] = np.clip(view.astype(np.float32) * gain[t] + offset[t], 0, 255).astype(np.uint8)
        # the object's box in the view (the part inside the photograph), and the share of it seen
        vx0, vy0 = max(x0 + ox, wx0, 0.0), max(y0 + oy, wy0, 0.0)
        vx1, vy1 = min(x1 + ox, wx0 + ww, pw), min(y1 + oy, wy0 + wh, ph)
        inside = max(vx1 - vx0, 0) * max(vy1 - vy0, 0)
        hidden = 0.0
        if patch_path is not None and inside > 0:
            oh, ow = patch_path[0].shape[:2]
            ox0, oy0 = patch_path[1][t] + ox - ow / 2, patch_path[2] + oy - oh / 2
            hx = max(min(vx1, ox0 + ow) - max(vx0, ox0), 0)
            hy = max(min(vy1, oy0 + oh) - max(vy0, oy0), 0)
            hidden = hx * hy
        visible[t] = (inside - hidden) / (bw * bh)
        if inside > 0:
            boxes[t] = [(vx0 - wx0) * s, (vy0 - wy0) * s, (vx1 - vx0) * s, (vy1 - vy0) * s]
    return CameraPathClip(out, boxes, visible, event)
