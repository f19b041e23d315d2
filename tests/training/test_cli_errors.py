"""A missing or corrupt checkpoint given to tools/train.py (``fit`` / ``test`` with --ckpt_path, and a tracking
config's geometry_checkpoint) is one error line naming the file on stderr and exit status 2, without a traceback.

The cases run the CLI's ``main`` in this process (what ``tools/train.py`` calls; a new process costs seconds of
imports each); one of them also runs as a real ``tools/train.py`` process, for the exit status and stderr a shell sees.
"""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml

from vision.synthetic.scenes import write_split
from vision.training.compose import compose

pytestmark = pytest.mark.slow  # the training CLI, and tools/train.py in a subprocess

ROOT = Path(__file__).resolve().parents[2]


def bad_checkpoint(folder: Path, kind: str, hyper_parameters: dict | None = None) -> Path:
    """``garbage``: random bytes; ``missing``: no file; ``mismatched``: a readable checkpoint whose weights fit no
    model of ours (a tensor of every prefix the loaders look for, all of the wrong shape); ``foreign``: a bare state
    dict, not a Lightning checkpoint."""
    path = folder / f"{kind}.ckpt"
    if kind == "garbage":
        path.write_bytes(np.random.default_rng(0).bytes(512))
    elif kind == "mismatched":
        state = {f"{prefix}aggregator.camera_token": torch.zeros(3) for prefix in ("model.", "model.backbone.")}
        state["detector.net.0.weight"] = torch.zeros(3)
        torch.save({"state_dict": state, "hyper_parameters": hyper_parameters or {}, "global_step": 0,
                    "pytorch-lightning_version": "2.6.6"}, path)
    elif kind == "foreign":
        torch.save({"weight": torch.zeros(3)}, path)
    return path


def assert_one_error_line(code: int, stderr: str, path: Path) -> None:
    assert code == 2, stderr[-3000:]
    assert "Traceback" not in stderr, stderr[-3000:]
    errors = [line for line in stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and str(path) in errors[0], stderr[-3000:]


@pytest.fixture(scope="module")
def tracking_config(tmp_path_factory) -> Path:
    """configs/tracking/tiny.yaml on a one-scene synthetic split: one CPU step, no logger, no checkpoints."""
    folder = tmp_path_factory.mktemp("train")
    split = write_split(folder / "data", "train", scenes=1, views=4, size=32, mode="video", seed=1, threads=1)
    config = compose(ROOT / "configs" / "tracking" / "tiny.yaml")
    config["trainer"].update(accelerator="cpu", max_steps=1, default_root_dir=str(folder / "run"), logger=False,
                             callbacks=None, enable_checkpointing=False, enable_progress_bar=False,
                             num_sanity_val_steps=0, limit_val_batches=0, val_check_interval=None,
                             check_val_every_n_epoch=1)
    config["model"]["init_args"]["config"]["text_encoder"] = None
    config["data"]["init_args"].update(train_split=str(split), val_split=str(split), views=2, batch_size=1,
                                       num_workers=0, augment=False)
    path = folder / "tiny.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def _train(*args: str) -> tuple[int, str]:
    """The training CLI (:func:`vision.cli.train.main`, as ``tools/train.py`` runs it) on ``args`` in this process:
    its exit status and what it wrote to stderr."""
    from vision.cli.train import main

    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        try:
            code = main(list(args))
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
    return code, err.getvalue()


@pytest.mark.parametrize("kind", ["garbage", "missing", "mismatched", "foreign"])
@pytest.mark.parametrize("subcommand, option", [("fit", "--ckpt_path"), ("fit", "--model.init_args.geometry_checkpoint"),
                                                ("test", "--ckpt_path")])
def test_train_refuses_a_bad_checkpoint_in_one_line(tmp_path, tracking_config, subcommand, option, kind):
    ckpt = bad_checkpoint(tmp_path, kind)
    assert_one_error_line(*_train(subcommand, "--config", str(tracking_config), option, str(ckpt)), ckpt)


def test_tools_train_refuses_a_bad_checkpoint_in_one_line_and_status_2(tmp_path, tracking_config):
    """The same as a shell sees it: a ``tools/train.py`` process, its exit status and its stderr."""
    ckpt = bad_checkpoint(tmp_path, "garbage")
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}
    proc = subprocess.run([sys.executable, str(ROOT / "tools" / "train.py"), "fit", "--config", str(tracking_config),
                           "--ckpt_path", str(ckpt)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert_one_error_line(proc.returncode, proc.stderr, ckpt)


class _Payload:
    """Unpickling this creates the file it names: the proof that a checkpoint ran code."""

    def __init__(self, marker: Path) -> None:
        self.marker = str(marker)

    def __reduce__(self):
        return (Path.touch, (Path(self.marker),))


@pytest.mark.parametrize("opt_out", [["--weights_only", "false"],
                                     ["--trainer.plugins", "lightning.pytorch.plugins.io.TorchCheckpointIO"],
                                     ["--trainer.plugins", "lightning.pytorch.plugins.io.TorchCheckpointIO",
                                      "--weights_only", "false"]])
def test_the_unsafe_opt_outs_are_refused_before_a_checkpoint_is_read(tmp_path, tracking_config, opt_out):
    """``--ckpt_path last`` skips Lightning's weights-only pre-read, so with TorchCheckpointIO and
    ``--weights_only false`` a malicious checkpoint ran its payload: the opt-outs are refused in one line."""
    run = tmp_path / "run"
    (run / "checkpoints").mkdir(parents=True)
    marker = tmp_path / "payload_ran"
    torch.save({"state_dict": {}, "pytorch-lightning_version": "2.6.6", "x": _Payload(marker)},
               run / "checkpoints" / "last.ckpt")
    code, stderr = _train("fit", "--config", str(tracking_config), "--run_dir", str(run),
                          "--trainer.enable_checkpointing", "true", "--ckpt_path", "last", *opt_out)
    assert code == 2 and "Traceback" not in stderr, stderr[-3000:]
    errors = [line for line in stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and "refused" in errors[0], stderr[-3000:]
    assert not marker.exists()


def test_a_run_dir_that_cannot_be_written_is_one_line(tmp_path, tracking_config):
    """A symbolic-link loop as --run_dir made a traceback from os.makedirs."""
    os.symlink(tmp_path / "loop", tmp_path / "loop")
    code, stderr = _train("fit", "--config", str(tracking_config), "--run_dir", str(tmp_path / "loop" / "run"))
    assert_one_error_line(code, stderr, tmp_path / "loop" / "run")
    assert "symbolic links" in stderr


def test_a_full_disk_under_the_run_dir_is_one_line_naming_the_file(tmp_path, tracking_config):
    """A full disk made a traceback when the first checkpoint was written."""
    folder = tmp_path / "full"
    folder.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(folder)],
                      capture_output=True).returncode != 0:
        pytest.skip("cannot mount a small tmpfs here")
    try:
        code, stderr = _train("fit", "--config", str(tracking_config), "--run_dir", str(folder / "run"),
                              "--trainer.enable_checkpointing", "true")
    finally:
        subprocess.run(["umount", str(folder)], capture_output=True)
    assert_one_error_line(code, stderr, folder / "run" / "checkpoints")
    assert "No space left on device" in stderr
