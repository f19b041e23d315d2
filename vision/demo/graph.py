"""Draw a forensic report's evidence graph as an image (OpenCV only).

Only the strongest part of the graph is drawn (:func:`select_graph`): the ``MAX_NODES`` (8) heaviest nodes
(evidence items that deviate from the real reference) and, among the edges joining two kept nodes, the
``MAX_EDGES`` (6) heaviest (an edge's weight is the smaller of its nodes' weights), so a clip with many deviating
items gives a few readable links instead of a web. The nodes sit on a circle: those pointing to "generated" on
the left half, those pointing to "real" on the right half, each a disc whose size grows with its weight, red for
generated and green for real, labelled with its statistic and z. Edges join items of different tools: a grey line
where they support each other (same direction), a dashed orange line where they contradict. A title gives the
verdict and the probability; the legend says how many items and links of the whole graph are shown.
"""

from __future__ import annotations

import math
from typing import Any

import cv2
import numpy as np

__all__ = ["draw_evidence_graph", "select_graph", "MAX_NODES", "MAX_EDGES"]

MAX_NODES = 8  # nodes drawn: the heaviest
MAX_EDGES = 6  # edges drawn: the heaviest among those joining two drawn nodes

_GENERATED = (210, 50, 50)
_REAL = (40, 150, 60)
_SUPPORT = (170, 170, 170)
_CONTRADICT = (245, 150, 30)
_FONT = cv2.FONT_HERSHEY_SIMPLEX


def _dashed(img: np.ndarray, a: tuple[int, int], b: tuple[int, int], colour: tuple[int, int, int],
            dash: int = 6, thickness: int = 1) -> None:
    length = math.dist(a, b)
    steps = max(1, int(length // dash))
    for i in range(0, steps, 2):
        f0, f1 = i / steps, min(1.0, (i + 1) / steps)
        p0 = (round(a[0] + (b[0] - a[0]) * f0), round(a[1] + (b[1] - a[1]) * f0))
        p1 = (round(a[0] + (b[0] - a[0]) * f1), round(a[1] + (b[1] - a[1]) * f1))
        cv2.line(img, p0, p1, colour, thickness, cv2.LINE_AA)


def _layout(nodes: list[dict[str, Any]], centre: tuple[int, int], radius: int) -> list[tuple[int, int]]:
    """Generated items spread over the left half-circle, real items over the right half (both top to bottom)."""
    positions: list[tuple[int, int]] = [(0, 0)] * len(nodes)
    for side, direction in ((-1, "generated"), (1, "real")):
        members = [i for i, n in enumerate(nodes) if n["direction"] == direction]
        for k, i in enumerate(members):
            angle = math.pi * (k + 1) / (len(members) + 1)  # 0 at the top, pi at the bottom
            positions[i] = (round(centre[0] + side * radius * math.sin(angle)),
                            round(centre[1] - radius * math.cos(angle)))
    return positions


def select_graph(graph: dict[str, Any], max_nodes: int = MAX_NODES,
                 max_edges: int = MAX_EDGES) -> tuple[list[dict[str, Any]], list[tuple[int, int, str, float]]]:
    """The part of ``graph`` (``{"nodes", "edges"}`` of :meth:`~vision.forensics.evidence.EvidenceGraph.to_dict`)
    that is drawn: its ``max_nodes`` heaviest nodes (heaviest first) and the ``max_edges`` heaviest edges among
    them as ``(a, b, kind, weight)`` with ``a``, ``b`` indices into the kept nodes (heaviest first; an edge without
    a stored weight weighs the smaller of its nodes' weights)."""
    order = sorted(range(len(graph["nodes"])), key=lambda i: -float(graph["nodes"][i]["weight"]))[:max_nodes]
    nodes = [graph["nodes"][i] for i in order]
    index = {old: new for new, old in enumerate(order)}
    edges = []
    for edge in graph["edges"]:
        a, b = index.get(edge["source"]), index.get(edge["target"])
        if a is None or b is None:
            continue
        weight = edge.get("weight")
        weight = min(float(nodes[a]["weight"]), float(nodes[b]["weight"])) if weight is None else float(weight)
        edges.append((a, b, edge["kind"], weight))
    edges.sort(key=lambda e: -e[3])
    return nodes, edges[:max_edges]


def draw_evidence_graph(report: dict[str, Any], max_nodes: int = MAX_NODES, max_edges: int = MAX_EDGES,
                        width: int = 720, height: int = 480) -> np.ndarray:
    """The image (uint8 ``[height, width, 3]`` RGB) of ``report["graph"]`` (a :func:`~vision.forensics.predictor.
    public_report`): its ``max_nodes`` heaviest nodes and the ``max_edges`` heaviest edges between them."""
    img = np.full((height, width, 3), 255, np.uint8)
    verdict = report["verdict"]
    p = verdict.get("probability")
    title = f"verdict: {verdict['verdict']}" + ("" if p is None else f"   p(generated) = {p:.3f}")
    cv2.putText(img, title, (10, 22), _FONT, 0.55, (0, 0, 0), 1, cv2.LINE_AA)
    graph = report.get("graph") or {"nodes": [], "edges": []}
    nodes, edges = select_graph(graph, max_nodes, max_edges)
    if not nodes:
        cv2.putText(img, "no evidence deviates from the real reference", (10, height // 2), _FONT, 0.5,
                    (90, 90, 90), 1, cv2.LINE_AA)
        return img
    centre, radius = (width // 2, height // 2 + 10), min(width // 2 - 190, height // 2 - 60)
    pos = _layout(nodes, centre, radius)
    for a, b, kind, weight in reversed(edges):  # the heaviest drawn last, on top
        thickness = 1 + round(2 * min(1.0, weight))
        if kind == "contradict":
            _dashed(img, pos[a], pos[b], _CONTRADICT, thickness=thickness)
        else:
            cv2.line(img, pos[a], pos[b], _SUPPORT, thickness, cv2.LINE_AA)
    for node, (x, y) in zip(nodes, pos):
        colour = _GENERATED if node["direction"] == "generated" else _REAL
        r = 4 + round(8 * min(1.0, float(node["weight"])))
        cv2.circle(img, (x, y), r, colour, -1, cv2.LINE_AA)
        cv2.circle(img, (x, y), r, (0, 0, 0), 1, cv2.LINE_AA)
        z = node.get("z")
        label = node["statistic"][:24] + ("" if z is None else f" z={z:+.1f}")
        (tw, _), _ = cv2.getTextSize(label, _FONT, 0.36, 1)
        tx = x + r + 4 if x >= centre[0] else x - r - 4 - tw
        cv2.putText(img, label, (tx, y + 4), _FONT, 0.36, (30, 30, 30), 1, cv2.LINE_AA)
    legend_y = height - 12
    cv2.circle(img, (16, legend_y - 4), 6, _GENERATED, -1)
    cv2.putText(img, "points to generated", (26, legend_y), _FONT, 0.4, (0, 0, 0), 1, cv2.LINE_AA)
    cv2.circle(img, (176, legend_y - 4), 6, _REAL, -1)
    cv2.putText(img, "points to real", (186, legend_y), _FONT, 0.4, (0, 0, 0), 1, cv2.LINE_AA)
    cv2.line(img, (296, legend_y - 4), (322, legend_y - 4), _SUPPORT, 2)
    cv2.putText(img, "support", (326, legend_y), _FONT, 0.4, (0, 0, 0), 1, cv2.LINE_AA)
    _dashed(img, (392, legend_y - 4), (424, legend_y - 4), _CONTRADICT)
    cv2.putText(img, "contradict", (428, legend_y), _FONT, 0.4, (0, 0, 0), 1, cv2.LINE_AA)
    cv2.putText(img, f"{len(nodes)} of {len(graph['nodes'])} items, {len(edges)} of {len(graph['edges'])} links",
                (512, legend_y), _FONT, 0.35, (90, 90, 90), 1, cv2.LINE_AA)
    return img
