"""vision.detection.diagnostics on hand-made inputs (no checkpoint, no data files)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from vision.detection import diagnostics as diag
from vision.detection.head import level_points


def _grid():
    """The tiny detector's 64-px location grid: strides 4, 8, 16 (16x16, 8x8, 4x4)."""
    cpu = torch.device("cpu")
    points = torch.cat([level_points(16, 16, 4.0, cpu), level_points(8, 8, 8.0, cpu), level_points(4, 4, 16.0, cpu)])
    strides = torch.cat([torch.full((256,), 4.0), torch.full((64,), 8.0), torch.full((16,), 16.0)])
    return points, strides


def test_size_bins_edges():
    boxes = torch.tensor([[0, 0, 7.9, 7.9], [0, 0, 8, 8], [0, 0, 4, 16], [0, 0, 15.9, 15.9], [0, 0, 16, 16],
                          [10, 10, 50, 60]], dtype=torch.float32)
    assert diag.size_bins(boxes) == ["small", "medium", "medium", "medium", "large", "large"]


def test_prior_boxes_are_the_initial_head_boxes():
    boxes = diag.prior_boxes(torch.tensor([[6.0, 6.0], [8.0, 8.0]]), torch.tensor([4.0, 16.0]))
    half = math.log(2.0)  # softplus(0)
    expected = torch.tensor([[6 - 4 * half, 6 - 4 * half, 6 + 4 * half, 6 + 4 * half],
                             [8 - 16 * half, 8 - 16 * half, 8 + 16 * half, 8 + 16 * half]])
    assert torch.allclose(boxes, expected, atol=1e-5)


def test_assignment_statistics_hand_made_boxes():
    points, strides = _grid()
    boxes = torch.tensor([[20.0, 20.0, 36.0, 36.0],     # 16 px: several stride-4 positives
                          [10.5, 10.5, 11.5, 11.5],     # 1 px between every location centre: no positive
                          [2.0, 2.0, 62.0, 62.0]])      # 60 px: its own positives on a coarser level
    stats = diag.assignment_statistics(points, strides, boxes, torch.tensor([0, 1, 2]), num_classes=3)
    pos = stats["positives"]
    assert pos[0] > 1 and pos[1] == 0 and pos[2] > 0
    assert stats["min_stride"][0] == 4.0 and stats["min_stride"][1] == 0.0 and stats["min_stride"][2] > 4.0
    assert stats["ideal_iou"][0] == pytest.approx(1.0) and stats["ideal_iou"][2] == pytest.approx(1.0)
    assert stats["ideal_iou"][1] == 0.0 and stats["prior_iou"][1] == 0.0
    # a stride-4 prior box is a 5.5 px square: far under IoU 0.5 with a 16 px box
    assert 0.0 < stats["prior_iou"][0] < 0.5
    assert stats["any_prior_iou"][0] >= stats["prior_iou"][0]
    rows = diag.summarise_assignment(stats, diag.size_bins(boxes))
    by_bin = {r["bin"]: r for r in rows}
    assert set(by_bin) == {"small", "large", "all"}
    assert by_bin["small"]["zero_share"] == 1.0 and by_bin["small"]["ideal_recall50"] == 0.0
    assert by_bin["large"]["n"] == 2 and by_bin["large"]["ideal_recall50"] == 1.0 and by_bin["large"]["min"] >= 1
    assert by_bin["all"]["n"] == 3 and by_bin["all"]["zero_share"] == pytest.approx(1 / 3)
    assert by_bin["all"]["mean"] == pytest.approx(pos.mean())


def test_assignment_statistics_no_boxes():
    points, strides = _grid()
    stats = diag.assignment_statistics(points, strides, torch.zeros(0, 4), torch.zeros(0, dtype=torch.int64), 3)
    assert all(len(v) == 0 for v in stats.values())


def test_best_matches_takes_the_highest_scoring_overlap():
    gt = torch.tensor([[0.0, 0.0, 10.0, 10.0], [40.0, 40.0, 50.0, 50.0]])
    dets = torch.tensor([[0.0, 0.0, 10.0, 10.0],     # IoU 1, low score
                         [0.0, 0.0, 10.0, 8.0],      # IoU 0.8, high score
                         [0.0, 0.0, 10.0, 3.0],      # IoU 0.3, highest score
                         [45.0, 45.0, 55.0, 55.0]])  # IoU 25/175 with the second box
    match, best = diag.best_matches(gt, dets, torch.tensor([0.1, 0.5, 0.9, 0.7]))
    assert match.tolist() == [1, -1]
    assert best == pytest.approx([1.0, 25 / 175])
    match, best = diag.best_matches(gt, torch.zeros(0, 4), torch.zeros(0))
    assert match.tolist() == [-1, -1] and best.tolist() == [0.0, 0.0]


def test_confusion_matrix_rows_normalised():
    counts = diag.confusion_matrix([0, 0, 0, 1, 1], [0, 1, 3, 1, 1], num_rows=3, num_cols=4)
    assert counts.tolist() == [[1, 1, 0, 1], [0, 2, 0, 0], [0, 0, 0, 0]]
    frac = diag.row_normalise(counts)
    assert np.allclose(frac[0], [1 / 3, 1 / 3, 0, 1 / 3]) and frac[1].tolist() == [0, 1, 0, 0]
    assert frac[2].tolist() == [0, 0, 0, 0]


def test_cosine_table_and_nearest_other():
    sim, mean_off, nearest = diag.cosine_table(torch.tensor([[1.0, 0.0], [1.0, 2.0], [0.0, 3.0], [1.0, -0.1]]))
    assert np.allclose(np.diag(sim), 1.0, atol=1e-6)
    assert sim[0, 2] == pytest.approx(0.0, abs=1e-6) and sim[0, 1] == pytest.approx(1 / math.sqrt(5))
    assert nearest == [3, 2, 1, 0]
    off = sim[~np.eye(4, dtype=bool)]
    assert mean_off == pytest.approx(off.mean())


def test_nearest_mean_accuracy():
    train_x = np.array([[1.0, 0.0], [2.0, 0.2], [0.0, 1.0], [0.1, 3.0]])
    train_y = np.array([5, 5, 9, 9])
    test_x = np.array([[3.0, 0.5], [0.2, 1.0], [1.0, 0.9]])
    assert diag.nearest_mean_accuracy(train_x, train_y, test_x, np.array([5, 9, 9])) == pytest.approx(2 / 3)
    assert math.isnan(diag.nearest_mean_accuracy(train_x, train_y, np.zeros((0, 2)), np.zeros(0, np.int64)))
