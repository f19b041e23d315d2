import pytest
import torch

from vision.detection.model import UNKNOWN_LABEL, OpenVocabClassifier, location_scores
from vision.detection.task import DetectionConfig, build_model
from vision.errors import InputError
from vision.geometry.model import create_backbone
from vision.text import TEXT_DIM

torch.set_num_threads(1)


@pytest.fixture(scope="module")
def detector():
    torch.manual_seed(0)
    return build_model(DetectionConfig(image_size=64, channels=32, score_threshold=0.0))


def test_forward_shapes_and_boxes(detector):
    out = detector(torch.rand(2, 3, 64, 64))
    n = 16 * 16 + 8 * 8 + 4 * 4  # strides 4, 8, 16 at 64 px (patch 8)
    assert out["points"].shape == (n, 2)
    assert out["objectness"].shape == (2, n)
    assert out["boxes"].shape == (2, n, 4)
    assert out["features"].shape == (2, n, 32)
    assert out["embeddings"].shape == (2, n, TEXT_DIM)
    assert torch.allclose(out["embeddings"].norm(dim=-1), torch.ones(2, n), atol=1e-5)
    # every box contains its location centre (ltrb >= 0)
    pts = out["points"][None]
    assert (out["boxes"][..., 0] <= pts[..., 0]).all() and (out["boxes"][..., 2] >= pts[..., 0]).all()
    assert (out["boxes"][..., 1] <= pts[..., 1]).all() and (out["boxes"][..., 3] >= pts[..., 1]).all()
    # [B, 1, 3, H, W] gives the same result as [B, 3, H, W]
    same = detector(torch.rand(1, 1, 3, 64, 64))
    assert same["objectness"].shape == (1, n)


def test_wrong_inputs(detector):
    with pytest.raises(InputError, match="S = 2"):
        detector(torch.rand(1, 2, 3, 64, 64))
    with pytest.raises(InputError, match="multiple of the patch size"):
        detector(torch.rand(1, 3, 60, 64))
    with pytest.raises(InputError, match="feature_layers"):
        build_model(DetectionConfig(image_size=64, feature_layers=[7]))


def test_classifier_columns():
    clf = OpenVocabClassifier(embed_dim=4, num_oov_prompts=2, temperature=0.5)
    with torch.no_grad():
        clf.oov_prompts.copy_(torch.tensor([[0.0, 0, 1, 0], [0, 0, 0, 1]]))
    text = torch.eye(4)[:2]
    emb = torch.tensor([[1.0, 0, 0, 0], [0, 0, 0, 1]])
    logits = clf(emb, text)
    assert logits.shape == (2, 4)  # 2 classes + background + OOV
    assert torch.allclose(logits[0], torch.tensor([2.0, 0, 0, 0]))
    assert torch.allclose(logits[1], torch.tensor([0.0, 0, 0, 2.0]))  # OOV = max over prompts / tau
    closed = OpenVocabClassifier(embed_dim=4, num_oov_prompts=0, temperature=0.5)
    assert closed(emb, text).shape == (2, 3)


def test_postprocess_labels_unknown(detector):
    out = detector(torch.rand(1, 3, 64, 64))
    text = torch.nn.functional.normalize(torch.randn(3, TEXT_DIM), dim=-1)
    # make the OOV prompt identical to every embedding direction's mean so that some locations pick OOV
    with torch.no_grad():
        detector.classifier.oov_prompts.copy_(out["embeddings"][0].mean(0, keepdim=True))
    dets = detector.postprocess(out, text, [(64, 64)])
    assert len(dets) == 1
    d = dets[0]
    assert d["boxes"].shape[1] == 4 and d["boxes"].shape[0] == d["scores"].shape[0] == d["labels"].shape[0]
    assert d["boxes"].shape[0] <= detector.max_detections
    assert ((d["labels"] >= 0) & (d["labels"] < 3) | (d["labels"] == UNKNOWN_LABEL)).all()
    assert (d["labels"] == UNKNOWN_LABEL).any()
    assert (d["scores"][:-1] >= d["scores"][1:]).all()
    assert (d["boxes"] >= 0).all() and (d["boxes"] <= 64).all()


def test_location_scores_hand_computed():
    """Score = sqrt(sigmoid(objectness) * p) of the best foreground column (background skipped), OOV index = K;
    without an OOV column only vocabulary rows win."""
    logits = torch.log(torch.tensor([[0.2, 0.1, 0.6, 0.1],     # background wins the softmax: the best
                                     [0.1, 0.2, 0.3, 0.4]]))   # foreground column is row 0; OOV wins
    scores, index = location_scores(logits, torch.tensor([0.0, 2.0]), num_classes=2)
    assert index.tolist() == [0, 2]
    expected = torch.tensor([0.5 * 0.2, torch.sigmoid(torch.tensor(2.0)) * 0.4]).sqrt()
    assert torch.allclose(scores, expected, atol=1e-6)
    closed, index = location_scores(logits[:, :3], torch.zeros(2), num_classes=2)
    assert index.tolist() == [0, 1] and closed.shape == (2,)


def test_pixel_stem_starts_as_the_detector_without_it():
    """The stem's output projections start at zero: same weights elsewhere -> the same outputs; after a step on a
    loss the stem changes them (it is wired in), and its maps match the pyramid's strides."""
    torch.manual_seed(0)
    plain = build_model(DetectionConfig(image_size=64, channels=32))
    torch.manual_seed(0)
    stem = build_model(DetectionConfig(image_size=64, channels=32, pixel_stem=True))
    missing = stem.load_state_dict(plain.state_dict(), strict=False)
    assert all(k.startswith("pixel_stem.") for k in missing.missing_keys) and not missing.unexpected_keys
    images = torch.rand(2, 3, 64, 64)
    levels = stem.pixel_stem(images)
    assert [tuple(m.shape) for m in levels] == [(2, 32, 16, 16), (2, 32, 8, 8), (2, 32, 4, 4)]
    with torch.no_grad():
        assert torch.allclose(stem(images)["objectness"], plain(images)["objectness"], atol=1e-6)
    opt = torch.optim.SGD(stem.pixel_stem.parameters(), lr=0.1)
    stem(images)["objectness"].sum().backward()
    opt.step()
    with torch.no_grad():
        assert not torch.allclose(stem(images)["objectness"], plain(images)["objectness"], atol=1e-4)


def test_text_projection_identity_at_start_and_learned():
    clf = OpenVocabClassifier(embed_dim=4, num_oov_prompts=0, temperature=0.5, text_projection=True)
    text = torch.nn.functional.normalize(torch.rand(3, 4), dim=-1)
    emb = torch.nn.functional.normalize(torch.rand(5, 4), dim=-1)
    plain = OpenVocabClassifier(embed_dim=4, num_oov_prompts=0, temperature=0.5)
    assert torch.allclose(clf(emb, text), plain(emb, text), atol=1e-6)
    clf(emb, text)[:, 0].sum().backward()
    assert clf.text_projection.weight.grad.abs().sum() > 0
    assert torch.allclose(clf.table(text).norm(dim=-1), torch.ones(3))
