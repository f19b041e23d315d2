"""Low-density OOV prompt synthesis (the VOS recipe in the text space).

:class:`ClassGaussianBank` keeps one FIFO queue of region embeddings per vocabulary class (``queue_size`` each,
oldest dropped first). From the queues it fits class means ``mu_c`` and one shared covariance
``Sigma = mean_c,i (z_ci - mu_c)(z_ci - mu_c)^T + eps I``, draws ``samples_per_class`` points from each
``N(mu_c, Sigma)`` and keeps the ``keep_per_class`` with the lowest log-likelihood under their own class: these
are the virtual outliers, used as region-level OOV prompts (trained into the OOV column of the classifier).
"""

from __future__ import annotations

import torch

from vision.errors import InputError

__all__ = ["ClassGaussianBank"]


class ClassGaussianBank:
    """Per-class FIFO queues + class-conditional Gaussians with a shared covariance.

    Args:
        num_classes: ``K``. dim: embedding dimension ``D``. queue_size: entries per class (VOS: 1000).
        min_per_class: a class takes part in fitting / sampling once its queue holds this many entries.
        eps: ridge added to the covariance diagonal (VOS: 1e-4).
    """

    def __init__(self, num_classes: int, dim: int, queue_size: int = 1000, min_per_class: int = 16,
                 eps: float = 1e-4) -> None:
        if num_classes < 1 or dim < 1 or queue_size < 1:
            raise InputError(f"num_classes, dim and queue_size must be >= 1, got {num_classes}, {dim}, {queue_size}")
        self.num_classes, self.dim, self.queue_size = int(num_classes), int(dim), int(queue_size)
        self.min_per_class = int(min(min_per_class, queue_size))
        self.eps = float(eps)
        self.queues = torch.zeros(num_classes, queue_size, dim)
        self.counts = torch.zeros(num_classes, dtype=torch.int64)  # entries ever pushed per class
        self.heads = torch.zeros(num_classes, dtype=torch.int64)  # next write position

    def to(self, device: torch.device) -> "ClassGaussianBank":
        self.queues = self.queues.to(device)
        return self

    def state_dict(self) -> dict[str, torch.Tensor]:
        """The queues and their counters (what a checkpoint must hold for training to resume exactly)."""
        return {"queues": self.queues.detach().cpu().clone(), "counts": self.counts.clone(),
                "heads": self.heads.clone()}

    def load_state_dict(self, state: dict[str, torch.Tensor]) -> None:
        """Restore :meth:`state_dict`; the shapes must match this bank's ``(K, queue_size, D)``."""
        queues = state["queues"]
        if tuple(queues.shape) != tuple(self.queues.shape) or state["counts"].shape != self.counts.shape \
                or state["heads"].shape != self.heads.shape:
            raise InputError(f"the saved OOV bank has queues {tuple(queues.shape)}, this one "
                             f"{tuple(self.queues.shape)} (classes, queue_size, dim)")
        self.queues = queues.to(device=self.queues.device, dtype=self.queues.dtype).clone()
        self.counts = state["counts"].to(torch.int64).clone()
        self.heads = state["heads"].to(torch.int64).clone()

    def push(self, embeddings: torch.Tensor, labels: torch.Tensor) -> None:
        """Append ``embeddings [M, D]`` (detached) with class ``labels [M]`` in 0..K-1 to their FIFO queues."""
        if embeddings.ndim != 2 or embeddings.shape[1] != self.dim or labels.shape[0] != embeddings.shape[0]:
            raise InputError(f"push expects embeddings [M, {self.dim}] and labels [M]; got "
                             f"{tuple(embeddings.shape)} and {tuple(labels.shape)}")
        if self.queues.device != embeddings.device:
            self.queues = self.queues.to(embeddings.device)
        embeddings = embeddings.detach()
        for c in torch.unique(labels).tolist():
            if not 0 <= c < self.num_classes:
                raise InputError(f"label {c} out of range 0..{self.num_classes - 1}")
            rows = embeddings[labels == c][-self.queue_size:]
            m = rows.shape[0]
            idx = (int(self.heads[c]) + torch.arange(m)) % self.queue_size
            self.queues[c, idx.to(self.queues.device)] = rows.to(self.queues.dtype)
            self.heads[c] = (int(self.heads[c]) + m) % self.queue_size
            self.counts[c] += m

    def filled(self) -> torch.Tensor:
        """``[K]`` number of valid entries per queue."""
        return self.counts.clamp(max=self.queue_size)

    def ready_classes(self) -> torch.Tensor:
        """Indices of classes with at least ``min_per_class`` entries."""
        return torch.nonzero(self.filled() >= self.min_per_class).flatten()

    def entries(self, c: int) -> torch.Tensor:
        """Valid entries of class ``c``: ``[n_c, D]``."""
        return self.queues[c, : int(self.filled()[c])]

    def fit(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Fit the Gaussians over the ready classes: ``(classes [K'], means [K', D], covariance [D, D])``."""
        classes = self.ready_classes()
        if classes.numel() == 0:
            raise InputError("no class has enough queued embeddings to fit a Gaussian yet")
        means, centred = [], []
        for c in classes.tolist():
            rows = self.entries(c)
            mu = rows.mean(dim=0)
            means.append(mu)
            centred.append(rows - mu)
        x = torch.cat(centred, dim=0).double()
        cov = x.t() @ x / x.shape[0] + self.eps * torch.eye(self.dim, dtype=torch.float64, device=x.device)
        return classes, torch.stack(means).double(), cov

    def all_entries(self, max_rows: int | None = None, generator: torch.Generator | None = None) -> torch.Tensor:
        """All valid entries ``[n, D]`` (a random subset of ``max_rows`` when given)."""
        rows = torch.cat([self.entries(c) for c in range(self.num_classes)], dim=0)
        if max_rows is not None and rows.shape[0] > max_rows:
            pick = torch.randperm(rows.shape[0], generator=generator)[:max_rows].to(rows.device)
            rows = rows[pick]
        return rows

    def synthesize(self, samples_per_class: int = 1000, keep_per_class: int = 2,
                   generator: torch.Generator | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """Draw ``samples_per_class`` from each ready class's Gaussian and keep the ``keep_per_class`` least likely.

        Returns ``(outliers [K' * keep, D] float32, class_of_each [K' * keep])``. The log-likelihood of a sample
        is taken under its own class Gaussian (``MultivariateNormal(mu_c, Sigma).log_prob``).
        """
        classes, means, cov = self.fit()
        chol = torch.linalg.cholesky(cov)
        out, owners = [], []
        for row, c in enumerate(classes.tolist()):
            noise = torch.randn(samples_per_class, self.dim, generator=generator, dtype=torch.float64)
            noise = noise.to(means.device)
            samples = means[row] + noise @ chol.t()
            dist = torch.distributions.MultivariateNormal(means[row], scale_tril=chol)
            log_p = dist.log_prob(samples)
            low = log_p.topk(min(keep_per_class, samples_per_class), largest=False).indices
            out.append(samples[low])
            owners.append(torch.full((low.numel(),), c, dtype=torch.int64))
        return torch.cat(out).float(), torch.cat(owners)
