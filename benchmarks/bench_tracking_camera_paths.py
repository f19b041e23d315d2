"""The real trackers on held-out camera-path clips (vision.tracking.real.camera_paths): photographs the presence
heads never trained on (every ``val_every``-th photograph, the training data module's validation photographs),
new clips (seed ``--seed``), each event in turn (exit, occlusion, follow, walk-out; twins and turns as in
training). Every frame is labelled, so this is where the 3D memory's job is measured at scale: the 3D-memory model
against its 2D-memory control and NanoTrack alone, by ``vision.evaluation.box_tracks`` (absent where under a tenth
of the object is visible; frames between a tenth and a half are not scored).

    python benchmarks/bench_tracking_camera_paths.py --real-ckpt g2tam-real=runs/tracking/real/checkpoints/last.ckpt \\
        --real-ckpt g2tam-real-2d=runs/tracking/real_2d/checkpoints/last.ckpt [--photos datasets/real_checked_photos]
        [--clips-per-object 4] [--seed 1]
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def build_clips(photos, objects, clips_per_object: int, seed: int, frames: int = 48):
    from vision.errors import InputError
    from vision.tracking.real.camera_paths import EVENTS, camera_path_clip

    rng = np.random.default_rng(seed)
    out = []
    for n, (index, box) in enumerate(objects):
        for k in range(clips_per_object):
            other = photos[(index + 1 + k) % len(photos)][1]
            occluder = other[: other.shape[0] // 2, : other.shape[1] // 2]
            try:
                clip = camera_path_clip(photos[index][1], box, rng, EVENTS[(n + k) % len(EVENTS)], frames,
                                        (320, 240), occluder)
            except InputError:
                continue
            if clip.visible[0] >= 0.99:
                out.append(clip)
    return out


def split_of(clips) -> dict:
    """A COCO-video box-track split of the clips: every frame scored but those where 10-50% of the object shows."""
    images, annotations, videos, tracks = [], [], [], []
    image_id = 0
    for v, clip in enumerate(clips, start=1):
        videos.append({"id": v, "name": f"clip{v}_{clip.event}", "events": []})
        tracks.append({"id": v, "video_id": v, "category_id": 1})
        for t in range(len(clip.frames)):
            image_id += 1
            visible = clip.visible[t]
            scored = visible >= 0.5 or visible < 0.1
            images.append({"id": image_id, "video_id": v, "frame_index": t, "annotated": bool(scored),
                           "width": 320, "height": 240, "file_name": ""})
            if visible >= 0.5:
                annotations.append({"id": image_id, "image_id": image_id, "track_id": v, "category_id": 1,
                                    "bbox": [float(x) for x in clip.boxes[t]]})
    return {"images": images, "annotations": annotations, "videos": videos, "tracks": tracks,
            "categories": [{"id": 1, "name": "object"}]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--real-ckpt", action="append", default=[], metavar="NAME=CKPT")
    parser.add_argument("--photos", default="datasets/real_checked_photos")
    parser.add_argument("--val-every", type=int, default=4)
    parser.add_argument("--clips-per-object", type=int, default=4)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--thresholds", nargs="+", type=float, default=None, metavar="T",
                        help="also run each real tracker with presence_threshold = reacquire_threshold = T (a row "
                             "each): the decision threshold chosen on these held-out clips")
    args = parser.parse_args()

    import cv2
    import torch

    from vision.evaluation.box_tracks import evaluate_box_tracks
    from vision.tracking.nanotrack_opencv import OpenCVNanoTracker
    from vision.tracking.real.checkpoint import load_real_tracker
    from vision.tracking.real.cue_data import builtin_photos, folder_photos, photo_objects

    torch.set_num_threads(1)
    cv2.setNumThreads(1)
    photos = builtin_photos() + (folder_photos(args.photos) if args.photos else [])
    objects = [(i, b) for i, b in photo_objects(photos, seed=args.seed) if i % args.val_every == 0]
    clips = build_clips(photos, objects, args.clips_per_object, args.seed)
    split = split_of(clips)
    first_image = {}
    for im in split["images"]:
        first_image.setdefault(im["video_id"], im["id"])
    rows = []
    models: dict[str, tuple[str | None, float | None]] = {"nanotrack-opencv": (None, None)}
    for item in args.real_ckpt:
        name, path = item.split("=", 1)
        models[name] = (path, None)
        for threshold in args.thresholds or []:
            models[f"{name}@{threshold:g}"] = (path, threshold)
    for name, (path, threshold) in models.items():
        model = load_real_tracker(path) if path else None
        if threshold is not None:
            import dataclasses

            model.target_config = dataclasses.replace(model.target_config, presence_threshold=threshold,
                                                      reacquire_threshold=threshold)
        results, seconds, count = [], 0.0, 0
        for v, clip in enumerate(clips, start=1):
            start = time.perf_counter()
            if model is None:
                tracker = OpenCVNanoTracker()
                tracker.init(clip.frames[0], tuple(float(x) for x in clip.boxes[0]))
                answers = [(tracker.update(f)[0], True) for f in clip.frames[1:]]
            else:
                answers = [(a[1].box, a[1].present) for t, _, a in model.track(clip.frames, {1: (0, clip.boxes[0])})
                           if t > 0]
            seconds += time.perf_counter() - start
            count += len(clip.frames)
            for t, (box, present) in enumerate(answers, start=1):
                results.append({"video_id": v, "image_id": first_image[v] + t, "track_id": v,
                                "bbox": [float(x) for x in box], "score": 1.0 if present else 0.0})
        metrics = evaluate_box_tracks(split, results)
        rows.append((name, metrics, count / seconds))
    events = sorted({c.event for c in clips})
    print(f"{len(clips)} held-out clips ({', '.join(f'{e} {sum(c.event == e for c in clips)}' for e in events)}) "
          f"of {len(objects)} objects on {len({i for i, _ in objects})} photographs; "
          f"{rows[0][1]['num_present_frames']} present and {rows[0][1]['num_absent_frames']} absent frames scored")
    figures = ("success@0.5", "mIoU", "absent_accuracy")
    print("| tracker | " + " | ".join(figures) + " | " + " | ".join(f"{e} success@0.5" for e in events)
          + " | frames/s |")
    print("|---|" + "---:|" * (len(figures) + len(events) + 1))
    for name, m, fps in rows:
        per_event = []
        for e in events:
            values = [m[f"clip{v}_{c.event}/success@0.5"] for v, c in enumerate(clips, start=1) if c.event == e]
            values = [x for x in values if x >= 0]
            per_event.append(f"{np.mean(values):.3f}" if values else "-")
        print(f"| {name} | " + " | ".join(f"{m[k]:.3f}" for k in figures) + " | " + " | ".join(per_event)
              + f" | {fps:.1f} |")


if __name__ == "__main__":
    main()
