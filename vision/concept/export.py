"""The files of a concept-prompted run (:func:`export_concepts`): the records, the drawn views, each instance's 3D
points and the scene, as ``vision-predict --concept`` and the demo's Track tab write them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator, Sequence

import numpy as np

from vision.errors import DataError, InputError

if TYPE_CHECKING:
    from vision.concept.predictor import ConceptPredictor, ConceptState

__all__ = ["ConceptExport", "label_instances", "export_concepts", "export_folder", "write_drawn"]


@dataclass
class ConceptExport:
    """What :func:`export_concepts` wrote into ``folder``: ``results`` (JSON), ``video`` (annotated mp4, or None
    when ``images`` were written instead), ``plys`` (instance id -> its .ply; instances without a 3D point are in
    ``empty``), ``scene_ply`` / ``scene_glb`` (None without geometry), and for the summary: ``phrases`` (instance
    id -> its concept's name), ``views_with_instance`` (id -> views where its mask is not empty) and
    ``present`` (concept name -> views whose presence passes the model's threshold)."""

    folder: Path
    results: Path
    video: Path | None = None
    images: list[Path] = field(default_factory=list)
    plys: dict[int, Path] = field(default_factory=dict)
    empty: list[int] = field(default_factory=list)
    scene_ply: Path | None = None
    scene_glb: Path | None = None
    phrases: dict[int, str] = field(default_factory=dict)
    views_with_instance: dict[int, int] = field(default_factory=dict)
    present: dict[str, int] = field(default_factory=dict)

    def summary(self, views: int) -> list[str]:
        """One line per concept: its instances and on how many of ``views`` it is present."""
        lines = []
        for name, count in self.present.items():
            ids = [o for o, p in self.phrases.items() if p == name]
            found = ", ".join(f"{o} ({self.views_with_instance.get(o, 0)} views)" for o in ids) or "none"
            lines.append(f"{name}: present on {count} of {views} views; {len(ids)} instance(s): {found}")
        return lines


def label_instances(frame: np.ndarray, masks: Sequence[np.ndarray], obj_ids: Sequence[int],
                    labels: Sequence[str]) -> np.ndarray:
    """``frame`` uint8 [H, W, 3] RGB with each mask (bool, any size) filled and outlined in the colour of its id and
    labelled "<id> <label>" at its top-left (:func:`vision.tracking.export.overlay_masks` draws the mask and the id;
    the label follows the id in the same colour). Returns a new array."""
    from vision.tracking.export import overlay_masks

    return overlay_masks(frame, list(masks), list(obj_ids), labels=list(labels))


def export_folder(what: str, frames: Sequence[Any], image_names: Sequence[str] | None, total: int,
                  out_dir: str | Path) -> Path:
    """``out_dir``, created, once ``frames`` (and ``image_names``, when given) have one entry per view of a state of
    ``total`` views; an :class:`InputError` naming ``what`` otherwise."""
    if len(frames) != total or (image_names is not None and len(image_names) != total):
        raise InputError(f"{what}: {len(frames)} frames and {'no' if image_names is None else len(image_names)} "
                         f"image names for a state of {total} views")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    return out


def write_drawn(export: ConceptExport, drawn: Iterator[np.ndarray], out: Path, fps: float,
                image_names: Sequence[str] | None) -> None:
    """Write the drawn views into ``out``: ``annotated.mp4`` at ``fps`` (``export.video``), or, with
    ``image_names``, ``annotated/<name>.png`` per view (``export.images``; a second name with the same stem keeps its
    extension)."""
    from vision.data.video import write_video

    if image_names is None:
        export.video = write_video(out / "annotated.mp4", drawn, fps=fps, crf=20, preset="veryfast")
        return
    import cv2

    (out / "annotated").mkdir(exist_ok=True)
    taken: set[str] = set()
    for name, image in zip(image_names, drawn):
        stem = Path(name).stem if Path(name).stem not in taken else Path(name).name  # a.png next to a.jpg
        taken.add(stem)
        path = out / "annotated" / f"{stem}.png"
        if not cv2.imwrite(str(path), cv2.cvtColor(image, cv2.COLOR_RGB2BGR)):
            raise DataError("OpenCV could not write the image", file=path)
        export.images.append(path)


def export_concepts(predictor: "ConceptPredictor", state: "ConceptState", frames: np.ndarray, out_dir: str | Path,
                    fps: float = 10.0, image_names: Sequence[str] | None = None,
                    progress: Callable[[int, int], None] | None = None) -> ConceptExport:
    """Propagate ``state`` (concepts already added) and write, into ``out_dir``: ``results.json``
    (:func:`vision.concept.inference.concept_records`, video id 1, image id = view + 1, category id = concept
    index + 1), the drawn views (:func:`label_instances` on ``frames`` uint8 [T, H, W, 3], the input's or
    downscaled: ``annotated.mp4`` at ``fps``, or ``annotated/<name>.png`` per view when ``image_names`` are
    given), ``instance_<id>.ply`` per instance with 3D points, and ``scene.ply`` / ``scene.glb``.
    ``progress(done, total)`` is called after each view."""
    from vision.concept.inference import concept_records
    from vision.data.io import atomic_write_json
    from vision.data.resize import resize_nearest
    from vision.tracking.export import _write_scene_ply, scene_points

    total = state.num_views
    out = export_folder("export_concepts", frames, image_names, total, out_dir)
    size = state.tracker.size
    names = [c.name for c in state.concepts]
    small: dict[int, np.ndarray] = {}  # instance id -> bool [T, s, s] masks at the model size

    def kept(outputs: Iterator[tuple]) -> Iterator[tuple]:  # the records and the drawing from one propagation
        for item in outputs:
            view, obj_ids, _, masks, _ = item
            for obj_id, mask in zip(obj_ids, masks):
                small.setdefault(obj_id, np.zeros((total, size, size), bool))[view] = resize_nearest(mask,
                                                                                                     (size, size))
            if progress is not None:
                progress(view + 1, total)
            yield item

    records = concept_records(kept(predictor.propagate(state)), state, 1, [v + 1 for v in range(total)],
                              list(range(1, len(names) + 1)))
    export = ConceptExport(folder=out, results=out / "results.json")
    atomic_write_json(export.results, records)
    ids = sorted(small)
    export.phrases = {o: names[state.instances[o]] for o in ids}
    export.views_with_instance = {o: int(small[o].any(axis=(1, 2)).sum()) for o in ids}
    threshold = predictor.config.presence_threshold
    export.present = {name: int((state.presence[:, k] >= threshold).sum()) for k, name in enumerate(names)}
    labels = [export.phrases[o] for o in ids]
    drawn = (label_instances(frame, [small[o][view] for o in ids], ids, labels) for view, frame in enumerate(frames))
    write_drawn(export, drawn, out, fps, image_names)
    tracker = state.tracker
    for obj_id in ids:
        if len(tracker.clouds.get(obj_id, ())) == 0:
            export.empty.append(obj_id)
        else:
            export.plys[obj_id] = tracker.export_ply(out / f"instance_{obj_id}.ply", obj_id=obj_id)
    if ids and tracker.depth is not None and (tracker.depth > 0).any():
        from vision.data.glb import write_points_glb

        points, colours = scene_points(tracker, small)
        if len(points):
            export.scene_ply = _write_scene_ply(out / "scene.ply", points, colours)
            take = np.linspace(0, len(points) - 1, min(6000, len(points))).round().astype(int)
            export.scene_glb = write_points_glb(out / "scene.glb", points[take], colours[take])
    return export
