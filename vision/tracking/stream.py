"""Tracking frames as they arrive: causal, in bounded memory, one result per frame as soon as its window is done.

:class:`TrackerStream` runs the windows of :func:`vision.tracking.propagation.windows` over a stream: the prompted
views (anchors, at most ``max_anchors``) are kept for the whole stream and sit in every window, the other frames
wait until ``window_size - len(anchors)`` of them have arrived, and each window is encoded and decoded by
:meth:`TrackerPredictor.track_window`, the function :meth:`TrackerPredictor.propagate` uses. A result therefore
depends on its own window and on the 3D memory carried from the windows before, never on a later frame, and equals
the result of ``propagate`` on the same frames (``tests/tracking/test_stream.py``). A frame's result comes out when
its window is full (at most ``window_size - len(anchors) - 1`` frames of latency) or at :meth:`finish`.

What is held, whatever the length of the stream: the anchors' frames and at most one window of waiting frames (at
the model size), each object's carried memory (``memory_points`` 3D points and a feature) and its point cloud
(at most ``max_cloud_points``); no encoding is kept between windows. Frames that arrive before the last anchor are
held until it arrives (prompt early frames: SAM 2's camera predictors prompt the first one).

Usage::

    stream = TrackerStream(predictor, height=480, width=640)
    stream.add_prompt(view=0, obj_id=1, points=[[320, 240]], labels=[1])
    for step in stream.track(frames):       # any iterable of uint8 [H, W, 3] RGB frames
        step.view, step.obj_ids, step.masks, step.scores   # masks bool [N, H, W] at the input size
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator

import numpy as np

from vision.data.resize import resize_nearest
from vision.errors import InputError
from vision.tracking.memory3d import ObjectMemory
from vision.tracking.predictor import TrackerPredictor
from vision.tracking.session import ObjectPrompt, TrackerState, as_int

__all__ = ["StreamStep", "TrackerStream"]


@dataclass
class StreamStep:
    """One frame's result: ``view`` (its index in the stream, from 0), ``obj_ids``, ``masks`` bool ``[N, H, W]`` at
    the input size, ``scores [N]`` presence probabilities; for a model with 3D memory (G2TAM) the frame's
    ``extrinsics [3, 4]`` (OpenCV, world frame of the first anchor), ``intrinsics [3, 3]`` (model pixels) and
    ``depth [s, s]``, else None."""

    view: int
    obj_ids: list[int]
    masks: np.ndarray
    scores: np.ndarray
    extrinsics: np.ndarray | None = None
    intrinsics: np.ndarray | None = None
    depth: np.ndarray | None = None


@dataclass
class _Pending:
    """Frames received but not yet tracked: the anchors' (kept for the whole stream) and the others'."""

    anchors: dict[int, np.ndarray] = field(default_factory=dict)
    waiting: list[tuple[int, np.ndarray]] = field(default_factory=list)


class TrackerStream:
    """Causal tracking over a stream of frames (see the module docstring).

    Args:
        predictor: the :class:`TrackerPredictor` (its model, device, precision, ``window_size``, ``max_anchors``,
            thresholds and memory sizes are used).
        height, width: the frames' size (the pixels prompts are given in and masks come back in).
    """

    def __init__(self, predictor: TrackerPredictor, height: int, width: int) -> None:
        self.predictor = predictor
        self.height, self.width = as_int(height, "height"), as_int(width, "width")
        if self.height < 1 or self.width < 1:
            raise InputError(f"the stream's frame size must be positive, got {self.width}x{self.height}")
        s = predictor._size()
        # a state over a virtual stream (no frame held: a zero-stride view) on which prompts are checked
        virtual = np.broadcast_to(np.zeros((1, s, s, 3), np.uint8), (2**31 - 1, s, s, 3))
        self._prompt_state = TrackerState(frames=virtual, height=self.height, width=self.width, ordered=True)
        self.prompts: dict[int, ObjectPrompt] = {}
        self.clouds: dict[int, np.ndarray] = {}
        self.cloud_colors: dict[int, np.ndarray] = {}
        self.memory: ObjectMemory = {}
        self._pending = _Pending()
        self._anchors: list[int] | None = None
        self._received = 0
        self._windows_done = 0
        self._decoder = predictor._window_decoder()

    # ------------------------------------------------------------------ prompts

    def add_prompt(self, view: int | None, obj_id: int, points: Any = None, labels: Any = None, box: Any = None,
                   mask: Any = None, text: str | None = None) -> None:
        """Add or replace object ``obj_id``'s prompt (as :meth:`TrackerPredictor.add_prompt`; ``view`` counts the
        stream's frames from 0). Prompts are given before the first frame is pushed."""
        if self._received:
            raise InputError("prompts are given before the first frame is pushed into the stream")
        obj_id = as_int(obj_id, "obj_id")
        self.prompts[obj_id] = self.predictor.make_prompt(self._prompt_state, view, points=points, labels=labels,
                                                          box=box, mask=mask, text=text)

    @property
    def anchors(self) -> list[int]:
        """The views every window holds: the first ``max_anchors`` prompted views (view 0 with text prompts only),
        as :func:`vision.tracking.propagation.windows` chooses them."""
        prompted = sorted({p.view for p in self.prompts.values() if p.view is not None})
        return prompted[: self.predictor.max_anchors] or [0]

    @property
    def kept_views(self) -> int:
        """How many frames the stream holds now (anchors and waiting frames, at the model size)."""
        return len(self._pending.anchors) + len(self._pending.waiting)

    @property
    def num_received(self) -> int:
        return self._received

    # ------------------------------------------------------------------ frames

    def push(self, frame: Any) -> list[StreamStep]:
        """Receive the next frame (uint8 ``[H, W, 3]`` RGB at the stream's size); returns the results of the frames
        whose window this frame completed (possibly none), in frame order."""
        from vision.data.video import read_frames

        if not self.prompts:
            raise InputError("no prompts: call add_prompt(...) before pushing frames")
        array = np.asarray(frame)
        if array.ndim != 3 or array.shape[-1] != 3 or array.dtype != np.uint8:
            raise InputError(f"frame {self._received}: expected uint8 [H, W, 3] RGB, got {array.dtype} "
                             f"{array.shape}")
        if array.shape[:2] != (self.height, self.width):
            raise InputError(f"frame {self._received}: size {array.shape[1]}x{array.shape[0]} differs from the "
                             f"stream's {self.width}x{self.height}")
        if self._anchors is None:
            self._start()
        s = self.predictor._size()
        small = read_frames(array[None], (s, s))[0][0]  # the resize init_state applies to frames
        view = self._received
        self._received += 1
        if view in self._anchors:
            self._pending.anchors[view] = small
        else:
            self._pending.waiting.append((view, small))
        steps: list[StreamStep] = []
        while len(self._pending.anchors) == len(self._anchors) and len(self._pending.waiting) >= self._chunk:
            steps += self._window(self._chunk)
        return steps

    def finish(self) -> list[StreamStep]:
        """The stream has ended: track the frames still waiting; returns their results. A prompt on a frame that
        never arrived is an :class:`InputError`."""
        if self._anchors is None:
            return []
        missing = [v for v in self._anchors if v not in self._pending.anchors]
        if missing:
            raise InputError(f"the stream ended after {self._received} frames, before the prompted frame "
                             f"{missing[0]}")
        steps: list[StreamStep] = []
        if self._pending.waiting or self._windows_done == 0:
            steps += self._window(len(self._pending.waiting))
        return steps

    def track(self, frames: Iterable[Any]) -> Iterator[StreamStep]:
        """Push every frame of ``frames`` (consumed as it comes) and finish; yields each frame's result as soon as
        it is known."""
        for frame in frames:
            yield from self.push(frame)
        yield from self.finish()

    # ------------------------------------------------------------------ windows

    def _start(self) -> None:
        self._anchors = self.anchors
        self._chunk = self.predictor.window_size - len(self._anchors)
        self.clouds.update({o: np.zeros((0, 3), np.float32) for o in self.prompts})
        self.cloud_colors.update({o: np.zeros((0, 3), np.float32) for o in self.prompts})

    def _window(self, count: int) -> list[StreamStep]:
        """Track the anchors plus the first ``count`` waiting frames (the first window also yields the anchors)."""
        anchors = self._anchors
        new = self._pending.waiting[:count]
        del self._pending.waiting[:count]
        views = anchors + [v for v, _ in new]
        emit = [v for v, _ in new] + (list(anchors) if self._windows_done == 0 else [])
        frames = np.stack([self._pending.anchors[a] for a in anchors] + [f for _, f in new])
        state = self._window_state(views, frames)
        obj_ids = state.obj_ids
        local = list(range(len(views)))
        local_emit = [views.index(v) for v in emit]
        masks, prob = self.predictor.track_window(state, obj_ids, local, local_emit, self.memory, self._decoder)
        self._windows_done += 1
        geometry = self.predictor.model.uses_geometry_memory
        steps = []
        for v in sorted(emit):
            i = views.index(v)
            full = np.ascontiguousarray(resize_nearest(masks[i].transpose(1, 2, 0),
                                                       (self.height, self.width)).transpose(2, 0, 1))
            steps.append(StreamStep(v, list(obj_ids), full, prob[i].astype(np.float32),
                                    state.extrinsics[i].copy() if geometry else None,
                                    state.intrinsics[i].copy() if geometry else None,
                                    state.depth[i].copy() if geometry else None))
        return steps

    def _window_state(self, views: list[int], frames: np.ndarray) -> TrackerState:
        """A state holding one window's frames, its prompts moved to the window's indices (a visual prompt on a
        view outside the window gets view -1: in no window), the stream's clouds (grown in place)."""
        prompts = {}
        for obj_id, prompt in self.prompts.items():
            view = prompt.view
            if view is not None:
                view = views.index(view) if view in views else -1
            prompts[obj_id] = ObjectPrompt(view=view, points=prompt.points, labels=prompt.labels, mask=prompt.mask,
                                           text=prompt.text, text_embedding=prompt.text_embedding)
        t, s = len(views), frames.shape[1]
        return TrackerState(frames=frames, height=self.height, width=self.width, ordered=True, prompts=prompts,
                            extrinsics=np.zeros((t, 3, 4), np.float32), intrinsics=np.zeros((t, 3, 3), np.float32),
                            depth=np.zeros((t, s, s), np.float32), clouds=self.clouds,
                            cloud_colors=self.cloud_colors)
