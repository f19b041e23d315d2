"""``vision-predict --task tracking``: G2TAM on a video, an image or a folder of images, from point, box, text or
``--prompt`` lines, and a live stream (the registry's ``run``, ``add_flags``, ``check``, ``stream`` and ``USAGE``
of the tracking task, :data:`vision.tasks.PARTS`).

  vision-predict --task tracking --ckpt CKPT INPUT --view 0 --points "120,80;140,90" --labels "1,0"
                 [--box "x0,y0,x1,y1"] [--mask mask.png] [--text "the red mug"] [--solve-cameras] [--out DIR]
  vision-predict --task tracking --ckpt CKPT INPUT --prompt "object 1 frame 0 positive 120,80" \\
                 --prompt "object 2 frame 0 box 10,20,60,90" --prompt "object 3 text the red mug"
      -> DIR/results.json (COCO-video results) + DIR/annotated.mp4 + DIR/masks.zip + DIR/object_<id>.ply
         + DIR/scene.ply / scene.glb (the reconstruction with the tracked objects coloured)
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Iterator

import numpy as np

from vision.data.io import MAX_WORKING_PIXELS, fit_within

from vision.errors import DataError, InputError

__all__ = ["USAGE", "DEFAULT_CKPT", "add_flags", "check", "tracking_prompts", "tracker_options", "run", "stream"]

#: what `vision-predict --task tracking --ckpt FOLDER` needs besides the input (the model card's example)
USAGE = "--points 'x,y'"
#: what `vision-predict --task tracking` runs without --ckpt, and what writes it: G2TAM on real video
DEFAULT_CKPT = ("runs/tracking/real/checkpoints/last.ckpt", "make weights, then make train-real-tracking")


def add_flags(group: argparse._ArgumentGroup) -> None:
    group.add_argument("--view", type=int, default=0, help="the frame the prompt is drawn on")
    group.add_argument("--points", help="'x,y;x,y' pixels")
    group.add_argument("--labels", help="'1,0' (1 positive, 0 negative), one per point")
    group.add_argument("--box", help="'x0,y0,x1,y1' pixels")
    group.add_argument("--mask", help="an image file (the input's size) whose non-zero pixels are the object")
    group.add_argument("--text", action="append",
                       help="a text prompt such as 'the red mug'; repeat it for more objects (2, 3, ...)")
    group.add_argument("--presence-threshold", type=float, default=0.5,
                       help="an object's mask is emptied in frames where its presence probability is lower")
    group.add_argument("--memory-points", type=int, default=None,
                       help="3D points each object carries between windows (default the predictor's; fewer is "
                            "faster at many objects, see docs/speed.md)")
    group.add_argument("--solve-cameras", action="store_true",
                       help="G2TAM's memory on the camera solver's cameras and the depth head instead of the point "
                            "head: better on videos, much slower (see docs/tracking.md)")
    group.add_argument("--prompt", action="append",
                       help="several objects: one prompt line, repeatable, e.g. 'object 2 frame 0 box 10,20,60,90' "
                            "(see vision/tracking/prompt_text.py)")


def check(args: argparse.Namespace) -> None:
    """The presence threshold is a probability, the carried points a count >= 1, and the prompts read (before any
    input or model)."""
    if not 0.0 <= args.presence_threshold <= 1.0:  # NaN fails this too
        raise InputError(f"--presence-threshold must be a probability in [0, 1], got {args.presence_threshold}")
    if args.memory_points is not None and args.memory_points < 1:
        raise InputError(f"--memory-points must be an integer >= 1, got {args.memory_points}")
    tracking_prompts(args)


def tracking_prompts(args: argparse.Namespace) -> list:
    """The prompts of the command line (:func:`vision.tracking.prompt_text.flag_prompts`)."""
    from vision.tracking.prompt_text import flag_prompts

    return flag_prompts(args.view, args.points, args.labels, args.box, args.text, args.prompt, args.mask)


def tracker_options(args: argparse.Namespace) -> dict:
    """The ``TrackerPredictor`` arguments the command line sets beyond the predictor's defaults."""
    options = {} if args.memory_points is None else {"memory_points": args.memory_points}
    if args.solve_cameras:
        options["solve_cameras"] = True
    return options


def real_checkpoint(args: argparse.Namespace) -> dict | None:
    """``--ckpt`` read (a file's tensors mapped, not read) when it holds G2TAM on real video (``make
    train-real-tracking``, or its model folder), else None: a synthetic tracker's, or a file whose reader reports
    what is wrong with it."""
    from vision.checkpoint import load_checkpoint
    from vision.model_folder import one_task, read_folder_config, read_model_folder
    from vision.tracking.real.checkpoint import is_real_tracker
    from vision.tracking.task import TrackingConfig

    try:
        if args.ckpt.is_dir():  # a model folder (vision-export): its config.json says which tracker it holds
            if read_folder_config(args.ckpt).get("hyper_parameters", {}).get("real_tracker") is not True:
                return None
        else:
            checkpoint = load_checkpoint(args.ckpt, mmap=True)
            return checkpoint if is_real_tracker(checkpoint) else None
    except (DataError, AttributeError):
        return None  # not readable as one: the synthetic tracker's reader reports what is wrong with it
    return read_model_folder(args.ckpt, config_of=one_task(TrackingConfig)).as_checkpoint()


def real_tracker(args: argparse.Namespace):
    """The :class:`~vision.tracking.real.predictor.RealTrackerPredictor` of ``--ckpt`` when it holds G2TAM on real
    video (:func:`real_checkpoint`), else None. The flags of the synthetic tracker's windows and geometry do not
    apply to it and are refused by name."""
    from vision.tracking.real.predictor import RealTrackerPredictor

    checkpoint = real_checkpoint(args)
    if checkpoint is None:
        return None
    for flag, given in (("--solve-cameras", args.solve_cameras), ("--memory-points", args.memory_points is not None),
                        ("--presence-threshold", args.presence_threshold != 0.5)):
        if given:
            raise InputError(f"{flag} is an option of the synthetic tracker; {args.ckpt} holds G2TAM on real video, "
                             "which decides presence and memory itself")
    return RealTrackerPredictor.from_checkpoint(args.ckpt, checkpoint=checkpoint)


def run(args: argparse.Namespace, out: Path) -> None:
    from vision.cli.batch import loaded
    from vision.cli.inputs import load_input, print_notes, progress_bar
    from vision.tracking.export import track_and_export
    from vision.tracking.predictor import TrackerPredictor
    from vision.tracking.prompt_text import prompt_masks

    prompts = tracking_prompts(args)
    source = load_input(args.input, args.max_frames, args.max_pixels)
    masks = prompt_masks(prompts, (source.width, source.height))  # read before any model is loaded
    real = loaded(args, "real-tracking", lambda: real_tracker(args))
    if real is not None:
        from vision.tracking.real.predictor import export_real

        frames = source.working_frames()
        with progress_bar(len(frames), "tracking") as bar:
            counts = export_real(real, frames, prompts, out, (source.width, source.height), fps=source.fps,
                                 progress=lambda done, total: bar.update(done - bar.n), masks=masks)
        print_notes(source)
        print(f"answered by {real.name}; wrote {out / 'results.json'}, {out / 'annotated.mp4'}, {out / 'masks.zip'}")
        for obj_id, count in counts.items():
            print(f"object {obj_id}: present in {count} of {len(frames)} frames")
        return
    predictor = loaded(args, "tracking", lambda: TrackerPredictor.from_checkpoint(
        args.ckpt, presence_threshold=args.presence_threshold, device=args.device, precision=args.precision,
        **tracker_options(args)))
    # the state reads the files straight to the model size and keeps the input's size for prompts and masks
    # (the images of a folder are frames in name order); annotated.mp4 is drawn on frames at the working size
    state = predictor.init_state(source.source, ordered=True, max_frames=source.max_frames,
                                 max_pixels=source.max_pixels)
    for spec in prompts:
        predictor.add_prompt(state, obj_id=spec.obj_id, mask=masks.get(spec.obj_id), **spec.arrays())
    with progress_bar(state.num_views, "tracking") as bar:
        export = track_and_export(predictor, state, source.working_frames(), out, fps=source.fps,
                                  progress=lambda done, total: bar.update(done - bar.n))
    print_notes(source)
    written = [export.results, export.video, export.masks, *export.plys.values()]
    written += [p for p in (export.scene_ply, export.scene_glb) if p is not None]
    print("wrote " + ", ".join(str(p) for p in written))
    for obj_id in export.empty:
        print(f"object {obj_id} was not found in any frame: no .ply written for it")


def stream(args: argparse.Namespace, out: Path) -> None:
    """Track ``args.input[0]`` as a stream into ``out``: ``vision-predict --task tracking --stream SOURCE``.

    SOURCE is anything :func:`vision.data.stream.open_stream` opens: a video file, a URL (``rtsp://``, ``http://``,
    ``udp://``), a capture device (``/dev/video0 --stream-format v4l2``), a FIFO another program writes a stream into,
    or with ``--follow`` a file still being written (MPEG-TS, Matroska, fragmented MP4). The prompts are those of ``vision-predict --task tracking`` (on frames
    counted from the stream's first). Frames are tracked causally in windows (:class:`vision.tracking.stream.
    TrackerStream`, bounded memory) and written as they come:
    
    - ``results.jsonl``: one line per frame as soon as it is tracked, ``{"image_id": frame + 1, "results": [COCO-video
      results of that frame, RLE masks at the source's size]}``, flushed line by line (readable while the stream runs);
    - ``annotated.mp4``: the frames (downscaled to at most :data:`~vision.data.io.MAX_WORKING_PIXELS`) with the masks
      drawn, encoded as they come.
    
    ``--max-frames`` stops after that many frames. The run ends when the source ends (for ``--follow``, when the file
    has not grown for 5 seconds; for a FIFO, when its writer closes it or sends nothing for 5 seconds). A source that
    ends before its first frame (a followed file that stops growing, a FIFO nobody writes to) is one ``error:`` line
    naming it and the cause, and nothing is left in ``--out``.
    """
    from tqdm import tqdm

    from vision.data.resize import resize_image
    from vision.data.stream import open_stream
    from vision.data.video import write_video
    from vision.tracking.export import overlay_masks
    from vision.tracking.predictor import TrackerPredictor
    from vision.tracking.results import mask_result
    from vision.tracking.prompt_text import prompt_masks
    from vision.tracking.stream import TrackerStream

    prompts = tracking_prompts(args)
    source = args.input[0]
    if real_checkpoint(args) is not None:
        raise InputError(f"{args.ckpt} holds G2TAM on real video, which tracks files (vision-predict without "
                         "--stream); --stream takes a synthetic tracker's checkpoint")
    live = open_stream(source, fmt=args.stream_format, follow=args.follow, max_pixels=args.max_pixels)
    masks = prompt_masks(prompts, (live.width, live.height))
    predictor = TrackerPredictor.from_checkpoint(args.ckpt, presence_threshold=args.presence_threshold,
                                                 device=args.device, precision=args.precision,
                                                 **tracker_options(args))
    tracker = TrackerStream(predictor, live.height, live.width)
    for spec in prompts:
        tracker.add_prompt(obj_id=spec.obj_id, mask=masks.get(spec.obj_id), **spec.arrays())
    work = fit_within(live.width, live.height, MAX_WORKING_PIXELS)
    received: dict[int, np.ndarray] = {}  # frames waiting for their window's result (at most one window)

    def frames() -> Iterator[np.ndarray]:
        for frame in live.frames(max_frames=args.max_frames):
            received[tracker.num_received] = frame if work == (live.width, live.height) else resize_image(frame, work)
            yield frame

    results_path = out / "results.jsonl"
    done = [0]
    with open(results_path, "w") as log, tqdm(desc="streaming", unit="frame", disable=None) as bar:
        def drawn() -> Iterator[np.ndarray]:
            for step in tracker.track(frames()):
                results = [mask_result(1, obj_id, step.view + 1, mask, score)
                           for obj_id, mask, score in zip(step.obj_ids, step.masks, step.scores)]
                log.write(json.dumps({"image_id": step.view + 1, "results": results}) + "\n")
                log.flush()
                done[0] += 1
                bar.update(1)
                yield overlay_masks(received.pop(step.view), step.masks, step.obj_ids)

        write_video(out / "annotated.mp4", drawn(), fps=live.fps or 10.0, crf=23, preset="veryfast")
    print(f"tracked {done[0]} frames of {source}; wrote {results_path} and {out / 'annotated.mp4'}")
