"""Screen captures rendered here: computer-made video that is neither camera footage nor AI-generated, a negative
the forensic corpora need beside animated films (:mod:`vision.prepare.aigv_public`).

``screen_capture(kind, frames, side, seed)`` draws ``frames`` frames ``[T, side, side, 3]`` (uint8 RGB) of one of
:data:`KINDS`, with Pillow's scalable default font:

- ``document``: a page of text in a window, scrolling up a few pixels a frame, with a mouse pointer drifting over it;
- ``terminal``: a dark console where a line of text is typed, a few characters a frame, and the screen scrolls;
- ``chart``: a slide whose bar chart grows frame by frame under its title.

The words come from a fixed vocabulary dealt by ``seed``; the same arguments always give the same frames.
"""

from __future__ import annotations

import numpy as np

from vision.errors import InputError

__all__ = ["KINDS", "screen_capture"]

KINDS = ("document", "terminal", "chart")
_WORDS = ("the", "video", "frame", "camera", "report", "table", "model", "result", "value", "error", "train",
          "split", "metric", "score", "image", "batch", "source", "label", "output", "file", "window", "screen",
          "scene", "detail", "motion", "budget", "figure", "review", "order", "update")


def _sentence(rng: np.random.Generator, words: int) -> str:
    return " ".join(_WORDS[i] for i in rng.integers(0, len(_WORDS), words))


def _pointer(draw, x: float, y: float, scale: float) -> None:
    tip = [(x, y), (x, y + 18 * scale), (x + 5 * scale, y + 13 * scale), (x + 12 * scale, y + 12 * scale)]
    draw.polygon(tip, fill=(255, 255, 255), outline=(0, 0, 0))


def screen_capture(kind: str, frames: int, side: int, seed: int = 0) -> np.ndarray:
    """``frames`` frames ``uint8 [frames, side, side, 3]`` of the screen capture ``kind`` (see the module docstring).

    Raises:
        InputError: an unknown ``kind``, ``frames < 1`` or ``side < 64``.
    """
    from PIL import Image, ImageDraw, ImageFont

    if kind not in KINDS:
        raise InputError(f"screen capture kind must be one of {KINDS}, got {kind!r}")
    if frames < 1 or side < 64:
        raise InputError(f"a screen capture needs frames >= 1 and side >= 64, got {frames} and {side}")
    rng = np.random.default_rng(seed)
    scale = side / 512
    font = ImageFont.load_default(size=max(8, round(18 * scale)))
    line = round(26 * scale)
    out = np.empty((frames, side, side, 3), np.uint8)
    if kind == "document":
        text = [_sentence(rng, int(rng.integers(4, 8))) for _ in range(60)]
        start = rng.uniform(0.2, 0.8, 2) * side
        drift = rng.uniform(-2.0, 2.0, 2) * scale
        for t in range(frames):
            image = Image.new("RGB", (side, side), (250, 250, 247))
            draw = ImageDraw.Draw(image)
            offset = round(3 * scale * t)
            for k, sentence in enumerate(text):
                y = round(48 * scale) + k * line - offset
                if 30 * scale < y < side:
                    draw.text((round(24 * scale), y), sentence, fill=(30, 30, 30), font=font)
            draw.rectangle((0, 0, side, round(30 * scale)), fill=(222, 225, 230))  # the window's title bar
            draw.text((round(12 * scale), round(6 * scale)), "report.txt", fill=(20, 20, 20), font=font)
            _pointer(draw, *(start + drift * t), scale)
            out[t] = np.asarray(image)
    elif kind == "terminal":
        history = [("$ " + _sentence(rng, int(rng.integers(2, 6)))) for _ in range(40)]
        typed = "$ " + _sentence(rng, 8)
        rows = (side - round(16 * scale)) // line
        for t in range(frames):
            image = Image.new("RGB", (side, side), (18, 20, 24))
            draw = ImageDraw.Draw(image)
            shown = history[: 10 + t // 4] + [typed[: 2 + 3 * t]]
            for k, text in enumerate(shown[-rows:]):
                draw.text((round(10 * scale), round(8 * scale) + k * line), text, fill=(190, 230, 190), font=font)
            out[t] = np.asarray(image)
    else:
        title = _sentence(rng, 3).title()
        heights = rng.uniform(0.2, 1.0, 6)
        colours = rng.integers(40, 220, (6, 3))
        for t in range(frames):
            image = Image.new("RGB", (side, side), (255, 255, 255))
            draw = ImageDraw.Draw(image)
            draw.text((round(30 * scale), round(24 * scale)), title, fill=(10, 10, 60), font=font)
            base, top = side - round(60 * scale), round(90 * scale)
            draw.line((round(40 * scale), base, side - round(30 * scale), base), fill=(0, 0, 0), width=2)
            grown = (t + 1) / frames
            width = (side - round(90 * scale)) / len(heights)
            for k, (h, colour) in enumerate(zip(heights, colours)):
                x0 = round(50 * scale + k * width)
                y0 = round(base - (base - top) * h * grown)
                draw.rectangle((x0, y0, x0 + round(width * 0.7), base - 1), fill=tuple(int(c) for c in colour))
                draw.text((x0, base + round(8 * scale)), _WORDS[k], fill=(40, 40, 40), font=font)
            out[t] = np.asarray(image)
    return out
