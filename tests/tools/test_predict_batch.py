"""vision-predict with many inputs (files, folders, glob patterns: one output folder each, a bad input reported and
skipped, exit status 2 at the end), several vocabularies and text prompts per call, the --device / --precision
options (a device or precision this machine lacks: one line, exit 2, nothing loaded or written), and --stream."""

from __future__ import annotations

import json
from pathlib import Path

import cv2
import numpy as np
import pytest
import torch

from tests.tools.test_predict_cli import _untrained_checkpoint
from vision import device as dev
from vision.cli import predict as predict_cli
from vision.tracking import cli as tracking_cli
from vision.cli.batch import expand_inputs, output_folders


@pytest.fixture(scope="module")
def detection_ckpt(tmp_path_factory) -> Path:
    return _untrained_checkpoint("detection", tmp_path_factory.mktemp("det") / "detection.ckpt")


def _image(path: Path, seed: int) -> Path:
    cv2.imwrite(str(path), np.random.default_rng(seed).integers(0, 256, (40, 48, 3), dtype=np.uint8))
    return path


def test_inputs_are_expanded_and_named(tmp_path):
    for name in ("b.png", "a.png"):
        _image(tmp_path / name, 0)
    (tmp_path / "frames").mkdir()
    inputs, failures = expand_inputs([str(tmp_path / "*.png"), str(tmp_path / "frames"), str(tmp_path / "a.png"),
                                      str(tmp_path / "none*.mp4"), str(tmp_path / "missing.mp4")])
    assert inputs == [tmp_path / "a.png", tmp_path / "b.png", tmp_path / "frames"]
    assert [reason for _, reason in failures] == [f"no file matches the pattern '{tmp_path / 'none*.mp4'}'",
                                                  f"input not found: {tmp_path / 'missing.mp4'}"]
    assert output_folders(inputs, tmp_path / "out") == [tmp_path / "out" / n for n in ("a", "b", "frames")]
    assert output_folders([tmp_path / "x" / "a.png", tmp_path / "a.png"], "o") == [Path("o/a"), Path("o/a_2")]
    assert output_folders([tmp_path / "a.png"], "o") == [Path("o")]


@pytest.mark.slow
def test_many_inputs_keep_going_past_a_bad_one(detection_ckpt, tmp_path, capsys):
    good = [_image(tmp_path / "one.png", 1), _image(tmp_path / "two.png", 2)]
    bad = tmp_path / "bad.png"
    bad.write_bytes(b"not an image")
    out = tmp_path / "out"
    code = predict_cli.main([str(tmp_path / "*.png"), str(tmp_path / "gone.png"), "--task", "detection",
                             "--ckpt", str(detection_ckpt), "--vocabulary", "mug,chair", "--out", str(out),
                             "--device", "cpu"])
    err = capsys.readouterr().err
    assert code == 2
    assert "error: 2 of 4 inputs failed:" in err and f"  {bad}: " in err and "gone.png: input not found" in err
    assert sorted(p.name for p in out.iterdir()) == ["one", "two"]  # nothing left for the bad one
    for path in good:
        assert isinstance(json.loads((out / path.stem / "results.json").read_text()), list)


@pytest.mark.slow
def test_several_vocabularies_write_one_folder_each(detection_ckpt, tmp_path, capsys):
    out = tmp_path / "out"
    assert predict_cli.main([str(_image(tmp_path / "one.png", 1)), "--task", "detection", "--ckpt",
                             str(detection_ckpt), "--vocabulary", "mug,chair", "--vocabulary", "lamp",
                             "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "device: " in printed and "(mug, chair)" in printed and "(lamp)" in printed
    assert sorted(p.name for p in out.iterdir()) == ["vocabulary_1", "vocabulary_2"]
    assert all((out / f / "results.json").is_file() for f in ("vocabulary_1", "vocabulary_2"))


def test_several_text_prompts_are_several_objects():
    args = predict_cli.build_parser().parse_args(["x.mp4", "--task", "tracking", "--ckpt", "c", "--points", "1,2",
                                                  "--text", "the mug", "--text", "a chair", "--text", "the lamp"])
    specs = tracking_cli.tracking_prompts(args)
    assert [(s.obj_id, s.text) for s in specs] == [(1, "the mug"), (2, "a chair"), (3, "the lamp")]
    assert specs[0].points == [[1.0, 2.0]] and specs[1].frame is None


@pytest.mark.parametrize("option, message", [
    (["--device", "gpu"], "error: unknown device 'gpu'; expected one of auto, cpu, cuda, cuda:N, mps"),
    (["--device", "cuda"], "error: device 'cuda': CUDA is not available on this machine"),
    (["--device", "cuda:1"], "error: device 'cuda:1': CUDA is not available on this machine"),
    (["--device", "mps"], "error: device 'mps': Apple's MPS backend is not available here"),
    (["--precision", "16"], "error: precision 16 on cpu: torch has no autocast for cpu; use --precision 32"),
])
def test_a_device_or_precision_this_machine_lacks_is_one_line(option, message, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(dev, "_mps_available", lambda: False)
    if option[0] == "--precision":
        monkeypatch.setattr(torch.amp, "is_autocast_available", lambda device_type: False)
    out = tmp_path / "out"
    ckpt = tmp_path / "never_loaded.ckpt"  # the options are checked before any model is loaded
    ckpt.write_bytes(b"0")
    assert predict_cli.main([str(_image(tmp_path / "one.png", 1)), "--task", "detection", "--ckpt", str(ckpt),
                             "--vocabulary", "mug", "--out", str(out), "--device", "cpu", *option]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(message), err
    assert not out.exists()


@pytest.mark.parametrize("task, extra", [("tracking", ["--points", "1,1"]), ("detection", ["--vocabulary", "mug"]),
                                         ("tracking", ["--points", "1,1", "--stream"])])
@pytest.mark.parametrize("device", ["cpu", "auto"])
def test_float16_on_the_cpu_is_one_line_before_any_model_loads(task, extra, device, tmp_path, capsys, monkeypatch):
    """``--precision 16`` on the CPU (asked for, or what ``auto`` found) is refused up front, naming the device and
    the precision (issue 46 item 5: it was a c10::Half overflow inside the tracker, after the model loaded)."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(dev, "_mps_available", lambda: False)
    out = tmp_path / "out"
    ckpt = tmp_path / "never_loaded.ckpt"  # not a checkpoint: reading it would be another error
    ckpt.write_bytes(b"0")
    assert predict_cli.main([str(_image(tmp_path / "one.png", 1)), "--task", task, "--ckpt", str(ckpt), *extra,
                             "--out", str(out), "--device", device, "--precision", "16"]) == 2
    captured = capsys.readouterr()
    assert captured.err.splitlines() == ["error: precision 16 on cpu: float16 mixed precision runs on a GPU, not on "
                                         "the CPU; use --precision bf16 (the CPU's mixed precision) or 32, or a GPU "
                                         "with --device cuda"]
    assert not out.exists() and "device:" not in captured.out


def test_a_backend_without_an_operator_is_one_line(tmp_path, capsys, monkeypatch):
    from vision.detection.predictor import DetectorPredictor

    def lacking(*args, **kwargs):
        raise NotImplementedError("The operator 'aten::roi_align' is not currently implemented for the MPS device.")

    monkeypatch.setattr(DetectorPredictor, "from_checkpoint", lacking)
    ckpt = tmp_path / "x.ckpt"
    ckpt.write_bytes(b"0")
    assert predict_cli.main([str(_image(tmp_path / "one.png", 1)), "--task", "detection", "--ckpt", str(ckpt),
                             "--vocabulary", "mug", "--out", str(tmp_path / "out"), "--device", "cpu"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert err[0] == ("error: the mps backend lacks the operator aten::roi_align; use --device cpu, or set "
                      "PYTORCH_ENABLE_MPS_FALLBACK=1 to run the missing operators on the CPU")
