"""Decoding of COCO compressed RLE ``counts`` strings.

The format (pycocotools' ``rleFrString``): a mask is a list of run lengths, alternately of 0s and 1s in column-major
order, starting with 0s. Each run is written as a LEB128-like little-endian chunk of characters ``c``, value
``ord(c) - 48`` (the alphabet ``'0'..'o'``), each holding 5 bits of payload (``& 0x1f``) and a continuation bit
(``& 0x20``); the last character's bit ``0x10`` is the sign (two's complement over the run's ``5 * length`` bits).
From the fourth run on (index 3), the decoded value is a difference to the run two places earlier.

:func:`rle_counts_from_string` is the pure-Python reference decoder: it decides whether a string is well formed and
words why not. :func:`rle_counts_batch` and :func:`rle_runs_summary` decode many strings at once with NumPy; they
only vouch for what they decode exactly and leave every other string to the reference decoder.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "MAX_IMAGE_PIXELS",
    "MAX_RLE_RUN_CHARS",
    "FAST_RLE_RUN_CHARS",
    "FAST_RLE_STRING_CHARS",
    "rle_counts_from_string",
    "rle_counts_batch",
    "rle_runs_summary",
]

#: Largest image a split may declare, in pixels in all (see :mod:`vision.data.schema`, which re-exports it): masks
#: are decoded at full size, so a malformed width or height must be refused rather than exhaust memory later.
MAX_IMAGE_PIXELS = 1 << 28
#: pycocotools reads each run length into a 64-bit integer, 5 bits per character: longer runs are malformed (and
#: decoding them here would build ever larger Python integers).
MAX_RLE_RUN_CHARS = 13


def rle_counts_from_string(counts: str) -> list[int]:
    """Decode the compressed COCO RLE ``counts`` string (pycocotools' LEB128-like format) into run lengths.

    Pure Python, so a malformed string is detected before pycocotools' C decoder could read out of bounds.
    Raises ``ValueError`` on characters outside the alphabet, a truncated value or a run length of more than
    :data:`MAX_RLE_RUN_CHARS` characters.
    """
    runs: list[int] = []
    pos = 0
    n = len(counts)
    while pos < n:
        value = 0
        shift = 0
        more = True
        while more:
            if pos >= n:
                raise ValueError("truncated run length")
            if shift >= 5 * MAX_RLE_RUN_CHARS:
                raise ValueError(f"a run length of more than {MAX_RLE_RUN_CHARS} characters")
            code = ord(counts[pos]) - 48
            if code < 0 or code > 63:
                raise ValueError(f"character {counts[pos]!r} is not in the RLE alphabet")
            value |= (code & 0x1F) << shift
            more = bool(code & 0x20)
            pos += 1
            shift += 5
            if not more and (code & 0x10):
                value |= -1 << shift
        if len(runs) > 2:
            value += runs[-2]
        runs.append(value)
    return runs


#: The batch decoder (:func:`rle_counts_batch`) decodes runs of at most this many characters: 30 bits, values in
#: ``-2**29 .. 2**29 - 1``, enough for any difference of two runs of a mask within :data:`MAX_IMAGE_PIXELS` (2**28);
#: longer ones are left to :func:`rle_counts_from_string`.
FAST_RLE_RUN_CHARS = 6
#: ... and strings of at most this many characters.
FAST_RLE_STRING_CHARS = 1 << 26

# By character code 0..255 (``ord(c) - 48``; codes past 63 are outside the alphabet and mark their string):
#: the payload bits of a character, and the signed value of a run's last character (bit 0x10 is the sign).
_RLE_PAYLOAD = np.array([c & 0x1F for c in range(256)], np.int32)
_RLE_LAST_VALUE = np.array([(c & 0x1F) - ((c & 0x10) << 1) for c in range(256)], np.int32)


def rle_counts_batch(strings: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Decode many compressed RLE ``counts`` strings at once with NumPy, as :func:`rle_counts_from_string` would.

    Returns ``(runs, offsets, decoded)``: ``runs`` (int32) holds the run lengths of all strings one after the other,
    those of ``strings[i]`` being ``runs[offsets[i]:offsets[i + 1]]``; ``decoded[i]`` is False where this function
    did not decode ``strings[i]`` (its runs are then meaningless): a character outside the alphabet ``'0'..'o'``
    (or not ASCII), a truncated last run, a run spelled with more than :data:`FAST_RLE_RUN_CHARS` characters or a
    string of more than :data:`FAST_RLE_STRING_CHARS` characters. Such a string may still be valid (e.g. a run
    spelled with 7..13 characters), so the caller must hand it to :func:`rle_counts_from_string` for the verdict and
    the message.

    Exactness: the runs are computed modulo 2**32. Where all of a decoded string's runs are in
    ``0..MAX_IMAGE_PIXELS``, they are exactly the pure-Python decoder's; where one is not, the first such run (in
    the order each run is derived from the one two places earlier) is exact, so it shows outside that range too:
    every value is below 2**29 in magnitude, so it lies within int32 when the run it is added to was in range.

    Conventions (pycocotools' ``rleFrString``): each run is a little-endian sequence of characters ``c``, value
    ``ord(c) - 48`` holding 5 bits of payload (``& 0x1f``) and a continuation bit (``& 0x20``); the last character's
    bit ``0x10`` is the sign (two's complement over the run's ``5 * length`` bits). From the fourth run on (index
    3), the decoded value is a difference to the run two places earlier.
    """
    n = len(strings)
    lengths = np.fromiter(map(len, strings), np.int64, n)
    ends = np.cumsum(lengths)
    decoded = lengths <= FAST_RLE_STRING_CHARS
    if not n or ends[-1] == 0:
        return np.zeros(0, np.int32), np.zeros(n + 1, np.int64), decoded
    joined = "".join(strings)
    if joined.isascii():
        code = np.frombuffer(joined.encode("ascii"), np.uint8) - np.uint8(48)  # below '0' wraps past 63
    else:  # code points: anything outside '0'..'o' becomes 255
        points = np.frombuffer(joined.encode("utf-32-le", "surrogatepass"), np.uint32) - np.uint32(48)
        code = np.where(points > 63, 255, points).astype(np.uint8)
    del joined
    if code.max() > 63:
        decoded[np.searchsorted(ends, np.flatnonzero(code > 63), side="right")] = False
    is_end = (code & 0x20) == 0  # a run's last character has no continuation bit
    nonempty = np.flatnonzero(lengths)
    last = ends[nonempty] - 1
    decoded[nonempty[~is_end[last]]] = False  # truncated: the last run continues past the end
    is_end[last] = True  # so that a malformed string's runs never reach into the next string
    run_end = np.flatnonzero(is_end)  # index of every run's last character
    offsets = np.zeros(n + 1, np.int64)
    offsets[1:] = np.searchsorted(run_end, ends, side="left")
    # one character per run (most of them): the signed 5-bit value of that character
    value = _RLE_LAST_VALUE.take(code.take(run_end))
    # several characters: the last, signed, holds the top 5 bits, those before it the lower ones, lowest first (a
    # string's end is a run's end, so the characters of a run are those after the previous run's end)
    chars = np.diff(run_end, prepend=-1)
    multi = np.flatnonzero(chars > 1)
    if multi.size:
        chars = chars[multi]
        long_runs = chars > FAST_RLE_RUN_CHARS
        if long_runs.any():
            decoded[np.searchsorted(offsets[1:], multi[long_runs], side="right")] = False
            chars = np.minimum(chars, FAST_RLE_RUN_CHARS)  # garbage for those strings, but bounded
        first = run_end[multi] - chars + 1
        low = np.zeros(multi.size, np.int32)
        for k in range(int(chars.max()) - 1):
            has = np.flatnonzero(chars - 1 > k)
            low[has] |= _RLE_PAYLOAD[code[first[has] + k]] << (5 * k)
        value[multi] = (value[multi] << (5 * (chars - 1)).astype(np.int32)) + low
    # runs 1, 3, 5, ... and runs 2, 4, 6, ... of a string are running sums of its values (run 0 is in neither):
    # running sums over the whole batch, one per parity of the position, less each string's sum before its start
    # (int32 sums wrap; see "Exactness" above)
    starts = offsets[:-1][nonempty]
    first_values = value[starts]
    value[starts] = 0
    # the runs at even and at odd positions of the batch, each summed contiguously (faster than in place, strided),
    # after a leading 0: ``sum_even[j]`` (``sum_odd[j]``) sums the values at even (odd) positions before 2j (2j + 1)
    sum_even = np.zeros(run_end.size - run_end.size // 2 + 1, np.int32)
    sum_odd = np.zeros(run_end.size // 2 + 1, np.int32)
    even, odd = sum_even[1:], sum_odd[1:]
    even[:], odd[:] = value[0::2], value[1::2]
    np.cumsum(even, dtype=np.int32, out=even)
    np.cumsum(odd, dtype=np.int32, out=odd)
    # string i's runs at even (odd) positions are the block of ``even`` (``odd``) from ceil(offsets[i] / 2) (floor)
    # on, and the values before the string sum to ``sum_even`` (``sum_odd``) at that same index (value[start] = 0)
    even -= np.repeat(sum_even[(offsets[:-1] + 1) // 2], np.diff((offsets + 1) // 2))
    odd -= np.repeat(sum_odd[offsets[:-1] // 2], np.diff(offsets // 2))
    runs = np.empty_like(value)
    runs[0::2] = even
    runs[1::2] = odd
    runs[starts] = first_values
    return runs, offsets, decoded


def rle_runs_summary(strings: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """``(plausible, sums)`` for compressed RLE ``counts`` strings: ``plausible[i]`` is True when
    :func:`rle_counts_batch` decoded ``strings[i]`` and its runs are all in ``0..MAX_IMAGE_PIXELS``; ``sums[i]`` is
    then the exact sum of its runs (0 for an empty string). Where ``plausible[i]`` is False, or the sum is not
    the mask's ``height * width``, the string needs :func:`check_rle`'s pure-Python verdict."""
    runs, offsets, decoded = rle_counts_batch(strings)
    sums = np.zeros(len(strings), np.int64)
    plausible = decoded.copy()
    if runs.size:
        # negative runs become huge as unsigned: one comparison finds both ends of the range
        out_of_range = np.flatnonzero(runs.view(np.uint32) > MAX_IMAGE_PIXELS)
        plausible[np.searchsorted(offsets[1:], out_of_range, side="right")] = False
        has_runs = np.flatnonzero(offsets[1:] > offsets[:-1])
        # every run of a plausible string is in 0..2**28 and it has < 2**26 runs: its sum is exact in an int64
        sums[has_runs] = np.add.reduceat(runs, offsets[has_runs], dtype=np.int64)
    return plausible, sums
