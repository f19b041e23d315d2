"""G2TAM beside the memory-bank control: accuracy on synthetic video / unordered / long-occlusion splits, speed
(views/s for 1, 4, 16 objects) and peak memory on long videos (100 vs 800 frames).

    python benchmarks/bench_tracking.py --out runs/bench_tracking --train-scenes 24 --steps 300
    python benchmarks/bench_tracking.py --g2tam-ckpt A.ckpt --baseline-ckpt B.ckpt   # evaluate trained models
        (TrackingModule checkpoints, e.g. from `make train-tracking`; only the validation splits are rendered)
    python benchmarks/bench_tracking.py --g2tam-ckpt A.ckpt --baseline-ckpt B.ckpt --g2tam-light FOLDER
        (also the model folder vision fit-light-points wrote from A.ckpt: a third column and speed rows)
    python benchmarks/bench_tracking.py --g2tam-ckpt A.ckpt --baseline-ckpt B.ckpt --g2tam-multiplex C.ckpt
        (also G2TAM with the multiplexed decoder, configs/tracking/multiplex_tiny.yaml: a column and speed rows)
    python benchmarks/bench_tracking.py --g2tam-ckpt A.ckpt --baseline-ckpt B.ckpt --g2tam-variant patch=D.ckpt
        (any other trained G2TAM, e.g. configs/tracking/patch_points_tiny.yaml, under a name: a column and speed
        rows; --g2tam-multiplex C is --g2tam-variant multiplex=C)
    python benchmarks/bench_tracking.py --g2tam-ckpt A.ckpt --baseline-ckpt B.ckpt --solved-cameras
        (also A with its memory on the camera solver's cameras, TrackerPredictor(solve_cameras=True): a column
        and speed rows)

Both models train as ``make train-tracking`` trains them: the training CLI (:class:`vision.training.cli.VisionCLI`,
the parser of ``tools/train.py``) builds :class:`~vision.tracking.lightning.TrackingModule`, its data module and the
Lightning Trainer from ``configs/tracking/tiny.yaml`` (G2TAM) and ``configs/tracking/baseline_tiny.yaml`` (the
control), with command-line overrides of only the training and validation splits (the ones rendered here), the
steps (``--steps``), the image size (``--size``), the seed, the geometry checkpoint, the run folder
(``OUT/train/<arch>``: logs and checkpoints), no text encoder when ``--types`` has no ``text``, and validation off
(the splits below are scored after training). Accuracy is the
pipeline's: each split is tracked and scored with the protocol the training loop validates and tests with
(:mod:`vision.tracking.inference`: every track prompted once on its first visible view, whole videos, results
scored by ``vision.evaluation.evaluate`` as ``vision evaluate --task tracking`` scores them), so a trained
checkpoint's row here is what ``tools/train.py test`` prints on the same split. ``--no-refine`` scores G2TAM
without the predictor's second pass and ``--refine`` every G2TAM with it (the control has none; by default each
model decodes as its ``second_pass`` says: the multiplexed decoder once). Figures are printed as a table; nothing
is typed in.
After the table, one plain line per split says whether G2TAM beats the control in point J&F by the split's target
margin (:data:`vision.evaluation.claims.TRACKING_MARGINS`), as ``make train-tracking`` ends.
Peak memory is the peak RSS of a fresh subprocess running the predictor.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def _scene_count(path: Path) -> int:
    return len(json.loads(path.read_text()).get("videos", [])) if path.exists() else -1


def render(out: Path, scenes: int, views: int, size: int, val_scenes: int = 4) -> dict[str, Path]:
    """Render the training splits (``scenes`` > 0) and the three validation splits (``val_scenes`` each) into
    ``out``; a split already there with another number of scenes is rendered again."""
    from vision.synthetic.scenes import write_split
    from vision.tracking.splits import long_occlusion_split

    paths = {}
    train = [("train_video", "video", scenes, views, 0), ("train_unordered", "unordered", scenes, views, 1)]
    val = [("val_video", "video", val_scenes, 8, 2), ("val_unordered", "unordered", val_scenes, 6, 3),
           ("val_long", "video", val_scenes, 16, 4)]
    stale = False
    for name, mode, n, v, seed in (train if scenes > 0 else []) + val:
        p = out / f"{name}.json"
        if _scene_count(p) != n:
            write_split(out, name, scenes=n, views=v, size=size, mode=mode, seed=seed, threads=1, max_objects=5)
            stale = stale or name == "val_long"
        paths[name] = p
    occ = out / "val_long_occlusion.json"
    if stale or not occ.exists():
        occ.write_text(json.dumps(long_occlusion_split(json.loads(paths["val_long"].read_text()))))
    paths["val_long_occlusion"] = occ
    return paths


#: The training config of each tracker.
CONFIGS = {arch: str(Path(__file__).resolve().parents[1] / "configs" / "tracking" / name)
           for arch, name in (("g2tam", "tiny.yaml"), ("memory_bank", "baseline_tiny.yaml"))}


def train(arch: str, paths: dict[str, Path], steps: int, size: int, text: bool, run_dir: Path,
          geometry_ckpt: str | None = None, seed: int = 0) -> tuple[torch.nn.Module, float]:
    """Train ``arch`` from its config (:data:`CONFIGS`) through the training CLI and its Trainer on the rendered
    training splits; returns the trained tracker (eval mode) and the seconds of ``fit``."""
    from vision.training.cli import VisionCLI

    args = ["--config", CONFIGS[arch], "--seed_everything", str(seed), "--run_dir", str(run_dir),
            "--trainer.max_steps", str(steps), "--trainer.limit_val_batches", "0",
            "--trainer.num_sanity_val_steps", "0", "--trainer.enable_progress_bar", "false",
            "--trainer.enable_model_summary", "false", "--model.init_args.config.image_size", str(size),
            "--data.init_args.train_split", json.dumps([str(paths["train_video"]), str(paths["train_unordered"])]),
            "--data.init_args.val_split", str(paths["val_video"])]
    if geometry_ckpt:
        args += ["--model.init_args.geometry_checkpoint", geometry_ckpt]
    if not text:
        args += ["--model.init_args.config.text_encoder", "null"]
    with warnings.catch_warnings():  # the CLI parses ``args``, not this script's own command line
        warnings.filterwarnings("ignore", message="LightningCLI's args parameter")
        cli = VisionCLI(args=args, run=False)
    print(f"  [{arch}] {Path(CONFIGS[arch]).name}: {steps} steps (logs and checkpoints in {run_dir})", flush=True)
    start = time.time()
    cli.trainer.fit(cli.model, datamodule=cli.datamodule)
    return cli.model.model.eval(), time.time() - start


def evaluate(model, paths: dict[str, Path], types: list[str], text_encoder, refine: bool | None = None,
             known_geometry: bool = False, memory_points: int | None = None,
             solve_cameras: bool = False) -> dict[str, dict]:
    """``{split: {prompt type: metrics}}``: each validation split tracked and scored with the pipeline's protocol
    (``known_geometry``: G2TAM on the ground-truth point maps, the oracle; ``memory_points``: the predictor's
    carried 3D points per object instead of the protocol's; ``solve_cameras``: G2TAM's memory on the camera
    solver's cameras, ``TrackerPredictor(solve_cameras=True)``)."""
    from vision.data.coco import load_split
    from vision.tracking.inference import protocol_predictor, score_tracking, track_split

    predictor = protocol_predictor(model, text_encoder, refine=refine, solve_cameras=solve_cameras)
    if memory_points is not None:
        predictor.memory_points = memory_points
    table = {}
    for name in ("val_video", "val_unordered", "val_long_occlusion"):
        metrics = score_tracking(paths[name], track_split(predictor, load_split(paths[name]), types,
                                                          known_geometry=known_geometry))
        table[name] = {kind: {key.split("/", 1)[1]: value for key, value in metrics.items()
                              if key.startswith(f"{kind}/")} for kind in types}
    return table


def speed(models: dict, size: int, views: int = 8, repeats: int = 5, refine: bool | None = None,
          objects: tuple[int, ...] = (1, 4, 16)) -> dict[str, dict[int, list[float]]]:
    """Seconds of ``propagate`` over one window of ``views`` random frames, for each count of point-prompted
    ``objects``: ``{arch: {objects: [seconds of each of the repeats]}}`` after a warm-up, the models timed in turn
    within each repetition (so a change of load on the machine reaches both alike). ``models``: name -> model, or
    name -> (model, extra ``TrackerPredictor`` arguments)."""
    from vision.tracking.predictor import TrackerPredictor

    frames = (np.random.default_rng(0).random((views, size, size, 3)) * 255).astype(np.uint8)
    out: dict[str, dict[int, list[float]]] = {arch: {} for arch in models}
    for n in objects:
        runs = {}
        for arch, entry in models.items():
            model, extra = entry if isinstance(entry, tuple) else (entry, {})
            predictor = TrackerPredictor(model, text_encoder=None, window_size=views, max_anchors=1, refine=refine,
                                         cache_views=0, **extra)
            state = predictor.init_state(frames)
            for o in range(n):
                predictor.add_prompt(state, 0, o, points=[[(o * 7) % size, (o * 13) % size]])
            list(predictor.propagate(state))  # warm-up
            runs[arch] = (predictor, state)
            out[arch][n] = []
        for _ in range(repeats):
            for arch, (predictor, state) in runs.items():
                t = time.perf_counter()
                list(predictor.propagate(state))
                out[arch][n].append(time.perf_counter() - t)
    return out


def breakdown(models: dict, size: int, views: int = 8, repeats: int = 7) -> dict[str, dict[str, float]]:
    """Where one object's ``propagate`` goes, timed without a profiler (best of ``repeats``, the models in turn):
    per model ``propagate`` (one point-prompted object, ``cache_views=0``) and ``encoding`` (``tracking_encoding``
    of the window); for models with geometry also the ``aggregator``, the ``cameras`` head and the ``points`` (the
    DPT point head, or the light point head). Seconds."""
    from vision.tracking.predictor import TrackerPredictor

    frames = (np.random.default_rng(0).random((views, size, size, 3)) * 255).astype(np.uint8)
    images = torch.from_numpy(frames).permute(0, 3, 1, 2).float()[None] / 255
    jobs = {}
    for name, entry in models.items():
        model, extra = entry if isinstance(entry, tuple) else (entry, {})
        predictor = TrackerPredictor(model, text_encoder=None, window_size=views, max_anchors=1, cache_views=0,
                                     **extra)
        state = predictor.init_state(frames)
        predictor.add_prompt(state, 0, 0, points=[[size // 2, size // 2]])
        parts = {"propagate": lambda p=predictor, st=state: list(p.propagate(st)),
                 "encoding": lambda m=model: m.tracking_encoding(images)}
        if model.uses_geometry_memory:
            backbone = model.backbone
            with torch.no_grad():
                tokens, start, checked = backbone.aggregate(images)
            parts["aggregator"] = lambda b=backbone: b.aggregate(images)
            parts["cameras"] = lambda b=backbone, t=tokens: b.predict_cameras(t, (size, size))
            if getattr(model, "light_points", None) is not None:
                parts["points"] = lambda m=model, t=tokens, st=start, c=checked: m.light_points(
                    m.backbone.point_head, t, c, st)
            else:
                parts["points"] = lambda b=backbone, t=tokens, st=start, c=checked: b.predict_points(t, c, st)
        jobs[name] = parts
    times = {name: {part: [] for part in parts} for name, parts in jobs.items()}
    with torch.no_grad():
        for _ in range(repeats + 1):
            for name, parts in jobs.items():
                for part, job in parts.items():
                    t = time.perf_counter()
                    job()
                    times[name][part].append(time.perf_counter() - t)
    return {name: {part: min(ts[1:]) for part, ts in row.items()} for name, row in times.items()}  # [0]: warm-up


def correction_click(model, size: int, views: int = 8, repeats: int = 5) -> tuple[list[float], list[float]]:
    """Seconds of the first ``propagate`` of a fresh state (one point-prompted object, ``views`` random frames: the
    backbone runs) and of the propagation after a correction click (a negative point added to the same object:
    the cached encodings are decoded again), ``repeats`` times each."""
    from vision.tracking.predictor import TrackerPredictor

    predictor = TrackerPredictor(model, text_encoder=None, window_size=views, max_anchors=1)
    frames = (np.random.default_rng(0).random((views, size, size, 3)) * 255).astype(np.uint8)
    first, click = [], []
    for _ in range(repeats + 1):  # the first round warms up
        state = predictor.init_state(frames)
        predictor.add_prompt(state, 0, 1, points=[[size // 3, size // 3]])
        t = time.perf_counter()
        list(predictor.propagate(state))
        first.append(time.perf_counter() - t)
        predictor.add_prompt(state, 0, 1, points=[[size // 3, size // 3], [2 * size // 3, size // 2]], labels=[1, 0])
        t = time.perf_counter()
        list(predictor.propagate(state))
        click.append(time.perf_counter() - t)
    return first[1:], click[1:]


def peak_memory_child(frames: int, size: int, ckpt: str | None = None) -> None:
    """Child process: run the predictor (the trained G2TAM of ``ckpt``, else an untrained one) over a random video
    of ``frames`` frames; print peak RSS (MiB)."""
    from vision.tracking.predictor import TrackerPredictor
    from vision.tracking.task import build_model, load

    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = load(ckpt)[0] if ckpt else build_model({"architecture": "g2tam", "image_size": size})
    predictor = TrackerPredictor(model, text_encoder=None, window_size=8, max_anchors=1, presence_threshold=0.0)
    video = (np.random.default_rng(0).random((frames, size, size, 3)) * 255).astype(np.uint8)
    state = predictor.init_state(video)
    predictor.add_prompt(state, 0, 1, points=[[size // 2, size // 2]])
    for _ in predictor.propagate(state):
        pass
    print(json.dumps({"peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))


def peak_memory(frames: int, size: int, ckpt: str | None = None) -> float:
    out = subprocess.run([sys.executable, __file__, "--memory-child", str(frames), "--size", str(size)]
                         + (["--g2tam-ckpt", ckpt] if ckpt else []),
                         check=True, capture_output=True, text=True)
    return float(json.loads(out.stdout.strip().splitlines()[-1])["peak_mib"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=Path("runs/bench_tracking"))
    ap.add_argument("--train-scenes", type=int, default=24)
    ap.add_argument("--val-scenes", type=int, default=4, help="scenes in each validation split")
    ap.add_argument("--views", type=int, default=8)
    ap.add_argument("--size", type=int, default=64)
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--types", default="point,box,mask,text")
    ap.add_argument("--memory-child", type=int, default=None)
    ap.add_argument("--skip-memory", action="store_true")
    ap.add_argument("--geometry-ckpt", default=None,
                    help="start both models from this geometry checkpoint (e.g. runs/geometry/tiny/checkpoints/last.ckpt)")
    ap.add_argument("--g2tam-ckpt", default=None, help="evaluate this trained G2TAM (TrackingModule checkpoint)")
    ap.add_argument("--baseline-ckpt", default=None, help="evaluate this trained memory-bank control")
    ap.add_argument("--skip-speed", action="store_true")
    ap.add_argument("--skip-accuracy", action="store_true",
                    help="with --g2tam-ckpt / --baseline-ckpt: only the speed and correction-click rows")
    refine_choice = ap.add_mutually_exclusive_group()
    refine_choice.add_argument("--no-refine", action="store_true",
                               help="G2TAM without the predictor's second pass (default: each model's own choice)")
    refine_choice.add_argument("--refine", action="store_true",
                               help="every G2TAM with the predictor's second pass (default: each model's own choice)")
    ap.add_argument("--memory-points", type=int, default=None,
                    help="G2TAM's carried 3D points per object in the accuracy rows (default the protocol's)")
    ap.add_argument("--g2tam-light", default=None,
                    help="also time and score this G2TAM model folder with light point maps (vision fit-light-points)")
    ap.add_argument("--light-memory-points", type=int, nargs="+", default=None,
                    help="the --g2tam-light rows with these carried 3D points per object (one row each; default the "
                         "protocol's)")
    ap.add_argument("--g2tam-multiplex", default=None,
                    help="also score and time this G2TAM with the multiplexed decoder (TrackingModule checkpoint)")
    ap.add_argument("--g2tam-variant", nargs="+", default=[], metavar="NAME=CKPT",
                    help="also score and time these trained G2TAMs (TrackingModule checkpoints), each under NAME")
    ap.add_argument("--speed-objects", type=int, nargs="+", default=[1, 4, 16],
                    help="object counts of the speed rows (views/s and the ratio to the control; also the ratio "
                         "to each model's own first count)")
    ap.add_argument("--breakdown", action="store_true",
                    help="with the speed rows: where one object's propagate goes, per model, without a profiler")
    ap.add_argument("--solved-cameras", action="store_true",
                    help="also score G2TAM with its memory on the depth head and the camera solver's cameras "
                         "instead of the point head's points (TrackerPredictor(solve_cameras=True))")
    ap.add_argument("--oracle", action="store_true",
                    help="also score G2TAM on the ground-truth point maps (the ceiling the geometry sets)")
    args = ap.parse_args()
    bad = [item for item in args.g2tam_variant if "=" not in item or not item.split("=", 1)[0]]
    if bad:
        ap.error(f"--g2tam-variant takes NAME=CKPT, got {bad}")
    torch.set_num_threads(1)
    refine = False if args.no_refine else True if args.refine else None  # None: each model's G2TAM.second_pass
    if args.memory_child is not None:
        peak_memory_child(args.memory_child, args.size, args.g2tam_ckpt)
        return
    if (args.g2tam_ckpt is None) != (args.baseline_ckpt is None):
        ap.error("--g2tam-ckpt and --baseline-ckpt go together")
    args.out.mkdir(parents=True, exist_ok=True)
    types = [t for t in args.types.split(",") if t]
    trained = {"g2tam": args.g2tam_ckpt, "memory_bank": args.baseline_ckpt} if args.g2tam_ckpt else None
    if args.skip_accuracy and (not trained or args.skip_speed):
        ap.error("--skip-accuracy needs --g2tam-ckpt / --baseline-ckpt and the speed rows")
    paths = None if args.skip_accuracy else render(args.out, 0 if trained else args.train_scenes, args.views,
                                                   args.size, args.val_scenes)
    text_encoder = None
    if "text" in types and paths is not None:
        from vision.text import get_text_encoder

        text_encoder = get_text_encoder("minilm")
    from vision.tracking.task import load

    tables, models, times, clicks = {}, {}, {}, {}
    for arch in ("g2tam", "memory_bank"):
        if trained:
            model, times[arch] = load(trained[arch])[0], 0.0
        else:
            run_dir = args.out / "train" / arch
            model, times[arch] = train(arch, paths, args.steps, args.size, "text" in types, run_dir, args.geometry_ckpt)
        with torch.no_grad():
            if paths is not None:
                tables[arch] = evaluate(model, paths, types, text_encoder, refine=refine,
                                        memory_points=args.memory_points if arch == "g2tam" else None)
            if args.solved_cameras and arch == "g2tam" and paths is not None:
                tables["solved"] = evaluate(model, paths, types, text_encoder, refine=refine,
                                            memory_points=args.memory_points, solve_cameras=True)
            if args.solved_cameras and arch == "g2tam" and not args.skip_speed:
                models["solved"] = (model, {"solve_cameras": True})
            if args.oracle and arch == "g2tam" and paths is not None:
                tables["oracle"] = evaluate(model, paths, types, text_encoder, refine=refine,
                                            known_geometry=True)
            if not args.skip_speed:
                clicks[arch] = correction_click(model, args.size)
                models[arch] = model
    if args.g2tam_light:
        light = load(args.g2tam_light)[0]
        for points in args.light_memory_points or [None]:
            name = "light" if points is None else f"light@{points}"
            with torch.no_grad():
                if paths is not None:
                    tables[name] = evaluate(light, paths, types, text_encoder, refine=refine,
                                            memory_points=points)
            if not args.skip_speed:
                models[name] = (light, {} if points is None else {"memory_points": points})
    variants = dict(item.split("=", 1) for item in args.g2tam_variant)
    if args.g2tam_multiplex:
        variants["multiplex"] = args.g2tam_multiplex
    for name, ckpt in variants.items():
        variant = load(ckpt)[0]
        with torch.no_grad():
            if paths is not None:
                tables[name] = evaluate(variant, paths, types, text_encoder, refine=refine,
                                        memory_points=args.memory_points)
        if not args.skip_speed:
            models[name] = variant
    speeds = speed(models, args.size, refine=refine, objects=tuple(args.speed_objects)) if models else {}
    parts = breakdown(models, args.size) if models and args.breakdown else {}
    second = "off" if args.no_refine else "on" if args.refine else "each model chooses (the multiplexed decoder: off)"
    print(f"\nG2TAM second pass: {second}"
          + (f"; G2TAM memory points: {args.memory_points}" if args.memory_points is not None else ""))
    if trained:
        print(f"trained checkpoints: g2tam {trained['g2tam']}, memory_bank {trained['memory_bank']}")
    else:
        print(f"\nsteps={args.steps} (train s: g2tam {times['g2tam']:.0f}, memory_bank {times['memory_bank']:.0f})")
    oracle = "oracle" in tables
    def extra(name: str) -> bool:  # G2TAM variants beside G2TAM: light point maps, solved cameras, trained variants
        return name.startswith("light") or name == "solved" or name in variants

    lights = [name for name in tables if extra(name)]
    if args.g2tam_light:
        print(f"G2TAM light: light point maps, {args.g2tam_light}; @N: N carried 3D points per object")
    for name, ckpt in variants.items():
        print(f"G2TAM {name}: {ckpt}")
    if tables:
        print(f"{'split':<20}{'prompt':<7}{'metric':<19}{'G2TAM':>8}{'baseline':>10}{'diff':>8}"
              + (f"{'G2TAM, GT points':>18}" if oracle else "")
              + "".join(f"{'G2TAM ' + name:>17}" for name in lights))
    for split in tables.get("g2tam", {}):
        for kind in types:
            for key in ("J&F", "presence_accuracy", "iou3d"):
                a = tables["g2tam"][split][kind].get(key, float("nan"))
                b = tables["memory_bank"][split][kind].get(key, float("nan"))
                row = f"{split:<20}{kind:<7}{key:<19}{a:>8.3f}{b:>10.3f}{a - b:>+8.3f}"
                if oracle:
                    row += f"{tables['oracle'][split][kind].get(key, float('nan')):>18.3f}"
                for name in lights:
                    row += f"{tables[name][split][kind].get(key, float('nan')):>17.3f}"
                print(row)
    if "point" in types and "g2tam" in tables:
        # the claim G2TAM exists for, in one plain line per split (vision/evaluation/claims.py)
        from vision.evaluation.claims import TRACKING_MARGINS, margin_verdicts

        figure = {arch: {split: cells["point"].get("J&F", float("nan")) for split, cells in tables[arch].items()}
                  for arch in ("g2tam", "memory_bank")}
        print()
        for verdict in margin_verdicts(figure["g2tam"], figure["memory_bank"], TRACKING_MARGINS):
            print(verdict.line("G2TAM", "the memory-bank control", "point J&F"))
        for name in variants:
            mine = {split: cells["point"].get("J&F", float("nan")) for split, cells in tables[name].items()}
            for verdict in margin_verdicts(mine, figure["memory_bank"], TRACKING_MARGINS):
                print(verdict.line(f"G2TAM {name}", "the memory-bank control", "point J&F"))
    if speeds:
        print(f"speed: views/s of propagate, one {args.views}-view window at {args.size} px, one thread; "
              f"min / median over the repetitions (cache_views=0: every propagate encodes)")
    first_n = args.speed_objects[0]
    for n in args.speed_objects if speeds else ():
        g, c = speeds["g2tam"][n], speeds["memory_bank"][n]
        a, b = args.views / min(g), args.views / min(c)
        am, bm = args.views / np.median(g), args.views / np.median(c)
        own = (f"  own {first_n}-object rate x{a * min(speeds['g2tam'][first_n]) / args.views:.3f} / control "
               f"x{b * min(speeds['memory_bank'][first_n]) / args.views:.3f}")
        print(f"{'speed views/s':<27}{n:>3} obj  G2TAM {a:>6.1f} / {am:>6.1f}  control {b:>6.1f} / {bm:>6.1f}  "
              f"ratio {a / b:.2f} / {am / bm:.2f} (target >= 1.0){own}")
        for name in (k for k in speeds if extra(k)):
            lt = speeds[name][n]
            la, lm = args.views / min(lt), args.views / np.median(lt)
            print(f"{'speed views/s':<27}{n:>3} obj  G2TAM {name:<9} {la:>6.1f} / {lm:>6.1f}  "
                  f"ratio to the control {la / b:.2f} / {lm / bm:.2f} (target >= 1.0)  own {first_n}-object rate "
                  f"x{la * min(speeds[name][first_n]) / args.views:.3f}")
    if parts:
        print("one object, ms (best of 7, no profiler; decoding and the rest = propagate - encoding):")
        for name, row in parts.items():
            cells = "  ".join(f"{k} {1000 * v:.1f}" for k, v in row.items())
            print(f"  {name:<12} {cells}  decoding and the rest {1000 * (row['propagate'] - row['encoding']):.1f}")
    for arch, (first, click) in clicks.items():
        print(f"correction click {arch:<12} first propagate s min {min(first):.4f} median {np.median(first):.4f}; "
              f"after a click min {min(click):.4f} median {np.median(click):.4f}; ratio min "
              f"{min(click) / min(first):.3f} median {np.median(click) / np.median(first):.3f} (target <= 0.25)")
    if not args.skip_memory:
        m100, m800 = peak_memory(100, args.size, args.g2tam_ckpt), peak_memory(800, args.size, args.g2tam_ckpt)
        print(f"peak RSS MiB, G2TAM predictor: 100 frames {m100:.0f}, 800 frames {m800:.0f}, ratio {m800 / m100:.2f}"
              f" (target <= 1.5)")
    (args.out / "results.json").write_text(json.dumps(
        {"tables": {a: {s: {k: {m: v for m, v in d.items() if isinstance(v, (int, float))} for k, d in r.items()}
                        for s, r in t.items()} for a, t in tables.items()},
         "speed": speeds, "correction_click": clicks, "train_seconds": times}, indent=1, sort_keys=True))


if __name__ == "__main__":
    main()
