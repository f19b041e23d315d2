"""Concept prompts answered by an OOV detector alone: every instance of noun phrases (and/or exemplar boxes) found on
each frame by one detector pass, with persistent ids from an online 2D association, and boxes for masks.

What it is for: the concept model of :mod:`vision.concept.predictor` (detector + G2TAM tracker + heads) has learned
64-px synthetic renders only; on real footage its tracker's masks and 3D association find nothing. A detector
trained on real frames (``runs/detection/real_coco``: real frames labelled by a teacher) answers the phrases here;
the tracker has not learned real images, so the masks are the detector's boxes, filled, except for phrases that name
a PASCAL VOC class, masked by DeepLabV3 inside the box (:mod:`vision.concept.voc_masks`); every state says which
(:attr:`DetectorConceptState.masks_line`).

Usage::

    predictor = DetectorConceptPredictor.from_checkpoint("runs/detection/real_coco/checkpoints/last.ckpt")
    state = predictor.init_state("clip.mp4")               # or frames [T, H, W, 3] uint8, or image paths
    predictor.add_concept(state, "cup")                    # each phrase its own ids
    for view, obj_ids, concepts, masks, scores in predictor.propagate(state):   # masks: filled boxes [N, H, W]
        ...
    state.results[view].boxes                              # [N, 4] XYXY input pixels of those ids
    state.presence                                         # [T, K]: the best proposal score of concept k on view t

How:

1. the frames are read at the detector's square input size, or for a detector that keeps the aspect ratio (the
   pretrained YOLOX body) with their shorter side at that size, letterboxed by the detector as it was trained
   (:func:`vision.data.video.read_frames`, the input handling and limits of every state-based predictor) and run
   batch by batch through the detector
   (:meth:`vision.detection.predictor.DetectorPredictor.outputs`, the one definition of its input);
2. proposals of every phrase with rejection (:func:`vision.concept.proposals.propose` and
   :func:`~vision.concept.proposals.phrase_rows`): the competitors are the detector's training vocabulary minus the
   phrases (and, with the detector's ``competitor_similarity``, minus the names a phrase explains,
   :func:`~vision.detection.vocabulary.competitor_rows`), plus its OOV column and the negative exemplars'
   embeddings, so a close cousin of a phrase or an object outside every name is rejected; a positive exemplar box is a proposal of its view with score 1;
3. :class:`OnlineAssociator` links the proposals of a phrase frame to frame: the affinity of a track and a
   proposal is ``iou_weight * IoU + (1 - iou_weight) * cosine`` (the track's box moved by its velocity, the
   proposal's box; the track's running region embedding, the proposal's), pairs come from the Hungarian assignment
   (:func:`scipy.optimize.linear_sum_assignment`) and are kept at or over ``match_threshold``; a track lives
   ``max_missed`` frames without a match; a proposal left over starts a new id when its score is at least
   ``birth_score`` and is dropped otherwise. A set of images is associated in its given order, like a video.

Conventions: boxes XYXY in pixels of the input frames; masks come back at the input size; ids are unique across
concepts and stable across calls of :meth:`DetectorConceptPredictor.propagate` on the same state.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator, Mapping, Sequence

import numpy as np
import torch
from scipy.optimize import linear_sum_assignment

from vision.concept.predictor import Concept, ConceptPredictor, check_exemplar, new_phrase
from vision.concept.proposals import ViewProposals, exemplar_embedding, phrase_rows, propose
from vision.detection.vocabulary import competitor_rows
from vision.data.io import MAX_INPUT_PIXELS
from vision.errors import InputError
from vision.evaluation.concept_boxes import box_iou_xyxy

if TYPE_CHECKING:
    from vision.concept.export import ConceptExport
    from vision.provenance import Provenance
    from vision.detection.predictor import DetectorPredictor

__all__ = ["MASK_SOURCE", "MASK_NOTE", "DetectorConceptConfig", "BoxFrame", "DetectorConceptState",
           "OnlineAssociator", "DetectorConceptPredictor", "export_box_concepts"]

#: what the masks of this predictor are
MASK_SOURCE = "box"
#: why, in one sentence for users
MASK_NOTE = "the tracker has not learned real images; masks are the detector's boxes"


@dataclass
class DetectorConceptConfig:
    """The settings of :class:`DetectorConceptPredictor` (each checked when made).

    Args:
        score_threshold: proposals at or under this score are dropped (what :func:`~vision.concept.proposals.
            propose` keeps). birth_score: a proposal matched to no track starts a new id only at or over it.
        nms_iou: per-phrase NMS. max_per_view: proposals kept per frame. max_phrases: concepts per state.
        rejection: proposals must win against the competitors and the OOV column (False: the ablation).
        iou_weight: the affinity's weight of the boxes' IoU (the rest goes to the embeddings' cosine).
        match_threshold: a (track, proposal) pair of lower affinity is not a match.
        max_missed: frames a track stays alive without a match (its id can come back within them).
        embedding_momentum: a track's embedding after a match: ``normalize(m * old + (1 - m) * new)``.
        batch_size: frames per detector pass.
        masks: ``"deeplabv3"``: an instance of a phrase that names a PASCAL VOC class is masked by the registered
            DeepLabV3 inside its box (:mod:`vision.concept.voc_masks`), any other by its box; ``"box"``: boxes only.
    """

    score_threshold: float = 0.3
    birth_score: float = 0.4
    nms_iou: float = 0.5
    max_per_view: int = 16
    max_phrases: int = 16
    rejection: bool = True
    iou_weight: float = 0.5
    match_threshold: float = 0.5
    max_missed: int = 3
    embedding_momentum: float = 0.5
    batch_size: int = 16
    masks: str = "deeplabv3"

    def __post_init__(self) -> None:
        if self.masks not in ("deeplabv3", "box"):
            raise InputError(f"DetectorConceptConfig.masks must be 'deeplabv3' or 'box', got {self.masks!r}")
        for name in ("score_threshold", "birth_score", "nms_iou", "iou_weight", "match_threshold",
                     "embedding_momentum"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= value <= 1.0:
                raise InputError(f"DetectorConceptConfig.{name} must be a number in [0, 1], got {value!r}")
            setattr(self, name, float(value))
        for name, low in (("max_per_view", 1), ("max_phrases", 1), ("max_missed", 0), ("batch_size", 1)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise InputError(f"DetectorConceptConfig.{name} must be an integer >= {low}, got {value!r}")
        if not isinstance(self.rejection, bool):
            raise InputError(f"DetectorConceptConfig.rejection must be true or false, got {self.rejection!r}")

    @property
    def presence_threshold(self) -> float:
        """A concept counts as present on a frame where one of its proposals passes ``score_threshold``."""
        return self.score_threshold

    @classmethod
    def from_value(cls, value: "DetectorConceptConfig | Mapping[str, Any] | None") -> "DetectorConceptConfig":
        """A config (copied), a mapping of its fields (an unknown one is an :class:`InputError`) or None."""
        if value is None:
            return cls()
        if isinstance(value, cls):
            return dataclasses.replace(value)
        if not isinstance(value, Mapping):
            raise InputError(f"a DetectorConceptConfig must be a mapping of its fields, got {type(value).__name__}")
        unknown = sorted(set(value) - {f.name for f in dataclasses.fields(cls)})
        if unknown:
            raise InputError(f"unknown DetectorConceptConfig field(s) {unknown}")
        return cls(**dict(value))


@dataclass
class _Track:
    obj_id: int
    concept: int
    box: np.ndarray
    embedding: np.ndarray
    velocity: np.ndarray = field(default_factory=lambda: np.zeros(4))
    missed: int = 0
    scores: list[float] = field(default_factory=list)

    def predicted(self) -> np.ndarray:
        """Its box moved by its velocity over the frames since its last match (kept a box: x1 > x0, y1 > y0)."""
        box = self.box + self.velocity * (self.missed + 1)
        return np.concatenate([box[:2], np.maximum(box[2:], box[:2] + 1e-3)])


class OnlineAssociator:
    """Persistent ids for the proposals of a sequence of frames, given one frame at a time (:meth:`step`); see the
    module docstring for the rule. Tracks of different concepts never match."""

    def __init__(self, config: DetectorConceptConfig) -> None:
        self.config = config
        self.tracks: list[_Track] = []
        self.finished: list[_Track] = []
        self.next_id = 1

    def step(self, boxes: np.ndarray, embeddings: np.ndarray, concepts: np.ndarray, scores: np.ndarray
             ) -> np.ndarray:
        """The ids ``[n]`` int64 of one frame's ``n`` proposals (``boxes [n, 4]``, unit ``embeddings [n, D]``,
        ``concepts [n]``, ``scores [n]``): a track's id, a new id, or 0 for a proposal dropped (under
        ``birth_score`` and matched to no track)."""
        config = self.config
        boxes = np.asarray(boxes, np.float64).reshape(-1, 4)
        embeddings = np.asarray(embeddings, np.float64)
        embeddings = embeddings.reshape(len(boxes), embeddings.shape[-1] if embeddings.ndim > 1 else 0)
        concepts, scores = np.asarray(concepts, np.int64), np.asarray(scores, np.float64)
        ids = np.zeros(len(boxes), np.int64)
        matched: set[int] = set()
        for k in sorted(set(concepts.tolist()) | {t.concept for t in self.tracks}):
            rows = [i for i, t in enumerate(self.tracks) if t.concept == k]
            cols = np.nonzero(concepts == k)[0]
            if not rows or not len(cols):
                continue
            tracks = [self.tracks[i] for i in rows]
            iou = box_iou_xyxy(np.stack([t.predicted() for t in tracks]), boxes[cols])
            cosine = np.stack([t.embedding for t in tracks]) @ embeddings[cols].T
            affinity = config.iou_weight * iou + (1.0 - config.iou_weight) * cosine.clip(0.0, 1.0)
            for r, c in zip(*linear_sum_assignment(-affinity)):
                if affinity[r, c] < config.match_threshold:
                    continue
                self._update(tracks[r], boxes[cols[c]], embeddings[cols[c]], float(scores[cols[c]]))
                ids[cols[c]] = tracks[r].obj_id
                matched.add(id(tracks[r]))
        alive = []
        for track in self.tracks:
            if id(track) not in matched:
                track.missed += 1
            (alive if track.missed <= config.max_missed else self.finished).append(track)
        self.tracks = alive
        for i in np.nonzero(ids == 0)[0]:
            if scores[i] >= config.birth_score:
                track = _Track(self.next_id, int(concepts[i]), boxes[i].copy(), embeddings[i].copy(),
                               scores=[float(scores[i])])
                self.next_id += 1
                self.tracks.append(track)
                ids[i] = track.obj_id
        return ids

    def _update(self, track: _Track, box: np.ndarray, embedding: np.ndarray, score: float) -> None:
        gap = track.missed + 1
        track.velocity = 0.5 * track.velocity + 0.5 * (box - track.box) / gap
        track.box = box.copy()
        m = self.config.embedding_momentum
        mixed = m * track.embedding + (1.0 - m) * embedding
        track.embedding = mixed / max(float(np.linalg.norm(mixed)), 1e-12)
        track.missed = 0
        track.scores.append(score)


@dataclass
class BoxFrame:
    """One frame's answer: ``obj_ids`` and their ``concepts`` (concept index each), ``boxes [N, 4]`` float32 XYXY
    in input pixels and ``scores [N]`` float32."""

    view: int
    obj_ids: list[int]
    concepts: list[int]
    boxes: np.ndarray
    scores: np.ndarray
    #: each instance's PASCAL VOC class (None: masked by its box) and the frame's DeepLabV3 label map, if run
    classes: list[int | None] = field(default_factory=list)
    labels: np.ndarray | None = None

    def masks(self, height: int, width: int, scale: tuple[float, float] = (1.0, 1.0)) -> np.ndarray:
        """The masks ``bool [N, height, width]`` (boxes multiplied by ``scale`` ``(x, y)`` first, for a frame drawn
        at another size than the input's): the VOC class's pixels inside the box where the instance has a class and
        the frame a label map (:func:`vision.concept.voc_masks.box_or_class_mask`), else the filled box; every box
        covers at least one pixel."""
        from vision.concept.voc_masks import box_or_class_mask, resize_labels

        out = np.zeros((len(self.obj_ids), height, width), bool)
        classes = self.classes or [None] * len(self.obj_ids)
        labels = resize_labels(self.labels, height, width) if any(c is not None for c in classes) else None
        for n, box in enumerate(self.boxes):
            out[n] = box_or_class_mask(box * np.array([scale[0], scale[1]] * 2), classes[n], labels, height, width)
        return out


@dataclass
class DetectorConceptState:
    """A concept session over one video or image set, answered by the detector alone: ``frames`` uint8
    ``[T, H', W', 3]`` at the detector's input size (``s x s``, or the shorter side ``s`` for a detector that keeps
    the aspect ratio), the input's ``height`` / ``width``, the ``concepts``, and after
    :meth:`DetectorConceptPredictor.propagate`: ``results`` (one :class:`BoxFrame` per frame), ``presence [T, K]``,
    ``instances`` (obj_id -> concept index), ``scores`` (obj_id -> mean score). ``mask_source`` is ``"box"``: the
    masks come from the detector's boxes, not a tracker (``mask_note`` says why); ``masks_line`` says, per phrase,
    whether they are DeepLabV3's pixels inside the box or the filled box."""

    frames: np.ndarray
    height: int
    width: int
    ordered: bool = True
    concepts: list[Concept] = field(default_factory=list)
    results: list[BoxFrame] | None = None
    presence: np.ndarray | None = None
    instances: dict[int, int] = field(default_factory=dict)
    scores: dict[int, float] = field(default_factory=dict)
    mask_source: str = MASK_SOURCE
    mask_note: str = MASK_NOTE
    #: what the masks are, per concept, in one line (:func:`vision.concept.voc_masks.mask_sources`), once run
    masks_line: str = ""

    @property
    def num_views(self) -> int:
        return int(len(self.frames))

    #: ``(x, y)`` from the detector's input pixels to the input's (set by :meth:`DetectorConceptPredictor.init_state`)
    model_scale: tuple[float, float] = (1.0, 1.0)
    #: the detector's square input size
    size: int = 0

    def invalidate(self) -> None:
        """Forget the results (frames stay)."""
        self.results, self.presence, self.instances, self.scores = None, None, {}, {}


class DetectorConceptPredictor:
    """Concept prompts over a trained OOV detector alone (module docstring); the surface of
    :class:`~vision.concept.predictor.ConceptPredictor` (``init_state`` / ``add_concept`` / ``propagate``), with
    boxes for masks.

    Args:
        detector: a :class:`~vision.detection.predictor.DetectorPredictor` (its model, input size, device,
            precision, prompt template and text encoder are used; its vocabulary when made is the default
            ``competitors``).
        config: a :class:`DetectorConceptConfig` or a mapping of its fields.
        competitors: the names that compete with the phrases (default: the detector's training vocabulary).
        provenance: what the checkpoint was trained on (:func:`vision.provenance.read_provenance`), for
            :meth:`describe`.
    """

    mask_source = MASK_SOURCE
    mask_note = MASK_NOTE

    def __init__(self, detector: "DetectorPredictor", config: DetectorConceptConfig | Mapping[str, Any] | None = None,
                 competitors: Sequence[str] | None = None, provenance: "Provenance | None" = None) -> None:
        self.detector = detector
        self.config = DetectorConceptConfig.from_value(config)
        self.competitors = list(detector.vocabulary if competitors is None else competitors)
        self.provenance = provenance
        self.device, self.dtype = detector.device, detector.dtype

    @classmethod
    def from_checkpoint(cls, path: str | Path, device: torch.device | str = "cpu", precision: str | torch.dtype = "32",
                        config: DetectorConceptConfig | Mapping[str, Any] | None = None,
                        competitors: Sequence[str] | None = None, **kwargs: Any) -> "DetectorConceptPredictor":
        """Build from an :class:`~vision.detection.lightning.OOVDetModule` checkpoint or a detection model folder
        (:meth:`DetectorPredictor.from_checkpoint`, with its training vocabulary: the competitors unless
        ``competitors`` names others); ``kwargs`` go to the detector predictor (``encoder``, ``batch_size``)."""
        from vision.provenance import read_provenance
        from vision.detection.predictor import DetectorPredictor

        detector = DetectorPredictor.from_checkpoint(path, vocabulary=competitors, device=device, precision=precision,
                                                     **kwargs)
        return cls(detector, config, provenance=read_provenance(path))

    def describe(self) -> str:
        """Which model answers, in one line (the checkpoint and what it was trained on)."""
        model = str(self.provenance) if self.provenance is not None else "an OOV detector"
        return f"the detector alone: {model}"

    # ------------------------------------------------------------------ state and prompts

    def init_state(self, source: Any, ordered: bool | None = None, max_frames: int | None = None, stride: int = 1,
                   max_pixels: int | None = MAX_INPUT_PIXELS) -> DetectorConceptState:
        """A state over frames (uint8 ``[T, H, W, 3]`` RGB or float ``[T, 3, H, W]`` in [0, 1]), a video path or
        image paths (:func:`vision.data.video.read_frames` at the detector's input size; ``stride`` /
        ``max_frames`` sample a video file; files with frames over ``max_pixels`` are refused before decoding).
        ``ordered`` defaults to False for image paths (they are still associated in their given order)."""
        from vision.data.video import read_frames

        s = self.detector.image_size
        keeps_aspect = self.detector.model.keeps_aspect
        frames, (height, width) = read_frames(source, s if keeps_aspect else (s, s), stride=stride,
                                              max_frames=max_frames, max_pixels=max_pixels)
        if ordered is None:
            ordered = not isinstance(source, (list, tuple))
        frames = np.ascontiguousarray(frames)
        _, (sx, sy) = self.detector.input_geometry(frames[0])  # model px -> frame px
        scale = (sx * width / frames.shape[2], sy * height / frames.shape[1])
        return DetectorConceptState(frames, int(height), int(width), bool(ordered), model_scale=scale, size=s)

    def add_concept(self, state: DetectorConceptState, phrase: str | None = None,
                    exemplars: Sequence[tuple[int, Any, bool]] = ()) -> int:
        """Add a concept: a noun ``phrase`` and/or ``exemplars`` ``(view, box XYXY input pixels, positive)``, as
        :meth:`ConceptPredictor.add_concept` takes them. Returns its index (the ``concepts`` of :meth:`propagate`)."""
        concept = Concept(new_phrase(phrase, state.concepts, self.config.max_phrases))
        scale = 1.0 / np.array(state.model_scale * 2)
        for i, exemplar in enumerate(exemplars):
            if not isinstance(exemplar, (tuple, list)) or len(exemplar) not in (2, 3):
                raise InputError(f"exemplar {i} must be (view, box) or (view, box, positive), got {exemplar!r}")
            view, box = check_exemplar(exemplar[0], exemplar[1], state.width, state.height, state.num_views,
                                       f"exemplar {i}")
            positive = bool(exemplar[2]) if len(exemplar) == 3 else True
            (concept.positives if positive else concept.negatives).append((view, (box * scale).astype(np.float32)))
        if phrase is None and not concept.positives:
            raise InputError("a concept needs a phrase or at least one positive exemplar box")
        state.concepts.append(concept)
        state.invalidate()
        return len(state.concepts) - 1

    def clear_concepts(self, state: DetectorConceptState) -> None:
        """Remove every concept and result (the frames stay): the state can be asked other phrases."""
        state.concepts = []
        state.invalidate()

    # ------------------------------------------------------------------ the detector pass and the association

    def _text(self, names: Sequence[str]) -> torch.Tensor:
        from vision.detection.vocabulary import encode_vocabulary

        detector = self.detector
        return encode_vocabulary(list(names), detector.prompt_template, detector.encoder).to(self.device)

    def _rows(self, state: DetectorConceptState) -> tuple[torch.Tensor, torch.Tensor, list[torch.Tensor]]:
        """The phrase rows ``[K, D]``, the competitor rows ``[C, D]`` and each concept's positive exemplar
        embeddings ``[E, D]`` (one detector pass over the exemplars' views)."""
        model = self.detector.model
        concepts = state.concepts
        width = model.classifier.oov_prompts.shape[-1]
        named = [(k, c.phrase) for k, c in enumerate(concepts) if c.phrase is not None]
        text = torch.zeros(len(concepts), width, device=self.device)
        if named:
            for (k, _), row in zip(named, self._text([p for _, p in named])):
                text[k] = row
        views = sorted({v for c in concepts for v, _ in c.positives + c.negatives})
        outputs = self.detector.outputs(list(state.frames[views])) if views else None

        def embedding(view: int, box: np.ndarray) -> torch.Tensor:
            return exemplar_embedding(outputs, views.index(view), torch.as_tensor(box, device=self.device))

        positives = [torch.stack([embedding(v, b) for v, b in c.positives]) if c.positives
                     else torch.zeros(0, width, device=self.device) for c in concepts]
        rows = phrase_rows(model, text, positives)
        lowered = {p.lower() for _, p in named}
        rivals = [n for n in self.competitors if n.lower() not in lowered]
        parts = []
        if rivals:
            rival_rows = self._text(rivals)
            similarity = self.detector.competitor_similarity
            if similarity is not None and named:  # a rival a phrase explains ("person" for "man") is left out
                rival_rows = competitor_rows(rival_rows, text[[k for k, _ in named]], similarity)
            if len(rival_rows):
                parts.append(model.classifier.table(rival_rows).float())
        negatives = [embedding(v, b) for c in concepts for v, b in c.negatives]
        if negatives:
            parts.append(torch.stack(negatives).float())
        competitors = torch.cat(parts) if parts else rows.new_zeros(0, rows.shape[1])
        return rows, competitors, positives

    @torch.no_grad()
    def _run(self, state: DetectorConceptState) -> None:
        """Detect, propose and associate every frame in order (fills the state's results)."""
        config, model, s = self.config, self.detector.model, state.size
        rows, competitors, positives = self._rows(state)
        associator = OnlineAssociator(config)
        presence = np.zeros((state.num_views, len(state.concepts)), np.float32)
        to_input = np.array(state.model_scale * 2, np.float32)
        limits = np.array([state.width, state.height] * 2, np.float32)
        results: list[BoxFrame] = []
        classes, segmenter = self._voc_classes(state)
        for start in range(0, state.num_views, config.batch_size):
            batch = list(state.frames[start:start + config.batch_size])
            outputs = self.detector.outputs(batch)
            views = propose(model, outputs, rows, competitors, config.rejection, config.score_threshold,
                            config.nms_iou, config.max_per_view, s)
            for offset, proposals in enumerate(views):
                view = start + offset
                # a positive exemplar box is a proposal of its view (score 1), as in the concept model
                proposals = ConceptPredictor._with_exemplars(state, proposals, view, positives)
                frame = self._frame(view, proposals, associator, presence, to_input, limits)
                frame.classes = [classes[k] for k in frame.concepts]
                if segmenter is not None and any(c is not None for c in frame.classes):
                    frame.labels = segmenter.labels(state.frames[view])
                results.append(frame)
        state.results, state.presence = results, presence
        tracks = associator.finished + associator.tracks
        state.instances = {t.obj_id: t.concept for t in sorted(tracks, key=lambda t: t.obj_id)}
        state.scores = {t.obj_id: float(np.mean(t.scores)) for t in tracks}

    def _voc_classes(self, state: DetectorConceptState) -> tuple[list[int | None], Any]:
        """Each concept's PASCAL VOC class (None: boxes) and the segmenter (None when no concept has a class, the
        config says ``box`` or the weights are not fetched); sets ``state.masks_line``."""
        from vision.concept.voc_masks import VOCSegmenter, mask_sources, voc_classes

        phrases = [c.phrase for c in state.concepts]
        similarity = self.detector.competitor_similarity
        if self.config.masks == "box" or similarity is None:
            state.masks_line = f"boxes from the detector ({self.mask_note})"
            return [None] * len(phrases), None
        available = VOCSegmenter.available()
        classes = voc_classes(phrases, similarity, self.detector.prompt_template, self.detector.encoder) \
            if available else [None] * len(phrases)
        state.masks_line = mask_sources(phrases, classes, available)
        return classes, (VOCSegmenter() if any(c is not None for c in classes) else None)

    @staticmethod
    def _frame(view: int, proposals: ViewProposals, associator: OnlineAssociator, presence: np.ndarray,
               to_input: np.ndarray, limits: np.ndarray) -> BoxFrame:
        boxes = proposals.boxes.float().cpu().numpy()
        scores = proposals.scores.float().cpu().numpy()
        concepts = proposals.phrases.cpu().numpy()
        for k, score in zip(concepts, scores):
            presence[view, k] = max(presence[view, k], score)
        ids = associator.step(boxes, proposals.embeddings.float().cpu().numpy(), concepts, scores)
        keep = np.nonzero(ids > 0)[0]
        keep = keep[np.argsort(ids[keep], kind="stable")]
        # in the input's pixels, within its frame (a letterboxed detector's boxes may reach into the padding)
        boxes = np.minimum(np.maximum(boxes * to_input, 0.0), limits)
        return BoxFrame(view, ids[keep].tolist(), concepts[keep].tolist(), boxes[keep].astype(np.float32),
                        scores[keep].astype(np.float32))

    # ------------------------------------------------------------------ the user's call

    def propagate(self, state: DetectorConceptState) -> Iterator[tuple[int, list[int], list[int], np.ndarray,
                                                                       np.ndarray]]:
        """Yield ``(view, obj_ids, concepts, masks bool [N, H, W], scores [N])`` for every view in order, the
        instances found on that view only (masks: their boxes filled, at the input size; ``concepts[n]`` the concept
        index of ``obj_ids[n]``; their boxes are ``state.results[view].boxes``). The first call runs the detector
        and the association; later calls give the same answer."""
        if not state.concepts:
            raise InputError("no concept: call add_concept(state, phrase) before propagate(state)")
        if state.results is None:
            self._run(state)
        for frame in state.results:
            yield frame.view, list(frame.obj_ids), list(frame.concepts), frame.masks(state.height, state.width), \
                frame.scores.copy()


def export_box_concepts(predictor: DetectorConceptPredictor, state: DetectorConceptState, frames: np.ndarray,
                        out_dir: str | Path, fps: float = 10.0, image_names: Sequence[str] | None = None,
                        progress: Callable[[int, int], None] | None = None) -> "ConceptExport":
    """What :func:`vision.concept.export.export_concepts` writes, for a state answered by the detector alone:
    ``results.json`` (:func:`vision.concept.inference.concept_records`: instance records whose masks are the boxes,
    and the presence records) and the drawn views (each instance's box filled in the colour of its id and labelled
    with its phrase: ``annotated.mp4`` at ``fps``, or ``annotated/<name>.png`` per view with ``image_names``) on
    ``frames`` uint8 ``[T, h, w, 3]`` (the input's or downscaled). No 3D points: this predictor has no geometry.
    ``progress(done, total)`` is called after each view."""
    from vision.concept.export import ConceptExport, export_folder, label_instances, write_drawn
    from vision.concept.inference import concept_records
    from vision.data.io import atomic_write_json

    total = state.num_views
    out = export_folder("export_box_concepts", frames, image_names, total, out_dir)

    def counted(outputs: Iterator[tuple]) -> Iterator[tuple]:
        for item in outputs:
            if progress is not None:
                progress(item[0] + 1, total)
            yield item

    names = [c.name for c in state.concepts]
    records = concept_records(counted(predictor.propagate(state)), state, 1, [v + 1 for v in range(total)],
                              list(range(1, len(names) + 1)))
    export = ConceptExport(folder=out, results=out / "results.json")
    atomic_write_json(export.results, records)
    export.phrases = {o: names[k] for o, k in state.instances.items()}
    seen: dict[int, int] = {}
    for frame in state.results:
        for obj_id in frame.obj_ids:
            seen[obj_id] = seen.get(obj_id, 0) + 1
    export.views_with_instance = seen
    threshold = predictor.config.presence_threshold
    export.present = {name: int((state.presence[:, k] > threshold).sum()) for k, name in enumerate(names)}

    def drawn() -> Iterator[np.ndarray]:
        for frame, result in zip(frames, state.results):
            h, w = frame.shape[:2]
            masks = result.masks(h, w, (w / state.width, h / state.height))
            yield label_instances(frame, list(masks), result.obj_ids, [names[k] for k in result.concepts])

    write_drawn(export, drawn(), out, fps, image_names)
    return export
