"""Planning, the evidence graph and deliberation."""

from __future__ import annotations

import numpy as np

from vision.forensics.evidence import EvidenceGraph, clip_properties, deliberate, plan_tools
from vision.forensics.tools.base import Clip, Evidence, ToolResult

TOOLS = ["spectrum", "residual", "npr", "temporal", "motion", "codec", "geometry"]


def _props(**over) -> dict:
    base = {"num_frames": 16, "motion": 0.05, "frozen": False, "static_share": 0.0, "bits_per_pixel": 0.5,
            "compressed": False, "has_bitstream": True, "size": [64, 64]}
    base.update(over)
    return base


def test_clip_properties_detect_frozen_and_single_frames() -> None:
    frame = np.random.default_rng(0).integers(0, 255, (1, 16, 16, 3), dtype=np.uint8)
    frozen = clip_properties(Clip(np.repeat(frame, 5, axis=0)))
    assert frozen["frozen"] and frozen["motion"] == 0.0 and not frozen["has_bitstream"]
    single = clip_properties(Clip(frame))
    assert single["num_frames"] == 1 and not single["frozen"]


def test_plan_tools_follows_clip_properties_and_reliability() -> None:
    rel = {t: 0.9 for t in TOOLS}
    rel["npr"] = 0.52
    plan = {p["tool"]: p for p in plan_tools(_props(), TOOLS, rel)}
    assert all(plan[t]["run"] for t in TOOLS)
    assert not plan["npr"]["weigh"] and "reliability" in plan["npr"]["reason"]
    plan = {p["tool"]: p for p in plan_tools(_props(num_frames=1, has_bitstream=False), TOOLS, rel)}
    assert not plan["temporal"]["run"] and not plan["motion"]["run"] and not plan["codec"]["run"]
    assert plan["spectrum"]["run"]
    plan = {p["tool"]: p for p in plan_tools(_props(frozen=True, motion=0.0), TOOLS, rel)}
    assert not plan["temporal"]["run"] and "frozen" in plan["temporal"]["reason"] and not plan["geometry"]["run"]


def _result(tool: str, z: float, direction: str) -> ToolResult:
    item = Evidence(tool=tool, statistic=f"{tool}.x", value=z, frames=[0], z=z, direction=direction)
    return ToolResult(tool=tool, applicable=True, features={f"{tool}.x": z}, evidence=[item])


def test_graph_edges_and_deliberation() -> None:
    results = {"spectrum": _result("spectrum", 3.0, "generated"), "temporal": _result("temporal", 4.0, "generated"),
               "codec": _result("codec", -2.0, "real"), "npr": _result("npr", 0.5, "neutral")}
    rel = {"spectrum": 0.9, "temporal": 1.0, "codec": 0.8, "npr": 0.9}
    graph = EvidenceGraph.build(results, rel)
    assert [n.tool for n in graph.nodes] == ["temporal", "spectrum", "codec"]  # by weight; neutral dropped
    kinds = {(graph.nodes[i].tool, graph.nodes[j].tool): k for i, j, k in graph.edges}
    assert kinds[("temporal", "spectrum")] == "support" and kinds[("temporal", "codec")] == "contradict"
    assert graph.nodes[0].weight == 1.0  # reliability 1, |z| >= 4
    plan = plan_tools(_props(), list(results), rel)
    v = deliberate(graph, 0.9, 0.5, _props(), plan)
    assert v.verdict == "generated" and v.ranked_evidence[0]["statistic"] == "temporal.x"
    assert v.ranked_evidence[0]["agrees_with_verdict"]
    # conflicts are sentences naming both tools and their z (no dicts), and the dissenting agent
    assert all(isinstance(c, str) for c in v.conflicts)
    assert any("temporal tool" in c and "z = +4.0" in c and "codec tool" in c and "z = -2.0" in c
               for c in v.conflicts)
    assert any(c.startswith("The codec agent") and "leans real" in c for c in v.conflicts)
    # close to the threshold with agents disagreeing: insufficient evidence
    assert deliberate(graph, 0.52, 0.5, _props(), plan).verdict == "insufficient evidence"
    # p < threshold, but temporal.x (|z| = 4, reliability 1.0) is strong evidence for generated from one tool:
    # not "real": the strong-evidence rule (see test_report.py)
    low = deliberate(graph, 0.1, 0.5, _props(), plan)
    assert low.verdict == "insufficient evidence" and any("temporal.x at z = +4.0" in r for r in low.reasons)
    weak = EvidenceGraph.build({k: results[k] for k in ("spectrum", "codec", "npr")}, rel)
    assert deliberate(weak, 0.1, 0.5, _props(), plan).verdict == "real"
    frozen = deliberate(graph, 0.9, 0.5, _props(frozen=True), plan)
    assert frozen.verdict == "insufficient evidence" and "frozen" in frozen.reasons[0]
