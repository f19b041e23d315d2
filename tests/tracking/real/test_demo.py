"""The Track tab with the real-video tracker (vision.tracking.demo_handlers): it is the default when its checkpoint
exists, answers box prompts on an uploaded video and names itself; the synthetic tracker stays selectable."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from skimage import data

from vision.data.video import write_video
from vision.demo.handlers import DemoConfig, Models
from vision.tracking.demo_handlers import TRACKERS, default_tracker, run_tracking


def test_real_tracker_answers_in_the_track_tab(real_checkpoint: Path, tmp_path: Path) -> None:
    photo = data.astronaut()
    video = tmp_path / "pan.mp4"
    write_video(video, iter([np.ascontiguousarray(photo[50:290, 40 + 4 * t:360 + 4 * t]) for t in range(6)]), fps=10)
    models = Models(DemoConfig(work_dir=tmp_path / "work", real_tracking=real_checkpoint, device="cpu"))
    assert default_tracker(models) == TRACKERS[0]
    result = run_tracking(models, [str(video)], "object 1 frame 0 box 140,10,250,160")
    assert "model: G2TAM-real (3d memory, nanotrack-v2)" in result.summary and result.scene is None
    records = json.loads(Path(result.downloads[0]).read_text())
    assert len(records) == 6 and records[0]["present"] and result.video.stat().st_size > 0
    missing = Models(DemoConfig(work_dir=tmp_path / "work", real_tracking=tmp_path / "none.ckpt", device="cpu"))
    assert default_tracker(missing) == TRACKERS[1]
