"""ResumableDataModule's resume position: the training loader a checkpoint's ``{epoch, batches}`` gives.

A checkpoint written after the last batch of an epoch (by a ``ModelCheckpoint`` at the batch's end or at the
epoch-end validation, or at a SIGTERM stop) resumes at the first batch of the next epoch; one written mid-epoch
resumes right after its batches. The loader is set to its epoch when it is built: Lightning starts iterating it
before it calls ``set_epoch``."""

from __future__ import annotations

import torch
from torch.utils.data import Dataset

from vision.data.datamodule import ResumableDataModule
from vision.data.sampler import ResumableSampler


class _Items(Dataset):
    def __init__(self, n: int) -> None:
        self.n = n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, key):
        return torch.tensor(key[0])


def _order(loader) -> list[int]:
    return [int(i) for batch in loader for i in batch]


def _epoch_order(seed: int, epoch: int, n: int) -> list[int]:
    sampler = ResumableSampler(n, seed)
    sampler.set_epoch(epoch)
    return [index for index, _ in sampler]


def _resumed(state: dict[str, int], n: int = 6, batch_size: int = 2) -> tuple[ResumableDataModule, list[int]]:
    module = ResumableDataModule()
    module.load_state_dict(state)
    loader = module.train_loader(_Items(n), batch_size, 0, None)
    return module, _order(loader)


def test_a_checkpoint_after_an_epochs_last_batch_resumes_at_the_next_epoch():
    torch.manual_seed(5)
    module, order = _resumed({"epoch": 0, "batches": 3})  # 6 items, batches of 2: epoch 0 done
    assert order == _epoch_order(5, 1, 6)
    assert module.state_dict() == {"epoch": 1, "batches": 0}


def test_a_mid_epoch_checkpoint_resumes_after_its_batches():
    torch.manual_seed(5)
    module, order = _resumed({"epoch": 2, "batches": 1})
    assert order == _epoch_order(5, 2, 6)[2:]
    assert module.state_dict() == {"epoch": 2, "batches": 1}


def test_an_uneven_last_batch_counts_as_a_batch():
    torch.manual_seed(5)
    _, order = _resumed({"epoch": 0, "batches": 3}, n=5, batch_size=2)  # batches of 2, 2, 1
    assert order == _epoch_order(5, 1, 5)
    _, order = _resumed({"epoch": 0, "batches": 2}, n=5, batch_size=2)
    assert order == _epoch_order(5, 0, 5)[4:]


def test_without_a_resume_the_loader_serves_the_trainers_epoch_from_its_first_item():
    torch.manual_seed(5)
    loader = ResumableDataModule().train_loader(_Items(6), 2, 0, None)  # no trainer: epoch 0
    assert _order(loader) == _epoch_order(5, 0, 6)
