"""G2TAM: the geometry backbone + cross-modal spatial encoder + per-view mask decoder, several objects at once.

``G2TAM.encode(images)`` runs the geometry backbone once over all S views (tokens, cameras, depth, world points)
and projects the last aggregator layer to ``dim``-wide view features; ``G2TAM.decode(encoded, prompts)`` decodes
masks for the N object slots of :class:`~vision.tracking.prompts.Prompts` in every view. Prompts can change
without re-running the backbone. Images: float [B, S, 3, H, W] in [0, 1]; frame 0 defines the world frame.
"""

from __future__ import annotations

from typing import Any, Sequence

import torch
import torch.nn.functional as F
from torch import nn

from vision.geometry.camera import depth_to_world_points, world_to_camera_points
from vision.geometry.model import GeometryBackbone, create_backbone
from vision.geometry.solver import CameraSolver
from vision.text import TEXT_DIM
from vision.tracking.decoder import MaskDecoder
from vision.tracking.layers import BackboneTracker, LayerNorm2d
from vision.tracking.light_points import LightPointHead, PatchPointHead
from vision.tracking.multiplex import MultiplexDecoder
from vision.tracking.prompts import PromptEncoder, Prompts
from vision.tracking.spatial_encoder import SpatialEncoder

__all__ = ["DECODER_STYLES", "G2TAM", "TRACKING_POINTS", "select_best_mask"]

#: ``g2tam``: our two-way decoder; ``sam2``: the same modules with SAM 2.1's computation; ``multiplex``: objects
#: share one decoding of each view (:class:`~vision.tracking.multiplex.MultiplexDecoder`); see :class:`G2TAM`
DECODER_STYLES: tuple[str, ...] = ("g2tam", "sam2", "multiplex")

#: where tracking's point maps come from: ``dpt``, the backbone's point head; ``light``, its coarse stages and a linear
#: map (fitted after training or trained with the tracker); ``patch``, an MLP on the last layer's patch tokens, trained
#: with the tracker (:mod:`vision.tracking.light_points`)
TRACKING_POINTS: tuple[str, ...] = ("dpt", "light", "patch")


def select_best_mask(masks: torch.Tensor, iou: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Pick the hypothesis with the highest predicted IoU: ``masks [..., M, H, W]``, ``iou [..., M]`` ->
    (``[..., H, W]``, ``[...]``)."""
    best = iou.argmax(-1)
    idx = best[..., None, None, None].expand(*best.shape, 1, *masks.shape[-2:])
    return torch.gather(masks, -3, idx)[..., 0, :, :], torch.gather(iou, -1, best[..., None])[..., 0]


class G2TAM(BackboneTracker):
    """Promptable instance tracking in 3D with geometry as implicit memory.

    Args:
        backbone: geometry backbone size name (see :func:`vision.geometry.model.create_backbone`).
        image_size: input size (square, multiple of the patch size) the backbone is built for.
        dim: width of view features, prompt tokens and the decoder.
        num_masks: mask hypotheses per object. decoder_depth / num_heads: two-way transformer.
        text_dim: TextEncoder width (``vision.text.TEXT_DIM`` for MiniLM). mask_points: 3D points per mask prompt.
        feature_layer: aggregator layer used for the view features.
        backbone_overrides: extra :func:`create_backbone` arguments.
        click_maps: dense click / box maps on the prompted view (:class:`PromptEncoder`).
        proximity_maps: dense 3D proximity maps on every view (:class:`SpatialEncoder`).
        proximity_sigmas: their scene-normalised lengths (one map each, plus a negative map).
        hires_maps: the decoder also fuses these maps at its upsampled resolution (:class:`MaskDecoder`).
        decoder_style: ``g2tam`` or ``sam2``: the mask decoder computes as SAM 2.1's (first two-way block without
            positional code or residual, token MLP ``8 * dim`` wide, sigmoid IoU head); with ``dim=256,
            num_masks=4, num_heads=8, decoder_depth=2, click_maps=False``
            (:data:`vision.tracking.sam2_keys.SAM2_1_HEADS`) the prompt encoder and the mask decoder take a SAM 2.1
            checkpoint's weights (:func:`vision.tracking.sam2_keys.load_sam2_heads`). ``multiplex``: every object
            reads one shared decoding of each view (:class:`~vision.tracking.multiplex.MultiplexDecoder`): the
            per-object cost is a few tokens and a dynamic 1x1 mask head instead of a whole two-way decoding; no
            dense prompt embedding is computed (the decoder reads the prompt and proximity maps itself; needs
            ``hires_maps``), and each object's prompt tokens are built and read once per window, not per view.
        map_attention: with the ``multiplex`` decoder, each object's maps bias its tokens' attention to the view
            (:class:`~vision.tracking.multiplex.MultiplexDecoder`); ignored by the other decoders.
        tracking_points: ``dpt`` (the point head), ``light`` or ``patch``: :meth:`tracking_encoding` reads the
            point maps from ``light_points``, a :class:`~vision.tracking.light_points.LightPointHead` (fitted after
            training by :func:`~vision.tracking.light_points.fit_light_points`, or trained with the tracker) or a
            :class:`~vision.tracking.light_points.PatchPointHead` (trained with the tracker), and never runs the
            point head; :meth:`encode` (training, geometry) still runs the full heads, and
            :meth:`tracking_points_from` gives the light points of its output.

    For :class:`~vision.tracking.predictor.TrackerPredictor` (:class:`~vision.tracking.interface.TrackingModel`):
    ``uses_geometry_memory`` is True (point maps, cameras and 3D memory prompts).
    """

    #: predicts point maps and cameras and takes 3D memory prompts (:class:`~vision.tracking.interface.TrackingModel`)
    uses_geometry_memory: bool = True

    @property
    def second_pass(self) -> bool:
        """Whether the predictor decodes each window twice by default (``TrackerPredictor(refine=None)``): chosen by
        measurement per decoder. The second pass raises the default decoder's J&F; the multiplexed decoder, trained
        on memories lifted from ground-truth masks, scores lower with memory lifted from its own first pass
        (docs/speed.md, issue 43), so it decodes once."""
        return self.decoder_style != "multiplex"

    def __init__(self, backbone: str = "tiny", image_size: int = 64, dim: int = 64, num_masks: int = 3,
                 decoder_depth: int = 2, num_heads: int = 4, text_dim: int = TEXT_DIM, mask_points: int = 8,
                 feature_layer: int = -1, backbone_overrides: dict[str, Any] | None = None, click_maps: bool = True,
                 proximity_maps: bool = True, hires_maps: bool = True,
                 proximity_sigmas: Sequence[float] = SpatialEncoder.DEFAULT_PROXIMITY_SIGMAS,
                 decoder_style: str = "g2tam", tracking_points: str = "dpt", map_attention: bool = True) -> None:
        super().__init__()
        if decoder_style not in DECODER_STYLES:
            raise ValueError(f"decoder_style must be one of {DECODER_STYLES}, got {decoder_style!r}")
        if tracking_points not in TRACKING_POINTS:
            raise ValueError(f"tracking_points must be one of {TRACKING_POINTS}, got {tracking_points!r}")
        sam2 = decoder_style == "sam2"
        multiplex = decoder_style == "multiplex"
        if multiplex and not hires_maps:
            raise ValueError("decoder_style='multiplex' reads the per-object maps; it needs hires_maps=True")
        self.decoder_style = decoder_style
        self.backbone: GeometryBackbone = create_backbone(backbone, img_size=image_size, **(backbone_overrides or {}))
        self.dim = dim
        self.text_dim = text_dim
        self.feature_layer = feature_layer
        self.feat_proj = nn.Sequential(nn.Conv2d(2 * self.backbone.embed_dim, dim, 1), LayerNorm2d(dim))
        self.prompt_encoder = PromptEncoder(dim, text_dim=text_dim, click_maps=click_maps, dense_embed=not multiplex)
        self.spatial_encoder = SpatialEncoder(dim, num_heads=num_heads, mask_points=mask_points,
                                              proximity=proximity_maps, proximity_sigmas=proximity_sigmas,
                                              dense_embed=not multiplex, view_tokens=not multiplex)
        map_channels = PromptEncoder.PROMPT_MAP_CHANNELS + (self.spatial_encoder.num_proximity_maps
                                                            if proximity_maps else 0)
        self.decoder: MaskDecoder | MultiplexDecoder
        if multiplex:
            self.decoder = MultiplexDecoder(dim, num_masks=num_masks, depth=decoder_depth, num_heads=num_heads,
                                            mlp_dim=2 * dim, map_channels=map_channels, map_attention=map_attention)
        else:
            self.decoder = MaskDecoder(dim, num_masks=num_masks, depth=decoder_depth, num_heads=num_heads,
                                       mlp_dim=(8 if sam2 else 2) * dim,
                                       map_channels=map_channels if hires_maps else 0,
                                       skip_first_layer_pe=sam2, iou_sigmoid=sam2)
        self.tracking_points = tracking_points
        self.light_points: LightPointHead | PatchPointHead | None = None
        if tracking_points != "dpt" and self.backbone.point_head is None:
            raise ValueError(f"tracking_points={tracking_points!r} reads the backbone's point head; it has none")
        if tracking_points == "light":
            self.light_points = LightPointHead(self.backbone.point_head.features)
        elif tracking_points == "patch":
            self.light_points = PatchPointHead(2 * self.backbone.embed_dim, self.backbone.patch_size)

    def features_from_geometry(self, geometry: dict[str, Any]) -> dict[str, Any]:
        """Add ``feats [B, S, dim, gh, gw]`` and ``hires [B, S, dim/8, 4gh, 4gw]`` to a backbone output dict."""
        images = geometry["images"]
        b, s, _, h, w = images.shape
        layer = geometry["tokens"][self.feature_layer]
        fmap = self.backbone.tokens_to_feature_map(layer, geometry["patch_start_idx"], (h, w))
        gh, gw = fmap.shape[-2:]
        feats = self.feat_proj(fmap.flatten(0, 1)).view(b, s, self.dim, gh, gw)
        hires = self.decoder.encode_hires(images.flatten(0, 1), (gh, gw))
        return {**geometry, "feats": feats, "hires": hires.view(b, s, *hires.shape[1:])}

    def encode(self, images: Any, heads: Sequence[str] | None = None) -> dict[str, Any]:
        """Backbone over all views -> geometry dict (see :mod:`vision.geometry.model`) + ``feats`` + ``hires``.
        ``heads``: the backbone heads to run (default all; :meth:`decode` reads only ``"points"``)."""
        return self.features_from_geometry(self.backbone(images, heads=heads))

    def tracking_points_from(self, geometry: dict[str, Any]) -> torch.Tensor:
        """The world points ``[B, S, H, W, 3]`` tracking reads, from a backbone output dict (its ``tokens``,
        ``images`` and ``patch_start_idx``): the light point head's, or the dict's own ``world_points`` with
        ``tracking_points="dpt"``."""
        if self.light_points is None:
            return geometry["world_points"]
        return self.light_points(self.backbone.point_head, geometry["tokens"], geometry["images"],
                                 geometry["patch_start_idx"])

    def tracking_encoding(self, images: torch.Tensor) -> dict[str, Any]:
        """The encoding of a window ``images [1, S, 3, s, s]`` for tracking: the backbone's camera and point heads
        only (the depth head is not run; with ``tracking_points`` ``light`` or ``patch`` the light point head instead of
        the point head), the entries :meth:`decode` reads (``images``, ``feats``, ``hires``,
        ``world_points``) with the cameras (``extrinsics``, ``intrinsics``), and ``depth [1, S, s, s, 1]``, the z
        of the world points in each view's camera: the geometry the tracker's memory is made of."""
        if self.light_points is None:
            geometry = self.backbone(images, heads=("camera", "points"))
        else:
            geometry = self.backbone(images, heads=("camera",))
            geometry["world_points"] = self.tracking_points_from(geometry)
        return self._tracking_entries(geometry)

    def solved_tracking_encoding(self, images: torch.Tensor, solver: CameraSolver) -> dict[str, Any]:
        """:meth:`tracking_encoding` with the memory on solved cameras: ``world_points`` are the depth head's depth
        unprojected by ``solver``'s cameras (:meth:`~vision.geometry.solver.CameraSolver.solve_outputs`: dense
        flow between every two views of the window, PnP on that depth, a spanning tree from view 0; the camera
        head's camera for a view the tree does not reach), and ``extrinsics`` are those cameras. The point head is
        not run. Same entries, shapes and frame (view 0's camera) as :meth:`tracking_encoding`."""
        geometry = self.backbone(images, heads=("camera", "depth"))
        extrinsics = solver.solve_outputs(geometry, geometry["extrinsics"]).to(geometry["depth"])
        geometry["extrinsics"] = extrinsics
        geometry["world_points"] = depth_to_world_points(geometry["depth"][..., 0], extrinsics,
                                                         geometry["intrinsics"])
        return self._tracking_entries(geometry)

    def _tracking_entries(self, geometry: dict[str, Any]) -> dict[str, Any]:
        """The entries of :meth:`tracking_encoding` from a backbone output that holds ``world_points``: the view
        features, and ``depth``, the z of the world points in each view's camera."""
        keep = ("images", "feats", "hires", "world_points", "extrinsics", "intrinsics")
        encoded = {k: v for k, v in self.features_from_geometry(geometry).items() if k in keep}
        points = encoded["world_points"]
        b, s, h, w, _ = points.shape
        camera = world_to_camera_points(points.reshape(b, s, h * w, 3), encoded["extrinsics"])
        return {**encoded, "depth": camera[..., 2:].reshape(b, s, h, w, 1)}

    def decode(self, encoded: dict[str, Any], prompts: Prompts,
               views: Sequence[int] | None = None, full_size: bool = True) -> dict[str, torch.Tensor]:
        """Masks for every (view, object slot), or for the ``views`` listed only (indices into the S encoded
        views; the prompts, the scene scale and text attention still see every view, so each listed view's
        outputs are those of the full decode).

        Returns:
            ``masks [B, V, N, M, H, W]`` logits at input resolution (``full_size=False``: at the decoder's, ``4 *
            grid``, for a caller that upsamples only the hypotheses it keeps), ``iou [B, V, N, M]``, ``presence
            [B, V, N]`` logits, ``view_pos`` and ``scale`` (see :class:`SpatialEncoder`); V = S without ``views``.
        """
        feats, hires = encoded["feats"], encoded["hires"]
        images = encoded["images"]
        h, w = images.shape[-2:]
        n = prompts.num_objects
        enc = self.spatial_encoder(feats, encoded["world_points"], prompts, self.prompt_encoder, (h, w), views)
        if views is not None:
            index = torch.as_tensor(list(views), dtype=torch.long, device=feats.device)
            feats, hires = feats[:, index], hires[:, index]
        b, s, d, gh, gw = feats.shape
        m = self.decoder.num_masks
        if isinstance(self.decoder, MultiplexDecoder):
            image = (feats + self.prompt_encoder.no_mask.view(1, 1, d, 1, 1)).flatten(0, 1)  # [B*S, d, gh, gw]
            # sparse [B, 1, N, T, d]: one set of prompt tokens per object, read once for the clip's S views
            out = self.decoder(image, enc["view_pos"].flatten(0, 1), enc["sparse"].flatten(0, 1),
                               enc["sparse_pad"].flatten(0, 1), hires.flatten(0, 1), enc["maps"].flatten(0, 1))
            out = {key: value.flatten(0, 1) for key, value in out.items()}  # [B*S*N, ...] as per (view, object)
        else:
            image = (feats[:, :, None] + enc["dense"]).flatten(0, 2)  # [B*S*N, d, gh, gw]
            pos = enc["view_pos"][:, :, None].expand(-1, -1, n, -1, -1, -1).flatten(0, 2)
            hr = hires[:, :, None].expand(-1, -1, n, -1, -1, -1).flatten(0, 2)
            maps = enc["maps"].flatten(0, 2) if self.decoder.map_channels else None
            out = self.decoder(image, pos, enc["sparse"].flatten(0, 2), enc["sparse_pad"].flatten(0, 2), hr, maps)
        masks = out["masks"]
        if full_size:
            masks = F.interpolate(masks, size=(h, w), mode="bilinear", align_corners=False)
        return {"masks": masks.view(b, s, n, m, *masks.shape[-2:]), "iou": out["iou"].view(b, s, n, m),
                "presence": out["presence"].view(b, s, n), "view_pos": enc["view_pos"], "scale": enc["scale"]}

    def forward(self, images: Any, prompts: Prompts) -> dict[str, Any]:
        """``encode`` then ``decode``; returns the geometry outputs merged with the mask outputs."""
        encoded = self.encode(images)
        return {**encoded, **self.decode(encoded, prompts)}
