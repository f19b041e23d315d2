"""Association of per-view proposals into instances, in 3D: the order of the views does not matter, so unordered
view sets and videos with long gaps are handled alike.

Each proposal, once its mask is decoded on its own view, becomes an :class:`Observation`: its mask, its 3D centroid
and extent (the median and the spread of the scene points under the mask, in the sequence's global frame), its
detector region embedding and its tracker appearance vector. :class:`Associator` adds the observations of one view
at a time to the :class:`ConceptTrack` s of the same phrase: the same-instance probability of every (track,
observation) pair comes from the learned :class:`~vision.concept.heads.AssociationHead` (or the fixed 3D-distance
rule), and the Hungarian assignment (scipy) keeps pairs at or over ``threshold``; an observation left over starts a
track. Two observations of one view never join one track. :meth:`Associator.merge` then joins tracks of a phrase
that the head calls the same instance and that never share a view (what a view order seen early splits).

Global frame: the frame and scale of the first window's point maps; later windows are mapped into it by the
similarity that fits their point maps of the shared anchor view to the global ones (:func:`window_to_global`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch
from scipy.optimize import linear_sum_assignment

from vision.alignment import umeyama
from vision.concept.heads import PAIR_FEATURES, AssociationHead, Descriptors, pair_features

__all__ = ["Observation", "ConceptTrack", "Associator", "lift_observation", "weighted", "window_to_global",
           "Similarity", "match_objects", "labelled_pairs"]

#: (scale, rotation [3, 3], translation [3]) with global = scale * R @ window + t
Similarity = tuple[float, np.ndarray, np.ndarray]

IDENTITY: Similarity = (1.0, np.eye(3), np.zeros(3))


@dataclass
class Observation:
    """One proposal on one view, lifted to 3D. ``mask [s, s]`` bool (model pixels), ``points [P, 3]`` the finite
    global-frame points under it, ``centroid [3]``, ``extent`` (RMS distance of the points to the centroid),
    ``embedding [D]`` (detector), ``appearance [C]`` (tracker), ``colour [3]`` (mean RGB in [0, 1] under the mask)."""

    view: int
    phrase: int
    box: np.ndarray
    score: float
    mask: np.ndarray
    points: np.ndarray
    centroid: np.ndarray
    extent: float
    embedding: torch.Tensor
    appearance: torch.Tensor
    colour: np.ndarray


@dataclass
class ConceptTrack:
    """An instance of a phrase: its observations (at most one per view) and their score-weighted summaries."""

    track_id: int
    phrase: int
    observations: list[Observation] = field(default_factory=list)

    @property
    def views(self) -> set[int]:
        return {o.view for o in self.observations}

    @property
    def score(self) -> float:
        """The mean score of its observations."""
        return float(np.mean([o.score for o in self.observations]))

    @property
    def best(self) -> Observation:
        return max(self.observations, key=lambda o: (o.score, -o.view))

    def summary(self) -> Descriptors:
        """Its one-row :class:`~vision.concept.heads.Descriptors`, its observations' weighted by their scores."""
        w = np.asarray([max(o.score, 1e-3) for o in self.observations], np.float64)
        return weighted(self.observations, w / w.sum())


def weighted(observations: list[Observation], weights: np.ndarray | None = None) -> Descriptors:
    """The :class:`~vision.concept.heads.Descriptors` of ``observations``: one row each, or with ``weights`` (summing
    to 1) their weighted mean as one row."""
    def stack(values: list) -> torch.Tensor:
        return torch.as_tensor(np.stack([np.asarray(v, np.float32) for v in values]))

    rows = Descriptors(centroid=stack([o.centroid for o in observations]),
                       extent=torch.as_tensor([o.extent for o in observations], dtype=torch.float32),
                       embedding=torch.stack([o.embedding.float() for o in observations]),
                       appearance=torch.stack([o.appearance.float() for o in observations]),
                       colour=stack([o.colour for o in observations]))
    if weights is None:
        return rows
    w = torch.as_tensor(weights, dtype=torch.float32)
    return Descriptors(*(((w.view(-1, *[1] * (f.ndim - 1)) * f).sum(0, keepdim=True))
                         for f in (rows.centroid, rows.extent, rows.embedding, rows.appearance, rows.colour)))


def lift_observation(view: int, phrase: int, box: np.ndarray, score: float, mask: np.ndarray, points: np.ndarray,
                     features: torch.Tensor, embedding: torch.Tensor, image: np.ndarray) -> Observation | None:
    """An :class:`Observation` from a mask ``[s, s]`` on a view with global points ``[s, s, 3]``, tracker features
    ``[C, gh, gw]`` and pixels uint8 ``[s, s, 3]``; None when the mask holds no finite point."""
    pts = points[mask]
    pts = pts[np.isfinite(pts).all(1)]
    if len(pts) == 0:
        return None
    centroid = np.median(pts, axis=0)
    extent = float(np.sqrt(((pts - centroid) ** 2).sum(1).mean()) + 1e-3)
    grid = torch.nn.functional.adaptive_avg_pool2d(torch.from_numpy(mask).float()[None, None].to(features.device),
                                                   features.shape[-2:])[0]
    denom = grid.sum()
    appearance = ((features.float() * grid).sum(dim=(1, 2)) / denom if float(denom) > 0
                  else features.float().mean(dim=(1, 2)))
    return Observation(view=view, phrase=phrase, box=np.asarray(box, np.float32), score=float(score), mask=mask,
                       points=pts.astype(np.float32), centroid=centroid, extent=extent,
                       embedding=embedding.detach().float().cpu(), appearance=appearance.detach().float().cpu(),
                       colour=image[mask].astype(np.float32).mean(0) / 255.0)


def window_to_global(window_points: np.ndarray, global_points: np.ndarray, max_points: int = 4096) -> Similarity:
    """The similarity taking a window's points of a view ``[s, s, 3]`` to the same view's global points
    ``[s, s, 3]`` (least squares over the pixels finite in both; identity when fewer than 3)."""
    a, b = window_points.reshape(-1, 3), global_points.reshape(-1, 3)
    ok = np.isfinite(a).all(1) & np.isfinite(b).all(1)
    a, b = a[ok], b[ok]
    if len(a) < 3 or not np.any(a != a[0]):
        return IDENTITY
    take = np.linspace(0, len(a) - 1, min(max_points, len(a))).round().astype(int)
    return umeyama(a[take], b[take])


def apply_similarity(sim: Similarity, points: np.ndarray) -> np.ndarray:
    """``global = s R p + t`` for points ``[..., 3]``."""
    scale, rot, trans = sim
    return (scale * points @ rot.T + trans).astype(np.float32)


def invert_similarity(sim: Similarity, points: np.ndarray) -> np.ndarray:
    """The window-frame points ``[..., 3]`` of global points (the inverse of :func:`apply_similarity`)."""
    scale, rot, trans = sim
    return ((points - trans) @ rot / max(scale, 1e-12)).astype(np.float32)


class Associator:
    """Builds the tracks of a sequence from its observations, one view at a time (module docstring).

    Args:
        head: the learned association head (None: the rule, same instance when the 3D distance of the centroids is
            under ``rule_distance``).
        threshold: the smallest same-instance probability of an assignment or a merge.
        rule_distance: the rule's distance in the normalised scene frame (mean point norm 1).
    """

    def __init__(self, head: AssociationHead | None, threshold: float = 0.5, rule_distance: float = 0.15) -> None:
        self.head = head
        self.threshold = float(threshold)
        self.rule_distance = float(rule_distance)
        self.tracks: list[ConceptTrack] = []
        self._next_id = 1

    def probabilities(self, tracks: list[ConceptTrack], observations: list[Observation]) -> np.ndarray:
        """Same-instance probabilities ``[A, B]`` of every (track, observation) pair."""
        if not tracks or not observations:
            return np.zeros((len(tracks), len(observations)))
        a, b = [t.summary() for t in tracks], weighted(observations)
        a = Descriptors(*(torch.cat([getattr(d, f) for d in a]) for f in ("centroid", "extent", "embedding",
                                                                         "appearance", "colour")))
        features = pair_features(a, b)
        if self.head is None:
            return (features[..., 0] < self.rule_distance).double().numpy()
        head_device = next(self.head.parameters()).device
        with torch.no_grad():
            return self.head(features.to(head_device)).sigmoid().double().cpu().numpy()

    def add_view(self, observations: list[Observation]) -> list[int]:
        """Assign the observations of one view (all on the same view); returns their track ids."""
        ids = [0] * len(observations)
        for phrase in sorted({o.phrase for o in observations}):
            index = [i for i, o in enumerate(observations) if o.phrase == phrase]
            obs = [observations[i] for i in index]
            tracks = [t for t in self.tracks if t.phrase == phrase and obs[0].view not in t.views]
            prob = self.probabilities(tracks, obs)
            matched: dict[int, ConceptTrack] = {}
            if prob.size:
                rows, cols = linear_sum_assignment(-np.log(np.clip(prob, 1e-9, 1.0)))
                matched = {c: tracks[r] for r, c in zip(rows, cols) if prob[r, c] >= self.threshold}
            for j, o in enumerate(obs):
                track = matched.get(j)
                if track is None:
                    track = ConceptTrack(self._next_id, phrase)
                    self._next_id += 1
                    self.tracks.append(track)
                track.observations.append(o)
                ids[index[j]] = track.track_id
        return ids

    def merge(self) -> None:
        """Join tracks of one phrase that never share a view and whose same-instance probability (the head's,
        between one track's summary and the other's best observation, both ways) is at least ``threshold``;
        the most probable pair first, until none is left. The joined track keeps the smaller id."""
        while True:
            best: tuple[float, ConceptTrack, ConceptTrack] | None = None
            # one call per round: every track's summary against every track's best observation
            prob = self.probabilities(self.tracks, [t.best for t in self.tracks])
            for i, a in enumerate(self.tracks):
                for j in range(i + 1, len(self.tracks)):
                    b = self.tracks[j]
                    if a.phrase != b.phrase or a.views & b.views:
                        continue
                    p = min(float(prob[i, j]), float(prob[j, i]))
                    if p >= self.threshold and (best is None or p > best[0]):
                        best = (p, a, b)
            if best is None:
                return
            _, a, b = best
            keep, drop = (a, b) if a.track_id < b.track_id else (b, a)
            keep.observations.extend(drop.observations)
            keep.observations.sort(key=lambda o: o.view)
            self.tracks.remove(drop)


def match_objects(observations: list[Observation], instance_ids: np.ndarray, match_iou: float) -> list[int]:
    """The ground-truth object of each observation: the instance (``instance_ids [S, s, s]``, 0 background) whose
    mask it overlaps most on its view, when their mask IoU is at least ``match_iou``, else 0."""
    objects = []
    for o in observations:
        ids = instance_ids[o.view]
        hits = np.bincount(ids[o.mask], minlength=int(ids.max()) + 1)
        best, iou = 0, 0.0
        for slot in np.nonzero(hits)[0]:
            if slot == 0:
                continue
            union = np.logical_or(ids == slot, o.mask).sum()
            if hits[slot] / union > iou:
                best, iou = int(slot), hits[slot] / union
        objects.append(best if iou >= match_iou else 0)
    return objects


def labelled_pairs(observations: list[Observation], objects: list[int]) -> tuple[torch.Tensor, torch.Tensor]:
    """The association head's training pairs: every two observations of one phrase on two different views that
    both match an object (:func:`match_objects`): their features ``[P, 6]`` and ``1.0`` where the objects are the
    same, else ``0.0`` ``[P]``."""
    index = [(i, j) for i in range(len(observations)) for j in range(i + 1, len(observations))
             if observations[i].phrase == observations[j].phrase
             and observations[i].view != observations[j].view and objects[i] and objects[j]]
    if not index:
        return torch.zeros(0, PAIR_FEATURES), torch.zeros(0)
    every = pair_features(weighted(observations), weighted(observations))  # [N, N, 6]
    rows, cols = torch.as_tensor(index).t()
    return every[rows, cols], torch.as_tensor([float(objects[i] == objects[j]) for i, j in index])
