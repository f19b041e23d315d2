"""Results gathered across ranks: one copy per key (the distributed sampler's padding dropped), in key order, the
same on every rank; the prediction writer's merged file."""

from __future__ import annotations

import json
import os
from types import SimpleNamespace

import pytest
import torch.distributed as dist
import torch.multiprocessing as mp

from vision.errors import InputError
from vision.training.collect import KeyedResults, gather_unique, log_metrics
from vision.training.writer import ResultsWriter


def test_gather_unique_in_one_process_keeps_the_first_copy_in_key_order():
    items = [((3, 4), "c"), ((1, 2), "a"), ((3, 4), "c-again"), ((2, 9), "b")]
    assert gather_unique(items) == ["a", "b", "c"]


def test_keyed_results_flatten_and_empty_after_gather():
    collector = KeyedResults()
    collector.add(7, [{"image_id": 7, "score": 0.5}])
    collector.add(2, [{"image_id": 2, "score": 0.1}, {"image_id": 2, "score": 0.2}])
    collector.add(7, [{"image_id": 7, "score": 0.9}])  # a padded repeat of item 7
    assert len(collector) == 3
    assert collector.gather() == [{"image_id": 2, "score": 0.1}, {"image_id": 2, "score": 0.2},
                                  {"image_id": 7, "score": 0.5}]
    assert len(collector) == 0 and collector.gather() == []


def _rank(rank: int, world: int, init: str, out: str) -> None:
    dist.init_process_group("gloo", init_method=init, rank=rank, world_size=world)
    try:
        # 5 items over 2 ranks as DistributedSampler(shuffle=False) deals them: rank 0 gets 0, 2, 4; rank 1 gets
        # 1, 3 and the padding item 0 again
        mine = [0, 2, 4] if rank == 0 else [1, 3, 0]
        collector = KeyedResults()
        for index in mine:
            collector.add(index, [{"image_id": index, "rank": rank}])
        gathered = collector.gather()
        with open(os.path.join(out, f"rank{rank}.json"), "w") as f:
            json.dump(gathered, f)
    finally:
        dist.destroy_process_group()


def test_gather_across_two_processes_drops_the_padding_and_agrees_on_every_rank(tmp_path):
    init = f"file://{tmp_path / 'rendezvous'}"
    mp.spawn(_rank, args=(2, init, str(tmp_path)), nprocs=2, join=True)
    ranks = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in range(2)]
    assert ranks[0] == ranks[1]
    assert [r["image_id"] for r in ranks[0]] == [0, 1, 2, 3, 4]
    assert ranks[0][0]["rank"] == 0  # the first copy of item 0 (rank 0's), not rank 1's padded repeat


def test_log_metrics_logs_finite_scalars_only():
    logged = {}
    module = SimpleNamespace(log_dict=lambda values, sync_dist: logged.update(values))
    out = log_metrics(module, "val", {"AP": 0.5, "J&F": 1, "nan": float("nan"), "flag": True, "per_class": {"a": 1}})
    assert out == logged == {"val/AP": 0.5, "val/J&F": 1.0}


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
