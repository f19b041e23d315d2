"""The low-density prior: a Gaussian kernel density estimate of in-vocabulary embeddings.

``p(z) = mean_i exp(-||z - z_i||^2 / (2 h^2))`` over reference IV embeddings ``z_i``; the bandwidth ``h`` is the
median pairwise distance between the references (the median heuristic). The penalty ``mean_j p(z_j)`` over
OOV embeddings (mined pseudo-OOV regions and the OOV prompt vectors) pushes them out of dense IV regions.
"""

from __future__ import annotations

import torch

from vision.errors import InputError

__all__ = ["median_bandwidth", "kde_density", "low_density_penalty"]


def median_bandwidth(reference: torch.Tensor) -> torch.Tensor:
    """Median of the pairwise Euclidean distances (i < j) between the rows of ``reference [M, D]``; a scalar."""
    if reference.ndim != 2 or reference.shape[0] < 2:
        raise InputError(f"the KDE needs at least 2 reference rows [M, D]; got shape {tuple(reference.shape)}")
    dist = torch.cdist(reference, reference)
    i, j = torch.triu_indices(reference.shape[0], reference.shape[0], offset=1, device=reference.device)
    return dist[i, j].median().clamp_min(1e-6)


def kde_density(query: torch.Tensor, reference: torch.Tensor, bandwidth: torch.Tensor | float | None = None
                ) -> torch.Tensor:
    """Gaussian KDE ``p(query) [Q]`` for ``query [Q, D]`` against ``reference [M, D]`` (values in [0, 1]).
    ``bandwidth`` defaults to :func:`median_bandwidth` of the reference (detached)."""
    if query.ndim != 2 or reference.ndim != 2 or query.shape[1] != reference.shape[1]:
        raise InputError(f"kde_density expects query [Q, D] and reference [M, D]; got {tuple(query.shape)} "
                         f"and {tuple(reference.shape)}")
    h = median_bandwidth(reference.detach()) if bandwidth is None else torch.as_tensor(bandwidth)
    sq = torch.cdist(query, reference.detach()).pow(2)
    return torch.exp(-sq / (2 * h ** 2)).mean(dim=1)


def low_density_penalty(oov_embeddings: torch.Tensor, reference: torch.Tensor) -> torch.Tensor:
    """Mean KDE density of ``oov_embeddings [Q, D]`` under the IV ``reference [M, D]`` (0 when Q = 0)."""
    if oov_embeddings.shape[0] == 0:
        return oov_embeddings.sum() * 0.0
    return kde_density(oov_embeddings, reference).mean()
