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


class _NoTracker:
    """Stands in for the tracker (no model is loaded): tracks nothing, and reads the frames it is given."""

    num_received = 0

    def __init__(self, *args, **kwargs) -> None:
        pass

    def add_prompt(self, **kwargs) -> None:
        pass

    def track(self, frames):
        for _ in frames:
            yield from ()


def _stream_main(tmp_path, source, *extra) -> int:
    ckpt = tmp_path / "never_loaded.ckpt"
    ckpt.write_bytes(b"0")
    return predict_cli.main([str(source), "--task", "tracking", "--ckpt", str(ckpt), "--stream", "--points", "1,1",
                             "--out", str(tmp_path / "out"), "--device", "cpu", *extra])


def test_a_fifo_nobody_writes_to_is_one_line(tmp_path, capsys, monkeypatch):
    """--stream on a FIFO with no writer waited forever in open(); now the wait is bounded and the error names the
    FIFO and the cause, before any model is loaded; --follow on a FIFO is refused at once."""
    import os

    from vision.data import stream

    monkeypatch.setattr(stream, "IDLE_TIMEOUT", 0.2)
    fifo = tmp_path / "camera.fifo"
    os.mkfifo(fifo)
    assert _stream_main(tmp_path, fifo) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"error: {fifo}: nothing arrived: no program wrote to the FIFO within 0.2 s"]
    assert _stream_main(tmp_path, fifo, "--follow") == 2
    assert capsys.readouterr().err.splitlines() == [
        f"error: {fifo}: --follow follows a growing regular file, and this is a FIFO (named pipe); stream it without "
        "--follow"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["camera.fifo", "never_loaded.ckpt"]


def test_a_followed_file_that_stops_before_a_frame_is_one_line_and_leaves_nothing(tmp_path, capsys, monkeypatch):
    """A --follow file that stops growing after its header but before its first frame ended in "write_video got no
    frames" (naming neither the file nor the cause); now one line names both and --out is left empty of outputs."""
    from tests.data.test_stream import _clip, matroska_bytes
    from vision.data import stream
    from vision.tracking import predictor, stream as tracker_stream

    monkeypatch.setattr(stream, "IDLE_TIMEOUT", 0.05)
    monkeypatch.setattr(predictor.TrackerPredictor, "from_checkpoint", classmethod(lambda cls, *a, **k: None))
    monkeypatch.setattr(tracker_stream, "TrackerStream", _NoTracker)
    source = tmp_path / "recording.mkv"
    source.write_bytes(matroska_bytes(_clip(3))[:700])  # the header (the frame size) and part of the first frame
    assert _stream_main(tmp_path, source, "--follow") == 2
    assert capsys.readouterr().err.splitlines() == [
        f"error: {source}: no frame arrived: the file stopped growing (no new bytes for 0.05 s) before its first "
        "frame was complete"]
    assert not (tmp_path / "out").exists()
    source.write_bytes(b"")
    assert _stream_main(tmp_path, source, "--follow") == 2
    assert capsys.readouterr().err.splitlines() == [
        f"error: {source}: nothing arrived: the file stayed empty for 0.05 s"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["never_loaded.ckpt", "recording.mkv"]
