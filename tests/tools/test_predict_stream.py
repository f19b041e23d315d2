"""vision-predict --task tracking --stream: a live source (here an MPEG-TS file, read as a stream) is tracked as
its frames arrive; results.jsonl gets one line per frame, annotated.mp4 every frame; --stream with another task or
several inputs, and a source that cannot be opened, are one-line errors (exit 2)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests.data.test_stream import mpegts_bytes
from tests.tools.test_predict_cli import _untrained_checkpoint
from vision.cli import predict as predict_cli


@pytest.mark.slow
def test_stream_writes_one_line_per_frame(tmp_path, capsys):
    from vision.data.video import read_video

    ckpt = _untrained_checkpoint("tracking", tmp_path / "tracking.ckpt")
    frames = np.random.default_rng(0).integers(0, 256, size=(9, 40, 48, 3), dtype=np.uint8)
    source = tmp_path / "live.ts"
    source.write_bytes(mpegts_bytes(frames))
    out = tmp_path / "out"
    assert predict_cli.main([str(source), "--task", "tracking", "--ckpt", str(ckpt), "--stream", "--points",
                             "20,20", "--presence-threshold", "0", "--out", str(out), "--device", "cpu"]) == 0
    assert "tracked 9 frames" in capsys.readouterr().out
    lines = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert [line["image_id"] for line in lines] == list(range(1, 10))
    assert all(r["track_id"] == 1 and r["segmentation"]["size"] == [40, 48] for line in lines for r in line["results"])
    assert read_video(out / "annotated.mp4").shape[0] == 9


def test_stream_misuse_is_one_line(tmp_path, capsys):
    ckpt = tmp_path / "x.ckpt"
    ckpt.write_bytes(b"0")
    base = ["--ckpt", str(ckpt), "--stream", "--points", "1,1", "--out", str(tmp_path / "out"), "--device", "cpu"]
    assert predict_cli.main(["a.ts", "b.ts", "--task", "tracking", *base]) == 2
    assert predict_cli.main(["a.ts", "--task", "detection", *base]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["error: --stream tracks one source with --task tracking"] * 2
    assert not (tmp_path / "out").exists()
