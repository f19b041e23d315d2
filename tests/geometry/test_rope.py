"""2D rotary position embedding: the rotation's properties and the shared-table path."""

import pytest
import torch

from vision.geometry.rope import RotaryEmbedding2D, token_positions


def test_rotation_keeps_norms_and_scores_depend_on_the_offset_only():
    rope = RotaryEmbedding2D(100.0)
    g = torch.Generator().manual_seed(0)
    q, k = torch.randn(1, 2, 1, 16, generator=g), torch.randn(1, 2, 1, 16, generator=g)

    def score(pq, pk):
        return (rope(q, torch.tensor([[pq]])) * rope(k, torch.tensor([[pk]]))).sum(-1)

    torch.testing.assert_close(rope(q, torch.tensor([[[3, 5]]])).norm(dim=-1), q.norm(dim=-1))
    torch.testing.assert_close(score([2, 7], [4, 1]), score([12, 9], [14, 3]))  # same (y, x) offset
    assert not torch.allclose(score([2, 7], [4, 1]), score([2, 7], [4, 2]))


def test_positions_shared_by_every_frame_give_the_materialised_result():
    rope = RotaryEmbedding2D(100.0)
    pos = token_positions(3, 4, 5)  # [P, 2]
    x = torch.randn(6, 2, pos.shape[0], 8)
    shared = rope(x, pos[None].expand(6, -1, -1))  # stride 0 along frames: the tables are computed once
    assert torch.equal(shared, rope(x, pos[None].repeat(6, 1, 1)))
    with pytest.raises(ValueError, match="divisible by 4"):
        rope(torch.randn(1, 1, 2, 6), torch.zeros(1, 2, 2, dtype=torch.long))
