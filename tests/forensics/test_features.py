"""Measuring a split's features (vision.forensics.features.split_features): several processes give exactly the
features of one, tools holding a backbone stay in the calling process, a failing video names its file; the tools
measure on one torch thread whatever the caller's setting, so features do not depend on the machine's cores."""

from __future__ import annotations

import json
import math
import os
import shutil
from pathlib import Path

import pytest
import torch

from tests.forensics.conftest import FRAMES, SIZE
from vision.errors import InputError, VideoError
from vision.forensics.features import ToolBackbone, load_clip, resolve_workers, split_features
from vision.forensics.lightning import ForensicFeatureDataModule
from vision.forensics.task import ForensicsConfig, build_backbone
from vision.forensics.tools import build_tools, run_tools

# a classical tool, the one whose networks' last bits follow the thread count, and a backbone tool
TOOLS = ["spectrum", "twoview", "geometry"]


def _same(a: list[dict[str, float]], b: list[dict[str, float]]) -> bool:
    """Equal feature rows, nan equal to nan."""
    return len(a) == len(b) and all(
        x.keys() == y.keys() and all(x[k] == y[k] or (math.isnan(x[k]) and math.isnan(y[k])) for k in x)
        for x, y in zip(a, b))


@pytest.fixture(scope="module")
def tools_with_backbone() -> list:
    torch.manual_seed(0)
    backbone = build_backbone(ForensicsConfig(tools=TOOLS, geometry="tiny", geometry_image_size=32))
    return build_tools(TOOLS, backbone=ToolBackbone(backbone))


@pytest.mark.slow  # starts processes
def test_processes_measure_exactly_what_one_process_does(tiny_split, tools_with_backbone):
    serial, labels, videos = split_features(tiny_split["train"], tools_with_backbone, SIZE, FRAMES, workers=1)
    pooled, labels2, videos2 = split_features(tiny_split["train"], tools_with_backbone, SIZE, FRAMES, workers=2)
    assert _same(serial, pooled) and labels.tolist() == labels2.tolist() and videos == videos2
    assert len(serial) == 12 and any(k.startswith("geometry.") for k in serial[0])
    assert any(math.isfinite(v) for row in serial for k, v in row.items() if k.startswith("twoview."))
    # each row is the video's own: the first video measured alone gives the first row
    path = tiny_split["root"] / json.loads(Path(tiny_split["train"]).read_text())["videos"][0]["file_name"]
    alone = run_tools(load_clip(path, size=SIZE, max_frames=FRAMES), tools_with_backbone)
    assert _same([{k: v for r in alone.values() for k, v in r.features.items()}], serial[:1])


@pytest.mark.slow  # starts processes
def test_the_cache_written_by_processes_is_read_back(tiny_split, tools_with_backbone, tmp_path):
    first, _, _ = split_features(tiny_split["train"], tools_with_backbone, SIZE, FRAMES, cache_dir=tmp_path, workers=2)
    assert len(list(tmp_path.glob("train_*.json"))) == len(TOOLS)
    again, _, _ = split_features(tiny_split["train"], tools_with_backbone, SIZE, FRAMES, cache_dir=tmp_path, workers=1)
    assert _same(first, again)


def test_features_do_not_depend_on_the_callers_threads(tiny_split):
    clip = load_clip(tiny_split["root"] / "videos" / "train" / "real_0.mp4", size=SIZE, max_frames=FRAMES)
    tools = build_tools(["twoview", "semantic"])
    before = torch.get_num_threads()
    try:
        measured = []
        for threads in (1, 2):
            torch.set_num_threads(threads)
            results = run_tools(clip, tools)
            assert torch.get_num_threads() == threads  # restored after the tools
            measured.append({k: v for r in results.values() for k, v in r.features.items()})
    finally:
        torch.set_num_threads(before)
    assert _same(measured[:1], measured[1:])


def test_threads_measuring_at_once_take_turns(tiny_split):
    from concurrent.futures import ThreadPoolExecutor

    clip = load_clip(tiny_split["root"] / "videos" / "train" / "real_0.mp4", size=SIZE, max_frames=FRAMES)
    tools = build_tools(["twoview"])
    alone = run_tools(clip, tools)["twoview"].features
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        with ThreadPoolExecutor(3) as pool:
            results = list(pool.map(lambda _: run_tools(clip, tools)["twoview"].features, range(3)))
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)
    assert _same([alone] * 3, results)


@pytest.mark.slow  # starts processes
def test_a_failing_video_names_its_file(tiny_split, tmp_path):
    shutil.copytree(tiny_split["root"] / "videos", tmp_path / "videos")
    split = json.loads(Path(tiny_split["train"]).read_text())
    broken = tmp_path / split["videos"][5]["file_name"]
    broken.write_bytes(broken.read_bytes()[:200])  # truncated
    path = tmp_path / "train.json"
    path.write_text(json.dumps(split))
    with pytest.raises(VideoError, match=broken.name):
        split_features(path, build_tools(["spectrum"]), SIZE, FRAMES, workers=2)


def test_workers_are_checked():
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    assert resolve_workers(0) == cores and resolve_workers(3) == 3
    for bad in (-1, 1.5, True, "2"):
        with pytest.raises(InputError, match="workers"):
            resolve_workers(bad)
    with pytest.raises(InputError, match="workers"):
        ForensicFeatureDataModule("train.json", "val.json", tools=["spectrum"], workers=-2)
