"""Colour words of a text prompt, used to choose among several objects of the class the text names ("the player in
a blue shirt" among the players YOLOX-nano finds).

:func:`colour_words` finds the colour names of :data:`COLOURS` in the part of a text that describes its object
(whole words; "dark" counts as black, "gray" as grey; not in parentheses or relative clauses, which describe others). :func:`colour_share` measures how much of a box shows those colours: the share of the pixels of
the box's central part (``inner`` of each side, away from the background at its border) whose HSV value falls in
any named colour's range (OpenCV's HSV: hue 0-180, saturation and value 0-255). The ranges are the usual
hue sectors for the chromatic colours (saturation and value at least 70 and 50: a colour, not a shade of grey) and
bands of value and saturation for black, grey and white.
"""

from __future__ import annotations

import re

import cv2
import numpy as np

__all__ = ["COLOURS", "SYNONYMS", "CLAUSES", "colour_words", "colour_share"]

#: colour name -> ((hue low, hue high) or None, (saturation low, high), (value low, high)); a hue range may wrap
#: (low > high: red)
COLOURS: dict[str, tuple[tuple[int, int] | None, tuple[int, int], tuple[int, int]]] = {
    "red": ((170, 8), (70, 255), (50, 255)),
    "orange": ((8, 20), (70, 255), (50, 255)),
    "yellow": ((20, 35), (70, 255), (50, 255)),
    "green": ((35, 85), (70, 255), (50, 255)),
    "blue": ((85, 130), (70, 255), (50, 255)),
    "purple": ((130, 155), (70, 255), (50, 255)),
    "pink": ((155, 170), (50, 255), (80, 255)),
    "brown": ((5, 20), (70, 255), (30, 150)),
    "black": (None, (0, 255), (0, 60)),
    "grey": (None, (0, 50), (60, 190)),
    "white": (None, (0, 50), (170, 255)),
}
#: other words for a colour
SYNONYMS = {"dark": "black", "gray": "grey", "violet": "purple", "golden": "yellow"}


#: words that start a clause about something else ("the man in blue who greets the woman in red")
CLAUSES = ("who", "which", "that", "while", "whom", "whose")


def colour_words(text: str) -> list[str]:
    """The colours ``text`` names for its object, in order, each once (``[]`` for none): those before its first
    ``(`` or ``;`` and before a relative clause (:data:`CLAUSES`), which describe other things."""
    found = []
    own = re.split(r"[(;]", text.lower(), maxsplit=1)[0]
    words = re.findall(r"[a-z]+", own)
    cut = next((i for i, word in enumerate(words) if word in CLAUSES), len(words))
    for word in words[:cut]:
        colour = SYNONYMS.get(word, word)
        if colour in COLOURS and colour not in found:
            found.append(colour)
    return found


def colour_share(frame: np.ndarray, box: np.ndarray, colours: list[str], inner: float = 0.6) -> float:
    """The share (0-1) of the central ``inner`` part of ``box`` ``(x, y, w, h)`` in ``frame`` (uint8 ``[H, W, 3]``
    RGB) whose pixels are any of ``colours``; 0 for a box outside the frame."""
    x, y, w, h = (float(v) for v in box)
    cx, cy = x + w / 2, y + h / 2
    x0, x1 = int(max(cx - w * inner / 2, 0)), int(min(cx + w * inner / 2, frame.shape[1]))
    y0, y1 = int(max(cy - h * inner / 2, 0)), int(min(cy + h * inner / 2, frame.shape[0]))
    if x1 <= x0 or y1 <= y0 or not colours:
        return 0.0
    hsv = cv2.cvtColor(np.ascontiguousarray(frame[y0:y1, x0:x1]), cv2.COLOR_RGB2HSV).reshape(-1, 3).astype(int)
    hue, sat, val = hsv[:, 0], hsv[:, 1], hsv[:, 2]
    hit = np.zeros(len(hsv), bool)
    for name in colours:
        hues, sats, vals = COLOURS[name]
        inside = (sat >= sats[0]) & (sat <= sats[1]) & (val >= vals[0]) & (val <= vals[1])
        if hues is not None:
            low, high = hues
            inside &= ((hue >= low) | (hue < high)) if low > high else ((hue >= low) & (hue < high))
        hit |= inside
    return float(hit.mean())
