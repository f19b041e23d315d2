"""G2TAM and the control implement the predictor's model interface (vision.tracking.interface)."""

from __future__ import annotations

import torch

from vision.tracking.baseline import MemoryBankTracker
from vision.tracking.model import G2TAM
from vision.tracking.prompts import Prompts


def _prompts(model) -> Prompts:
    p = Prompts.empty(1, 2, (32, 32), num_points=1, num_memory=2, text_dim=model.text_dim, memory_dim=model.dim)
    p.valid[:] = True
    p.view[0, 0], p.points[0, 0, 0], p.labels[0, 0, 0] = 1, torch.tensor([5.0, 6.0]), 1
    p.view[0, 1], p.points[0, 1, 0], p.labels[0, 1, 0] = 2, torch.tensor([20.0, 9.0]), 1
    return p


@torch.no_grad()
def test_both_models_encode_for_tracking_and_decode_a_subset_of_views():
    torch.manual_seed(0)
    images = torch.rand(1, 3, 3, 32, 32)
    for model, geometry in ((G2TAM(image_size=32, dim=32).eval(), True),
                            (MemoryBankTracker(image_size=32, dim=32).eval(), False)):
        assert model.uses_geometry_memory is geometry and model.image_size == 32
        encoded = model.tracking_encoding(images)
        want = {"images", "feats", "hires"} | ({"world_points", "extrinsics", "intrinsics", "depth"} if geometry
                                               else set())
        assert set(encoded) == want
        if geometry:
            assert encoded["depth"].shape == (1, 3, 32, 32, 1)
        prompts = _prompts(model)
        full = model.decode(encoded, prompts)
        part = model.decode(encoded, prompts, [2, 0])
        for key in ("masks", "iou", "presence"):
            torch.testing.assert_close(part[key], full[key][:, [2, 0]], rtol=1e-4, atol=1e-5)


@torch.no_grad()
def test_solved_tracking_encoding_is_the_depth_head_on_the_solver_cameras():
    from vision.geometry.camera import depth_to_world_points
    from vision.geometry.solver import CameraSolver

    torch.manual_seed(0)
    images = torch.rand(1, 3, 3, 32, 32)
    model = G2TAM(image_size=32, dim=32).eval()
    solver = CameraSolver()
    plain, solved = model.tracking_encoding(images), model.solved_tracking_encoding(images, solver)
    assert set(solved) == set(plain)
    for key in plain:
        assert solved[key].shape == plain[key].shape
    for key in ("images", "feats", "hires", "intrinsics"):  # the heads' choice changes the geometry only
        torch.testing.assert_close(solved[key], plain[key])
    geometry = model.backbone(images, heads=("camera", "depth"))
    cameras = solver.solve_outputs(geometry, geometry["extrinsics"]).float()
    torch.testing.assert_close(solved["extrinsics"], cameras)
    torch.testing.assert_close(solved["world_points"],
                               depth_to_world_points(geometry["depth"][..., 0], cameras, geometry["intrinsics"]))
    torch.testing.assert_close(solved["depth"], geometry["depth"], rtol=1e-4, atol=1e-5)  # z in each view's camera
