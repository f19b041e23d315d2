"""The control: a 2D tracker with a SAM2-style appearance memory bank on the same frame features.

Each frame is encoded alone by the geometry backbone's aggregator (S = 1 per call, so only frame attention
carries information: no multi-view global attention, no geometry), projected to ``dim``. Tracking one object:

1. the prompted frame (view of the visual prompt; view 0 for text) is decoded with the prompt tokens (the same
   :class:`PromptEncoder` and :class:`MaskDecoder` as G2TAM, with 2D positional codes only);
2. its memory (frame features fused with the predicted mask by a small conv encoder, plus a learned "no object"
   embedding when the object is judged absent) is stored as the conditioning memory;
3. the other frames are processed forward from the prompt, then backward from it; each frame's features attend
   (memory attention: self-attention, cross-attention over the memory tokens, whose keys carry the 2D positional
   code of their grid cell and a learned embedding of their memory slot, MLP)
   to the conditioning memory plus the last ``memory_size`` frames' memories, are decoded without prompt points,
   and their memory joins the bank (the bank keeps only the most recent ``memory_size``; it is reset to the
   conditioning memory when the pass turns backward).

Text prompts give a projected text token to every frame (a global prompt). Images: float [B, S, 3, H, W] in [0, 1].
"""

from __future__ import annotations

from typing import Any, Sequence

import torch
import torch.nn.functional as F
from torch import nn

from vision.geometry.model import GeometryBackbone, create_backbone
from vision.text import TEXT_DIM
from vision.tracking.decoder import MaskDecoder
from vision.tracking.layers import Attention, BackboneTracker, LayerNorm2d
from vision.tracking.model import select_best_mask
from vision.tracking.prompts import PAD, PromptEncoder, Prompts

__all__ = ["MemoryAttentionLayer", "MemoryBankTracker"]


class MemoryAttentionLayer(nn.Module):
    """Self-attention over the current frame's tokens, cross-attention to memory tokens, MLP (pre-norm)."""

    def __init__(self, dim: int, num_heads: int, mlp_dim: int) -> None:
        super().__init__()
        self.norm1, self.norm2, self.norm3 = nn.LayerNorm(dim), nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.self_attn = Attention(dim, num_heads)
        self.cross_attn = Attention(dim, num_heads)
        self.mlp = nn.Sequential(nn.Linear(dim, mlp_dim), nn.GELU(), nn.Linear(mlp_dim, dim))

    def forward(self, x: torch.Tensor, pos: torch.Tensor, memory: torch.Tensor, memory_pos: torch.Tensor,
                memory_pad: torch.Tensor) -> torch.Tensor:
        """``x, pos [L, P, D]``; ``memory, memory_pos [L, Q, D]``; ``memory_pad [L, Q]`` True = empty slot."""
        y = self.norm1(x)
        x = x + self.self_attn(y + pos, y + pos, y)
        y = self.norm2(x)
        x = x + self.cross_attn(y + pos, memory + memory_pos, memory, key_padding_mask=memory_pad)
        return x + self.mlp(self.norm3(x))


class MemoryBankTracker(BackboneTracker):
    """SAM2-style appearance-memory tracker (see the module docstring); same outputs as :class:`G2TAM.decode`.

    Args:
        backbone, image_size, dim, num_masks, decoder_depth, num_heads, text_dim, backbone_overrides: as G2TAM.
        memory_size: k, the recent frames kept in the bank (plus the prompted frame).
        memory_layers: memory-attention layers.
        click_maps: dense click / box maps on the prompted frame (:class:`PromptEncoder`), as G2TAM.
        hires_maps: the decoder also fuses the prompted frame's maps at its upsampled resolution, as G2TAM.

    For :class:`~vision.tracking.predictor.TrackerPredictor` (:class:`~vision.tracking.interface.TrackingModel`):
    ``uses_geometry_memory`` is False (no point maps, no 3D memory prompts).
    """

    #: no point maps or cameras, no 3D memory prompts (:class:`~vision.tracking.interface.TrackingModel`)
    uses_geometry_memory: bool = False

    def __init__(self, backbone: str = "tiny", image_size: int = 64, dim: int = 64, num_masks: int = 3,
                 decoder_depth: int = 2, num_heads: int = 4, text_dim: int = TEXT_DIM, memory_size: int = 4,
                 memory_layers: int = 2, feature_layer: int = -1,
                 backbone_overrides: dict[str, Any] | None = None, click_maps: bool = True,
                 hires_maps: bool = True) -> None:
        super().__init__()
        overrides = dict(enable_camera=False, enable_depth=False, enable_points=False)
        overrides.update(backbone_overrides or {})
        self.backbone: GeometryBackbone = create_backbone(backbone, img_size=image_size, **overrides)
        self.dim, self.text_dim, self.memory_size, self.feature_layer = dim, text_dim, memory_size, feature_layer
        self.feat_proj = nn.Sequential(nn.Conv2d(2 * self.backbone.embed_dim, dim, 1), LayerNorm2d(dim))
        self.prompt_encoder = PromptEncoder(dim, text_dim=text_dim, click_maps=click_maps)
        self.decoder = MaskDecoder(dim, num_masks=num_masks, depth=decoder_depth, num_heads=num_heads,
                                   mlp_dim=2 * dim, map_channels=PromptEncoder.PROMPT_MAP_CHANNELS if hires_maps else 0)
        self.memory_layers = nn.ModuleList(MemoryAttentionLayer(dim, num_heads, 2 * dim)
                                           for _ in range(memory_layers))
        self.memory_norm = nn.LayerNorm(dim)
        self.mask_encoder = nn.Sequential(
            nn.Conv2d(1, 4, 2, stride=2), LayerNorm2d(4), nn.GELU(), nn.Conv2d(4, 16, 2, stride=2), LayerNorm2d(16),
            nn.GELU(), nn.Conv2d(16, dim, 1))
        self.memory_fuser = nn.Sequential(nn.Conv2d(dim, dim, 3, padding=1), LayerNorm2d(dim), nn.GELU(),
                                          nn.Conv2d(dim, dim, 1))
        self.no_object = nn.Parameter(torch.zeros(dim))
        self.no_memory = nn.Parameter(torch.zeros(dim))
        self.slot_embed = nn.Parameter(torch.randn(memory_size + 1, dim) * 0.02)

    def tracking_encoding(self, images: torch.Tensor) -> dict[str, Any]:
        """The encoding of a window ``images [1, S, 3, s, s]`` for tracking: :meth:`encode` (no geometry)."""
        return self.encode(images)

    def encode(self, images: Any) -> dict[str, Any]:
        """Per-frame features: ``feats [B, S, dim, gh, gw]``, ``hires``, ``images`` (each frame encoded alone)."""
        images = self.backbone.validate(images)
        b, s, _, h, w = images.shape
        tokens, start, _ = self.backbone.aggregate(images.reshape(b * s, 1, 3, h, w))
        fmap = self.backbone.tokens_to_feature_map(tokens[self.feature_layer], start, (h, w))[:, 0]
        gh, gw = fmap.shape[-2:]
        feats = self.feat_proj(fmap).view(b, s, self.dim, gh, gw)
        hires = self.decoder.encode_hires(images.flatten(0, 1), (gh, gw))
        return {"images": images, "feats": feats, "hires": hires.view(b, s, *hires.shape[1:])}

    def _memory(self, feats: torch.Tensor, mask_logits: torch.Tensor, presence: torch.Tensor) -> torch.Tensor:
        """Memory of one frame per sequence: ``feats [L, D, gh, gw]``, ``mask_logits [L, H, W]``, ``presence [L]``
        -> ``[L, gh*gw, D]``."""
        gh, gw = feats.shape[-2:]
        m = F.interpolate(mask_logits.detach().sigmoid()[:, None], size=(4 * gh, 4 * gw), mode="bilinear",
                          align_corners=False)
        mem = self.memory_fuser(feats + self.mask_encoder(m))
        absent = (presence.detach() < 0).float()[:, None, None, None]
        mem = mem + absent * self.no_object[None, :, None, None]
        return mem.flatten(2).transpose(1, 2)

    def decode(self, encoded: dict[str, Any], prompts: Prompts,
               views: Sequence[int] | None = None, full_size: bool = True) -> dict[str, torch.Tensor]:
        """Track every object slot through the frames (see the module docstring).

        Returns ``masks [B, V, N, M, H, W]`` logits (``full_size=False``: at the decoder's resolution, half the
        input's, for a caller that upsamples only the hypotheses it keeps), ``iou [B, V, N, M]``, ``presence
        [B, V, N]`` logits: every frame (V = S), or the ``views`` listed only (indices into the S frames), taken
        from tracking every frame (a frame's outputs depend on the frames tracked before it).
        """
        out = self._track(encoded, prompts, full_size)
        if views is None:
            return out
        index = torch.as_tensor(list(views), dtype=torch.long, device=out["masks"].device)
        return {key: value[:, index] for key, value in out.items()}

    def _track(self, encoded: dict[str, Any], prompts: Prompts, full_size: bool = True) -> dict[str, torch.Tensor]:
        """:meth:`decode` over every frame."""
        feats, hires, images = encoded["feats"], encoded["hires"], encoded["images"]
        b, s, d, gh, gw = feats.shape
        h, w = images.shape[-2:]
        n = prompts.num_objects
        nm = self.decoder.num_masks
        dev = feats.device
        seq = b * n
        pe2d = self.prompt_encoder.dense_pe((gh, gw), (h, w)).flatten(1).t()[None]  # [1, P, D]
        start = prompts.view.clamp(min=0).reshape(seq)  # prompted frame (text: frame 0)
        # order of frames per sequence: prompt, forward to the end, then backward from the prompt
        order = torch.empty(seq, s, dtype=torch.long, device=dev)
        reset = torch.zeros(seq, s, dtype=torch.bool, device=dev)
        for i in range(seq):
            p = int(start[i])
            seqs = [p] + list(range(p + 1, s)) + list(range(p - 1, -1, -1))
            order[i] = torch.tensor(seqs, device=dev)
            if p > 0:
                reset[i, s - p] = True
        bidx = torch.arange(b, device=dev).repeat_interleave(n)
        # prompt tokens for the conditioning frame (2D only) and the global text token
        labels = prompts.labels.reshape(seq, -1)
        has_view = (prompts.view >= 0).reshape(seq)
        labels = torch.where(has_view[:, None], labels, torch.full_like(labels, PAD))
        pts = self.prompt_encoder.embed_points(prompts.points.reshape(seq, -1, 2), labels, (h, w))
        pts_pad = labels == PAD
        text_tok = self.prompt_encoder.embed_text(prompts.text.reshape(seq, -1))[:, None]
        text_pad = ~(prompts.has_text & prompts.valid).reshape(seq)[:, None]
        idle_tok = self.prompt_encoder.not_a_point.expand(seq, 1, d)
        dense = self.prompt_encoder.no_mask.view(1, d, 1, 1).expand(seq, d, gh, gw)
        has_mask = (prompts.has_mask & (prompts.view >= 0)).reshape(seq)
        has_visual = self.prompt_encoder.has_dense(labels, has_mask)
        cond_maps = feats.new_zeros(seq, self.prompt_encoder.PROMPT_MAP_CHANNELS, 4 * gh, 4 * gw)
        if bool(has_visual.any()):
            emb, pmap = self.prompt_encoder.embed_dense(prompts.points.reshape(seq, -1, 2), labels,
                                                        prompts.masks.reshape(seq, h, w), has_mask, (gh, gw))
            dense = torch.where(has_visual[:, None, None, None], emb, dense)
            cond_maps = torch.where(has_visual[:, None, None, None], pmap, cond_maps)
        use_maps = self.decoder.map_channels > 0

        mask_out = torch.zeros(seq, s, nm, gh * 4, gw * 4, device=dev)
        iou_out = torch.zeros(seq, s, nm, device=dev)
        pres_out = torch.zeros(seq, s, device=dev)
        mask_list, iou_list, pres_list, frame_list = [], [], [], []
        cond_mem = None
        recent: list[torch.Tensor] = []
        recent_valid: list[torch.Tensor] = []
        for t in range(s):
            frame = order[:, t]
            f = feats[bidx, frame]  # [seq, D, gh, gw]
            hr = hires[bidx, frame]
            if t == 0:
                image = f + self.no_memory[None, :, None, None] + dense
                sparse = torch.cat([pts, text_tok], dim=1)
                pad = torch.cat([pts_pad, text_pad], dim=1)
            else:
                keep = ~reset[:, t]
                recent_valid = [v & keep for v in recent_valid]
                mems = [cond_mem] + recent[-self.memory_size:]
                valids = [torch.ones(seq, dtype=torch.bool, device=dev)] + recent_valid[-self.memory_size:]
                memory = torch.cat(mems, dim=1)
                # memory keys carry the frame grid's 2D positional code (as SAM2's memory positional encoding)
                # plus a learned embedding of their slot (the conditioning frame, then the recent frames)
                mpos = torch.cat([(self.slot_embed[j] + pe2d).expand(seq, -1, -1) for j in range(len(mems))], 1)
                mpad = torch.cat([(~v)[:, None].expand(-1, m.shape[1]) for v, m in zip(valids, mems)], 1)
                x = f.flatten(2).transpose(1, 2)
                for layer in self.memory_layers:
                    x = layer(x, pe2d, memory, mpos, mpad)
                image = self.memory_norm(x).transpose(1, 2).reshape(seq, d, gh, gw)
                sparse = torch.cat([idle_tok, text_tok], dim=1)
                pad = torch.cat([torch.zeros(seq, 1, dtype=torch.bool, device=dev), text_pad], dim=1)
            maps = (cond_maps if t == 0 else torch.zeros_like(cond_maps)) if use_maps else None
            out = self.decoder(image, pe2d.transpose(1, 2).reshape(1, d, gh, gw).expand(seq, -1, -1, -1),
                               sparse, pad, hr, maps)
            best, _ = select_best_mask(out["masks"], out["iou"])
            mem = self._memory(f, F.interpolate(best[:, None], size=(h, w), mode="bilinear",
                                                align_corners=False)[:, 0], out["presence"])
            if t == 0:
                cond_mem = mem
            else:
                recent.append(mem)
                recent_valid.append(torch.ones(seq, dtype=torch.bool, device=dev))
                recent, recent_valid = recent[-self.memory_size:], recent_valid[-self.memory_size:]
            mask_list.append(out["masks"])
            iou_list.append(out["iou"])
            pres_list.append(out["presence"])
            frame_list.append(frame)
        # scatter back to view order
        rows = torch.arange(seq, device=dev)
        for t in range(s):
            mask_out = mask_out.index_put((rows, frame_list[t]), mask_list[t])
            iou_out = iou_out.index_put((rows, frame_list[t]), iou_list[t])
            pres_out = pres_out.index_put((rows, frame_list[t]), pres_list[t])
        masks = mask_out.flatten(0, 1)
        if full_size:
            masks = F.interpolate(masks, size=(h, w), mode="bilinear", align_corners=False)
        masks = masks.view(b, n, s, nm, *masks.shape[-2:]).transpose(1, 2)
        return {"masks": masks, "iou": iou_out.view(b, n, s, nm).transpose(1, 2),
                "presence": pres_out.view(b, n, s).transpose(1, 2)}

    def forward(self, images: Any, prompts: Prompts) -> dict[str, Any]:
        """``encode`` then ``decode``."""
        encoded = self.encode(images)
        return {**encoded, **self.decode(encoded, prompts)}
