"""The three small learned generators of the AIGV benchmark (:mod:`vision.prepare.aigv`), trained there on the
training side's real frames only.

``vae``: a convolutional VAE that re-synthesises every frame (transposed-convolution decoder traces);
``nextframe``: a convolutional next-frame predictor rolled out autoregressively from two real frames;
``diffusion``: a small DDPM denoiser that re-synthesises frames from partial noise (SDEdit, DDIM steps), one noise
    map shared by all frames of a clip (temporally coherent noise, as video diffusion samplers use).
The ``perframe`` family applies the same models to every frame independently, with no temporal model:
``perframe_vae``: every frame decoded from its own posterior sample (independent latent noise per frame);
``perframe_diffusion``: SDEdit at a higher strength with independent noise per frame (frame-to-frame flicker).
Frames are ``uint8 [N, H, W, 3]`` outside, float ``[N, 3, H, W]`` in [-1, 1] inside; everything runs on the CPU,
on one torch thread (:func:`vision.forensics.tools.one_thread`): the CPU kernels sum in an order that follows the
thread count, and the last bits of a training step grow over the steps into different models, so the benchmark's
clips would depend on the machine's cores. With the seeds, training and generation give the same bits every run on
one kind of CPU (torch picks its kernels' vector code by CPU).
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from vision.errors import InputError
from vision.forensics.tools import one_thread
from vision.rng import preserved_rng_state

__all__ = ["GENERATORS", "PERFRAME_GENERATORS", "ConvVAE", "NextFramePredictor", "TinyDenoiser", "to_tensor",
           "to_uint8", "train_generator", "train_generators", "generate"]

#: The generator names, in the order their clips are written.
GENERATORS: tuple[str, ...] = ("vae", "nextframe", "diffusion")
#: The per-frame generators (family ``perframe``), made from the same trained models.
PERFRAME_GENERATORS: tuple[str, ...] = ("perframe_vae", "perframe_diffusion")


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

    @torch.no_grad()
    def sample_per_frame(self, frames: np.ndarray, generator: torch.Generator, temperature: float = 1.0,
                         min_std: float = 0.3) -> np.ndarray:
        """Decode every frame from its own posterior sample ``z = mu + temperature * max(sigma, min_std) * eps``
        with independent ``eps`` per frame (``min_std`` keeps the sampling noise visible when training made the
        posterior nearly deterministic): ``uint8 [N, H, W, 3]``."""
        mu, logvar = self.enc(to_tensor(frames)).chunk(2, dim=1)
        std = (0.5 * logvar).exp().clamp(min=min_std)
        z = mu + temperature * std * torch.randn(mu.shape, generator=generator)
        return to_uint8(torch.tanh(self.dec(z)))


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
                     generator: torch.Generator | None = None, shared_noise: bool = True) -> np.ndarray:
        """SDEdit: noise each frame to step ``strength * steps`` and denoise with deterministic DDIM. With
        ``shared_noise`` one noise map ``[1, 3, H, W]`` serves every frame (temporally coherent); otherwise each frame
        draws its own."""
        x0 = to_tensor(frames)
        start = max(1, int(strength * self.steps)) - 1
        ab = self.alpha_bar[start]
        shape = (1,) + tuple(x0.shape[1:]) if shared_noise else tuple(x0.shape)
        noise = torch.randn(shape, generator=generator).expand(x0.shape)
        x = ab.sqrt() * x0 + (1 - ab).sqrt() * noise
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
    """Train the three generators on training-side real windows ``[L, s, s, 3]`` only, on one torch thread, their
    initial weights drawn from ``seed`` (the caller's global random state is left as it was): the same models for
    the same windows and seed, whatever the thread count or random state the caller has."""
    with one_thread(), preserved_rng_state():
        torch.manual_seed(seed)
        return _train_generators(train_windows, steps, seed, batch)


def _train_generators(train_windows: list[np.ndarray], steps: int, seed: int,
                      batch: int) -> tuple[dict[str, nn.Module], dict[str, list[float]]]:
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
    """Make one generated clip ``uint8 [L, s, s, 3]`` from a real window with generator ``name`` (one of
    :data:`GENERATORS` or :data:`PERFRAME_GENERATORS`), on one torch thread: the same clip for the same models,
    window and seed, whatever the caller's thread count."""
    with one_thread():
        return _generate(models, name, window, seed)


def _generate(models: dict[str, nn.Module], name: str, window: np.ndarray, seed: int) -> np.ndarray:
    if name == "vae":
        return models["vae"].resynthesise(window)
    if name == "nextframe":
        return models["nextframe"].rollout(window)
    if name == "diffusion":
        return models["diffusion"].resynthesise(window, generator=torch.Generator().manual_seed(seed))
    if name == "perframe_vae":
        return models["vae"].sample_per_frame(window, generator=torch.Generator().manual_seed(seed))
    if name == "perframe_diffusion":
        return models["diffusion"].resynthesise(window, strength=0.6, generator=torch.Generator().manual_seed(seed),
                                                shared_noise=False)
    raise InputError(f"unknown generator {name!r}")
