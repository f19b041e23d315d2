import pytest
import torch

from vision.errors import InputError
from vision.geometry.model import BACKBONE_CONFIGS, create_backbone

HW = 64


@pytest.fixture(scope="module")
def model():
    torch.manual_seed(0)
    m = create_backbone("tiny").eval()
    with torch.no_grad():  # make the first-frame and other-frame tokens clearly different
        m.aggregator.camera_token.normal_(0, 1.0)
        m.aggregator.register_token.normal_(0, 1.0)
    return m


def images(b, s, seed=0, hw=HW):
    return torch.rand(b, s, 3, hw, hw, generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("b,s", [(1, 1), (1, 3), (2, 3)])
def test_output_shapes(model, b, s):
    with torch.no_grad():
        out = model(images(b, s))
    cfg = BACKBONE_CONFIGS["tiny"]
    p = 1 + 4 + (HW // 8) ** 2
    assert len(out["tokens"]) == cfg["depth"]
    assert all(t.shape == (b, s, p, 2 * cfg["embed_dim"]) for t in out["tokens"])
    assert out["patch_start_idx"] == 5
    assert out["pose_enc"].shape == (b, s, 9) and len(out["pose_enc_list"]) == 4
    assert out["extrinsics"].shape == (b, s, 3, 4) and out["intrinsics"].shape == (b, s, 3, 3)
    assert out["depth"].shape == (b, s, HW, HW, 1) and out["depth_conf"].shape == (b, s, HW, HW)
    assert out["world_points"].shape == (b, s, HW, HW, 3) and out["world_points_conf"].shape == (b, s, HW, HW)
    assert (out["depth"] > 0).all() and (out["depth_conf"] > 1).all() and (out["world_points_conf"] > 1).all()
    feats = model.frame_features(images(b, s))
    assert feats.shape == (b, s, 2 * cfg["embed_dim"], HW // 8, HW // 8)


def test_unbatched_input_and_list_of_views(model):
    x = images(1, 2)
    with torch.no_grad():
        ref = model(x)["depth"]
        torch.testing.assert_close(model(x[0])["depth"], ref)
        torch.testing.assert_close(model([x[0, 0], x[0, 1]])["depth"], ref)


def _outputs(out):
    return {k: out[k] for k in ("pose_enc", "depth", "depth_conf", "world_points", "world_points_conf")}


def test_permutation_equivariance_of_non_first_frames(model):
    x = images(1, 4, seed=1)
    perm = torch.tensor([0, 3, 1, 2])
    with torch.no_grad():
        ref = _outputs(model(x))
        out = _outputs(model(x[:, perm]))
    for key in ref:
        torch.testing.assert_close(out[key], ref[key][:, perm], atol=1e-4, rtol=1e-4)


def test_frame0_uses_first_frame_tokens(model):
    x = images(1, 3, seed=2)
    swap = torch.tensor([1, 0, 2])
    with torch.no_grad():
        ref = model(x)
        out = model(x[:, swap])
        # frame 0 carries the first-frame camera/register tokens: swapping it with frame 1 is not equivariant
        assert not torch.allclose(out["tokens"][-1], ref["tokens"][-1][:, swap], atol=1e-3)
        assert not torch.allclose(out["pose_enc"], ref["pose_enc"][:, swap], atol=1e-4)
        saved = model.aggregator.camera_token.clone(), model.aggregator.register_token.clone()
        try:  # with identical first/other tokens the model becomes fully permutation-equivariant
            model.aggregator.camera_token[:, 1] = model.aggregator.camera_token[:, 0]
            model.aggregator.register_token[:, 1] = model.aggregator.register_token[:, 0]
            ref = model(x)
            out = model(x[:, swap])
            torch.testing.assert_close(out["tokens"][-1], ref["tokens"][-1][:, swap], atol=1e-4, rtol=1e-4)
            torch.testing.assert_close(out["depth"], ref["depth"][:, swap], atol=1e-4, rtol=1e-4)
        finally:
            model.aggregator.camera_token.copy_(saved[0])
            model.aggregator.register_token.copy_(saved[1])


def test_gradient_checkpointing_same_outputs_and_grads():
    torch.manual_seed(0)
    plain = create_backbone("tiny", depth=2, dpt_layers=(0, 1, 1, 1), enable_points=False).train()
    ckpt = create_backbone("tiny", depth=2, dpt_layers=(0, 1, 1, 1), enable_points=False,
                           use_checkpoint=True).train()
    ckpt.load_state_dict(plain.state_dict())
    x = images(1, 2, seed=3, hw=32)
    results = []
    for m in (plain, ckpt):
        out = m(x)
        loss = out["depth"].mean() + out["pose_enc"].square().mean()
        loss.backward()
        grads = {n: p.grad.clone() for n, p in m.named_parameters() if p.grad is not None}
        results.append((out["depth"].detach(), grads))
    torch.testing.assert_close(results[0][0], results[1][0])
    assert results[0][1].keys() == results[1][1].keys() and len(results[0][1]) > 0
    for name in results[0][1]:
        torch.testing.assert_close(results[0][1][name], results[1][1][name], atol=1e-6, rtol=1e-5)


def test_chunked_dpt_equals_unchunked(model):
    x = images(2, 5, seed=4)
    with torch.no_grad():
        tokens, start, x = model.aggregate(x)
        full = model.predict_points(tokens, x, start, frames_chunk_size=None)
        chunked = model.predict_points(tokens, x, start, frames_chunk_size=2)
        depth_full = model.predict_depth(tokens, x, start, frames_chunk_size=None)
        depth_chunked = model.predict_depth(tokens, x, start, frames_chunk_size=1)
    for key in full:
        torch.testing.assert_close(chunked[key], full[key], atol=1e-5, rtol=1e-5)
    for key in depth_full:
        torch.testing.assert_close(depth_chunked[key], depth_full[key], atol=1e-5, rtol=1e-5)


def test_keep_only_needed_layers_and_head_flags(model):
    small = create_backbone("tiny", dpt_layers=(0, 1, 1, 2), keep_only_needed_layers=True).eval()
    small.load_state_dict(model.state_dict())
    full = create_backbone("tiny", dpt_layers=(0, 1, 1, 2)).eval()
    full.load_state_dict(model.state_dict())
    x = images(1, 2, seed=5)
    with torch.no_grad():
        a, b = small(x), full(x)
    assert a["tokens"][0] is not None and a["tokens"][2] is not None and a["tokens"][3] is not None
    assert all(t is not None for t in b["tokens"])
    for key in ("depth", "world_points", "pose_enc"):
        torch.testing.assert_close(a[key], b[key])
    cam_only = create_backbone("tiny", enable_depth=False, enable_points=False)
    with torch.no_grad():
        out = cam_only(x)
    assert "pose_enc" in out and "depth" not in out and "world_points" not in out
    assert cam_only.depth_head is None and cam_only.point_head is None
    with pytest.raises(InputError, match="enable_depth"):
        cam_only.predict_depth(out["tokens"], out["images"], out["patch_start_idx"])


def test_forward_runs_only_the_heads_named(model):
    x = images(1, 2, seed=6)
    with torch.no_grad():
        full, some = model(x), model(x, heads=("camera", "points"))
    assert model.heads == ("camera", "depth", "points")
    assert "depth" not in some and "depth_conf" not in some
    for key in ("world_points", "world_points_conf", "extrinsics", "intrinsics", "pose_enc"):
        torch.testing.assert_close(some[key], full[key])
    with pytest.raises(InputError, match=r"\['rays'\] are not in this GeometryBackbone"):
        model(x, heads=("camera", "rays"))


@pytest.mark.parametrize("bad,match", [
    (torch.rand(3, HW, HW), "shape"),
    (torch.rand(1, 1, 1, 2, 3, HW, HW), "shape"),
    (torch.rand(1, 2, 4, HW, HW), "3 channels"),
    ((torch.rand(1, 2, 3, HW, HW) * 255).to(torch.uint8), "dtype"),
    (torch.rand(1, 2, 3, HW, HW) * 255, "max="),
    (torch.rand(1, 2, 3, HW, HW) - 0.5, "min="),
    (torch.rand(1, 2, 3, 60, HW), "H=60"),
    ([torch.rand(3, HW, HW), torch.rand(3, 56, HW)], "different sizes"),
    ("not a tensor", "str"),
])
def test_bad_input_raises_input_error(model, bad, match):
    with pytest.raises(InputError, match=match):
        model(bad)


def test_factory_rejects_unknown_size():
    with pytest.raises(InputError, match="unknown backbone size"):
        create_backbone("huge")


@pytest.mark.parametrize("name", ["base", "vggt_1b"])
def test_larger_sizes_build_on_meta_device(name):
    with torch.device("meta"):
        model = create_backbone(name)
        out = model(torch.empty(1, 2, 3, 28, 28))
    assert out["depth"].shape == (1, 2, 28, 28, 1) and out["pose_enc"].shape == (1, 2, 9)
