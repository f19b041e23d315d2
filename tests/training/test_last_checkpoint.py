"""``last.ckpt`` holds the weights of the last validation, not of the best one.

Lightning 2.6 writes ``ModelCheckpoint(save_last=True)``'s ``last.ckpt`` only when a top-k checkpoint is saved at the
same step, so with ``save_top_k: 1`` it froze at the best validation (a run whose metric stopped improving resumed
from, and was tested at, an earlier step). Every shipped config therefore keeps the best checkpoint and a second,
unmonitored ``ModelCheckpoint`` named ``last`` that is written at every validation."""

from __future__ import annotations

from pathlib import Path

import lightning as L
import pytest
import torch
from lightning.pytorch.callbacks import ModelCheckpoint

from vision.training.checkpoint_io import load_checkpoint
from vision.training.compose import compose, shipped_configs

CONFIGS = shipped_configs(Path(__file__).resolve().parents[2] / "configs")  # not the _*.yaml bases


@pytest.mark.parametrize("config", CONFIGS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_config_writes_last_at_every_validation(config):
    callbacks = compose(config)["trainer"]["callbacks"]
    checkpoints = [c["init_args"] for c in callbacks if c["class_path"].endswith("ModelCheckpoint")]
    best = [c for c in checkpoints if c.get("monitor")]
    last = [c for c in checkpoints if c.get("filename") == "last"]
    assert len(best) == 1 and not best[0].get("save_last"), "the monitored checkpoint must not write last.ckpt"
    assert len(last) == 1 and last[0]["monitor"] is None and last[0]["save_top_k"] == 1
    assert last[0]["enable_version_counter"] is False and last[0]["dirpath"] == best[0]["dirpath"]


class _Worsening(L.LightningModule):
    """A module whose validation metric gets worse after the first validation."""

    def __init__(self) -> None:
        super().__init__()
        self.layer = torch.nn.Linear(2, 1)

    def training_step(self, batch, batch_idx):
        return self.layer(batch[0]).pow(2).mean()

    def validation_step(self, batch, batch_idx):
        self.log("val/score", float(-self.global_step))  # best at the first validation

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


def test_last_is_the_final_step_when_the_metric_stops_improving(tmp_path):
    data = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.randn(8, 2)), batch_size=2)
    best = ModelCheckpoint(dirpath=tmp_path, filename="best", monitor="val/score", mode="max", save_top_k=1)
    last = ModelCheckpoint(dirpath=tmp_path, filename="last", monitor=None, save_top_k=1,
                           enable_version_counter=False)
    trainer = L.Trainer(max_epochs=3, callbacks=[best, last], logger=False, enable_progress_bar=False,
                        enable_model_summary=False, num_sanity_val_steps=0)
    trainer.fit(_Worsening(), data, data)
    assert load_checkpoint(tmp_path / "best.ckpt")["global_step"] == 4
    assert load_checkpoint(tmp_path / "last.ckpt")["global_step"] == 12
    assert sorted(p.name for p in tmp_path.iterdir()) == ["best.ckpt", "last.ckpt"]
