"""``vision-predict --task tracking --stream SOURCE``: track a live source as its frames arrive.

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

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Iterator

import numpy as np

from vision.data.io import MAX_WORKING_PIXELS, fit_within

__all__ = ["run_tracking_stream"]


def run_tracking_stream(args: argparse.Namespace, out: Path) -> None:
    """Track ``args.input[0]`` as a stream into ``out`` (see the module docstring)."""
    from tqdm import tqdm

    from vision.cli.tracking import tracker_options, tracking_prompts
    from vision.data.resize import resize_image
    from vision.data.stream import open_stream
    from vision.data.video import write_video
    from vision.tracking.export import overlay_masks
    from vision.tracking.predictor import TrackerPredictor
    from vision.tracking.results import mask_result
    from vision.tracking.stream import TrackerStream

    prompts = tracking_prompts(args)
    source = args.input[0]
    live = open_stream(source, fmt=args.stream_format, follow=args.follow, max_pixels=args.max_pixels)
    predictor = TrackerPredictor.from_checkpoint(args.ckpt, presence_threshold=args.presence_threshold,
                                                 device=args.device, precision=args.precision,
                                                 **tracker_options(args))
    stream = TrackerStream(predictor, live.height, live.width)
    for spec in prompts:
        stream.add_prompt(obj_id=spec.obj_id, mask=None, **spec.arrays())
    work = fit_within(live.width, live.height, MAX_WORKING_PIXELS)
    received: dict[int, np.ndarray] = {}  # frames waiting for their window's result (at most one window)

    def frames() -> Iterator[np.ndarray]:
        for frame in live.frames(max_frames=args.max_frames):
            received[stream.num_received] = frame if work == (live.width, live.height) else resize_image(frame, work)
            yield frame

    results_path = out / "results.jsonl"
    done = [0]
    with open(results_path, "w") as log, tqdm(desc="streaming", unit="frame", disable=None) as bar:
        def drawn() -> Iterator[np.ndarray]:
            for step in stream.track(frames()):
                results = [mask_result(1, obj_id, step.view + 1, mask, score)
                           for obj_id, mask, score in zip(step.obj_ids, step.masks, step.scores)]
                log.write(json.dumps({"image_id": step.view + 1, "results": results}) + "\n")
                log.flush()
                done[0] += 1
                bar.update(1)
                yield overlay_masks(received.pop(step.view), step.masks, step.obj_ids)

        write_video(out / "annotated.mp4", drawn(), fps=live.fps or 10.0, crf=23, preset="veryfast")
    print(f"tracked {done[0]} frames of {source}; wrote {results_path} and {out / 'annotated.mp4'}")
