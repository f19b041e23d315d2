"""The Forensics tab's logic (vision/forensics/demo_handlers.py): the upload is checked before any model."""

import pytest

from tests.demo.test_uploads_and_prompts import _cut_to_a_tenth, _frames
from vision.data.video import write_video
from vision.demo.handlers import DemoConfig, Models
from vision.errors import VideoError
from vision.forensics.demo_handlers import run_forensics


def test_forensics_checks_the_upload_before_loading_the_model(tmp_path):
    """/forensics refuses a truncated video or one over the pixel limit with the reader's error, before it would
    load a model (here there is no checkpoint at all)."""
    models = Models(DemoConfig(checkpoints={"forensics": tmp_path / "none.ckpt"}, work_dir=tmp_path))
    with pytest.raises(VideoError, match=r"tenth\.mp4: .*declares 100 frames"):
        run_forensics(models, str(_cut_to_a_tenth(tmp_path)))
    video = write_video(tmp_path / "v.mp4", _frames(t=3), fps=5)
    small_cap = Models(DemoConfig(checkpoints={"forensics": tmp_path / "none.ckpt"}, work_dir=tmp_path, max_pixels=20 * 20))
    with pytest.raises(VideoError, match=r"v\.mp4: frames of 32x24 .* over the limit of 20x20"):
        run_forensics(small_cap, str(video))
