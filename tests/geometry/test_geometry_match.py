"""GeometryModule with the cross-view correspondence loss: it trains the projection and the evaluation scores the
cameras registered from its matches."""

import torch

from vision.data.datamodule import MultiViewDataModule
from vision.synthetic.scenes import write_split
from vision.geometry.results import evaluate_geometry
from vision.geometry.lightning import GeometryModule
from vision.geometry.losses import geometry_losses
from vision.geometry.task import GeometryConfig, build_model


def test_match_loss_trains_the_projection_and_adds_a_match_pose_row(tmp_path):
    torch.manual_seed(0)
    train = write_split(tmp_path, "train", scenes=2, views=4, size=32, mode="unordered", seed=5, threads=1)
    off = GeometryModule(config={"size": "tiny", "image_size": 32})
    assert off.model.match is None
    module = GeometryModule(config={"size": "tiny", "image_size": 32, "match_dim": 16}, match_weight=1.0)
    data = MultiViewDataModule(str(train), str(train), views=4, batch_size=2, image_size=32, num_workers=0)
    data.setup("fit")
    batch = next(iter(data.train_dataloader()))
    losses, _ = geometry_losses(module.model.backbone, batch, match=module.model.match, match_weight=1.0)
    assert losses["loss_match"].item() > 0 and 0.0 <= losses["match_accuracy"].item() <= 1.0
    losses["loss"].backward()
    assert module.model.match.proj.weight.grad.abs().sum() > 0
    # the projection is in the optimiser's groups
    optimised = {id(p) for group in module.param_groups() for p in group["params"]}
    assert id(module.model.match.proj.weight) in optimised

    results = evaluate_geometry(module.model, train, views=4, image_size=32)
    assert 0.0 <= results["match_pose/AUC@30"] <= 1.0 and results["clips"] == 2
    without = build_model(GeometryConfig(size="tiny", image_size=32))
    without.backbone.load_state_dict(module.model.backbone.state_dict())
    plain = evaluate_geometry(without, train, views=4, image_size=32)
    assert not any(k.startswith("match_pose/") for k in plain)
    assert plain["abs_rel"] == results["abs_rel"]
