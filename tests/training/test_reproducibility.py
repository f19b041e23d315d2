"""Bit-exact training on the CPU, for every config in ``configs/``, through the training CLI:

- the same seed gives the same model: for each config that trains on a CPU as it ships, two uninterrupted runs in
  separate processes (different ``PYTHONHASHSEED`` and number of DataLoader workers) end with identical weights and
  optimizer state; for the configs that encode text with the process-wide shared encoder, so does a run in a process
  that did other work before (its caches filled at another thread count, its global generators moved);
- resume is exact however the run is stopped and wherever the checkpoint lies: one run is stopped four times (a
  SIGTERM mid-epoch, a SIGKILL after an epoch, a SIGKILL mid-epoch, a SIGTERM in an epoch's last batch) and
  resumed each time, and another resumes from the checkpoint written at an epoch's last batch; each ends with the
  weights and optimizer state of the uninterrupted run, bit for bit. The CPU configs run in subprocesses whose
  process group gets real signals (DataLoader workers included, as from a scheduler); the paper-scale (GPU)
  configs run the same chain in this process, on the CPU without DDP / FSDP or weight files (:func:`on_cpu`).
  Configs that make the same run here (they differ only in what :func:`reduce` replaces) share one chain.

Each config runs as it ships (its callbacks, checkpoints, logger, DataLoader workers, the geometry curriculum with
``reload_dataloaders_every_n_epochs``, two concatenated training splits, its precision) except for :func:`reduce`:
the model's width and resolution, the data (fixtures written here, three training batches an epoch) and the step
budget.
"""

from __future__ import annotations

import copy
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import yaml

from vision.training.checkpoint_io import load_checkpoint
from vision.training.compose import compose, shipped_configs

pytestmark = [pytest.mark.slow, pytest.mark.long]  # trains every config several times in subprocesses, killing some

ROOT = Path(__file__).resolve().parents[2]
MAX_STEPS = 7  # three batches an epoch: epochs end at steps 3 and 6; validation after each epoch
BATCHES_PER_EPOCH = 3


#: Trained on rows the tracker collects with the registered pretrained networks, not on the fixture splits of
#: :func:`_data`: their resume is checked in ``tests/tracking/real/test_lightning.py``.
OWN_HARNESS = ("vision.tracking.real.",)


def _harnessed(path: Path) -> bool:
    return not compose(path)["model"]["class_path"].startswith(OWN_HARNESS)


def _cpu_configs() -> list[Path]:
    """The shipped configs that train on a CPU as they stand (the GPU-scale recipes have their dry run in
    ``tests/recipes``)."""
    found = []
    for path in filter(_harnessed, shipped_configs(ROOT / "configs")):
        trainer = compose(path).get("trainer", {})
        if trainer.get("accelerator", "auto") in ("auto", "cpu"):
            found.append(path)
    return found


CONFIGS = _cpu_configs()
#: the paper-scale configs (GPUs, DDP / FSDP, weight files): resumed here in-process at the CPU configs' size
GPU_CONFIGS = [path for path in filter(_harnessed, shipped_configs(ROOT / "configs")) if path not in CONFIGS]
#: the weight files a config may name: none exist here
WEIGHT_FILES = ("vggt_weights", "sam2_weights", "geometry_checkpoint")


def _data(root: Path) -> dict[str, dict]:
    """Per task: ``{"model": init args merged into the config's, "data": datamodule init args}`` on fixtures
    written under ``root``; each training split gives three batches an epoch."""
    from tests.forensics.conftest import make_tiny_split
    from vision.synthetic.detection import write_oov_synthetic
    from vision.synthetic.scenes import write_split

    video = write_split(root / "mv", "video", scenes=4, views=4, size=32, mode="video", seed=0, threads=1,
                        min_objects=2, max_objects=3)
    unordered = write_split(root / "mv", "unordered", scenes=2, views=4, size=32, mode="unordered", seed=1,
                            threads=1, min_objects=2, max_objects=3)
    oov = write_oov_synthetic(root / "oov", train_scenes=3, val_scenes=1, test_scenes=1, views=2, size=64, seed=0)
    return _fixture_args(video, unordered, oov, make_tiny_split(root / "aigv"), root / "aigv_cache")


def _fixture_args(video: Path, unordered: Path, oov: dict[str, Path], aigv: dict[str, Path],
                  cache: Path) -> dict[str, dict]:
    """:func:`_data`'s answer for fixture splits at these paths."""
    multiview = {"train_split": [str(video), str(unordered)], "val_split": str(unordered), "views": 2,
                 "batch_size": 2, "augment": True}  # 4 + 2 clips: 3 batches
    return {
        "geometry": {"model": {"config": {"size": "tiny", "image_size": 32, "match_dim": 64}, "warmup_steps": 2},
                     "data": {**multiview, "max_stride": 2}},
        "tracking": {"model": {"config": {"backbone": "tiny", "image_size": 32, "dim": 32}, "max_objects": 2,
                               "warmup_steps": 2, "eval_prompt_types": ["point", "text"]},
                     "data": multiview},
        "detection": {"model": {"config": {"size": "tiny", "image_size": 64, "feature_layers": [1, -1],
                                           "channels": 32, "patch_embed_weights": None}, "queue_size": 64, "samples_per_class": 64,
                                "synthesis_start": 0.0, "mining_start": 0.0, "mining_min_objectness": 0.0,
                                "kde_reference": 64, "warmup_steps": 2},
                      "data": {"train_split": str(oov["train"]), "val_split": str(oov["val"]),
                               "test_split": str(oov["test"]), "batch_size": 2, "augment": True}},
        "concept": {"model": {"config": {"image_size": 64, "max_per_view": 4,
                                         "detector": {"size": "tiny", "image_size": 64, "channels": 32},
                                         "tracker": {"backbone": "tiny", "image_size": 64, "dim": 32}},
                              "detector_checkpoint": None, "tracker_checkpoint": None, "warmup_steps": 2},
                    "data": {**multiview, "augment": False, "random_window": True}},  # inputs cached per clip
        "forensics": {"model": {"config": {"tools": ["spectrum", "residual", "temporal"], "hidden": 16,
                                           "image_size": 48, "max_frames": 8}},
                      "data": {"train_split": str(aigv["train"]), "val_split": str(aigv["val"]),
                               "test_split": str(aigv["val"]), "cache_dir": str(cache),
                               "batch_size": 4}},  # 12 clips: 3 batches
    }


def _task(config: dict) -> str:
    return config["model"]["class_path"].split(".")[1]  # vision.<task>.lightning.<Module>


def _merge(base: dict, extra: dict) -> dict:
    out = dict(base)
    for key, value in extra.items():
        out[key] = _merge(out.get(key) or {}, value) if isinstance(value, dict) else value
    return out


def reduce(config: dict, fixtures: dict[str, dict], run: Path, callbacks: list[dict]) -> dict:
    """The shipped ``config`` as it runs here: the task's fixture data and reduced model (``fixtures``), a
    validation of one batch after every epoch (and one sanity batch), ``MAX_STEPS`` steps, every path under ``run``
    (as ``--run_dir`` rebases them) and ``callbacks`` (the probes) added to the config's own."""
    from vision.training.cli import move_run

    task = fixtures[_task(config)]
    config = _merge(copy.deepcopy(config), {"model": {"init_args": task["model"]}})
    config["data"] = {**config["data"], "init_args": _merge(config["data"]["init_args"], task["data"])}
    config["seed_everything"] = 7
    trainer = config["trainer"]
    trainer.update({"accelerator": "cpu", "max_steps": MAX_STEPS, "max_epochs": -1, "val_check_interval": None,
                    "check_val_every_n_epoch": 1, "limit_val_batches": 1, "num_sanity_val_steps": 1,
                    "enable_progress_bar": False, "enable_model_summary": False, "log_every_n_steps": 1})
    move_run(config, str(run))
    trainer["callbacks"] = [*trainer.get("callbacks", []), *callbacks]
    return config


def on_cpu(config: dict) -> dict:
    """A GPU-scale config as it runs here, before :func:`reduce`: one CPU process (no DDP / FSDP, no DataLoader
    workers), no weight files. Its precision is kept (``bf16-mixed`` runs on the CPU)."""
    config = copy.deepcopy(config)
    config["trainer"].update({"devices": 1, "num_nodes": 1, "strategy": "auto"})
    init_args = config["model"]["init_args"]
    for name in WEIGHT_FILES:
        if name in init_args:
            init_args[name] = None
    if "num_workers" in _datamodule_args(config["data"]):
        config["data"]["init_args"]["num_workers"] = 0
    return config


def _write(run: Path, config: dict) -> Path:
    run.mkdir(parents=True, exist_ok=True)
    path = run / f"config_{len(list(run.glob('config_*.yaml')))}.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def _probe(step: int, sig: signal.Signals) -> dict:
    return {"class_path": "tests.training.resume_probe.SignalAtStep",
            "init_args": {"step": step, "signal": int(sig)}}


def _every_step(run: Path) -> dict:
    """A checkpoint after every batch, in its own folder (``step=N.ckpt``): the mid-epoch and end-of-last-batch
    checkpoints a ``every_n_train_steps`` callback writes."""
    return {"class_path": "lightning.pytorch.callbacks.ModelCheckpoint",
            "init_args": {"dirpath": str(run / "steps"), "filename": "{step}", "save_top_k": -1,
                          "every_n_train_steps": 1}}


def _train(config: Path, hash_seed: int, workers: int | None = None,
           resume: Path | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1", "PYTHONHASHSEED": str(hash_seed),
           "HF_HUB_OFFLINE": "1"}
    cmd = [sys.executable, str(ROOT / "tools" / "train.py"), "--config", str(config)]
    if workers is not None and "num_workers" in _datamodule_args(yaml.safe_load(config.read_text())["data"]):
        cmd += ["--data.init_args.num_workers", str(workers)]
    if resume is not None:
        cmd += ["--ckpt_path", str(resume)]
    # its own session: the probe signals its whole process group (workers included), never pytest
    return subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600,
                          start_new_session=True)


def _datamodule_args(data: dict) -> set[str]:
    import importlib
    import inspect

    module, name = data["class_path"].rsplit(".", 1)
    return set(inspect.signature(getattr(importlib.import_module(module), name)).parameters)


def _last(run: Path) -> Path:
    return run / "checkpoints" / "last.ckpt"  # every shipped config keeps its last checkpoint there


def _step(path: Path) -> int:
    return int(load_checkpoint(path)["global_step"])


def _assert_identical(a: dict, b: dict) -> None:
    assert a["global_step"] == b["global_step"] == MAX_STEPS
    assert a["state_dict"].keys() == b["state_dict"].keys()
    differ = [k for k in a["state_dict"] if not torch.equal(a["state_dict"][k], b["state_dict"][k])]
    assert not differ, f"{len(differ)} of {len(a['state_dict'])} tensors differ, e.g. {differ[:5]}"
    for opt_a, opt_b in zip(a["optimizer_states"], b["optimizer_states"], strict=True):
        for key, state in opt_a["state"].items():
            for name, value in state.items():
                assert torch.equal(torch.as_tensor(value), torch.as_tensor(opt_b["state"][key][name])), (key, name)
    if "oov_bank" in a:
        for name in a["oov_bank"]:
            assert torch.equal(a["oov_bank"][name], b["oov_bank"][name]), name


def _ok(result: subprocess.CompletedProcess) -> None:
    assert result.returncode == 0, result.stderr[-3000:]


def _stopped(result: subprocess.CompletedProcess, sig: signal.Signals, step: int, run: Path) -> None:
    """The run died by ``sig`` (SIGTERM: exit status 143 and one line naming its stop checkpoint of ``step``)."""
    if sig == signal.SIGKILL:
        assert result.returncode == -signal.SIGKILL, result.stderr[-3000:]
        return
    assert result.returncode == 128 + signal.SIGTERM, result.stderr[-3000:]
    lines = [line for line in result.stderr.splitlines() if line.startswith("SIGTERM:")]
    assert len(lines) == 1 and f"global step {step} " in lines[0] and str(_last(run)) in lines[0], lines
    assert _step(_last(run)) == step


@pytest.fixture(scope="module")
def fixtures(tmp_path_factory) -> dict[str, dict]:
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as the subprocesses (OMP_NUM_THREADS=1)
    yield _data(tmp_path_factory.mktemp("repro_data"))
    torch.set_num_threads(threads)  # the later test files run at the thread count they found


def _shipped(config: Path) -> dict:
    """The config as it runs here before :func:`reduce` (the GPU-scale ones through :func:`on_cpu`)."""
    shipped = compose(config)
    return shipped if config in CONFIGS else on_cpu(shipped)


def _fit_here(config: Path, resume: Path | None = None) -> int:
    """Train ``config`` in this process: 0 when it ends, 143 after a SIGTERM stop, -9 after :class:`Killed`."""
    from tests.training.resume_probe import Killed
    from vision.training.cli import main

    try:
        main(["fit", "--config", str(config), *(["--ckpt_path", str(resume)] if resume else [])])
    except SystemExit as exc:
        return int(exc.code or 0)
    except Killed:
        return -signal.SIGKILL
    return 0


@pytest.fixture(scope="module")
def uninterrupted(fixtures, tmp_path_factory):
    """One uninterrupted run per config, in this process, run lazily and shared by the tests."""
    root = tmp_path_factory.mktemp("repro_runs")
    done: dict[Path, dict] = {}

    def run(config: Path) -> dict:
        if config not in done:
            out = root / config.parent.name / config.stem
            assert _fit_here(_write(out, reduce(_shipped(config), fixtures, out, []))) == 0
            done[config] = load_checkpoint(_last(out))
        return done[config]

    return run


def _ids(path: Path) -> str:
    return f"{path.parent.name}/{path.stem}"


def _same_runs(configs: list[Path]) -> list[tuple[Path, ...]]:
    """``configs`` grouped by the run each makes here (:func:`_shipped` then :func:`reduce`, on the same fixture
    paths): configs that differ only in what :func:`reduce` replaces (data, widths, budget) train identically here,
    so one resume chain covers the group."""
    placeholder = Path("fixture")
    args = _fixture_args(placeholder, placeholder, {"train": placeholder, "val": placeholder, "test": placeholder},
                         {"train": placeholder, "val": placeholder}, placeholder)
    groups: dict[str, list[Path]] = {}
    for config in configs:
        groups.setdefault(yaml.safe_dump(reduce(_shipped(config), args, Path("run"), [])), []).append(config)
    return [tuple(group) for group in groups.values()]


def _group_ids(group: tuple[Path, ...]) -> str:
    return "+".join(_ids(path) for path in group)


@pytest.fixture(scope="module")
def fresh_process(fixtures, tmp_path_factory):
    """One uninterrupted run per config in a new ``tools/train.py`` process (another ``PYTHONHASHSEED``, no
    DataLoader workers): the model nothing earlier in a process can have changed. Run lazily, shared by the tests."""
    root = tmp_path_factory.mktemp("repro_fresh")
    done: dict[Path, dict] = {}

    def run(config: Path) -> dict:
        if config not in done:
            out = root / config.parent.name / config.stem
            _ok(_train(_write(out, reduce(compose(config), fixtures, out, [])), hash_seed=2, workers=0))
            done[config] = load_checkpoint(_last(out))
        return done[config]

    return run


#: one config per task for the two-process test (the others of a task share its code and data path)
SAME_SEED = [path for path in CONFIGS if path.name == "tiny.yaml"]
#: the configs whose training encodes text with the process-wide shared encoder and its caches
#: (:func:`vision.detection.vocabulary.shared_text_encoder`)
SHARED_TEXT = [path for path in SAME_SEED if _task(compose(path)) in ("detection", "concept")]


@pytest.mark.parametrize("config", SAME_SEED, ids=_ids)
def test_same_seed_gives_the_same_model(config, fixtures, uninterrupted, fresh_process):
    """This process's run against a subprocess with another ``PYTHONHASHSEED`` and another number of workers."""
    _assert_identical(uninterrupted(config), fresh_process(config))


def _pollute(splits: list[str]) -> None:
    """What an earlier test may leave in this process: the shared text encoder's caches filled at another thread
    count (an in-process ``validate`` at the default count encodes the split's vocabulary so), and the global
    random generators moved. The thread count is restored."""
    import random

    import numpy as np

    from vision.data.coco import load_split
    from vision.detection.vocabulary import DEFAULT_TEMPLATE, encode_vocabulary, shared_text_encoder

    threads = torch.get_num_threads()
    torch.set_num_threads(4)  # not the run's count (1), whatever the machine's cores
    try:
        for path in splits:
            split = load_split(path)
            names = [c["name"] for _, c in sorted(split.categories.items())]
            shared_text_encoder()([DEFAULT_TEMPLATE.format(name) for name in names])
            encode_vocabulary(split.given_vocabulary())
    finally:
        torch.set_num_threads(threads)
    torch.rand(7)  # the run seeds every generator itself
    np.random.rand(7)
    random.random()


@pytest.mark.parametrize("config", SHARED_TEXT, ids=_ids)
def test_same_seed_gives_the_same_model_in_a_used_process(config, fixtures, fresh_process, tmp_path):
    """A run in this process after :func:`_pollute` (other work at another thread count) ends with the model of a
    new process, bit for bit: training depends on its seed and thread count only, not on what ran before."""
    data = fixtures[_task(compose(config))]["data"]
    splits = [*(data["train_split"] if isinstance(data["train_split"], list) else [data["train_split"]]),
              data["val_split"]]
    _pollute(splits)
    assert _fit_here(_write(tmp_path, reduce(compose(config), fixtures, tmp_path, []))) == 0
    _assert_identical(fresh_process(config), load_checkpoint(_last(tmp_path)))


def _raise(step: int, sig: signal.Signals = signal.SIGKILL) -> dict:
    return {"class_path": "tests.training.resume_probe.RaiseAtStep", "init_args": {"step": step, "signal": int(sig)}}


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("group", _same_runs(CONFIGS + GPU_CONFIGS), ids=_group_ids)
def test_resume_is_exact_after_sigterm_and_sigkill(group, fixtures, uninterrupted, tmp_path):
    """One run stopped four times, each resumed from the checkpoint a user would resume from (``last.ckpt``, or the
    every-step checkpoint a SIGKILL left), and one more resumed from the checkpoint written at the end of an epoch's
    last batch, in this process: a SIGTERM to itself (Lightning's handler stops after the batch), a raised
    :class:`~tests.training.resume_probe.Killed` for a SIGKILL (no cleanup of any kind). Configs that make the same
    run here (:func:`_same_runs`) share one chain."""
    config = group[0]
    shipped = _shipped(config)
    reference = uninterrupted(config)
    run = tmp_path / "run"

    def leg(probe: dict | None, resume: Path | None) -> int:
        return _fit_here(_write(run, reduce(shipped, fixtures, run, [_every_step(run)] + ([probe] if probe else []))),
                         resume)

    # 1. SIGTERM in the second batch: the stop checkpoint of step 2 (mid-epoch)
    assert leg(_raise(1, signal.SIGTERM), None) == 128 + signal.SIGTERM and _step(_last(run)) == 2
    # 2. resumed; killed as step 5 starts: last.ckpt is the validation checkpoint after epoch 0 (step 3)
    assert leg(_raise(4), _last(run)) == -signal.SIGKILL and _step(_last(run)) == BATCHES_PER_EPOCH
    # 3. resumed from the every-step checkpoint of step 4 (mid-epoch); SIGTERM in the last batch of epoch 1: the run
    #    finishes the epoch (and its validation) and stops at step 6
    assert leg(_raise(5, signal.SIGTERM), run / "steps" / "step=4.ckpt") == 128 + signal.SIGTERM
    assert _step(_last(run)) == 2 * BATCHES_PER_EPOCH
    # 4. resumed from that stop checkpoint (an epoch boundary) to the end
    assert leg(None, _last(run)) == 0
    _assert_identical(reference, load_checkpoint(_last(run)))
    # the every-step checkpoint written at the end of epoch 0's last batch, before its validation (run 2 started
    # from the checkpoint of that validation)
    other = tmp_path / "from_last_batch"
    assert _fit_here(_write(other, reduce(shipped, fixtures, other, [])), run / "steps" / "step=3.ckpt") == 0
    _assert_identical(reference, load_checkpoint(_last(other)))


def test_signals_to_the_process_group_resume_exactly(fixtures, uninterrupted, tmp_path):
    """The same stops with real signals, as a scheduler sends them: to the process group of a ``tools/train.py``
    process (DataLoader workers included), on the geometry config (curriculum, reload, two training splits)."""
    config = ROOT / "configs" / "geometry" / "tiny.yaml"
    shipped = compose(config)
    run = tmp_path / "run"

    def leg(probe: dict | None, resume: Path | None, hash_seed: int) -> subprocess.CompletedProcess:
        callbacks = [_every_step(run)] + ([probe] if probe else [])
        return _train(_write(run, reduce(shipped, fixtures, run, callbacks)), hash_seed=hash_seed, resume=resume)

    _stopped(leg(_probe(1, signal.SIGTERM), None, 3), signal.SIGTERM, 2, run)
    _stopped(leg(_probe(4, signal.SIGKILL), _last(run), 4), signal.SIGKILL, 0, run)
    assert _step(_last(run)) == BATCHES_PER_EPOCH
    _stopped(leg(_probe(5, signal.SIGTERM), run / "steps" / "step=4.ckpt", 5), signal.SIGTERM, 6, run)
    _ok(leg(None, _last(run), 6))
    _assert_identical(uninterrupted(config), load_checkpoint(_last(run)))
