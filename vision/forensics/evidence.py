"""Tool planning, the evidence graph and deliberation to a verdict.

Planning (:func:`plan_tools`): the clip's properties (length, motion, frozen frames, compression, whether a
bitstream exists) decide which tools can apply; each tool's measured reliability (validation AUC of its best
feature, stored in the checkpoint) decides whether its evidence is worth weighing (``min_reliability``).

Evidence graph (:class:`EvidenceGraph`): nodes are evidence items that deviate from the real reference
(``|z| >= 1`` and a known direction); their weight is ``(2 * reliability - 1) * min(|z|, 4) / 4``. Edges join
items of *different* tools: ``support`` when they point the same way, ``contradict`` when they do not; an edge's
weight is the smaller of its two nodes' weights.

Direction and the generated side (:func:`locate`): when the reference of a feature also knows the generated
side (``gen_mean`` / ``gen_std`` beside ``mean`` / ``std`` / ``sign``), an item points to the side its value is
nearer to in standardised terms, ``|value - mean| / std`` against ``|value - gen_mean| / gen_std`` (a value 2.88 sd
below the real mean with the generated mean higher still is "below both; nearer real"); without it the tool's
direction stands (the sign of ``z`` against the sign generated videos showed in training). Items within the real
range (``|z| < 1``, "neutral") stay neutral either way. Every node carries the sentences a report shows:
``typical`` ("real clips: 0.42 ± 0.05; generated clips: 0.71 ± 0.1; this clip: 0.3") and ``position``
("below both; nearer real (2.88 sd from the real mean, 4.34 sd from the generated mean)").

Deliberation (:func:`deliberate`): four agents (appearance = spectrum/residual/npr, temporal = temporal/motion,
codec, geometry = geometry/depth/twoview; a tool none of them lists is an agent of its own) each score their evidence in [-1, 1]
(> 0 = generated); the detector gives the calibrated probability and the real-calibrated threshold (the
calibrated probability that ``pass_rate``, 95%, of the *real* validation clips score below:
:func:`vision.forensics.model.calibrate`). The verdict is ``insufficient
evidence`` when no tool applied, the clip is frozen or too short, or the detector is within ``margin`` of its
threshold while agents disagree; otherwise ``generated`` when ``p >= threshold``, else ``real``.
Strong evidence overrides a "real" call: an item with ``|z| >= STRONG_Z`` (4) from a tool whose reliability is
``>= RELIABLE`` (0.8) pointing to generated turns the verdict into ``insufficient evidence``; such items from two
independent tools (tools of different agents) turn it into ``generated``; the reason names the tools, statistics
and z. The answer names the ranked evidence for the verdict and the conflicts as sentences (the strongest
contradiction per pair of tools between items of weight > 0.2, and agents that voted against).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from vision.forensics.tools.base import Clip, Evidence, ToolResult

__all__ = ["clip_properties", "plan_tools", "EvidenceGraph", "deliberate", "Verdict", "AGENTS", "locate",
           "agent_of", "STRONG_Z", "RELIABLE"]

AGENTS = {"appearance": ("spectrum", "residual", "npr"), "temporal": ("temporal", "motion"), "codec": ("codec",),
          "geometry": ("geometry", "depth", "twoview")}
TOOL_MIN_FRAMES = {"temporal": 4, "motion": 2, "codec": 2, "geometry": 2, "depth": 2, "twoview": 3, "semantic": 4}
STRONG_Z = 4.0  # |z| against the real reference from which one item counts as strong evidence
RELIABLE = 0.8  # a tool's reliability (validation AUC) from which its strong evidence can override the detector


def agent_of(tool: str) -> str:
    """The agent a tool belongs to (:data:`AGENTS`); a tool no agent lists is its own agent."""
    return next((agent for agent, tools in AGENTS.items() if tool in tools), tool)


def _num(x: float) -> str:
    return f"{x:.3g}"


def locate(item: Evidence, ref: dict[str, float] | None = None) -> dict[str, Any]:
    """Where ``item``'s value lies against the real and (when ``ref`` has ``gen_mean`` / ``gen_std``) generated
    clips; sets ``item.direction`` by the nearer side in standardised terms (see the module docstring).

    Args:
        item: an evidence item with ``z``, ``ref_mean`` and ``ref_std`` set (the tools' reference).
        ref: the feature's reference ``{"mean", "std", "sign", ["gen_mean", "gen_std"]}``, or None.

    Returns:
        ``{"gen_mean", "gen_std", "z_generated"}`` (None without a generated side), ``typical`` (what real and
        generated clips typically show, and this clip) and ``position`` (where the value lies and why it points
        where it does) as sentences.
    """
    out: dict[str, Any] = {"gen_mean": None, "gen_std": None, "z_generated": None, "typical": "", "position": ""}
    if item.z is None or item.ref_mean is None or item.ref_std is None or not math.isfinite(item.value):
        return out
    ref = ref or {}
    value, mean, std, z = float(item.value), float(item.ref_mean), float(item.ref_std), float(item.z)
    gen_mean, gen_std = ref.get("gen_mean"), ref.get("gen_std")
    known = (gen_mean is not None and gen_std is not None and math.isfinite(float(gen_mean))
             and math.isfinite(float(gen_std)) and float(gen_std) > 0)
    side = "above" if z > 0 else "below"
    if known:
        gen_mean, gen_std = float(gen_mean), float(gen_std)
        z_gen = (value - gen_mean) / gen_std
        out.update(gen_mean=gen_mean, gen_std=gen_std, z_generated=z_gen)
        out["typical"] = (f"real clips: {_num(mean)} ± {_num(std)}; generated clips: {_num(gen_mean)} ± "
                          f"{_num(gen_std)}; this clip: {_num(value)}")
        if value < min(mean, gen_mean):
            where = "below both"
        elif value > max(mean, gen_mean):
            where = "above both"
        else:
            where = "between real and generated"
        nearer = "real" if abs(z) <= abs(z_gen) else "generated"
        out["position"] = (f"{where}; nearer {nearer} ({abs(z):.2f} sd from the real mean, {abs(z_gen):.2f} sd "
                           f"from the generated mean)")
        if item.direction in ("generated", "real"):
            item.direction = nearer
        return out
    sign = float(ref.get("sign", 0.0))
    if not sign and item.direction in ("generated", "real"):  # the tool's direction already used the sign
        sign = float(np.sign(z)) * (1.0 if item.direction == "generated" else -1.0)
    gen_side = {1.0: "higher", -1.0: "lower"}.get(sign)
    out["typical"] = (f"real clips: {_num(mean)} ± {_num(std)}; generated clips: "
                      f"{'typically ' + gen_side if gen_side else 'not known'} (their mean is not in the reference); "
                      f"this clip: {_num(value)}")
    if item.direction == "neutral":
        out["position"] = f"within the real range ({abs(z):.2f} sd {side} the real mean)"
    elif gen_side:
        towards = (z > 0) == (sign > 0)
        out["position"] = (f"{abs(z):.2f} sd {side} the real mean, "
                           f"{'towards' if towards else 'away from'} the generated side")
    else:
        out["position"] = f"{abs(z):.2f} sd {side} the real mean"
    return out


def clip_properties(clip: Clip) -> dict[str, Any]:
    """Properties that steer planning: ``num_frames``, ``motion`` (mean |frame difference| in [0, 1]),
    ``frozen`` (no frame changes), ``static_share`` (share of repeated frames), ``bits_per_pixel`` (file size
    per pixel per frame, None without a file), ``compressed`` (bpp < 0.15), ``has_bitstream``, ``size``."""
    if clip.num_frames >= 2:
        small = clip.frames[:, ::4, ::4].astype(np.int16)  # motion on a 1/4 grid; repeats checked exactly
        motion = float(np.abs(np.diff(small, axis=0)).mean() / 255.0)
        static_share = float(np.mean(~clip.frame_changes()))  # repeated frames, checked exactly
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
    """Nodes (evidence items deviating from the real reference), ``context`` (one :func:`locate` dict per node:
    the generated side and the report's sentences) and support / contradict edges ``(i, j, kind)``."""

    nodes: list[Evidence] = field(default_factory=list)
    edges: list[tuple[int, int, str]] = field(default_factory=list)
    context: list[dict[str, Any]] = field(default_factory=list)

    @classmethod
    def build(cls, results: dict[str, ToolResult], reliability: dict[str, float] | None = None,
              weighed: Sequence[str] | None = None, max_nodes: int = 40,
              reference: dict[str, dict[str, float]] | None = None) -> "EvidenceGraph":
        """Collect the deviating items of applicable (and weighed) tools, keep the ``max_nodes`` heaviest.

        ``reference`` (feature -> ``{"mean", "std", "sign", ["gen_mean", "gen_std"]}``, optional) lets each item's
        direction be decided by the nearer side and its sentences name the generated side (:func:`locate`)."""
        reliability = reliability or {}
        reference = reference or {}
        nodes: list[tuple[Evidence, dict[str, Any]]] = []
        for name, result in results.items():
            if not result.applicable or (weighed is not None and name not in weighed):
                continue
            rel = float(reliability.get(name, 0.5))
            for item in result.evidence:
                if item.z is None or item.direction not in ("generated", "real"):
                    continue
                ctx = locate(item, reference.get(item.statistic))
                item.reliability = rel
                item.weight = max(0.0, 2.0 * rel - 1.0) * min(abs(item.z), 4.0) / 4.0
                if item.weight > 0:
                    nodes.append((item, ctx))
        nodes.sort(key=lambda pair: -pair[0].weight)
        nodes = nodes[:max_nodes]
        edges = []
        for i in range(len(nodes)):
            for j in range(i + 1, len(nodes)):
                if nodes[i][0].tool == nodes[j][0].tool:
                    continue
                kind = "support" if nodes[i][0].direction == nodes[j][0].direction else "contradict"
                edges.append((i, j, kind))
        return cls(nodes=[n for n, _ in nodes], edges=edges, context=[c for _, c in nodes])

    def score(self, tools: Sequence[str] | None = None) -> float:
        """Weighted vote in [-1, 1] of the nodes (of ``tools``): +1 all generated, -1 all real, 0 none."""
        num, den = 0.0, 1.0
        for item in self.nodes:
            if tools is not None and item.tool not in tools:
                continue
            num += item.weight * (1.0 if item.direction == "generated" else -1.0)
            den += item.weight
        return num / den

    def node_dict(self, i: int) -> dict[str, Any]:
        """Node ``i`` as JSON: the evidence item and its :func:`locate` context."""
        ctx = self.context[i] if i < len(self.context) else {}
        return dict(self.nodes[i].to_dict(), **ctx)

    def edge_weight(self, i: int, j: int) -> float:
        """An edge's weight: the smaller of its nodes' weights."""
        return float(min(self.nodes[i].weight, self.nodes[j].weight))

    def to_dict(self) -> dict[str, Any]:
        return {"nodes": [self.node_dict(i) for i in range(len(self.nodes))],
                "edges": [{"source": i, "target": j, "kind": k, "weight": round(self.edge_weight(i, j), 4)}
                          for i, j, k in self.edges]}


@dataclass
class Verdict:
    """``verdict`` in ``generated | real | insufficient evidence``, ``probability`` of generated (calibrated),
    ``threshold``, ``reasons`` (sentences), ``ranked_evidence`` (node dicts with ``agrees_with_verdict``),
    ``conflicts`` (sentences), ``agents`` (agent -> score)."""

    verdict: str
    probability: float | None
    threshold: float
    reasons: list[str]
    ranked_evidence: list[dict[str, Any]]
    conflicts: list[str]
    agents: dict[str, float]

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def _item_phrase(item: Evidence) -> str:
    return f"the {item.tool} tool (reliability {item.reliability:.2f}) measures {item.statistic} at z = {item.z:+.1f}"


def _conflict_sentence(gen: Evidence, real: Evidence) -> str:
    return (f"The {gen.tool} tool (reliability {gen.reliability:.2f}) points to generated ({gen.statistic}, "
            f"z = {gen.z:+.1f}) while the {real.tool} tool ({real.reliability:.2f}) points to real ({real.statistic}, "
            f"z = {real.z:+.1f}).")


def deliberate(graph: EvidenceGraph, probability: float | None, threshold: float, props: dict[str, Any],
               plan: list[dict[str, Any]], margin: float = 0.1, agent_margin: float = 0.15,
               top_k: int = 8, pass_rate: float = 0.95, strong_z: float = STRONG_Z,
               reliable: float = RELIABLE) -> Verdict:
    """Turn the detector's probability and the evidence graph into a verdict (see the module docstring).

    ``pass_rate``: the share of real validation clips below ``threshold`` (the training ``pass_rate``; 0.95 in
    every shipped config), used only to explain the threshold. ``strong_z`` / ``reliable``: the override rule."""
    groups = dict(AGENTS)  # a tool no agent lists (a newly added one) is its own agent
    groups.update({p["tool"]: (p["tool"],) for p in plan if agent_of(p["tool"]) == p["tool"]})
    agents = {name: round(graph.score(tools), 4) for name, tools in groups.items()
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
    reasons.append(f"calibrated probability of generated {probability:.3f} {'>=' if called == 'generated' else '<'} "
                   f"threshold {threshold:.3f}: the threshold is set on real validation clips only, so that "
                   f"{pass_rate:.0%} of them score below it (a real clip may score up to it and is still called "
                   f"real; one real clip in {round(1 / (1 - pass_rate))} scores above it)")
    if abs(probability - threshold) < margin and voted_gen and voted_real:
        verdict = "insufficient evidence"
        reasons.append(f"the detector is within {margin} of its threshold and agents disagree "
                       f"(generated: {', '.join(voted_gen)}; real: {', '.join(voted_real)})")
    else:
        verdict = called
    if called == "real":  # strong evidence from reliable tools overrides a "real" call
        strong: dict[str, Evidence] = {}  # agent -> its strongest item
        for item in graph.nodes:
            if (item.direction == "generated" and item.z is not None and abs(item.z) >= strong_z
                    and item.reliability >= reliable):
                agent = agent_of(item.tool)
                if agent not in strong or abs(item.z) > abs(strong[agent].z or 0.0):
                    strong[agent] = item
        rule = f"strong = |z| >= {strong_z:g} from a tool of reliability >= {reliable:g}"
        items = sorted(strong.values(), key=lambda e: -abs(e.z or 0.0))
        if len(items) >= 2:
            verdict = "generated"
            reasons.append(f"generated despite the detector: strong evidence from {len(items)} independent tools "
                           f"points to generated: {'; '.join(_item_phrase(e) for e in items)} ({rule}; independent "
                           f"= tools of different agents)")
        elif items:
            verdict = "insufficient evidence"
            reasons.append(f"insufficient evidence although the detector says real: {_item_phrase(items[0])}, "
                           f"pointing to generated ({rule}); a second independent tool would make it generated")
    side = called if verdict == "insufficient evidence" else verdict
    order = sorted(range(len(graph.nodes)), key=lambda i: graph.nodes[i].direction != side)  # stable: by weight
    ranked_evidence = [dict(graph.node_dict(i), agrees_with_verdict=(graph.nodes[i].direction == side))
                       for i in order[:top_k]]
    strongest: dict[tuple[str, str], tuple[float, str]] = {}  # (generated tool, real tool) -> strongest conflict
    for i, j, kind in graph.edges:
        a, b = graph.nodes[i], graph.nodes[j]
        strength = graph.edge_weight(i, j)
        if kind != "contradict" or strength <= 0.2:
            continue
        gen, real = (a, b) if a.direction == "generated" else (b, a)
        key = (gen.tool, real.tool)
        if key not in strongest or strength > strongest[key][0]:
            strongest[key] = (strength, _conflict_sentence(gen, real))
    conflicts = [text for _, text in sorted(strongest.values(), key=lambda c: -c[0])][:top_k]
    lean = "real" if side == "generated" else "generated"
    for agent in (voted_real if side == "generated" else voted_gen):
        conflicts.append(f"The {agent} agent ({', '.join(groups[agent])}) leans {lean} (score {agents[agent]:+.2f}, "
                         f"-1 = all real, +1 = all generated) against the {side} call.")
    return Verdict(verdict, float(probability), float(threshold), reasons, ranked_evidence, conflicts, agents)
