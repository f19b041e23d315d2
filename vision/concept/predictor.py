"""ConceptPredictor: every instance of one or several noun phrases (and/or exemplar boxes), found, segmented and
tracked with persistent ids across a video or an unordered view set.

Usage::

    predictor = ConceptPredictor.from_checkpoint("runs/concept/tiny/checkpoints/last.ckpt")
    state = predictor.init_state("clip.mp4")                 # or frames [T, H, W, 3] uint8, or image paths
    predictor.add_concept(state, "mug")                      # each phrase its own set of ids
    predictor.add_concept(state, "chair", exemplars=[(3, [10, 20, 60, 90], True)])   # (view, XYXY box, positive)
    for view, obj_ids, concepts, masks, scores in predictor.propagate(state):   # masks bool [N, H, W]
        ...
    state.presence                     # [T, K] probability that concept k is on view t
    state.instances                    # obj_id -> concept index
    predictor.correct(state, obj_id=3, view=5, points=[[40, 30]], labels=[1])   # one click fixes one instance
    state.tracker.export_ply("mug_1.ply", obj_id=1)

How (module docstrings of :mod:`vision.concept.proposals` and :mod:`vision.concept.association`):

1. the detector runs once per view for all concepts (proposals, with rejection of what is outside them, and each
   view's presence features); the presence head gives ``presence [T, K]``;
2. the tracker's backbone encodes the views window by window (windows of ``window_size`` views that all hold view
   0, so every window's point maps are mapped into one global frame); each proposal's mask is decoded on its own
   view from its box and lifted to 3D; the proposals are associated into instances in 3D, one view at a time, then
   split tracks are merged;
3. on a view where an instance has a proposal, its proposal's mask is its mask. With ``fill_missed`` (off by
   default; its ablation is in ``docs/concept.md``) every instance is also decoded on every view by the tracker,
   prompted by the box of its best proposal and carrying its 3D points as memory, and on views without a proposal
   (a missed detection, a partial occlusion) the tracker's mask is kept where its presence passes. An instance
   corrected with :meth:`ConceptPredictor.correct` is decoded by the tracker from the correction on every view.
   A phrase's instances are dropped on views where its presence is under ``presence_threshold``; an instance's
   score on a view is its proposal's score (or its mean score times the tracker's presence) times the phrase's
   presence.

Conventions: boxes XYXY and points ``(x, y)`` in pixels of the input frames; masks come back at the input size.
Ids are unique across concepts; instance ids are stable across calls of :meth:`propagate` on the same state.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Sequence

import numpy as np
import torch

from vision.concept.association import (Associator, ConceptTrack, Similarity, apply_similarity, invert_similarity,
                                        lift_observation, window_to_global)
from vision.concept.heads import scene_presence_features
from vision.concept.proposals import ViewProposals, exemplar_embedding, phrase_rows, propose
from vision.concept.task import ConceptConfig, ConceptModel, load
from vision.data.io import MAX_INPUT_PIXELS
from vision.data.resize import resize_nearest
from vision.device import autocast, load_for_inference
from vision.errors import InputError
from vision.text.user_text import check_text
from vision.tracking.predictor import TrackerPredictor
from vision.tracking.prompts import Prompts, box_to_points
from vision.tracking.propagation import WindowDecoder, set_visual_prompt, windows
from vision.tracking.session import ObjectPrompt, TrackerState, as_int

__all__ = ["Predictor", "Concept", "ConceptState", "ConceptPredictor", "check_exemplar", "new_phrase"]


def check_exemplar(view: Any, box: Any, width: int, height: int, views: int | None,
                   what: str = "exemplar") -> tuple[int, np.ndarray]:
    """An exemplar's ``(view, box [4] float64)`` checked against an input of ``views`` views (None: unknown) of
    ``width`` x ``height`` pixels: the view exists, the box is 4 finite numbers XYXY with ``0 <= x0 < x1 <= width``
    and ``0 <= y0 < y1 <= height``; one :class:`InputError` naming ``what`` otherwise."""
    view = as_int(view, f"{what} view")
    if view < 0 or (views is not None and view >= views):
        known = f"views 0..{views - 1}" if views is not None else "views numbered from 0"
        raise InputError(f"{what} is on view {view}, but the input has {known}")
    b = np.asarray(box, np.float64).reshape(-1)
    if b.shape != (4,) or not np.isfinite(b).all():
        raise InputError(f"{what} box must be 4 finite numbers XYXY, got {box!r}")
    x0, y0, x1, y1 = b
    if not (0 <= x0 < x1 <= width and 0 <= y0 < y1 <= height):
        raise InputError(f"{what} box {b.tolist()} is off the image or empty: it must satisfy 0 <= x0 < x1 <= "
                         f"{width} and 0 <= y0 < y1 <= {height}")
    return view, b


def new_phrase(phrase: Any, concepts: Sequence["Concept"], max_phrases: int) -> str | None:
    """A new concept's phrase checked against a state's ``concepts``: None stays None (exemplars only); a phrase is
    a non-empty string, its whitespace collapsed, not already a phrase of the state (case-insensitive), and the
    state has fewer than ``max_phrases`` concepts; one :class:`InputError` otherwise."""
    if phrase is not None:
        phrase = check_text(phrase, "a concept phrase")
        if any(c.phrase is not None and c.phrase.lower() == phrase.lower() for c in concepts):
            raise InputError(f"phrase {phrase!r} is already a concept of this state")
    if len(concepts) >= max_phrases:
        raise InputError(f"at most {max_phrases} concepts per state (max_phrases); got one more: {phrase!r}")
    return phrase


@dataclass
class Concept:
    """One concept: a ``phrase`` (None: exemplars only) and its exemplar boxes in model pixels, ``(view, box [4])``
    each, ``positives`` ("more like this") and ``negatives`` ("not this")."""

    phrase: str | None
    positives: list[tuple[int, np.ndarray]] = field(default_factory=list)
    negatives: list[tuple[int, np.ndarray]] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.phrase if self.phrase is not None else "exemplar"


@dataclass
class ConceptState:
    """A concept session over one video or view set: ``tracker`` (the :class:`~vision.tracking.session.
    TrackerState`: frames, cached encodings, cameras, per-instance clouds), the ``concepts``, and after
    :meth:`ConceptPredictor.propagate`: ``presence [T, K]``, ``instances`` (obj_id -> concept index), ``scores``
    (obj_id -> mean proposal score) and the tracks."""

    tracker: TrackerState
    concepts: list[Concept] = field(default_factory=list)
    corrections: dict[int, ObjectPrompt] = field(default_factory=dict)
    presence: np.ndarray | None = None
    tracks: list[ConceptTrack] | None = None
    instances: dict[int, int] = field(default_factory=dict)
    scores: dict[int, float] = field(default_factory=dict)
    similarity: dict[tuple[int, ...], Any] = field(default_factory=dict, repr=False)

    @property
    def num_views(self) -> int:
        return self.tracker.num_views

    def invalidate(self) -> None:
        """Forget the results (frames and cached encodings stay)."""
        self.presence, self.tracks = None, None
        self.instances, self.scores, self.corrections, self.similarity = {}, {}, {}, {}


class ConceptPredictor:
    """Concept prompts over a trained :class:`~vision.concept.task.ConceptModel` (module docstring).

    Args:
        model: the concept model. config: its :class:`~vision.concept.task.ConceptConfig` (the inference settings;
            ``rejection``, ``learned_presence``, ``learned_association`` switch the ablations).
        text_encoder: a text encoder callable or its name (:func:`vision.detection.vocabulary.shared_text_encoder`).
        window_size: views per window of the tracker. fill_missed: see the module docstring.
        device / precision: where and in which autocast dtype the networks run (:mod:`vision.device`).
        cache_views: encodings kept in the state (:class:`~vision.tracking.predictor.TrackerPredictor`).
        solve_cameras: the tracker's point maps, which the association compares in 3D, from its depth head and the
            camera solver's cameras instead of its point head
            (:class:`~vision.tracking.predictor.TrackerPredictor`'s ``solve_cameras``; much slower).
    """

    def __init__(self, model: ConceptModel, config: ConceptConfig, text_encoder: Any = "minilm",
                 window_size: int = 8, fill_missed: bool = False, device: torch.device | str | None = None,
                 precision: str | torch.dtype = "32", cache_views: int = 96, solve_cameras: bool = False) -> None:
        self.model = model.eval()
        self.config = ConceptConfig.from_value(config)
        self.tracker = TrackerPredictor(model.tracker, text_encoder=None, window_size=window_size, max_anchors=1,
                                        device=device, precision=precision, cache_views=cache_views,
                                        solve_cameras=solve_cameras)
        self.device, self.dtype = self.tracker.device, self.tracker.dtype
        self.model.to(self.device)
        self._text_encoder = text_encoder
        self.window_size = int(window_size)
        self.fill_missed = bool(fill_missed)

    @classmethod
    def from_checkpoint(cls, path: str | Path, device: torch.device | str = "cpu",
                        precision: str | torch.dtype = "32", **kwargs: Any) -> "ConceptPredictor":
        """Build from a :class:`~vision.concept.lightning.ConceptModule` checkpoint or a concept model folder
        (:func:`vision.concept.task.load`, through :func:`vision.device.load_for_inference`); ``kwargs`` go to the
        constructor (``config_overrides``: a dict of :class:`ConceptConfig` fields to change, e.g.
        ``{"rejection": False}``)."""
        (model, config), device, dtype = load_for_inference(load, path, device, precision)
        overrides = kwargs.pop("config_overrides", None) or {}
        return cls(model, config.replace(**overrides), device=device, precision=dtype, **kwargs)

    # ------------------------------------------------------------------ state and prompts

    def init_state(self, source: Any, ordered: bool | None = None, max_frames: int | None = None, stride: int = 1,
                   max_pixels: int | None = MAX_INPUT_PIXELS) -> ConceptState:
        """A state over frames, a video path or image paths (:meth:`TrackerPredictor.init_state`)."""
        return ConceptState(self.tracker.init_state(source, ordered=ordered, max_frames=max_frames, stride=stride,
                                                    max_pixels=max_pixels))

    def _model_box(self, state: ConceptState, view: Any, box: Any, what: str) -> tuple[int, np.ndarray]:
        tracker = state.tracker
        view, b = check_exemplar(view, box, tracker.width, tracker.height, tracker.num_views, what)
        s = tracker.size
        scale = np.array([s / tracker.width, s / tracker.height] * 2)
        return view, (b * scale).astype(np.float32)

    def add_concept(self, state: ConceptState, phrase: str | None = None,
                    exemplars: Sequence[tuple[int, Any, bool]] = ()) -> int:
        """Add a concept: a noun ``phrase`` and/or ``exemplars`` ``(view, box XYXY input pixels, positive)``; at
        least one positive exemplar without a phrase. Returns its index (the ``concepts`` of :meth:`propagate`)."""
        concept = Concept(new_phrase(phrase, state.concepts, self.config.max_phrases))
        for i, exemplar in enumerate(exemplars):
            if not isinstance(exemplar, (tuple, list)) or len(exemplar) not in (2, 3):
                raise InputError(f"exemplar {i} must be (view, box) or (view, box, positive), got {exemplar!r}")
            view, box = exemplar[0], exemplar[1]
            positive = bool(exemplar[2]) if len(exemplar) == 3 else True
            entry = self._model_box(state, view, box, f"exemplar {i}")
            (concept.positives if positive else concept.negatives).append(entry)
        if phrase is None and not concept.positives:
            raise InputError("a concept needs a phrase or at least one positive exemplar box")
        state.concepts.append(concept)
        state.invalidate()
        return len(state.concepts) - 1

    def correct(self, state: ConceptState, obj_id: int, view: int, points: Any = None, labels: Any = None,
                box: Any = None, mask: Any = None) -> None:
        """Correct one instance with a click (or a box, a mask) on ``view``: the tracker decodes it from this prompt
        on every view from now on (its proposals' masks are no longer used). Call :meth:`propagate` again: only
        the decoding runs again."""
        obj_id = as_int(obj_id, "obj_id")
        if obj_id not in state.instances:
            raise InputError(f"unknown instance id {obj_id}; the state has {sorted(state.instances)}")
        state.corrections[obj_id] = self.tracker.make_prompt(state.tracker, view, points=points, labels=labels,
                                                             box=box, mask=mask)

    # ------------------------------------------------------------------ the three steps

    def _text(self, names: Sequence[str]) -> torch.Tensor:
        from vision.detection.vocabulary import encode_vocabulary, shared_text_encoder

        if isinstance(self._text_encoder, str):
            self._text_encoder = shared_text_encoder(self._text_encoder)
        return encode_vocabulary(list(names), self.config.detector["prompt_template"],
                                 self._text_encoder).to(self.device)

    def _detect(self, state: ConceptState, batch: int = 16) -> dict[str, torch.Tensor]:
        frames = state.tracker.frames
        parts = []
        for start in range(0, len(frames), batch):
            images = torch.from_numpy(frames[start:start + batch]).to(self.device).permute(0, 3, 1, 2).float() / 255
            parts.append(self.model.detector(images))
        out = {k: torch.cat([p[k] for p in parts]) for k in ("objectness", "boxes", "embeddings")}
        return {**out, "points": parts[0]["points"]}

    def _proposals(self, state: ConceptState) -> tuple[list[ViewProposals], np.ndarray, torch.Tensor]:
        """Step 1: every view's proposals (exemplar boxes included), ``presence [T, K]`` and the presence head's
        inputs ``[T, K, 8]`` (:func:`vision.concept.heads.scene_presence_features`)."""
        concepts, config, detector = state.concepts, self.config, self.model.detector
        outputs = self._detect(state)
        phrases = [c.phrase for c in concepts]
        named = [p for p in phrases if p is not None]
        text = torch.zeros(len(concepts), detector.classifier.oov_prompts.shape[-1], device=self.device)
        if named:
            encoded = self._text(named)
            for k, row in zip([k for k, p in enumerate(phrases) if p is not None], encoded):
                text[k] = row
        positives = [torch.stack([exemplar_embedding(outputs, v, torch.as_tensor(b, device=self.device))
                                  for v, b in c.positives]) if c.positives else torch.zeros(0, text.shape[1])
                     for c in concepts]
        rows = phrase_rows(detector, text, [p.to(self.device) for p in positives])
        lowered = {p.lower() for p in named}
        rivals = [n for n in config.competitors if n.lower() not in lowered]
        competitors = [detector.classifier.table(self._text(rivals))] if rivals else []
        negatives = [exemplar_embedding(outputs, v, torch.as_tensor(b, device=self.device))
                     for c in concepts for v, b in c.negatives]
        if negatives:
            competitors.append(torch.stack(negatives))
        competitors_t = torch.cat(competitors) if competitors else rows.new_zeros(0, rows.shape[1])
        views = propose(detector, outputs, rows, competitors_t, config.rejection, config.score_threshold,
                        config.nms_iou, config.max_per_view, state.tracker.size)
        views = [self._with_exemplars(state, v, s, positives) for s, v in enumerate(views)]
        features = scene_presence_features(torch.stack([v.presence for v in views]))  # [T, K, 8]
        if config.learned_presence:
            presence = self.model.presence(features).sigmoid()
        else:
            presence = features[..., 0] * (features[..., 4] > 0)  # the best kept proposal's score
        presence = presence.float().cpu().numpy()
        for k, concept in enumerate(concepts):
            for v, _ in concept.positives:
                presence[v, k] = 1.0  # the user says the concept is on the view of a positive exemplar
        return views, presence, features

    @staticmethod
    def _with_exemplars(state: ConceptState, proposals: ViewProposals, view: int,
                        positives: list[torch.Tensor]) -> ViewProposals:
        """A view's proposals with its positive exemplar boxes added (score 1: the user says it is one; embeddings
        ``positives[k]`` ``[E, D]``, in concept k's order) and the proposals of a concept that overlap its exemplar
        boxes on this view (IoU >= 0.5) removed."""
        from torchvision.ops import box_iou

        boxes, scores, phrases, emb = proposals.boxes, proposals.scores, proposals.phrases, proposals.embeddings
        for k, concept in enumerate(state.concepts):
            for v, box in concept.negatives + concept.positives:
                if v != view:
                    continue
                b = torch.as_tensor(box, device=boxes.device)[None]
                overlap = box_iou(boxes, b)[:, 0] >= 0.5 if len(boxes) else torch.zeros(0, dtype=torch.bool)
                keep = ~(overlap & (phrases == k))
                boxes, scores, phrases, emb = boxes[keep], scores[keep], phrases[keep], emb[keep]
            for (v, box), embedding in zip(concept.positives, positives[k]):
                if v != view:
                    continue
                boxes = torch.cat([boxes, torch.as_tensor(box, device=boxes.device)[None]])
                scores = torch.cat([scores, scores.new_ones(1)])
                phrases = torch.cat([phrases, phrases.new_full((1,), k)])
                emb = torch.cat([emb, embedding[None].to(emb.device, emb.dtype)])
        return ViewProposals(boxes, scores, phrases, emb, proposals.presence)

    def _windows(self, state: ConceptState) -> list[tuple[list[int], list[int]]]:
        return windows([0], list(range(state.num_views)), self.window_size, 1)

    def _encode(self, state: ConceptState, window: list[int]) -> tuple[dict[str, Any], np.ndarray]:
        encoded = self.tracker._encode(state.tracker, window)
        return encoded, encoded["world_points"][0].float().cpu().numpy()

    def _associate(self, state: ConceptState, views: list[ViewProposals], presence: np.ndarray
                   ) -> tuple[list[ConceptTrack], dict[int, np.ndarray], dict[tuple[int, ...], Similarity]]:
        """Step 2: the tracks, the global points of every view and each window's similarity to the global frame."""
        head = self.model.association if self.config.learned_association else None
        associator = Associator(head, self.config.association_threshold, self.config.rule_distance)
        decoder = self.tracker._window_decoder()
        global_points: dict[int, np.ndarray] = {}
        similarity: dict[tuple[int, ...], Similarity] = {}
        s = state.tracker.size
        for window, emit in self._windows(state):
            encoded, wp = self._encode(state, window)
            sim = window_to_global(wp[0], global_points[window[0]]) if window[0] in global_points else (
                1.0, np.eye(3), np.zeros(3))
            similarity[tuple(window)] = sim
            for i, v in enumerate(window):
                if v in emit:
                    global_points[v] = apply_similarity(sim, wp[i])
            for v in sorted(emit, key=window.index):
                prop = views[v]
                keep = [j for j in range(len(prop)) if presence[v, int(prop.phrases[j])] >=
                        self.config.presence_threshold]
                if not keep:
                    continue
                i = window.index(v)
                prompts = Prompts.empty(1, len(keep), (s, s), num_points=2, text_dim=self.model.tracker.text_dim,
                                        memory_dim=self.model.tracker.dim)
                points, labels = box_to_points(prop.boxes[keep].float().cpu())
                prompts.valid[0] = True
                prompts.view[0] = i
                prompts.points[0] = points
                prompts.labels[0] = labels
                masks, _ = decoder.decode(encoded, prompts.to(self.device), [i])
                masks_np = masks[0].cpu().numpy()
                feats = encoded["feats"][0, i]
                observations = []
                for n, j in enumerate(keep):
                    box = prop.boxes[j].float().cpu().numpy()
                    mask = masks_np[n]
                    if not mask.any():  # the decoder found nothing in the box: the box itself stands for it
                        mask = np.zeros((s, s), bool)
                        x0, y0, x1, y1 = np.floor(box).astype(int).clip(0, s)
                        mask[y0:max(y1, y0 + 1), x0:max(x1, x0 + 1)] = True
                    obs = lift_observation(v, int(prop.phrases[j]), box, float(prop.scores[j]), mask,
                                           global_points[v], feats, prop.embeddings[j], state.tracker.frames[v])
                    if obs is not None:
                        observations.append(obs)
                associator.add_view(observations)
        associator.merge()
        return associator.tracks, global_points, similarity

    def _decode(self, state: ConceptState) -> Iterator[tuple[int, list[int], np.ndarray, np.ndarray]]:
        """Step 3: per view, ``(view, obj_ids, masks bool [N, s, s], scores [N])`` at the model size."""
        tracks = {t.track_id: t for t in state.tracks}
        obj_ids = sorted(tracks)
        decoder = self.tracker._window_decoder()
        s = state.tracker.size
        tracker_state = state.tracker
        t = state.num_views
        tracker_state.extrinsics = np.zeros((t, 3, 4), np.float32)
        tracker_state.intrinsics = np.zeros((t, 3, 3), np.float32)
        tracker_state.depth = np.zeros((t, s, s), np.float32)
        tracker_state.clouds = {o: np.zeros((0, 3), np.float32) for o in obj_ids}
        tracker_state.cloud_colors = {o: np.zeros((0, 3), np.float32) for o in obj_ids}
        for window, emit in self._windows(state):
            encoded, wp = self._encode(state, window)
            sim = state.similarity[tuple(window)]
            tracker_state.record_geometry(window, emit, encoded)
            if self.fill_missed or state.corrections:
                masks_np, prob_np = self._decode_tracks(state, tracks, obj_ids, window, encoded, sim, decoder)
            else:
                masks_np = prob_np = None
            for v in sorted(emit):
                i = window.index(v)
                out_masks = np.zeros((len(obj_ids), s, s), bool)
                out_scores = np.zeros(len(obj_ids), np.float32)
                points = apply_similarity(sim, wp[i])
                for j, o in enumerate(obj_ids):
                    track = tracks[o]
                    phrase_presence = float(state.presence[v, track.phrase])
                    if phrase_presence < self.config.presence_threshold:
                        continue
                    own = next((ob for ob in track.observations if ob.view == v), None)
                    if own is not None and o not in state.corrections:
                        mask, score = own.mask, own.score
                    elif masks_np is not None and (o in state.corrections or self.fill_missed) and masks_np[i, j].any():
                        mask, score = masks_np[i, j], track.score * float(prob_np[i, j])
                    else:
                        continue
                    out_masks[j], out_scores[j] = mask, score * phrase_presence
                    self._grow_cloud(tracker_state, o, points[mask], tracker_state.frames[v][mask])
                yield v, obj_ids, out_masks, out_scores

    def _decode_tracks(self, state: ConceptState, tracks: dict[int, ConceptTrack], obj_ids: list[int],
                       window: list[int], encoded: dict[str, Any], sim: Similarity,
                       decoder: WindowDecoder) -> tuple[np.ndarray, np.ndarray]:
        """The tracker's masks ``[S, N, s, s]`` and presence ``[S, N]`` of every instance on a window: each prompted
        by its correction, else by its best proposal's box (when the window holds its view) and its 3D points."""
        s = state.tracker.size
        memory_points = self.tracker.memory_points
        prompts = Prompts.empty(1, len(obj_ids), (s, s), num_points=max(
            [2] + [len(c.points) for c in state.corrections.values() if c.points is not None]),
            num_memory=memory_points, text_dim=self.model.tracker.text_dim, memory_dim=self.model.tracker.dim)
        for j, o in enumerate(obj_ids):
            track = tracks[o]
            prompts.valid[0, j] = True
            correction = state.corrections.get(o)
            if correction is not None:
                set_visual_prompt(prompts, j, correction, window)
                continue
            best = track.best
            if best.view in window:
                points, labels = box_to_points(torch.from_numpy(best.box))
                prompts.view[0, j] = window.index(best.view)
                prompts.points[0, j, :2] = points
                prompts.labels[0, j, :2] = labels
            pts = np.concatenate([ob.points for ob in track.observations])
            take = np.linspace(0, len(pts) - 1, min(memory_points, len(pts))).round().astype(int)
            prompts.memory_points[0, j, :len(take)] = torch.from_numpy(invert_similarity(sim, pts[take]))
            prompts.memory_valid[0, j, :len(take)] = True
            prompts.memory_feat[0, j] = track.summary().appearance[0]
        masks, prob = decoder.decode(encoded, prompts.to(self.device))
        return masks.cpu().numpy(), prob.float().cpu().numpy()

    def _grow_cloud(self, tracker_state: TrackerState, obj_id: int, points: np.ndarray, colours: np.ndarray) -> None:
        ok = np.isfinite(points).all(1)
        cloud = np.concatenate([tracker_state.clouds[obj_id], points[ok]])
        colour = np.concatenate([tracker_state.cloud_colors[obj_id], colours[ok].astype(np.float32) / 255.0])
        cap = self.tracker.max_cloud_points
        if len(cloud) > cap:
            take = np.linspace(0, len(cloud) - 1, cap).round().astype(int)
            cloud, colour = cloud[take], colour[take]
        tracker_state.clouds[obj_id], tracker_state.cloud_colors[obj_id] = cloud, colour

    # ------------------------------------------------------------------ the user's call

    @torch.no_grad()
    def propagate(self, state: ConceptState) -> Iterator[tuple[int, list[int], list[int], np.ndarray, np.ndarray]]:
        """Yield ``(view, obj_ids, concepts, masks bool [N, H, W], scores [N])`` for every view in order (input
        size; ``concepts[n]`` the concept index of ``obj_ids[n]``; an instance absent from a view has an empty mask
        and score 0). The first call finds and associates the instances; later calls (after :meth:`correct`)
        decode again only."""
        if not state.concepts:
            raise InputError("no concept: call add_concept(state, phrase) before propagate(state)")
        with autocast(self.device, self.dtype):
            if state.tracks is None:
                views, state.presence, _ = self._proposals(state)
                state.tracks, _, state.similarity = self._associate(state, views, state.presence)
                state.instances = {t.track_id: t.phrase for t in state.tracks}
                state.scores = {t.track_id: t.score for t in state.tracks}
            decoded = list(self._decode(state)) if state.tracks else []
        height, width = state.tracker.height, state.tracker.width
        by_view = {v: (ids, m, sc) for v, ids, m, sc in decoded}
        for v in range(state.num_views):
            if v not in by_view:
                yield v, [], [], np.zeros((0, height, width), bool), np.zeros(0, np.float32)
                continue
            ids, masks, scores = by_view[v]
            full = np.stack([resize_nearest(m, (height, width)) for m in masks])
            yield v, list(ids), [state.instances[o] for o in ids], full, scores

#: the task's predictor (the registry's fixed name, vision.tasks.PARTS)
Predictor = ConceptPredictor
