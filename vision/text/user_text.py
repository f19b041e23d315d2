"""The one check of a text a user gives: a phrase, a class name, a text prompt, a vocabulary, a demo field.

A text is accepted when it

* is a ``str`` of valid Unicode: no lone surrogate code point, which is what Python makes of a command-line byte
  that is not UTF-8 (``$(printf 'caf\\xe9')`` arrives as ``'caf\\udce9'``) and what no tokenizer can encode;
* holds no control character but whitespace (an escape sequence or a NUL is not part of a name);
* is at most ``max_length`` characters long (:data:`MAX_TEXT_LENGTH` for one phrase, name or prompt,
  :data:`MAX_FIELD_LENGTH` for a field that lists several, e.g. a vocabulary);
* shows something: once format characters (zero-width spaces and joiners, the byte-order mark), separators,
  whitespace, lone combining marks, unassigned and private-use code points and the Hangul and Braille fillers are
  set aside, one character is left (a field of several texts checks this per text, after splitting).

Every refusal is one :class:`~vision.errors.InputError` line that names the field (``--concept``, ``--text``,
``texts[2]``, ``the vocabulary``) and where the text goes wrong, with the text shown escaped. Plain Python: the
command lines check their flags before any model loads.
"""

from __future__ import annotations

import unicodedata
from typing import Any

from vision.errors import InputError

__all__ = ["MAX_TEXT_LENGTH", "MAX_FIELD_LENGTH", "check_text", "check_text_field"]

#: the most characters of one phrase, class name or text prompt (the text encoder reads far fewer word pieces)
MAX_TEXT_LENGTH = 1_000

#: the most characters of a field that lists texts: a vocabulary (LVIS's 1,203 names fit), prompt lines
MAX_FIELD_LENGTH = 100_000

#: the general categories that show nothing on their own: controls, format characters, surrogates, private use,
#: unassigned, separators, non-spacing and enclosing marks
_UNSEEN = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zs", "Zl", "Zp", "Mn", "Me"})

#: letters and symbols drawn as blanks (Hangul fillers, the Braille blank)
_FILLERS = frozenset("\u115f\u1160\u3164\uffa0\u2800")

#: how much of a refused text an error line shows
_SHOWN = 60


def _shown(text: str) -> str:
    """``text`` escaped for an error line (``repr``: invisible and undecodable characters as escapes), cut short."""
    return repr(text if len(text) <= _SHOWN else text[:_SHOWN] + "...")


def check_text_field(text: Any, field: str, max_length: int = MAX_FIELD_LENGTH) -> str:
    """Check ``text`` (a field that may hold several texts and line breaks) by every rule of the module but the
    visible one, and return it unchanged.

    Raises:
        InputError: not a ``str``, longer than ``max_length``, a byte that is not UTF-8 (a lone surrogate), or a
            control character other than whitespace; the message names ``field`` and the character's position.
    """
    if not isinstance(text, str):
        raise InputError(f"{field} must be a text, got {type(text).__name__} {repr(text)[:_SHOWN]}")
    if len(text) > max_length:
        raise InputError(f"{field} is {len(text)} characters long; at most {max_length} are read")
    for index, char in enumerate(text, 1):
        code = ord(char)
        if 0xDC80 <= code <= 0xDCFF:  # Python's stand-in for an undecodable byte
            raise InputError(f"{field} {_shown(text)} is not valid UTF-8 text: byte 0x{code - 0xDC00:02X} at "
                             f"character {index}")
        if 0xD800 <= code <= 0xDFFF:
            raise InputError(f"{field} {_shown(text)} is not valid Unicode: a lone surrogate U+{code:04X} at "
                             f"character {index}")
        if unicodedata.category(char) == "Cc" and not char.isspace():
            raise InputError(f"{field} {_shown(text)} holds the control character U+{code:04X} at character "
                             f"{index}")
    return text


def check_text(text: Any, field: str, max_length: int = MAX_TEXT_LENGTH) -> str:
    """``text`` (one phrase, class name or text prompt) checked by every rule of the module, its runs of
    whitespace as one space and its ends stripped: ``"  red\\tmug "`` -> ``"red mug"``.

    Raises:
        InputError: a rule of :func:`check_text_field`, or nothing visible (empty, spaces, zero-width characters).
    """
    check_text_field(text, field, max_length)
    if not any(unicodedata.category(char) not in _UNSEEN and char not in _FILLERS for char in text):
        what = "empty" if not text else "nothing visible (only spaces, format or zero-width characters)"
        raise InputError(f"{field} {_shown(text)} is {what}: give a word")
    return " ".join(text.split())
