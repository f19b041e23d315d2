"""Cached text embeddings of a vocabulary for the detector.

A vocabulary is a non-empty list of distinct, non-empty class names (``str``; the rule and its check are
:mod:`vision.text.vocabulary`'s, imported here for the detector's modules). Each name is written into a prompt
(``template.format(name)``, default ``"a {}"``) and encoded by the text encoder into a unit row of the text space.
Encoders are shared per name (:func:`shared_text_encoder`) and the table of each (encoder, template, vocabulary,
torch thread count) is cached here (the MiniLM encoder also caches per string and thread count), so a vocabulary is
encoded once per process and thread count. The thread count is part of the key because the encoder's CPU matrix
products give other last bits at another count: a table cached earlier at another count would make training differ
from the same run in a fresh process.
"""

from __future__ import annotations

from typing import Any, Sequence

import torch

from vision.errors import InputError
from vision.text import get_text_encoder
from vision.text.vocabulary import check_vocabulary

__all__ = ["DEFAULT_TEMPLATE", "check_vocabulary", "shared_text_encoder", "encode_vocabulary", "competitor_rows",
           "known_competitors"]

DEFAULT_TEMPLATE = "a {}"

_ENCODERS: dict[str, Any] = {}
_TABLES: dict[tuple, tuple[Any, torch.Tensor]] = {}
_MAX_TABLES = 64


def shared_text_encoder(name: str = "minilm") -> Any:
    """One text encoder instance per name for the whole process (loading MiniLM takes seconds)."""
    if name not in _ENCODERS:
        _ENCODERS[name] = get_text_encoder(name)
    return _ENCODERS[name]


def competitor_rows(known: torch.Tensor, vocabulary: torch.Tensor, similarity: float) -> torch.Tensor:
    """The rows of ``known`` (unit text rows ``[C, D]`` of the names a body knows) that no row of ``vocabulary``
    (unit ``[K, D]``, the names given) explains: those whose cosine with every vocabulary row is under
    ``similarity``. An object that one of them fits better than any given name is "unknown" (the OOV column of
    :class:`~vision.detection.model.OpenVocabClassifier`); a known name a given name explains (``man`` for
    ``person``) is left out, so that the synonym answers. Returns ``[C', D]``."""
    if known.numel() == 0 or vocabulary.numel() == 0:
        return known
    explained = (known @ vocabulary.t()).amax(dim=1) >= similarity
    return known[~explained]


def known_competitors(known_names: Sequence[str], vocabulary: torch.Tensor, similarity: float | None,
                      template: str = DEFAULT_TEMPLATE, encoder: Any = None) -> torch.Tensor | None:
    """The text rows of a body's ``known_names`` that no row of ``vocabulary`` (unit ``[K, D]``) explains
    (:func:`competitor_rows`), on ``vocabulary``'s device: what the predictor and the training module's evaluation
    hand the OOV column. None when ``similarity`` is None or the body knows no names."""
    if similarity is None or not known_names:
        return None
    known = encode_vocabulary(list(known_names), template, encoder)
    return competitor_rows(known.to(vocabulary.device), vocabulary, similarity)


def encode_vocabulary(vocabulary: Sequence[str], template: str = DEFAULT_TEMPLATE, encoder: Any = None
                      ) -> torch.Tensor:
    """Unit text rows ``[K, D]`` float32 (CPU) for a checked vocabulary; ``encoder`` defaults to the shared
    MiniLM."""
    names = check_vocabulary(list(vocabulary) if isinstance(vocabulary, tuple) else vocabulary)
    if "{}" not in template:
        raise InputError(f"prompt template must contain '{{}}', got {template!r}")
    encoder = encoder if encoder is not None else shared_text_encoder()
    key = (id(encoder), template, tuple(names), torch.get_num_threads())
    cached = _TABLES.get(key)
    if cached is not None and cached[0] is encoder:
        return cached[1].clone()
    rows = encoder([template.format(n) for n in names])
    table = torch.nn.functional.normalize(rows.detach().float().cpu(), dim=-1)
    if len(_TABLES) >= _MAX_TABLES:
        _TABLES.pop(next(iter(_TABLES)))
    _TABLES[key] = (encoder, table)
    return table.clone()
