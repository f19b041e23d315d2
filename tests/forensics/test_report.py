"""The readable report: evidence rows against both sides, conflicts as sentences, the strong-evidence verdict rule,
the capped evidence-graph picture and the HTML page."""

from __future__ import annotations

import numpy as np

from vision.demo.graph import MAX_EDGES, MAX_NODES, draw_evidence_graph, select_graph
from vision.forensics.evidence import RELIABLE, STRONG_Z, EvidenceGraph, deliberate, locate, plan_tools
from vision.forensics.report import evidence_rows, render_html
from vision.forensics.tools.base import Clip, Evidence, ToolResult


def _props() -> dict:
    return {"num_frames": 16, "motion": 0.05, "frozen": False, "static_share": 0.0, "bits_per_pixel": 0.5,
            "compressed": False, "has_bitstream": True, "size": [64, 64]}


def _item(tool: str, value: float, mean: float, std: float, sign: float, name: str = "x") -> Evidence:
    """An item as a tool makes it: z against the real reference, direction by the sign of generated - real."""
    z = (value - mean) / std
    direction = "neutral" if abs(z) < 1 else ("generated" if z * sign > 0 else "real")
    return Evidence(tool=tool, statistic=f"{tool}.{name}", value=value, frames=[0], ref_mean=mean, ref_std=std, z=z,
                    direction=direction)


def _results(*items: Evidence) -> dict[str, ToolResult]:
    out: dict[str, ToolResult] = {}
    for item in items:
        out.setdefault(item.tool, ToolResult(tool=item.tool, applicable=True)).evidence.append(item)
    return out


def test_below_both_points_to_real_and_says_why() -> None:
    # real 0.42 +- 0.05, generated 0.71 +- 0.10; the clip's 0.276 is 2.88 sd below real, 4.34 sd below generated
    item = _item("spectrum", 0.276, 0.42, 0.05, sign=1.0)
    ctx = locate(item, {"mean": 0.42, "std": 0.05, "sign": 1.0, "gen_mean": 0.71, "gen_std": 0.10})
    assert item.direction == "real"
    assert ctx["typical"] == "real clips: 0.42 ± 0.05; generated clips: 0.71 ± 0.1; this clip: 0.276"
    assert ctx["position"].startswith("below both; nearer real (2.88 sd from the real mean, 4.34 sd")
    # towards generated but, in standardised terms, still nearer real: real
    item = _item("spectrum", 0.50, 0.42, 0.05, sign=1.0)
    assert item.direction == "generated"
    ctx = locate(item, {"mean": 0.42, "std": 0.05, "sign": 1.0, "gen_mean": 0.9, "gen_std": 0.1})
    assert item.direction == "real" and ctx["position"].startswith("between real and generated; nearer real")
    # above both, nearer generated
    item = _item("spectrum", 0.80, 0.42, 0.05, sign=1.0)
    ctx = locate(item, {"mean": 0.42, "std": 0.05, "sign": 1.0, "gen_mean": 0.71, "gen_std": 0.10})
    assert item.direction == "generated" and ctx["position"].startswith("above both; nearer generated")
    # no generated side in the reference: the tool's direction stands and the row says which way generated lies
    item = _item("spectrum", 0.276, 0.42, 0.05, sign=1.0)
    ctx = locate(item, {"mean": 0.42, "std": 0.05, "sign": 1.0})
    assert item.direction == "real" and ctx["gen_mean"] is None
    assert "generated clips: typically higher" in ctx["typical"]
    assert ctx["position"] == "2.88 sd below the real mean, away from the generated side"
    # the graph carries the sentences into its nodes and the verdict's ranked evidence
    reference = {"spectrum.x": {"mean": 0.42, "std": 0.05, "sign": 1.0, "gen_mean": 0.71, "gen_std": 0.10}}
    graph = EvidenceGraph.build(_results(_item("spectrum", 0.276, 0.42, 0.05, 1.0)), {"spectrum": 0.9},
                                reference=reference)
    node = graph.to_dict()["nodes"][0]
    assert node["direction"] == "real" and node["position"].startswith("below both; nearer real")
    v = deliberate(graph, 0.1, 0.9, _props(), plan_tools(_props(), ["spectrum"], {"spectrum": 0.9}))
    row = evidence_rows(v.ranked_evidence)[0]
    assert row["typical"].startswith("real clips: 0.42 ± 0.05; generated clips: 0.71") and row["z"] == "-2.88"
    assert row["points to"] == "real (agrees)" and row["why"].startswith("below both; nearer real")


def test_conflicts_are_sentences_naming_tools_and_z() -> None:
    results = _results(_item("spectrum", 3.1, 0.0, 1.0, 1.0), _item("spectrum", 2.5, 0.0, 1.0, 1.0, "y"),
                       _item("temporal", -2.2, 0.0, 1.0, 1.0))
    rel = {"spectrum": 0.91, "temporal": 0.78}
    graph = EvidenceGraph.build(results, rel)
    v = deliberate(graph, 0.2, 0.5, _props(), plan_tools(_props(), list(results), rel))
    assert v.verdict == "real"
    # the strongest contradiction of the (spectrum, temporal) pair only, as one sentence
    evidence = [c for c in v.conflicts if "tool" in c]
    assert evidence == ["The spectrum tool (reliability 0.91) points to generated (spectrum.x, z = +3.1) while the "
                        "temporal tool (0.78) points to real (temporal.x, z = -2.2)."]
    assert all(isinstance(c, str) and "{" not in c for c in v.conflicts)
    assert any(c.startswith("The appearance agent (spectrum, residual, npr) leans generated") for c in v.conflicts)
    page = render_html({"verdict": v.to_dict(), "clip": {"name": "c", "num_frames": 2}, "plan": []},
                       Clip(np.zeros((2, 8, 8, 3), np.uint8)), {})
    assert "points to generated (spectrum.x, z = +3.1) while the temporal tool" in page
    assert "&#x27;a_direction&#x27;" not in page and "{&quot;" not in page


def test_strong_evidence_from_reliable_tools_overrides_a_real_call() -> None:
    assert (STRONG_Z, RELIABLE) == (4.0, 0.8)
    strong = _item("spectrum", 5.0, 0.0, 1.0, 1.0)
    rel = {"spectrum": 0.9, "residual": 0.9, "temporal": 0.9, "codec": 0.7}
    plan = plan_tools(_props(), list(rel), rel)
    # one reliable tool with |z| >= 4 towards generated: insufficient evidence, with the reason
    v = deliberate(EvidenceGraph.build(_results(strong), rel), 0.3, 0.94, _props(), plan)
    assert v.verdict == "insufficient evidence" and v.probability == 0.3 and v.threshold == 0.94
    assert "95% of them score below it" in v.reasons[0] and "0.300 < threshold 0.940" in v.reasons[0]
    assert "the spectrum tool (reliability 0.90) measures spectrum.x at z = +5.0" in v.reasons[1]
    # two tools of the same agent (appearance) are not independent: still insufficient
    same = _results(strong, _item("residual", -4.5, 0.0, 1.0, -1.0))
    assert deliberate(EvidenceGraph.build(same, rel), 0.3, 0.94, _props(), plan).verdict == "insufficient evidence"
    # two independent tools (appearance and temporal): generated, naming both
    both = _results(strong, _item("temporal", 4.2, 0.0, 1.0, 1.0))
    v = deliberate(EvidenceGraph.build(both, rel), 0.3, 0.94, _props(), plan)
    assert v.verdict == "generated" and "2 independent tools" in v.reasons[1]
    assert "spectrum.x at z = +5.0" in v.reasons[1] and "temporal.x at z = +4.2" in v.reasons[1]
    # a tool no agent lists (a newly added one) is an agent of its own: independent of the spectrum tool
    rel_new = dict(rel, newtool=0.85)
    plan_new = plan_tools(_props(), list(rel_new), rel_new)
    v = deliberate(EvidenceGraph.build(_results(strong, _item("newtool", 4.0, 0.0, 1.0, 1.0)), rel_new), 0.3, 0.94,
                   _props(), plan_new)
    assert v.verdict == "generated" and v.agents["newtool"] > 0
    # below the bars (|z| < 4, or a tool of reliability < 0.8) or pointing to real: the detector's call stands
    for items in ([_item("spectrum", 3.9, 0.0, 1.0, 1.0)], [_item("codec", 9.0, 0.0, 1.0, 1.0)],
                  [_item("temporal", -6.0, 0.0, 1.0, 1.0)]):
        v = deliberate(EvidenceGraph.build(_results(*items), rel), 0.3, 0.94, _props(), plan)
        assert v.verdict == "real" and len(v.reasons) == 1
    # the pass rate the threshold was set with is stated as given
    v = deliberate(EvidenceGraph.build({}, rel), 0.3, 0.94, _props(), plan, pass_rate=0.9)
    assert "90% of them score below it" in v.reasons[0] and "one real clip in 10" in v.reasons[0]


def test_the_graph_picture_keeps_the_strongest_nodes_and_edges() -> None:
    assert (MAX_NODES, MAX_EDGES) == (8, 6)
    tools = ["spectrum", "residual", "npr", "temporal", "motion", "codec", "geometry"]
    items = [_item(tools[k % 7], (1.5 + 0.2 * k) * (1 if k % 2 else -1), 0.0, 1.0, 1.0, f"f{k}") for k in range(14)]
    graph = EvidenceGraph.build(_results(*items), {t: 0.9 for t in tools})
    data = graph.to_dict()
    assert len(data["nodes"]) == 14 and len(data["edges"]) > 60
    nodes, edges = select_graph(data)
    assert [n["statistic"] for n in nodes] == [n["statistic"] for n in data["nodes"][:8]]  # the 8 heaviest
    assert len(edges) == 6 and all(0 <= a < 8 and 0 <= b < 8 for a, b, _, _ in edges)
    kept = sorted((e["weight"] for e in data["edges"] if e["source"] < 8 and e["target"] < 8), reverse=True)
    assert [w for *_, w in edges] == kept[:6]
    assert {k for *_, k, _ in edges} <= {"support", "contradict"}
    nodes, edges = select_graph(data, max_nodes=3, max_edges=100)
    assert len(nodes) == 3 and len(edges) <= 3  # only edges among kept nodes (3 nodes: at most 3 pairs)
    report = {"verdict": {"verdict": "real", "probability": 0.2}, "graph": data}
    image = draw_evidence_graph(report)
    assert image.shape == (480, 720, 3) and image.dtype == np.uint8
    def orange(img: np.ndarray) -> int:  # the contradiction colour (245, 150, 30)
        return int(((img[..., 0] > 230) & (np.abs(img[..., 1].astype(int) - 150) < 30) & (img[..., 2] < 70)).sum())

    assert any(k == "contradict" for *_, k, _ in select_graph(data)[1])
    assert orange(image) > orange(draw_evidence_graph(report, max_edges=0)) > 0  # links drawn; legend alone
