"""The one backbone-weights loader: every kind of file, the one strictness rule, one error naming the file and keys."""

from __future__ import annotations

import pytest
import torch
from safetensors.torch import save_file

from vision.errors import DataError
from vision.geometry.model import create_backbone
from vision.geometry.task import GeometryConfig, build_model
from vision.geometry.weights import components_of, load_backbone

SMALL = dict(img_size=32)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """A geometry checkpoint (with a ray head, which is never handed on) and the same backbone as safetensors."""
    torch.manual_seed(5)
    root = tmp_path_factory.mktemp("weights")
    config = GeometryConfig(size="tiny", image_size=32, ray_head=True)
    model = build_model(config)
    checkpoint = root / "geometry.ckpt"
    torch.save({"state_dict": {f"model.{k}": v for k, v in model.state_dict().items()},
                "hyper_parameters": {"config": config.to_dict()}}, checkpoint)
    plain = root / "backbone.safetensors"
    save_file({k: v.contiguous() for k, v in model.backbone.state_dict().items() if not k.startswith("ray_head.")},
              str(plain))
    return checkpoint, plain, model.backbone.state_dict()


def _equal(module, reference) -> int:
    own = module.state_dict()
    for key, value in own.items():
        assert torch.equal(value, reference[key]), key
    return len(own)


@pytest.mark.parametrize("kind", ["checkpoint", "safetensors"])
def test_every_built_component_loads_and_the_others_are_skipped(files, kind):
    checkpoint, plain, reference = files
    path = checkpoint if kind == "checkpoint" else plain
    full = create_backbone("tiny", **SMALL)
    report = load_backbone(full, path)
    assert report.source == ("geometry checkpoint" if kind == "checkpoint" else "VGGT-format")
    assert _equal(full, reference) == len(report.loaded) and not report.skipped
    aggregator_only = create_backbone("tiny", enable_camera=False, enable_depth=False, enable_points=False, **SMALL)
    assert components_of(aggregator_only) == {"aggregator"}
    report = load_backbone(aggregator_only, path)
    _equal(aggregator_only, reference)
    assert report.skipped and all(k.split(".")[0] in {"camera_head", "depth_head", "point_head"}
                                  for k in report.skipped)


def test_a_fresh_component_keeps_its_initialisation(files):
    _, plain, _ = files
    torch.manual_seed(0)
    with_rays = create_backbone("tiny", enable_rays=True, **SMALL)
    before = {k: v.clone() for k, v in with_rays.state_dict().items() if k.startswith("ray_head.")}
    with pytest.raises(DataError, match=r"backbone.safetensors: .*missing=\['ray_head"):
        load_backbone(with_rays, plain)
    load_backbone(with_rays, plain, fresh=("ray_head",))
    assert all(torch.equal(with_rays.state_dict()[k], v) for k, v in before.items())


def test_weights_that_do_not_fit_are_one_error_naming_the_file_and_keys(files, tmp_path):
    _, _, reference = files
    target = create_backbone("tiny", **SMALL)
    missing = {k: v.contiguous() for k, v in reference.items()
               if not k.startswith(("ray_head.", "aggregator.camera_token"))}
    save_file(missing, str(tmp_path / "missing.safetensors"))
    with pytest.raises(DataError, match=r"missing.safetensors: .*missing=\['aggregator.camera_token'\]"):
        load_backbone(target, tmp_path / "missing.safetensors")
    extra = dict(missing, **{"aggregator.camera_token": reference["aggregator.camera_token"].contiguous(),
                             "aggregator.extra": torch.zeros(2)})
    save_file(extra, str(tmp_path / "extra.safetensors"))
    with pytest.raises(DataError, match=r"extra.safetensors: .*unexpected=\['aggregator.extra'\]"):
        load_backbone(target, tmp_path / "extra.safetensors")
    shaped = dict(extra)
    del shaped["aggregator.extra"]
    shaped["aggregator.camera_token"] = torch.zeros(3)
    save_file(shaped, str(tmp_path / "shape.safetensors"))
    with pytest.raises(DataError, match=r"shape.safetensors: .*shape mismatches=\['aggregator.camera_token \(3,\)"):
        load_backbone(target, tmp_path / "shape.safetensors")


def test_files_that_are_not_weights_are_refused_by_name(tmp_path):
    target = create_backbone("tiny", **SMALL)
    with pytest.raises(DataError, match="nothing.pt: weights file not found"):
        load_backbone(target, tmp_path / "nothing.pt")
    (tmp_path / "text.pt").write_text("not a checkpoint")
    with pytest.raises(DataError, match="text.pt: cannot read checkpoint"):
        load_backbone(target, tmp_path / "text.pt")

    class Payload:
        def __reduce__(self):
            return (print, ("unpickled",))

    torch.save({"model": Payload()}, tmp_path / "pickle.pt")
    with pytest.raises(DataError, match="pickle.pt: cannot read checkpoint .*only weights are loaded"):
        load_backbone(target, tmp_path / "pickle.pt")
    other_task = tmp_path / "detector.ckpt"
    torch.save({"state_dict": {"model.head.weight": torch.zeros(2)}, "hyper_parameters": {"config": {}}}, other_task)
    with pytest.raises(DataError, match="detector.ckpt.*model.backbone"):
        load_backbone(target, other_task)
