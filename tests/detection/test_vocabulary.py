import pytest
import torch

from vision.detection.vocabulary import encode_vocabulary, shared_text_encoder
from vision.errors import InputError
from vision.text import TEXT_DIM


def test_minilm_table_is_unit_and_cached():
    encoder = shared_text_encoder()
    assert shared_text_encoder() is encoder
    table = encode_vocabulary(["cube", "snowman"], encoder=encoder)
    assert table.shape == (2, TEXT_DIM) and table.dtype == torch.float32
    assert torch.allclose(table.norm(dim=-1), torch.ones(2), atol=1e-5)
    before = encoder.num_encoded
    again = encode_vocabulary(["cube", "snowman"], encoder=encoder)
    assert encoder.num_encoded == before and torch.equal(again, table)
    with pytest.raises(InputError, match="template"):
        encode_vocabulary(["cube"], template="a cube", encoder=encoder)
