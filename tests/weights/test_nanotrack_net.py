"""NanoTrack (vision.weights.nets.nanotrack): the torch v2 network against onnxruntime on the registered ONNX pair
(the files OpenCV's TrackerNano runs), v3's strict load, and the loader's refusals (other pickle globals, wrong keys).
"""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pytest
import torch
from skimage import data as skimage_data

from vision.errors import InputError
from vision.weights.nets import nanotrack
from vision.weights.nets.nanotrack import NanoTrack, load_nanotrack
from vision.weights.store import WeightsError, weights_path


@pytest.fixture(scope="module")
def nets(pretrained_weights: Path) -> dict[str, NanoTrack]:
    return {version: load_nanotrack(version) for version in ("v2", "v3")}


def _session(model: bytes | str):
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.log_severity_level = 3
    return ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])


def _backbone_any_size() -> bytes:
    """The registered backbone graph with its fixed 255 x 255 input made free (OpenCV runs it on 127 x 127
    templates too; onnxruntime refuses a size other than the declared one)."""
    import onnx

    model = onnx.load(str(weights_path("nanotrack-v2-backbone")))
    for value in (model.graph.input[0], model.graph.output[0]):
        for axis, name in ((2, "height"), (3, "width")):
            value.type.tensor_type.shape.dim[axis].dim_param = name
    del model.graph.value_info[:]
    return model.SerializeToString()


def _crops() -> tuple[np.ndarray, np.ndarray]:
    """A real 127 x 127 template and 255 x 255 search crop (scikit-image's astronaut, her face), float
    ``[1, 3, S, S]`` 0-255."""
    image = skimage_data.astronaut()
    template = cv2.resize(image[40:240, 130:330], (127, 127))
    search = cv2.resize(image[0:400, 30:430], (255, 255))
    return tuple(np.ascontiguousarray(c.transpose(2, 0, 1)[None], np.float32) for c in (template, search))


def test_v2_matches_onnxruntime(nets: dict[str, NanoTrack]) -> None:
    """Backbone features of both crops and both head outputs within 1e-4 of the ONNX pair's (float32 sums of the
    same network in another order; the ONNX graphs have their BatchNorms folded into the convolutions)."""
    template, search = _crops()
    backbone = _session(_backbone_any_size())
    head = _session(str(weights_path("nanotrack-v2-head")))
    net = nets["v2"]
    with torch.no_grad():
        zf, xf = net.features(torch.from_numpy(template)), net.features(torch.from_numpy(search))
        logits, distances = net.head(zf, xf)
    assert zf.shape == (1, 48, 8, 8) and xf.shape == (1, 48, 16, 16)
    assert logits.shape == (1, 2, 16, 16) and distances.shape == (1, 4, 16, 16)
    np.testing.assert_allclose(zf.numpy(), backbone.run(None, {"input": template})[0], rtol=0, atol=1e-4)
    np.testing.assert_allclose(xf.numpy(), backbone.run(None, {"input": search})[0], rtol=0, atol=1e-4)
    ort_logits, ort_distances = head.run(["output1", "output2"], {"input1": zf.numpy(), "input2": xf.numpy()})
    np.testing.assert_allclose(logits.numpy(), ort_logits, rtol=0, atol=1e-4)
    np.testing.assert_allclose(distances.numpy(), ort_distances, rtol=0, atol=1e-4)


def test_v3_loads_strictly(nets: dict[str, NanoTrack]) -> None:
    """Every tensor of the v3 file fills the module (the load is strict) and its maps are 15 x 15."""
    state = nets["v3"].state_dict()
    assert len(state) == 438 and state["backbone.features.9.conv.7.weight"].shape == (96, 288, 1, 1)
    template, search = _crops()
    with torch.no_grad():
        logits, distances = nets["v3"](torch.from_numpy(template), torch.from_numpy(search))
    assert logits.shape == (1, 2, 15, 15) and distances.shape == (1, 4, 15, 15)
    assert nets["v3"].score_size == 15 and (distances > 0).all()


_UNPICKLED: list[str] = []


def _mark_unpickled() -> str:
    """What a pickled payload below would run if its file were unpickled as code."""
    _UNPICKLED.append("ran")
    return "payload"


class _Payload:
    def __reduce__(self):
        return (_mark_unpickled, ())


def test_refuses_other_globals_and_never_unpickles_code(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A checkpoint whose pickle names a global outside the NumPy allow-list is refused, naming the file and the
    global, without running it; every read passes ``weights_only=True``."""
    path = tmp_path / "crafted.pth"
    torch.save({"state_dict": NanoTrack("v2").state_dict(), "extra": _Payload()}, path)
    calls: list[dict] = []
    real_load = torch.load

    def spy(*args, **kwargs):
        calls.append(kwargs)
        return real_load(*args, **kwargs)

    monkeypatch.setattr(torch, "load", spy)
    with pytest.raises(WeightsError, match=r"crafted\.pth.*refused to unpickle.*_mark_unpickled"):
        load_nanotrack("v2", path)
    assert _UNPICKLED == [] and calls and all(call.get("weights_only") is True for call in calls)


def test_refuses_wrong_structure(pretrained_weights: Path, tmp_path: Path) -> None:
    """Another version's file, a checkpoint without a state dict, a missing file: one WeightsError naming it."""
    v2_file = weights_path("nanotrack-v2")
    with pytest.raises(WeightsError, match=rf"nanotrack-v3 at {v2_file}: keys do not match"):
        load_nanotrack("v3", v2_file)
    bare = tmp_path / "bare.pth"
    torch.save({"epoch": 3}, bare)
    with pytest.raises(WeightsError, match=r"bare\.pth: no 'state_dict'"):
        load_nanotrack("v2", bare)
    with pytest.raises(WeightsError, match="no checkpoint at"):
        load_nanotrack("v2", tmp_path / "absent.pth")
    with pytest.raises(InputError, match="unknown NanoTrack version"):
        load_nanotrack("v4")


def test_allow_list_is_exactly_numpy_scalars() -> None:
    names = {entry[1] if isinstance(entry, tuple) else f"{entry.__module__}.{entry.__qualname__}"
             for entry in nanotrack.checkpoint_safe_globals()}
    assert "numpy.core.multiarray.scalar" in names and len(names) == 3
    assert all(name.startswith("numpy") for name in names)
