"""One prompted object followed through a real video: NanoTrack's answer each frame, judged by the presence head,
with a 3D memory of where the object is in the world.

Each frame (:meth:`Target.step`): NanoTrack answers around the last box and the presence head reads the answer's
cues (:mod:`vision.tracking.real.cues`); the threshold is ``presence_threshold`` for an object that was present,
``reacquire_threshold`` for one that was absent. While an absent object's own answer stays under it, candidates
elsewhere are scored with the same head (an object that was present and dips under it for one frame is first
reported absent: a single doubtful frame never sends the track elsewhere): with the 3D memory, its projection into this frame (where the object was last seen, through this
frame's camera; the box scaled by the change of depth), which is where an object the camera turned away from comes
back; and ``search_tiles`` crops of a grid over the whole frame, visited in turn (global re-detection, for an
object that came back elsewhere). A candidate replaces the track's own answer when it reaches
``reacquire_threshold`` and beats the own answer by ``switch_margin``. The best answer at or above the threshold is
taken: the box moves there, the object is present, and the 3D memory moves to the box centre lifted by the depth
measured in the box. Otherwise the object is reported absent, the track follows its own answer (as NanoTrack alone
does) and the memory keeps the last sighting.

``use_memory=False`` is the 2D-memory control: no 3D memory, no projection candidate, and the head's geometry cues
read as 0 (:class:`~vision.tracking.real.presence.PresenceHead` with ``memory="2d"``).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import torch

from vision.errors import InputError
from vision.geometry.real_backbone import FrameGeometry
from vision.tracking.nanotrack import (CONTEXT_AMOUNT, EXEMPLAR_SIZE, INSTANCE_SIZE, NanoTracker, Response,
                                       crop_square)
from vision.tracking.real.cues import CUES, MemoryView, cue_vector, feature_cosine
from vision.tracking.real.presence import PresenceHead

__all__ = ["TargetConfig", "Target", "Answer"]


@dataclasses.dataclass(frozen=True)
class TargetConfig:
    """How a target decides and searches.

    Args:
        presence_threshold: a followed object stays present while its answer's presence is at least this.
        reacquire_threshold: an absent object is present again when an answer reaches this presence.
        switch_margin: a candidate away from the track replaces the track's own answer only when its presence is
            higher by this much (a look-alike elsewhere must clearly beat the track).
        search_tiles: global-search crops scored per absent frame (0: no global search).
        recent_every: frames between refreshes of the recent template (taken from confident answers only).
        use_memory: keep the 3D memory (False: the 2D-memory control).
    """

    presence_threshold: float = 0.35
    reacquire_threshold: float = 0.35
    switch_margin: float = 0.2
    search_tiles: int = 2
    recent_every: int = 10
    use_memory: bool = True

    def __post_init__(self) -> None:
        for name in ("presence_threshold", "reacquire_threshold", "switch_margin"):
            value = float(getattr(self, name))
            if not 0.0 <= value <= 1.0:
                raise InputError(f"TargetConfig.{name} must be in [0, 1], got {value}")
        for name in ("search_tiles", "recent_every"):
            if int(getattr(self, name)) < 0:
                raise InputError(f"TargetConfig.{name} must be >= 0, got {getattr(self, name)}")


@dataclasses.dataclass
class Answer:
    """A target's answer on one frame: ``box`` float64 ``(x, y, w, h)`` (the best guess, also when absent),
    ``presence`` probability, ``present`` (the decision), ``cues`` of that answer and ``source`` (``track``,
    ``memory`` or ``search``: where the answer came from)."""

    box: np.ndarray
    presence: float
    present: bool
    cues: np.ndarray
    source: str


class Target:
    """One object (see the module docstring).

    Args:
        tracker: a fresh :class:`~vision.tracking.nanotrack.NanoTracker` (its network may be shared).
        head: the presence head (its ``memory`` must match ``config.use_memory``).
        config: :class:`TargetConfig`.
        frame: the prompt's frame, uint8 ``[H, W, 3]`` RGB; geometry: its :class:`FrameGeometry`.
        box: the prompt ``(x, y, w, h)`` in pixels.
    """

    def __init__(self, tracker: NanoTracker, head: PresenceHead, config: TargetConfig, frame: np.ndarray,
                 geometry: FrameGeometry, box: np.ndarray) -> None:
        if (head.memory == "3d") != config.use_memory:
            raise InputError(f"a presence head of memory {head.memory!r} with use_memory={config.use_memory}")
        self.tracker, self.head, self.config = tracker, head, config
        tracker.init(frame, box)
        self.template = tracker.template.float().cpu().numpy()
        self.recent = self.template
        #: running level of the template cosine of the answers taken (None until the first is taken)
        self.template_level: float | None = None
        self.prompt_box = np.asarray(box, np.float64)
        self.prompt_size = self.prompt_box[2:]
        self.present = True
        self.since_recent = 0
        self.lost = 0
        self.tile = 0
        self.memory: np.ndarray | None = None  # world point of the object's centre
        self.memory_depth = float("nan")  # its depth when last seen, and the box size then
        self.memory_size = self.prompt_size.copy()
        #: every answer judged, as (cues, box), when set to a list (the presence head's training data)
        self.record: list[tuple[np.ndarray, np.ndarray]] | None = None
        #: None, or a function box -> presence probability that replaces the head's decisions (teacher forcing
        #: while the training data is collected); the head's cues are still computed and recorded
        self.oracle = None
        if config.use_memory:
            self._remember(geometry, np.asarray(box, np.float64))

    # -- the 3D memory -------------------------------------------------------------------------------------------
    def _remember(self, geometry: FrameGeometry, box: np.ndarray) -> None:
        depth = geometry.box_depth(box)
        if not (np.isfinite(depth) and depth > 0):
            return
        world = geometry.lift_at(box[:2] + box[2:] / 2, depth)
        self.memory, self.memory_depth, self.memory_size = world, depth, box[2:].copy()

    def memory_view(self, geometry: FrameGeometry) -> MemoryView | None:
        """Where the 3D memory is in this frame; None without one."""
        if self.memory is None:
            return None
        uv, z = geometry.project(self.memory)
        width, height = geometry.frame_size
        inside = bool(z[0] > 0 and 0 <= uv[0, 0] < width and 0 <= uv[0, 1] < height)
        return MemoryView(uv[0], z[0], inside)

    # -- scoring answers -----------------------------------------------------------------------------------------
    @torch.no_grad()
    def _box_features(self, frame: np.ndarray, box: np.ndarray) -> np.ndarray:
        """Template features of the context square at ``box`` (as :meth:`NanoTracker.init` crops)."""
        w, h = box[2], box[3]
        context = CONTEXT_AMOUNT * (w + h)
        side = max(int(math.sqrt((w + context) * (h + context))), 1)
        crop = crop_square(frame, box[:2] + box[2:] / 2, side, EXEMPLAR_SIZE)
        return self.tracker._features(crop).float().cpu().numpy()

    def _judge(self, frame: np.ndarray, geometry: FrameGeometry, response: Response,
               memory: MemoryView | None) -> tuple[np.ndarray, float, np.ndarray]:
        box = response.box
        features = self._box_features(frame, box)
        cues = cue_vector(response.probability, response.peak, response.score, box, geometry.frame_size,
                          self.prompt_size, feature_cosine(self.template, features),
                          feature_cosine(self.recent, features), self.template_level, memory,
                          geometry.box_depth(box) if memory is not None else float("nan"))
        if self.record is not None:
            self.record.append((cues, box))
        presence = float(self.oracle(box)) if self.oracle is not None else float(self.head.probability(cues))
        return cues, presence, features

    def _tiles(self, frame_size: tuple[int, int]) -> list[np.ndarray]:
        """Centres of a grid of search crops over the frame at the current size (half a crop apart)."""
        w, h = self.tracker.size
        context = CONTEXT_AMOUNT * (w + h)
        step = max(math.sqrt((w + context) * (h + context)) * INSTANCE_SIZE / EXEMPLAR_SIZE / 2, 8.0)
        width, height = frame_size
        xs = np.arange(step / 2, width, step) if width > step else np.array([width / 2])
        ys = np.arange(step / 2, height, step) if height > step else np.array([height / 2])
        return [np.array([x, y]) for y in ys for x in xs]

    # -- one frame -----------------------------------------------------------------------------------------------
    def step(self, frame: np.ndarray, geometry: FrameGeometry) -> Answer:
        """The object in the next frame (uint8 ``[H, W, 3]`` RGB, with its geometry)."""
        memory = self.memory_view(geometry) if self.config.use_memory else None
        own = self.tracker.respond(frame, self.tracker.centre, self.tracker.size)
        cues, presence, features = self._judge(frame, geometry, own, memory)
        threshold = self.config.presence_threshold if self.present else self.config.reacquire_threshold
        best = (presence, own, cues, features, "track")
        if not self.present and presence < threshold:  # lost: look where the memory and the grid say it may be
            for centre, size, source in self._candidates(geometry, memory):
                response = self.tracker.respond(frame, centre, size)
                c, p, f = self._judge(frame, geometry, response, memory)
                if p >= self.config.reacquire_threshold and p > best[0] + self.config.switch_margin:
                    best = (p, response, c, f, source)
        presence, response, cues, features, source = best
        if presence >= threshold:
            return self._take(frame, geometry, response, cues, presence, features, source)
        # absent: the track follows its own answer as NanoTrack alone would; the memory keeps the last sighting
        self.tracker.commit(own)
        self.present = False
        self.lost += 1
        return Answer(own.box, presence, False, cues, "track")

    def _candidates(self, geometry: FrameGeometry, memory: MemoryView | None
                    ) -> list[tuple[np.ndarray, np.ndarray, str]]:
        """``(centre, size, source)`` of the places looked at besides the track: the 3D memory's projection (when
        it is in view, the box scaled by the change of depth) and the next ``search_tiles`` tiles of the grid."""
        candidates: list[tuple[np.ndarray, np.ndarray, str]] = []
        if memory is not None and memory.in_view and np.isfinite(self.memory_depth) and memory.z > 0:
            size = np.clip(self.memory_size * self.memory_depth / memory.z, 10.0, np.array(geometry.frame_size))
            candidates.append((memory.uv, size, "memory"))
        if self.config.search_tiles:
            tiles = self._tiles(geometry.frame_size)
            for k in range(min(self.config.search_tiles, len(tiles))):
                candidates.append((tiles[(self.tile + k) % len(tiles)], self.tracker.size.copy(), "search"))
            self.tile = (self.tile + self.config.search_tiles) % len(tiles)
        return candidates

    def _take(self, frame: np.ndarray, geometry: FrameGeometry, response: Response, cues: np.ndarray,
              presence: float, features: np.ndarray, source: str) -> Answer:
        self.tracker.commit(response)
        self.present, self.lost = True, 0
        box = response.box
        if self.config.use_memory:
            self._remember(geometry, box)
        cosine = float(cues[CUES.index("template_cosine")])
        self.template_level = cosine if self.template_level is None else 0.9 * self.template_level + 0.1 * cosine
        self.since_recent += 1
        if self.since_recent >= self.config.recent_every and presence >= 0.8:
            self.recent, self.since_recent = features, 0
        return Answer(box, presence, True, cues, source)
