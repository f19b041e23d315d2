"""TrackerPredictor: SAM2-like interactive API over G2TAM (or the memory-bank control) for videos and image sets.

Usage::

    predictor = TrackerPredictor.from_checkpoint("runs/tracking/tiny/checkpoints/last.ckpt")
    state = predictor.init_state("clip.mp4")                  # or frames [T, H, W, 3] uint8, or image paths
    predictor.add_prompt(state, view=0, obj_id=1, points=[[120, 80]], labels=[1])
    predictor.add_prompt(state, view=0, obj_id=2, box=[10, 20, 60, 90])
    predictor.add_prompt(state, view=None, obj_id=3, text="the red mug")
    for view, obj_ids, masks, scores in predictor.propagate(state):   # masks bool [N, H, W], scores [N]
        ...
    state.point_cloud(1); state.export_ply("obj1.ply", obj_id=1); state.cameras; state.depth

Conventions: points ``(x, y)`` and boxes XYXY in pixels of the input frames (as SAM2); frames are resized to the
model's square input size internally and masks are returned at the input size. Label 1 = positive, 0 = negative.
A video file or image files are read straight to the model size under the input limits of :mod:`vision.data.io`
(frames over ``max_pixels`` are refused from their header, before decoding): the state holds only model-size
frames, and a mask at the input size is made per view as :meth:`TrackerPredictor.propagate` yields it.

Long videos and large sets are processed in windows of ``window_size`` views (:mod:`vision.tracking.propagation`).
A model with ``uses_geometry_memory`` (G2TAM; :class:`~vision.tracking.interface.TrackingModel`) carries each
object's 3D points and mean appearance from window to window (:mod:`vision.tracking.memory3d`) and, with
``refine=True``, decodes a window twice (the first pass's masks lifted to 3D); peak memory depends on the window,
not on the video length. Cameras and depth are those of the window in which each view was processed. The backbone
runs once per window either way.

The jobs live in their own modules: the state and its prompts in :mod:`vision.tracking.session`, windows and the
two passes in :mod:`vision.tracking.propagation`, the 3D memory in :mod:`vision.tracking.memory3d`, the point-cloud
export in :mod:`vision.tracking.export`, reading the input in :mod:`vision.data.video`; frames that arrive one by
one (a camera, a stream) are tracked causally in bounded memory by :class:`vision.tracking.stream.TrackerStream`,
through the same :meth:`TrackerPredictor.track_window`. ``device=`` / ``precision=`` (:mod:`vision.device`) choose
where the model runs and the autocast dtype of its networks.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

import numpy as np
import torch

from vision.data.io import MAX_INPUT_PIXELS
from vision.data.resize import resize_nearest
from vision.device import autocast, load_for_inference, placement
from vision.errors import InputError
from vision.geometry.solver import CameraSolver
from vision.tracking.interface import TrackingModel
from vision.tracking.memory3d import ObjectMemory, update_memory
from vision.tracking.propagation import WindowDecoder, propagation_views, windows
from vision.tracking.session import (ObjectPrompt, TrackerState, as_int, known_world_points, object_prompt,
                                     set_known_geometry)
from vision.tracking.task import load

__all__ = ["Predictor", "OBJECT_BUCKET", "TrackerPredictor", "TrackerState", "ObjectPrompt"]

#: objects per decoder call by default (:class:`TrackerPredictor`'s ``object_bucket``)
OBJECT_BUCKET: int | None = 16


class TrackerPredictor:
    """Interactive tracker over a trained model (see the module docstring).

    Args:
        model: a :class:`~vision.tracking.interface.TrackingModel`: :class:`~vision.tracking.model.G2TAM` or
            :class:`~vision.tracking.baseline.MemoryBankTracker` (eval mode is set).
        text_encoder: a TextEncoder callable or a name for :func:`vision.text.get_text_encoder` (loaded on the
            first text prompt).
        window_size: views per window. max_anchors: prompted views kept in every window.
        memory_points: 3D points carried per object between windows. max_cloud_points: cap per object cloud.
        presence_threshold: presence probability under which an object's mask is emptied.
        mask_threshold: mask logit above which a pixel belongs to the object (SAM2's ``mask_threshold``).
        refine: decode each window a second time with the first pass's masks lifted to 3D (models with
            ``uses_geometry_memory`` only): a visual prompt's mask on its view; for a text prompt, the mask on the
            view where the object is most surely present. None (the default): the model's ``second_pass``
            (:attr:`G2TAM.second_pass <vision.tracking.model.G2TAM.second_pass>`; True for a model without one).
        device: ``"auto"``, ``"cpu"``, ``"cuda[:N]"``, ``"mps"`` or a ``torch.device``
            (:func:`vision.device.resolve_device`; default: the model's).
        precision: ``"32"``, ``"bf16"``, ``"16"`` or a ``torch.dtype``: the networks run under
            :func:`vision.device.autocast` in it (weights stay float32); masks, scores and geometry come back float32.
        cache_views: the encodings of at most this many views (whole windows, least recently used dropped first)
            are kept in the state between propagations; 0 keeps none. The default holds a 64-frame demo clip.
        object_bucket: objects decoded per call of the model's decoder (None: all in one call): every bucket reads
            the window's one encoding, and the decoder's working memory is that of one bucket
            (:meth:`~vision.tracking.propagation.WindowDecoder.decode`).
        solve_cameras: G2TAM's memory reads the depth head's depth unprojected by the camera solver's cameras
            (:meth:`G2TAM.solved_tracking_encoding <vision.tracking.model.G2TAM.solved_tracking_encoding>`,
            :class:`~vision.geometry.solver.CameraSolver` with its defaults) instead of the point head's points:
            higher J&F on videos, about the same on unordered views, and a dense flow between every two views of
            each window on the CPU (docs/tracking.md). Only for a model with ``uses_geometry_memory``.
    """

    def __init__(self, model: TrackingModel, text_encoder: Any = "minilm", window_size: int = 8,
                 max_anchors: int = 2, memory_points: int = 64, max_cloud_points: int = 20000,
                 presence_threshold: float = 0.5, mask_threshold: float = 0.0, refine: bool | None = None,
                 device: torch.device | str | None = None, cache_views: int = 96,
                 precision: str | torch.dtype = "32", object_bucket: int | None = OBJECT_BUCKET,
                 solve_cameras: bool = False) -> None:
        if window_size < 2 or max_anchors < 1 or max_anchors >= window_size:
            raise InputError(f"need window_size >= 2 and 1 <= max_anchors < window_size, got {window_size}, "
                             f"{max_anchors}")
        self.model = model.eval()
        self.device, self.dtype = placement(device, precision, model)
        self.model.to(self.device)
        self.image_size: int | None = int(model.image_size)
        self._text_encoder = text_encoder
        self.window_size, self.max_anchors = window_size, max_anchors
        self.memory_points, self.max_cloud_points = memory_points, max_cloud_points
        self.presence_threshold = presence_threshold
        self.mask_threshold = mask_threshold
        self.refine = bool(getattr(model, "second_pass", True)) if refine is None else bool(refine)
        if isinstance(cache_views, bool) or not isinstance(cache_views, int) or cache_views < 0:
            raise InputError(f"cache_views must be an integer >= 0, got {cache_views!r}")
        self.cache_views = cache_views
        if object_bucket is not None and (isinstance(object_bucket, bool) or not isinstance(object_bucket, int)
                                          or object_bucket < 1):
            raise InputError(f"object_bucket must be an integer >= 1 or None, got {object_bucket!r}")
        self.object_bucket = object_bucket
        if solve_cameras and not model.uses_geometry_memory:
            raise InputError(f"solve_cameras needs a model with a geometry memory (G2TAM), got "
                             f"{type(model).__name__}")
        self.solver = CameraSolver() if solve_cameras else None

    @classmethod
    def from_checkpoint(cls, path: str | Path, image_size: int | None = None, device: torch.device | str = "cpu",
                        precision: str | torch.dtype = "32", **kwargs: Any) -> "TrackerPredictor":
        """Build from a :class:`~vision.tracking.lightning.TrackingModule` checkpoint or a tracking model folder,
        read by :func:`vision.tracking.task.load` (:func:`vision.device.load_for_inference`) onto ``device``
        (``"auto"`` and the other names of :func:`vision.device.resolve_device`), run in ``precision``;
        ``image_size`` rebuilds the model for another input size; the text encoder defaults to the checkpoint's
        (``config.text_encoder``); other keyword arguments go to the constructor."""
        (model, config), device, dtype = load_for_inference(load, path, device, precision,
                                                           image_size=image_size)
        kwargs.setdefault("text_encoder", config.text_encoder)
        return cls(model, device=device, precision=dtype, **kwargs)

    # ------------------------------------------------------------------ state

    def _size(self) -> int:
        if self.image_size is None:
            raise InputError("the predictor does not know the model's input size; pass image_size")
        return self.image_size

    def init_state(self, source: Any, ordered: bool | None = None, max_frames: int | None = None,
                   stride: int = 1, max_pixels: int | None = MAX_INPUT_PIXELS) -> TrackerState:
        """Start a state from frames (uint8 ``[T, H, W, 3]`` RGB or float ``[T, 3, H, W]`` in [0, 1]), a video
        path, or a list of image paths (:func:`vision.data.video.read_frames`). ``ordered`` defaults to True for
        videos and frames, False for image lists. ``stride`` / ``max_frames`` sample a video file; files with
        frames over ``max_pixels`` are refused (None: no limit). The input size (the prompts' and masks' pixels)
        is the video's, or the first image's."""
        from vision.data.video import read_frames

        s = self._size()
        frames, (height, width) = read_frames(source, (s, s), stride=stride, max_frames=max_frames,
                                              max_pixels=max_pixels)
        if ordered is None:
            ordered = not isinstance(source, (list, tuple))
        return TrackerState(frames=np.ascontiguousarray(frames), height=int(height), width=int(width),
                            ordered=bool(ordered))

    def set_known_geometry(self, state: TrackerState, depth: Any, extrinsics: Any, intrinsics: Any) -> None:
        """Give G2TAM the scene's geometry (an RGB-D sensor with poses, or ground truth: the oracle of the
        benchmarks): its point maps replace the backbone's in every window.

        Args:
            depth: float ``[T, H, W]`` metric z-depth at the input size, 0 (or non-finite) where unknown.
            extrinsics: ``[T, 3, 4]`` OpenCV camera-from-world; intrinsics: ``[T, 3, 3]`` in input pixels.

        In each window the points are expressed in the window's first view's camera frame and scaled to a mean
        norm of 1, the frame and scale the backbone's point maps have (``vision.geometry.losses.normalize_scene``).
        A model without ``uses_geometry_memory`` (the control) has no point maps: it ignores them.
        """
        set_known_geometry(state, depth, extrinsics, intrinsics)

    def reset(self, state: TrackerState) -> None:
        """Remove every prompt and result (frames and cached encodings stay)."""
        state.clear()

    def clear_prompts(self, state: TrackerState, obj_id: int | None = None) -> None:
        """Remove the prompts of object ``obj_id`` (the object and its cloud go with them), or of every object
        with ``obj_id=None``. Frames and cached encodings stay, so prompting again decodes without re-encoding.
        An unknown id raises :class:`InputError`."""
        if obj_id is None:
            self.reset(state)
        else:
            self.remove_object(state, as_int(obj_id, "obj_id"))

    def remove_object(self, state: TrackerState, obj_id: int) -> None:
        """Forget one object; unknown ids raise :class:`InputError`."""
        state.remove(obj_id)

    def _embed_text(self, text: str) -> torch.Tensor:
        if isinstance(self._text_encoder, str):
            from vision.text import get_text_encoder

            self._text_encoder = get_text_encoder(self._text_encoder)
        if self._text_encoder is None:
            raise InputError("this predictor has no text encoder")
        return self._text_encoder([text])[0].detach().float().cpu()

    def add_prompt(self, state: TrackerState, view: int | None, obj_id: int, points: Any = None,
                   labels: Any = None, box: Any = None, mask: Any = None, text: str | None = None) -> None:
        """Add or replace object ``obj_id``'s prompt on ``view`` (input pixels; see the module docstring).

        ``points [K, 2]`` with ``labels [K]`` (1 positive, 0 negative; default all positive), ``box [4]`` XYXY,
        ``mask [H, W]`` bool at the input size, ``text`` a description. Text alone needs no view."""
        obj_id = as_int(obj_id, "obj_id")
        state.prompts[obj_id] = self.make_prompt(state, view, points=points, labels=labels, box=box, mask=mask,
                                                 text=text)

    def make_prompt(self, state: TrackerState, view: int | None, points: Any = None, labels: Any = None,
                    box: Any = None, mask: Any = None, text: str | None = None) -> ObjectPrompt:
        """One object's prompt on ``state``'s frames (as :meth:`add_prompt`, which stores it), checked, in model
        pixels, its text embedded."""
        prompt = object_prompt(state, view, points=points, labels=labels, box=box, mask=mask, text=text)
        if prompt.text is not None:
            prompt.text_embedding = self._embed_text(prompt.text)
        return prompt

    # ------------------------------------------------------------------ propagation

    def _encode(self, state: TrackerState, window: list[int]) -> dict[str, Any]:
        """The window's encoding (:meth:`TrackerState.cached_encoding`: the backbone runs on a window not encoded
        before); known point maps (:meth:`set_known_geometry`) replace the model's on the way out."""
        def encode() -> dict[str, Any]:
            images = torch.from_numpy(state.frames[window]).to(self.device).permute(0, 3, 1, 2).float()[None] / 255
            if self.solver is not None:
                return self.model.solved_tracking_encoding(images, self.solver)
            return self.model.tracking_encoding(images)

        encoded = state.cached_encoding(window, encode, self.cache_views)
        if self.model.uses_geometry_memory and state.known_depth is not None:
            encoded = {**encoded, "world_points": known_world_points(state, window).to(self.device).to(
                encoded["world_points"].dtype)}
        return encoded

    def _window_decoder(self) -> WindowDecoder:
        return WindowDecoder(self.model, self.device, mask_threshold=self.mask_threshold,
                             presence_threshold=self.presence_threshold, memory_points=self.memory_points,
                             refine=self.refine, object_bucket=self.object_bucket)

    @torch.no_grad()
    def propagate(self, state: TrackerState, start_view: int | None = None, reverse: bool = False,
                  max_views: int | None = None) -> Iterator[tuple[int, list[int], np.ndarray, np.ndarray]]:
        """Yield ``(view, obj_ids, masks bool [N, H, W], scores [N])`` per view (input size; score = presence
        probability), in frame order from ``start_view`` (default the first view; with ``reverse`` in backward
        order from it, default the last view), at most ``max_views`` views (default all). Windows are processed
        one after another; each window's encoding is kept in the state, so propagating again after
        :meth:`add_prompt` (a correction click) only decodes."""
        if not state.prompts:
            raise InputError("no prompts: call add_prompt(state, ...) before propagate(state)")
        views = propagation_views(state.num_views, start_view, reverse, max_views)
        position = {v: i for i, v in enumerate(views)}
        obj_ids = state.obj_ids
        s = self._size()
        t = state.num_views
        if state.extrinsics is None or len(state.extrinsics) != t:
            state.extrinsics = np.zeros((t, 3, 4), np.float32)
            state.intrinsics = np.zeros((t, 3, 3), np.float32)
            state.depth = np.zeros((t, s, s), np.float32)
        state.clouds = {o: np.zeros((0, 3), np.float32) for o in obj_ids}
        state.cloud_colors = {o: np.zeros((0, 3), np.float32) for o in obj_ids}
        memory: ObjectMemory = {}
        decoder = self._window_decoder()
        for window, emit in windows(state.prompted_views, views, self.window_size, self.max_anchors):
            masks_np, prob_np = self.track_window(state, obj_ids, window, emit, memory, decoder)
            for i, v in sorted(((window.index(v), v) for v in emit), key=lambda x: position[x[1]]):
                full = np.ascontiguousarray(resize_nearest(masks_np[i].transpose(1, 2, 0),
                                                           (state.height, state.width)).transpose(2, 0, 1))
                yield v, list(obj_ids), full, prob_np[i].astype(np.float32)

    @torch.no_grad()
    def track_window(self, state: TrackerState, obj_ids: list[int], window: list[int], emit: list[int],
                     memory: ObjectMemory, decoder: WindowDecoder | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Encode and decode one window of ``state`` (its views ``window``, indices into the state) in the
        predictor's precision: masks bool ``[S, N, s, s]`` and presence ``[S, N]`` float32 at the model size, for
        ``obj_ids`` on every view of the window. For a model with 3D memory the cameras and depth of the views
        ``emit`` are recorded in the state, their points grow the objects' clouds, and ``memory`` (obj_id ->
        carried 3D points) is updated in place for the next window. :meth:`propagate` and
        :class:`~vision.tracking.stream.TrackerStream` both track through it."""
        decoder = decoder or self._window_decoder()
        with autocast(self.device, self.dtype):
            encoded = self._encode(state, window)
            prompts = decoder.prompts(state, obj_ids, window, memory)
            if self.model.uses_geometry_memory:
                wp = encoded["world_points"][0].float().cpu().numpy()  # [S, s, s, 3]
                feats = encoded["feats"][0]
                masks, prob = decoder.two_pass(state, obj_ids, window, encoded, prompts, wp, feats, memory)
                state.record_geometry(window, emit, encoded)
                update_memory(state, obj_ids, window, emit, masks, wp, feats, memory, self.memory_points,
                              self.max_cloud_points)
            else:
                masks, prob = decoder.decode(encoded, prompts)
        return masks.cpu().numpy(), prob.float().cpu().numpy()

#: the task's predictor (the registry's fixed name, vision.tasks.PARTS)
Predictor = TrackerPredictor
