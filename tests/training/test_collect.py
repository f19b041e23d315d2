"""Keyed items gathered across ranks: one copy per key (the distributed sampler's padding dropped), in key order;
the prediction writer's merged file. (Gathering across two processes: tests/training/test_evaluator.py.)"""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from vision.errors import InputError
from vision.training.collect import gather_unique
from vision.training.writer import ResultsWriter


def test_gather_unique_in_one_process_keeps_the_first_copy_in_key_order():
    items = [((3, 4), "c"), ((1, 2), "a"), ((3, 4), "c-again"), ((2, 9), "b")]
    assert gather_unique(items) == ["a", "b", "c"]


def test_results_writer_merges_and_writes_one_file(tmp_path):
    writer = ResultsWriter(str(tmp_path / "out" / "results.json"))
    trainer = SimpleNamespace(default_root_dir=str(tmp_path), is_global_zero=True)
    writer.on_predict_epoch_start(trainer, None)
    writer.write_on_batch_end(trainer, None, [(2, [{"image_id": 2}]), (1, [{"image_id": 1}])], None, None, 0, 0)
    writer.write_on_batch_end(trainer, None, [(1, [{"image_id": 1}])], None, None, 1, 0)
    writer.on_predict_epoch_end(trainer, None)
    assert json.loads((tmp_path / "out" / "results.json").read_text()) == [{"image_id": 1}, {"image_id": 2}]
    default = ResultsWriter()
    assert default.path(trainer) == tmp_path / "predictions.json"


def test_results_writer_refuses_a_prediction_that_is_not_keyed_results(tmp_path):
    writer = ResultsWriter(str(tmp_path / "r.json"))
    module = SimpleNamespace()
    with pytest.raises(InputError, match=r"predict_step must return a list of \(key, results\) pairs"):
        writer.write_on_batch_end(None, module, {"image_id": 1}, None, None, 0, 0)
