"""A training sampler whose order and per-sample randomness are functions of ``(seed, epoch)`` alone.

Exact, reproducible training needs every random draw of the data pipeline to be the same in two runs with the
same seed, whatever the number of DataLoader workers, however far ahead the loader prefetches, and whether the run
was interrupted and resumed from a checkpoint. Drawing from a process's global RNG gives none of that: workers
are re-created on resume, and prefetching moves draws between steps. So:

- the order of epoch ``e`` is a permutation drawn from a generator seeded by ``(seed, e)``;
- each position also gets a 63-bit *sample seed* from the same generator, and the sampler yields
  :data:`SampleKey` pairs ``(index, sample_seed)``; a dataset that draws (random windows, augmentation) seeds its
  draws of that item from ``sample_seed`` (see :func:`split_key`);
- :meth:`ResumableSampler.resume` starts an epoch after its first ``n`` samples, so a run resumed mid-epoch sees
  exactly the samples the uninterrupted run would have seen.

It is a :class:`~torch.utils.data.DistributedSampler` (``num_replicas`` / ``rank`` given explicitly), so Lightning
leaves it in place under DDP: rank ``r`` takes positions ``r, r + R, ...`` of the epoch's order, padded by wrapping
around as the torch sampler does, and every rank sees the same number of samples.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import torch
from torch.utils.data import DistributedSampler

from vision.errors import InputError

__all__ = ["SampleKey", "ResumableSampler", "split_key"]

#: ``(dataset index, sample seed)``: what :class:`ResumableSampler` yields.
SampleKey = tuple[int, int]


def split_key(key: int | SampleKey) -> tuple[int, int | None]:
    """``(index, seed)`` of a dataset key: a plain index has no seed (the dataset then draws as it likes)."""
    if isinstance(key, tuple):
        index, seed = key
        return int(index), int(seed)
    return int(key), None


class ResumableSampler(DistributedSampler):
    """Epoch orders and sample seeds from ``(seed, epoch)``; resumable mid-epoch (see the module docstring).

    Args:
        length: number of items of the dataset.
        seed: base seed (the run's ``seed_everything`` seed).
        shuffle: a new permutation each epoch; otherwise ``0..length-1`` in order (sample seeds still vary by epoch).
        with_seeds: yield :data:`SampleKey` pairs; ``False`` yields plain indices (datasets without randomness).
        num_replicas / rank: the data-parallel world size and this process's rank.
    """

    def __init__(self, length: int, seed: int, shuffle: bool = True, with_seeds: bool = True,
                 num_replicas: int = 1, rank: int = 0) -> None:
        if isinstance(length, bool) or not isinstance(length, int) or length < 1:
            raise InputError(f"length must be an integer >= 1, got {length!r}")
        if not 0 <= rank < num_replicas:
            raise InputError(f"rank must be in [0, num_replicas={num_replicas}), got {rank!r}")
        super().__init__(range(length), num_replicas=num_replicas, rank=rank, shuffle=shuffle, seed=int(seed),
                         drop_last=False)
        self.length = length
        self.with_seeds = with_seeds
        self._skip = 0

    def set_epoch(self, epoch: int) -> None:
        """Lightning calls this at the start of every epoch; a new epoch forgets a pending :meth:`resume`."""
        if epoch != self.epoch:
            self._skip = 0
        super().set_epoch(epoch)

    def resume(self, epoch: int, consumed: int) -> None:
        """Continue epoch ``epoch`` after this rank's first ``consumed`` samples (applies to the next iteration)."""
        if consumed < 0:
            raise InputError(f"consumed must be >= 0, got {consumed!r}")
        super().set_epoch(int(epoch))
        self._skip = int(consumed)

    def epoch_plan(self, epoch: int) -> tuple[np.ndarray, np.ndarray]:
        """All ranks' ``(indices, sample seeds)`` of ``epoch``, before sharding: int64 arrays ``[length]``."""
        state = np.random.SeedSequence([self.seed, int(epoch)]).generate_state(2, dtype=np.uint64)
        generator = torch.Generator().manual_seed(int(state[0] >> np.uint64(1)))
        order = torch.randperm(self.length, generator=generator) if self.shuffle else torch.arange(self.length)
        seeds = torch.randint(0, 2 ** 62, (self.length,), generator=generator)
        return order.numpy(), seeds.numpy()

    def __iter__(self) -> Iterator[int | SampleKey]:
        order, seeds = self.epoch_plan(self.epoch)
        positions = np.arange(self.total_size) % self.length  # pad by wrapping around, as DistributedSampler
        mine = positions[self.rank:self.total_size:self.num_replicas][self._skip:]
        self._skip = 0  # a resume applies to one pass only
        for p in mine.tolist():
            yield (int(order[p]), int(seeds[p])) if self.with_seeds else int(order[p])

    def __len__(self) -> int:
        return self.num_samples
