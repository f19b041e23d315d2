"""The OOV detector on the pretrained YOLOX-nano body (vision.detection.yolox_body): its boxes are YOLOX's, its
untrained embeddings answer COCO names and their synonyms by text, the predictor letterboxes its input, only the
embedding projection trains, and a checkpoint reloads without the weights file; the prediction-based assignment
and vocabulary dropout of the losses."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from vision.detection.losses import assign_by_prediction, drop_vocabulary
from vision.detection.task import DetectionConfig, build_model, load
from vision.errors import InputError
from vision.weights.nets.onnx_models import COCO_CLASSES, YOLOXNano as OrtYOLOXNano

skimage_data = pytest.importorskip("skimage.data")


@pytest.fixture(scope="module")
def config(pretrained_weights: Path) -> DetectionConfig:
    return DetectionConfig(body="yolox-nano", body_weights="yolox-nano", image_size=416, score_threshold=0.001,
                           competitor_similarity=0.62)


@pytest.fixture(scope="module")
def model(config: DetectionConfig):
    torch.manual_seed(0)
    return build_model(config).eval()


def test_config_rules() -> None:
    with pytest.raises(InputError, match="image_size"):
        DetectionConfig(body="yolox-nano", image_size=400)
    with pytest.raises(InputError, match="body_weights"):
        DetectionConfig(body_weights="yolox-nano")
    with pytest.raises(InputError, match="body"):
        DetectionConfig(body="yolov8")


def test_config_with_weights_builds_on_the_meta_device(config) -> None:
    """The weights file is read on the CPU whatever the default device (the configs' fuzz test builds on meta)."""
    import warnings

    with warnings.catch_warnings(), torch.device("meta"):
        warnings.simplefilter("ignore")  # copying the file's tensors into meta parameters is a no-op, said once each
        built = build_model(config)
    assert next(built.parameters()).device.type == "meta"
    with pytest.raises(InputError, match="body_weights"):
        DetectionConfig(body="yolox-nano", body_weights="")


def test_boxes_are_the_pretrained_networks(model, config) -> None:
    """The predictor's boxes with the 80 COCO names are the teacher's (onnxruntime on the registered file) on a
    real photograph: the same objects, boxes within a pixel, in the photograph's pixels (the input letterboxed)."""
    from vision.detection.predictor import DetectorPredictor

    image = skimage_data.astronaut()
    teacher = OrtYOLOXNano(threads=2).detect(image, score_threshold=0.3)
    predictor = DetectorPredictor(model, list(COCO_CLASSES), config.image_size,
                                  competitor_similarity=config.competitor_similarity)
    ours = predictor.predict(image)
    person = [b for b, c in zip(teacher["boxes"], teacher["classes"]) if COCO_CLASSES[c] == "person"]
    assert len(person) == 1
    found = [np.asarray(b) for b, n in zip(ours["boxes"], ours["labels"]) if n == "person"]
    assert found, f"no person found: {ours['labels']}"
    assert np.abs(found[0] - person[0]).max() < 1.0
    # on YOLOX's scale: the person's score is the teacher's confidence x p(person), p near 1
    assert abs(float(ours["scores"][0]) - float(teacher["scores"][0])) < 0.05


def test_a_known_object_no_name_explains_is_unknown(model, config) -> None:
    """With competitors, the astronaut is not boxed as a "chair" (person, which "chair" does not explain, wins the
    OOV column), while a synonym ("man") still answers; without competitors the chair box is shown."""
    from vision.detection.predictor import DetectorPredictor

    image = skimage_data.astronaut()
    shown = 0.3
    with_competitors = DetectorPredictor(model, ["chair"], config.image_size,
                                         competitor_similarity=config.competitor_similarity)
    result = with_competitors.predict(image)
    assert not any(n == "chair" and s >= shown for n, s in zip(result["labels"], result["scores"]))
    assert any(n == "unknown" and s >= shown for n, s in zip(result["labels"], result["scores"]))
    with_competitors.set_vocabulary(["man"])
    result = with_competitors.predict(image)
    assert any(n == "man" and s >= shown for n, s in zip(result["labels"], result["scores"]))
    without = DetectorPredictor(model, ["chair"], config.image_size).predict(image)
    assert any(n == "chair" and s >= shown for n, s in zip(without["labels"], without["scores"]))


def test_competitor_rows_leave_out_the_names_a_vocabulary_explains() -> None:
    from vision.detection.vocabulary import competitor_rows

    known = torch.eye(3)
    vocabulary = torch.nn.functional.normalize(torch.tensor([[1.0, 0.1, 0.0]]), dim=-1)
    kept = competitor_rows(known, vocabulary, similarity=0.9)
    torch.testing.assert_close(kept, known[1:])
    torch.testing.assert_close(competitor_rows(known, vocabulary, similarity=1.01), known)


def test_untrained_embeddings_answer_names_and_synonyms_by_text(model, config) -> None:
    """At the anchor point YOLOX is surest of, the zero-shot embedding (the class-probability-weighted text rows)
    is closest to the object's COCO name among the 80, and a synonym ("man") beats unrelated names."""
    from vision.detection.predictor import DetectorPredictor
    from vision.detection.vocabulary import encode_vocabulary

    predictor = DetectorPredictor(model, list(COCO_CLASSES), config.image_size)
    out = predictor.outputs([skimage_data.astronaut()])
    best = int(out["objectness"][0].argmax())
    embedding = out["embeddings"][0, best]
    coco = encode_vocabulary(list(COCO_CLASSES), config.prompt_template)
    assert COCO_CLASSES[int((coco @ embedding).argmax())] == "person"
    names = ["man", "banana", "giraffe", "toaster"]
    text = encode_vocabulary(names, config.prompt_template)
    assert names[int((text @ embedding).argmax())] == "man"


def test_only_the_embedding_projection_trains(model) -> None:
    trainable = {name for name, p in model.named_parameters() if p.requires_grad}
    assert trainable == {"body.embed_proj.weight", "body.embed_proj.bias", "classifier.oov_prompts"}
    images = torch.rand(1, 3, 64, 96)
    out = model(images)
    out["embeddings"].sum().backward()
    assert model.body.embed_proj.weight.grad is not None
    assert all(p.grad is None for p in model.body.net.parameters())
    model.zero_grad()


def test_checkpoint_reloads_without_the_weights_file(model, config, tmp_path) -> None:
    """A model folder of the detector reloads (the weights file is not read again) with the same outputs."""
    from vision.detection.task import save

    folder = save(model, config, tmp_path / "folder")
    loaded, loaded_config = load(folder)
    assert loaded_config.body == "yolox-nano"
    images = torch.rand(1, 3, 64, 64)
    with torch.no_grad():
        a, b = model(images), loaded(images)
    for key in ("objectness", "boxes", "embeddings"):
        torch.testing.assert_close(a[key], b[key])


def test_assign_by_prediction_labels_the_locations_whose_box_covers_the_object() -> None:
    pred = torch.tensor([[0.0, 0, 10, 10], [1, 1, 11, 11], [50, 50, 60, 60], [0, 0, 4, 4]])
    gt = torch.tensor([[0.0, 0, 10, 10], [50, 50, 61, 61]])
    labels, targets, matched = assign_by_prediction(pred, gt, torch.tensor([3, 1]), num_classes=5)
    assert labels.tolist() == [3, 3, 1, 5]          # IoU 1, 0.68, 0.83 -> positives; 0.16 -> background
    assert matched.tolist() == [0, 0, 1, -1]
    torch.testing.assert_close(targets[2], gt[1])
    empty = assign_by_prediction(pred, torch.zeros(0, 4), torch.zeros(0, dtype=torch.int64), num_classes=5)[0]
    assert empty.tolist() == [5, 5, 5, 5]


def test_drop_vocabulary_makes_left_out_classes_out_of_vocabulary() -> None:
    """K = 4, rows 1 and 3 kept: class 1 -> 0, class 3 -> 1, classes 0 and 2 -> OOV (3), background 4 -> 2,
    OOV 5 -> 3."""
    labels = torch.tensor([0, 1, 2, 3, 4, 5])
    keep = torch.tensor([False, True, False, True])
    assert drop_vocabulary(labels, keep).tolist() == [3, 0, 3, 1, 2, 3]
