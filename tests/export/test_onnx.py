"""vision.export: each graph exports to ONNX and onnxruntime matches PyTorch on views of the synthetic renderer, at
the graph's stated tolerance, for two different batch / view / class / pair counts on one exported graph."""

from __future__ import annotations

import copy

import pytest
import torch

pytest.importorskip("onnxruntime")
pytestmark = pytest.mark.long  # the dynamo exporter traces four models

from vision.errors import DataError, InputError  # noqa: E402
from vision.export.graphs import example_views, graphs_of  # noqa: E402
from vision.tracking.onnx import _decoder_graph  # noqa: E402
from vision.tasks import TASKS  # noqa: E402
from vision.export.onnx import check_graph, export_graph, onnx_session  # noqa: E402
from vision.tasks import get_task  # noqa: E402


def _graphs(task: str) -> tuple:
    torch.manual_seed(0)
    config = get_task(task).resolve("config")()
    model = get_task(task).build_model(config).eval()
    return model, config, graphs_of(task, model, config)


def _dims(path) -> dict[str, list]:
    session = onnx_session(path)
    return {meta.name: list(meta.shape) for meta in session.get_inputs()}


@pytest.fixture(scope="module")
def detector_onnx(tmp_path_factory) -> tuple:
    """``(model, graph, path)``: the detector exported once (the dynamo exporter traces the model: tens of seconds
    on 2 cores) for the tests that read it; a test that changes the model works on a copy."""
    model, _, (graph,) = _graphs("detection")
    return model, graph, export_graph(graph, tmp_path_factory.mktemp("onnx") / "detector.onnx")


@pytest.mark.slow
def test_detector_exports_with_dynamic_batch_and_vocabulary(detector_onnx):
    model, graph, path = detector_onnx
    assert _dims(path) == {"images": ["batch", 3, 64, 64], "text": ["classes", 384]}
    check_graph(graph, path)  # 2 images, 3 classes (the trace's)
    text = torch.nn.functional.normalize(torch.randn(7, 384, generator=torch.Generator().manual_seed(1)), dim=-1)
    differences = check_graph(graph, path, (example_views(64, 3, seed=5), text))  # 3 images, 7 classes
    assert differences["labels"] == 0.0
    # the OOV decision is in the graph: with the OOV prompt's opposite as the one class, the OOV column wins at
    # the locations whose embedding leans to the prompt (label -1) and the class elsewhere (label 0)
    inputs = (example_views(64, 2, seed=6), -model.classifier.prompts()[:1].detach())
    with torch.no_grad():
        boxes, scores, labels, embeddings = graph.module(*inputs)
    assert (labels == -1).any() and (labels == 0).any()
    assert labels.shape == scores.shape == boxes.shape[:2] and embeddings.shape[-1] == 384
    check_graph(graph, path, inputs)  # labels exactly equal


@pytest.mark.slow
def test_geometry_exports_with_dynamic_batch_and_views(tmp_path):
    _, _, (graph,) = _graphs("geometry")
    path = export_graph(graph, tmp_path / "geometry.onnx")
    assert _dims(path) == {"views": ["batch", "views", 3, 64, 64]}
    assert graph.output_names == ("depth", "depth_conf", "world_points", "world_points_conf", "extrinsics",
                                  "intrinsics")
    check_graph(graph, path)  # 2 clips of 2 views
    check_graph(graph, path, (example_views(64, 3, seed=5)[None],))  # 1 clip of 3 views


@pytest.mark.slow
def test_tracker_encoder_and_mask_decoder_export(tmp_path):
    model, _, (encoder, decoder) = _graphs("tracking")
    path = export_graph(encoder, tmp_path / "encoder.onnx")
    check_graph(encoder, path)  # 2 views
    check_graph(encoder, path, (example_views(64, 4, seed=5)[None],))  # 4 views
    path = export_graph(decoder, tmp_path / "decoder.onnx")
    check_graph(decoder, path)  # 2 views x 2 objects = 4 pairs
    other = _decoder_graph(model, example_views(64, 3, seed=5)[None]).inputs  # 6 pairs
    check_graph(decoder, path, other)
    # more prompt tokens, the extra ones padding: PyTorch drops them, the graph attends past them to the same result
    image, pe, sparse, pad, hires, *maps = other
    sparse = torch.cat([sparse, torch.randn(sparse.shape[0], 2, sparse.shape[2])], dim=1)
    pad = torch.cat([pad, torch.ones(pad.shape[0], 2, dtype=torch.bool)], dim=1)
    check_graph(decoder, path, (image, pe, sparse, pad, hires, *maps))


@pytest.mark.slow
def test_multiplexed_mask_decoder_exports_with_dynamic_views_objects_and_tokens(tmp_path):
    from vision.tracking.task import TrackingConfig, build_model

    torch.manual_seed(0)
    config = TrackingConfig(decoder_style="multiplex")
    model = build_model(config).eval()
    _, decoder = graphs_of("tracking", model, config)
    path = export_graph(decoder, tmp_path / "decoder.onnx")
    assert _dims(path)["sparse"][:3] == [1, "objects", "tokens"] and _dims(path)["maps"][:2] == ["views", "objects"]
    check_graph(decoder, path)  # 2 views, 2 objects
    image, pe, sparse, pad, hires, maps = _decoder_graph(model, example_views(64, 3, seed=5)[None]).inputs
    check_graph(decoder, path, (image, pe, sparse, pad, hires, maps))  # 3 views
    # 5 objects and 2 more prompt tokens (padding: PyTorch drops them, the graph attends past them alike)
    sparse = torch.cat([sparse.repeat(1, 3, 1, 1)[:, :5], torch.randn(1, 5, 2, sparse.shape[-1])], dim=2)
    pad = torch.cat([pad.repeat(1, 3, 1)[:, :5], torch.ones(1, 5, 2, dtype=torch.bool)], dim=2)
    check_graph(decoder, path, (image, pe, sparse, pad, hires, maps.repeat(1, 3, 1, 1, 1)[:, :5]))


def test_forensics_and_the_control_export_nothing():
    assert {t.name for t in TASKS if t.has("export_graphs")} == {"detection", "geometry", "tracking"}
    with pytest.raises(InputError, match="forensics task has no ONNX export"):
        graphs_of("forensics", torch.nn.Identity(), None)
    from vision.tracking.task import TrackingConfig, build_model

    config = TrackingConfig(architecture="memory_bank")
    with pytest.raises(InputError, match="'memory_bank' tracker has no ONNX export"):
        graphs_of("tracking", build_model(config), config)


@pytest.mark.slow
def test_a_graph_that_differs_is_reported(detector_onnx):
    """The check compares against the module: a graph exported from other weights fails it, naming the output."""
    _, graph, path = detector_onnx
    graph = copy.deepcopy(graph)
    with torch.no_grad():
        graph.module.model.head.objectness.bias.add_(1.0)
    with pytest.raises(DataError, match="scores: differs from PyTorch"):
        check_graph(graph, path)
