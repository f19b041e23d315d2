import torch

from vision.detection.head import level_points
from vision.detection.losses import assign_targets, detection_losses, level_size_ranges


def _grid():
    points = torch.cat([level_points(16, 16, 4.0, torch.device("cpu")), level_points(8, 8, 8.0, torch.device("cpu")),
                        level_points(4, 4, 16.0, torch.device("cpu"))])
    strides = torch.cat([torch.full((256,), 4.0), torch.full((64,), 8.0), torch.full((16,), 16.0)])
    return points, strides


def test_level_points_and_ranges():
    pts = level_points(2, 3, 4.0, torch.device("cpu"))
    assert pts.tolist() == [[2, 2], [6, 2], [10, 2], [2, 6], [6, 6], [10, 6]]
    ranges = level_size_ranges(torch.tensor([4.0, 8.0, 16.0]))
    assert ranges.tolist() == [[0, 16], [16, 32], [32, float("inf")]]


def test_assign_small_box_on_fine_level():
    points, strides = _grid()
    box = torch.tensor([[20.0, 20.0, 36.0, 36.0]])  # 16 px: max(ltrb) <= 16 near its centre -> stride-4 level
    labels, targets, matched = assign_targets(points, strides, box, torch.tensor([3]), num_classes=5)
    pos = labels == 3
    assert pos.sum() > 0
    assert (strides[pos] == 4.0).all()
    assert (labels[~pos] == 5).all()  # background = K
    assert torch.equal(targets[pos], box.expand(int(pos.sum()), 4))
    inside = (points[pos, 0] > 20) & (points[pos, 0] < 36) & (points[pos, 1] > 20) & (points[pos, 1] < 36)
    assert inside.all()
    assert (matched[pos] == 0).all() and (matched[~pos] == -1).all()


def test_assign_smallest_box_wins_and_empty():
    points, strides = _grid()
    big = [8.0, 8.0, 56.0, 56.0]
    small = [26.0, 26.0, 38.0, 38.0]
    labels, _, matched = assign_targets(points, strides, torch.tensor([big, small]), torch.tensor([0, 1]), 2)
    centre = ((points - 32).abs().sum(-1) < 3) & (strides == 4.0)
    assert (labels[centre] == 1).all()
    assert (labels == 0).any()  # the big box is assigned on a coarser level
    labels, targets, matched = assign_targets(points, strides, torch.zeros(0, 4), torch.zeros(0, dtype=torch.long), 2)
    assert (labels == 2).all() and (matched == -1).all() and targets.abs().sum() == 0


def test_losses_finite_and_differentiable():
    b, n, k = 2, 10, 3
    objectness = torch.randn(b, n, requires_grad=True)
    boxes = torch.tensor([0.0, 0.0, 10.0, 10.0]).repeat(b, n, 1).requires_grad_(True)
    logits = torch.randn(b, n, k + 2, requires_grad=True)
    labels = torch.full((b, n), k)
    labels[0, 0], labels[1, 2], labels[1, 3] = 1, 0, k + 1  # two positives and one OOV location
    targets = torch.zeros(b, n, 4)
    targets[0, 0] = torch.tensor([0.0, 0.0, 10.0, 10.0])
    targets[1, 2] = torch.tensor([5.0, 5.0, 15.0, 15.0])
    losses = detection_losses(objectness, boxes, logits, labels, targets, k)
    assert set(losses) == {"loss_objectness", "loss_box", "loss_cls"}
    total = sum(losses.values())
    total.backward()
    assert torch.isfinite(total)
    assert objectness.grad.abs().sum() > 0 and logits.grad.abs().sum() > 0 and boxes.grad.abs().sum() > 0
    # GIoU: one perfect box (0) and one half-overlapping box
    expected = (0.0 + (1 - (25 / 175 - (225 - 175) / 225))) / 2
    assert abs(float(losses["loss_box"].detach()) - expected) < 1e-5


def test_quality_focal_loss_targets_the_iou():
    """QFL: zero where the probability equals the soft target; the objectness target of a positive is its box IoU,
    1 at an OOV location, 0 elsewhere (and the same call without ``quality`` is the focal loss on 1 / 0 targets)."""
    from vision.detection.losses import quality_focal_loss

    target = torch.tensor([0.0, 0.3, 1.0])
    exact = torch.logit(torch.tensor([1e-6, 0.3, 1 - 1e-6]))
    assert float(quality_focal_loss(exact, target)) < 1e-6
    assert float(quality_focal_loss(torch.zeros(3), target)) > 0.05
    k = 2
    labels = torch.tensor([[0, k, k + 1]])
    boxes = torch.tensor([[[0.0, 0, 10, 10], [0, 0, 1, 1], [0, 0, 1, 1]]])
    box_targets = torch.tensor([[[0.0, 0, 10, 5], [0, 0, 0, 0], [0, 0, 0, 0]]])  # IoU 0.5 at the positive
    logits = torch.zeros(1, 3, k + 2)
    want = torch.logit(torch.tensor([[0.5, 1e-6, 1 - 1e-6]]))
    assert float(detection_losses(want, boxes, logits, labels, box_targets, k, quality=True)["loss_objectness"]) < 1e-5
    assert float(detection_losses(want, boxes, logits, labels, box_targets, k)["loss_objectness"]) > 1e-3
