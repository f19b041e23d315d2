"""The one evaluation interface of the LightningModules: items kept one per key (the distributed sampler's padded
repeats dropped) in key order, the same on every rank; scored by vision.evaluation.evaluate and logged under one
naming rule (validate -> val/, test -> test/); nothing scored in the sanity check or for an empty epoch."""

from __future__ import annotations

import json
import os
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from vision.errors import InputError
from vision.evaluation.evaluate import evaluate
from vision.training.evaluator import STAGE_PREFIX, TaskEvaluator, log_losses, log_metrics, metric_prefix

#: three 20x20 images with one box of category 1 each
SPLIT = {
    "images": [{"id": i, "width": 20, "height": 20, "file_name": f"{i}.png"} for i in (1, 2, 3)],
    "annotations": [{"id": i, "image_id": i, "category_id": 1, "bbox": [2.0, 2.0, 8.0, 8.0], "area": 64.0,
                     "iscrowd": 0} for i in (1, 2, 3)],
    "categories": [{"id": 1, "name": "cube"}],
}


def _hit(image_id: int) -> dict:
    return {"image_id": image_id, "category_id": 1, "bbox": [2.0, 2.0, 8.0, 8.0], "score": 0.9}


def _miss(image_id: int) -> dict:
    return {"image_id": image_id, "category_id": 1, "bbox": [12.0, 12.0, 6.0, 6.0], "score": 0.95}


def _module(split_path: Path, sanity_checking: bool = False) -> SimpleNamespace:
    """What the evaluator reads of a LightningModule: its trainer's state and datamodule, and ``log_dict``."""
    module = SimpleNamespace(logged={})
    module.log_dict = lambda values, sync_dist: module.logged.update(values)
    module.trainer = SimpleNamespace(sanity_checking=sanity_checking,
                                     datamodule=SimpleNamespace(split_path=lambda stage: str(split_path)))
    return module


@pytest.fixture()
def split_path(tmp_path: Path) -> Path:
    path = tmp_path / "split.json"
    path.write_text(json.dumps(SPLIT))
    return path


def test_gather_keeps_the_first_copy_per_key_in_key_order_then_empties():
    evaluator = TaskEvaluator("detection")
    evaluator.process(7, [{"image_id": 7, "score": 0.5}])
    evaluator.process(2, [{"image_id": 2, "score": 0.1}, {"image_id": 2, "score": 0.2}])
    evaluator.process(7, [{"image_id": 7, "score": 0.9}])  # a padded repeat of item 7
    assert len(evaluator) == 3
    assert evaluator.gather() == [[{"image_id": 2, "score": 0.1}, {"image_id": 2, "score": 0.2}],
                                  [{"image_id": 7, "score": 0.5}]]
    assert len(evaluator) == 0 and evaluator.gather() == []
    evaluator.process(1, [])
    evaluator.reset()
    assert len(evaluator) == 0


def test_evaluate_scores_one_copy_per_item_and_logs_under_the_stage_prefix(split_path):
    evaluator = TaskEvaluator("detection")
    for key in (3, 1, 2):
        evaluator.process(key, [_hit(key)])
    evaluator.process(2, [_miss(2)])  # the padded repeat: dropped, so the score stays perfect
    module = _module(split_path)
    metrics = evaluator.evaluate(module, "validate")
    assert metrics == evaluate(SPLIT, [_hit(1), _hit(2), _hit(3)], "detection")
    assert metrics["AP"] == pytest.approx(1.0) and metrics["num_results"] == 3
    assert module.logged and all(name.startswith("val/") for name in module.logged)
    assert module.logged["val/AP"] == pytest.approx(1.0)
    assert len(evaluator) == 0

    evaluator.process(1, [_miss(1)])
    test_module = _module(split_path)
    metrics = evaluator.evaluate(test_module, "test")
    assert metrics["num_results"] == 1 and test_module.logged["test/num_results"] == 1.0
    assert all(name.startswith("test/") for name in test_module.logged)


def test_items_without_results_are_scored_an_empty_epoch_is_not(split_path):
    evaluator = TaskEvaluator("detection")
    evaluator.process(1, [])  # a detector that found nothing still scores (AP 0)
    module = _module(split_path)
    metrics = evaluator.evaluate(module, "validate")
    assert metrics["num_results"] == 0 and module.logged["val/AP"] == 0.0
    empty = _module(split_path)
    assert evaluator.evaluate(empty, "validate") is None and empty.logged == {}


def test_the_sanity_check_empties_the_evaluator_and_scores_nothing(split_path):
    evaluator = TaskEvaluator("detection")
    evaluator.process(1, [_hit(1)])
    module = _module(split_path, sanity_checking=True)
    assert evaluator.evaluate(module, "validate") is None
    assert module.logged == {} and len(evaluator) == 0


def test_hooks_turn_items_into_results_and_choose_split_and_options(split_path):
    calls: list[Any] = []

    def results(stage: str, items: list[Any]) -> list[dict]:
        calls.append(("results", stage, list(items)))
        return [_hit(image_id) for image_id in items]

    def split(stage: str, scored: list[dict]) -> dict:
        calls.append(("split", stage, len(scored)))
        return SPLIT

    def options(stage: str) -> dict[str, Any]:
        calls.append(("options", stage))
        return {"category_ids": [1]}

    evaluator = TaskEvaluator("detection", results=results, split=split, options=options)
    for key in (2, 1, 2):
        evaluator.process(key, key)
    metrics = evaluator.evaluate(_module(Path("not-read.json")), "test")
    assert metrics == evaluate(SPLIT, [_hit(1), _hit(2)], "detection", category_ids=[1])
    assert calls == [("results", "test", [1, 2]), ("split", "test", 2), ("options", "test")]


def test_one_naming_rule():
    assert STAGE_PREFIX == {"train": "train", "validate": "val", "test": "test"}
    assert [metric_prefix(s) for s in ("train", "validate", "test")] == ["train", "val", "test"]
    with pytest.raises(InputError, match="stage must be one of train, validate, test, got 'val'"):
        metric_prefix("val")
    with pytest.raises(InputError, match="unknown task 'segmentation'"):
        TaskEvaluator("segmentation")


def test_log_metrics_logs_finite_scalars_only():
    logged = {}
    module = SimpleNamespace(log_dict=lambda values, sync_dist: logged.update(values))
    out = log_metrics(module, "validate", {"AP": 0.5, "J&F": 1, "nan": float("nan"), "flag": True,
                                           "per_class": {"a": 1}})
    assert out == logged == {"val/AP": 0.5, "val/J&F": 1.0}


def test_log_losses_syncs_outside_training():
    calls: list[tuple[str, Any, dict]] = []
    module = SimpleNamespace(log=lambda name, value, **kw: calls.append((name, value, kw)),
                             log_dict=lambda values, **kw: calls.append(("dict", dict(values), kw)))
    losses = {"loss": torch.tensor(1.0), "loss_box": torch.tensor(0.5)}
    log_losses(module, "train", losses, 4)
    log_losses(module, "validate", losses, 4)
    assert [c[0] for c in calls] == ["train/loss", "dict", "val/loss", "dict"]
    assert list(calls[1][1]) == ["train/loss_box"] and list(calls[3][1]) == ["val/loss_box"]
    assert calls[0][2] == {"prog_bar": True, "batch_size": 4, "sync_dist": False}
    assert calls[2][2]["sync_dist"] and calls[3][2] == {"batch_size": 4, "sync_dist": True}


def _rank(rank: int, world: int, init: str, out: str) -> None:
    dist.init_process_group("gloo", init_method=init, rank=rank, world_size=world)
    try:
        # 5 items over 2 ranks as DistributedSampler(shuffle=False) deals them: rank 0 gets 0, 2, 4; rank 1 gets
        # 1, 3 and the padding item 0 again
        mine = [0, 2, 4] if rank == 0 else [1, 3, 0]
        evaluator = TaskEvaluator("detection")
        for index in mine:
            evaluator.process(index, [{"image_id": index, "rank": rank}])
        gathered = [result for results in evaluator.gather() for result in results]
        with open(os.path.join(out, f"rank{rank}.json"), "w") as f:
            json.dump(gathered, f)
    finally:
        dist.destroy_process_group()


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_gather_across_two_processes_drops_the_padding_and_agrees_on_every_rank(tmp_path):
    init = f"file://{tmp_path / 'rendezvous'}"
    mp.spawn(_rank, args=(2, init, str(tmp_path)), nprocs=2, join=True)
    ranks = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in range(2)]
    assert ranks[0] == ranks[1]
    assert [r["image_id"] for r in ranks[0]] == [0, 1, 2, 3, 4]
    assert ranks[0][0]["rank"] == 0  # the first copy of item 0 (rank 0's), not rank 1's padded repeat
