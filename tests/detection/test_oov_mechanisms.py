import math

import pytest
import torch
import torch.nn.functional as F

from vision.detection.attribution import attribution_evidence, dirichlet_uncertainty, mine_pseudo_oov
from vision.detection.kde import kde_density, low_density_penalty, median_bandwidth
from vision.detection.oov_synthesis import ClassGaussianBank
from vision.errors import InputError


def test_fifo_queue_keeps_latest():
    bank = ClassGaussianBank(2, 2, queue_size=3, min_per_class=2)
    bank.push(torch.tensor([[1.0, 0], [2, 0]]), torch.tensor([0, 0]))
    bank.push(torch.tensor([[3.0, 0], [4, 0], [9, 9]]), torch.tensor([0, 0, 1]))
    assert sorted(bank.entries(0)[:, 0].tolist()) == [2.0, 3.0, 4.0]  # 1 was dropped (oldest first)
    assert bank.filled().tolist() == [3, 1]
    assert bank.ready_classes().tolist() == [0]
    with pytest.raises(InputError):
        bank.push(torch.zeros(1, 2), torch.tensor([5]))


def test_bank_state_round_trips_and_refuses_another_shape():
    bank = ClassGaussianBank(2, 4, queue_size=3)
    bank.push(torch.randn(5, 4), torch.tensor([0, 0, 1, 0, 0]))
    copy = ClassGaussianBank(2, 4, queue_size=3)
    copy.load_state_dict(bank.state_dict())
    for name, value in bank.state_dict().items():
        assert torch.equal(copy.state_dict()[name], value), name
    new = torch.randn(2, 4)
    bank.push(new, torch.tensor([1, 1]))
    copy.push(new, torch.tensor([1, 1]))  # the FIFO heads continue where they were
    assert torch.equal(copy.queues, bank.queues)
    with pytest.raises(InputError, match="queues"):
        ClassGaussianBank(3, 4, queue_size=3).load_state_dict(bank.state_dict())


def test_fit_means_and_shared_covariance():
    bank = ClassGaussianBank(2, 2, queue_size=10, min_per_class=2, eps=0.0)
    a = torch.tensor([[0.0, 0], [2, 0]])
    b = torch.tensor([[10.0, 1], [10, 3]])
    bank.push(a, torch.tensor([0, 0]))
    bank.push(b, torch.tensor([1, 1]))
    classes, means, cov = bank.fit()
    assert classes.tolist() == [0, 1]
    assert torch.allclose(means.float(), torch.tensor([[1.0, 0], [10, 2]]))
    centred = torch.cat([a - a.mean(0), b - b.mean(0)])
    assert torch.allclose(cov.float(), centred.t() @ centred / 4)


def test_synthesis_keeps_lowest_likelihood():
    torch.manual_seed(0)
    bank = ClassGaussianBank(2, 3, queue_size=50, min_per_class=10)
    bank.push(torch.randn(40, 3), torch.randint(0, 2, (40,)))
    classes, means, cov = bank.fit()
    outliers, owners = bank.synthesize(samples_per_class=500, keep_per_class=4,
                                       generator=torch.Generator().manual_seed(1))
    assert outliers.shape == (8, 3) and owners.tolist() == [0] * 4 + [1] * 4
    # the kept samples are in the lowest-likelihood tail: below the 5 % quantile of fresh samples
    for row, c in enumerate(classes.tolist()):
        dist = torch.distributions.MultivariateNormal(means[row], covariance_matrix=cov)
        fresh = dist.log_prob(dist.sample((2000,)))
        kept = dist.log_prob(outliers[owners == c].double())
        assert (kept < torch.quantile(fresh, 0.05)).all()


def test_dirichlet_uncertainty_hand_values():
    evidence = torch.tensor([[0.0, 0.0], [8.0, 0.0], [1.0, 1.0]])
    # u = K / sum(e + 1): 2/2, 2/10, 2/4
    assert torch.allclose(dirichlet_uncertainty(evidence), torch.tensor([1.0, 0.2, 0.5]))


def test_attribution_is_gradient_times_input():
    torch.manual_seed(0)
    proj = torch.nn.Linear(5, 3)
    project = lambda f: F.normalize(proj(f), dim=-1)  # noqa: E731
    features = torch.randn(2, 7, 5)
    text = F.normalize(torch.randn(4, 3), dim=-1)
    tau = 0.5
    evidence = attribution_evidence(features, project, text, tau, clamp=50.0)
    assert evidence.shape == (2, 4)
    b, k = 1, 2
    logits = project(features[b]) @ text[k] / tau
    n = int(logits.argmax())
    f = features[b, n].clone().requires_grad_(True)
    score = project(f) @ text[k] / tau
    (g,) = torch.autograd.grad(score, f)
    assert math.isclose(float(evidence[b, k]), math.exp(float((g * f).sum().detach())), rel_tol=1e-4)
    assert proj.weight.grad is None  # nothing reaches the model


def test_mining_labels_confident_unmatched_regions_of_uncertain_images():
    k = 2
    boxes = torch.tensor([[[0.0, 0, 10, 10], [0, 0, 10, 11], [30, 30, 40, 40], [50, 50, 60, 60]]]).repeat(2, 1, 1)
    objectness = torch.tensor([[5.0, 4.0, 5.0, -5.0]]).repeat(2, 1)
    labels = torch.full((2, 4), k)
    gt = [torch.tensor([[30.0, 30, 40, 40]]), torch.tensor([[30.0, 30, 40, 40]])]
    new, mined = mine_pseudo_oov(torch.tensor([0.1, 0.9]), objectness, boxes, labels, gt, k, fraction=0.5,
                                 min_objectness=0.5, topk=3)
    assert mined.tolist() == [False, True]
    assert new[0].tolist() == [k, k, k, k]  # the confident image is left alone
    # regions 0 and 1 (confident, overlapping each other, away from the GT) become OOV; the GT region and the
    # low-objectness one do not
    assert new[1].tolist() == [k + 1, k + 1, k, k]
    assert labels.eq(k).all()  # input not modified


def test_kde_density_and_penalty():
    ref = torch.tensor([[0.0, 0.0], [0.0, 1.0], [1.0, 0.0]])
    h = median_bandwidth(ref)
    assert math.isclose(float(h), 1.0)  # distances 1, 1, sqrt(2)
    p = kde_density(torch.tensor([[0.0, 0.0]]), ref)
    expected = (1 + 2 * math.exp(-0.5)) / 3
    assert math.isclose(float(p), expected, rel_tol=1e-6)
    z = torch.tensor([[0.2, 0.2]], requires_grad=True)
    loss = low_density_penalty(z, ref)
    loss.backward()
    with torch.no_grad():
        moved = z - 0.5 * z.grad
    assert float(low_density_penalty(moved, ref)) < float(loss)  # descent leaves the dense IV region
    assert float(low_density_penalty(torch.zeros(0, 2), ref)) == 0.0
    with pytest.raises(InputError):
        median_bandwidth(torch.zeros(1, 2))
