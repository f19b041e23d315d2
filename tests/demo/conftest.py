"""Session fixtures of the demo tests: tiny checkpoints of the three tasks (made with the helpers of the task
test suites), the demo's example inputs, and the app served in-process on a free port of 127.0.0.1."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest
import torch

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
os.environ.setdefault("HF_HUB_OFFLINE", "1")


@pytest.fixture(scope="session")
def demo_checkpoints(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """``{"tracking", "detection", "forensics"}`` -> tiny Lightning checkpoints (a few training steps each)."""
    from tests.detection.conftest import train_tiny_checkpoint as train_detection
    from tests.forensics.conftest import make_tiny_split
    from tests.forensics.conftest import train_tiny_checkpoint as train_forensics
    from tests.tracking.conftest import train_tiny_checkpoint as train_tracking
    from vision.synthetic.detection import write_oov_synthetic
    from vision.text import get_text_encoder

    torch.set_num_threads(1)
    root = tmp_path_factory.mktemp("demo_ckpts")
    tracking = train_tracking(root / "tracking", text_encoder="minilm")
    splits = write_oov_synthetic(root / "oov", train_scenes=3, val_scenes=1, test_scenes=1, views=2, size=64, seed=0)
    detection = root / "detection.ckpt"
    train_detection(splits, get_text_encoder("minilm"), detection, steps=2)
    forensics = train_forensics(make_tiny_split(root / "aigv"), root / "forensics", epochs=5)
    return {"tracking": tracking, "detection": detection, "forensics": forensics}


@pytest.fixture(scope="session")
def demo_examples(tmp_path_factory: pytest.TempPathFactory):
    from vision.demo.examples import prepare_examples

    return prepare_examples(tmp_path_factory.mktemp("demo_examples"))


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="session")
def demo_url(demo_checkpoints: dict[str, Path], demo_examples) -> str:
    """The URL of the demo app launched in this process (closed at the end of the session)."""
    from vision.demo import app as demo_app

    args = demo_app.parse_args(["--port", str(_free_port()), "--examples-dir", str(demo_examples.folder),
                                "--tracking-ckpt", str(demo_checkpoints["tracking"]),
                                "--detection-ckpt", str(demo_checkpoints["detection"]),
                                "--forensics-ckpt", str(demo_checkpoints["forensics"]),
                                # the synthetic checkpoints answer, whatever runs/ holds (tests/demo/
                                # test_real_detection.py covers the detector trained on real frames)
                                "--real-detection-ckpt", str(demo_checkpoints["detection"].parent / "no_real.ckpt"),
                                "--real-tracking-ckpt", str(demo_checkpoints["tracking"].parent / "no_real.ckpt"),
                                # a barely trained tracker is unsure an object is present: keep every mask
                                "--presence-threshold", "0"])
    app = demo_app.launch(args, block=False)
    yield app.local_url
    app.close()
