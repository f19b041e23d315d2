"""Tool planning, the evidence graph and deliberation to a verdict.

Planning (:func:`plan_tools`): the clip's properties (length, motion, frozen frames, compression, whether a
bitstream exists) decide which tools can apply; each tool's measured reliability (validation AUC of its best
feature, stored in the checkpoint) decides whether its evidence is worth weighing (``min_reliability``).

Evidence graph (:class:`EvidenceGraph`): nodes are evidence items that deviate from the real reference
(``|z| >= 1`` and a known direction); their weight is ``(2 * reliability - 1) * min(|z|, 4) / 4``. Edges join
items of *different* tools: ``support`` when they point the same way, ``contradict`` when they do not.

Deliberation (:func:`deliberate`): four agents (appearance = spectrum/residual/npr, temporal = temporal/motion,
codec, geometry) each score their evidence in [-1, 1] (> 0 = generated); the detector gives the calibrated
probability and the real-calibrated threshold. The verdict is ``insufficient evidence`` when no tool applied,
the clip is frozen or too short, or the detector is within ``margin`` of its threshold while agents disagree;
otherwise ``generated`` when ``p >= threshold``, else ``real``. The answer names the ranked evidence for the
verdict and the conflicts (contradict edges between strong items and agents that voted against).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from vision.forensics.tools.base import Clip, Evidence, ToolResult

__all__ = ["clip_properties", "plan_tools", "EvidenceGraph", "deliberate", "Verdict", "AGENTS"]

AGENTS = {"appearance": ("spectrum", "residual", "npr"), "temporal": ("temporal", "motion"), "codec": ("codec",),
          "geometry": ("geometry",)}
TOOL_MIN_FRAMES = {"temporal": 4, "motion": 2, "codec": 2, "geometry": 2}


def clip_properties(clip: Clip) -> dict[str, Any]:
    """Properties that steer planning: ``num_frames``, ``motion`` (mean |frame difference| in [0, 1]),
    ``frozen`` (no frame changes), ``static_share`` (share of repeated frames), ``bits_per_pixel`` (file size
    per pixel per frame, None without a file), ``compressed`` (bpp < 0.15), ``has_bitstream``, ``size``."""
    if clip.num_frames >= 2:
        small = clip.frames[:, ::4, ::4].astype(np.int16)  # motion on a 1/4 grid; repeats checked exactly
        motion = float(np.abs(np.diff(small, axis=0)).mean() / 255.0)
        repeats = [np.array_equal(clip.frames[t], clip.frames[t + 1]) for t in range(clip.num_frames - 1)]
        static_share = float(np.mean(repeats))
    else:
        motion, static_share = 0.0, 1.0
    bpp = None
    if clip.path is not None and clip.path.is_file():
        try:
            from vision.data.video import probe_video

            info = probe_video(clip.path)
            bpp = clip.path.stat().st_size * 8.0 / max(1, info.width * info.height * max(1, info.num_frames))
        except Exception:  # noqa: BLE001 - properties are advisory; the tools report real decoding errors
            bpp = None
    return {"num_frames": clip.num_frames, "motion": motion, "frozen": clip.num_frames >= 2 and static_share == 1.0,
            "static_share": static_share, "bits_per_pixel": bpp, "compressed": bpp is not None and bpp < 0.15,
            "has_bitstream": clip.path is not None, "size": [clip.width, clip.height]}


def plan_tools(props: dict[str, Any], tools: Sequence[str], reliability: dict[str, float] | None = None,
               min_reliability: float = 0.55) -> list[dict[str, Any]]:
    """Decide per tool ``{"tool", "run": bool, "weigh": bool, "reliability", "reason"}``.

    ``run`` is False when the clip cannot support the tool (too few frames, frozen video for temporal tools,
    no bitstream for the codec, no motion for geometry); ``weigh`` is False when its measured reliability is
    under ``min_reliability`` (its features still feed the detector)."""
    reliability = reliability or {}
    plan = []
    for tool in tools:
        rel = float(reliability.get(tool, 0.5))
        reason, run = "", True
        need = TOOL_MIN_FRAMES.get(tool, 1)
        if props["num_frames"] < need:
            run, reason = False, f"needs >= {need} frames, clip has {props['num_frames']}"
        elif tool in ("temporal", "motion", "geometry") and props["frozen"]:
            run, reason = False, "frozen video: no frame changes"
        elif tool == "codec" and not props["has_bitstream"]:
            run, reason = False, "no encoded bitstream (frames given directly)"
        elif tool == "geometry" and props["motion"] < 1e-3:
            run, reason = False, "no camera or scene motion: no parallax for epipolar geometry"
        weigh = run and rel >= min_reliability
        if run and not weigh:
            reason = f"run for the detector but not weighed: measured reliability {rel:.2f} < {min_reliability}"
        elif run:
            reason = f"measured reliability (validation AUC) {rel:.2f}"
            if props.get("compressed") and tool in ("residual", "npr", "spectrum"):
                reason += "; strong compression weakens high-frequency cues"
        plan.append({"tool": tool, "run": run, "weigh": weigh, "reliability": rel, "reason": reason})
    return plan


@dataclass
class EvidenceGraph:
    """Nodes (evidence items deviating from the real reference) and support / contradict edges ``(i, j, kind)``."""

    nodes: list[Evidence] = field(default_factory=list)
    edges: list[tuple[int, int, str]] = field(default_factory=list)

    @classmethod
    def build(cls, results: dict[str, ToolResult], reliability: dict[str, float] | None = None,
              weighed: Sequence[str] | None = None, max_nodes: int = 40) -> "EvidenceGraph":
        """Collect the deviating items of applicable (and weighed) tools, keep the ``max_nodes`` heaviest."""
        reliability = reliability or {}
        nodes: list[Evidence] = []
        for name, result in results.items():
            if not result.applicable or (weighed is not None and name not in weighed):
                continue
            rel = float(reliability.get(name, 0.5))
            for item in result.evidence:
                if item.z is None or item.direction not in ("generated", "real"):
                    continue
                item.reliability = rel
                item.weight = max(0.0, 2.0 * rel - 1.0) * min(abs(item.z), 4.0) / 4.0
                if item.weight > 0:
                    nodes.append(item)
        nodes.sort(key=lambda e: -e.weight)
        nodes = nodes[:max_nodes]
        edges = []
        for i in range(len(nodes)):
            for j in range(i + 1, len(nodes)):
                if nodes[i].tool == nodes[j].tool:
                    continue
                kind = "support" if nodes[i].direction == nodes[j].direction else "contradict"
                edges.append((i, j, kind))
        return cls(nodes=nodes, edges=edges)

    def score(self, tools: Sequence[str] | None = None) -> float:
        """Weighted vote in [-1, 1] of the nodes (of ``tools``): +1 all generated, -1 all real, 0 none."""
        num, den = 0.0, 1.0
        for item in self.nodes:
            if tools is not None and item.tool not in tools:
                continue
            num += item.weight * (1.0 if item.direction == "generated" else -1.0)
            den += item.weight
        return num / den

    def to_dict(self) -> dict[str, Any]:
        return {"nodes": [n.to_dict() for n in self.nodes],
                "edges": [{"source": i, "target": j, "kind": k} for i, j, k in self.edges]}


@dataclass
class Verdict:
    """``verdict`` in ``generated | real | insufficient evidence``, ``probability`` of generated (calibrated),
    ``threshold``, ``reasons``, ``ranked_evidence``, ``conflicts``, ``agents`` (agent -> score)."""

    verdict: str
    probability: float | None
    threshold: float
    reasons: list[str]
    ranked_evidence: list[dict[str, Any]]
    conflicts: list[dict[str, Any]]
    agents: dict[str, float]

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def deliberate(graph: EvidenceGraph, probability: float | None, threshold: float, props: dict[str, Any],
               plan: list[dict[str, Any]], margin: float = 0.1, agent_margin: float = 0.15,
               top_k: int = 8) -> Verdict:
    """Turn the detector's probability and the evidence graph into a verdict (see the module docstring)."""
    agents = {name: round(graph.score(tools), 4) for name, tools in AGENTS.items()
              if any(p["tool"] in tools and p["run"] for p in plan)}
    reasons: list[str] = []
    ran = [p for p in plan if p["run"]]
    if props["num_frames"] < 2:
        reasons.append(f"only {props['num_frames']} frame: temporal, motion, codec and geometry evidence is missing")
    if props["frozen"]:
        reasons.append("frozen video: every frame repeats the first")
    if not ran:
        reasons.append("no forensic tool could apply to this clip")
    if probability is None:
        reasons.append("the detector could not score the clip")
    if reasons:
        return Verdict("insufficient evidence", probability, threshold, reasons, [], [], agents)
    voted_gen = [a for a, s in agents.items() if s > agent_margin]
    voted_real = [a for a, s in agents.items() if s < -agent_margin]
    called = "generated" if probability >= threshold else "real"
    if abs(probability - threshold) < margin and voted_gen and voted_real:
        verdict = "insufficient evidence"
        reasons.append(f"the detector is within {margin} of its threshold and agents disagree "
                       f"(generated: {', '.join(voted_gen)}; real: {', '.join(voted_real)})")
    else:
        verdict = called
        reasons.append(f"calibrated probability {probability:.3f} {'>=' if called == 'generated' else '<'} "
                       f"threshold {threshold:.3f} (fixed on real validation videos)")
    side = called if verdict == "insufficient evidence" else verdict
    ranked = [n for n in graph.nodes if n.direction == side] + [n for n in graph.nodes if n.direction != side]
    ranked_evidence = [dict(n.to_dict(), agrees_with_verdict=(n.direction == side)) for n in ranked[:top_k]]
    conflicts: list[dict[str, Any]] = []
    for i, j, kind in graph.edges:
        if kind == "contradict" and graph.nodes[i].weight > 0.2 and graph.nodes[j].weight > 0.2:
            conflicts.append({"kind": "evidence", "a": graph.nodes[i].statistic, "a_direction": graph.nodes[i].direction,
                              "b": graph.nodes[j].statistic, "b_direction": graph.nodes[j].direction,
                              "strength": round(min(graph.nodes[i].weight, graph.nodes[j].weight), 4)})
    conflicts.sort(key=lambda c: -c["strength"])
    conflicts = conflicts[:top_k]
    dissent = voted_real if side == "generated" else voted_gen
    for agent in dissent:
        conflicts.append({"kind": "agent", "agent": agent, "score": agents[agent],
                          "note": f"the {agent} agent leans {'real' if side == 'generated' else 'generated'}"})
    return Verdict(verdict, float(probability), float(threshold), reasons, ranked_evidence, conflicts, agents)
