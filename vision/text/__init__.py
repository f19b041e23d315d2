"""Text encoders: the :class:`TextEncoder` protocol and the packaged, offline MiniLM default."""

from vision.text.encoder import (TEXT_DIM, TEXT_ENCODERS, MiniLMTextEncoder, TextEncoder, check_texts, get_text_encoder,
                                 minilm_model_dir)

__all__ = ["TEXT_DIM", "TextEncoder", "MiniLMTextEncoder", "TEXT_ENCODERS", "get_text_encoder", "minilm_model_dir", "check_texts"]
