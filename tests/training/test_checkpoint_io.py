import math
import pickle

import pytest
import torch

from vision.errors import DataError
from vision.training.callbacks import NonFiniteLossError, check_finite
from vision.training.checkpoint_io import AtomicCheckpointIO, load_checkpoint


class _Thing:
    """An arbitrary class: a weights_only load must refuse to unpickle it."""


def _ckpt(step: int) -> dict:
    """The smallest dict Lightning would write as a checkpoint."""
    return {"global_step": step, "state_dict": {}, "pytorch-lightning_version": "2.6.6"}


def test_atomic_save_and_weights_only_load(tmp_path):
    io = AtomicCheckpointIO()
    ckpt = {**_ckpt(7), "state_dict": {"w": torch.arange(6.0).view(2, 3)}, "name": "x"}
    path = tmp_path / "sub" / "last.ckpt"
    io.save_checkpoint(ckpt, path)
    assert not [p for p in path.parent.iterdir() if p.name.endswith(".tmp")]
    loaded = io.load_checkpoint(path)
    assert loaded["global_step"] == 7
    assert torch.equal(loaded["state_dict"]["w"], ckpt["state_dict"]["w"])


def test_failed_write_keeps_previous_checkpoint(tmp_path):
    io = AtomicCheckpointIO()
    path = tmp_path / "last.ckpt"
    io.save_checkpoint(_ckpt(1), path)

    class Unpicklable:
        def __reduce__(self):
            raise pickle.PicklingError("boom")

    with pytest.raises(Exception):
        io.save_checkpoint({**_ckpt(2), "bad": Unpicklable()}, path)
    assert io.load_checkpoint(path)["global_step"] == 1
    assert [p.name for p in tmp_path.iterdir()] == ["last.ckpt"]


def test_load_refuses_arbitrary_objects_and_names_the_file(tmp_path):
    path = tmp_path / "evil.ckpt"
    torch.save({"obj": _Thing()}, path)
    with pytest.raises(DataError, match="evil.ckpt"):
        load_checkpoint(path)
    with pytest.raises(DataError, match="not found"):
        load_checkpoint(tmp_path / "missing.ckpt")
    (tmp_path / "trunc.ckpt").write_bytes(b"PK\x03\x04garbage")
    with pytest.raises(DataError, match="trunc.ckpt"):
        load_checkpoint(tmp_path / "trunc.ckpt")


def test_check_finite_names_the_terms():
    check_finite({"loss": torch.tensor(1.0), "loss_depth": 0.5}, step=3)
    with pytest.raises(NonFiniteLossError, match=r"step 12.*loss_depth=nan"):
        check_finite({"loss": torch.tensor(1.0), "loss_depth": torch.tensor(math.nan)}, step=12)


def test_leftovers_of_a_killed_write_are_removed_by_the_next_write(tmp_path):
    io = AtomicCheckpointIO()
    path = tmp_path / "last.ckpt"
    io.save_checkpoint(_ckpt(1), path)
    (tmp_path / ".last.ckpt.abc123.tmp").write_bytes(b"partial")  # what a SIGKILL mid-write leaves
    io.save_checkpoint(_ckpt(2), path)
    assert [p.name for p in tmp_path.iterdir()] == ["last.ckpt"]
    assert io.load_checkpoint(path)["global_step"] == 2


def test_an_unsafe_pickle_is_refused_in_one_line_without_advice_to_unpickle_it(tmp_path):
    class Payload:
        def __reduce__(self):
            return (print, ("this must never run",))

    path = tmp_path / "unsafe.ckpt"
    torch.save({"state_dict": {}, "extra": Payload()}, path)
    with pytest.raises(DataError) as info:
        load_checkpoint(path)
    message = str(info.value)
    assert "\n" not in message and str(path) in message
    assert "GLOBAL" in message and "print" in message  # names what was refused
    assert "weights_only=False" not in message and "weights_only` set to `False" not in message


def test_resume_refuses_a_file_that_is_not_a_lightning_checkpoint(tmp_path):
    path = tmp_path / "weights.pt"
    torch.save({"weight": torch.zeros(2)}, path)
    with pytest.raises(DataError, match="not a checkpoint written by Lightning training") as info:
        AtomicCheckpointIO().load_checkpoint(path)
    assert str(path) in str(info.value)
    assert load_checkpoint(path)["weight"].shape == (2,)  # plain reads of weights files still work


def test_the_unsafe_opt_outs_are_refused(tmp_path):
    """``--weights_only false`` and Lightning's own TorchCheckpointIO (a plain torch.load of ``--ckpt_path last``)
    would let a checkpoint run code: both are refused in one line; our plugin and other plugins pass."""
    from lightning.pytorch.plugins.io import TorchCheckpointIO

    from vision.errors import InputError
    from vision.training.checkpoint_io import check_checkpoint_io

    with pytest.raises(InputError, match="--weights_only false is refused"):
        check_checkpoint_io([], False)
    with pytest.raises(InputError, match="trainer.plugins names TorchCheckpointIO, which is refused"):
        check_checkpoint_io([TorchCheckpointIO()], None)
    check_checkpoint_io([AtomicCheckpointIO(), object()], True)
    path = tmp_path / "last.ckpt"
    AtomicCheckpointIO().save_checkpoint(_ckpt(3), path)
    with pytest.raises(InputError, match="weights_only"):
        AtomicCheckpointIO().load_checkpoint(path, weights_only=False)
    assert AtomicCheckpointIO().load_checkpoint(path, weights_only=True)["global_step"] == 3
