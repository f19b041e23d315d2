"""An image's ``annotated`` flag in a scored split: ``false`` leaves the frame out of tracking and concept scoring,
and anything but true or false (``"false"``, ``"no"``, ``0``, ``null``, ``1``, a NumPy bool) is one DataError naming
the split, ``images[i].annotated`` and the value -- read as true, those scored an unlabelled frame as labelled
(J&F 0.80 and HOTA 0.67 instead of 1.0 on the cases below)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.evaluation.conftest import evaluate_cli
from vision.data.masks import encode_mask, mask_to_bbox
from vision.errors import DataError
from vision.evaluation.evaluate import evaluate

H = W = 8
#: The frame of each case that carries no ground truth although the object is there (and predicted).
UNLABELLED = 1
SCORE = {"tracking": "J&F", "concept": "HOTA"}
NOT_BOOLS: list[Any] = ["false", "no", 0, None, 1, "true", 0.0, [], {}]


def _square() -> np.ndarray:
    mask = np.zeros((H, W), bool)
    mask[2:6, 2:6] = True
    return mask


def scored_case(task: str, flag: Any) -> tuple[dict, list[dict]]:
    """One video of three frames and one object, labelled on frames 0 and 2; frame 1 carries ``annotated: flag``.
    The results find the object on every frame: with ``annotated: false`` they score 1.0."""
    images = [{"id": t + 1, "video_id": 1, "frame_index": t, "width": W, "height": H, "file_name": f"{t}.png"}
              for t in range(3)]
    images[UNLABELLED]["annotated"] = flag
    mask = encode_mask(_square())
    annotations = [{"id": t + 1, "image_id": t + 1, "category_id": 1, "track_id": 10, "segmentation": mask,
                    "bbox": mask_to_bbox(_square()), "area": 16.0, "iscrowd": 0} for t in (0, 2)]
    video: dict = {"id": 1, "name": "v"}
    if task == "concept":
        video["concepts"] = [1]
    split = {"videos": [video], "images": images, "annotations": annotations,
             "tracks": [{"id": 10, "video_id": 1, "category_id": 1}], "categories": [{"id": 1, "name": "mug"}]}
    if task == "tracking":
        results = [{"video_id": 1, "image_id": t + 1, "track_id": 10, "segmentation": mask, "score": 0.9}
                   for t in range(3)]
    else:
        results = [{"video_id": 1, "image_id": t + 1, "track_id": 7, "category_id": 1, "phrase": "mug",
                    "segmentation": mask, "bbox": mask_to_bbox(_square()), "score": 0.9, "prompt_type": "concept"}
                   for t in range(3)]
    return split, results


@pytest.mark.parametrize("task", ["tracking", "concept"])
def test_a_frame_marked_annotated_false_is_not_scored(task):
    split, results = scored_case(task, False)
    assert evaluate(split, results, task)[SCORE[task]] == pytest.approx(1.0)
    split, results = scored_case(task, True)
    assert evaluate(split, results, task)[SCORE[task]] < 0.9  # the frame's prediction is then a false positive
    split, results = scored_case(task, False)
    del split["images"][UNLABELLED]["annotated"]  # absent: annotated
    assert evaluate(split, results, task)[SCORE[task]] < 0.9


@pytest.mark.parametrize("task", ["tracking", "concept"])
@pytest.mark.parametrize("flag", [*NOT_BOOLS, np.False_, np.True_], ids=repr)
def test_an_annotated_flag_that_is_not_true_or_false_is_refused_by_evaluate(task, flag):
    split, results = scored_case(task, flag)
    with pytest.raises(DataError) as info:
        evaluate(split, results, task)
    assert info.value.field == f"images[{UNLABELLED}].annotated"
    assert f"images[{UNLABELLED}].annotated={flag!r}: expected true or false" in str(info.value)


def _files(tmp_path: Path, task: str, flag: Any) -> list[str]:
    split, results = scored_case(task, flag)
    (tmp_path / "split.json").write_text(json.dumps(split))
    (tmp_path / "results.json").write_text(json.dumps(results))
    return ["--split", str(tmp_path / "split.json"), "--results", str(tmp_path / "results.json"), "--task", task,
            "--out", str(tmp_path / "out" / "metrics.json")]


@pytest.mark.parametrize("task", ["tracking", "concept"])
@pytest.mark.parametrize("flag", NOT_BOOLS, ids=repr)
def test_the_command_line_refuses_it_in_one_line_and_writes_nothing(tmp_path, capsys, task, flag):
    args = _files(tmp_path, task, flag)
    assert evaluate_cli.main(args) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1, captured.err
    assert lines[0].startswith(f"error: {tmp_path / 'split.json'}: images[{UNLABELLED}].annotated={flag!r}: "
                               "expected true or false, got ")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("task", ["tracking", "concept"])
def test_vision_evaluate_exits_2_on_annotated_false_as_a_string(tmp_path, task):
    """The installed command, end to end: one ``error:`` line, exit 2, no metrics file; ``false`` scores 1.0."""
    command = Path(sys.executable).parent / "vision-evaluate"
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    proc = subprocess.run([str(command), *_files(tmp_path, task, "false")], capture_output=True, text=True,
                          check=False, env=env, timeout=300)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip().splitlines() == [
        f"error: {tmp_path / 'split.json'}: images[{UNLABELLED}].annotated='false': expected true or false, got str"]
    assert not (tmp_path / "out").exists()
    proc = subprocess.run([str(command), *_files(tmp_path, task, False)], capture_output=True, text=True,
                          check=False, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert json.loads((tmp_path / "out" / "metrics.json").read_text())[SCORE[task]] == pytest.approx(1.0)
