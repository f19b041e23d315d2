"""ResumableSampler: orders and sample seeds are functions of (seed, epoch); resume skips exactly; DDP shards."""

import pytest
import torch

from vision.data.datasets import KeyedConcatDataset
from vision.data.sampler import ResumableSampler, split_key
from vision.errors import InputError


def _epoch(sampler: ResumableSampler, epoch: int) -> list:
    sampler.set_epoch(epoch)
    return list(sampler)


def test_order_and_seeds_depend_on_seed_and_epoch_only():
    a, b = ResumableSampler(10, seed=3), ResumableSampler(10, seed=3)
    torch.manual_seed(123)  # the global RNG plays no part
    first = _epoch(a, 0)
    torch.manual_seed(456)
    assert _epoch(b, 0) == first
    assert sorted(i for i, _ in first) == list(range(10))
    assert _epoch(a, 1) != first
    assert _epoch(ResumableSampler(10, seed=4), 0) != first
    assert len({s for _, s in first}) == 10  # distinct sample seeds


def test_resume_continues_the_epoch_after_the_consumed_samples():
    full = _epoch(ResumableSampler(11, seed=0), 2)
    resumed = ResumableSampler(11, seed=0)
    resumed.resume(2, 4)
    resumed.set_epoch(2)  # Lightning sets the same epoch again: the pending resume stays
    assert list(resumed) == full[4:]
    assert list(resumed) == full  # a resume applies to one pass only
    assert len(resumed) == 11  # the epoch's length is unchanged
    resumed.resume(2, 4)
    resumed.set_epoch(3)  # a new epoch forgets it
    assert list(resumed) == _epoch(ResumableSampler(11, seed=0), 3)


def test_ranks_split_the_epoch_and_pad_by_wrapping():
    whole = _epoch(ResumableSampler(7, seed=1), 0)
    shards = [_epoch(ResumableSampler(7, seed=1, num_replicas=3, rank=r), 0) for r in range(3)]
    assert all(len(s) == 3 for s in shards)
    interleaved = [shards[r][k] for k in range(3) for r in range(3)]
    assert interleaved == whole + whole[:2]


def test_plain_indices_and_bad_arguments():
    assert sorted(ResumableSampler(5, seed=0, with_seeds=False)) == list(range(5))
    assert list(ResumableSampler(4, seed=0, shuffle=False, with_seeds=False)) == [0, 1, 2, 3]
    with pytest.raises(InputError, match="length"):
        ResumableSampler(0, seed=0)
    with pytest.raises(InputError, match="rank"):
        ResumableSampler(3, seed=0, num_replicas=2, rank=2)
    assert split_key(5) == (5, None) and split_key((5, 9)) == (5, 9)


class _Echo(torch.utils.data.Dataset):
    def __init__(self, name: str, n: int) -> None:
        self.name, self.n = name, n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, key):
        return self.name, key


def test_keyed_concat_passes_the_sample_seed_to_the_right_part():
    concat = KeyedConcatDataset([_Echo("a", 2), _Echo("b", 3)])
    assert concat[(3, 77)] == ("b", (1, 77))
    assert concat[1] == ("a", 1)
    assert concat[-1] == ("b", 2)
    with pytest.raises(IndexError):
        concat[(5, 1)]
