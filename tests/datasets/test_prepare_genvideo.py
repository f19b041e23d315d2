"""GenVideo-layout folders (real/, fake/<generator>/) -> our split format."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.datasets.staging import add_user_file, assert_left_as_it_was, fail_late, snapshot
from vision.data.coco import load_split
from vision.data.video import write_video
from vision.errors import DataError
from vision.prepare import genvideo as prepare_genvideo


@pytest.fixture()
def layout(tmp_path: Path) -> Path:
    root = tmp_path / "genvideo"
    rng = np.random.default_rng(0)
    clip = rng.integers(0, 255, (3, 16, 16, 3), dtype=np.uint8)
    for i in range(6):
        write_video(root / "real" / f"r{i}.mp4", clip, preset="ultrafast")
    for gen in ("sora", "pika"):
        for i in range(3):
            write_video(root / "fake" / gen / "sub" / f"{gen}{i}.mp4", clip, preset="ultrafast")
    (root / "fake" / "pika" / "broken.mp4").write_bytes(b"not a video")
    return root


def test_convert_writes_valid_splits(layout: Path, tmp_path: Path) -> None:
    paths = prepare_genvideo.convert(layout, tmp_path / "out", val=0.2, test=0.3)
    videos = []
    for side, path in paths.items():
        split = load_split(path)  # validates the schema and that every file exists
        videos += list(split.videos.values())
    assert len(videos) == 12  # the broken file is skipped
    gens = {v.get("generator") for v in videos if v["label"] == "generated"}
    assert gens == {"sora", "pika"}
    assert sum(v["label"] == "real" for v in videos) == 6
    again = prepare_genvideo.convert(layout, tmp_path / "out2", val=0.2, test=0.3)
    assert {k: p.name for k, p in again.items()} == {k: p.name for k, p in paths.items()}
    assert [v["name"] for v in load_split(again["train"]).videos.values()] == \
        [v["name"] for v in load_split(paths["train"]).videos.values()]


def test_holdout_generator_goes_to_test(layout: Path, tmp_path: Path) -> None:
    paths = prepare_genvideo.convert(layout, tmp_path / "out", val=0.0, test=0.3, holdout="sora", link=True)
    test = load_split(paths["test"]).videos.values()
    assert {v.get("generator") for v in test if v["label"] == "generated"} == {"sora"}
    train = load_split(paths["train"]).videos.values()
    assert "sora" not in {v.get("generator") for v in train}


def test_bad_layout_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="real/"):
        prepare_genvideo.scan(tmp_path)


def test_the_cli_converts_and_reports_a_bad_layout_in_one_line(layout: Path, tmp_path: Path, capsys) -> None:
    assert prepare_genvideo.main([str(layout), "--out", str(tmp_path / "out"), "--test", "0.3"]) == 0
    assert "train:" in capsys.readouterr().out and (tmp_path / "out" / "train.json").is_file()
    assert prepare_genvideo.main([str(tmp_path / "empty"), "--out", str(tmp_path / "o2")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error:") and "real/" in err[0]


def test_a_late_failure_leaves_the_old_output_whole(layout: Path, tmp_path: Path, capsys, monkeypatch) -> None:
    out = tmp_path / "out"
    add_user_file(out)
    assert prepare_genvideo.main([str(layout), "--out", str(out), "--test", "0.3"]) == 0
    before = snapshot(out)
    written = fail_late(monkeypatch, prepare_genvideo, "write_split")  # after every video was placed
    capsys.readouterr()
    assert prepare_genvideo.main([str(layout), "--out", str(out), "--test", "0.6", "--holdout", "sora"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert written and len(err) == 1 and err[0].startswith("error:") and "injected late failure" in err[0]
    assert_left_as_it_was(out, before, {"genvideo", "out"})
