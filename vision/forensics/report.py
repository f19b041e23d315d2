"""The forensic report: a JSON document and a self-contained HTML page (frame thumbnails with the evidence
regions drawn, and plots, all embedded as base64 PNGs; no external files or scripts).

Plots are drawn with OpenCV (no plotting dependency): the z-scores of the strongest evidence against the real
reference, and per-tool curves (radial spectrum profile, second-order temporal differences, flow magnitude).

The page is written for a person: the reasons (including what the threshold is), each evidence row with what real
and generated clips typically show and where this clip lies (:func:`vision.forensics.evidence.locate`), and the
conflicts as sentences.
"""

from __future__ import annotations

import base64
import html
from pathlib import Path
from typing import Any

import cv2
import numpy as np

from vision.data.io import atomic_write_bytes, atomic_write_json
from vision.data.resize import resize_nearest
from vision.forensics.tools.base import Clip

__all__ = ["png_base64", "bar_plot", "line_plot", "thumbnails", "render_html", "write_report", "evidence_rows"]


def png_base64(image: np.ndarray) -> str:
    """``uint8 [H, W, 3]`` RGB -> base64 PNG string."""
    ok, buf = cv2.imencode(".png", cv2.cvtColor(np.ascontiguousarray(image), cv2.COLOR_RGB2BGR))
    return base64.b64encode(buf.tobytes()).decode("ascii") if ok else ""


def bar_plot(labels: list[str], values: list[float], title: str, width: int = 560) -> np.ndarray:
    """Horizontal bars of signed values (red > 0 = towards generated, green < 0), ``uint8 [H, W, 3]`` RGB."""
    row = 18
    height = 30 + row * max(1, len(labels))
    img = np.full((height, width, 3), 255, np.uint8)
    cv2.putText(img, title, (6, 18), cv2.FONT_HERSHEY_SIMPLEX, 0.45, (0, 0, 0), 1, cv2.LINE_AA)
    vmax = max([abs(v) for v in values] + [1e-6])
    mid = width * 2 // 3
    half = width // 3 - 10
    for i, (label, value) in enumerate(zip(labels, values)):
        y = 26 + i * row
        length = int(half * abs(value) / vmax)
        colour = (200, 40, 40) if value > 0 else (40, 150, 40)
        x0, x1 = (mid, mid + length) if value > 0 else (mid - length, mid)
        cv2.rectangle(img, (x0, y + 2), (x1, y + row - 4), colour, -1)
        cv2.putText(img, f"{label[:30]} {value:+.2f}", (4, y + 12), cv2.FONT_HERSHEY_SIMPLEX, 0.35, (0, 0, 0), 1,
                    cv2.LINE_AA)
    cv2.line(img, (mid, 24), (mid, height - 2), (0, 0, 0), 1)
    return img


def line_plot(values: list[float], title: str, width: int = 280, height: int = 140) -> np.ndarray:
    """A polyline plot of ``values`` with its title, ``uint8 [H, W, 3]`` RGB."""
    img = np.full((height, width, 3), 255, np.uint8)
    cv2.putText(img, title, (6, 16), cv2.FONT_HERSHEY_SIMPLEX, 0.4, (0, 0, 0), 1, cv2.LINE_AA)
    v = np.asarray(values, np.float64)
    v = v[np.isfinite(v)]
    if v.size >= 2:
        lo, hi = float(v.min()), float(v.max())
        span = hi - lo if hi > lo else 1.0
        xs = np.linspace(10, width - 10, v.size)
        ys = height - 12 - (v - lo) / span * (height - 36)
        pts = np.stack([xs, ys], axis=1).round().astype(np.int32)
        cv2.polylines(img, [pts], False, (30, 60, 200), 1, cv2.LINE_AA)
        cv2.putText(img, f"{lo:.3g} .. {hi:.3g}", (6, height - 2), cv2.FONT_HERSHEY_SIMPLEX, 0.3, (90, 90, 90), 1)
    return img


def thumbnails(clip: Clip, evidence: list[dict[str, Any]], count: int = 4, size: int = 128) -> list[dict[str, Any]]:
    """Thumbnails of the frames the top evidence names (the first frames when none), with regions drawn:
    ``[{"frame", "png", "statistics"}]``."""
    wanted: dict[int, list[dict[str, Any]]] = {}
    for item in evidence:
        for f in item.get("frames", [])[:2]:
            if 0 <= f < clip.num_frames and (f in wanted or len(wanted) < count):
                wanted.setdefault(int(f), []).append(item)
    if not wanted:
        wanted = {i: [] for i in range(min(count, clip.num_frames))}
    out = []
    for f, items in sorted(wanted.items()):
        frame = clip.frames[f].copy()
        scale = size / max(frame.shape[:2])
        for item in items:
            if item.get("region"):
                x0, y0, x1, y1 = item["region"]
                cv2.rectangle(frame, (x0, y0), (x1 - 1, y1 - 1), (255, 0, 0), 1)
        thumb = resize_nearest(frame, (max(1, int(frame.shape[0] * scale)), max(1, int(frame.shape[1] * scale))))
        out.append({"frame": f, "png": png_base64(thumb), "statistics": [i["statistic"] for i in items]})
    return out


def _plots(report: dict[str, Any], extras: dict[str, dict[str, Any]]) -> list[tuple[str, str]]:
    plots = []
    ranked = report["verdict"]["ranked_evidence"]
    if ranked:
        plots.append(("Evidence z-scores (signed towards generated)", png_base64(bar_plot(
            [e["statistic"] for e in ranked],
            [abs(e["z"] or 0.0) * (1 if e["direction"] == "generated" else -1) for e in ranked],
            "z vs real reference (+ = generated)"))))
    curves = [("spectrum", "radial_profile", "radial log-power profile"), ("temporal", "second_order",
              "||second-order difference|| per frame"), ("motion", "flow_magnitude", "mean flow magnitude per pair"),
              ("codec", "packet_sizes", "packet size (bytes)")]
    for tool, key, title in curves:
        values = extras.get(tool, {}).get(key)
        if values is not None and len(values) >= 2:
            plots.append((title, png_base64(line_plot(list(values), title))))
    return plots


def _typical(e: dict[str, Any]) -> str:
    """What real (and generated) clips typically show: the item's ``typical`` text, or for an item without one, the
    real reference ``ref_mean`` ± ``ref_std`` beside this clip's value."""
    if e.get("typical"):
        return e["typical"]
    if e.get("ref_mean") is None or e.get("ref_std") is None:
        return f"this clip: {e['value']:.3g} (no reference)"
    return f"real clips: {e['ref_mean']:.3g} ± {e['ref_std']:.3g}; this clip: {e['value']:.3g}"


def evidence_rows(ranked: list[dict[str, Any]]) -> list[dict[str, str]]:
    """The evidence table of a report as text: ``{"statistic", "typical", "z", "points to", "why", "what"}`` per
    ranked item (``points to`` says whether it agrees with the verdict)."""
    rows = []
    for e in ranked:
        agrees = e.get("agrees_with_verdict")
        points = e["direction"] + ("" if agrees is None else " (agrees)" if agrees else " (against the verdict)")
        rows.append({"statistic": e["statistic"], "typical": _typical(e),
                     "z": "" if e.get("z") is None else f"{e['z']:+.2f}", "points to": points,
                     "why": e.get("position") or "", "what": e.get("description") or ""})
    return rows


def render_html(report: dict[str, Any], clip: Clip, extras: dict[str, dict[str, Any]]) -> str:
    """The self-contained HTML page of a report."""
    v = report["verdict"]
    esc = html.escape
    prob = "n/a" if v["probability"] is None else f"{v['probability']:.3f}"
    parts = ["<!DOCTYPE html><html><head><meta charset='utf-8'><title>Forensic report</title>",
             "<style>body{font-family:sans-serif;margin:20px}td,th{border:1px solid #ccc;padding:3px 6px;"
             "font-size:13px}table{border-collapse:collapse}img{margin:4px;border:1px solid #999}</style></head><body>",
             f"<h1>Verdict: {esc(v['verdict'])}</h1>",
             f"<p>Calibrated probability of generated: <b>{prob}</b> (threshold {v['threshold']:.3f}, set on real "
             f"validation clips: see the reasons); clip {esc(str(report['clip']['name']))}, "
             f"{report['clip']['num_frames']} frames.</p>",
             "<h2>Reasons</h2><ul>" + "".join(f"<li>{esc(r)}</li>" for r in v["reasons"]) + "</ul>",
             "<h2>What drove it: tests against real footage</h2><ul>" + "".join(
                 f"<li>{esc(t)}</li>" for t in report.get("statistics", {}).get("sentences", [])) + "</ul>",
             "<h2>Ranked evidence</h2><p>z: standard deviations from the mean of real clips.</p><table><tr>"
             "<th>statistic</th><th>real and generated clips typically; this clip</th><th>z</th><th>points to</th>"
             "<th>why</th><th>frames</th><th>region</th><th>what</th></tr>"]
    for e, row in zip(v["ranked_evidence"], evidence_rows(v["ranked_evidence"])):
        parts.append(f"<tr><td>{esc(row['statistic'])}</td><td>{esc(row['typical'])}</td><td>{row['z']}</td>"
                     f"<td>{esc(row['points to'])}</td><td>{esc(row['why'])}</td><td>{esc(str(e['frames'][:6]))}</td>"
                     f"<td>{esc(str(e['region']))}</td><td>{esc(row['what'])}</td></tr>")
    parts.append("</table><h2>Conflicts</h2>")
    parts.append("<ul>" + "".join(f"<li>{esc(str(c))}</li>" for c in v["conflicts"]) + "</ul>" if v["conflicts"]
                 else "<p>No strong evidence contradicts other strong evidence.</p>")
    parts.append("<h2>Agents</h2><p>Each agent's weighted vote of its tools' evidence, from -1 (all real) to +1 "
                 "(all generated).</p><ul>" + "".join(f"<li>{esc(a)}: {s:+.3f}</li>" for a, s in v["agents"].items())
                 + "</ul><h2>Tool plan</h2><table><tr><th>tool</th><th>run</th><th>weighed</th><th>reason</th></tr>")
    for p in report["plan"]:
        parts.append(f"<tr><td>{esc(p['tool'])}</td><td>{p['run']}</td><td>{p['weigh']}</td>"
                     f"<td>{esc(p['reason'])}</td></tr>")
    timing = report.get("timing")
    if timing:
        parts.append("</table><h2>Timing</h2><p>Seconds of wall-clock time: decoding "
                     f"{timing['decode']:.3f}, the whole analysis {timing['total']:.3f} for "
                     f"{timing['clip_seconds']:.2f} s of video ({timing['real_time']:.2f}x real time).</p>"
                     "<table><tr><th>tool</th><th>seconds</th></tr>")
        for name, seconds in sorted(timing["tools"].items(), key=lambda kv: -kv[1]):
            parts.append(f"<tr><td>{esc(name)}</td><td>{seconds:.3f}</td></tr>")
    parts.append("</table><h2>Frames</h2>")
    for t in thumbnails(clip, v["ranked_evidence"]):
        parts.append(f"<figure style='display:inline-block'><img src='data:image/png;base64,{t['png']}'>"
                     f"<figcaption>frame {t['frame']}</figcaption></figure>")
    parts.append("<h2>Plots</h2>")
    for title, png in _plots(report, extras):
        parts.append(f"<figure style='display:inline-block'><img src='data:image/png;base64,{png}' "
                     f"alt='{esc(title)}'><figcaption>{esc(title)}</figcaption></figure>")
    parts.append("</body></html>")
    return "\n".join(parts)


def write_report(report: dict[str, Any], clip: Clip, extras: dict[str, dict[str, Any]],
                 out_dir: str | Path) -> dict[str, Path]:
    """Write ``report.json`` and ``report.html`` into ``out_dir`` (created), atomically; returns both paths."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    json_path, html_path = out / "report.json", out / "report.html"
    atomic_write_json(json_path, report, indent=2)
    atomic_write_bytes(html_path, render_html(report, clip, extras).encode("utf-8"))
    return {"json": json_path, "html": html_path}
